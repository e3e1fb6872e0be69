//! Every way of reading a context, one entry point each: built at the leaf or an entry
//! through the view cache ([`build_context`], [`build_context_with`], [`build_context_at`]),
//! folded from the log without any cache ([`build_context_from_scratch`]), streamed message
//! by message or as JSON ([`for_each_message`], [`write_context`]), and the walks a context
//! is selected from ([`for_each_on_path`], [`for_each_on_branch`]).
//!
//! May call: [`crate::context`]'s [`build`](crate::context::build),
//! [`plan`] and [`views`]; [`crate::tree`],
//! [`crate::log`], [`crate::core`].

use crate::context::build::*;
use crate::context::build::{project, Context, ContextOptions, SelectionPath, SettingsScope};
use crate::context::foreign;
use crate::context::plan;
use crate::context::views;
use crate::context::views::Views;
use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::tree::ancestors;
use crate::tree::paths;
use std::io::Write;
use std::sync::Arc;

/// The context at the active leaf with grove's default options.
pub(crate) fn build_context(s: &Handle, views: &Views) -> Result<Context> {
    build_context_with(s, views, None, ContextOptions::grove())
}

/// The context at `leaf` (`None`: the active leaf) with the given options.
pub(crate) fn build_context_with(
    s: &Handle,
    views: &Views,
    leaf: Option<&str>,
    options: ContextOptions,
) -> Result<Context> {
    let start = paths::start_seq(s, leaf)?;
    build_context_at(s, views, start, options)
}

/// The context at the entry `leaf` (`None`: the root position), through the view cache.
pub(crate) fn build_context_at(
    s: &Handle,
    views: &Views,
    leaf: Option<u64>,
    options: ContextOptions,
) -> Result<Context> {
    match leaf {
        None => Ok(Context::empty()),
        Some(leaf) => match foreign::format_of(s) {
            Some(format) => foreign::context(s, format, leaf),
            None => crate::context::views::view_context(s, views, leaf, options),
        },
    }
}

/// The context at `leaf` (`None`: the active leaf) computed from scratch, bypassing
/// every cached and persisted view: the reference the views are tested against.
pub(crate) fn build_context_from_scratch(
    s: &Handle,
    leaf: Option<&str>,
    options: ContextOptions,
) -> Result<Context> {
    match (paths::start_seq(s, leaf)?, foreign::format_of(s)) {
        (None, _) => Ok(Context::empty()),
        (Some(seq), Some(format)) => foreign::context(s, format, seq),
        (Some(seq), None) => Ok(fold_context(s, seq, options)?.0),
    }
}

/// Calls `each` with every entry of `path_to_root(from)` (default: the active leaf), root
/// first, reading one entry at a time.
pub(crate) fn for_each_on_path(
    s: &Handle,
    from: Option<&str>,
    each: &mut dyn FnMut(Entry) -> Result<()>,
) -> Result<()> {
    plan_path(s, from)?.for_each(each)
}

/// The walk of `path_to_root(from)`, planned: its errors raised, its entries not read.
pub(crate) fn plan_path(s: &Handle, from: Option<&str>) -> Result<plan::Walk> {
    let plan = |s: &Handle, start| Ok(plan::runs(s, start, None)?.map(|(runs, _)| runs));
    plan::walk_planned(s, from, plan, paths::path_to_root_seq)
}

/// Calls `each` with every entry of `branch(from)` (pi harness `getBranch`), root first,
/// reading one entry at a time. Its errors are `branch`'s, raised before any entry.
pub(crate) fn for_each_on_branch(
    s: &Handle,
    from: Option<&str>,
    each: &mut dyn FnMut(Entry) -> Result<()>,
) -> Result<()> {
    plan_branch(s, from)?.for_each(each)
}

