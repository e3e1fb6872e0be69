//! Incremental context views. The context of an entry is a pure fold over its path, and the
//! log is append-only, so a view never needs invalidation — only reuse:
//!
//! - after an append, the new view is the previous one plus the new entry (O(1));
//! - after a move, the part of the previous view up to the deepest common ancestor is kept
//!   and only the new side is read;
//! - the view of the active leaf is persisted (as ranges of sequence numbers), so a cold
//!   process resumes by reading the selected entries directly instead of walking the path;
//! - the rows such a resume would gather from all over the log (the short ranges of the
//!   selection, and the entries the settings come from) are materialized next to it, as
//!   copies in a few small values ([`keys::T_VIEW`]): a path through a bushy session passes
//!   through many log packs, and the backend reads a whole page of packs for each. The
//!   copies are made from reads that checked each line (`crate::log::handle::decode_row`), and each
//!   chunk of them carries its checksum, so a resume does not check their lines again; a
//!   chunk that fails its checksum is read from the log instead.
//!
//! Views live in a bounded in-memory cache, one per session.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use grove_codec::record::{self, NodeRecord, Parent, ViewRecord, ViewRowsRecord};
use grove_codec::EntryKind;
use parking_lot::Mutex;

use crate::context::build;
use crate::context::build::{
    apply_setting, project, Context, ContextOptions, RetainedTail, SelectionPath, SettingsScope,
};
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::{Durability, WriteBatch};
use crate::log::handle::{decode_row_unchecked, Entry, Handle};
use crate::log::shared::{BeforeWrite, Logs};
use crate::tree::ancestors;
use crate::tree::paths;
use grove_codec::record::SessionRecord;

/// How many sessions keep a view in memory.
pub const VIEW_CACHE_SESSIONS: usize = 1024;

/// Extensions after which the persisted view is refreshed.
const PERSIST_EVERY: u32 = 64;

/// Bytes of rows per materialized chunk: a sled leaf of 16 such values stays below sled's
/// blob threshold (a quarter of its 512 KiB segment), so it is read from its segment file
/// rather than as a file of its own.
const VIEW_ROWS_CHUNK_BYTES: usize = 7 * 1024;
/// The longest range of a view's selection whose rows it materializes.
const SHORT_RANGE_ROWS: u64 = 128;
/// The most rows a persisted view materializes.
const VIEW_ROWS_MAX: usize = 16 * 1024;
/// The most bytes of rows a persisted view materializes (past it, the rest is read from the
/// log).
const VIEW_ROWS_BUDGET: usize = 4 << 20;

/// A context with, per selected entry, its seq and the message count after it.
#[derive(Clone)]
pub(crate) struct View {
    leaf: u64,
    options: ContextOptions,
    checkpoint: Option<u64>,
    marks: Vec<(u64, usize)>,
    /// How many selected entries precede the path below the checkpoint: the checkpoint
    /// and its kept range (0 without a checkpoint).
    prefix: usize,
    ctx: Context,
    unpersisted: u32,
    /// The materialized rows stored for this session: the seqs [`crate::context::views::materialized_seqs`]
    /// chose when they were written (`None`: unknown, rewrite them at the next persist).
    materialized: Option<Vec<u64>>,
    /// In a store processes share: how far the view is known to hold no line another process
    /// has redacted since ([`unredacted`]).
    checked: Checked,
}

/// How far a view of a store processes share was checked for other processes' redactions:
/// against which reading of the session's state (`Handle::state_mark`), and from which
/// record on a redaction would be new to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Checked {
    generation: Option<u64>,
    from: u64,
}

impl Checked {
    /// Where a view read from the store now starts: at the session's next record (read
    /// before the view is, so a redaction that lands meanwhile is looked at later).
    fn now(s: &Handle) -> Result<Checked> {
        if !s.inner.shared {
            return Ok(Checked::default());
        }
        Ok(match s.state_mark() {
            Some((generation, next)) => Checked {
                generation: Some(generation),
                from: next,
            },
            None => Checked {
                generation: None,
                from: s.next_seq()?,
            },
        })
    }
}

