//! The HTML page of a session (issue 18, "Looking at it"): one page, written by
//! `grove export --html` with the session embedded, and served by `grove serve` at `GET /view`
//! without data (the page then reads the server's authenticated routes itself).
//!
//! This room owns the page: its markup, style and script (`body.html`, `page.css`,
//! `page.js`, included as they are), the JSON the export embeds in it, and the escaping that
//! keeps any entry content inside the `<script type="application/json">` element that holds
//! it. It calls the engine's public API (`grove::Session`: the tree, the log, the leaf, the
//! name) and `output` (a tree node as the server's tree route writes it), nothing else.
//!
//! Invariants: the page makes no network request of its own in export mode (a
//! Content-Security-Policy with `default-src 'none'` says so to the browser, and only the
//! page's own script, by its hash, may run); every `<` and every U+2028/U+2029 in the embedded
//! JSON is written as a `\u` escape, so no content can end the script element or open a
//! comment in it; the script walks the tree without recursion and draws only the rows in
//! view (docs/design.md, "Looking at it: the HTML page").

use std::io::Write;

use base64::Engine as _;
use grove::Session;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{CmdResult, CommandError};
use crate::output::tree_node_value;

#[cfg(test)]
mod tests;

/// The page's markup between `<body>` and the data.
const BODY: &str = include_str!("body.html");
/// The page's style.
const STYLE: &str = include_str!("page.css");
/// The page's script: the tree, the entry and the context panels, the operation timeline.
const SCRIPT: &str = include_str!("page.js");

/// The id of the element holding the embedded JSON.
pub const DATA_ID: &str = "grove-data";

/// What an HTML export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageReport {
    /// Tree entries embedded.
    pub entries: usize,
}

/// Which browser fetches the page may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connect {
    /// None: an exported file.
    None,
    /// Its own origin: the server's page reading the API.
    SameOrigin,
}

/// Writes the page of `session`, its tree and every entry embedded, to `out`.
pub fn write_session_page(session: &Session, out: &mut dyn Write) -> CmdResult<PageReport> {
    let tree = session.tree()?;
    let record = session.record();
    let head = json!({
        "mode": "export",
        "session": {
            "id": record.id,
            "name": session.name()?,
            "cwd": record.cwd,
            "created": record.created,
        },
        "leaf": session.leaf()?,
        "roots": tree.roots,
        // Another tool's transcript: the page builds its context by that tool's rules.
        "format": grove_codec::foreign::header_format(&record.header).map(|(f, _)| f.name()),
    });
    let head = head.to_string();
    // `{…head…, "nodes": [...], "lines": [...]}`: the head's closing brace is reopened.
    let head = head.strip_suffix('}').unwrap_or(&head);
    out.write_all(top(Connect::None).as_bytes())?;
    write_script_json(out, head)?;
    write!(out, ",\"nodes\":[")?;
    for (i, node) in tree.nodes.iter().enumerate() {
        if i > 0 {
            write!(out, ",")?;
        }
        write_script_json(out, &tree_node_value(node).to_string())?;
    }
    write!(out, "],\"lines\":[")?;
    // One pass over the log in order: the tree's nodes are in log order too, so each node's
    // line is met in turn (leaf records and shadowed duplicates are not nodes).
    let mut next = 0;
    for entry in session.log() {
        let entry = entry?;
        if tree.nodes.get(next).is_some_and(|n| n.seq == entry.seq) {
            if next > 0 {
                write!(out, ",")?;
            }
            write_script_json(out, &Value::String(entry.line).to_string())?;
            next += 1;
        }
    }
    if next != tree.nodes.len() {
        return Err(CommandError::Grove(grove::GroveError::Corrupt(format!(
            "the log of session {} holds {next} of its {} tree entries",
            record.id,
            tree.nodes.len()
        ))));
    }
    write!(out, "]}}{}", bottom())?;
    Ok(PageReport {
        entries: tree.nodes.len(),
    })
}

/// The server's page: no data, the script reads the API of the origin it came from.
pub fn server_page() -> String {
    format!(
        "{}{}{}",
        top(Connect::SameOrigin),
        script_json(r#"{"mode":"server"}"#),
        bottom()
    )
}

/// The Content-Security-Policy of the server's page (also sent as a header).
pub fn server_policy() -> String {
    policy(Connect::SameOrigin)
}

/// `default-src 'none'`, inline style, data: images, the page's own script by its hash, and
/// fetches to the page's origin for the server's page.
fn policy(connect: Connect) -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
    let connect = match connect {
        Connect::None => "",
        Connect::SameOrigin => "; connect-src 'self'",
    };
    format!(
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; \
         img-src data:{connect}; base-uri 'none'; form-action 'none'"
    )
}

/// Everything up to the embedded JSON.
fn top(connect: Connect) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>grove</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{BODY}\
         <script type=\"application/json\" id=\"{DATA_ID}\">",
        policy(connect)
    )
}

/// The end of the JSON element, the script, the end of the page.
fn bottom() -> String {
    format!("</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n")
}

/// Writes JSON text into a script element: `<` (which only occurs inside JSON strings) as
/// `\u003c`, so that neither `</script>` nor `<!--` can appear, and U+2028 and U+2029 as
/// `\u2028` and `\u2029`. The text means the same JSON afterwards.
pub fn write_script_json(out: &mut dyn Write, json: &str) -> std::io::Result<()> {
    out.write_all(script_json(json).as_bytes())
}

/// [`write_script_json`] into a string.
pub fn script_json(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains(['<', '\u{2028}', '\u{2029}']) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut escaped = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => escaped.push_str("\\u003c"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            c => escaped.push(c),
        }
    }
    std::borrow::Cow::Owned(escaped)
}
