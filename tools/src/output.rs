//! Shared pieces of human output: short entry ids, the type/role column, one-line previews
//! of entries and messages.

use grove::{Result, Session, Tree};
use serde_json::Value;

/// The shortest prefix length shown for an id.
const MIN_SHORT: usize = 4;
/// Characters of a preview before it is cut.
const PREVIEW_CHARS: usize = 72;

/// Shortest unique prefixes (at least [`MIN_SHORT`] characters) of a set of ids.
#[derive(Debug, Default)]
pub struct ShortIds {
    /// The ids, sorted and deduplicated.
    ids: Vec<String>,
    /// The byte length of each id's short form.
    lens: Vec<usize>,
}

impl ShortIds {
    /// The short ids of every tree entry of the session (what `resolve_entry` matches).
    pub fn of_session(session: &Session) -> Result<ShortIds> {
        let mut ids = Vec::new();
        for entry in session.entries() {
            ids.push(entry?.id().to_owned());
        }
        Ok(ShortIds::new(ids))
    }

    /// The short ids of the entries of a tree (the same ids as [`ShortIds::of_session`]:
    /// a shadowed duplicate has the id of the entry that shadows it).
    pub fn of_tree(tree: &Tree) -> ShortIds {
        ShortIds::new(tree.nodes.iter().map(|n| n.id.clone()).collect())
    }

    /// The short ids of a set of ids.
    pub fn new(mut ids: Vec<String>) -> ShortIds {
        ids.sort_unstable();
        ids.dedup();
        let lens = (0..ids.len())
            .map(|i| {
                let id = &ids[i];
                let mut need = 0;
                if let Some(before) = i.checked_sub(1).map(|b| &ids[b]) {
                    need = need.max(common_prefix(id, before) + 1);
                }
                if let Some(next) = ids.get(i + 1) {
                    need = need.max(common_prefix(id, next) + 1);
                }
                let chars = need.max(MIN_SHORT);
                id.char_indices().nth(chars).map_or(id.len(), |(at, _)| at)
            })
            .collect();
        ShortIds { ids, lens }
    }

    /// The short form of `id` (the id itself when it is not known).
    pub fn get<'a>(&'a self, id: &'a str) -> &'a str {
        match self.ids.binary_search_by(|probe| probe.as_str().cmp(id)) {
            Ok(i) => &self.ids[i][..self.lens[i]],
            Err(_) => id,
        }
    }
}

/// The number of leading characters `a` and `b` share.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// The original line a foreign transcript's entry keeps (`data`, or `text` parsed), with the
/// tool's name; `None` for any other entry.
fn foreign_line(entry: &Value) -> Option<(&'static str, Value)> {
    if str_field(entry, "type") != Some("custom") {
        return None;
    }
    let tool = match str_field(entry, "customType")?.split('.').next()? {
        "claude-code" => "claude-code",
        "codex" => "codex",
        "pi-lanes" => "pi-lanes",
        "pi-commits" => "pi-commits",
        _ => return None,
    };
    let line = match (entry.get("data"), str_field(entry, "text")) {
        (Some(data), _) => data.clone(),
        (None, Some(text)) => serde_json::from_str(text).ok()?,
        (None, None) => return None,
    };
    Some((tool, line))
}

