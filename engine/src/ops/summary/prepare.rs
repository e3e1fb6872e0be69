//! Branch-summary collection and preparation (spec §8.1–§8.3).

use std::collections::{BTreeSet, HashSet};

use grove_codec::fields::{Fields, MessageFields};
use grove_codec::jsstr::{self, JsString};
use grove_codec::record::Parent;
use grove_codec::{EntryKind, Role};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::blocks::{arguments_len, blocks, js, js_len};
use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::tree::ancestors;
use crate::tree::paths;

/// Which walks the collection uses (spec §8.1, Appendix A.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathMode {
    /// Full paths; a missing parent ends the walk quietly (pi-CLI; grove's default).
    #[default]
    Full,
    /// Compaction-truncated paths; a missing parent is `InvalidSession` (pi harness).
    Branch,
}

/// The default context window when the model's is unknown, and the reserve (spec §8.2).
pub const DEFAULT_CONTEXT_WINDOW: i64 = 128_000;
/// Tokens reserved for the summary itself.
pub const DEFAULT_RESERVE_TOKENS: i64 = 16_384;
/// `DEFAULT_CONTEXT_WINDOW - DEFAULT_RESERVE_TOKENS`.
pub const DEFAULT_BUDGET: i64 = DEFAULT_CONTEXT_WINDOW - DEFAULT_RESERVE_TOKENS;

/// One message prepared for the summarizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryMessage {
    /// The message role (`user`, `assistant`, `custom`, `branchSummary`, …).
    pub role: String,
    /// The message as JSON object text.
    pub json: String,
}

/// The result of [`prepare_branch_entries`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreparedBranch {
    /// Messages, oldest first.
    pub messages: Vec<SummaryMessage>,
    /// Sum of their token estimates.
    pub total_tokens: u64,
    /// Files only read, in UTF-16 order.
    pub read_files: Vec<String>,
    /// Files written or edited, in UTF-16 order.
    pub modified_files: Vec<String>,
}

impl PreparedBranch {
    /// `{"readFiles":[…],"modifiedFiles":[…]}`, the `details` of a generated summary.
    pub fn details_json(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| jsstr::quote(s))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{{\"readFiles\":[{}],\"modifiedFiles\":[{}]}}",
            list(&self.read_files),
            list(&self.modified_files)
        )
    }
}

/// The entries a branch summary covers when moving from `old_leaf` to `target`, oldest
/// first, and their deepest common ancestor (spec §8.1).
pub(crate) fn collect_entries_for_branch_summary(
    s: &Handle,
    old_leaf: Option<&str>,
    target: &str,
    mode: PathMode,
) -> Result<(Vec<Entry>, Option<String>)> {
    let Some(old) = old_leaf else {
        return Ok((Vec::new(), None));
    };
    let (old_seq, _) = s.require_seq(old)?;
    let (target_seq, _) = s.require_seq(target)?;
    if mode == PathMode::Full
        && !ancestors::in_cycle_tree(s, old_seq)?
        && !ancestors::in_cycle_tree(s, target_seq)?
    {
        // The deepest common ancestor by jump pointers, then only the abandoned side.
        let common = ancestors::common_ancestor(s, old_seq, target_seq)?;
        let mut out = Vec::new();
        for e in ancestors::ancestors(s, old_seq) {
            let e = e?;
            if Some(e.seq) == common {
                break;
            }
            out.push(e);
        }
        out.reverse();
        let common = match common {
            Some(c) => Some(s.node(c)?.id.into()),
            None => None,
        };
        return Ok((out, common));
    }
    let walk = |seq| match mode {
        PathMode::Full => paths::path_to_root_seq(s, seq),
        PathMode::Branch => paths::branch_seq(s, seq),
    };
    let on_old: HashSet<u64> = walk(old_seq)?.iter().map(|e| e.seq).collect();
    let common = walk(target_seq)?
        .into_iter()
        .rev()
        .find(|e| on_old.contains(&e.seq));
    let stop = common.as_ref().map(|e| e.seq);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = Some(old_seq);
    while let Some(seq) = cur {
        if Some(seq) == stop || !seen.insert(seq) {
            break;
        }
        let entry = s.entry_at(seq)?;
        cur = match entry.node.parent {
            Parent::Seq(p) | Parent::Cycle(p) => Some(p),
            Parent::Missing if mode == PathMode::Branch => {
                return Err(GroveError::InvalidSession {
                    file: None,
                    reason: format!("Entry {} not found", entry.parent_id().unwrap_or_default()),
                })
            }
            _ => None,
        };
        out.push(entry);
    }
    out.reverse();
    Ok((out, common.map(|e| e.id().to_owned())))
}

/// Maps an entry to the message a summary sees (spec §8.2 step 2.1), or `None`.
fn summary_message(entry: &Entry) -> Option<SummaryMessage> {
    let fields = Fields::parse(&entry.line)?;
    let synthetic = |role: &str, members: Vec<(&str, Option<&RawValue>)>| {
        let mut parts = vec![format!("\"role\":{}", jsstr::quote(role))];
        for (k, v) in members {
            if let Some(v) = v {
                parts.push(format!("{}:{}", jsstr::quote(k), v.get()));
            }
        }
        SummaryMessage {
            role: role.to_owned(),
            json: format!("{{{}}}", parts.join(",")),
        }
    };
    match entry.kind() {
        EntryKind::Message(Role::ToolResult) => None,
        EntryKind::Message(_) => {
            let m = fields.message?;
            let role = MessageFields::parse(m.get())
                .and_then(|f| f.role)
                .and_then(grove_codec::entry::string_field)
                .unwrap_or_default();
            Some(SummaryMessage {
                role,
                json: m.get().to_owned(),
            })
        }
        EntryKind::CustomMessage => Some(synthetic(
            "custom",
            vec![
                ("customType", fields.custom_type),
                ("content", fields.content),
            ],
        )),
        EntryKind::BranchSummary => Some(synthetic(
            "branchSummary",
            vec![("summary", fields.summary), ("fromId", fields.from_id)],
        )),
        EntryKind::Compaction => Some(synthetic(
            "compactionSummary",
            vec![
                ("summary", fields.summary),
                ("tokensBefore", fields.tokens_before),
            ],
        )),
        _ => None,
    }
}

