//! A session handle: reads of the log and the tree, and the two primitive writes
//! (append an entry, record a leaf move), under the session's writer lock. The log row is
//! written before the index rows and the head that point at it (see `crate::log::write`), so a
//! reader never sees an index without its entry.

use std::sync::Arc;

use grove_codec::entry::Envelope;
use grove_codec::op::OpKind;
use grove_codec::record::{self, LabelRecord, LeafTarget, NodeRecord, SessionRecord};
use grove_codec::writer::NewEntry;
use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::WriteBatch;
use crate::log::index_packs;
use crate::log::write::{transact, Appended, LeaseCheck, Staged};
use crate::store::{Durability, Inner};

/// One record of a session log: an entry or a leaf record, with its stored line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Position in the session log.
    pub seq: u64,
    /// The indexed metadata.
    pub node: NodeRecord,
    /// The line exactly as exported.
    pub line: String,
}

impl Entry {
    /// The entry id.
    pub fn id(&self) -> &str {
        &self.node.id
    }

    /// The entry's kind.
    pub fn kind(&self) -> EntryKind {
        EntryKind::from_tag(self.node.kind).unwrap_or(EntryKind::Unknown)
    }

    /// Whether this is a leaf record rather than a tree entry.
    pub fn is_leaf_record(&self) -> bool {
        self.kind() == EntryKind::Leaf
    }

    /// The validated common fields, parsed from the line.
    pub fn envelope(&self) -> Result<Envelope> {
        Envelope::parse(&self.line)
            .map_err(|e| GroveError::Corrupt(format!("entry {}: {e}", self.node.id)))
    }

    /// The `parentId` as written (`None` for null or "").
    pub fn parent_id(&self) -> Option<String> {
        self.envelope().ok().and_then(|e| e.parent_id)
    }

    /// The entry `timestamp` string.
    pub fn timestamp(&self) -> String {
        self.envelope().map(|e| e.timestamp).unwrap_or_default()
    }
}

/// The outcome of [`Session::append_if`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The entry was appended; its id.
    Appended(String),
    /// The leaf had moved; nothing was written.
    Conflict {
        /// Where the leaf is now.
        actual_leaf: Option<String>,
    },
}

/// Per-call options of [`Session::append_with`].
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// Use this id instead of a generated one (it must be new to the session).
    pub id: Option<String>,
    /// Use this timestamp instead of now.
    pub timestamp: Option<String>,
    /// Override the store's durability for this call.
    pub durability: Option<Durability>,
}

/// Per-call options of [`Session::append_exact_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ExactOptions {
    /// Override the store's durability for this call.
    pub durability: Option<Durability>,
    /// Leave the leaf where it was instead of moving it to the new entry: the operation also
    /// writes a leaf record moving it back, so that the log read as pi reads it (its last
    /// record says where the leaf is) agrees. An entry saved beside the conversation (a
    /// LangGraph checkpoint's pending writes) keeps the leaf of a writer that moved on
    /// meanwhile. Refused for a `leaf` line, whose whole point is moving the leaf.
    pub keep_leaf: bool,
}

/// A handle on one session. Cheap to clone; handles of the same store share writer locks.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
    pub(crate) sid: u64,
    pub(crate) record: Arc<SessionRecord>,
    /// Records `0 .. packed` are stored in log packs and their ids in id packs (an
    /// imported session); the rest in single rows. Fixed when the session is written.
    pub(crate) packed: u64,
    /// Who this handle's operations are stamped with; `None`: [`crate::store::DEFAULT_ACTOR`].
    pub(crate) actor: Option<Arc<str>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.record.id)
            .finish()
    }
}

impl Session {
    /// A handle on a session without packs (one just created).
    pub(crate) fn new(inner: Arc<Inner>, sid: u64, record: SessionRecord) -> Session {
        Session {
            inner,
            sid,
            record: Arc::new(record),
            packed: 0,
            actor: None,
        }
    }

    /// This handle, stamping its operations with `actor`.
    pub fn with_actor(mut self, actor: &str) -> Session {
        self.actor = Some(Arc::from(actor));
        self
    }

    /// This handle, stamping its operations with the actor of `store`'s handle.
    pub(crate) fn with_actor_of(mut self, store: &crate::Store) -> Session {
        self.actor = store.actor.clone();
        self
    }

