//! Streaming reads: a path, a branch or a context planned as ranges of sequence numbers and
//! then read range by range, one entry at a time, so that a read of any size holds one entry
//! (and the plan) in memory instead of the whole path.
//!
//! A plan costs a few node reads per linear run on the path (each entry knows where its run
//! starts) and per compaction on it (each entry knows its nearest compaction); the entries
//! themselves are read once, in order, by range scans.
//!
//! Owns the plans and the ranged reads that `crate::context::read`'s streaming entry points
//! (`for_each_on_path`, `for_each_on_branch`, `write_context`, `for_each_message`) run, and
//! [`Walk`], a path or branch planned and read later (`Session::plan_branch`), perhaps on
//! another thread: its length is known before any entry is read.
//! May call the session's node and log reads, the tree walks
//! (`walk`), the compaction rule (`paths`) and the projection and settings of `context`.
//! Trees with a parent cycle (possible only in imported files) are read by the materializing
//! walks of `paths` and `context` instead: their paths revisit entries, which ranges cannot
//! say.

use grove_codec::record::{NodeRecord, Parent};
use grove_codec::EntryKind;

use crate::context::build;
use crate::context::build::{
    apply_setting, Context, ContextOptions, RetainedTail, SelectionPath, SettingsScope,
};
use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::tree::ancestors;
use crate::tree::paths;
use crate::tree::paths::compaction_stop;

/// Ranges `(lo, hi)` of sequence numbers, both included, in reading order.
pub(crate) type Ranges = Vec<(u64, u64)>;

/// How a walk to the root ended.
pub(crate) enum End {
    /// At the stop entry the walk was given.
    Stop,
    /// At a root (or an entry that names itself as parent).
    Root,
    /// At an entry whose parent is not in the session: that parent's id.
    Missing(String),
}

/// The plan of a context: what is read, and which compactions emit their retained tail.
pub(crate) struct ContextPlan {
    pub(crate) ranges: Ranges,
    pub(crate) tails: Vec<u64>,
}

/// A walk from `from` planned by `plan` (its runs), or materialized by `fallback` where it
/// has none (a parent cycle): the walk up the tree done, the entries not read yet.
pub(crate) fn walk_planned(
    s: &Handle,
    from: Option<&str>,
    plan: impl Fn(&Handle, u64) -> Result<Option<Ranges>>,
    fallback: impl Fn(&Handle, u64) -> Result<Vec<Entry>>,
) -> Result<Walk> {
    let rows = match paths::start_seq(s, from)? {
        None => WalkRows::Read(Vec::new()),
        Some(start) => match plan(s, start)? {
            Some(ranges) => WalkRows::Ranges(ranges),
            None => WalkRows::Read(fallback(s, start)?),
        },
    };
    Ok(Walk {
        s: s.clone(),
        rows,
        continued: false,
    })
}

/// A walk (a branch or a path) planned but not read: which entries it holds, found by the
/// walk up the tree, whose errors (an unknown start, a missing parent) it has raised already.
/// It owns what it needs, so it may be read on another thread than the one that planned it.
pub struct Walk {
    s: Handle,
    rows: WalkRows,
    /// Whether the walk's first run continues one a walk before it holds ([`Walk::split_at`]
    /// cut a run in two).
    continued: bool,
}

enum WalkRows {
    /// Runs of records, read as they are wanted.
    Ranges(Ranges),
    /// Read already (a tree with a parent cycle, materialized).
    Read(Vec<Entry>),
}

impl Walk {
    /// How many entries the walk holds.
    pub fn len(&self) -> u64 {
        match &self.rows {
            WalkRows::Ranges(ranges) => ranges.iter().map(|&(lo, hi)| hi + 1 - lo).sum(),
            WalkRows::Read(entries) => entries.len() as u64,
        }
    }

    /// Whether the walk holds no entry (from the root position).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The walk cut in two: its first `n` entries (all of them when it holds fewer), and the
    /// rest. Reading the two one after the other reads the walk.
    pub fn split_at(self, n: u64) -> (Walk, Walk) {
        let s = self.s;
        let mut cut_in_run = false;
        let (head, tail) = match self.rows {
            WalkRows::Ranges(ranges) => {
                let (mut head, mut tail) = (Vec::new(), Vec::new());
                let mut left = n;
                for (lo, hi) in ranges {
                    let len = hi + 1 - lo;
                    if left >= len {
                        head.push((lo, hi));
                        left -= len;
                    } else if left > 0 {
                        head.push((lo, lo + left - 1));
                        tail.push((lo + left, hi));
                        cut_in_run = true;
                        left = 0;
                    } else {
                        tail.push((lo, hi));
                    }
                }
                (WalkRows::Ranges(head), WalkRows::Ranges(tail))
            }
            WalkRows::Read(mut entries) => {
                let cut = usize::try_from(n).unwrap_or(usize::MAX).min(entries.len());
                let tail = entries.split_off(cut);
                (WalkRows::Read(entries), WalkRows::Read(tail))
            }
        };
        let head = Walk {
            s: s.clone(),
            rows: head,
            continued: self.continued,
        };
        let tail = Walk {
            s,
            rows: tail,
            continued: cut_in_run,
        };
        (head, tail)
    }

