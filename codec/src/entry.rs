//! The entry model: what grove knows of a pi line without giving up its bytes.
//!
//! A line is kept as its original text. [`Envelope::parse`] validates the common fields
//! (pi harness rules, spec §2.3) and classifies the line; type-specific fields are read
//! through [`crate::fields`] when an operation needs them.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsstr::{self, JsString};

/// Message roles (spec §2.5). Unknown roles are kept as [`Role::Other`]; the raw line keeps
/// the role's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `toolResult`
    ToolResult,
    /// `bashExecution`
    BashExecution,
    /// `custom`
    Custom,
    /// `hookMessage` (v2 name of `custom`)
    HookMessage,
    /// `branchSummary` (synthetic; refused on append)
    BranchSummary,
    /// `compactionSummary` (synthetic; refused on append)
    CompactionSummary,
    /// Any other role, or a message without a string role.
    Other,
}

impl Role {
    /// Classifies a role name.
    pub fn from_name(name: &str) -> Role {
        match name {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "custom" => Role::Custom,
            "hookMessage" => Role::HookMessage,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            _ => Role::Other,
        }
    }

    /// The role's name as pi writes it (`"other"` for unknown roles).
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::Custom => "custom",
            Role::HookMessage => "hookMessage",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            Role::Other => "other",
        }
    }
}

/// Entry types (spec §2.4), plus `leaf` control lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// `message`, with its role.
    Message(Role),
    /// `model_change`
    ModelChange,
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `active_tools_change`
    ActiveToolsChange,
    /// `compaction`
    Compaction,
    /// `branch_summary`
    BranchSummary,
    /// `custom`
    Custom,
    /// `custom_message`
    CustomMessage,
    /// `label`
    Label,
    /// `session_info`
    SessionInfo,
    /// `leaf`: a control line, stored as a leaf record, never a tree node.
    Leaf,
    /// Any other type: a tree node that projects to nothing.
    Unknown,
}

impl EntryKind {
    /// Classifies a `type` value; `role` is the message role when the type is `message`.
    pub fn classify(ty: &str, role: Option<&str>) -> EntryKind {
        match ty {
            "message" => EntryKind::Message(role.map_or(Role::Other, Role::from_name)),
            "model_change" => EntryKind::ModelChange,
            "thinking_level_change" => EntryKind::ThinkingLevelChange,
            "active_tools_change" => EntryKind::ActiveToolsChange,
            "compaction" => EntryKind::Compaction,
            "branch_summary" => EntryKind::BranchSummary,
            "custom" => EntryKind::Custom,
            "custom_message" => EntryKind::CustomMessage,
            "label" => EntryKind::Label,
            "session_info" => EntryKind::SessionInfo,
            "leaf" => EntryKind::Leaf,
            _ => EntryKind::Unknown,
        }
    }

    /// A one-byte tag for the binary record (stable: part of the on-disk format).
    pub fn tag(self) -> u8 {
        match self {
            EntryKind::Message(role) => match role {
                Role::User => 1,
                Role::Assistant => 2,
                Role::ToolResult => 3,
                Role::BashExecution => 4,
                Role::Custom => 5,
                Role::HookMessage => 6,
                Role::BranchSummary => 7,
                Role::CompactionSummary => 8,
                Role::Other => 9,
            },
            EntryKind::ModelChange => 20,
            EntryKind::ThinkingLevelChange => 21,
            EntryKind::ActiveToolsChange => 22,
            EntryKind::Compaction => 23,
            EntryKind::BranchSummary => 24,
            EntryKind::Custom => 25,
            EntryKind::CustomMessage => 26,
            EntryKind::Label => 27,
            EntryKind::SessionInfo => 28,
            EntryKind::Leaf => 29,
            EntryKind::Unknown => 30,
        }
    }

    /// Inverse of [`EntryKind::tag`].
    pub fn from_tag(tag: u8) -> Option<EntryKind> {
        let role = |r| Some(EntryKind::Message(r));
        match tag {
            1 => role(Role::User),
            2 => role(Role::Assistant),
            3 => role(Role::ToolResult),
            4 => role(Role::BashExecution),
            5 => role(Role::Custom),
            6 => role(Role::HookMessage),
            7 => role(Role::BranchSummary),
            8 => role(Role::CompactionSummary),
            9 => role(Role::Other),
            20 => Some(EntryKind::ModelChange),
            21 => Some(EntryKind::ThinkingLevelChange),
            22 => Some(EntryKind::ActiveToolsChange),
            23 => Some(EntryKind::Compaction),
            24 => Some(EntryKind::BranchSummary),
            25 => Some(EntryKind::Custom),
            26 => Some(EntryKind::CustomMessage),
            27 => Some(EntryKind::Label),
            28 => Some(EntryKind::SessionInfo),
            29 => Some(EntryKind::Leaf),
            30 => Some(EntryKind::Unknown),
            _ => None,
        }
    }