#[derive(Deserialize, Default)]
struct Est<'a> {
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    command: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    output: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    summary: Option<&'a RawValue>,
}

/// pi's token estimate: `ceil(chars / 4)` with chars in UTF-16 units (spec §8.2).
pub fn estimate_tokens(message: &SummaryMessage) -> u64 {
    let m: Est<'_> = serde_json::from_str(&message.json).unwrap_or_default();
    let chars: usize = match message.role.as_str() {
        "user" | "custom" | "toolResult" => match js(m.content) {
            Some(s) => s.len(),
            None => blocks(m.content)
                .iter()
                .map(|b| match b.kind().as_deref() {
                    Some("text") => js_len(b.text),
                    Some("image") => 4800,
                    _ => 0,
                })
                .sum(),
        },
        "assistant" => blocks(m.content)
            .iter()
            .map(|b| match b.kind().as_deref() {
                Some("text") => js_len(b.text),
                Some("thinking") => js_len(b.thinking),
                Some("toolCall") => js_len(b.name) + arguments_len(b.arguments),
                _ => 0,
            })
            .sum(),
        "bashExecution" => js_len(m.command) + js_len(m.output),
        "branchSummary" | "compactionSummary" => js_len(m.summary),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

#[derive(Default)]
struct FileOps {
    read: BTreeSet<JsString>,
    written: BTreeSet<JsString>,
    edited: BTreeSet<JsString>,
}

#[derive(Deserialize)]
struct PathArg<'a> {
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    path: Option<&'a RawValue>,
}

/// Adds the file operations of an assistant message's tool calls (spec §8.3).
fn extract_file_ops(message: &SummaryMessage, ops: &mut FileOps) {
    if message.role != "assistant" {
        return;
    }
    let content = MessageFields::parse(&message.json).and_then(|m| m.content);
    for b in blocks(content) {
        if b.kind().as_deref() != Some("toolCall") {
            continue;
        }
        let (Some(name), Some(args)) = (js(b.name).and_then(|n| n.to_rust()), b.arguments) else {
            continue;
        };
        if !jsstr::truthy(args) {
            continue;
        }
        let Some(path) = serde_json::from_str::<PathArg<'_>>(args.get())
            .ok()
            .and_then(|a| js(a.path))
            .filter(|p| !p.is_empty())
        else {
            continue;
        };
        match name.as_str() {
            "read" => ops.read.insert(path),
            "write" => ops.written.insert(path),
            "edit" => ops.edited.insert(path),
            _ => false,
        };
    }
}

#[derive(Deserialize)]
struct DetailLists<'a> {
    #[serde(
        rename = "readFiles",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    read: Option<&'a RawValue>,
    #[serde(
        rename = "modifiedFiles",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    modified: Option<&'a RawValue>,
}

fn string_items(list: Option<&RawValue>) -> Vec<JsString> {
    list.and_then(|l| serde_json::from_str::<Vec<&RawValue>>(l.get()).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(JsString::from_raw)
        .collect()
}

/// Prepares the collected entries for the summarizer within `budget` tokens (`≤ 0`: no
/// limit), newest first, as pi's `prepareBranchEntries` (spec §8.2).
pub fn prepare_branch_entries(entries: &[Entry], budget: i64) -> PreparedBranch {
    let mut ops = FileOps::default();
    // Pass 1: file lists of earlier generated summaries, whatever the budget.
    for e in entries
        .iter()
        .filter(|e| e.kind() == EntryKind::BranchSummary)
    {
        let Some(f) = Fields::parse(&e.line) else {
            continue;
        };
        if f.from_hook.is_some_and(jsstr::truthy) || !f.details.is_some_and(jsstr::truthy) {
            continue;
        }
        if let Some(d) = f
            .details
            .and_then(|d| serde_json::from_str::<DetailLists<'_>>(d.get()).ok())
        {
            ops.read.extend(string_items(d.read));
            ops.edited.extend(string_items(d.modified));
        }
    }
    // Pass 2: newest to oldest under the budget.
    let mut messages: Vec<SummaryMessage> = Vec::new();
    let mut total: u64 = 0;
    for e in entries.iter().rev() {
        let Some(message) = summary_message(e) else {
            continue;
        };
        extract_file_ops(&message, &mut ops);
        let t = estimate_tokens(&message);
        if budget > 0 && (total + t) as f64 > budget as f64 {
            let summary_like = matches!(e.kind(), EntryKind::Compaction | EntryKind::BranchSummary);
            if summary_like && (total as f64) < 0.9 * budget as f64 {
                messages.push(message);
                total += t;
            }
            break;
        }
        messages.push(message);
        total += t;
    }
    messages.reverse();
    let modified: BTreeSet<JsString> = ops.edited.union(&ops.written).cloned().collect();
    let read: Vec<JsString> = ops.read.difference(&modified).cloned().collect();
    let lossy = |s: &JsString| s.to_rust().unwrap_or_else(|| s.to_lossy());
    PreparedBranch {
        messages,
        total_tokens: total,
        read_files: read.iter().map(lossy).collect(),
        modified_files: modified.iter().map(lossy).collect(),
    }
}
