//! Canonical serialization of the lines grove creates (spec §2.4 key order, compact JSON,
//! `JSON.stringify` escaping, absent optional fields omitted) and of pi v3 JSONL exports.

use indexmap::IndexMap;
use serde_json::value::RawValue;

use crate::jsstr::quote;
use crate::migrate::write_object;

/// An entry to append, without its common fields (grove fills in `id`, `parentId`,
/// `timestamp`). JSON-valued fields are raw JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum NewEntry {
    /// A `message` entry; `message` is the message object's JSON text.
    Message {
        /// The message object.
        message: String,
    },
    /// A `model_change`.
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// A `thinking_level_change`.
    ThinkingLevelChange {
        /// Any string; `off`…`max` are the known ones.
        thinking_level: String,
    },
    /// An `active_tools_change`.
    ActiveToolsChange {
        /// The active tool names.
        active_tool_names: Vec<String>,
    },
    /// A `compaction`.
    Compaction {
        /// Summary text.
        summary: String,
        /// First entry kept by reference.
        first_kept_entry_id: String,
        /// Estimated tokens before compaction (a JSON number).
        tokens_before: u64,
        /// `retainedTail` as a JSON array.
        retained_tail: Option<String>,
        /// `details` JSON.
        details: Option<String>,
        /// `usage` JSON.
        usage: Option<String>,
        /// `fromHook`.
        from_hook: Option<bool>,
    },
    /// A `branch_summary`.
    BranchSummary {
        /// The navigation target, or `"root"`.
        from_id: String,
        /// Summary text.
        summary: String,
        /// `details` JSON.
        details: Option<String>,
        /// `usage` JSON.
        usage: Option<String>,
        /// `fromHook`.
        from_hook: Option<bool>,
    },
    /// A `custom` entry (extension state).
    Custom {
        /// Extension type.
        custom_type: String,
        /// `data` JSON.
        data: Option<String>,
    },
    /// A `custom_message`.
    CustomMessage {
        /// Extension type.
        custom_type: String,
        /// `content` JSON (string or array of blocks).
        content: String,
        /// Whether a UI renders it.
        display: bool,
        /// `details` JSON.
        details: Option<String>,
    },
    /// A `label` (`None` clears).
    Label {
        /// The labelled entry.
        target_id: String,
        /// The label, stored as given.
        label: Option<String>,
    },
    /// A `session_info` (`None` clears the name).
    SessionInfo {
        /// The name.
        name: Option<String>,
    },
    /// Any entry given as a JSON object; its `type` and other fields are kept in order,
    /// and `id`, `parentId`, `timestamp` are set by grove.
    Raw {
        /// The entry object's JSON text.
        object: String,
    },
}

/// Why a [`NewEntry`] cannot be serialized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidNewEntry(pub String);

impl NewEntry {
    /// The entry's `type`.
    pub fn type_name(&self) -> Result<String, InvalidNewEntry> {
        Ok(match self {
            NewEntry::Message { .. } => "message".into(),
            NewEntry::ModelChange { .. } => "model_change".into(),
            NewEntry::ThinkingLevelChange { .. } => "thinking_level_change".into(),
            NewEntry::ActiveToolsChange { .. } => "active_tools_change".into(),
            NewEntry::Compaction { .. } => "compaction".into(),
            NewEntry::BranchSummary { .. } => "branch_summary".into(),
            NewEntry::Custom { .. } => "custom".into(),
            NewEntry::CustomMessage { .. } => "custom_message".into(),
            NewEntry::Label { .. } => "label".into(),
            NewEntry::SessionInfo { .. } => "session_info".into(),
            NewEntry::Raw { object } => {
                #[derive(serde::Deserialize)]
                struct Ty {
                    #[serde(rename = "type")]
                    ty: Option<String>,
                }
                serde_json::from_str::<Ty>(object)
                    .ok()
                    .and_then(|t| t.ty)
                    .ok_or_else(|| InvalidNewEntry("entry object needs a string type".into()))?
            }
        })
    }