    /// Whether the tree view marks this kind as bookkeeping (spec §6.3).
    pub fn is_bookkeeping(self) -> bool {
        matches!(
            self,
            EntryKind::Label
                | EntryKind::SessionInfo
                | EntryKind::Custom
                | EntryKind::ModelChange
                | EntryKind::ThinkingLevelChange
                | EntryKind::ActiveToolsChange
        )
    }
}

/// Deserializes a field that is present (even as `null`) into `Some(raw)`; with
/// `#[serde(default)]` a missing field stays `None`, so `null` and absent differ.
pub fn present<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(d).map(Some)
}

/// The common fields of a line, borrowed from its text.
#[derive(Deserialize)]
struct CommonFields<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    ty: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(rename = "parentId", default, borrow, deserialize_with = "present")]
    parent_id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "targetId", default, borrow, deserialize_with = "present")]
    target_id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RoleOnly<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    role: Option<&'a RawValue>,
}

/// The validated common fields of one entry or leaf line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The entry's type and, for messages, role.
    pub kind: EntryKind,
    /// The `type` string as written (needed for unknown types).
    pub type_name: String,
    /// The entry id (decoded JSON string).
    pub id: String,
    /// The parent id; `None` for `null` and `""` (a root).
    pub parent_id: Option<String>,
    /// The `timestamp` string, verbatim.
    pub timestamp: String,
    /// For `leaf` lines: the target (`None` for `null`). For `label` entries: the target id.
    pub target_id: Option<String>,
}

impl Envelope {
    /// Parses and validates a line's common fields (strict rules of the pi harness).
    /// The error is the reason text; the caller adds the line position.
    pub fn parse(text: &str) -> Result<Envelope, String> {
        let trimmed = text.trim_start();
        if !trimmed.starts_with('{') {
            return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Err("line is not a JSON object".to_owned()),
                Err(e) => Err(format!("invalid JSON: {e}")),
            };
        }
        let fields: CommonFields<'_> =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let type_name = fields
            .ty
            .and_then(string_field)
            .ok_or_else(|| "entry type must be a string".to_owned())?;
        if type_name == "session" {
            return Err("unexpected session header".to_owned());
        }
        let id = fields
            .id
            .and_then(string_field)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| "entry is missing id".to_owned())?;
        let timestamp = fields
            .timestamp
            .and_then(string_field)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("entry {id} is missing timestamp"))?;
        let parent_raw = fields
            .parent_id
            .ok_or_else(|| format!("entry {id} is missing parentId"))?;
        let parent_id = nullable_string(parent_raw)
            .ok_or_else(|| format!("entry {id} has a parentId that is neither null nor a string"))?
            .filter(|p| !p.is_empty());
        let role = match (type_name.as_str(), fields.message) {
            ("message", Some(m)) => message_role(m.get()),
            _ => None,
        };
        let kind = EntryKind::classify(&type_name, role.as_deref());
        let target_id = match kind {
            EntryKind::Leaf => {
                let raw = fields
                    .target_id
                    .ok_or_else(|| format!("leaf line {id} is missing targetId"))?;
                nullable_string(raw).ok_or_else(|| {
                    format!("leaf line {id} has a targetId that is neither null nor a string")
                })?
            }
            EntryKind::Label => fields.target_id.and_then(string_field),
            _ => None,
        };
        Ok(Envelope {
            kind,
            type_name,
            id,
            parent_id,
            timestamp,
            target_id,
        })
    }
}

/// A JSON string value as Rust text (lone surrogates replaced), or `None` if not a string.
pub fn string_field(raw: &RawValue) -> Option<String> {
    string_field_cow(raw).map(std::borrow::Cow::into_owned)
}

/// [`string_field`], borrowed from `raw` when the string has no escapes.
pub fn string_field_cow(raw: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    if raw.get().starts_with('"') {
        jsstr::decode_lossy_cow(raw)
    } else {
        None
    }
}

/// The `role` of a message object's JSON text, if it has a string role.
pub(crate) fn message_role(message: &str) -> Option<String> {
    serde_json::from_str::<RoleOnly<'_>>(message)
        .ok()
        .and_then(|r| r.role)
        .and_then(string_field)
}

/// `Some(None)` for `null`, `Some(Some(s))` for a string, `None` otherwise.
pub fn nullable_string(raw: &RawValue) -> Option<Option<String>> {
    if raw.get() == "null" {
        Some(None)
    } else {
        string_field(raw).map(Some)
    }
}

/// A JSON string value as a [`JsString`], or `None` if not a string.
pub fn js_field(raw: &RawValue) -> Option<JsString> {
    JsString::from_raw(raw)
}
