//! Streaming reads: a path, a branch or a context planned as ranges of sequence numbers and
//! then read range by range, one entry at a time, so that a read of any size holds one entry
//! (and the plan) in memory instead of the whole path.
//!
//! A plan costs a few node reads per linear run on the path (each entry knows where its run
//! starts) and per compaction on it (each entry knows its nearest compaction); the entries
//! themselves are read once, in order, by range scans.
//!
//! Owns: [`Session::for_each_on_path`], [`Session::for_each_on_branch`],
//! [`Session::write_context`], [`Session::for_each_message`]. May call the session's node and log reads, the tree walks
//! (`walk`), the compaction rule (`paths`) and the projection and settings of `context`.
//! Trees with a parent cycle (possible only in imported files) are read by the materializing
//! walks of `paths` and `context` instead: their paths revisit entries, which ranges cannot
//! say.

use std::io::Write;
use std::sync::Arc;

use grove_codec::record::{NodeRecord, Parent};
use grove_codec::EntryKind;

use crate::context::build::{
    apply_setting, empty_context, project, Context, ContextOptions, RetainedTail, SelectionPath,
    SettingsScope,
};
use crate::core::error::{GroveError, Result};
use crate::session::{Entry, Session};
use crate::tree::paths::compaction_stop;

/// Ranges `(lo, hi)` of sequence numbers, both included, in reading order.
type Ranges = Vec<(u64, u64)>;

/// How a walk to the root ended.
enum End {
    /// At the stop entry the walk was given.
    Stop,
    /// At a root (or an entry that names itself as parent).
    Root,
    /// At an entry whose parent is not in the session: that parent's id.
    Missing(String),
}

/// The plan of a context: what is read, and which compactions emit their retained tail.
struct ContextPlan {
    ranges: Ranges,
    tails: Vec<u64>,
}

impl Session {
    /// Calls `each` with every entry of `path_to_root(from)` (default: the active leaf), root
    /// first, reading one entry at a time.
    pub fn for_each_on_path(
        &self,
        from: Option<&str>,
        each: &mut dyn FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        let plan = |s: &Session, start| Ok(s.runs(start, None)?.map(|(runs, _)| runs));
        self.walk_planned(from, each, plan, Session::path_to_root_seq)
    }

    /// Calls `each` with every entry of `branch(from)` (pi harness `getBranch`), root first,
    /// reading one entry at a time. Its errors are `branch`'s, raised before any entry.
    pub fn for_each_on_branch(
        &self,
        from: Option<&str>,
        each: &mut dyn FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        let plan = |s: &Session, start| Ok(s.branch_runs(start)?.map(|(runs, _)| runs));
        self.walk_planned(from, each, plan, Session::branch_seq)
    }

    /// A walk from `from` read by its plan, or materialized by `fallback` where it has none.
    fn walk_planned(
        &self,
        from: Option<&str>,
        each: &mut dyn FnMut(Entry) -> Result<()>,
        plan: impl Fn(&Session, u64) -> Result<Option<Ranges>>,
        fallback: impl Fn(&Session, u64) -> Result<Vec<Entry>>,
    ) -> Result<()> {
        let Some(start) = self.start_seq(from)? else {
            return Ok(());
        };
        match plan(self, start)? {
            Some(ranges) => self.read_ranges(&ranges, each),
            None => fallback(self, start)?.into_iter().try_for_each(each),
        }
    }

