//! The write path. A [`Txn`] stages the records of one operation (an append, a leaf move, a
//! move with its branch summary, a batch of appends) over an overlay of what it has staged so
//! far, then commits them. Callers hold the session's writer lock for the whole transaction.
//!
//! The log is the commit point (docs/design.md, "Commit protocol"). A transaction whose
//! records fit one log value — a single row, or one batch — is written as ordered single
//! writes: the value first, then the index rows its records imply. The backend recovers them
//! as a prefix after a crash: only a session's last log value can be incomplete, and
//! [`repair_last`] completes its records when a process first loads the session. The head
//! (next seq, leaf, counts) is a fold of the log, kept in memory; the stored head is a
//! checkpoint of it, written with each id run ([`crate::log::ids`]) and with every transaction of
//! several log values, which is one atomic batch.

use std::collections::HashMap;

use compact_str::CompactString;

use grove_codec::digest;
use grove_codec::op::{OpKind, OpStamp};
use grove_codec::pack::{LogPackWriter, LOG_PACK_BYTES, LOG_PACK_RECORDS};
use grove_codec::record::{self, HeadRecord, LeafTarget, NodeRecord, Parent};
use grove_codec::writer::{leaf_line, NewEntry, RenderedLine};
use grove_codec::{EntryKind, Role};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::{fenced_out, FENCE_TRIES};
use crate::core::util;
use crate::kv::Durability;
use crate::kv::WriteBatch;
use crate::log::catalogue;
use crate::log::fold;
use crate::log::handle::Handle;
use crate::log::tip::{Tip, TIP_NODES};

/// One operation's staged writes.
pub(crate) struct Txn<'s> {
    session: &'s Handle,
    pub(crate) head: HeadRecord,
    /// Staged log rows, in seq order, in packs of the log-pack limits: `(first seq, rows)`.
    packs: Vec<(u64, LogPackWriter)>,
    /// Staged index rows, in the order of their records.
    batch: WriteBatch,
    /// The seq of the first staged record: records `first ..` are staged, in order.
    first: u64,
    /// Their node records.
    nodes: Vec<NodeRecord>,
    /// Records the caller said it will stage ([`Txn::reserve`]), to size the packs.
    expected: usize,
    ids: HashMap<CompactString, u64>,
    /// Bytes of the log rows staged.
    bytes: u64,
    /// The writer's [`Tip`], taken for the transaction (nodes read are remembered in it).
    tip: std::cell::RefCell<Tip>,
    /// The operation this transaction is: its first record carries the stamp.
    op: OpKind,
    /// The payloads its lines reference that are not stored yet: written before the log.
    payloads: WriteBatch,
    staged: crate::core::payloads::SeenPayloads,
    /// Held from the first payload check to the commit: the payload collection waits.
    _gate: parking_lot::RwLockReadGuard<'s, ()>,
}

impl<'s> Txn<'s> {
    /// Starts a transaction on the session's current head (from the writer's `tip` when it
    /// has one).
    pub(crate) fn begin(session: &'s Handle, tip: &mut Tip, op: OpKind) -> Result<Txn<'s>> {
        let mut tip = std::mem::take(tip);
        let head = match tip.head.take() {
            Some(h) => h,
            None => session.head()?,
        };
        // The view a read built goes out with this write (a cache: its failure is not the
        // writer's).
        session
            .logs
            .before_write(session.sid, &session.record, session.packed, head.leaf);
        Ok(Txn {
            session,
            first: head.next_seq,
            head,
            tip: std::cell::RefCell::new(tip),
            packs: Vec::new(),
            batch: WriteBatch::new(),
            nodes: Vec::new(),
            expected: 1,
            ids: HashMap::new(),
            bytes: 0,
            op,
            payloads: WriteBatch::new(),
            staged: Default::default(),
            _gate: session.inner.payload_gate.read_recursive(),
        })
    }

    /// Makes room for `records` more staged records.
    pub(crate) fn reserve(&mut self, records: usize) {
        self.nodes.reserve(records);
        self.ids.reserve(records);
        self.expected = self.nodes.len() + records;
    }

    pub(crate) fn node(&self, seq: u64) -> Result<NodeRecord> {
        let staged = seq
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.nodes.get(i));
        if let Some(n) = staged {
            return Ok(n.clone());
        }
        if let Some(n) = self.tip.borrow().node(seq) {
            return Ok(n.clone());
        }
        let n = self.session.node(seq)?;
        self.tip.borrow_mut().remember(seq, n.clone());
        Ok(n)
    }