/// Whether view `v` may still be used: always in a store one process holds (its redactions
/// drop the views themselves). In a store processes share, another process's redaction
/// rewrites a line this process may hold a copy of, so a view read since the state was last
/// read from the store (another process appended) is checked against the leaf records
/// after what it was checked for — redactions are leaf records — and dropped if one is a
/// redaction. No read while only this process appends.
fn unredacted(s: &Handle, v: &mut View) -> Result<bool> {
    if !s.inner.shared {
        return Ok(true);
    }
    let mark = s.state_mark();
    if let (Some((generation, next)), Some(checked)) = (mark, v.checked.generation) {
        if generation == checked {
            // The records since are this process's own (its redactions drop the views).
            v.checked.from = v.checked.from.max(next);
            return Ok(true);
        }
    }
    let (redacted, after) = s.redaction_since(v.checked.from)?;
    if redacted {
        return Ok(false);
    }
    v.checked = Checked {
        generation: mark.map(|(g, _)| g),
        from: mark.map_or(after, |(_, next)| next.max(after)),
    };
    Ok(true)
}

/// The number of selected entries that are the checkpoint and its kept range: the kept
/// entries are ancestors of the checkpoint (shallower), everything after is deeper.
fn prefix_len(selected_depths: &[u64], has_checkpoint: bool) -> usize {
    match (has_checkpoint, selected_depths.first()) {
        (true, Some(&c)) => 1 + selected_depths[1..].iter().take_while(|&&d| d < c).count(),
        _ => 0,
    }
}

/// A session's materialized rows by seq, and per chunk the digest of the seqs it was written
/// for (`None`: the chunk does not decode).
type StoredRows = (BTreeMap<u64, Entry>, Vec<Option<u64>>);

/// The selected seqs of `marks` as ranges of consecutive seqs.
fn segments_of(marks: &[(u64, usize)]) -> Vec<(u64, u64)> {
    let mut segments: Vec<(u64, u64)> = Vec::new();
    for &(seq, _) in marks {
        match segments.last_mut() {
            Some((_, hi)) if *hi + 1 == seq => *hi = seq,
            _ => segments.push((seq, seq)),
        }
    }
    segments
}

/// The per-store cache of views, bounded to [`VIEW_CACHE_SESSIONS`] sessions.
#[derive(Default)]
pub(crate) struct Views {
    map: Mutex<HashMap<u64, View>>,
}

impl Views {
    fn take(&self, sid: u64) -> Option<View> {
        self.map.lock().remove(&sid)
    }

    /// The context of the cached view of session `s`, if it is at `leaf` with `options`
    /// (and, in a store processes share, holds no line redacted since: [`unredacted`]).
    fn context_at(
        &self,
        s: &Handle,
        leaf: u64,
        options: ContextOptions,
    ) -> Result<Option<Context>> {
        if !s.inner.shared {
            let map = self.map.lock();
            let Some(view) = map.get(&s.sid) else {
                return Ok(None);
            };
            return Ok((view.leaf == leaf && view.options == options).then(|| view.ctx.clone()));
        }
        let Some(mut view) = self.take(s.sid) else {
            return Ok(None);
        };
        if !unredacted(s, &mut view)? {
            return Ok(None);
        }
        let ctx = (view.leaf == leaf && view.options == options).then(|| view.ctx.clone());
        self.put(s.sid, view);
        Ok(ctx)
    }

    /// Drops the cached view of `sid` (its lines changed: a redaction).
    pub(crate) fn forget(&self, sid: u64) {
        self.map.lock().remove(&sid);
    }

    /// The sessions with a cached view.
    pub(crate) fn sids(&self) -> Vec<u64> {
        self.map.lock().keys().copied().collect()
    }

    fn put(&self, sid: u64, view: View) {
        let mut map = self.map.lock();
        if map.len() >= VIEW_CACHE_SESSIONS && !map.contains_key(&sid) {
            // Bounded memory: drop an arbitrary view (views are cheap to rebuild).
            if let Some(&victim) = map.keys().next() {
                map.remove(&victim);
            }
        }
        map.insert(sid, view);
    }
}

/// A view that follows a session record by record, outside the cache ([`crate::ops::replay`]): it
/// starts at the root position or at a leaf and moves to each next leaf with the same reuse
/// as the cached views, reporting how many messages of the previous context each move kept.
pub(crate) struct Tracker {
    options: ContextOptions,
    view: Option<View>,
}

