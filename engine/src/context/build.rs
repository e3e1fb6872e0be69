//! Context building (spec §5): select the entries the model sees on a path, project them
//! into messages, and derive the settings (model, thinking level, active tools).
//!
//! Messages are handed out as the stored JSON text of each message, so what the model sees
//! is byte for byte what was recorded; synthetic messages (compaction and branch summaries,
//! custom messages) are assembled from the raw field values of their entries.

use std::sync::Arc;

use grove_codec::fields::{Fields, MessageFields};
use grove_codec::jsstr::{self, object, push_raw, quote};
use grove_codec::migrate::set_keys;
use grove_codec::record::NodeRecord;
use grove_codec::time;
use grove_codec::{EntryKind, Role};
use serde_json::value::RawValue;

use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::tree::ancestors;
use crate::tree::paths;
use crate::tree::paths::compaction_stop;

/// Which path the settings are scanned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsScope {
    /// The full path to the root (pi-CLI; grove's default): settings survive compaction.
    Full,
    /// The compaction-truncated branch (the pi harness exactly).
    Branch,
}

/// Which path the entries are selected from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectionPath {
    /// `path_to_root`.
    Full,
    /// `branch` (harness `getBranch`).
    Branch,
}

/// Whether a compaction's `retainedTail` stands in for its kept range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetainedTail {
    /// Use the tail (pi harness; grove's default).
    Use,
    /// Ignore it and use `firstKeptEntryId` (pi-CLI at v0.83).
    Ignore,
}

/// What happens to `null` or missing message content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullContent {
    /// Replace it with `[]` (pi-CLI; grove's default).
    Normalize,
    /// Pass it through (pi harness).
    Preserve,
}

/// Options of `crate::context::read::build_context` (spec §5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextOptions {
    /// Settings path.
    pub settings_scope: SettingsScope,
    /// Selection path.
    pub selection_path: SelectionPath,
    /// Retained-tail handling.
    pub retained_tail: RetainedTail,
    /// Null-content handling.
    pub null_content: NullContent,
    /// Whether `activeToolNames` is reported (pi-CLI has none).
    pub report_active_tools: bool,
}

impl ContextOptions {
    /// grove's default: full settings, full selection, tails used, null content normalized.
    pub fn grove() -> ContextOptions {
        ContextOptions {
            settings_scope: SettingsScope::Full,
            selection_path: SelectionPath::Full,
            retained_tail: RetainedTail::Use,
            null_content: NullContent::Normalize,
            report_active_tools: true,
        }
    }

    /// Exactly the pi harness's `Handle.buildContext()`.
    pub fn pi_harness() -> ContextOptions {
        ContextOptions {
            settings_scope: SettingsScope::Branch,
            selection_path: SelectionPath::Branch,
            retained_tail: RetainedTail::Use,
            null_content: NullContent::Preserve,
            report_active_tools: true,
        }
    }

    /// Exactly pi-CLI's `buildSessionContext()`.
    pub fn pi_cli() -> ContextOptions {
        ContextOptions {
            settings_scope: SettingsScope::Full,
            selection_path: SelectionPath::Full,
            retained_tail: RetainedTail::Ignore,
            null_content: NullContent::Normalize,
            report_active_tools: false,
        }
    }
}

impl Default for ContextOptions {
    fn default() -> ContextOptions {
        ContextOptions::grove()
    }
}

/// A from-scratch context with its selection marks `(seq, messages so far)` and the depth of
/// each selected entry.
pub(crate) type Fold = (Context, Vec<(u64, usize)>, Vec<u64>);

/// The model setting: each field is raw JSON, absent when the entry lacked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// `provider`.
    pub provider: Option<String>,
    /// `modelId`.
    pub model_id: Option<String>,
}

impl ModelRef {
    /// `model` in pi's shape: `{"provider", "modelId"}` with the fields it has, or `null`.
    pub fn json(model: Option<&ModelRef>) -> String {
        let Some(m) = model else {
            return "null".to_owned();
        };
        let mut parts = Vec::new();
        if let Some(p) = &m.provider {
            parts.push(format!("\"provider\":{p}"));
        }
        if let Some(id) = &m.model_id {
            parts.push(format!("\"modelId\":{id}"));
        }
        format!("{{{}}}", parts.join(","))
    }
}

/// What the model sees at a leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The messages, each as JSON object text. Shared with the session's view: cloning a
    /// context copies no message, and the view grows in place while no caller holds it.
    pub messages: Arc<Vec<Arc<str>>>,
    /// Ids of the selected entries (`buildContextEntries`), inert ones included.
    pub entry_ids: Arc<Vec<String>>,
    /// The model, or `None`.
    pub model: Option<ModelRef>,
    /// The thinking level as raw JSON (`"off"` by default).
    pub thinking_level: String,
    /// `activeToolNames` as raw JSON array text, or `None`.
    pub active_tool_names: Option<String>,
}

impl Context {
    /// The context at the root position: no messages, default settings.
    pub fn empty() -> Context {
        Context {
            messages: Arc::default(),
            entry_ids: Arc::default(),
            model: None,
            thinking_level: quote("off"),
            active_tool_names: None,
        }
    }