    fn seq_of_any(&self, id: &str) -> Result<Option<u64>> {
        match self.ids.get(id) {
            Some(&s) => Ok(Some(s)),
            None => self.session.seq_of_any(id),
        }
    }

    /// Whether `id` is staged in this transaction or stored.
    fn id_taken(&self, id: &str) -> Result<bool> {
        Ok(self.ids.contains_key(id) || self.session.id_taken(id)?)
    }

    /// The tree entry `id` (staged or stored), or `EntryNotFound`.
    pub(crate) fn require_entry(&self, id: &str) -> Result<u64> {
        match self.seq_of_any(id)? {
            Some(seq) if self.node(seq)?.kind != EntryKind::Leaf.tag() => Ok(seq),
            _ => Err(GroveError::EntryNotFound(id.to_owned())),
        }
    }

    /// A new 8-hex id unused in the session and in this transaction (spec §2.6).
    pub(crate) fn fresh_id(&self) -> Result<String> {
        for _ in 0..100 {
            let id = util::random_entry_id();
            if !self.id_taken(&id)? {
                return Ok(id);
            }
        }
        loop {
            let id = util::new_session_id();
            if !self.id_taken(&id)? {
                return Ok(id);
            }
        }
    }

    /// The given timestamp, or one not below the head's last (which `index_record` advances).
    fn timestamp(&self, given: Option<String>) -> String {
        given.unwrap_or_else(|| util::timestamp_after(self.head.last_timestamp.as_deref()))
    }

    /// Stages the log row of a new record and everything it implies (index rows, head).
    fn put_record(
        &mut self,
        seq: u64,
        line: String,
        node: NodeRecord,
        written: Written<'_>,
    ) -> Result<()> {
        if !matches!(self.packs.last(), Some((_, pack)) if !pack.is_full()) {
            // Sized for the records still expected, as large as this one.
            let rows = self
                .expected
                .saturating_sub(self.nodes.len())
                .clamp(1, LOG_PACK_RECORDS);
            let row = line.len() + node.id.len() + 192;
            let bytes = (rows * row).min(LOG_PACK_BYTES + row);
            self.packs
                .push((seq, LogPackWriter::with_capacity(rows, bytes)));
        }
        if let Some((_, pack)) = self.packs.last_mut() {
            let before = pack.body_len();
            // The operation's stamp rides on its first record (docs/format.md, "NodeRecord").
            let stamp = self.nodes.is_empty().then(|| {
                OpStamp::new(
                    op_kind(self.op, written.kind),
                    self.session.actor(),
                    util::now_ms(),
                )
            });
            // Large string values go to the payload store; the row keeps the cut line.
            let stored = self.session.inner.stage_line(
                line.as_bytes(),
                &mut self.payloads,
                &mut self.staged,
            )?;
            let stored = stored.as_deref().unwrap_or(line.as_bytes());
            pack.push_log_stamped(&node, stored, stamp.as_ref())
                .map_err(|e| GroveError::InvalidArgument(format!("entry {}: {e}", node.id)))?;
            self.bytes += (pack.body_len() - before) as u64;
        }
        index_record(
            self.session,
            &mut self.batch,
            &mut self.head,
            seq,
            &node,
            &line,
            written,
        );
        self.ids.insert(node.id.clone(), seq);
        self.nodes.push(node);
        Ok(())
    }

