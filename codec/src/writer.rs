//! Canonical serialization of the lines grove creates (spec §2.4 key order, compact JSON,
//! `JSON.stringify` escaping, absent optional fields omitted) and of pi v3 JSONL exports.

use indexmap::IndexMap;
use serde_json::value::RawValue;

use crate::entry::{message_role, string_field_cow, EntryKind, Envelope};
use crate::fields;
use crate::jsstr::{push_quoted, quote};
use crate::record::MessageSpan;

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
    /// and `parentId`, `timestamp` are set by grove. Its `id`, when it has one, is the id
    /// the entry is appended with ([`NewEntry::given_id`]); else grove makes one.
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
        match self {
            NewEntry::Raw { object } => {
                #[derive(serde::Deserialize)]
                struct Ty {
                    #[serde(rename = "type")]
                    ty: Option<String>,
                }
                serde_json::from_str::<Ty>(object)
                    .ok()
                    .and_then(|t| t.ty)
                    .ok_or_else(|| InvalidNewEntry("entry object needs a string type".into()))
            }
            typed => typed.type_name_str().map(String::from),
        }
    }

    /// The `id` a `Raw` entry object names (`None`: absent or `null`; every other kind has
    /// none): the id its append uses when it is new to the session.
    pub fn given_id(&self) -> Result<Option<String>, InvalidNewEntry> {
        let NewEntry::Raw { object } = self else {
            return Ok(None);
        };
        #[derive(serde::Deserialize)]
        struct Id<'a> {
            #[serde(default, borrow)]
            id: Option<&'a RawValue>,
        }
        let Ok(Id { id: Some(raw) }) = serde_json::from_str::<Id<'_>>(object) else {
            return Ok(None);
        };
        match crate::entry::nullable_string(raw) {
            Some(id) => Ok(id),
            None => Err(InvalidNewEntry(format!(
                "the entry's id must be a string, got {}",
                raw.get()
            ))),
        }
    }

    /// Serializes the entry as a pi line (without LF).
    pub fn to_line(
        &self,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> Result<String, InvalidNewEntry> {
        Ok(self
            .write(&self.type_name()?, id, parent_id, timestamp)?
            .line)
    }

    /// Serializes the entry as [`NewEntry::to_line`] does and returns, with the line, its
    /// [`Envelope`] and (for a message) where its `message` value lies — exactly what
    /// [`Envelope::parse`] and [`fields::message_span`] would find in the line, without
    /// parsing it back. A `Raw` entry is parsed back: its fields are the caller's.
    pub fn render(
        &self,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> Result<Rendered, InvalidNewEntry> {
        let RenderedLine {
            line,
            kind,
            target_id,
            message,
        } = self.render_line(id, parent_id, timestamp)?;
        let envelope = match self {
            // Its fields are the caller's: read back from the line.
            NewEntry::Raw { .. } => Envelope::parse(&line).map_err(InvalidNewEntry)?,
            _ => Envelope {
                kind,
                type_name: self.type_name()?,
                id: id.to_owned(),
                parent_id: parent_id.filter(|p| !p.is_empty()).map(str::to_owned),
                timestamp: timestamp.to_owned(),
                target_id,
            },
        };
        Ok(Rendered {
            line,
            envelope,
            message,
        })
    }

    /// [`NewEntry::render`] without the envelope's copies of the strings the caller passed
    /// (the write path's: it needs the line, its kind, a label's target and the message
    /// span).
    pub fn render_line(
        &self,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> Result<RenderedLine, InvalidNewEntry> {
        let type_name = self.type_name_str()?;
        let Written { line, span, fields } = self.write(&type_name, id, parent_id, timestamp)?;
        if let NewEntry::Raw { .. } = self {
            let envelope = Envelope::parse(&line).map_err(InvalidNewEntry)?;
            let message = match envelope.kind {
                EntryKind::Message(_) => fields::message_span(&line),
                _ => None,
            };
            return Ok(RenderedLine {
                line,
                kind: envelope.kind,
                target_id: envelope.target_id,
                message,
            });
        }
        // The checks of `Envelope::parse` that a typed entry can fail.
        if id.is_empty() {
            return Err(InvalidNewEntry("entry is missing id".into()));
        }
        if timestamp.is_empty() {
            return Err(InvalidNewEntry(format!("entry {id} is missing timestamp")));
        }
        let message_text = span.and_then(|(start, len)| line.get(start..start + len));
        // The parse that validated the message serves its role and its span; a message it
        // refuses (a repeated field, say) is classified by its role alone, as
        // `Envelope::parse` does.
        let role = match &fields {
            Some(f) => f.role.and_then(string_field_cow),
            None => message_text.and_then(message_role).map(Into::into),
        };
        let kind = EntryKind::classify(&type_name, role.as_deref());
        let message = match (kind, span) {
            (EntryKind::Message(_), Some((start, len))) => {
                fields::span_with(start, len, fields.as_ref())
            }
            _ => None,
        };
        let target_id = match self {
            NewEntry::Label { target_id, .. } => Some(target_id.clone()),
            _ => None,
        };
        Ok(RenderedLine {
            line,
            kind,
            target_id,
            message,
        })
    }

    /// [`NewEntry::type_name`], borrowed for every kind but `Raw`.
    fn type_name_str(&self) -> Result<std::borrow::Cow<'static, str>, InvalidNewEntry> {
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
            NewEntry::Raw { .. } => self.type_name()?.into(),
        })
    }

    /// The line (of type `type_name`, [`NewEntry::type_name`]), and for a `Message` the
    /// byte range of its `message` value in it and its fields. Written straight into one
    /// string, in the key order of spec §2.4.
    fn write(
        &self,
        type_name: &str,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> Result<Written<'_>, InvalidNewEntry> {
        // The keys and punctuation of the longest fixed layout take under 128 bytes; the
        // line is built without growing its buffer unless strings need escapes.
        let capacity = 128
            + type_name.len()
            + id.len()
            + parent_id.map_or(0, str::len)
            + timestamp.len()
            + self.payload_len();
        let mut o = ObjectWriter::new(capacity);
        o.string("type", type_name);
        o.string("id", id);
        match parent_id {
            Some(p) => o.string("parentId", p),
            None => o.raw("parentId", "null"),
        }
        o.string("timestamp", timestamp);
        let mut span = None;
        let mut fields = None;
        match self {
            NewEntry::Message { message } => {
                // Parsing the message's fields validates it whole (serde_json checks the
                // syntax of every value it skips); only a message they refuse is validated
                // on its own.
                fields = fields::MessageFields::parse(message);
                let start = match &fields {
                    Some(_) if message.trim_start().starts_with('{') => {
                        o.valid_json("message", message)
                    }
                    _ => o.json("message", message, "message", true)?,
                };
                span = Some((start, o.len() - start));
            }
            NewEntry::ModelChange { provider, model_id } => {
                o.string("provider", provider);
                o.string("modelId", model_id);
            }
            NewEntry::ThinkingLevelChange { thinking_level } => {
                o.string("thinkingLevel", thinking_level)
            }
            NewEntry::ActiveToolsChange { active_tool_names } => {
                o.key("activeToolNames");
                o.out.push('[');
                for (i, name) in active_tool_names.iter().enumerate() {
                    if i > 0 {
                        o.out.push(',');
                    }
                    push_quoted(&mut o.out, name);
                }
                o.out.push(']');
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
                o.string("summary", summary);
                o.string("firstKeptEntryId", first_kept_entry_id);
                o.raw("tokensBefore", &tokens_before.to_string());
                if let Some(t) = retained_tail {
                    o.json("retainedTail", t, "retainedTail", false)?;
                }
                o.optional_json("details", details.as_deref())?;
                o.optional_json("usage", usage.as_deref())?;
                o.optional_bool("fromHook", *from_hook);
            }
            NewEntry::BranchSummary {
                from_id,
                summary,
                details,
                usage,
                from_hook,
            } => {
                o.string("fromId", from_id);
                o.string("summary", summary);
                o.optional_json("details", details.as_deref())?;
                o.optional_json("usage", usage.as_deref())?;
                o.optional_bool("fromHook", *from_hook);
            }
            NewEntry::Custom { custom_type, data } => {
                o.string("customType", custom_type);
                o.optional_json("data", data.as_deref())?;
            }
            NewEntry::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                o.string("customType", custom_type);
                o.json("content", content, "content", false)?;
                o.raw("display", if *display { "true" } else { "false" });
                o.optional_json("details", details.as_deref())?;
            }
            NewEntry::Label { target_id, label } => {
                o.string("targetId", target_id);
                if let Some(l) = label {
                    o.string("label", l);
                }
            }
            NewEntry::SessionInfo { name } => {
                if let Some(n) = name {
                    o.string("name", n);
                }
            }
            NewEntry::Raw { object } => {
                let members: IndexMap<String, &RawValue> = serde_json::from_str(object)
                    .map_err(|e| InvalidNewEntry(format!("entry is not a JSON object: {e}")))?;
                for (k, v) in members {
                    if !matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp") {
                        o.key(&k);
                        compact_into(&mut o.out, v.get());
                    }
                }
            }
        }
        Ok(Written {
            line: o.finish(),
            span,
            fields,
        })
    }

    /// About the length of the entry's texts (the largest, for entries with several), to size
    /// the line's buffer.
    fn payload_len(&self) -> usize {
        match self {
            NewEntry::Message { message } => message.len(),
            NewEntry::Compaction { summary, .. } | NewEntry::BranchSummary { summary, .. } => {
                summary.len()
            }
            NewEntry::CustomMessage { content, .. } => content.len(),
            NewEntry::Raw { object } => object.len(),
            NewEntry::ModelChange { provider, model_id } => provider.len() + model_id.len(),
            NewEntry::ThinkingLevelChange { thinking_level } => thinking_level.len(),
            NewEntry::ActiveToolsChange { active_tool_names } => {
                active_tool_names.iter().map(|n| n.len() + 3).sum()
            }
            NewEntry::Custom { data, .. } => data.as_ref().map_or(0, String::len),
            NewEntry::Label { label, .. } => label.as_ref().map_or(0, String::len) + 16,
            NewEntry::SessionInfo { name } => name.as_ref().map_or(0, String::len),
        }
    }
}