    /// pi's shape: `{"messages":[…],"model":{"provider","modelId"}|null,"thinkingLevel":…,
    /// "activeToolNames":[…]|null}`.
    pub fn to_json(&self) -> String {
        let model = ModelRef::json(self.model.as_ref());
        format!(
            "{{\"messages\":[{}],\"model\":{},\"thinkingLevel\":{},\"activeToolNames\":{}}}",
            self.messages.join(","),
            model,
            self.thinking_level,
            self.active_tool_names.as_deref().unwrap_or("null")
        )
    }
}

/// The from-scratch fold: the context and, per selected entry, its sequence number and
/// the number of messages once it is projected, and its depth.
pub(crate) fn fold_context(s: &Handle, leaf: u64, options: ContextOptions) -> Result<Fold> {
    let path = match options.selection_path {
        SelectionPath::Full => selection_path_full(s, leaf, options.retained_tail)?,
        SelectionPath::Branch => paths::branch_seq(s, leaf)?,
    };
    let (selected, tail_at) = select(&path, options.retained_tail);
    let mut ctx = Context::empty();
    let mut marks = Vec::with_capacity(selected.len());
    let depths = selected.iter().map(|e| e.node.depth).collect();
    for (i, entry) in selected.iter().enumerate() {
        project(
            entry,
            tail_at.contains(&i),
            options,
            Arc::make_mut(&mut ctx.messages),
        )?;
        Arc::make_mut(&mut ctx.entry_ids).push(entry.id().to_owned());
        marks.push((entry.seq, ctx.messages.len()));
    }
    match options.settings_scope {
        SettingsScope::Full => settings_from_pointers(s, &s.node(leaf)?, &mut ctx)?,
        SettingsScope::Branch => {
            let settings_path = match options.selection_path {
                SelectionPath::Branch => path,
                SelectionPath::Full => paths::branch_seq(s, leaf)?,
            };
            for entry in &settings_path {
                apply_setting(entry, &mut ctx);
            }
        }
    }
    if !options.report_active_tools {
        ctx.active_tool_names = None;
    }
    Ok((ctx, marks, depths))
}

/// The part of `path_to_root(leaf)` that selection can use (spec §5.2): everything when
/// the path has no compaction; otherwise the checkpoint `C` and what follows it, preceded
/// by the kept range when `firstKeptEntryId` is an ancestor of `C`. Found through the
/// checkpoint index and jump pointers, so its cost follows the context, not the depth.
pub(crate) fn selection_path_full(s: &Handle, leaf: u64, tail: RetainedTail) -> Result<Vec<Entry>> {
    let node = s.node(leaf)?;
    let Some(c) = node.checkpoint else {
        return paths::path_to_root_seq(s, leaf);
    };
    let after = paths::path_up_to(s, leaf, Some(c))?;
    let Some(cp) = after.first().filter(|e| e.seq == c) else {
        return paths::path_to_root_seq(s, leaf);
    };
    let stop = compaction_stop(&cp.line);
    if stop.tail && tail == RetainedTail::Use {
        return Ok(after);
    }
    let kept_from = match stop.first_kept.and_then(|fk| fk.to_rust()) {
        Some(fk) => s.seq_of(&fk)?,
        None => None,
    };
    let mut path = Vec::new();
    if let (Some((f, fnode)), Some(parent)) = (kept_from, cp.node.parent.seq()) {
        let is_ancestor = fnode.depth < cp.node.depth
            && ancestors::ancestor_at_depth(s, c, &cp.node, fnode.depth)?
                .is_some_and(|(a, _)| a == f);
        if is_ancestor && matches!(cp.node.parent, grove_codec::record::Parent::Seq(_)) {
            path = paths::path_up_to(s, parent, Some(f))?;
        }
    }
    path.extend(after);
    Ok(path)
}

/// Full-path settings in O(1): each node points at the last entry that set each one.
pub(crate) fn settings_from_pointers(
    s: &Handle,
    node: &NodeRecord,
    ctx: &mut Context,
) -> Result<()> {
    for seq in [node.model_at, node.thinking_at, node.tools_at]
        .into_iter()
        .flatten()
    {
        let entry = s.entry_at(seq)?;
        apply_setting(&entry, ctx);
    }
    Ok(())
}

/// Applies one entry's setting change, if it has one (spec §5.5).
pub(crate) fn apply_setting(entry: &Entry, ctx: &mut Context) {
    let kind = entry.kind();
    if !matches!(
        kind,
        EntryKind::ModelChange
            | EntryKind::ThinkingLevelChange
            | EntryKind::ActiveToolsChange
            | EntryKind::Message(Role::Assistant)
    ) {
        return;
    }
    let Some(fields) = Fields::parse(&entry.line) else {
        return;
    };
    let raw = |v: Option<&RawValue>| v.map(|r| r.get().to_owned());
    match kind {
        EntryKind::ModelChange => {
            ctx.model = Some(ModelRef {
                provider: raw(fields.provider),
                model_id: raw(fields.model_id),
            })
        }
        EntryKind::ThinkingLevelChange => {
            if let Some(t) = fields.thinking_level {
                ctx.thinking_level = t.get().to_owned();
            }
        }
        EntryKind::ActiveToolsChange => ctx.active_tool_names = raw(fields.active_tool_names),
        _ => {
            if let Some(m) = fields.message.and_then(|m| MessageFields::parse(m.get())) {
                ctx.model = Some(ModelRef {
                    provider: raw(m.provider),
                    model_id: raw(m.model),
                });
            }
        }
    }
}