    /// The entry's id: the one given to the append, the one its object names (they must
    /// agree), or none (a fresh one is made).
    fn given_id(entry: &NewEntry, id: Option<String>) -> Result<Option<String>> {
        let named = entry
            .given_id()
            .map_err(|e| GroveError::InvalidArgument(e.0))?;
        match (id, named) {
            (Some(a), Some(b)) if a != b => Err(GroveError::InvalidArgument(format!(
                "the append's id {} and the entry's id {} differ; give one",
                grove_codec::ids::show_id(&a),
                grove_codec::ids::show_id(&b)
            ))),
            (Some(id), _) | (None, Some(id)) => Ok(Some(id)),
            (None, None) => Ok(None),
        }
    }

    /// Whether `entry`, appended with the taken id `id`, is the entry already stored under it
    /// (a retry of an append that was applied): same type and fields, its `parentId` and
    /// `timestamp` aside (the timestamp compared when `timestamp` is given). The stored
    /// entry's parent when it is; `None` when it is not, or is staged by this transaction.
    pub(crate) fn stored_as(
        &self,
        entry: &NewEntry,
        id: &str,
        timestamp: Option<&str>,
    ) -> Result<Option<Option<String>>> {
        if self.ids.contains_key(id) {
            return Ok(None);
        }
        let Some(seq) = self.session.seq_of_any(id)? else {
            return Ok(None);
        };
        if self.node(seq)?.kind == EntryKind::Leaf.tag() {
            return Ok(None);
        }
        let line = self.session.line(seq)?;
        let Ok(env) = grove_codec::Envelope::parse(&line) else {
            return Ok(None);
        };
        if timestamp.is_some_and(|t| t != env.timestamp) {
            return Ok(None);
        }
        let same = entry
            .render_line(id, env.parent_id.as_deref(), &env.timestamp)
            .is_ok_and(|r| r.line == line);
        Ok(same.then_some(env.parent_id))
    }

    /// Stages an entry as a child of the (staged) leaf; it becomes the leaf. An id given (in
    /// `id` or in the entry object) is used when it is new to the session; when it names the
    /// same entry already stored ([`Txn::stored_as`]), nothing is staged and the answer says
    /// so; any other entry under it is [`GroveError::DuplicateId`].
    pub(crate) fn append(
        &mut self,
        entry: &NewEntry,
        id: Option<String>,
        timestamp: Option<String>,
    ) -> Result<Appended> {
        let parent = match self.head.leaf {
            None => None,
            Some(seq) => Some((seq, self.node(seq)?)),
        };
        let id = match Self::given_id(entry, id)? {
            Some(id) => {
                grove_codec::check_id("entry", &id)?;
                if self.id_taken(&id)? {
                    return match self.stored_as(entry, &id, timestamp.as_deref())? {
                        Some(parent) => Ok(Appended::Stored { id, parent }),
                        None => Err(GroveError::DuplicateId(id)),
                    };
                }
                id
            }
            None => self.fresh_id()?,
        };
        let timestamp = self.timestamp(timestamp);
        let parent_id = parent.as_ref().map(|(_, n)| n.id.as_str());
        let RenderedLine {
            line,
            kind,
            target_id,
            message,
        } = entry
            .render_line(&id, parent_id, &timestamp)
            .map_err(|e| GroveError::InvalidArgument(e.0))?;
        match kind {
            EntryKind::Leaf => {
                return Err(GroveError::InvalidArgument(
                    "leaf lines are written by move_to, not appended".into(),
                ))
            }
            EntryKind::Message(Role::BranchSummary | Role::CompactionSummary) => {
                return Err(GroveError::InvalidArgument(
                    "branchSummary and compactionSummary messages are synthetic; append a \
                     branch_summary or compaction entry instead"
                        .into(),
                ))
            }
            _ => {}
        }
        grove_codec::shape::check_entry(&line).map_err(|reason| self.rejected(reason))?;
        let seq = self.head.next_seq;
        if kind == EntryKind::Label {
            self.require_entry(target_id.as_deref().unwrap_or_default())?;
        }
        let parent_jump = match parent.as_ref().and_then(|(_, n)| n.jump) {
            Some(j) => Some(self.node(j.seq)?),
            None => None,
        };
        let mut node = fold::derive_node(
            seq,
            &id,
            kind,
            parent
                .as_ref()
                .map_or(Parent::Root, |(s, _)| Parent::Seq(*s)),
            parent.as_ref().map(|(_, n)| n),
            parent_jump.as_ref(),
            digest::content_hash(line.as_bytes()),
        );
        node.message = message;
        let written = Written {
            kind,
            target_id: target_id.as_deref(),
            timestamp: &timestamp,
        };
        self.put_record(seq, line, node, written)?;
        Ok(Appended::New(id))
    }

