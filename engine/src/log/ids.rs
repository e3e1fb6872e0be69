//! The entry-id index: which record an id names (docs/design.md, "Id index"; docs/format.md,
//! "Id runs").
//!
//! An id is found in one of three places, newest first:
//! - the **tail**: the ids of the session's last appended records, `tail_from ..`, held in
//!   memory only. Their log rows are their durable copy; the tail is rebuilt from them (at
//!   most a few hundred rows) the first time a process needs the session's ids.
//! - **id runs**: once the tail holds [`ID_RUN_FLUSH`] ids, the next commit first writes them
//!   as a run — sorted id packs under the run's first seq, and a description with the run's
//!   end and Bloom filter — and the tail starts again. When [`ID_RUN_FANOUT`] runs of the same
//!   size class are the newest, they are merged into one (a size-tiered merge), so a session
//!   has O(log n) runs and each id is rewritten O(log n) times. Runs tile the appended records
//!   `packed .. tail_from` in seq order.
//! - the **id packs** of an imported session (records `0 .. packed`), with their filter.
//!
//! An append therefore writes no index row for its id: one key less per appended record than
//! an id row per entry, and no write to a random place of the index.
//!
//! The same state holds the session's **head** (next seq, leaf, counts), a fold of the log:
//! the stored head is a checkpoint written with each run, folded over the rows after it when
//! the state is loaded (docs/design.md, "Commit protocol").
//!
//! The state of one session is shared by every handle of the store (one per session number,
//! `Logs::id_index`): readers take it shared, a commit exclusively (so a
//! reader never sees a record's id before its log row, nor after a merge the packs of runs the
//! merge removed).

use std::collections::HashMap;

use compact_str::CompactString;
use std::sync::OnceLock;

use grove_codec::pack::{self, IdFilter, IdHash, IdPack, IdRunMeta};
use grove_codec::record::{self, HeadRecord};
use parking_lot::RwLockWriteGuard;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::{Inner, FENCE_TRIES};
use crate::kv::Durability;
use crate::kv::WriteBatch;
use crate::log::handle::{decode_node, decode_row_unchecked, packed_count, Entry, Handle};
use crate::log::id_state::{IdIndex, Lookup, Run, ID_RUN_FANOUT, ID_RUN_FLUSH, ID_RUN_FLUSH_BYTES};
use crate::log::rows::LogRows;
use crate::log::write;

impl Lookup {
    /// Reads every run description of a session whose tail starts at `tail_from`.
    fn load(s: &Handle, tail_from: u64) -> Result<Lookup> {
        let kv = &s.inner.kv;
        let mut runs: Vec<Run> = Vec::new();
        let start = keys::session_prefix(keys::T_ID_RUN, s.sid);
        for pair in kv.scan(&start, &keys::prefix_end(&start)) {
            let (k, v) = pair?;
            let first = run_of_key(&k)?;
            let meta = IdRunMeta::decode(&v).map_err(|e| corrupt_run(first, e))?;
            let expected = runs.last().map_or(s.packed, |r| r.end);
            if first != expected || meta.end <= first || meta.count != meta.end - first {
                return Err(corrupt_run(
                    first,
                    format!(
                        "covers {first} .. {} with {} ids where the runs go on from {expected}",
                        meta.end, meta.count
                    ),
                ));
            }
            runs.push(Run {
                first,
                end: meta.end,
                filter: meta.filter,
            });
        }
        let end = runs.last().map_or(s.packed, |r| r.end);
        // In a shared store another process may have written runs since this state was loaded
        // (its head is then stale: its next commit is refused and reloads it); their ids are
        // also in this state's tail or newer, which a lookup may find.
        if end != tail_from && !(s.inner.shared && end > tail_from) {
            return Err(corrupt_run(
                end,
                format!("the runs end at {end}, the tail starts at {tail_from}"),
            ));
        }
        Ok(Lookup { runs })
    }
}

fn corrupt_run(first: u64, e: impl std::fmt::Display) -> GroveError {
    GroveError::Corrupt(format!("id run at record {first}: {e}"))
}

/// Where the session's id runs end (the last run's description), if it has any.
fn last_run_end(s: &Handle) -> Result<Option<u64>> {
    let start = keys::session_prefix(keys::T_ID_RUN, s.sid);
    let mut last_run = Ok(None);
    s.inner
        .kv
        .read_last(&start, &keys::prefix_end(&start), &mut |k, v| {
            last_run = run_of_key(k).and_then(|first| {
                IdRunMeta::decode(v)
                    .map(|meta| Some(meta.end))
                    .map_err(|e| corrupt_run(first, e))
            });
        })?;
    last_run
}