    /// Writes the context at `leaf` (`None`: the active leaf) as [`Context::to_json`] does,
    /// message by message as the entries are read: the memory it takes is one entry, not the
    /// context. Errors found before the first byte is written leave `out` untouched.
    pub fn write_context(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
        out: &mut dyn Write,
    ) -> Result<()> {
        let io = |source| GroveError::Io {
            path: "<context>".into(),
            source,
        };
        let mut first = true;
        let settings = self.for_each_message(leaf, options, &mut |message| {
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
    pub fn for_each_message(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
        each: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<Context> {
        let Some(start) = self.start_seq(leaf)? else {
            return Ok(empty_context());
        };
        if let Some(ctx) = self.cached_context(start, options) {
            return replay(ctx, each);
        }
        let materialized = |s: &Session, each: &mut dyn FnMut(&str) -> Result<()>| {
            replay(s.build_context_at(Some(start), options)?, each)
        };
        if self.in_cycle_tree(start)? {
            return materialized(self, each);
        }
        let node = self.node(start)?;
        let uses_branch = options.selection_path == SelectionPath::Branch
            || options.settings_scope == SettingsScope::Branch;
        let branch = match uses_branch {
            true => match self.branch_runs_at(start, &node)? {
                Some(branch) => Some(branch),
                None => return materialized(self, each),
            },
            false => None,
        };
        let Some(plan) = self.context_plan(start, &node, options, branch.as_ref())? else {
            return materialized(self, each);
        };
        let settings = self.plan_settings(&node, options, branch.map(|(_, depth)| depth))?;
        let mut messages: Vec<Arc<str>> = Vec::new();
        self.read_ranges(&plan.ranges, &mut |entry| {
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

    /// The runs of the path from `start` up to `stop` (included) or to the root, root first,
    /// and how the walk ended; `None` when the path crosses a parent cycle.
    fn runs(&self, start: u64, stop: Option<u64>) -> Result<Option<(Ranges, End)>> {
        let mut runs = Vec::new();
        let mut top = start;
        let end = loop {
            let top_node = self.node(top)?;
            let lo = top_node.run_start.min(top);
            if let Some(s) = stop.filter(|s| (lo..=top).contains(s)) {
                runs.push((s, top));
                break End::Stop;
            }
            runs.push((lo, top));
            let lo_node = if lo == top { top_node } else { self.node(lo)? };
            match lo_node.parent {
                Parent::Seq(p) if p < lo => top = p,
                Parent::Root | Parent::SelfRef => break End::Root,
                Parent::Missing => {
                    let entry = self.entry_at(lo)?;
                    break End::Missing(entry.parent_id().unwrap_or_default());
                }
                Parent::Seq(_) | Parent::Cycle(_) => return Ok(None),
            }
        };
        runs.reverse();
        Ok(Some((runs, end)))
    }

    /// Whether `a` (with node `an`) is `b` or an ancestor of `b`.
    fn is_ancestor_or_self(
        &self,
        a: u64,
        an: &NodeRecord,
        b: u64,
        bn: &NodeRecord,
    ) -> Result<bool> {
        Ok(an.depth <= bn.depth
            && self
                .ancestor_at_depth(b, bn, an.depth)?
                .is_some_and(|(s, _)| s == a))
    }

    /// The entry `firstKeptEntryId` of the compaction `line` names, if it is a tree entry.
    fn first_kept(&self, line: &str) -> Result<Option<(u64, NodeRecord)>> {
        match compaction_stop(line).first_kept.and_then(|fk| fk.to_rust()) {
            Some(id) => self.seq_of(&id),
            None => Ok(None),
        }
    }

    /// Where `branch(start)` is cut: the entry it starts at, or `None` when it runs to the
    /// root. Follows the walk of `branch_seq` from compaction to compaction (spec §4.1).
    /// `Err(InvalidSession)` when the walk meets a missing parent first.
    fn branch_cut(&self, start: u64, start_node: &NodeRecord) -> Result<Option<u64>> {
        let mut stop: Option<(u64, NodeRecord)> = None;
        let mut pos = (start, start_node.clone());
        loop {
            let compaction = match pos.1.checkpoint {
                Some(c) => Some(self.entry_at(c)?),
                None => None,
            };
            if let Some((s, sn)) = &stop {
                let stops_first = compaction.as_ref().is_none_or(|c| sn.depth >= c.node.depth);
                if stops_first && self.is_ancestor_or_self(*s, sn, pos.0, &pos.1)? {
                    return Ok(Some(*s));
                }
            }
            let Some(c) = compaction else {
                return Ok(None);
            };
            if compaction_stop(&c.line).tail {
                return Ok(Some(c.seq));
            }
            stop = self.first_kept(&c.line)?;
            match c.node.parent {
                Parent::Seq(p) => pos = (p, self.node(p)?),
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
    fn branch_runs(&self, start: u64) -> Result<Option<(Ranges, u64)>> {
        if self.in_cycle_tree(start)? {
            return Ok(None);
        }
        self.branch_runs_at(start, &self.node(start)?)
    }

    /// [`Session::branch_runs`] of `start` (whose node is `node`), known to be in a tree
    /// without a parent cycle.
    fn branch_runs_at(&self, start: u64, node: &NodeRecord) -> Result<Option<(Ranges, u64)>> {
        let cut = self.branch_cut(start, node)?;
        let top_depth = match cut {
            Some(x) => self.node(x)?.depth,
            None => 0,
        };
        match self.runs(start, cut)? {
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
    fn context_plan(
        &self,
        leaf: u64,
        node: &NodeRecord,
        options: ContextOptions,
        branch: Option<&(Ranges, u64)>,
    ) -> Result<Option<ContextPlan>> {
        let branch = branch.filter(|_| options.selection_path == SelectionPath::Branch);
        let Some(c) = node.checkpoint else {
            let ranges = match branch {
                Some((runs, _)) => runs.clone(),
                None => match self.runs(leaf, None)? {
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
        let cp = self.entry_at(c)?;
        let mut ranges = vec![(c, c)];
        let mut tails = Vec::new();
        if use_tail {
            tails.push(c);
        }
        if !(compaction_stop(&cp.line).tail && use_tail) {
            if let (Some((f, fnode)), Parent::Seq(parent)) =
                (self.first_kept(&cp.line)?, cp.node.parent)
            {
                let within_cut = branch.is_none_or(|&(_, top)| fnode.depth >= top);
                if fnode.depth < cp.node.depth
                    && within_cut
                    && self.is_ancestor_or_self(f, &fnode, c, &cp.node)?
                {
                    let Some((kept, _)) = self.runs(parent, Some(f))? else {
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
            let Some((mut after, _)) = self.runs(leaf, Some(c))? else {
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
    fn plan_settings(
        &self,
        node: &NodeRecord,
        options: ContextOptions,
        branch_top: Option<u64>,
    ) -> Result<Context> {
        let mut ctx = empty_context();
        match (options.settings_scope, branch_top) {
            (SettingsScope::Branch, Some(top)) => {
                for seq in [node.model_at, node.thinking_at, node.tools_at]
                    .into_iter()
                    .flatten()
                {
                    let entry = self.entry_at(seq)?;
                    if entry.node.depth >= top {
                        apply_setting(&entry, &mut ctx);
                    }
                }
            }
            _ => self.settings_from_pointers(node, &mut ctx)?,
        }
        if !options.report_active_tools {
            ctx.active_tool_names = None;
        }
        Ok(ctx)
    }

    /// Reads the entries of `ranges` in order, checking that each range is a chain.
    fn read_ranges(
        &self,
        ranges: &Ranges,
        each: &mut dyn FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        for &(lo, hi) in ranges {
            let mut expected = lo;
            for entry in self.log_range(lo, hi + 1).entries(self.id()) {
                let entry = entry?;
                if entry.seq != expected
                    || (entry.seq > lo && entry.node.parent != Parent::Seq(entry.seq - 1))
                {
                    return Err(GroveError::Corrupt(format!(
                        "session {}: run broken at record {}",
                        self.id(),
                        entry.seq
                    )));
                }
                expected += 1;
                each(entry)?;
            }
            if expected != hi + 1 {
                return Err(GroveError::Corrupt(format!(
                    "session {}: missing log record {expected}",
                    self.id()
                )));
            }
        }
        Ok(())
    }
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