impl Tracker {
    /// A tracker at the root position.
    pub(crate) fn new(options: ContextOptions) -> Tracker {
        Tracker {
            options,
            view: None,
        }
    }

    /// The leaf it is at (`None`: the root position).
    pub(crate) fn leaf(&self) -> Option<u64> {
        self.view.as_ref().map(|v| v.leaf)
    }

    /// The context at its leaf.
    pub(crate) fn context(&self) -> &Context {
        self.view.as_ref().map_or(&EMPTY, |v| &v.ctx)
    }

    /// Moves it to `leaf`; `known` is the leaf's node and line when the caller has them.
    /// Returns how many messages of the context before the move the context after it keeps.
    pub(crate) fn move_to(
        &mut self,
        session: &Handle,
        leaf: Option<u64>,
        known: Option<(&NodeRecord, &str)>,
    ) -> Result<usize> {
        let Some(leaf) = leaf else {
            self.view = None;
            return Ok(0);
        };
        let before = self.context().messages.len();
        if self.leaf() == Some(leaf) {
            return Ok(before);
        }
        let read;
        let (node, line) = match known {
            Some((node, line)) => (node, Some(line)),
            None => {
                read = session.node(leaf)?;
                (&read, None)
            }
        };
        let moved = match self.view.take() {
            Some(v) => advance(session, v, leaf, node, line)?.map_err(Some),
            None => Err(None),
        };
        let (view, kept) = match moved {
            Ok(moved) => moved,
            // A fresh build: what it keeps of the old context is their common prefix.
            Err(old) => {
                let view = fresh_view(session, leaf, node, self.options, Checked::default())?;
                let kept = old.map_or(0, |old| {
                    old.ctx
                        .messages
                        .iter()
                        .zip(view.ctx.messages.iter())
                        .take_while(|(a, b)| a == b)
                        .count()
                });
                (view, kept)
            }
        };
        self.view = Some(view);
        Ok(kept)
    }
}

/// The context at the root position, for [`Tracker::context`].
static EMPTY: std::sync::LazyLock<Context> = std::sync::LazyLock::new(Context::empty);

fn is_grove(options: ContextOptions) -> bool {
    options == ContextOptions::grove()
}

/// The context at `leaf` when the cache holds it, without building or moving a view.
pub(crate) fn cached_context(
    s: &Handle,
    views: &Views,
    leaf: u64,
    options: ContextOptions,
) -> Result<Option<Context>> {
    views.context_at(s, leaf, options)
}

/// The context at `leaf`, reusing the cached or persisted view when it can.
pub(crate) fn view_context(
    s: &Handle,
    views: &Views,
    leaf: u64,
    options: ContextOptions,
) -> Result<Context> {
    let mut cached = views.take(s.sid).filter(|v| v.options == options);
    if let Some(v) = &mut cached {
        if !unredacted(s, v)? {
            cached = None;
        }
    }
    // What is read from the store from here on is checked from here on.
    let checked = match cached {
        Some(_) => Checked::default(),
        None => Checked::now(s)?,
    };
    let cached = match cached {
        Some(v) => Some(v),
        None if is_grove(options) => load_view(s, checked)?,
        None => None,
    };
    // The leaf's node only when the view is not already at the leaf (a cold resume of
    // the persisted view reads nothing else of the log).
    let view = match cached {
        Some(v) if v.leaf == leaf => v,
        Some(v) => {
            let node = s.node(leaf)?;
            let checked = v.checked;
            match advance(s, v, leaf, &node, None)? {
                Ok((v, _)) => v,
                Err(_) => fresh_view(s, leaf, &node, options, checked)?,
            }
        }
        None => fresh_view(s, leaf, &s.node(leaf)?, options, checked)?,
    };
    // A read writes nothing: the view is persisted by the session's next write
    // ([`persist_due_view`]).
    let ctx = view.ctx.clone();
    views.put(s.sid, view);
    Ok(ctx)
}

