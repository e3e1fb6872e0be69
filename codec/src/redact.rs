//! Redaction of a line (docs/design.md, "Redaction"; docs/format.md, "Redaction records"): the
//! values a redaction removes, found by JSON pointer (RFC 6901) in the line's own bytes, are
//! replaced by a marker, and every other byte of the line is kept as it was.
//!
//! It owns the marker, what "the whole entry" means for each entry type, the paths that may
//! not be redacted (those the tree and the fold read: `type`, `id`, `parentId`, `timestamp`, a
//! message's `role`), the digest of what was removed, and the `redaction` member of the leaf
//! record that records a redaction. It calls nothing but serde_json and blake3.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::digest::Digest;

/// What a redacted value reads as: a JSON string.
pub const MARKER: &str = "\"[redacted]\"";

/// What a redacted `content` array (a message's blocks) reads as: one text block holding the
/// marker, so a message keeps the shape its readers expect.
pub const MARKER_BLOCKS: &str = "[{\"type\":\"text\",\"text\":\"[redacted]\"}]";

/// Paths a redaction may neither name nor contain: the tree, the fold and the catalogue read
/// them.
const STRUCTURAL: &[&[&str]] = &[
    &["type"],
    &["id"],
    &["parentId"],
    &["timestamp"],
    &["message", "role"],
    &["targetId"],
    &["firstKeptEntryId"],
    &["fromId"],
];

/// Why a line cannot be redacted as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// The path is not a JSON pointer (it must start with `/`; `~` only as `~0` or `~1`).
    #[error(
        "'{0}' is not a JSON pointer to a value of the entry (RFC 6901: '/message/content/0/text')"
    )]
    BadPointer(String),
    /// The path names or contains a member the tree needs.
    #[error("'{0}' cannot be redacted: the session's tree reads it (type, id, parentId, timestamp, message role, targetId, firstKeptEntryId, fromId)")]
    Structural(String),
    /// The line holds no value at the path.
    #[error("the entry has no value at '{0}'")]
    NoValue(String),
    /// The entry has nothing "the whole entry's content" covers (a model or thinking-level
    /// change, a leaf record): a path must be named.
    #[error("an entry of type '{0}' has no content to redact; name a path")]
    NothingToRedact(String),
    /// The line is not a JSON object.
    #[error("the line is not a JSON object: {0}")]
    NotJson(String),
}

/// A line with values redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    /// The line, each removed value replaced by [`MARKER`] or [`MARKER_BLOCKS`].
    pub line: String,
    /// The paths redacted, in the order their values were digested.
    pub paths: Vec<String>,
    /// blake3 of the removed values' JSON texts, as the line held them, concatenated in the
    /// order of `paths` (and, for a path an object holds twice, in line order).
    pub removed: Digest,
}

/// The paths "the whole entry's content" covers for an entry of `entry_type`, of those the
/// line holds with a value other than `null`: a message's content (its text, thinking, tool
/// calls and results), a bash execution's command and output, a summary, details and error
/// text; a compaction's or branch summary's summary and details; a label; a session name; a
/// custom entry's data; a custom message's content and details; and for a type pi does not
/// define, every member but the structural ones. Model, thinking-level and tool changes and
/// leaf records have none.
pub fn content_paths(line: &str) -> Result<Vec<String>, RedactError> {
    let members = members_of(line)?;
    let get = |name: &str| {
        members
            .0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    };
    let entry_type = get("type")
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .unwrap_or_default();
    let candidates: Vec<String> = match entry_type.as_str() {
        "message" => {
            let message = match get("message") {
                Some(m) => members_of(m.get())?,
                None => Members(Vec::new()),
            };
            [
                "content",
                "command",
                "output",
                "summary",
                "details",
                "errorMessage",
            ]
            .iter()
            .filter(|name| {
                message
                    .0
                    .iter()
                    .any(|(k, v)| k == *name && v.get().trim() != "null")
            })
            .map(|name| format!("/message/{name}"))
            .collect()
        }
        "model_change" | "thinking_level_change" | "active_tools_change" | "leaf" => Vec::new(),
        known => {
            let names: &[&str] = match known {
                "compaction" | "branch_summary" => &["summary", "details"],
                "label" => &["label"],
                "session_info" => &["name"],
                "custom" => &["data"],
                "custom_message" => &["content", "details"],
                _ => &[],
            };
            let mut out: Vec<String> = Vec::new();
            for (k, v) in &members.0 {
                let wanted = if names.is_empty() {
                    !STRUCTURAL
                        .iter()
                        .any(|p| p.len() == 1 && p[0] == k.as_ref())
                } else {
                    names.contains(&k.as_ref())
                };
                let path = format!("/{}", escape_token(k));
                if wanted && v.get().trim() != "null" && !out.contains(&path) {
                    out.push(path);
                }
            }
            out
        }
    };
    if candidates.is_empty() {
        return Err(RedactError::NothingToRedact(entry_type));
    }
    Ok(candidates)
}