/// The first seq of the run (or pack of a run) under `key`.
fn run_of_key(key: &[u8]) -> Result<u64> {
    key.get(9..17)
        .and_then(keys::last_u64)
        .ok_or_else(|| GroveError::Corrupt("id run key".into()))
}

/// The id packs of `pairs` (sorted by id) as writes under run `first`, and their keys.
fn stage_run(batch: &mut WriteBatch, sid: u64, first: u64, end: u64, pairs: &[(&str, u64)]) -> Run {
    let filter = IdFilter::build(pairs.len(), pairs.iter().map(|(id, _)| *id));
    for chunk in pairs.chunks(pack::ID_PACK_IDS) {
        if let Some((head, _)) = chunk.first() {
            batch.put(
                keys::id_run_pack(sid, first, head),
                pack::encode_id_pack(chunk.iter().copied()),
            );
        }
    }
    let meta = IdRunMeta {
        end,
        count: end - first,
        filter,
    };
    batch.put(keys::id_run(sid, first), meta.encode());
    Run {
        first,
        end,
        filter: meta.filter,
    }
}

impl IdIndex {
    /// Reads a session's state: its head checkpoint, where its runs end (the last run's
    /// description alone), and the log rows after both — the tail's ids and the records the
    /// head is folded over (every row to the log's end, a record a crash interrupted
    /// included). The runs and filters wait for the first id lookup that needs them.
    fn load(s: &Handle) -> Result<IdIndex> {
        if !s.inner.shared {
            return IdIndex::load_once(s);
        }
        // The reads are not one snapshot: another process's commit may write a run (with the
        // log value that filled it) between the read of the last run and the read of the log.
        // The state is consistent when the runs end where they ended before the log was read.
        for tries in 0..FENCE_TRIES {
            crate::core::util::backoff(tries);
            let index = IdIndex::load_once(s)?;
            if last_run_end(s)?.unwrap_or(s.packed) == index.tail_from {
                return Ok(index);
            }
        }
        Err(crate::core::shared::fenced_out(&format!(
            "loading session {}",
            s.record.id
        )))
    }

    /// [`IdIndex::load`], each read on its own.
    fn load_once(s: &Handle) -> Result<IdIndex> {
        let kv = &s.inner.kv;
        let tail_from = last_run_end(s)?.unwrap_or(s.packed);
        let mut head: HeadRecord = s.inner.require(&keys::head(s.sid))?;
        if head.next_seq < s.packed {
            return Err(GroveError::Corrupt(format!(
                "head of session {} at record {}, before its packed records end ({})",
                s.record.id, head.next_seq, s.packed
            )));
        }
        // The rows after the runs (the tail) and after the head checkpoint: single rows.
        let start = tail_from.min(head.next_seq);
        let covered = tail_from.max(head.next_seq).max(s.packed);
        let mut log_end = start;
        let mut tail = HashMap::new();
        let mut tail_bytes = 0;
        for pair in s.log_range(start, u64::MAX) {
            let (seq, v) = pair?;
            log_end = seq + 1;
            let node = decode_node(seq, &v)?;
            if seq >= head.next_seq {
                write::advance_head(&mut head, seq, &node, None);
            }
            if seq >= tail_from {
                tail.insert(node.id, seq);
                tail_bytes += v.len() as u64;
            }
        }
        // The head checkpoint and the id runs are written after the records they cover (the
        // log is the commit point), so a log that ends before them lost records: damage a
        // backend did not report (a zeroed page of redb's file can drop a key range).
        // So are the leaf-history and compaction rows of appended records (one read each).
        let mut indexed = covered;
        for tag in [keys::T_LEAF_HISTORY, keys::T_COMPACTION] {
            let start = keys::session_prefix(tag, s.sid);
            kv.read_last(&start, &keys::prefix_end(&start), &mut |k, _| {
                if let Some(seq) = keys::last_u64(k) {
                    indexed = indexed.max(seq + 1);
                }
            })?;
        }
        if log_end < indexed {
            return Err(GroveError::Corrupt(format!(
                "session {}: its log ends at record {log_end}, but its indexes cover records \
                 up to {indexed}",
                s.record.id
            )));
        }
        // Only the last log value can be incomplete (the commit protocol): its records' index
        // rows are completed now. A poisoned store refuses writes; they wait for a reopen.
        // Their lines are not handed out from here (a read checks them), so that a damaged
        // line leaves the session loadable and `verify` reports it.
        let last: Vec<Entry> = s
            .last_value()?
            .into_iter()
            .map(|(seq, row)| decode_row_unchecked(s.inner.kv.as_ref(), seq, row))
            .collect::<std::result::Result<_, _>>()?;
        if let Some(entry) = last.last() {
            if entry.seq + 1 == head.next_seq {
                head.last_timestamp = Some(entry.envelope()?.timestamp);
            }
            // In a shared store every commit is one statement: nothing is left to complete,
            // and rows derived from a value another process has since followed would be
            // stale.
            if s.inner.check_writable().is_ok() && !s.inner.shared {
                write::repair_last(s, &last)?;
            }
        }
        Ok(IdIndex {
            lookup: OnceLock::new(),
            pack_filter: OnceLock::new(),
            tail_from,
            tail,
            tail_bytes,
            head,
            generation: crate::log::id_state::next_generation(),
        })
    }

