//! Shared helpers of the codec tests: the pi oracle fixtures and a whole-input reader.

use std::path::PathBuf;

use grove_codec::reader::{Diagnostic, JsonlReader, Line, Strictness};
use grove_codec::{CodecError, Header};
use serde_json::Value;

/// The directory of the pi oracle fixtures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("pi-oracle")
}

/// Every case named by the fixtures' `index.json`, in its order.
pub fn case_names() -> Vec<String> {
    let text = std::fs::read_to_string(fixture_dir().join("index.json")).unwrap();
    let index: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<String> = index["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.len() >= 150,
        "expected the full oracle set, found {} cases",
        names.len()
    );
    names
}

/// The bytes of `<case>.jsonl`.
pub fn jsonl(case: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(format!("{case}.jsonl"))).unwrap()
}

/// `<case>.expected.json`, parsed. Lone-surrogate escapes (which serde_json refuses) are
/// replaced by `\ufffd` first, as grove's lossy string fields do.
pub fn expected(case: &str) -> Value {
    let text =
        std::fs::read_to_string(fixture_dir().join(format!("{case}.expected.json"))).unwrap();
    serde_json::from_str(&replace_lone_surrogate_escapes(&text)).unwrap()
}

/// Rewrites `\uD800`-`\uDFFF` escapes that are not part of a valid pair as `\ufffd`.
pub fn replace_lone_surrogate_escapes(text: &str) -> String {
    fn unit_at(chars: &[char], i: usize) -> Option<u16> {
        if chars.get(i) != Some(&'\\') || chars.get(i + 1) != Some(&'u') {
            return None;
        }
        let hex: String = chars.get(i + 2..i + 6)?.iter().collect();
        u16::from_str_radix(&hex, 16).ok()
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        match unit_at(&chars, i) {
            Some(0xD800..=0xDBFF) => match unit_at(&chars, i + 6) {
                Some(0xDC00..=0xDFFF) => {
                    out.extend(&chars[i..i + 12]);
                    i += 12;
                }
                _ => {
                    out.push_str("\\ufffd");
                    i += 6;
                }
            },
            Some(0xDC00..=0xDFFF) => {
                out.push_str("\\ufffd");
                i += 6;
            }
            Some(_) => {
                out.extend(&chars[i..i + 6]);
                i += 6;
            }
            None => {
                // Any other escape: copy the backslash and the escaped character.
                out.extend(chars.get(i..i + 2).unwrap_or(&chars[i..]));
                i += 2;
            }
        }
    }
    out
}

/// Everything a reader produced from one input.
#[derive(Debug)]
pub struct Read {
    pub header: Header,
    pub lines: Vec<Line>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Read {
    /// The ids of the lines, in order.
    pub fn ids(&self) -> Vec<String> {
        self.lines.iter().map(|l| l.envelope.id.clone()).collect()
    }
}

/// An id generator yielding `prefix1`, `prefix2`, ….
pub fn counter_ids(prefix: &'static str) -> Box<dyn FnMut() -> String + Send> {
    let mut n = 0u32;
    Box::new(move || {
        n += 1;
        format!("{prefix}{n}")
    })
}

/// Reads a whole input, with `m1`, `m2`, … as migration ids.
pub fn read_all(bytes: &[u8], strictness: Strictness) -> Result<Read, CodecError> {
    read_all_with(bytes, strictness, counter_ids("m"))
}

/// Reads a whole input with the given id generator.
pub fn read_all_with(
    bytes: &[u8],
    strictness: Strictness,
    fresh_id: Box<dyn FnMut() -> String + Send>,
) -> Result<Read, CodecError> {
    let mut reader = JsonlReader::new(bytes, strictness, fresh_id)?;
    let mut lines = Vec::new();
    while let Some(line) = reader.next_line()? {
        lines.push(line);
    }
    Ok(Read {
        header: reader.header().clone(),
        lines,
        diagnostics: reader.take_diagnostics(),
    })
}

/// The physical lines of `bytes` split at LF (the LF excluded), with their byte offsets.
pub fn physical_lines(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p);
        out.push((start as u64, &bytes[start..end]));
        start = end + 1;
    }
    out
}

/// A v3 header line for synthetic inputs.
pub const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// A valid entry line with the given id and parent.
pub fn entry(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2030-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#
    )
}