    /// Calls `each` with every entry of the walk, root first, reading one at a time.
    pub fn for_each(self, each: &mut dyn FnMut(Entry) -> Result<()>) -> Result<()> {
        match self.rows {
            WalkRows::Ranges(ranges) => read_ranges_after(&self.s, &ranges, self.continued, each),
            WalkRows::Read(entries) => entries.into_iter().try_for_each(each),
        }
    }
}

/// The runs of the path from `start` up to `stop` (included) or to the root, root first,
/// and how the walk ended; `None` when the path crosses a parent cycle.
pub(crate) fn runs(s: &Handle, start: u64, stop: Option<u64>) -> Result<Option<(Ranges, End)>> {
    let mut runs = Vec::new();
    let mut top = start;
    let end = loop {
        let top_node = s.node(top)?;
        let lo = top_node.run_start.min(top);
        if let Some(s) = stop.filter(|s| (lo..=top).contains(s)) {
            runs.push((s, top));
            break End::Stop;
        }
        runs.push((lo, top));
        let lo_node = if lo == top { top_node } else { s.node(lo)? };
        match lo_node.parent {
            Parent::Seq(p) if p < lo => top = p,
            Parent::Root | Parent::SelfRef => break End::Root,
            Parent::Missing => {
                let entry = s.entry_at(lo)?;
                break End::Missing(entry.parent_id().unwrap_or_default());
            }
            Parent::Seq(_) | Parent::Cycle(_) => return Ok(None),
        }
    };
    runs.reverse();
    Ok(Some((runs, end)))
}

/// Whether `a` (with node `an`) is `b` or an ancestor of `b`.
pub(crate) fn is_ancestor_or_self(
    s: &Handle,
    a: u64,
    an: &NodeRecord,
    b: u64,
    bn: &NodeRecord,
) -> Result<bool> {
    Ok(an.depth <= bn.depth
        && ancestors::ancestor_at_depth(s, b, bn, an.depth)?.is_some_and(|(s, _)| s == a))
}

/// The entry `firstKeptEntryId` of the compaction `line` names, if it is a tree entry.
pub(crate) fn first_kept(s: &Handle, line: &str) -> Result<Option<(u64, NodeRecord)>> {
    match compaction_stop(line).first_kept.and_then(|fk| fk.to_rust()) {
        Some(id) => s.seq_of(&id),
        None => Ok(None),
    }
}

/// Where `branch(start)` is cut: the entry it starts at, or `None` when it runs to the
/// root. Follows the walk of `branch_seq` from compaction to compaction (spec §4.1).
/// `Err(InvalidSession)` when the walk meets a missing parent first.
pub(crate) fn branch_cut(s: &Handle, start: u64, start_node: &NodeRecord) -> Result<Option<u64>> {
    let mut stop: Option<(u64, NodeRecord)> = None;
    let mut pos = (start, start_node.clone());
    loop {
        let compaction = match pos.1.checkpoint {
            Some(c) => Some(s.entry_at(c)?),
            None => None,
        };
        if let Some((st, sn)) = &stop {
            let stops_first = compaction.as_ref().is_none_or(|c| sn.depth >= c.node.depth);
            if stops_first && is_ancestor_or_self(s, *st, sn, pos.0, &pos.1)? {
                return Ok(Some(*st));
            }
        }
        let Some(c) = compaction else {
            return Ok(None);
        };
        if compaction_stop(&c.line).tail {
            return Ok(Some(c.seq));
        }
        stop = first_kept(s, &c.line)?;
        match c.node.parent {
            Parent::Seq(p) => pos = (p, s.node(p)?),
            Parent::Root | Parent::SelfRef => return Ok(Some(c.seq)),
            Parent::Missing => {
                return Err(GroveError::InvalidSession {
                    file: None,
                    reason: format!("Entry {} not found", c.parent_id().unwrap_or_default()),
                })
            }
            Parent::Cycle(_) => return Ok(None),
        }
    }
}

/// The runs of `branch(start)`, root first, and the depth of its first entry; `None` in
/// a tree with a parent cycle. A branch that reaches a missing parent is
/// `InvalidSession`, as in `branch_seq`.
pub(crate) fn branch_runs(s: &Handle, start: u64) -> Result<Option<(Ranges, u64)>> {
    if ancestors::in_cycle_tree(s, start)? {
        return Ok(None);
    }
    branch_runs_at(s, start, &s.node(start)?)
}

/// [`crate::context::plan::branch_runs`] of `start` (whose node is `node`), known to be in a tree
/// without a parent cycle.
pub(crate) fn branch_runs_at(
    s: &Handle,
    start: u64,
    node: &NodeRecord,
) -> Result<Option<(Ranges, u64)>> {
    let cut = branch_cut(s, start, node)?;
    let top_depth = match cut {
        Some(x) => s.node(x)?.depth,
        None => 0,
    };
    match runs(s, start, cut)? {
        None => Ok(None),
        Some((_, End::Missing(parent))) => Err(GroveError::InvalidSession {
            file: None,
            reason: format!("Entry {parent} not found"),
        }),
        Some((runs, _)) => Ok(Some((runs, top_depth))),
    }
}