/// Persists the cached view when it is due (built [`PERSIST_EVERY`] times since it was
/// last persisted) and still at the leaf. Called by a writer of the session, under its
/// writer lock, before its transaction: the view goes out with the write's flush, so
/// reads never write.
pub(crate) fn persist_due_view(s: &Handle, views: &Views, leaf: Option<u64>) -> Result<()> {
    let Some(mut view) = views.take(s.sid) else {
        return Ok(());
    };
    // A view holding a line another process redacted since is dropped, not written back.
    if !unredacted(s, &mut view)? {
        return Ok(());
    }
    let due =
        is_grove(view.options) && view.unpersisted >= PERSIST_EVERY && leaf == Some(view.leaf);
    let persisted = if due {
        persist_view(s, &mut view)
    } else {
        Ok(())
    };
    if due && persisted.is_ok() {
        view.unpersisted = 0;
    }
    views.put(s.sid, view);
    persisted
}

fn fresh_view(
    s: &Handle,
    leaf: u64,
    node: &NodeRecord,
    options: ContextOptions,
    checked: Checked,
) -> Result<View> {
    let (ctx, marks, depths) = build::fold_context(s, leaf, options)?;
    let view = View {
        leaf,
        options,
        checkpoint: node.checkpoint,
        prefix: prefix_len(&depths, node.checkpoint.is_some()),
        marks,
        ctx,
        unpersisted: PERSIST_EVERY,
        materialized: None,
        checked,
    };
    Ok(view)
}

/// Moves a view to `leaf` without a full rebuild, when the selection rule allows it:
/// same checkpoint, and the common ancestor inside the part of the view after it. Also
/// returns how many of the view's messages the moved view kept; gives the view back
/// untouched when it cannot move it. `line`: the leaf's line, when the caller has it.
fn advance(
    s: &Handle,
    mut view: View,
    leaf: u64,
    node: &NodeRecord,
    line: Option<&str>,
) -> Result<std::result::Result<(View, usize), View>> {
    if node.checkpoint != view.checkpoint || node.kind == EntryKind::Compaction.tag() {
        return Ok(Err(view));
    }
    let options = view.options;
    let simple = options.selection_path == SelectionPath::Full
        && (options.settings_scope == SettingsScope::Full || node.parent == Parent::Seq(view.leaf));
    if !simple {
        return Ok(Err(view));
    }
    // The new side: entries from just below the common ancestor down to the leaf.
    let mut kept = view.ctx.messages.len();
    let child = node.parent == Parent::Seq(view.leaf);
    let new_side: Vec<Entry> = if child {
        // The node was read already; only the line may be missing.
        vec![Entry {
            seq: leaf,
            node: node.clone(),
            line: match line {
                Some(l) => l.to_owned(),
                None => s.line(leaf)?,
            },
        }]
    } else {
        if ancestors::in_cycle_tree(s, leaf)? || ancestors::in_cycle_tree(s, view.leaf)? {
            return Ok(Err(view));
        }
        let Some(common) = ancestors::common_ancestor(s, view.leaf, leaf)? else {
            return Ok(Err(view));
        };
        // Only the path below the checkpoint (or the whole path without one) grows and
        // shrinks like a path; the checkpoint and its kept range stay as they are.
        let at = if Some(common) == view.checkpoint {
            view.prefix.checked_sub(1)
        } else {
            view.marks.iter().rposition(|&(s, _)| s == common)
        };
        let Some(at) = at.filter(|&at| at + 1 >= view.prefix) else {
            return Ok(Err(view));
        };
        let mut side = paths::path_up_to(s, leaf, Some(common))?;
        if side.first().map(|e| e.seq) != Some(common) {
            return Ok(Err(view));
        }
        side.remove(0);
        kept = view.marks[at].1;
        view.marks.truncate(at + 1);
        Arc::make_mut(&mut view.ctx.messages).truncate(kept);
        Arc::make_mut(&mut view.ctx.entry_ids).truncate(at + 1);
        side
    };
    for entry in &new_side {
        // Entries after the checkpoint project on their own (no tails there).
        project(entry, false, options, Arc::make_mut(&mut view.ctx.messages))?;
        Arc::make_mut(&mut view.ctx.entry_ids).push(entry.id().to_owned());
        view.marks.push((entry.seq, view.ctx.messages.len()));
    }
    match options.settings_scope {
        // A child's settings are its parent's, changed by what it sets itself: no read.
        SettingsScope::Full if !child => {
            view.ctx.model = None;
            view.ctx.thinking_level = grove_codec::jsstr::quote("off");
            view.ctx.active_tool_names = None;
            build::settings_from_pointers(s, node, &mut view.ctx)?;
        }
        _ => {
            for entry in &new_side {
                apply_setting(entry, &mut view.ctx);
            }
        }
    }
    if !options.report_active_tools {
        view.ctx.active_tool_names = None;
    }
    view.leaf = leaf;
    view.unpersisted += 1;
    Ok(Ok((view, kept)))
}