    /// The lookup structures, read now if no one has.
    fn lookup(&self, s: &Handle) -> Result<&Lookup> {
        if self.lookup.get().is_none() {
            // Two readers may both read them; the first to finish is kept.
            let _ = self.lookup.set(Lookup::load(s, self.tail_from)?);
        }
        self.lookup
            .get()
            .ok_or_else(|| GroveError::Corrupt("id runs not loaded".into()))
    }

    /// The id packs' filter, read now if no one has (a session with packs has one).
    fn pack_filter(&self, s: &Handle) -> Result<&IdFilter> {
        if self.pack_filter.get().is_none() {
            let bytes = s.inner.kv.get(&keys::id_filter(s.sid))?.ok_or_else(|| {
                GroveError::Corrupt(format!("session {} has no id filter", s.record.id))
            })?;
            let filter = IdFilter::decode(&bytes).map_err(|e| {
                GroveError::Corrupt(format!("id filter of session {}: {e}", s.record.id))
            })?;
            let _ = self.pack_filter.set(filter);
        }
        self.pack_filter
            .get()
            .ok_or_else(|| GroveError::Corrupt("id filter not loaded".into()))
    }

    /// [`IdIndex::lookup`], to change (a flush or merge, under the slot's write lock).
    fn lookup_mut(&mut self, s: &Handle) -> Result<&mut Lookup> {
        self.lookup(s)?;
        self.lookup
            .get_mut()
            .ok_or_else(|| GroveError::Corrupt("id runs not loaded".into()))
    }

    /// The seq of `id` (its last occurrence). `pack_filter`: consult the id packs' filter
    /// first (for a duplicate check, where most ids are absent; a lookup of an id known to
    /// exist skips it).
    fn find(&self, s: &Handle, id: &str, pack_filter: bool) -> Result<Option<u64>> {
        if let Some(&seq) = self.tail.get(id) {
            return Ok(Some(seq));
        }
        let hash = IdHash::of(id);
        let lookup = self.lookup(s)?;
        for run in lookup.runs.iter().rev() {
            if run.filter.may_contain_hash(hash) {
                let start = keys::id_run_packs(s.sid, run.first);
                if let Some(seq) =
                    find_in_packs(s, &start, keys::id_run_pack(s.sid, run.first, id), id)?
                {
                    return Ok(Some(seq));
                }
            }
        }
        if s.packed == 0 {
            return Ok(None);
        }
        if pack_filter && !self.pack_filter(s)?.may_contain_hash(hash) {
            return Ok(None);
        }
        let start = keys::session_prefix(keys::T_ID_PACK, s.sid);
        find_in_packs(s, &start, keys::id_pack(s.sid, id), id)
    }

    /// Writes the tail as a run (one atomic batch), then merges what is due, each a batch of
    /// its own.
    fn flush(&mut self, s: &Handle) -> Result<()> {
        let mut staged = StagedRuns::default();
        let mut batch = WriteBatch::new();
        self.stage_flush(s, &mut batch, &mut staged)?;
        s.inner.commit(batch, Durability::None)?;
        loop {
            let mut batch = WriteBatch::new();
            if !self.stage_merge(s, &mut batch, &mut StagedRuns::default())? {
                return Ok(());
            }
            s.inner.commit(batch, Durability::None)?;
        }
    }