/// Entry selection (spec §5.2). Returns the selected entries and the indexes (in the
/// selection) of the compactions whose retained tail is emitted.
fn select(path: &[Entry], tail: RetainedTail) -> (Vec<&Entry>, Vec<usize>) {
    let Some(ci) = path.iter().rposition(|e| e.kind() == EntryKind::Compaction) else {
        return (path.iter().collect(), Vec::new());
    };
    let c = &path[ci];
    let stop = compaction_stop(&c.line);
    let mut selected: Vec<&Entry> = vec![c];
    let mut tails = Vec::new();
    if tail == RetainedTail::Use {
        tails.push(0);
    }
    if !(stop.tail && tail == RetainedTail::Use) {
        let kept = stop.first_kept.and_then(|fk| {
            path[..ci]
                .iter()
                .position(|e| jsstr::JsString::from_text(e.id()) == fk)
        });
        if let Some(k) = kept {
            if tail == RetainedTail::Use && path[k].kind() == EntryKind::Compaction {
                tails.push(1);
            }
            selected.extend(&path[k..ci]);
        }
    }
    selected.extend(&path[ci + 1..]);
    (selected, tails)
}

/// Projects one selected entry into messages (spec §5.4).
pub(crate) fn project(
    entry: &Entry,
    with_tail: bool,
    options: ContextOptions,
    out: &mut Vec<Arc<str>>,
) -> Result<()> {
    let kind = entry.kind();
    let corrupt = || GroveError::Corrupt(format!("entry {} is not a JSON object", entry.id()));
    match kind {
        EntryKind::Message(role) => {
            let normalize = options.null_content == NullContent::Normalize
                && matches!(role, Role::User | Role::Assistant | Role::ToolResult);
            // The span recorded at write time: slice the message out, no parse — unless its
            // content may need the rewrite below.
            if let Some(span) = entry
                .node
                .message
                .filter(|s| !(normalize && s.null_content))
            {
                if let Some(text) = grove_codec::fields::message_at(&entry.line, span) {
                    out.push(text.into());
                    return Ok(());
                }
            }
            let fields = Fields::parse(&entry.line).ok_or_else(corrupt)?;
            let Some(message) = fields.message else {
                return Ok(());
            };
            let text = message.get();
            if normalize {
                let content = MessageFields::parse(text).and_then(|m| m.content);
                if content.is_none_or(|c| c.get() == "null") {
                    if let Some(fixed) = set_keys(text, &[("content", "[]".to_owned())], &[]) {
                        out.push(fixed.into());
                        return Ok(());
                    }
                }
            }
            out.push(text.into());
        }
        EntryKind::CustomMessage => {
            let f = Fields::parse(&entry.line).ok_or_else(corrupt)?;
            let content = match f.content {
                Some(c)
                    if !(c.get() == "null" && options.null_content == NullContent::Normalize) =>
                {
                    Some(c.get().to_owned())
                }
                _ if options.null_content == NullContent::Normalize => Some("[]".to_owned()),
                _ => None,
            };
            let mut m = vec![("role", quote("custom"))];
            push_raw(&mut m, "customType", f.custom_type);
            if let Some(c) = content {
                m.push(("content", c));
            }
            push_raw(&mut m, "display", f.display);
            push_raw(&mut m, "details", f.details);
            m.push(("timestamp", ms(entry)));
            out.push(object(&m).into());
        }
        EntryKind::Compaction => {
            let f = Fields::parse(&entry.line).ok_or_else(corrupt)?;
            let mut m = vec![("role", quote("compactionSummary"))];
            push_raw(&mut m, "summary", f.summary);
            push_raw(&mut m, "tokensBefore", f.tokens_before);
            m.push(("timestamp", ms(entry)));
            out.push(object(&m).into());
            if with_tail {
                if let Some(tail) = f.retained_tail {
                    if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(tail.get()) {
                        out.extend(items.iter().map(|i| Arc::from(i.get())));
                    }
                }
            }
        }
        EntryKind::BranchSummary => {
            let f = Fields::parse(&entry.line).ok_or_else(corrupt)?;
            if f.summary.is_some_and(jsstr::truthy) {
                let mut m = vec![("role", quote("branchSummary"))];
                push_raw(&mut m, "summary", f.summary);
                push_raw(&mut m, "fromId", f.from_id);
                m.push(("timestamp", ms(entry)));
                out.push(object(&m).into());
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Date.parse(entry.timestamp)` as JSON (`null` for NaN).
fn ms(entry: &Entry) -> String {
    time::parse_ms(&entry.timestamp()).map_or("null".to_owned(), |v| v.to_string())
}