/// The type column and preview of a foreign transcript's line: Claude Code's role (or line
/// type) and message text; Codex's item type and text.
fn foreign_preview(tool: &str, line: &Value) -> (String, String) {
    if tool == "pi-lanes" || tool == "pi-commits" {
        // The line's entry (a commit's first), shown as pi's own entries are.
        let entry = match line {
            Value::Array(writes) => writes
                .iter()
                .find(|w| str_field(w, "kind") == Some("entry")),
            one if str_field(one, "kind") == Some("entry") => Some(one),
            _ => None,
        };
        return match entry {
            Some(e) => (kind_of(e), entry_preview(e)),
            None => (
                str_field(line, "kind").unwrap_or("commit").to_owned(),
                String::new(),
            ),
        };
    }
    if tool == "claude-code" {
        let ty = str_field(line, "type").unwrap_or("?");
        let text = match ty {
            "user" | "assistant" => line
                .get("message")
                .and_then(|m| m.get("content"))
                .map(content_text)
                .unwrap_or_default(),
            "system" => str_field(line, "content").unwrap_or_default().to_owned(),
            "summary" => str_field(line, "summary").unwrap_or_default().to_owned(),
            "custom-title" => str_field(line, "customTitle")
                .unwrap_or_default()
                .to_owned(),
            "tag" => str_field(line, "tag").unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        return (ty.to_owned(), clip(&text));
    }
    let payload = line.get("payload").unwrap_or(line);
    let ty = str_field(payload, "type")
        .or_else(|| str_field(line, "type"))
        .unwrap_or("item");
    let text = codex_item_text(ty, payload);
    let kind = match (ty, str_field(payload, "role")) {
        ("message", Some(role)) => role.to_owned(),
        _ => ty.to_owned(),
    };
    (kind, clip(&text))
}

/// The type column of an entry line: the role for messages, else the `type`.
pub fn kind_of(line: &Value) -> String {
    if let Some((tool, original)) = foreign_line(line) {
        return foreign_preview(tool, &original).0;
    }
    let ty = str_field(line, "type").unwrap_or("?");
    if ty == "message" {
        line.get("message")
            .and_then(|m| str_field(m, "role"))
            .unwrap_or("message")
            .to_owned()
    } else {
        ty.to_owned()
    }
}

/// `(kind, preview)` of a stored line.
pub fn describe_line(line: &str) -> (String, String) {
    match serde_json::from_str::<Value>(line) {
        Ok(v) => (kind_of(&v), entry_preview(&v)),
        Err(_) => ("?".to_owned(), clip(line)),
    }
}

/// A one-line preview of an entry.
pub fn entry_preview(entry: &Value) -> String {
    let field = |k: &str| str_field(entry, k).unwrap_or_default().to_owned();
    let text = match str_field(entry, "type").unwrap_or_default() {
        "message" => entry
            .get("message")
            .map(message_preview)
            .unwrap_or_default(),
        "compaction" | "branch_summary" => field("summary"),
        "model_change" => format!("{}/{}", field("provider"), field("modelId")),
        "thinking_level_change" => field("thinkingLevel"),
        "active_tools_change" => entry
            .get("activeToolNames")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        "label" => match str_field(entry, "label").map(str::trim) {
            Some(l) if !l.is_empty() => format!("{} = {l}", field("targetId")),
            _ => format!("{} (cleared)", field("targetId")),
        },
        "session_info" => match str_field(entry, "name").map(str::trim) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => "(name cleared)".to_owned(),
        },
        "custom" => match foreign_line(entry) {
            Some((tool, original)) => foreign_preview(tool, &original).1,
            None => field("customType"),
        },
        "custom_message" => {
            let content = entry.get("content").map(content_text).unwrap_or_default();
            format!("[{}] {content}", field("customType"))
        }
        "leaf" => format!("-> {}", str_field(entry, "targetId").unwrap_or("root")),
        _ => String::new(),
    };
    clip(&text)
}

/// A one-line preview of a message object.
pub fn message_preview(message: &Value) -> String {
    let text = match str_field(message, "role").unwrap_or_default() {
        "bashExecution" => format!("$ {}", str_field(message, "command").unwrap_or_default()),
        "branchSummary" | "compactionSummary" => {
            str_field(message, "summary").unwrap_or_default().to_owned()
        }
        "toolResult" => {
            let tool = str_field(message, "toolName").unwrap_or("tool");
            let content = message.get("content").map(content_text).unwrap_or_default();
            format!("[{tool}] {content}")
        }
        // Codex's items other than messages (a foreign session's context).
        "" => codex_item_text(str_field(message, "type").unwrap_or_default(), message),
        _ => message.get("content").map(content_text).unwrap_or_default(),
    };
    clip(&text)
}

/// The visible text of a Codex item of type `ty` (a rollout line's payload, or an item of a
/// context): a message's content, a call's name, an output, a reasoning summary, else its
/// `message` (a compaction's summary, an event's text) or content.
fn codex_item_text(ty: &str, item: &Value) -> String {
    match ty {
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            format!("[call {}]", str_field(item, "name").unwrap_or("tool"))
        }
        "function_call_output" | "custom_tool_call_output" => match item.get("output") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => content_text(other),
            None => String::new(),
        },
        "reasoning" => item.get("summary").map(content_text).unwrap_or_default(),
        "message" => item.get("content").map(content_text).unwrap_or_default(),
        _ => match str_field(item, "message") {
            Some(text) => text.to_owned(),
            None => item.get("content").map(content_text).unwrap_or_default(),
        },
    }
}

/// The role of a message object (a Codex item's `type` when it has none).
pub fn role_of(message: &Value) -> &str {
    str_field(message, "role")
        .or_else(|| str_field(message, "type"))
        .unwrap_or("?")
}

