//! Typed, borrowed readings of an entry's type-specific fields, parsed from its text on
//! demand. Values stay raw JSON so they can be passed on byte for byte.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::entry::present;

/// The known fields of any entry type, each as raw JSON when present (even as `null`).
#[derive(Deserialize, Default)]
pub struct Fields<'a> {
    /// `message` (message entries).
    #[serde(default, borrow, deserialize_with = "present")]
    pub message: Option<&'a RawValue>,
    /// `provider` (model_change).
    #[serde(default, borrow, deserialize_with = "present")]
    pub provider: Option<&'a RawValue>,
    /// `modelId` (model_change).
    #[serde(rename = "modelId", default, borrow, deserialize_with = "present")]
    pub model_id: Option<&'a RawValue>,
    /// `thinkingLevel` (thinking_level_change).
    #[serde(
        rename = "thinkingLevel",
        default,
        borrow,
        deserialize_with = "present"
    )]
    pub thinking_level: Option<&'a RawValue>,
    /// `activeToolNames` (active_tools_change).
    #[serde(
        rename = "activeToolNames",
        default,
        borrow,
        deserialize_with = "present"
    )]
    pub active_tool_names: Option<&'a RawValue>,
    /// `summary` (compaction, branch_summary).
    #[serde(default, borrow, deserialize_with = "present")]
    pub summary: Option<&'a RawValue>,
    /// `firstKeptEntryId` (compaction).
    #[serde(
        rename = "firstKeptEntryId",
        default,
        borrow,
        deserialize_with = "present"
    )]
    pub first_kept_entry_id: Option<&'a RawValue>,
    /// `tokensBefore` (compaction).
    #[serde(rename = "tokensBefore", default, borrow, deserialize_with = "present")]
    pub tokens_before: Option<&'a RawValue>,
    /// `retainedTail` (compaction, harness).
    #[serde(rename = "retainedTail", default, borrow, deserialize_with = "present")]
    pub retained_tail: Option<&'a RawValue>,
    /// `details`.
    #[serde(default, borrow, deserialize_with = "present")]
    pub details: Option<&'a RawValue>,
    /// `usage`.
    #[serde(default, borrow, deserialize_with = "present")]
    pub usage: Option<&'a RawValue>,
    /// `fromHook`.
    #[serde(rename = "fromHook", default, borrow, deserialize_with = "present")]
    pub from_hook: Option<&'a RawValue>,
    /// `fromId` (branch_summary).
    #[serde(rename = "fromId", default, borrow, deserialize_with = "present")]
    pub from_id: Option<&'a RawValue>,
    /// `customType` (custom, custom_message).
    #[serde(rename = "customType", default, borrow, deserialize_with = "present")]
    pub custom_type: Option<&'a RawValue>,
    /// `content` (custom_message).
    #[serde(default, borrow, deserialize_with = "present")]
    pub content: Option<&'a RawValue>,
    /// `display` (custom_message).
    #[serde(default, borrow, deserialize_with = "present")]
    pub display: Option<&'a RawValue>,
    /// `label` (label).
    #[serde(default, borrow, deserialize_with = "present")]
    pub label: Option<&'a RawValue>,
    /// `name` (session_info).
    #[serde(default, borrow, deserialize_with = "present")]
    pub name: Option<&'a RawValue>,
    /// `targetId` (label, leaf).
    #[serde(rename = "targetId", default, borrow, deserialize_with = "present")]
    pub target_id: Option<&'a RawValue>,
}

impl<'a> Fields<'a> {
    /// Parses the fields of an entry's text; `None` if the text is not a JSON object.
    pub fn parse(text: &'a str) -> Option<Fields<'a>> {
        serde_json::from_str(text).ok()
    }
}

/// The fields of a message object that grove reasons about.
#[derive(Deserialize, Default)]
pub struct MessageFields<'a> {
    /// `role`.
    #[serde(default, borrow, deserialize_with = "present")]
    pub role: Option<&'a RawValue>,
    /// `content`.
    #[serde(default, borrow, deserialize_with = "present")]
    pub content: Option<&'a RawValue>,
    /// `provider` (assistant).
    #[serde(default, borrow, deserialize_with = "present")]
    pub provider: Option<&'a RawValue>,
    /// `model` (assistant).
    #[serde(default, borrow, deserialize_with = "present")]
    pub model: Option<&'a RawValue>,
}

impl<'a> MessageFields<'a> {
    /// Parses a message object; `None` if it is not an object.
    pub fn parse(text: &'a str) -> Option<MessageFields<'a>> {
        serde_json::from_str(text).ok()
    }
}

/// Where the `message` value of a message line lies, as [`Fields::parse`] finds it (`None`
/// when the line does not parse or has no `message`, or the offsets exceed u32).
pub fn message_span(line: &str) -> Option<crate::record::MessageSpan> {
    let message = Fields::parse(line)?.message?;
    let text = message.get();
    // `text` borrows from `line`: its offset is the distance between the two.
    let start = (text.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    span_at(line, start, text.len())
}

/// The span of the message object at `line[start..start + len]`, whose position is known
/// (the writer records it while it renders a line).
pub fn span_at(line: &str, start: usize, len: usize) -> Option<crate::record::MessageSpan> {
    let text = line.get(start..start.checked_add(len)?)?;
    span_with(start, len, MessageFields::parse(text).as_ref())
}

/// [`span_at`] of a message already parsed into `fields` (`None`: it does not parse).
pub fn span_with(
    start: usize,
    len: usize,
    fields: Option<&MessageFields<'_>>,
) -> Option<crate::record::MessageSpan> {
    let null_content = fields
        .and_then(|m| m.content)
        .is_none_or(|c| c.get() == "null");
    Some(crate::record::MessageSpan {
        start: u32::try_from(start).ok()?,
        len: u32::try_from(len).ok()?,
        null_content,
    })
}

/// The `message` value a span names, if the span fits the line.
pub fn message_at(line: &str, span: crate::record::MessageSpan) -> Option<&str> {
    let start = span.start as usize;
    line.get(start..start.checked_add(span.len as usize)?)
}