/// A line rendered from a [`NewEntry`] with what the write path needs of it
/// ([`NewEntry::render_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedLine {
    /// The line (without LF).
    pub line: String,
    /// Its kind, as [`Envelope::parse`] classifies it.
    pub kind: EntryKind,
    /// A label's target id.
    pub target_id: Option<String>,
    /// Where a message entry's `message` value lies, as [`fields::message_span`] finds it.
    pub message: Option<MessageSpan>,
}

/// A line rendered from a [`NewEntry`] ([`NewEntry::render`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The line (without LF).
    pub line: String,
    /// Its common fields, as [`Envelope::parse`] reads them.
    pub envelope: Envelope,
    /// Where a message entry's `message` value lies, as [`fields::message_span`] finds it.
    pub message: Option<MessageSpan>,
}

/// Writes the members of one JSON object into a string.
struct ObjectWriter {
    out: String,
}

impl ObjectWriter {
    fn new(capacity: usize) -> ObjectWriter {
        let mut out = String::with_capacity(capacity);
        out.push('{');
        ObjectWriter { out }
    }

    fn len(&self) -> usize {
        self.out.len()
    }

    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(',');
        }
        push_quoted(&mut self.out, key);
        self.out.push(':');
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.push_str(json);
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        push_quoted(&mut self.out, value);
    }

    fn optional_bool(&mut self, key: &str, value: Option<bool>) {
        if let Some(b) = value {
            self.raw(key, if b { "true" } else { "false" });
        }
    }

    /// Writes JSON text already validated, compacted; returns where the value starts.
    fn valid_json(&mut self, key: &str, text: &str) -> usize {
        self.key(key);
        let start = self.out.len();
        compact_into(&mut self.out, text.trim());
        start
    }

    fn optional_json(&mut self, key: &str, text: Option<&str>) -> Result<(), InvalidNewEntry> {
        if let Some(t) = text {
            self.json(key, t, key, false)?;
        }
        Ok(())
    }

    /// Writes JSON text given by the caller, validated and compacted; returns where the
    /// value starts. `object`: the value must be a JSON object.
    fn json(
        &mut self,
        key: &str,
        text: &str,
        field: &str,
        object: bool,
    ) -> Result<usize, InvalidNewEntry> {
        let raw: &RawValue = serde_json::from_str(text)
            .map_err(|e| InvalidNewEntry(format!("{field} is not valid JSON: {e}")))?;
        if object && !raw.get().starts_with('{') {
            return Err(InvalidNewEntry(format!("{field} must be a JSON object")));
        }
        self.key(key);
        let start = self.out.len();
        compact_into(&mut self.out, raw.get());
        Ok(start)
    }

    fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// What [`NewEntry::write`] produces.
struct Written<'a> {
    line: String,
    /// Where a message's `message` value lies in the line.
    span: Option<(usize, usize)>,
    /// A message's fields, parsed from the caller's text (`None`: not a message, or fields
    /// the parse refuses).
    fields: Option<fields::MessageFields<'a>>,
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

/// Removes insignificant whitespace from JSON text, leaving strings untouched. Text that is
/// already compact (the common case: pi writes compact JSON) is copied without rescanning.
pub fn compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    compact_into(&mut out, text);
    out
}

/// [`compact`], appending to `out`.
pub fn compact_into(out: &mut String, text: &str) {
    let bytes = text.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string: to its closing quote, stepping over escapes (an
                // unterminated string runs to the end).
                i += 1;
                loop {
                    match bytes
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(at) if bytes[i + at] == b'"' => {
                            i += at;
                            break;
                        }
                        Some(at) => i += at + 2,
                        None => {
                            i = bytes.len();
                            break;
                        }
                    }
                }
            }
            // Only ASCII whitespace outside strings is skipped, so every cut is on a
            // character boundary.
            b' ' | b'\n' | b'\r' | b'\t' => {
                out.push_str(&text[copied..i]);
                copied = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
}