    /// Stages the tail as a run in `batch` with the head checkpoint, and every merge then due:
    /// a shared store's commit carries them, so that only a writer whose picture of the
    /// session was whole writes them (docs/design.md, "Fenced commits"). The index in memory
    /// changes as if they were written: a caller whose batch is not applied drops it.
    fn stage_flush_merged(&mut self, s: &Handle, batch: &mut WriteBatch) -> Result<()> {
        let mut staged = StagedRuns::default();
        self.stage_flush(s, batch, &mut staged)?;
        while self.stage_merge(s, batch, &mut staged)? {}
        Ok(())
    }

    /// Stages the tail as a run, with the head checkpoint, and starts a new tail.
    fn stage_flush(
        &mut self,
        s: &Handle,
        batch: &mut WriteBatch,
        staged: &mut StagedRuns,
    ) -> Result<()> {
        let first = self.tail_from;
        let end = first + self.tail.len() as u64;
        let mut pairs: Vec<(CompactString, u64)> = self.tail.drain().collect();
        pairs.sort_unstable();
        if let Some((id, seq)) = pairs.iter().find(|(_, q)| !(first..end).contains(q)) {
            return Err(GroveError::Corrupt(format!(
                "id {id} of record {seq} is not among the records {first} .. {end} of the tail"
            )));
        }
        let run = stage_run(batch, s.sid, first, end, &borrowed(&pairs));
        // The head checkpoint travels with the run (the records up to now are complete).
        batch.put(keys::head(s.sid), record::encode(&self.head));
        self.lookup_mut(s)?.runs.push(run);
        staged.insert(first, pairs);
        self.tail_bytes = 0;
        self.tail_from = end;
        Ok(())
    }

    /// Stages the merge of the newest [`ID_RUN_FANOUT`] runs when they share a size class;
    /// whether it did. The packs of runs staged in the same batch are taken from `staged`.
    fn stage_merge(
        &mut self,
        s: &Handle,
        batch: &mut WriteBatch,
        staged: &mut StagedRuns,
    ) -> Result<bool> {
        let runs = &mut self.lookup_mut(s)?.runs;
        let Some(at) = runs.len().checked_sub(ID_RUN_FANOUT) else {
            return Ok(false);
        };
        let class = runs[at].class();
        if runs[at..].iter().any(|r| r.class() != class) {
            return Ok(false);
        }
        let (first, end) = (runs[at].first, runs[runs.len() - 1].end);
        let mut pairs: Vec<(CompactString, u64)> = Vec::new();
        let mut old_keys = Vec::new();
        for run in &runs[at..] {
            if let Some(run_pairs) = staged.remove(&run.first) {
                for chunk in run_pairs.chunks(pack::ID_PACK_IDS) {
                    if let Some((head, _)) = chunk.first() {
                        old_keys.push(keys::id_run_pack(s.sid, run.first, head));
                    }
                }
                pairs.extend(run_pairs);
            } else {
                let start = keys::id_run_packs(s.sid, run.first);
                for pair in s.inner.kv.scan(&start, &keys::prefix_end(&start)) {
                    let (k, value) = pair?;
                    let pack = IdPack::parse(&value).map_err(|e| corrupt_run(run.first, e))?;
                    pairs.extend(pack.iter().map(|(id, seq)| (CompactString::from(id), seq)));
                    old_keys.push(k);
                }
            }
            old_keys.push(keys::id_run(s.sid, run.first));
        }
        if pairs.len() as u64 != end - first {
            return Err(corrupt_run(
                first,
                format!("runs covering {first} .. {end} hold {} ids", pairs.len()),
            ));
        }
        // A stable sort: it finds the runs' sorted sequences and merges them.
        pairs.sort();
        // The old keys go first: a later write of the same key wins (WriteBatch).
        for key in old_keys {
            batch.delete(key);
        }
        let run = stage_run(batch, s.sid, first, end, &borrowed(&pairs));
        runs.truncate(at);
        runs.push(run);
        staged.insert(first, pairs);
        Ok(true)
    }
}

/// The ids of runs staged in a batch not yet written, by the run's first seq, sorted.
type StagedRuns = HashMap<u64, Vec<(CompactString, u64)>>;