    /// Stages the caller's exact entry line (pi's `SessionStorage.appendEntry`): its id,
    /// `parentId` and `timestamp` as given and its bytes as they are. The id must be new to
    /// the session; the parent must be one of its entries or null (a `leaf` line's parent, the
    /// leaf before its move, may also be a leaf record or unknown, as import takes it). It
    /// becomes the leaf; a `leaf` line moves the leaf to its `targetId`, which must be an entry
    /// or null. The same line stored under its id already (a retry) stages nothing. Returns
    /// the id.
    pub(crate) fn append_exact(&mut self, line: String) -> Result<Appended> {
        let invalid = |reason: String| GroveError::RejectedEntry {
            session: self.session.id().to_owned(),
            reason,
        };
        if line.contains(['\n', '\r']) {
            return Err(invalid(
                "an entry must be one line: its JSON holds a line break outside its strings".into(),
            ));
        }
        let env = grove_codec::Envelope::parse(&line).map_err(invalid)?;
        grove_codec::check_id("entry", &env.id)?;
        if self.id_taken(&env.id)? {
            // The same bytes again (a retry of an append that was applied): nothing to stage.
            let stored = match self.session.seq_of_any(&env.id)? {
                Some(seq) if !self.ids.contains_key(env.id.as_str()) => {
                    Some(self.session.line(seq)?)
                }
                _ => None,
            };
            return match stored {
                Some(stored) if stored == line => Ok(Appended::Stored {
                    id: env.id,
                    parent: env.parent_id,
                }),
                _ => Err(GroveError::DuplicateId(env.id)),
            };
        }
        if env.kind != EntryKind::Leaf {
            grove_codec::shape::check_entry(&line).map_err(invalid)?;
        }
        let seq = self.head.next_seq;
        let content = digest::content_hash(line.as_bytes());
        let node = if env.kind == EntryKind::Leaf {
            let target = match &env.target_id {
                None => LeafTarget::Null,
                Some(t) => LeafTarget::Seq(self.require_entry(t)?),
            };
            let previous = match &env.parent_id {
                None => None,
                Some(p) => self.seq_of_any(p)?,
            };
            fold::leaf_node(&env.id, previous, target, content)
        } else {
            let parent = match &env.parent_id {
                None => None,
                Some(p) if *p == env.id => {
                    return Err(invalid(format!(
                        "entry {} names itself as its parent",
                        env.id
                    )))
                }
                Some(p) => match self.seq_of_any(p)? {
                    Some(pseq) if self.node(pseq)?.kind != EntryKind::Leaf.tag() => {
                        Some((pseq, self.node(pseq)?))
                    }
                    Some(_) => {
                        return Err(invalid(format!(
                            "entry {} is attached to leaf record {p}; grove does not treat \
                             leaf records as tree nodes",
                            env.id
                        )))
                    }
                    None => {
                        return Err(invalid(format!(
                            "entry {}: its parent {p} is not an entry of the session",
                            env.id
                        )))
                    }
                },
            };
            let parent_jump = match parent.as_ref().and_then(|(_, n)| n.jump) {
                Some(j) => Some(self.node(j.seq)?),
                None => None,
            };
            let mut node = fold::derive_node(
                seq,
                &env.id,
                env.kind,
                parent
                    .as_ref()
                    .map_or(Parent::Root, |(s, _)| Parent::Seq(*s)),
                parent.as_ref().map(|(_, n)| n),
                parent_jump.as_ref(),
                content,
            );
            fold::set_message_span(&mut node, &line);
            node
        };
        let written = Written {
            kind: env.kind,
            target_id: env.target_id.as_deref(),
            timestamp: &env.timestamp,
        };
        let id = env.id.clone();
        self.put_record(seq, line, node, written)?;
        Ok(Appended::New(id))
    }