/// Redacts `line`: the value at `path` (a JSON pointer), or with `None` the entry's whole
/// content ([`content_paths`]). Each value is replaced by [`MARKER`], or by [`MARKER_BLOCKS`]
/// when it is an array named `content`; every other byte is kept.
pub fn redact(line: &str, path: Option<&str>) -> Result<Redacted, RedactError> {
    let paths = match path {
        Some(p) => vec![p.to_owned()],
        None => content_paths(line)?,
    };
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    let mut hasher = blake3::Hasher::new();
    for path in &paths {
        let tokens = parse_pointer(path)?;
        if tokens.is_empty()
            || STRUCTURAL.iter().any(|s| {
                tokens.len() <= s.len() && tokens.iter().zip(s.iter()).all(|(a, b)| a == b)
            })
        {
            return Err(RedactError::Structural(path.clone()));
        }
        let mut found = Vec::new();
        locate(line, line, &tokens, &mut found)?;
        if found.is_empty() {
            return Err(RedactError::NoValue(path.clone()));
        }
        found.sort_unstable();
        let blocks = tokens.last().is_some_and(|t| t == "content");
        for (start, end) in found {
            let value = &line[start..end];
            hasher.update(value.as_bytes());
            let marker = if blocks && value.starts_with('[') {
                MARKER_BLOCKS
            } else {
                MARKER
            };
            spans.push((start, end, marker));
        }
    }
    spans.sort_unstable();
    // Nested or repeated paths: a span inside one already replaced goes with it.
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (start, end, marker) in spans {
        if start < at {
            continue;
        }
        out.push_str(&line[at..start]);
        out.push_str(marker);
        at = end;
    }
    out.push_str(&line[at..]);
    Ok(Redacted {
        line: out,
        paths,
        removed: *hasher.finalize().as_bytes(),
    })
}

/// The reference tokens of a JSON pointer (`~1` is `/`, `~0` is `~`).
fn parse_pointer(path: &str) -> Result<Vec<String>, RedactError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(RedactError::BadPointer(path.to_owned()));
    };
    rest.split('/')
        .map(|t| {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                match (c, c == '~') {
                    (_, false) => out.push(c),
                    (_, true) => match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(RedactError::BadPointer(path.to_owned())),
                    },
                }
            }
            Ok(out)
        })
        .collect()
}

/// A member name as a pointer token.
fn escape_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Appends to `found` the byte ranges (in `line`) of the values at `tokens` below `value`, a
/// slice of `line`. An object holding a name twice yields both values.
fn locate(
    line: &str,
    value: &str,
    tokens: &[String],
    found: &mut Vec<(usize, usize)>,
) -> Result<(), RedactError> {
    let Some((token, rest)) = tokens.split_first() else {
        let start = offset(line, value);
        found.push((start, start + value.len()));
        return Ok(());
    };
    let text = value.trim_start();
    if text.starts_with('{') {
        let members = members_of(text)?;
        for (k, v) in members.0 {
            if k == token.as_str() {
                locate(line, v.get(), rest, found)?;
            }
        }
    } else if text.starts_with('[') {
        let items: Vec<&RawValue> =
            serde_json::from_str(text).map_err(|e| RedactError::NotJson(e.to_string()))?;
        let index = token
            .parse::<usize>()
            .ok()
            .filter(|_| token == "0" || !token.starts_with('0'));
        if let Some(item) = index.and_then(|i| items.get(i)) {
            locate(line, item.get(), rest, found)?;
        }
    }
    Ok(())
}

/// Where `part` (a slice of `line`) starts in `line`.
fn offset(line: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize)
}

/// An object's members in line order, duplicates kept, each value as its raw text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

fn members_of(text: &str) -> Result<Members<'_>, RedactError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let members = Members::deserialize(&mut de).map_err(|e| RedactError::NotJson(e.to_string()))?;
    de.end().map_err(|e| RedactError::NotJson(e.to_string()))?;
    Ok(members)
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k, v));
                }
                Ok(Members(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Members<'de>, A::Error> {
                Err(serde::de::Error::custom("an array, not an object"))
            }
        }
        d.deserialize_map(V)
    }
}

/// What the `redaction` member of a leaf record says (docs/format.md, "Redaction records"):
/// which record was redacted, where, why, and the digests that let a verifier tell this
/// redaction from tampering.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedactionNote {
    /// The redacted entry's id.
    pub entry_id: String,
    /// Its record's position in the session log.
    pub seq: u64,
    /// The paths redacted (JSON pointers).
    pub paths: Vec<String>,
    /// Why, as the redactor gave it.
    pub reason: String,
    /// blake3 (hex) of the removed values ([`Redacted::removed`]).
    pub removed: String,
    /// blake3 (hex) of the line before this redaction: the entry's content digest, or what an
    /// earlier redaction left.
    pub before: String,
    /// blake3 (hex) of the line after it.
    pub after: String,
}