/// Writes the view as the session's persisted view (a cache: no flush), with its
/// materialized rows when they changed.
fn persist_view(s: &Handle, view: &mut View) -> Result<()> {
    let segments = segments_of(&view.marks);
    let rec = ViewRecord {
        leaf: view.leaf,
        checkpoint: view.checkpoint,
        segments,
    };
    // A cache write on the read path: skipped on a poisoned store, and its failure is not
    // the reader's problem (the view is rebuilt next time).
    if s.inner.check_writable().is_err() {
        return Ok(());
    }
    let mut batch = WriteBatch::new();
    batch.put(keys::view(s.sid), record::encode(&rec));
    let wanted = materialized_seqs(s, &rec, &s.node(view.leaf)?);
    if view.materialized.as_ref() != Some(&wanted) {
        stage_view_rows(s, &mut batch, &rec, &wanted)?;
        view.materialized = Some(wanted);
    }
    if s.inner.shared {
        // Only while no other process has written a record since the view was checked (a
        // redaction among them would make these copies stale): a cache, so a refusal is
        // no error.
        let next = keys::log(s.sid, view.checked.from);
        let _ = s
            .inner
            .commit_fenced(&[(&next, None)], batch, false, Durability::None);
        return Ok(());
    }
    let _ = s.inner.kv.apply_buffered(batch, false);
    Ok(())
}

/// The seqs whose rows a persisted view materializes: the selected entries of every short
/// range (at most [`SHORT_RANGE_ROWS`]: a part of the packs and batches of up to 256
/// records they lie in; a longer range uses most of its log values and is read from the
/// log) but the last (it ends at the leaf and grows with appends, consecutive in the log);
/// of the last, when the path branches, its imported records if they are that few; and
/// the entries the settings of `leaf` come from, outside what the log reads of the view
/// cover. At most [`VIEW_ROWS_MAX`], ascending.
fn materialized_seqs(s: &Handle, rec: &ViewRecord, leaf: &NodeRecord) -> Vec<u64> {
    let Some((&(lo, hi), rest)) = rec.segments.split_last() else {
        return Vec::new();
    };
    let short = |&&(a, b): &&(u64, u64)| b - a < SHORT_RANGE_ROWS;
    let mut seqs: Vec<u64> = rest
        .iter()
        .filter(short)
        .flat_map(|&(a, b)| a..=b)
        .collect();
    let long: Vec<(u64, u64)> = rest.iter().filter(|r| !short(r)).copied().collect();
    let mut from_log = lo..=hi;
    if !rest.is_empty() && s.packed > lo {
        let imported_end = hi.min(s.packed - 1);
        if imported_end - lo < SHORT_RANGE_ROWS {
            seqs.extend(lo..=imported_end);
            from_log = imported_end + 1..=hi;
        }
    }
    seqs.extend(
        [leaf.model_at, leaf.thinking_at, leaf.tools_at]
            .into_iter()
            .flatten()
            .filter(|s| !from_log.contains(s) && !long.iter().any(|&(a, b)| (a..=b).contains(s))),
    );
    seqs.sort_unstable();
    seqs.dedup();
    seqs.truncate(VIEW_ROWS_MAX);
    seqs
}