    /// [`GroveError::RejectedEntry`] for this session.
    fn rejected(&self, reason: String) -> GroveError {
        GroveError::RejectedEntry {
            session: self.session.id().to_owned(),
            reason,
        }
    }

    /// Stages a leaf record moving the leaf to `target` (`None`: the root position).
    pub(crate) fn move_leaf(&mut self, target: Option<u64>) -> Result<String> {
        self.leaf_record(target, |id, previous, timestamp, target| {
            leaf_line(id, previous, timestamp, target)
        })
        .map(|(id, _)| id)
    }

    /// Stages the leaf record of a redaction: a leaf record that leaves the leaf where it is,
    /// carrying `note` (docs/format.md, "Redaction records"). Returns its id and seq.
    pub(crate) fn record_redaction(
        &mut self,
        note: &grove_codec::redact::RedactionNote,
    ) -> Result<(String, u64)> {
        self.leaf_record(self.head.leaf, |id, previous, timestamp, _| {
            note.leaf_line(id, previous, timestamp)
        })
    }

    /// Stages a leaf record moving the leaf to `target`, whose line `line` makes from its id,
    /// the leaf before, its timestamp and the target's id. Returns its id and seq.
    fn leaf_record(
        &mut self,
        target: Option<u64>,
        line: impl FnOnce(&str, Option<&str>, &str, Option<&str>) -> String,
    ) -> Result<(String, u64)> {
        let previous_id = match self.head.leaf {
            None => None,
            Some(seq) => Some(self.node(seq)?.id),
        };
        let target_id = match target {
            None => None,
            Some(seq) => Some(self.node(seq)?.id),
        };
        let id = self.fresh_id()?;
        let timestamp = self.timestamp(None);
        let line = line(
            &id,
            previous_id.as_deref(),
            &timestamp,
            target_id.as_deref(),
        );
        let seq = self.head.next_seq;
        let node = fold::leaf_node(
            &id,
            self.head.leaf,
            target.map_or(LeafTarget::Null, LeafTarget::Seq),
            digest::content_hash(line.as_bytes()),
        );
        let written = Written {
            kind: EntryKind::Leaf,
            target_id: None,
            timestamp: &timestamp,
        };
        self.put_record(seq, line, node, written)?;
        Ok((id, seq))
    }

