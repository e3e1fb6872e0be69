//! The shape pi requires of the entry types it knows (spec §2.4, §2.5), checked on the
//! entries a caller appends ([`check_entry`]). Import does not check it (spec §2.3: a file
//! pi wrote is taken as it is); an unknown entry type, an unknown role, an unknown content
//! block type and unknown fields pass, so they are kept byte for byte.
//!
//! What is checked, per type (a field "when present" may also be absent; `content` may also
//! be `null`, which pi-CLI reads as `[]`):
//! - `message`: `message` an object with a string `role`, and a numeric `timestamp` when
//!   present. `user`: `content` a string or an array of content blocks. `assistant`,
//!   `toolResult`: `content` an array of content blocks; `toolCallId`, `toolName` strings
//!   when present. `bashExecution`: `command`, `output` strings when present. `custom`,
//!   `hookMessage`: `customType` a string when present, `content` a string or an array of
//!   content blocks, `display` a boolean when present. A content block is an object with a
//!   string `type`: `text` has a string `text`, `thinking` a string `thinking`, `image`
//!   string `data` and `mimeType`, `toolCall` string `id` and `name` and an object
//!   `arguments` when present.
//! - `model_change`: `provider`, `modelId` strings.
//! - `thinking_level_change`: `thinkingLevel` a string.
//! - `active_tools_change`: `activeToolNames` an array of strings.
//! - `compaction`: `summary` a string, `tokensBefore` a number; `firstKeptEntryId` a string,
//!   `retainedTail` an array, `fromHook` a boolean when present.
//! - `branch_summary`: `fromId`, `summary` strings; `fromHook` a boolean when present.
//! - `custom`: `customType` a string.
//! - `custom_message`: `customType` a string, `content` a string or an array of content
//!   blocks, `display` a boolean.
//! - `label`: `targetId` a string; `label` a string when present.
//! - `session_info`: `name` a string when present.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

/// An object's members (the last of a repeated key wins, as in `JSON.parse`).
type Members<'a> = BTreeMap<String, &'a RawValue>;

/// What a field must hold.
#[derive(Debug, Clone, Copy)]
enum Want {
    String,
    Number,
    Bool,
    Object,
    Array,
    StringArray,
    /// A string or an array of content blocks (`null` too).
    Content,
    /// An array of content blocks (`null` too).
    Blocks,
}

impl Want {
    fn describe(self) -> &'static str {
        match self {
            Want::String => "a string",
            Want::Number => "a number",
            Want::Bool => "a boolean",
            Want::Object => "an object",
            Want::Array => "an array",
            Want::StringArray => "an array of strings",
            Want::Content => "a string or an array of content blocks",
            Want::Blocks => "an array of content blocks",
        }
    }
}

/// Checks the shape of one entry line (a JSON object with a string `type`) whose type pi
/// knows; any other type passes. The error names the field and what it holds, e.g.
/// `message.role must be a string, got 5`.
pub fn check_entry(line: &str) -> Result<(), String> {
    let entry = members(line, "the entry")?;
    let ty = match entry.get("type") {
        Some(t) => serde_json::from_str::<String>(t.get())
            .map_err(|_| format!("type must be a string, got {}", shown(t)))?,
        None => return Err("type is missing".into()),
    };
    let need = |key: &str, want: Want| field(&entry, "", key, want, true);
    let may = |key: &str, want: Want| field(&entry, "", key, want, false);
    match ty.as_str() {
        "message" => {
            need("message", Want::Object)?;
            if let Some(m) = entry.get("message") {
                check_message(m, "message.")?;
            }
        }
        "model_change" => {
            need("provider", Want::String)?;
            need("modelId", Want::String)?;
        }
        "thinking_level_change" => need("thinkingLevel", Want::String)?,
        "active_tools_change" => need("activeToolNames", Want::StringArray)?,
        "compaction" => {
            need("summary", Want::String)?;
            need("tokensBefore", Want::Number)?;
            may("firstKeptEntryId", Want::String)?;
            may("retainedTail", Want::Array)?;
            may("fromHook", Want::Bool)?;
        }
        "branch_summary" => {
            need("fromId", Want::String)?;
            need("summary", Want::String)?;
            may("fromHook", Want::Bool)?;
        }
        "custom" => need("customType", Want::String)?,
        "custom_message" => {
            need("customType", Want::String)?;
            may("content", Want::Content)?;
            need("display", Want::Bool)?;
        }
        "label" => {
            need("targetId", Want::String)?;
            may("label", Want::String)?;
        }
        "session_info" => may("name", Want::String)?,
        _ => {}
    }
    Ok(())
}

