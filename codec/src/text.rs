//! The searchable text of an entry (`grove search`, docs/design.md "Search"): what a person
//! would look for in a line, without the ids, times and encoded data around it.
//!
//! pi's entries give their text by type: a message's text, thinking, tool calls (the tool's
//! name and its arguments' values) and tool results (name and content), a bash execution's
//! command and output, a compaction's or branch summary's summary, a custom message's
//! content, a label, a session name. Any other line (an unknown type, a custom entry, the
//! transcripts of other tools kept as they were written) gives the string values it holds,
//! save those of fields that are ids, times or encoded data. Images give nothing.
//!
//! It owns that rule and calls nothing but serde_json.

use serde_json::Value;

use crate::time;

/// What search knows of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searchable {
    /// The entry's `type` (`message`, `compaction`, …; empty when the line has none).
    pub entry_type: String,
    /// A message's role.
    pub role: Option<String>,
    /// The entry's `timestamp`, in ms since the Unix epoch, when it parses.
    pub time_ms: Option<i64>,
    /// Its text: the pieces joined by newlines.
    pub text: String,
}

/// Fields whose values are not text a person searches for: ids, times, encodings, and the
/// base64 `data` of images and files.
const NOT_TEXT: &[&str] = &[
    "id",
    "parentId",
    "uuid",
    "parentUuid",
    "leafUuid",
    "sessionId",
    "session_id",
    "timestamp",
    "type",
    "signature",
    "thinkingSignature",
    "mimeType",
    "media_type",
    "requestId",
    "toolCallId",
    "tool_use_id",
    "call_id",
    "cwd",
    "version",
    "gitBranch",
    "api",
    "provider",
    "model",
    "stopReason",
    "role",
    "encrypted_content",
    "firstKeptEntryId",
    "fromId",
    "targetId",
];

/// The searchable text of `line`, an entry's JSON; `None` when the line is not a JSON object.
pub fn searchable(line: &str) -> Option<Searchable> {
    let value: Value = serde_json::from_str(line).ok()?;
    let object = value.as_object()?;
    let entry_type = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let time_ms = object
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(time::parse_ms);
    let mut pieces = Vec::new();
    let mut role = None;
    match entry_type.as_str() {
        "message" => {
            if let Some(message) = object.get("message") {
                role = message
                    .get("role")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                message_text(message, &mut pieces);
            }
        }
        "compaction" | "branch_summary" => push_str(object.get("summary"), &mut pieces),
        "custom_message" => content_text(object.get("content"), &mut pieces),
        "label" => push_str(object.get("label"), &mut pieces),
        "session_info" => push_str(object.get("name"), &mut pieces),
        "model_change" | "thinking_level_change" | "active_tools_change" | "leaf" => {}
        _ => strings(&value, &mut pieces),
    }
    Some(Searchable {
        entry_type,
        role,
        time_ms,
        text: pieces.join("\n"),
    })
}

/// A pi message's text: its content, a tool result's tool name, a bash execution's command
/// and output, a summary message's summary.
fn message_text(message: &Value, pieces: &mut Vec<String>) {
    push_str(message.get("toolName"), pieces);
    push_str(message.get("command"), pieces);
    push_str(message.get("output"), pieces);
    push_str(message.get("summary"), pieces);
    content_text(message.get("content"), pieces);
}

/// A content field: a string, or blocks (text, thinking, tool calls; images give nothing;
/// an unknown block gives its strings).
fn content_text(content: Option<&Value>, pieces: &mut Vec<String>) {
    match content {
        Some(Value::String(text)) => push(text, pieces),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => push_str(block.get("text"), pieces),
                    Some("thinking") => push_str(block.get("thinking"), pieces),
                    Some("toolCall") => {
                        push_str(block.get("name"), pieces);
                        if let Some(arguments) = block.get("arguments") {
                            strings(arguments, pieces);
                        }
                    }
                    Some("image") => {}
                    _ => strings(block, pieces),
                }
            }
        }
        Some(other) => strings(other, pieces),
        None => {}
    }
}

/// Every string value in `value`, save those of [`NOT_TEXT`] fields, the `data` of an
/// object that says what media it holds (an image's or a file's base64) and `data:` URLs.
fn strings(value: &Value, pieces: &mut Vec<String>) {
    match value {
        Value::String(text) if text.starts_with("data:") => {}
        Value::String(text) => push(text, pieces),
        Value::Array(items) => items.iter().for_each(|item| strings(item, pieces)),
        Value::Object(fields) => {
            let media = ["mimeType", "media_type", "mime_type"]
                .iter()
                .any(|k| fields.contains_key(*k));
            for (key, field) in fields {
                let encoded = media && key == "data";
                if !encoded && !NOT_TEXT.contains(&key.as_str()) {
                    strings(field, pieces);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn push_str(value: Option<&Value>, pieces: &mut Vec<String>) {
    if let Some(text) = value.and_then(Value::as_str) {
        push(text, pieces);
    }
}

fn push(text: &str, pieces: &mut Vec<String>) {
    if !text.trim().is_empty() {
        pieces.push(text.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::searchable;

    fn text(line: &str) -> String {
        searchable(line).map(|s| s.text).unwrap_or_default()
    }

    #[test]
    fn pi_entries_give_their_text_and_not_their_ids_or_images() {
        let line = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"ponder","thinkingSignature":"sig"},{"type":"text","text":"hello"},{"type":"toolCall","id":"c1","name":"grep","arguments":{"pattern":"needle","path":"src"}},{"type":"image","data":"QUJD","mimeType":"image/png"}],"model":"m"}}"#;
        let s = searchable(line).unwrap_or_else(|| panic!("a message"));
        assert_eq!(s.entry_type, "message");
        assert_eq!(s.role.as_deref(), Some("assistant"));
        assert_eq!(s.time_ms, Some(1_767_225_600_000));
        // The arguments' values in the order serde_json keeps an object's fields.
        assert_eq!(s.text, "ponder\nhello\ngrep\nsrc\nneedle");
        assert_eq!(
            text(
                r#"{"type":"message","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"body"}]}}"#
            ),
            "read\nbody"
        );
        assert_eq!(
            text(r#"{"type":"compaction","summary":"the gist","firstKeptEntryId":"x"}"#),
            "the gist"
        );
        assert_eq!(
            text(r#"{"type":"label","targetId":"a1","label":"keep"}"#),
            "keep"
        );
        assert_eq!(text(r#"{"type":"session_info","name":"Fix it"}"#), "Fix it");
        assert_eq!(
            text(r#"{"type":"model_change","provider":"p","modelId":"m"}"#),
            ""
        );
    }

    #[test]
    fn other_lines_give_their_strings_but_not_ids_or_data() {
        let claude = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"found it"}]}}"#;
        assert_eq!(text(claude), "found it");
        let image = r#"{"type":"user","message":{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}},{"type":"input_image","image_url":"data:image/png;base64,QUJD"}]}}"#;
        assert_eq!(text(image), "");
        // A custom entry's data is its content.
        let custom = r#"{"type":"custom","customType":"note","data":{"body":"remember this"}}"#;
        assert_eq!(text(custom), "note\nremember this");
        assert_eq!(searchable("not json"), None);
        assert_eq!(searchable("[1]"), None);
    }
}