    /// Stages a write of another key, committed after the transaction's records (in the same
    /// atomic batch when it has several log values).
    pub(crate) fn also_put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.batch.put(key, value);
    }

    /// Stages the deletion of another key, like [`Txn::also_put`].
    pub(crate) fn also_delete(&mut self, key: Vec<u8>) {
        self.batch.delete(key);
    }

    /// Writes everything staged. Records that fit one log value (a single row, or one batch
    /// of up to [`LOG_PACK_RECORDS`] records and [`LOG_PACK_BYTES`]) as ordered single writes:
    /// the value, then the index rows. More records as one atomic batch of their batches,
    /// their index rows and the head. In a shared store everything is one batch, applied only
    /// if the transaction's first log key is still absent (docs/design.md, "Fenced commits"):
    /// `false` when another process appended first and nothing was written.
    /// With `lease`, a shared store's commit also requires the session's lease row to hold
    /// that value (`None`: no lease; docs/scale-out.md, "Turn leases in the database").
    /// `tip` is updated to the committed head and leaf, or emptied when the commit fails or
    /// is refused.
    pub(crate) fn commit(
        self,
        durability: Durability,
        tip: &mut Tip,
        lease: Option<Option<Vec<u8>>>,
    ) -> Result<bool> {
        let mut next_tip = self.tip.into_inner();
        let single = self.nodes.len() == 1;
        // The tip keeps only the most recent nodes.
        let skip = self.nodes.len().saturating_sub(TIP_NODES);
        for (seq, node) in (self.first..).zip(self.nodes).skip(skip) {
            next_tip.remember(seq, node);
        }
        let sid = self.session.sid;
        let mut ops = WriteBatch::new();
        // Payloads first: a row never lands before what it references.
        for (key, value) in self.payloads.into_ops() {
            if let Some(value) = value {
                ops.put(key, value);
            }
        }
        let mut packs = self.packs;
        // Records that fit one log value commit by that value alone, as ordered single
        // writes: the value first, then the index rows (the head is a fold of the log; the
        // stored head is a checkpoint, written with id runs). Several values, which no single
        // write holds, go in one atomic batch with the head.
        let ordered = packs.len() == 1;
        match packs.as_mut_slice() {
            [(first, pack)] => {
                // One record is a single row, several a batch.
                let row = if single { pack.take_row() } else { None };
                let value = row.unwrap_or_else(|| pack.take_batch());
                ops.put(keys::log(sid, *first), value);
            }
            _ => {
                for (first, mut pack) in packs {
                    ops.put(keys::log(sid, first), pack.take_batch());
                }
                ops.put(keys::head(sid), record::encode(&self.head));
            }
        }
        for (key, value) in self.batch.into_ops() {
            match value {
                Some(value) => ops.put(key, value),
                None => ops.delete(key),
            }
        }
        *tip = Tip::default();
        let inner = &self.session.inner;
        // The fence: the first log key, absent unless another process appended after the
        // head this transaction was staged on.
        let log_key = keys::log(sid, self.first);
        let lease_key = keys::lease(sid);
        let mut guards: Vec<crate::kv::Guard<'_>> = vec![(&log_key, None)];
        if let Some(expected) = &lease {
            guards.push((&lease_key, expected.as_deref()));
        }
        // And the session is still listed under its id: another process may have deleted it
        // (its catalogue row goes first), and a commit after that must not land.
        let listed = sid.to_be_bytes();
        let listed_key = inner.shared.then(|| keys::session_id(self.session.id()));
        if let Some(key) = &listed_key {
            guards.push((key, Some(&listed)));
        }
        let committed =
            self.session
                .commit_with_ids(self.ids, self.bytes, &self.head, ops, |ops| {
                    inner.commit_fenced(&guards, ops, ordered, durability)
                })?;
        if committed {
            next_tip.head = Some(self.head);
            *tip = next_tip;
        }
        Ok(committed)
    }
}

/// What staging one append did ([`Txn::append`], [`Txn::append_exact`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Appended {
    /// The entry is staged under this id.
    New(String),
    /// The id names this same entry, stored already (the append is a retry): nothing staged.
    Stored {
        /// The entry's id.
        id: String,
        /// The stored entry's parent.
        parent: Option<String>,
    },
}

impl Appended {
    /// The entry's id.
    pub(crate) fn id(&self) -> &str {
        match self {
            Appended::New(id) | Appended::Stored { id, .. } => id,
        }
    }

    /// The id of an entry staged now; [`GroveError::DuplicateId`] for one stored already
    /// (where an append is part of a larger operation, a retry of it alone means nothing).
    pub(crate) fn staged(self) -> Result<String> {
        match self {
            Appended::New(id) => Ok(id),
            Appended::Stored { id, .. } => Err(GroveError::DuplicateId(id)),
        }
    }
}

/// What staging a transaction decided ([`transact`]).
pub(crate) enum Staged<T> {
    /// Commit the staged records; the operation's result.
    Commit(T),
    /// Write nothing; the operation's result (an `append_if` whose leaf moved).
    Abandon(T),
}