/// The walk of `branch(from)`, planned: its errors raised, its entries not read.
pub(crate) fn plan_branch(s: &Handle, from: Option<&str>) -> Result<plan::Walk> {
    let plan = |s: &Handle, start| Ok(plan::branch_runs(s, start)?.map(|(runs, _)| runs));
    plan::walk_planned(s, from, plan, paths::branch_seq)
}

/// Writes the context at `leaf` (`None`: the active leaf) as [`Context::to_json`] does,
/// message by message as the entries are read: the memory it takes is one entry, not the
/// context. Errors found before the first byte is written leave `out` untouched.
pub(crate) fn write_context(
    s: &Handle,
    views: &Views,
    leaf: Option<&str>,
    options: ContextOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let io = |source| GroveError::Io {
        path: "<context>".into(),
        source,
    };
    let mut first = true;
    let settings = for_each_message(s, views, leaf, options, &mut |message| {
        let head: &[u8] = if first { b"{\"messages\":[" } else { b"," };
        first = false;
        out.write_all(head).map_err(io)?;
        out.write_all(message.as_bytes()).map_err(io)
    })?;
    if first {
        out.write_all(b"{\"messages\":[").map_err(io)?;
    }
    out.write_all(b"]").map_err(io)?;
    write_settings(&settings, out).map_err(io)
}

/// Calls `each` with every message of the context at `leaf` (`None`: the active leaf),
/// in order, reading one entry at a time, and returns the context's settings (with no
/// messages or entry ids). A context the session's view cache holds is read from there.
/// Errors of the selection (a branch with a missing parent) come before any message.
pub(crate) fn for_each_message(
    s: &Handle,
    views: &Views,
    leaf: Option<&str>,
    options: ContextOptions,
    each: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<Context> {
    let Some(start) = paths::start_seq(s, leaf)? else {
        return Ok(Context::empty());
    };
    if let Some(format) = foreign::format_of(s) {
        return replay(foreign::context(s, format, start)?, each);
    }
    if let Some(ctx) = views::cached_context(s, views, start, options)? {
        return replay(ctx, each);
    }
    let materialized = |s: &Handle, each: &mut dyn FnMut(&str) -> Result<()>| {
        replay(build_context_at(s, views, Some(start), options)?, each)
    };
    if ancestors::in_cycle_tree(s, start)? {
        return materialized(s, each);
    }
    let node = s.node(start)?;
    let uses_branch = options.selection_path == SelectionPath::Branch
        || options.settings_scope == SettingsScope::Branch;
    let branch = match uses_branch {
        true => match plan::branch_runs_at(s, start, &node)? {
            Some(branch) => Some(branch),
            None => return materialized(s, each),
        },
        false => None,
    };
    let Some(plan) = plan::context_plan(s, start, &node, options, branch.as_ref())? else {
        return materialized(s, each);
    };
    let settings = plan::plan_settings(s, &node, options, branch.map(|(_, depth)| depth))?;
    let mut messages: Vec<Arc<str>> = Vec::new();
    plan::read_ranges(s, &plan.ranges, &mut |entry| {
        project(
            &entry,
            plan.tails.contains(&entry.seq),
            options,
            &mut messages,
        )?;
        messages.drain(..).try_for_each(|m| each(&m))
    })?;
    Ok(settings)
}

/// Hands out the messages of a built context; its settings without them.
fn replay(ctx: Context, each: &mut dyn FnMut(&str) -> Result<()>) -> Result<Context> {
    ctx.messages.iter().try_for_each(|m| each(m))?;
    Ok(Context {
        messages: Arc::default(),
        entry_ids: Arc::default(),
        ..ctx
    })
}

/// The settings part of [`Context::to_json`], after the messages, and the closing brace.
fn write_settings(settings: &Context, out: &mut dyn Write) -> std::io::Result<()> {
    let json = settings.to_json();
    // `{"messages":[],` + the rest.
    let rest = json.strip_prefix("{\"messages\":[]").unwrap_or(&json);
    out.write_all(rest.as_bytes())
}
