//! The context of a session imported from another tool's transcript (docs/format.md, "Foreign
//! transcripts"): what that tool would send its model on resuming at the leaf, by the tool's own
//! rules rather than pi's, as its lines keep it.
//!
//! - **Claude Code:** the Claude Agent SDK's conversation ([`grove_codec::foreign::chain`]):
//!   the chain from the leaf back to a root or a compaction boundary, with the calls and results
//!   of parallel tool use put back; its messages are the chain's visible `user` and `assistant`
//!   lines' `message` objects; the model is the last visible assistant message's.
//! - **Codex:** the history Codex rebuilds from a rollout ([`grove_codec::foreign::history`]):
//!   the response items on the path, a compaction replacing what came before it, a rollback
//!   dropping turns; the model and reasoning effort of the last turn context.
//! - **pi 0.84's lanes and 0.85–0.99's commits:** pi's own `buildSessionContext` of the branch
//!   ([`grove_codec::foreign::lanes`]).
//!
//! The context options are grove's and pi v3's and do not apply.
//!
//! May call: [`crate::context::build`] (the `Context` type), [`crate::tree`], [`crate::log`],
//! [`crate::core`]; the rules are the codec's.

use std::sync::Arc;

use grove_codec::foreign::chain::{self, ChainEntry};
use grove_codec::foreign::history::History;
use grove_codec::foreign::lanes::Lanes;
use grove_codec::foreign::{self, Format};
use grove_codec::jsstr::quote;
use grove_codec::record::Parent;

use crate::context::build::{Context, ModelRef};
use crate::core::error::Result;
use crate::log::handle::Handle;
use crate::tree::paths;

/// The format of a session imported from another tool's transcript; `None` for any other.
pub(crate) fn format_of(s: &Handle) -> Option<Format> {
    let header = &s.record().header;
    // Most sessions are pi's: a substring test spares them the parse.
    if !header.contains("\"foreign\"") {
        return None;
    }
    foreign::header_format(header).map(|(format, _)| format)
}

/// The context at the entry `leaf` of a session imported from a `format` transcript.
pub(crate) fn context(s: &Handle, format: Format, leaf: u64) -> Result<Context> {
    match format {
        Format::ClaudeCode => claude(s, leaf),
        Format::Codex => codex(s, leaf),
        Format::PiLanes => lanes(s, leaf, format, Lanes::new()),
        Format::PiCommits => lanes(s, leaf, format, Lanes::commits()),
    }
}

/// Claude Code: the Agent SDK's chain from the leaf's line (or, for a leaf on another kind of
/// line, its nearest ancestor that is a transcript entry).
fn claude(s: &Handle, leaf: u64) -> Result<Context> {
    let mut entries: Vec<ChainEntry> = Vec::new();
    let mut seqs: Vec<u64> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for entry in s.entries() {
        let entry = entry?;
        let Some(line) = foreign::original_line(Format::ClaudeCode, &entry.line) else {
            continue;
        };
        if let Some(parsed) = ChainEntry::parse(&line) {
            entries.push(parsed);
            seqs.push(entry.seq);
            ids.push(entry.id().to_owned());
        }
    }
    // The leaf's line, or its nearest ancestor that is a transcript entry.
    let mut at = Some(leaf);
    let mut start = None;
    let mut steps = 0usize;
    while let Some(seq) = at {
        if let Ok(i) = seqs.binary_search(&seq) {
            start = Some(i);
            break;
        }
        steps += 1;
        if steps > seqs.len() + 1 {
            break;
        }
        at = match s.node(seq)?.parent {
            Parent::Seq(p) => Some(p),
            _ => None,
        };
    }
    let Some(start) = start else {
        return Ok(Context::empty());
    };
    let selected = chain::chain(&entries, start);
    let mut ctx = Context::empty();
    let mut model = None;
    for &i in &selected {
        Arc::make_mut(&mut ctx.entry_ids).push(ids[i].clone());
        let Some(message) = entries[i].message.as_deref() else {
            continue;
        };
        Arc::make_mut(&mut ctx.messages).push(Arc::from(message));
        if entries[i].assistant {
            if let Some(name) = entries[i].model.as_deref().filter(|n| *n != "<synthetic>") {
                model = Some(name.to_owned());
            }
        }
    }
    ctx.model = model.map(|name| ModelRef {
        provider: None,
        model_id: Some(quote(&name)),
    });
    Ok(ctx)
}

/// pi's lanes or commits: pi's `buildSessionContext` of the branch from the entry at `leaf`, or,
/// at a line that holds none, from the `main` lane's leaf as the file stood there; at the
/// session's leaf, from the `main` lane's leaf at the end of the file (an import puts the leaf
/// there; written through the 0.84 adapter, the leaf is the file's last line, whatever lane it
/// wrote to). Ancestors come before their entries in the file, so elsewhere the lines up to
/// `leaf`'s are enough.
fn lanes(s: &Handle, leaf: u64, format: Format, mut lanes: Lanes) -> Result<Context> {
    let at_leaf = s.leaf_seq()? == Some(leaf);
    let mut start = None;
    for entry in s.entries() {
        let entry = entry?;
        if entry.seq > leaf && !at_leaf {
            break;
        }
        let Some(line) = foreign::original_line(format, &entry.line) else {
            continue;
        };
        let held = lanes.line(&line);
        if entry.seq == leaf && !at_leaf {
            start = held.or_else(|| lanes.main_leaf().map(str::to_owned));
        }
    }
    if at_leaf {
        start = lanes.main_leaf().map(str::to_owned);
    }
    let built = lanes.context(start.as_deref());
    let mut ctx = Context::empty();
    ctx.messages = Arc::new(built.messages.into_iter().map(Arc::from).collect());
    ctx.entry_ids = Arc::new(built.entry_ids);
    ctx.model = built
        .model
        .map(|(provider, model_id)| ModelRef { provider, model_id });
    ctx.thinking_level = built.thinking_level;
    ctx.active_tool_names = built.active_tool_names;
    Ok(ctx)
}

/// Codex: the history folded over the path from the root to the leaf.
fn codex(s: &Handle, leaf: u64) -> Result<Context> {
    let mut history = History::new();
    let mut ctx = Context::empty();
    for entry in paths::path_to_root_seq(s, leaf)? {
        Arc::make_mut(&mut ctx.entry_ids).push(entry.id().to_owned());
        if let Some(line) = foreign::original_line(Format::Codex, &entry.line) {
            history.line(&line);
        }
    }
    ctx.messages = Arc::new(history.items().into_iter().map(Arc::from).collect());
    if let Some(model) = &history.model {
        ctx.model = Some(ModelRef {
            provider: history.provider.as_deref().map(quote),
            model_id: Some(quote(model)),
        });
    }
    if let Some(effort) = &history.effort {
        ctx.thinking_level = quote(effort);
    }
    Ok(ctx)
}