impl RedactionNote {
    /// The leaf record line of a redaction: a leaf record that leaves the leaf where it is
    /// (`target`), with the note as its `redaction` member.
    pub fn leaf_line(&self, id: &str, leaf: Option<&str>, timestamp: &str) -> String {
        let mut line = crate::writer::leaf_line(id, leaf, timestamp, leaf);
        line.pop();
        line.push_str(",\"redaction\":");
        // Plain data of strings and a number: serializing it cannot fail.
        line.push_str(&serde_json::to_string(self).unwrap_or_default());
        line.push('}');
        line
    }

    /// The note a leaf record's line carries, if any (`None` for an ordinary move, or a
    /// member this build cannot read).
    pub fn of_line(line: &str) -> Option<RedactionNote> {
        if !line.contains("\"redaction\"") {
            return None;
        }
        #[derive(Deserialize)]
        struct Leaf {
            redaction: Option<RedactionNote>,
        }
        serde_json::from_str::<Leaf>(line).ok()?.redaction
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_replaced_and_every_other_byte_kept() {
        let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"my key is sk-123"}}"#;
        let r = redact(line, Some("/message/content")).unwrap();
        assert_eq!(
            r.line,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"[redacted]"}}"#
        );
        assert_eq!(r.removed, *blake3::hash(b"\"my key is sk-123\"").as_bytes());
    }

    #[test]
    fn content_arrays_keep_their_shape_and_whole_entries_follow_the_type() {
        let line = r#"{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"SECRET"}],"details":{"x":"SECRET"},"isError":false}}"#;
        let r = redact(line, None).unwrap();
        assert_eq!(r.paths, ["/message/content", "/message/details"]);
        assert!(!r.line.contains("SECRET"));
        assert!(r.line.contains(MARKER_BLOCKS));
        assert!(r.line.contains("\"toolName\":\"bash\""));
        let v: serde_json::Value = serde_json::from_str(&r.line).unwrap();
        assert_eq!(v["message"]["role"], "toolResult");
    }

    #[test]
    fn structural_paths_bad_pointers_and_missing_values_are_refused() {
        let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}"#;
        for p in ["", "/id", "/message", "/message/role", "/type"] {
            assert!(
                matches!(redact(line, Some(p)), Err(RedactError::Structural(_))),
                "{p}"
            );
        }
        assert!(matches!(
            redact(line, Some("message")),
            Err(RedactError::BadPointer(_))
        ));
        assert!(matches!(
            redact(line, Some("/a~2")),
            Err(RedactError::BadPointer(_))
        ));
        assert!(matches!(
            redact(line, Some("/message/nope")),
            Err(RedactError::NoValue(_))
        ));
        let model = r#"{"type":"model_change","id":"m","parentId":null,"timestamp":"t","provider":"p","modelId":"x"}"#;
        assert!(matches!(
            redact(model, None),
            Err(RedactError::NothingToRedact(_))
        ));
        assert!(redact(model, Some("/modelId")).is_ok());
    }

    #[test]
    fn array_items_escapes_and_duplicate_names() {
        let line = r#"{"type":"x","id":"a","parentId":null,"timestamp":"t","a/b":[1,{"k":"S1"}],"d":"S2","d":"S3"}"#;
        let r = redact(line, Some("/a~1b/1/k")).unwrap();
        assert!(r.line.contains(r#""a/b":[1,{"k":"[redacted]"}]"#));
        let r = redact(line, Some("/d")).unwrap();
        assert!(!r.line.contains("S2") && !r.line.contains("S3"));
        let r = redact(line, None).unwrap();
        assert_eq!(r.paths, ["/a~1b", "/d"]);
        assert_eq!(
            r.line,
            r#"{"type":"x","id":"a","parentId":null,"timestamp":"t","a/b":"[redacted]","d":"[redacted]","d":"[redacted]"}"#
        );
        assert!(matches!(
            redact(line, Some("/a~1b/01")),
            Err(RedactError::NoValue(_))
        ));
    }

    #[test]
    fn the_note_rides_on_a_leaf_line_and_reads_back() {
        let note = RedactionNote {
            entry_id: "e1".into(),
            seq: 4,
            paths: vec!["/message/content".into()],
            reason: "a \"key\"".into(),
            removed: "00".into(),
            before: "11".into(),
            after: "22".into(),
        };
        let line = note.leaf_line("r1", Some("e9"), "2026-12-07T00:00:00.000Z");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "leaf");
        assert_eq!(v["targetId"], "e9");
        assert_eq!(RedactionNote::of_line(&line), Some(note));
        assert_eq!(
            RedactionNote::of_line(&crate::writer::leaf_line("x", None, "t", None)),
            None
        );
    }
}