/// The selection of the context at `leaf` (whose node is `node`; a tree without a parent
/// cycle) as ranges (spec §5.2), given the branch when the options use it; `None` when a
/// walk meets a link the ranges cannot follow.
pub(crate) fn context_plan(
    s: &Handle,
    leaf: u64,
    node: &NodeRecord,
    options: ContextOptions,
    branch: Option<&(Ranges, u64)>,
) -> Result<Option<ContextPlan>> {
    let branch = branch.filter(|_| options.selection_path == SelectionPath::Branch);
    let Some(c) = node.checkpoint else {
        let ranges = match branch {
            Some((runs, _)) => runs.clone(),
            None => match runs(s, leaf, None)? {
                Some((runs, _)) => runs,
                None => return Ok(None),
            },
        };
        return Ok(Some(ContextPlan {
            ranges,
            tails: Vec::new(),
        }));
    };
    // With a checkpoint, the branch is cut at it or above it: only the kept range can
    // reach past the cut.
    let use_tail = options.retained_tail == RetainedTail::Use;
    let cp = s.entry_at(c)?;
    let mut ranges = vec![(c, c)];
    let mut tails = Vec::new();
    if use_tail {
        tails.push(c);
    }
    if !(compaction_stop(&cp.line).tail && use_tail) {
        if let (Some((f, fnode)), Parent::Seq(parent)) = (first_kept(s, &cp.line)?, cp.node.parent)
        {
            let within_cut = branch.is_none_or(|&(_, top)| fnode.depth >= top);
            if fnode.depth < cp.node.depth
                && within_cut
                && is_ancestor_or_self(s, f, &fnode, c, &cp.node)?
            {
                let Some((kept, _)) = runs(s, parent, Some(f))? else {
                    return Ok(None);
                };
                ranges.extend(kept);
                if use_tail && fnode.kind == EntryKind::Compaction.tag() {
                    tails.push(f);
                }
            }
        }
    }
    if leaf != c {
        let Some((mut after, _)) = runs(s, leaf, Some(c))? else {
            return Ok(None);
        };
        // The checkpoint itself leads the selection; the path below it follows.
        if let Some(first) = after.first_mut() {
            first.0 += 1;
        }
        ranges.extend(after.into_iter().filter(|(lo, hi)| lo <= hi));
    }
    Ok(Some(ContextPlan { ranges, tails }))
}

/// The settings of the context at the entry whose node is `node`: from the settings
/// pointers, which name the last entry on the full path that set each one; with the branch
/// scope, only those on the branch, whose first entry is at `branch_top` depth.
pub(crate) fn plan_settings(
    s: &Handle,
    node: &NodeRecord,
    options: ContextOptions,
    branch_top: Option<u64>,
) -> Result<Context> {
    let mut ctx = Context::empty();
    match (options.settings_scope, branch_top) {
        (SettingsScope::Branch, Some(top)) => {
            for seq in [node.model_at, node.thinking_at, node.tools_at]
                .into_iter()
                .flatten()
            {
                let entry = s.entry_at(seq)?;
                if entry.node.depth >= top {
                    apply_setting(&entry, &mut ctx);
                }
            }
        }
        _ => build::settings_from_pointers(s, node, &mut ctx)?,
    }
    if !options.report_active_tools {
        ctx.active_tool_names = None;
    }
    Ok(ctx)
}

/// Reads the entries of `ranges` in order, checking that each range is a chain.
pub(crate) fn read_ranges(
    s: &Handle,
    ranges: &Ranges,
    each: &mut dyn FnMut(Entry) -> Result<()>,
) -> Result<()> {
    read_ranges_after(s, ranges, false, each)
}

/// [`read_ranges`], where with `continued` the first range continues a chain read before
/// (a walk cut inside a run, [`Walk::split_at`]): its first entry is checked to be the child
/// of the record before it too.
fn read_ranges_after(
    s: &Handle,
    ranges: &Ranges,
    continued: bool,
    each: &mut dyn FnMut(Entry) -> Result<()>,
) -> Result<()> {
    for (i, &(lo, hi)) in ranges.iter().enumerate() {
        let mut expected = lo;
        let chained_from = match continued && i == 0 {
            true => lo.saturating_sub(1),
            false => lo,
        };
        for entry in s.log_range(lo, hi + 1).entries(s.id()) {
            let entry = entry?;
            if entry.seq != expected
                || (entry.seq > chained_from && entry.node.parent != Parent::Seq(entry.seq - 1))
            {
                return Err(GroveError::Corrupt(format!(
                    "session {}: run broken at record {}",
                    s.id(),
                    entry.seq
                )));
            }
            expected += 1;
            each(entry)?;
        }
        if expected != hi + 1 {
            return Err(GroveError::Corrupt(format!(
                "session {}: missing log record {expected}",
                s.id()
            )));
        }
    }
    Ok(())
}