/// Checks a message object at `path` (`"message."`).
fn check_message(raw: &RawValue, path: &str) -> Result<(), String> {
    let m = members(raw.get(), path.trim_end_matches('.'))?;
    let need = |key: &str, want: Want| field(&m, path, key, want, true);
    let may = |key: &str, want: Want| field(&m, path, key, want, false);
    need("role", Want::String)?;
    may("timestamp", Want::Number)?;
    let role = m
        .get("role")
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
        .unwrap_or_default();
    match role.as_str() {
        "user" => may("content", Want::Content)?,
        "assistant" => may("content", Want::Blocks)?,
        "toolResult" => {
            may("content", Want::Blocks)?;
            may("toolCallId", Want::String)?;
            may("toolName", Want::String)?;
        }
        "bashExecution" => {
            may("command", Want::String)?;
            may("output", Want::String)?;
        }
        "custom" | "hookMessage" => {
            may("customType", Want::String)?;
            may("content", Want::Content)?;
            may("display", Want::Bool)?;
        }
        _ => {}
    }
    Ok(())
}

/// Checks one content block at `path` (`"message.content[2]"`).
fn check_block(raw: &RawValue, path: &str) -> Result<(), String> {
    let b = members(raw.get(), path)?;
    let prefix = format!("{path}.");
    let need = |key: &str, want: Want| field(&b, &prefix, key, want, true);
    let may = |key: &str, want: Want| field(&b, &prefix, key, want, false);
    need("type", Want::String)?;
    let ty = b
        .get("type")
        .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
        .unwrap_or_default();
    match ty.as_str() {
        "text" => need("text", Want::String)?,
        "thinking" => need("thinking", Want::String)?,
        "image" => {
            need("data", Want::String)?;
            need("mimeType", Want::String)?;
        }
        "toolCall" => {
            need("id", Want::String)?;
            need("name", Want::String)?;
            may("arguments", Want::Object)?;
        }
        _ => {}
    }
    Ok(())
}

/// The members of the JSON object `text` (named `what` in the error).
fn members<'a>(text: &'a str, what: &str) -> Result<Members<'a>, String> {
    serde_json::from_str(text).map_err(|_| match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => format!("{what} must be an object, got {}", shown(raw)),
        Err(e) => format!("{what} is not valid JSON: {e}"),
    })
}

/// Checks member `key` of `object` (at `path`) against `want`; `required`: it must be there.
fn field(
    object: &Members<'_>,
    path: &str,
    key: &str,
    want: Want,
    required: bool,
) -> Result<(), String> {
    let Some(raw) = object.get(key) else {
        return match required {
            true => Err(format!(
                "{path}{key} is missing: it must be {}",
                want.describe()
            )),
            false => Ok(()),
        };
    };
    let text = raw.get();
    let first = text.as_bytes().first().copied().unwrap_or(b' ');
    let ok = match want {
        Want::String => first == b'"',
        Want::Number => first == b'-' || first.is_ascii_digit(),
        Want::Bool => text == "true" || text == "false",
        Want::Object => first == b'{',
        Want::Array => first == b'[',
        Want::StringArray => serde_json::from_str::<Vec<&RawValue>>(text)
            .is_ok_and(|items| items.iter().all(|i| i.get().starts_with('"'))),
        Want::Content | Want::Blocks => {
            if text == "null" || (first == b'"' && matches!(want, Want::Content)) {
                true
            } else if first == b'[' {
                let blocks: Vec<&RawValue> = serde_json::from_str(text)
                    .map_err(|e| format!("{path}{key} is not valid JSON: {e}"))?;
                for (i, block) in blocks.iter().enumerate() {
                    check_block(block, &format!("{path}{key}[{i}]"))?;
                }
                true
            } else {
                false
            }
        }
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{path}{key} must be {}, got {}",
            want.describe(),
            shown(raw)
        )),
    }
}

/// A value as an error shows it: its JSON, cut after 40 characters.
fn shown(raw: &RawValue) -> String {
    let text = raw.get();
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