/// What a leaf move requires of the session's lease in a shared store, checked by its commit
/// ([`crate::ops::lease`]): called before each try (the argument counts the tries before it), it
/// answers the value the lease row must hold (`None`: no lease), or the error to give.
pub(crate) type LeaseCheck<'a> = &'a dyn Fn(usize) -> Result<Option<Vec<u8>>>;

/// Runs one write operation of `session` under its writer lock: `stage` stages the records on
/// a transaction begun on the session's head, and they are committed with `durability`. A leaf
/// move passes `lease`: in a shared store its commit then checks the lease row too (a store
/// one process holds checks leases in memory before).
///
/// In a shared store (docs/design.md, "Fenced commits") the head may be stale: another
/// process appended after this one last read the session. Its commit is then refused, and
/// an answer staging reached without committing (an abandoned transaction, an error such as
/// an unknown parent) may rest on the stale picture (one read says whether it does). Either
/// way the session's state is dropped and the operation runs again from the start on the
/// reloaded session, up to [`FENCE_TRIES`] times; then it fails with `busy`.
pub(crate) fn transact<T>(
    session: &Handle,
    op: OpKind,
    durability: Durability,
    lease: Option<LeaseCheck<'_>>,
    mut stage: impl FnMut(&mut Txn<'_>) -> Result<Staged<T>>,
) -> Result<T> {
    let lock = session.logs.session_lock(session.sid);
    let mut tip = lock.lock();
    for tries in 0..FENCE_TRIES {
        util::backoff(tries);
        let lease = match lease {
            Some(check) if session.inner.shared => Some(check(tries)?),
            _ => None,
        };
        let mut txn = Txn::begin(session, &mut tip, op)?;
        let first = txn.first;
        let answered = match stage(&mut txn) {
            Ok(Staged::Commit(value)) => {
                if txn.commit(durability, &mut tip, lease)? {
                    return Ok(value);
                }
                if !session.logs.still_listed(session.id(), session.sid)? {
                    session.drop_state();
                    return Err(GroveError::SessionNotFound(session.id().to_owned()));
                }
                continue;
            }
            Ok(Staged::Abandon(value)) => Ok(value),
            Err(e) => Err(e),
        };
        drop(txn);
        // A read that fails leaves the answer as it is.
        if !session.inner.shared || !session.appended_after(first).unwrap_or(false) {
            return answered;
        }
        *tip = Tip::default();
        session.drop_state();
    }
    Err(fenced_out(&format!("session {}", session.id())))
}

/// The kind a transaction's stamp records: a one-entry append names what the entry is (a
/// label, a name, a leaf move, a branch summary).
fn op_kind(op: OpKind, first: EntryKind) -> OpKind {
    match (op, first) {
        (OpKind::Append, EntryKind::Label) => OpKind::Label,
        (OpKind::Append, EntryKind::SessionInfo) => OpKind::Name,
        (OpKind::Append, EntryKind::Leaf) => OpKind::Move,
        (OpKind::Append, EntryKind::BranchSummary) => OpKind::Summary,
        (op, _) => op,
    }
}

/// Stages the index rows and head changes one log record implies (its id goes to the id index
/// at commit, [`crate::log::ids`]). The write path and the recovery of a session's last record
/// ([`repair_last`]) both use it, so a recovered record is indexed exactly as a written one.
fn index_record(
    session: &Handle,
    batch: &mut WriteBatch,
    head: &mut HeadRecord,
    seq: u64,
    node: &NodeRecord,
    line: &str,
    written: Written<'_>,
) {
    index_rows(
        session,
        batch,
        seq,
        node,
        line,
        written.kind,
        written.target_id,
    );
    // The catalogue's last-activity row moves when the activity moves into another hour.
    let created = &session.record.created;
    if !catalogue::same_hour(
        head.last_timestamp.as_deref(),
        Some(written.timestamp),
        created,
    ) {
        let (id, sid) = (session.id(), session.sid);
        if let Some(hour) = catalogue::activity_hour(head.last_timestamp.as_deref(), created) {
            batch.delete(keys::by_updated(hour, id, sid));
        }
        if let Some(hour) = catalogue::activity_hour(Some(written.timestamp), created) {
            batch.put(keys::by_updated(hour, id, sid), Vec::new());
        }
    }
    advance_head(head, seq, node, Some(written.timestamp));
}

/// What the index rows and the head need of a record's line besides its node: its kind, a
/// label's target and its timestamp (the fields `Envelope::parse` would read).
#[derive(Debug, Clone, Copy)]
struct Written<'a> {
    kind: EntryKind,
    target_id: Option<&'a str>,
    timestamp: &'a str,
}