/// `pairs` as borrowed pairs, for [`stage_run`].
fn borrowed(pairs: &[(CompactString, u64)]) -> Vec<(&str, u64)> {
    pairs.iter().map(|(id, seq)| (id.as_str(), *seq)).collect()
}

/// The seq of `id` in the id packs under `start` (a run's or the import's): the pack whose
/// first id is the greatest not above `id`, found by a floor lookup ending at `key`
/// (`id`'s own pack key).
fn find_in_packs(s: &Handle, start: &[u8], mut key: Vec<u8>, id: &str) -> Result<Option<u64>> {
    // The smallest key after `id`'s own: the scan ends at `id` inclusive.
    key.push(0);
    let mut found = Ok(None);
    s.inner.kv.read_last(start, &key, &mut |_, value| {
        found = IdPack::parse(value)
            .map(|pack| pack.get(id))
            .map_err(|e| GroveError::Corrupt(format!("id pack: {e}")));
    })?;
    found
}

/// Up to `limit` pairs of the id packs under `table` (one run's, or the import's) whose id
/// starts with `prefix`: the pack before the first one keyed by `prefix` (its later ids may
/// match), then every pack keyed by `prefix`.
fn prefix_in_packs(
    s: &Handle,
    table: &[u8],
    prefix: &str,
    limit: usize,
    out: &mut Vec<(String, u64)>,
) -> Result<()> {
    let mut from = table.to_vec();
    from.extend_from_slice(prefix.as_bytes());
    let kv = &s.inner.kv;
    let before = kv.scan_rev(table, &from).take(1);
    let packs = before.chain(kv.scan(&from, &keys::prefix_end(&from)));
    let mut found = 0;
    for pair in packs {
        let (_, value) = pair?;
        let pack =
            IdPack::parse(&value).map_err(|e| GroveError::Corrupt(format!("id pack: {e}")))?;
        for (id, seq) in pack.iter().filter(|(id, _)| id.starts_with(prefix)) {
            out.push((id.to_owned(), seq));
            found += 1;
        }
        if found >= limit {
            break;
        }
    }
    Ok(())
}

impl Handle {
    /// Runs `f` on the session's id index, loading it first if no one has.
    fn with_ids<T>(&self, f: impl FnOnce(&IdIndex) -> Result<T>) -> Result<T> {
        let slot = self.logs.id_index(self.sid);
        {
            let guard = slot.read();
            if let Some(index) = guard.as_ref() {
                return f(index);
            }
        }
        let mut guard = slot.write();
        let index = loaded(&mut guard, self)?;
        f(index)
    }

    /// The sequence number the id resolves to (last occurrence), entry or leaf record.
    /// In a shared store an id not found may be another process's newer record: the state is
    /// checked against the log then, and looked in again when it was stale.
    pub(crate) fn seq_of_any(&self, id: &str) -> Result<Option<u64>> {
        let found = self.with_ids(|ix| ix.find(self, id, false))?;
        if found.is_some() || self.state_is_current()? {
            return Ok(found);
        }
        self.with_ids(|ix| ix.find(self, id, false))
    }

    /// Whether `id` is an id of the log (a duplicate check: the filters spare most reads of
    /// packs for ids that are not there).
    pub(crate) fn id_taken(&self, id: &str) -> Result<bool> {
        self.with_ids(|ix| ix.find(self, id, true).map(|seq| seq.is_some()))
    }

    /// Up to `limit` ids of the log starting with `prefix`, in byte order, with their seqs.
    pub(crate) fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<(String, u64)>> {
        self.with_ids(|ix| {
            let mut out: Vec<(String, u64)> = ix
                .tail
                .iter()
                .filter(|(id, _)| id.starts_with(prefix))
                .map(|(id, &seq)| (id.to_string(), seq))
                .collect();
            for run in &ix.lookup(self)?.runs {
                let table = keys::id_run_packs(self.sid, run.first);
                prefix_in_packs(self, &table, prefix, limit, &mut out)?;
            }
            if self.packed > 0 {
                let table = keys::session_prefix(keys::T_ID_PACK, self.sid);
                prefix_in_packs(self, &table, prefix, limit, &mut out)?;
            }
            out.sort();
            out.truncate(limit);
            Ok(out)
        })
    }

    /// The head: next sequence number, active leaf, entry count.
    pub fn head(&self) -> Result<HeadRecord> {
        self.state_is_current()?;
        self.with_ids(|ix| Ok(ix.head.clone()))
    }