    /// Who this handle's operations are stamped with.
    pub fn actor(&self) -> &str {
        self.actor.as_deref().unwrap_or(crate::store::DEFAULT_ACTOR)
    }

    /// A handle on a stored session whose record and packed count are known.
    pub(crate) fn known(
        inner: Arc<Inner>,
        sid: u64,
        record: Arc<SessionRecord>,
        packed: u64,
    ) -> Session {
        Session {
            inner,
            sid,
            record,
            packed,
            actor: None,
        }
    }

    /// A handle on a stored session: reads its packed count (one point read). Its state
    /// (head, id index) is read, and a last record a crash interrupted completed, the first
    /// time the process needs it ([`crate::log::ids`]).
    pub(crate) fn open(inner: Arc<Inner>, sid: u64, record: SessionRecord) -> Result<Session> {
        let packed = packed_count(&inner, sid)?;
        Ok(Session {
            packed,
            ..Session::new(inner, sid, record)
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The session's stored description (header line, cwd, lineage).
    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// The raw log row at `seq`, or `Corrupt` when it is missing.
    fn row(&self, seq: u64) -> Result<Vec<u8>> {
        self.read_row(seq, <[u8]>::to_vec)?
            .ok_or_else(|| GroveError::Corrupt(format!("missing log record {seq}")))
    }

    /// The node record at `seq`.
    pub(crate) fn node(&self, seq: u64) -> Result<NodeRecord> {
        self.node_if_present(seq)?
            .ok_or_else(|| GroveError::Corrupt(format!("missing log record {seq}")))
    }

    /// The node record at `seq`, if that log row exists. Only the node part of the row is
    /// decoded, in place: the line is not copied.
    pub(crate) fn node_if_present(&self, seq: u64) -> Result<Option<NodeRecord>> {
        self.read_row(seq, |row| decode_node(seq, row))?.transpose()
    }

    /// The stored line at `seq`.
    pub(crate) fn line(&self, seq: u64) -> Result<String> {
        Ok(self.entry_at(seq)?.line)
    }

    /// The record at `seq`.
    pub fn entry_at(&self, seq: u64) -> Result<Entry> {
        decode_row(self.inner.kv.as_ref(), self.id(), seq, self.row(seq)?)
    }

    /// The sequence number of the tree entry `id`; leaf-record ids are not entries.
    pub(crate) fn seq_of(&self, id: &str) -> Result<Option<(u64, NodeRecord)>> {
        match self.seq_of_any(id)? {
            None => Ok(None),
            Some(seq) => {
                let node = self.node(seq)?;
                Ok((node.kind != EntryKind::Leaf.tag()).then_some((seq, node)))
            }
        }
    }

    /// Resolves `id` to a tree entry, or `EntryNotFound`.
    pub(crate) fn require_seq(&self, id: &str) -> Result<(u64, NodeRecord)> {
        self.seq_of(id)?
            .ok_or_else(|| GroveError::EntryNotFound(id.to_owned()))
    }

    /// The entry with this id (the last one, if the id was duplicated on import).
    pub fn entry(&self, id: &str) -> Result<Entry> {
        let (seq, node) = self.require_seq(id)?;
        Ok(Entry {
            seq,
            node,
            line: self.line(seq)?,
        })
    }

    /// Resolves an entry id or unique id prefix; `@` is the leaf and `@-` its parent.
    pub fn resolve_entry(&self, spec: &str) -> Result<Option<String>> {
        if spec == "@" {
            return self.leaf();
        }
        if spec == "@-" {
            return match self.leaf()? {
                None => Err(GroveError::InvalidArgument(
                    "the leaf is the root position".into(),
                )),
                Some(leaf) => Ok(self.entry(&leaf)?.parent_id()),
            };
        }
        if spec == "root" {
            return Ok(None);
        }
        if self.seq_of(spec)?.is_some() {
            return Ok(Some(spec.to_owned()));
        }
        let mut matches = Vec::new();
        // Leaf records share the id space: read enough candidates to find six entries.
        let mut limit = 6;
        loop {
            let candidates = self.ids_with_prefix(spec, limit)?;
            matches.clear();
            for (id, seq) in &candidates {
                if self.node(*seq)?.kind != EntryKind::Leaf.tag() {
                    matches.push(id.clone());
                    if matches.len() > 5 {
                        break;
                    }
                }
            }
            if matches.len() > 5 || candidates.len() < limit {
                break;
            }
            limit *= 4;
        }
        match matches.len() {
            0 => Err(GroveError::EntryNotFound(spec.to_owned())),
            1 => Ok(matches.pop()),
            _ => Err(GroveError::AmbiguousPrefix {
                what: "entry",
                prefix: spec.to_owned(),
                candidates: matches.join(", "),
            }),
        }
    }

    /// Every record of the log in order: entries and leaf records.
    pub fn log(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log_range(0, u64::MAX).entries(self.id())
    }

    /// `n` distinct 8-hex entry ids unused in the session right now (pi's `createEntryId`,
    /// in bulk): nothing reserves them, so they stay unused for a caller that is the
    /// session's only writer; an id taken meanwhile is refused by the append that uses it.
    pub fn fresh_ids(&self, n: usize) -> Result<Vec<String>> {
        let mut out: Vec<String> = Vec::with_capacity(n);
        while out.len() < n {
            let id = crate::core::util::random_entry_id();
            if !out.contains(&id) && !self.id_taken(&id)? {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// The records of the log from position `start` on (0-based: pi's `afterEntrySeq`),
    /// entries and leaf records, in order; read as they are consumed.
    pub fn log_from(&self, start: u64) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log_range(start, u64::MAX).entries(self.id())
    }

    /// The log record `id`, an entry or a leaf record (pi's `getEntry`, which finds both),
    /// or `EntryNotFound`.
    pub fn log_record(&self, id: &str) -> Result<Entry> {
        match self.seq_of_any(id)? {
            Some(seq) => self.entry_at(seq),
            None => Err(GroveError::EntryNotFound(id.to_owned())),
        }
    }

    /// The tree entries in log order (leaf records left out; shadowed duplicates kept).
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log()
            .filter(|e| !matches!(e, Ok(e) if e.is_leaf_record()))
    }

    /// The children of `parent` (`None`: the roots), in log order.
    pub fn children(&self, parent: Option<&str>) -> Result<Vec<Entry>> {
        let pseq = match parent {
            None => keys::ROOT,
            Some(id) => self.require_seq(id)?.0,
        };
        self.children_seqs(pseq)?
            .into_iter()
            .map(|s| self.entry_at(s))
            .collect()
    }

    pub(crate) fn children_seqs(&self, pseq: u64) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        // The implicit first child: the next record, when it continues this entry's run.
        if pseq != keys::ROOT {
            if let Some(next) = self.node_if_present(pseq + 1)? {
                if next.kind != EntryKind::Leaf.tag()
                    && keys::child_row(&next, pseq + 1).is_none()
                    && next.parent == grove_codec::record::Parent::Seq(pseq)
                {
                    out.push(pseq + 1);
                }
            }
        }
        // Rows of an import (packs), then of appends (keys): appended seqs are the larger.
        out.extend(index_packs::packed_children(
            self.inner.kv.as_ref(),
            self.sid,
            pseq,
        )?);
        let start = keys::children_of(self.sid, pseq);
        let end = keys::prefix_end(&start);
        for pair in self.inner.kv.scan(&start, &end) {
            let (k, _) = pair?;
            out.push(keys::last_u64(&k).ok_or_else(|| GroveError::Corrupt("child key".into()))?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The active leaf's id (`None`: the root position).
    pub fn leaf(&self) -> Result<Option<String>> {
        Ok(match self.head()?.leaf {
            None => None,
            Some(seq) => Some(self.node(seq)?.id.into()),
        })
    }

    /// Appends an entry as a child of the active leaf; it becomes the leaf. Returns its id.
    pub fn append(&self, entry: NewEntry) -> Result<String> {
        self.append_with(entry, AppendOptions::default())
    }

    /// [`Session::append`] with per-call options. The id is `options.id`, else the `id` of a
    /// [`NewEntry::Raw`] object (both given, they must agree), else a fresh one. A given id
    /// must be new to the session, unless it names this same entry (same type and fields,
    /// `parentId` and `timestamp` aside; the timestamp compared when one is given): then the
    /// append is a retry of one that was applied, and answers its id, writing nothing. Under
    /// another entry it is [`GroveError::DuplicateId`].
    pub fn append_with(&self, entry: NewEntry, options: AppendOptions) -> Result<String> {
        let durability = options.durability.unwrap_or(self.inner.durability);
        transact(self, OpKind::Append, durability, None, |txn| {
            Ok(
                match txn.append(&entry, options.id.clone(), options.timestamp.clone())? {
                    Appended::New(id) => Staged::Commit(id),
                    Appended::Stored { id, .. } => Staged::Abandon(id),
                },
            )
        })
    }

    /// Appends the caller's exact entry, one pi entry object as JSON text (pi's
    /// `SessionStorage.appendEntry`): its `id`, `parentId` and `timestamp` are kept and its
    /// bytes stored as given. The id must be new to the session ([`GroveError::DuplicateId`])
    /// and the parent one of its entries or null ([`GroveError::RejectedEntry`]). The entry
    /// becomes the leaf; a `leaf` object moves the leaf to its `targetId` (an entry or null).
    /// Returns the id. A forked session's first entry, whose parent lies in the source
    /// session, is carried by [`crate::Store::fork`] and import, not by this call.
    pub fn append_exact(&self, entry: &str, durability: Option<Durability>) -> Result<String> {
        self.append_exact_with(
            entry,
            ExactOptions {
                durability,
                ..ExactOptions::default()
            },
        )
    }

    /// [`Session::append_exact`] with per-call options.
    pub fn append_exact_with(&self, entry: &str, options: ExactOptions) -> Result<String> {
        let durability = options.durability.unwrap_or(self.inner.durability);
        transact(self, OpKind::Append, durability, None, |txn| {
            let before = txn.head.leaf;
            let seq = txn.head.next_seq;
            let id = match txn.append_exact(entry.trim().to_owned())? {
                Appended::New(id) => id,
                // The same line is stored under its id: a retry.
                Appended::Stored { id, .. } => return Ok(Staged::Abandon(id)),
            };
            if options.keep_leaf {
                if txn.node(seq)?.kind == EntryKind::Leaf.tag() {
                    return Err(GroveError::RejectedEntry {
                        session: self.id().to_owned(),
                        reason: format!(
                            "{id} is a leaf record: it moves the leaf, which keepLeaf forbids"
                        ),
                    });
                }
                txn.move_leaf(before)?;
            }
            Ok(Staged::Commit(id))
        })
    }

    /// Optimistic append: appends only if the leaf is still `expected_leaf` (`None`: the root
    /// position). When another writer moved the leaf meanwhile, nothing is written and the
    /// outcome says where the leaf is now — a value, not an error. An entry object's `id` is
    /// used as [`Session::append_with`] uses it; the same entry stored under it as a child of
    /// `expected_leaf` (a retry of an append that was applied) is `Appended` again.
    pub fn append_if(&self, expected_leaf: Option<&str>, entry: NewEntry) -> Result<AppendOutcome> {
        transact(self, OpKind::Append, self.inner.durability, None, |txn| {
            if let Some(id) = entry.given_id().ok().flatten() {
                if txn
                    .stored_as(&entry, &id, None)?
                    .is_some_and(|p| p.as_deref() == expected_leaf)
                {
                    return Ok(Staged::Abandon(AppendOutcome::Appended(id)));
                }
            }
            let actual = match txn.head.leaf {
                None => None,
                Some(seq) => Some(txn.node(seq)?.id.into()),
            };
            if actual.as_deref() != expected_leaf {
                return Ok(Staged::Abandon(AppendOutcome::Conflict {
                    actual_leaf: actual,
                }));
            }
            let id = txn.append(&entry, None, None)?.staged()?;
            Ok(Staged::Commit(AppendOutcome::Appended(id)))
        })
    }

    /// Appends several entries as a chain (each the child of the one before), atomically: after
    /// a crash either all of them are in the log or none is (up to 256 entries and 128 KiB
    /// are one log value, more one atomic batch; docs/format.md, "Batches"). Returns their ids.
    /// An entry object's `id` is used as [`Session::append_with`] uses it. A batch whose every
    /// entry names the same entry stored under its id, as the same chain (a retry of a batch
    /// that was applied), answers their ids and writes nothing; a batch of which only some are
    /// stored is [`GroveError::InvalidArgument`] naming the first.
    pub fn append_many(&self, entries: &[NewEntry]) -> Result<Vec<String>> {
        transact(
            self,
            OpKind::AppendMany,
            self.inner.durability,
            None,
            |txn| {
                txn.reserve(entries.len());
                let appended = entries
                    .iter()
                    .map(|e| txn.append(e, None, None))
                    .collect::<Result<Vec<_>>>()?;
                let ids: Vec<String> = appended.iter().map(|a| a.id().to_owned()).collect();
                let stored = |(i, a): (usize, &Appended)| match a {
                    Appended::Stored { parent, .. } => {
                        i == 0 || parent.as_deref() == ids.get(i - 1).map(String::as_str)
                    }
                    Appended::New(_) => false,
                };
                if !appended.is_empty() && appended.iter().enumerate().all(stored) {
                    return Ok(Staged::Abandon(ids));
                }
                if let Some(Appended::Stored { id, .. }) = appended
                    .into_iter()
                    .find(|a| matches!(a, Appended::Stored { .. }))
                {
                    return Err(GroveError::InvalidArgument(format!(
                        "entry id {} is stored already, but not the whole batch: a batch is \
                         answered as stored only when all of its entries are, as one chain (a \
                         retry); give the new entries new ids",
                        grove_codec::ids::show_id(&id)
                    )));
                }
                Ok(Staged::Commit(ids))
            },
        )
    }

    /// Adds the label-index update of a `label` entry at `seq` (spec §6.1: trimmed; blank
    /// or non-string clears).
    pub(crate) fn label_update(&self, batch: &mut WriteBatch, line: &str, target: &str, seq: u64) {
        let key = keys::label(self.sid, target);
        match crate::log::labels::label_value(line) {
            Some((_, label)) => batch.put(key, record::encode(&LabelRecord { label, set_by: seq })),
            None => batch.delete(key),
        }
    }

    /// Moves the active leaf (`None`: the root position) and records the move as a leaf
    /// record, even when the target already is the leaf (spec §7.1). Refused with `Busy`
    /// while a turn or a navigation holds the session (use [`crate::TurnGuard::move_to`]).
    pub fn move_to(&self, target: Option<&str>) -> Result<()> {
        self.check_idle()?;
        let idle = |tries| self.idle_lease(tries);
        self.move_to_with(target, None, NO_LABEL, None, OpKind::Move, &idle)
            .map(|_| ())
    }

    /// Moves the leaf and, with `summary`, appends a branch summary at the target in the
    /// same atomic write (one log value, spec §7.1), then, with `label`, the label entry it
    /// makes from the summary's id. One operation of kind `op`. Returns the summary's id.
    pub(crate) fn move_to_with(
        &self,
        target: Option<&str>,
        summary: Option<&NewEntry>,
        label: Option<impl Fn(Option<&str>) -> NewEntry>,
        durability: Option<Durability>,
        op: OpKind,
        lease: LeaseCheck<'_>,
    ) -> Result<Option<String>> {
        let durability = durability.unwrap_or(self.inner.durability);
        transact(self, op, durability, Some(lease), |txn| {
            let target_seq = match target {
                None => None,
                Some(id) => Some(txn.require_entry(id)?),
            };
            txn.move_leaf(target_seq)?;
            let summary_id = match summary {
                None => None,
                Some(entry) => Some(txn.append(entry, None, None)?.staged()?),
            };
            if let Some(label) = &label {
                txn.append(&label(summary_id.as_deref()), None, None)?
                    .staged()?;
            }
            Ok(Staged::Commit(summary_id))
        })
    }

    /// The leaf history: every leaf record in log order, as (record id, target id).
    pub fn leaf_history(&self) -> Result<Vec<(String, Option<String>)>> {
        let mut out = Vec::new();
        for seq in index_packs::leaf_seqs(self.inner.kv.as_ref(), self.sid)? {
            let node = self.node(seq)?;
            let target = match node.leaf_target {
                Some(LeafTarget::Seq(t)) => Some(self.node(t)?.id.into()),
                _ => None,
            };
            out.push((node.id.into(), target));
        }
        Ok(out)
    }
}

/// No label for [`Session::move_to_with`].
pub(crate) const NO_LABEL: Option<fn(Option<&str>) -> NewEntry> = None;

/// The packed count of session `sid` (0 when it has no packs).
pub(crate) fn packed_count(inner: &Inner, sid: u64) -> Result<u64> {
    match inner.kv.get(&keys::packed(sid))? {
        None => Ok(0),
        Some(v) => keys::u64_value(&v)
            .ok_or_else(|| GroveError::Corrupt(format!("packed count of session {sid}"))),
    }
}

/// Decodes the node record of the log row at `seq`.
pub(crate) fn decode_node(seq: u64, row: &[u8]) -> Result<NodeRecord> {
    record::decode_log_node(row).map_err(|e| GroveError::Corrupt(format!("log record {seq}: {e}")))
}

/// Decodes the log row at `seq` of session `session` into its node record and line, and
/// checks the line: against the CRC-32 its node record holds (rows of store layout 9 and
/// later), else against its content hash ([`record::LogRow::check_line`]). Every line the
/// engine hands out, or copies into another session, passes here. A line that does not match
/// is `Corrupt`, naming the session, the entry and its seq; its bytes are not handed out.
pub(crate) fn decode_row(
    kv: &dyn crate::kv::Kv,
    session: &str,
    seq: u64,
    row: Vec<u8>,
) -> Result<Entry> {
    decode(kv, seq, row, Some(session))
}

/// [`decode_row`] without the line check, for rows whose line is covered otherwise or not
/// handed out: materialized view rows (copies of checked lines, under their chunk's
/// checksum) and the last log value a session load completes index rows from.
pub(crate) fn decode_row_unchecked(
    kv: &dyn crate::kv::Kv,
    seq: u64,
    row: Vec<u8>,
) -> Result<Entry> {
    decode(kv, seq, row, None)
}

/// [`decode_row`], with the operation stamp the record carries.
pub(crate) fn decode_row_stamped(
    kv: &dyn crate::kv::Kv,
    session: &str,
    seq: u64,
    row: Vec<u8>,
) -> Result<(Entry, Option<grove_codec::op::OpStamp>)> {
    decode_stamped(kv, seq, row, Some(session))
}

/// Splits and decodes a log row; with `check`, the session whose line is checked.
fn decode(kv: &dyn crate::kv::Kv, seq: u64, row: Vec<u8>, check: Option<&str>) -> Result<Entry> {
    decode_stamped(kv, seq, row, check).map(|(entry, _)| entry)
}

/// [`decode`] with the record's operation stamp. A line stored cut (its large values in the
/// payload store) is joined back ([`crate::core::payloads`]).
fn decode_stamped(
    kv: &dyn crate::kv::Kv,
    seq: u64,
    mut row: Vec<u8>,
    check: Option<&str>,
) -> Result<(Entry, Option<grove_codec::op::OpStamp>)> {
    let parts = record::decode_log(&row)
        .map_err(|e| GroveError::Corrupt(format!("log record {seq}: {e}")))?;
    if let Some(session) = check {
        if let Err(failed) = parts.check_line() {
            return Err(GroveError::Corrupt(format!(
                "session {session}, entry {} (record {seq}): the stored line does not match its \
                 {failed}",
                parts.node.id
            )));
        }
    }
    let not_utf8 = || GroveError::Corrupt(format!("line {seq} is not UTF-8"));
    if grove_codec::splice::is_spliced(parts.line) {
        let line = crate::core::payloads::expand(kv, parts.line).map_err(|e| {
            GroveError::Corrupt(format!("entry {} (record {seq}): {e}", parts.node.id))
        })?;
        let line = String::from_utf8(line.into_owned()).map_err(|_| not_utf8())?;
        return Ok((
            Entry {
                seq,
                node: parts.node,
                line,
            },
            parts.op,
        ));
    }
    // The line is the row's tail: keep the buffer, drop its head.
    let head = row.len() - parts.line.len();
    let (node, stamp) = (parts.node, parts.op);
    row.drain(..head);
    let line = String::from_utf8(row).map_err(|_| not_utf8())?;
    Ok((Entry { seq, node, line }, stamp))
}