/// The visible text of message content, pi's or Claude's or Codex's: a string, or blocks (text
/// kept, calls, results and images named).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let parts: Vec<String> = blocks
                .iter()
                .filter_map(|b| match str_field(b, "type") {
                    // pi's blocks, and Claude's and Codex's (a foreign session's context).
                    Some("text" | "input_text" | "output_text" | "summary_text") => {
                        str_field(b, "text").map(str::to_owned)
                    }
                    Some("toolCall" | "tool_use") => {
                        Some(format!("[call {}]", str_field(b, "name").unwrap_or("tool")))
                    }
                    Some("tool_result") => Some(match b.get("content") {
                        Some(inner) => format!("[result] {}", content_text(inner)),
                        None => "[result]".to_owned(),
                    }),
                    Some("image" | "input_image") => Some("[image]".to_owned()),
                    _ => None,
                })
                .collect();
            parts.join(" ")
        }
        _ => String::new(),
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Collapses whitespace runs to one space and cuts the text at [`PREVIEW_CHARS`].
pub fn clip(text: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count >= PREVIEW_CHARS {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// A JSON object with its keys in the given order (`serde_json` here sorts map keys).
pub fn ordered_object(pairs: &[(&str, Value)]) -> String {
    let members: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::String((*k).to_owned())))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// `SHORTID KIND: PREVIEW` of an entry, or `root` for the root position.
pub fn describe_entry(session: &Session, short: &ShortIds, id: Option<&str>) -> Result<String> {
    let Some(id) = id else {
        return Ok("root".to_owned());
    };
    let (kind, preview) = describe_line(&session.entry(id)?.line);
    Ok(if preview.is_empty() {
        format!("{} {kind}", short.get(id))
    } else {
        format!("{} {kind}: {preview}", short.get(id))
    })
}

/// `{"entry", "seq", "depth", "digest", "pathDigest", "parentPathDigest"}` of a proof, the entry
/// exactly as stored and the digests in hex: `grove show --json` and the server's
/// `GET .../entries/{eid}/proof` (docs/api.md).
pub fn proof_json(proof: &grove::EntryProof) -> String {
    let hex = grove::codec::digest::hex;
    let pairs = [
        ("seq", serde_json::json!(proof.entry.seq)),
        ("depth", serde_json::json!(proof.entry.node.depth)),
        ("digest", serde_json::json!(hex(&proof.content()))),
        ("pathDigest", serde_json::json!(hex(&proof.digest()))),
        (
            "parentPathDigest",
            serde_json::json!(hex(&proof.parent_digest)),
        ),
    ];
    let rest = ordered_object(&pairs);
    // The entry object as stored, not re-serialized, then the digests.
    format!("{{\"entry\":{},{}", proof.entry.line, &rest[1..])
}

/// An operation as JSON (`grove log --json`, the server's `.../operations` and `.../undo`):
/// `{"op", "kind", "time", "timeMs", "actor", "leafBefore", "leafAfter", "records",
/// "firstSeq", "firstId", "lastId"}`.
pub fn operation_value(op: &grove::Operation) -> Value {
    serde_json::json!({
        "op": op.number,
        "kind": op.kind.name(),
        "time": op.time(),
        "timeMs": op.time_ms,
        "actor": op.actor,
        "leafBefore": op.leaf_before,
        "leafAfter": op.leaf_after,
        "records": op.records(),
        "firstSeq": op.first_seq,
        "firstId": op.first_id,
        "lastId": op.last_id,
    })
}

/// A tree node as JSON (the server's `.../tree` and the HTML page): `{"id", "parentId",
/// "type", "children": [index...], "label", "onActivePath"}`.
pub fn tree_node_value(n: &grove::TreeNode) -> Value {
    serde_json::json!({
        "id": n.id,
        "parentId": n.parent,
        "type": n.type_name,
        "children": n.children,
        "label": n.label,
        "onActivePath": n.on_active_path,
    })
}

/// A payload collection as JSON: `{"payloads", "payloadBytes", "referenced", "removed":
/// [{"hash", "bytes"}], "removedBytes"}` (`grove gc --json`, `POST /v1/gc`).
pub fn gc_value(report: &grove::GcReport) -> Value {
    let removed: Vec<Value> = report
        .removed
        .iter()
        .map(|(hash, bytes)| serde_json::json!({ "hash": hash, "bytes": bytes }))
        .collect();
    serde_json::json!({
        "payloads": report.payloads,
        "payloadBytes": report.payload_bytes,
        "referenced": report.referenced,
        "removed": removed,
        "removedBytes": report.removed_bytes(),
        "redactionsApplied": report.redactions_applied,
        "rewriteDue": report.rewrite_due,
        "searchCompacted": report.search_compacted,
        "catalogueRowsRemoved": report.catalogue_rows_removed,
        "backendCompacted": report.backend_compacted,
    })
}

/// A redaction as JSON: `{"entryId", "paths", "reason", "removed", "before", "after",
/// "recordId", "actor", "timeMs"}`.
pub fn redaction_value(r: &grove::Redaction) -> Value {
    serde_json::json!({
        "entryId": r.entry_id,
        "paths": r.paths,
        "reason": r.reason,
        "removed": r.removed,
        "before": r.before,
        "after": r.after,
        "recordId": r.record_id,
        "actor": r.actor,
        "timeMs": r.time_ms,
    })
}

/// A seal as JSON: `{"digest", "records", "operations"}`.
pub fn seal_value(seal: &grove::Seal) -> Value {
    serde_json::json!({
        "digest": seal.digest,
        "records": seal.records,
        "operations": seal.operations,
    })
}

/// The outcome of a seal check as JSON: `{"extends": true, "operations", "records"}` or
/// `{"extends": false}`.
pub fn seal_check_value(check: &grove::SealCheck) -> Value {
    match check {
        grove::SealCheck::Extends {
            operations,
            records,
        } => serde_json::json!({"extends": true, "operations": operations, "records": records}),
        grove::SealCheck::Diverged => serde_json::json!({"extends": false}),
    }
}