    /// Serializes the entry as a pi line (without LF).
    pub fn to_line(
        &self,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> Result<String, InvalidNewEntry> {
        let type_name = self.type_name()?;
        let mut m: Vec<(String, String)> = vec![
            ("type".into(), quote(&type_name)),
            ("id".into(), quote(id)),
            ("parentId".into(), parent_id.map_or("null".into(), quote)),
            ("timestamp".into(), quote(timestamp)),
        ];
        let mut put = |k: &str, v: String| m.push((k.to_owned(), v));
        match self {
            NewEntry::Message { message } => put("message", json_object(message, "message")?),
            NewEntry::ModelChange { provider, model_id } => {
                put("provider", quote(provider));
                put("modelId", quote(model_id));
            }
            NewEntry::ThinkingLevelChange { thinking_level } => {
                put("thinkingLevel", quote(thinking_level))
            }
            NewEntry::ActiveToolsChange { active_tool_names } => {
                let items: Vec<String> = active_tool_names.iter().map(|n| quote(n)).collect();
                put("activeToolNames", format!("[{}]", items.join(",")));
            }
            NewEntry::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                retained_tail,
                details,
                usage,
                from_hook,
            } => {
                put("summary", quote(summary));
                put("firstKeptEntryId", quote(first_kept_entry_id));
                put("tokensBefore", tokens_before.to_string());
                if let Some(t) = retained_tail {
                    put("retainedTail", json_value(t, "retainedTail")?);
                }
                if let Some(d) = details {
                    put("details", json_value(d, "details")?);
                }
                if let Some(u) = usage {
                    put("usage", json_value(u, "usage")?);
                }
                if let Some(h) = from_hook {
                    put("fromHook", h.to_string());
                }
            }
            NewEntry::BranchSummary {
                from_id,
                summary,
                details,
                usage,
                from_hook,
            } => {
                put("fromId", quote(from_id));
                put("summary", quote(summary));
                if let Some(d) = details {
                    put("details", json_value(d, "details")?);
                }
                if let Some(u) = usage {
                    put("usage", json_value(u, "usage")?);
                }
                if let Some(h) = from_hook {
                    put("fromHook", h.to_string());
                }
            }
            NewEntry::Custom { custom_type, data } => {
                put("customType", quote(custom_type));
                if let Some(d) = data {
                    put("data", json_value(d, "data")?);
                }
            }
            NewEntry::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                put("customType", quote(custom_type));
                put("content", json_value(content, "content")?);
                put("display", display.to_string());
                if let Some(d) = details {
                    put("details", json_value(d, "details")?);
                }
            }
            NewEntry::Label { target_id, label } => {
                put("targetId", quote(target_id));
                if let Some(l) = label {
                    put("label", quote(l));
                }
            }
            NewEntry::SessionInfo { name } => {
                if let Some(n) = name {
                    put("name", quote(n));
                }
            }
            NewEntry::Raw { object } => {
                let members: IndexMap<String, &RawValue> = serde_json::from_str(object)
                    .map_err(|e| InvalidNewEntry(format!("entry is not a JSON object: {e}")))?;
                for (k, v) in members {
                    if !matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp") {
                        m.push((k, compact(v.get())));
                    }
                }
            }
        }
        Ok(write_object(&m))
    }
}

/// A `leaf` control line as the pi harness writes it (spec §3.6).
pub fn leaf_line(
    id: &str,
    previous_leaf: Option<&str>,
    timestamp: &str,
    target: Option<&str>,
) -> String {
    format!(
        "{{\"type\":\"leaf\",\"id\":{},\"parentId\":{},\"timestamp\":{},\"targetId\":{}}}",
        quote(id),
        previous_leaf.map_or("null".into(), quote),
        quote(timestamp),
        target.map_or("null".into(), quote)
    )
}

fn json_value(text: &str, field: &str) -> Result<String, InvalidNewEntry> {
    let raw: Box<RawValue> = serde_json::from_str(text)
        .map_err(|e| InvalidNewEntry(format!("{field} is not valid JSON: {e}")))?;
    Ok(compact(raw.get()))
}

fn json_object(text: &str, field: &str) -> Result<String, InvalidNewEntry> {
    let v = json_value(text, field)?;
    if v.starts_with('{') {
        Ok(v)
    } else {
        Err(InvalidNewEntry(format!("{field} must be a JSON object")))
    }
}

/// Removes insignificant whitespace from JSON text, leaving strings untouched. Text that is
/// already compact (the common case: pi writes compact JSON) is copied without rescanning.
pub fn compact(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut copied = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            out.extend_from_slice(&bytes[copied..i]);
            copied = i + 1;
        }
    }
    if copied == 0 {
        return text.to_owned();
    }
    out.extend_from_slice(&bytes[copied..]);
    // Only ASCII whitespace bytes outside strings were removed, so this stays UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