    /// The active leaf, without loading the session's state when no one has and the stored
    /// head checkpoint covers the whole log (an imported session; one whose last commit
    /// wrote a checkpoint): a cold resume then reads neither the id index nor its tail.
    /// Otherwise the state is loaded, as [`Handle::head`] does.
    pub(crate) fn leaf_seq(&self) -> Result<Option<u64>> {
        self.state_is_current()?;
        if let Some(index) = self.logs.id_index(self.sid).read().as_ref() {
            return Ok(index.head.leaf);
        }
        let checkpoint: HeadRecord = self.inner.require(&keys::head(self.sid))?;
        match self.last_value()?.last() {
            Some(&(last_seq, _)) if last_seq >= checkpoint.next_seq => Ok(self.head()?.leaf),
            _ => Ok(checkpoint.leaf),
        }
    }

    /// The position the session's next record gets, without loading its state when no one
    /// has: the stored head checkpoint's, or one past the last log value's last record.
    #[cfg_attr(not(feature = "search"), allow(dead_code))]
    pub(crate) fn next_seq(&self) -> Result<u64> {
        self.state_is_current()?;
        if let Some(index) = self.logs.id_index(self.sid).read().as_ref() {
            return Ok(index.head.next_seq);
        }
        let checkpoint: HeadRecord = self.inner.require(&keys::head(self.sid))?;
        Ok(match self.last_value()?.last() {
            Some(&(last_seq, _)) => checkpoint.next_seq.max(last_seq + 1),
            None => checkpoint.next_seq,
        })
    }

    /// The number of entries (leaf records excluded), without loading the session's state
    /// when no one has: the checkpoint's count, plus the records after it, minus the leaf
    /// records among them — counted by their leaf-history keys, and by their nodes for the
    /// records of the last log value (whose index rows a crash may have left unwritten). A few
    /// reads whatever the session's size, for listings of many sessions.
    pub(crate) fn entry_count(&self) -> Result<u64> {
        self.state_is_current()?;
        if let Some(index) = self.logs.id_index(self.sid).read().as_ref() {
            return Ok(index.head.entries);
        }
        let kv = &self.inner.kv;
        let checkpoint: HeadRecord = self.inner.require(&keys::head(self.sid))?;
        let last = self.last_value()?;
        let (Some(&(first, _)), Some(&(last_seq, _))) = (last.first(), last.last()) else {
            return Ok(checkpoint.entries);
        };
        if last_seq < checkpoint.next_seq {
            return Ok(checkpoint.entries);
        }
        // Leaf records before the last value, by their keys; in it, by their nodes.
        let from = keys::leaf_history(self.sid, checkpoint.next_seq);
        let end = keys::leaf_history(self.sid, first.max(checkpoint.next_seq));
        let mut leaves = 0;
        for pair in kv.scan(&from, &end) {
            pair?;
            leaves += 1;
        }
        for (seq, row) in &last {
            if *seq >= checkpoint.next_seq
                && decode_node(*seq, row)?.kind == grove_codec::EntryKind::Leaf.tag()
            {
                leaves += 1;
            }
        }
        let after = (last_seq + 1).saturating_sub(checkpoint.next_seq);
        Ok(checkpoint.entries + after.saturating_sub(leaves))
    }

    /// Commits a transaction's records (`commit` applies `ops`; `false`: a shared store
    /// refused them), adds their ids to the tail and makes `head` the session's head, holding
    /// the session's state exclusively. A full tail is first written as a run — in a shared
    /// store, in `ops` ([`IdIndex::stage_flush_merged`]). When anything fails, or the commit is
    /// refused, the state is dropped, to be read again from the store.
    pub(crate) fn commit_with_ids(
        &self,
        ids: HashMap<CompactString, u64>,
        bytes: u64,
        head: &HeadRecord,
        mut ops: WriteBatch,
        commit: impl FnOnce(WriteBatch) -> Result<bool>,
    ) -> Result<bool> {
        let slot = self.logs.id_index(self.sid);
        let mut guard = slot.write();
        let index = loaded(&mut guard, self)?;
        let full = index.tail.len() >= ID_RUN_FLUSH || index.tail_bytes >= ID_RUN_FLUSH_BYTES;
        let flushed = match full && !index.tail.is_empty() {
            false => Ok(()),
            true if self.inner.shared => index.stage_flush_merged(self, &mut ops),
            true => index.flush(self),
        };
        let outcome = flushed.and_then(|()| commit(ops));
        match outcome {
            Ok(true) => {
                index.tail.extend(ids);
                index.tail_bytes += bytes;
                index.head = head.clone();
            }
            Ok(false) | Err(_) => *guard = None,
        }
        outcome
    }