/// Stages the replacement of the session's materialized rows by the rows of `seqs` (up
/// to [`VIEW_ROWS_BUDGET`] bytes of them), in chunks of about [`VIEW_ROWS_CHUNK_BYTES`].
fn stage_view_rows(
    s: &Handle,
    batch: &mut WriteBatch,
    rec: &ViewRecord,
    seqs: &[u64],
) -> Result<()> {
    let (start, end) = keys::view_rows_range(s.sid);
    for pair in s.inner.kv.scan(&start, &end) {
        batch.delete(pair?.0);
    }
    // The selected ranges by scans of the log, the settings' entries one by one.
    let mut entries: Vec<Entry> = Vec::with_capacity(seqs.len());
    let mut rest = seqs;
    for &(lo, hi) in &rec.segments {
        let n = rest.iter().take_while(|&&s| s < lo).count();
        for &seq in &rest[..n] {
            entries.push(s.entry_at(seq)?);
        }
        rest = &rest[n..];
        let m = rest.iter().take_while(|&&s| s <= hi).count();
        if let (Some(&first), Some(&last)) = (rest.first(), rest[..m].last()) {
            entries.extend(read_range(s, first, last)?);
        }
        rest = &rest[m..];
    }
    for &seq in rest {
        entries.push(s.entry_at(seq)?);
    }
    let wanted = ViewRowsRecord::digest_of(seqs);
    let (mut chunk, mut bytes, mut total, mut index) = (Vec::new(), 0, 0, 0u64);
    for e in entries {
        let row = record::encode_log(&e.node, e.line.as_bytes());
        total += row.len();
        // At least one row, so that what is stored is never empty when rows are wanted.
        if total > VIEW_ROWS_BUDGET && total > row.len() {
            break;
        }
        if bytes > 0 && bytes + row.len() > VIEW_ROWS_CHUNK_BYTES {
            let rows = std::mem::take(&mut chunk);
            batch.put(
                keys::view_rows(s.sid, index),
                record::encode(&ViewRowsRecord { wanted, rows }),
            );
            index += 1;
            bytes = 0;
        }
        bytes += row.len();
        chunk.push((e.seq, row));
    }
    if !chunk.is_empty() {
        batch.put(
            keys::view_rows(s.sid, index),
            record::encode(&ViewRowsRecord {
                wanted,
                rows: chunk,
            }),
        );
    }
    Ok(())
}

/// The session's materialized rows, by seq, and the digests of the seq lists they were
/// written for. A chunk that does not decode is left out, its digest counted as `None`:
/// the rows are a cache, the log has them, and the next persist replaces the chunk
/// (`verify` reports it meanwhile).
fn view_rows(s: &Handle) -> Result<StoredRows> {
    let (start, end) = keys::view_rows_range(s.sid);
    let mut out = BTreeMap::new();
    let mut digests = Vec::new();
    for pair in s.inner.kv.scan(&start, &end) {
        let (_, v) = pair?;
        let decoded = record::decode::<ViewRowsRecord>(&v).ok().and_then(|chunk| {
            let rows = chunk
                .rows
                .into_iter()
                .map(|(seq, row)| decode_row_unchecked(s.inner.kv.as_ref(), seq, row).ok())
                .collect::<Option<Vec<Entry>>>()?;
            Some((chunk.wanted, rows))
        });
        match decoded {
            Some((wanted, rows)) => {
                digests.push(Some(wanted));
                out.extend(rows.into_iter().map(|e| (e.seq, e)));
            }
            None => digests.push(None),
        }
    }
    Ok((out, digests))
}