/// The index rows a log record implies: the children row (at branch points), the compaction
/// and leaf-history rows, the label index.
fn index_rows(
    session: &Handle,
    batch: &mut WriteBatch,
    seq: u64,
    node: &NodeRecord,
    line: &str,
    kind: EntryKind,
    target_id: Option<&str>,
) {
    let sid = session.sid;
    match kind {
        EntryKind::Leaf => batch.put(keys::leaf_history(sid, seq), Vec::new()),
        kind => {
            match kind {
                EntryKind::Label => {
                    let target = target_id.unwrap_or_default();
                    session.label_update(batch, line, target, seq);
                }
                EntryKind::Compaction => batch.put(keys::compaction(sid, seq), Vec::new()),
                _ => {}
            }
            if let Some(pseq) = keys::child_row(node, seq) {
                batch.put(keys::child(sid, pseq, seq), Vec::new());
            }
        }
    }
}

/// The head after log record `seq`: its next sequence number, leaf, entry count, name and,
/// when given, timestamp (the record's kind and leaf target are in its node). The head is a
/// fold of the log; the stored head is a checkpoint of it (docs/design.md, "Commit protocol").
pub(crate) fn advance_head(
    head: &mut HeadRecord,
    seq: u64,
    node: &NodeRecord,
    timestamp: Option<&str>,
) {
    if node.kind == EntryKind::Leaf.tag() {
        head.leaf = match node.leaf_target {
            Some(LeafTarget::Seq(t)) => Some(t),
            _ => None,
        };
    } else {
        if node.kind == EntryKind::SessionInfo.tag() {
            head.name_at = Some(seq);
        }
        head.entries += 1;
        head.leaf = Some(seq);
    }
    head.next_seq = seq + 1;
    if let Some(t) = timestamp {
        match &mut head.last_timestamp {
            Some(last) => t.clone_into(last),
            None => head.last_timestamp = Some(t.to_owned()),
        }
    }
}

/// Completes the records of a session's last log value (a row or a batch), which a crash may
/// have interrupted after that value (the commit point) and before all of its index rows:
/// writes the rows they imply that are missing or differ (one batch, durably). Called when a
/// process first loads the session's state ([`crate::log::ids`]); whether it wrote anything.
pub(crate) fn repair_last(session: &Handle, entries: &[crate::log::handle::Entry]) -> Result<bool> {
    let mut rows = WriteBatch::new();
    // The catalogue's last-activity row of the last record (the row of the hour before may
    // stay: a superset, which `gc` sweeps).
    if let Some(last) = entries.last() {
        let created = &session.record.created;
        if let Some(hour) = catalogue::activity_hour(Some(&last.timestamp()), created) {
            rows.put(
                keys::by_updated(hour, session.id(), session.sid),
                Vec::new(),
            );
        }
    }
    for entry in entries {
        let env = entry.envelope()?;
        index_rows(
            session,
            &mut rows,
            entry.seq,
            &entry.node,
            &entry.line,
            env.kind,
            env.target_id.as_deref(),
        );
    }
    // What the rows leave behind: a later write of a key wins (two labels of one target).
    let outcome: std::collections::BTreeMap<_, _> = rows.clone().into_ops().into_iter().collect();
    let mut missing = false;
    for (key, value) in outcome {
        if session.inner.kv.get(&key)? != value {
            missing = true;
        }
    }
    if missing {
        session.inner.commit(rows, Durability::Sync)?;
    }
    Ok(missing)
}