    /// Whether another process appended a record at `seq` (the log key that comes after a
    /// head whose next seq is `seq`).
    pub(crate) fn appended_after(&self, seq: u64) -> Result<bool> {
        Ok(self
            .inner
            .kv
            .read_value(&keys::log(self.sid, seq), &mut |_| {})?)
    }

    /// Installs the state of a session this process has just created, empty as it is, so
    /// that its first operation reads nothing of it (in a shared store another process may
    /// have written it meanwhile: that operation's commit is then refused, and the state read).
    pub(crate) fn install_new_state(&self, head: HeadRecord) {
        let index = IdIndex {
            lookup: OnceLock::from(Lookup { runs: Vec::new() }),
            pack_filter: OnceLock::new(),
            tail_from: 0,
            tail: HashMap::new(),
            tail_bytes: 0,
            head,
            generation: crate::log::id_state::next_generation(),
        };
        *self.logs.id_index(self.sid).write() = Some(index);
    }

    /// The generation and next record position of the session's state this process holds,
    /// without reading the store; `None` when it holds none. The generation changes when the
    /// state is read again (another process appended), not when this process appends.
    pub(crate) fn state_mark(&self) -> Option<(u64, u64)> {
        self.logs
            .id_index(self.sid)
            .read()
            .as_ref()
            .map(|ix| (ix.generation, ix.head.next_seq))
    }

    /// Drops the session's state this process holds: it is read again when next needed.
    pub(crate) fn drop_state(&self) {
        *self.logs.id_index(self.sid).write() = None;
    }

    /// Whether the session's state this process holds is current: nothing was appended after
    /// its head (one read of the log key that would come next). Always in a store one process
    /// holds. Otherwise, a stale state is dropped (and read again when next needed).
    pub(crate) fn state_is_current(&self) -> Result<bool> {
        if !self.inner.shared {
            return Ok(true);
        }
        let slot = self.logs.id_index(self.sid);
        let Some(next) = slot.read().as_ref().map(|ix| ix.head.next_seq) else {
            return Ok(true);
        };
        if !self.appended_after(next)? {
            return Ok(true);
        }
        let mut guard = slot.write();
        if guard.as_ref().is_some_and(|ix| ix.head.next_seq == next) {
            *guard = None;
        }
        Ok(false)
    }
}

/// The loaded index in `slot`, loading it if needed.
fn loaded<'g>(
    slot: &'g mut RwLockWriteGuard<'_, Option<IdIndex>>,
    s: &Handle,
) -> Result<&'g mut IdIndex> {
    if slot.is_none() {
        **slot = Some(IdIndex::load(s)?);
    }
    slot.as_mut()
        .ok_or_else(|| GroveError::Corrupt("id index not loaded".into()))
}

/// Moves the id rows of a layout-2 or layout-3 session into one id run covering its appended
/// records (`packed ..` to the log's end), in one atomic batch; `false` when the store has no
/// id rows left. Opening such a store calls it until it returns `false`.
pub(crate) fn migrate_id_rows(inner: &Inner) -> Result<bool> {
    let table = [keys::T_ENTRY_ID];
    let Some(first) = inner.kv.scan(&table, &[keys::T_ENTRY_ID + 1]).next() else {
        return Ok(false);
    };
    let (key, _) = first?;
    let sid = key
        .get(1..9)
        .and_then(keys::last_u64)
        .ok_or_else(|| GroveError::Corrupt("id row key".into()))?;
    let packed = packed_count(inner, sid)?;
    let mut batch = WriteBatch::new();
    let rows = keys::session_prefix(keys::T_ENTRY_ID, sid);
    for pair in inner.kv.scan(&rows, &keys::prefix_end(&rows)) {
        batch.delete(pair?.0);
    }
    // An unpublished session (an import, or a deletion a crash interrupted) is removed when
    // the store opens: its rows are only dropped.
    let published = inner.kv.get(&keys::session(sid))?.is_some()
        && inner.kv.get(&keys::pending(sid))?.is_none();
    if !published {
        inner.commit(batch, Durability::Sync)?;
        return Ok(true);
    }
    let mut ids: Vec<(String, u64)> = Vec::new();
    let log = LogRows::new(inner.kv.as_ref(), sid, packed, packed, u64::MAX, false);
    for pair in log {
        let (seq, v) = pair.map_err(|e| match e {
            GroveError::Corrupt(m) => GroveError::Corrupt(format!("session {sid}: {m}")),
            other => other,
        })?;
        ids.push((decode_node(seq, &v)?.id.into(), seq));
    }
    if !ids.is_empty() {
        // Appended ids are unique (appends refuse duplicates).
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(GroveError::Corrupt(format!(
                "session {sid}: id {} appended twice (records {} and {})",
                w[0].0, w[0].1, w[1].1
            )));
        }
        let pairs: Vec<(&str, u64)> = ids.iter().map(|(id, q)| (id.as_str(), *q)).collect();
        let end = packed + ids.len() as u64;
        stage_run(&mut batch, sid, packed, end, &pairs);
    }
    inner.commit(batch, Durability::Sync)?;
    Ok(true)
}