/// Rebuilds the persisted view from its ranges (no path walk): the materialized rows
/// first, the log for the rest.
fn load_view(s: &Handle, checked: Checked) -> Result<Option<View>> {
    let Some(rec) = s.inner.get::<ViewRecord>(&keys::view(s.sid))? else {
        return Ok(None);
    };
    let options = ContextOptions::grove();
    let (mut stored, digests) = view_rows(s)?;
    let on_disk: Vec<u64> = stored.keys().copied().collect();
    let node = match stored.get(&rec.leaf) {
        Some(e) => e.node.clone(),
        None => s.node(rec.leaf)?,
    };
    // The settings' entries before the selection takes its rows out of the map.
    let mut settings = Vec::new();
    for seq in [node.model_at, node.thinking_at, node.tools_at]
        .into_iter()
        .flatten()
    {
        settings.push(match stored.get(&seq) {
            Some(e) => e.clone(),
            None => s.entry_at(seq)?,
        });
    }
    let mut selected: Vec<Entry> = Vec::new();
    for &(lo, hi) in &rec.segments {
        if lo > hi {
            return Err(GroveError::Corrupt("view segment out of order".into()));
        }
        let mut seq = lo;
        while seq <= hi {
            if let Some(e) = stored.remove(&seq) {
                selected.push(e);
                seq += 1;
                continue;
            }
            // The run of rows not materialized, read from the log by one scan.
            let end = stored.range(seq..=hi).next().map_or(hi, |(&s, _)| s - 1);
            selected.extend(read_range(s, seq, end)?);
            seq = end + 1;
        }
    }
    let mut ctx = Context::empty();
    let mut marks = Vec::with_capacity(selected.len());
    let compaction = |i: usize| {
        selected
            .get(i)
            .is_some_and(|e| e.kind() == EntryKind::Compaction)
    };
    for (i, entry) in selected.iter().enumerate() {
        // The tail rule of spec §5.4: the checkpoint first, and a compaction opening the
        // kept range right after it.
        let tail = options.retained_tail == RetainedTail::Use
            && (i == 0 || (i == 1 && compaction(0)))
            && compaction(i);
        project(entry, tail, options, Arc::make_mut(&mut ctx.messages))?;
        Arc::make_mut(&mut ctx.entry_ids).push(entry.id().to_owned());
        marks.push((entry.seq, ctx.messages.len()));
    }
    for entry in &settings {
        apply_setting(entry, &mut ctx);
    }
    let depths: Vec<u64> = selected.iter().map(|e| e.node.depth).collect();
    // What is stored answers this view when it was written for the seqs this view wants
    // and holds a prefix of them (the byte budget cuts the rest). Otherwise (a view
    // persisted by an older build, or rows lost) the view is persisted again at once.
    let wanted = materialized_seqs(s, &rec, &node);
    let digest = ViewRowsRecord::digest_of(&wanted);

    let current = match wanted.is_empty() {
        true => digests.is_empty(),
        false => {
            wanted.starts_with(&on_disk)
                && !digests.is_empty()
                && digests.iter().all(|&d| d == Some(digest))
        }
    };
    let (materialized, unpersisted) = match current {
        true => (Some(wanted), 0),
        false => (None, PERSIST_EVERY),
    };
    Ok(Some(View {
        leaf: rec.leaf,
        options,
        checkpoint: rec.checkpoint,
        prefix: prefix_len(&depths, rec.checkpoint.is_some()),
        marks,
        ctx,
        unpersisted,
        materialized,
        checked,
    }))
}

/// Records `lo..=hi` in ascending order, by one range scan (a gap is `Corrupt`: the log
/// range checks that every record of it is there).
pub(crate) fn read_range(s: &Handle, lo: u64, hi: u64) -> Result<Vec<Entry>> {
    s.log_range(lo, hi + 1).entries(s.id()).collect()
}

/// Persists every cached view that is due (the store's flush): each under its session's
/// writer lock, as a writer would before its transaction.
pub(crate) fn persist_due_views(logs: &Arc<Logs>, views: &Views) -> Result<()> {
    for sid in views.sids() {
        let Some(record) = logs.inner.get::<SessionRecord>(&keys::session(sid))? else {
            continue;
        };
        let session = Handle::open(logs.clone(), sid, record)?;
        let lock = logs.session_lock(sid);
        let _writer = lock.lock();
        // A cache: a view that cannot be written is rebuilt next time.
        let _ = persist_due_view(&session, views, session.head()?.leaf);
    }
    Ok(())
}

/// The session log's before-write hook of the context views: a writer persists its session's
/// due view with its write ([`persist_due_view`]).
pub(crate) struct PersistDueViews(pub(crate) Arc<Views>);

impl BeforeWrite for PersistDueViews {
    fn before_write(
        &self,
        logs: &Arc<Logs>,
        sid: u64,
        record: &Arc<SessionRecord>,
        packed: u64,
        leaf: Option<u64>,
    ) -> Result<()> {
        let session = Handle::known(logs.clone(), sid, record.clone(), packed);
        persist_due_view(&session, &self.0, leaf)
    }
}