/// Rebuilds every id filter of the store — each id run's and each imported session's — from
/// the ids it describes. Store layouts up to 5 hashed ids with blake3 for their filters,
/// layout 6 with XXH3-128 (docs/format.md, "Packs"); opening an older store calls this
/// before rewriting its marker. Each filter is rewritten alone and is rebuilt from its ids, not
/// from the old filter, so an interrupted rebuild is simply run again at the next open.
pub(crate) fn rebuild_id_filters(inner: &Inner) -> Result<()> {
    let kv = inner.kv.as_ref();
    let ids_under = |prefix: &[u8], what: &dyn Fn() -> String| -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for pair in kv.scan(prefix, &keys::prefix_end(prefix)) {
            let (_, value) = pair?;
            let pack = IdPack::parse(&value)
                .map_err(|e| GroveError::Corrupt(format!("{}: id pack: {e}", what())))?;
            ids.extend(pack.iter().map(|(id, _)| id.to_owned()));
        }
        Ok(ids)
    };
    // The runs' descriptions (their keys first: each is rewritten while the table is read).
    let runs: Vec<Vec<u8>> = kv
        .scan(&[keys::T_ID_RUN], &[keys::T_ID_RUN + 1])
        .map(|pair| pair.map(|(k, _)| k))
        .collect::<std::result::Result<_, _>>()?;
    for key in runs {
        let sid = key
            .get(1..9)
            .and_then(keys::last_u64)
            .ok_or_else(|| GroveError::Corrupt("id run key".into()))?;
        let first = run_of_key(&key)?;
        let what = || format!("session {sid}: id run at record {first}");
        let value = kv.get(&key)?.ok_or_else(|| GroveError::Corrupt(what()))?;
        let mut meta = IdRunMeta::decode(&value)
            .map_err(|e| GroveError::Corrupt(format!("{}: {e}", what())))?;
        let ids = ids_under(&keys::id_run_packs(sid, first), &what)?;
        if ids.len() as u64 != meta.count {
            return Err(GroveError::Corrupt(format!(
                "{}: {} ids in its packs, {} in its description",
                what(),
                ids.len(),
                meta.count
            )));
        }
        meta.filter = IdFilter::build(ids.len(), ids.iter().map(String::as_str));
        let mut batch = WriteBatch::new();
        batch.put(key, meta.encode());
        inner.commit(batch, Durability::None)?;
    }
    // The filters of imported sessions' id packs.
    let filters: Vec<Vec<u8>> = kv
        .scan(&[keys::T_ID_FILTER], &[keys::T_ID_FILTER + 1])
        .map(|pair| pair.map(|(k, _)| k))
        .collect::<std::result::Result<_, _>>()?;
    for key in filters {
        let sid =
            keys::last_u64(&key).ok_or_else(|| GroveError::Corrupt("id filter key".into()))?;
        let what = || format!("session {sid}: id packs");
        let ids = ids_under(&keys::session_prefix(keys::T_ID_PACK, sid), &what)?;
        let mut batch = WriteBatch::new();
        batch.put(
            key,
            IdFilter::build(ids.len(), ids.iter().map(String::as_str)).encode(),
        );
        inner.commit(batch, Durability::None)?;
    }
    Ok(())
}
