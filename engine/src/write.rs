//! The write path. A [`Txn`] stages the records of one operation (an append, a leaf move, a
//! move with its branch summary, a batch of appends) over an overlay of what it has staged so
//! far, then commits them together with the new head. Callers hold the session's writer lock
//! for the whole transaction.
//!
//! The log is the commit point (docs/design.md, "Commit protocol"). A transaction of one
//! record is written as ordered single writes — the log row first, then the index rows it
//! implies, then the head — which the backend recovers as a prefix after a crash; a log row
//! found at the head's `next_seq` is therefore committed, and [`roll_forward`] rewrites the
//! index rows and head it implies when the session is next opened. A transaction of several
//! records (`append_many`, a move with its branch summary) is one atomic batch.

use std::collections::HashMap;

use grove_codec::digest;
use grove_codec::entry::Envelope;
use grove_codec::record::{self, HeadRecord, LeafTarget, NodeRecord, Parent};
use grove_codec::writer::{leaf_line, NewEntry, Rendered};
use grove_codec::{EntryKind, Role};

use crate::error::{GroveError, Result};
use crate::fold;
use crate::keys;
use crate::kv::WriteBatch;
use crate::session::Session;
use crate::store::{Durability, Tip};
use crate::util;

/// One operation's staged writes.
pub(crate) struct Txn<'s> {
    session: &'s Session,
    pub(crate) head: HeadRecord,
    /// Staged writes: each record's log row, then the index rows it implies.
    batch: WriteBatch,
    nodes: HashMap<u64, NodeRecord>,
    ids: HashMap<String, u64>,
    /// The writer's [`Tip`], taken for the transaction (nodes read are remembered in it).
    tip: std::cell::RefCell<Tip>,
}

impl<'s> Txn<'s> {
    /// Starts a transaction on the session's current head (from the writer's `tip` when it
    /// has one).
    pub(crate) fn begin(session: &'s Session, tip: &mut Tip) -> Result<Txn<'s>> {
        let mut tip = std::mem::take(tip);
        let head = match tip.head.take() {
            Some(h) => h,
            None => session.head()?,
        };
        Ok(Txn {
            session,
            head,
            tip: std::cell::RefCell::new(tip),
            batch: WriteBatch::new(),
            nodes: HashMap::new(),
            ids: HashMap::new(),
        })
    }

    pub(crate) fn node(&self, seq: u64) -> Result<NodeRecord> {
        if let Some(n) = self.nodes.get(&seq) {
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
    fn put_record(&mut self, seq: u64, line: String, node: NodeRecord, env: &Envelope) {
        let sid = self.session.sid;
        self.batch.put(
            keys::log(sid, seq),
            record::encode_log(&node, line.as_bytes()),
        );
        index_record(
            self.session,
            &mut self.batch,
            &mut self.head,
            seq,
            &node,
            &line,
            env,
        );
        self.ids.insert(node.id.clone(), seq);
        self.nodes.insert(seq, node);
    }

    /// Stages an entry as a child of the (staged) leaf; it becomes the leaf.
    pub(crate) fn append(
        &mut self,
        entry: &NewEntry,
        id: Option<String>,
        timestamp: Option<String>,
    ) -> Result<String> {
        let parent = match self.head.leaf {
            None => None,
            Some(seq) => Some((seq, self.node(seq)?)),
        };
        let id = match id {
            Some(id) if id.is_empty() => {
                return Err(GroveError::InvalidArgument(
                    "entry id must not be empty".into(),
                ))
            }
            Some(id) if self.id_taken(&id)? => return Err(GroveError::DuplicateId(id)),
            Some(id) => id,
            None => self.fresh_id()?,
        };
        let timestamp = self.timestamp(timestamp);
        let parent_id = parent.as_ref().map(|(_, n)| n.id.as_str());
        let Rendered {
            line,
            envelope,
            message,
        } = entry
            .render(&id, parent_id, &timestamp)
            .map_err(|e| GroveError::InvalidArgument(e.0))?;
        match envelope.kind {
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
        let seq = self.head.next_seq;
        if envelope.kind == EntryKind::Label {
            self.require_entry(envelope.target_id.as_deref().unwrap_or_default())?;
        }
        let parent_jump = match parent.as_ref().and_then(|(_, n)| n.jump) {
            Some(j) => Some(self.node(j.seq)?),
            None => None,
        };
        let mut node = fold::derive_node(
            seq,
            &id,
            envelope.kind,
            parent
                .as_ref()
                .map_or(Parent::Root, |(s, _)| Parent::Seq(*s)),
            parent.as_ref().map(|(_, n)| n),
            parent_jump.as_ref(),
            digest::content_hash(line.as_bytes()),
        );
        node.message = message;
        self.put_record(seq, line, node, &envelope);
        Ok(id)
    }

    /// Stages a leaf record moving the leaf to `target` (`None`: the root position).
    pub(crate) fn move_leaf(&mut self, target: Option<u64>) -> Result<String> {
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
        let line = leaf_line(
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
        let envelope = Envelope::parse(&line).map_err(GroveError::InvalidArgument)?;
        self.put_record(seq, line, node, &envelope);
        Ok(id)
    }

    /// Writes everything staged and the head: one record as ordered single writes (log row
    /// first, head last), several records as one atomic batch.
    /// `tip` is updated to the committed head and leaf, or emptied when the commit fails.
    pub(crate) fn commit(self, durability: Durability, tip: &mut Tip) -> Result<()> {
        let mut next_tip = self.tip.into_inner();
        let mut written: Vec<_> = self.nodes.into_iter().collect();
        written.sort_unstable_by_key(|(seq, _)| *seq);
        let single = written.len() == 1;
        for (seq, node) in written {
            next_tip.remember(seq, node);
        }
        let mut ops = self.batch;
        ops.put(keys::head(self.session.sid), record::encode(&self.head));
        *tip = Tip::default();
        let inner = &self.session.inner;
        self.session
            .commit_with_ids(self.ids, || inner.commit_ops(ops, single, durability))?;
        next_tip.head = Some(self.head);
        *tip = next_tip;
        Ok(())
    }
}

/// Stages the index rows and head changes one log record implies (its id goes to the id index
/// at commit, [`crate::ids`]): the children row (at branch points), the compaction and leaf-history rows, the label index,
/// and the head's next sequence, leaf, entry count, name and timestamp. The write path and
/// [`roll_forward`] both use it, so a recovered record is indexed exactly as a written one.
fn index_record(
    session: &Session,
    batch: &mut WriteBatch,
    head: &mut HeadRecord,
    seq: u64,
    node: &NodeRecord,
    line: &str,
    env: &Envelope,
) {
    let sid = session.sid;
    match env.kind {
        EntryKind::Leaf => {
            batch.put(keys::leaf_history(sid, seq), Vec::new());
            head.leaf = match node.leaf_target {
                Some(LeafTarget::Seq(t)) => Some(t),
                _ => None,
            };
        }
        kind => {
            match kind {
                EntryKind::Label => {
                    let target = env.target_id.as_deref().unwrap_or_default();
                    session.label_update(batch, line, target, seq);
                }
                EntryKind::SessionInfo => head.name_at = Some(seq),
                EntryKind::Compaction => batch.put(keys::compaction(sid, seq), Vec::new()),
                _ => {}
            }
            if let Some(pseq) = keys::child_row(node, seq) {
                batch.put(keys::child(sid, pseq, seq), Vec::new());
            }
            head.entries += 1;
            head.leaf = Some(seq);
        }
    }
    head.next_seq = seq + 1;
    head.last_timestamp = Some(env.timestamp.clone());
}

/// Completes a commit a crash interrupted: every log row at or after the head's `next_seq`
/// is committed (the log row is written first), so its index rows and the head are written
/// again, in one atomic batch. Called with the session's writer lock held (`tip` is what it
/// guards, emptied here); returns how many records were rolled forward.
pub(crate) fn roll_forward(session: &Session, tip: &mut Tip) -> Result<u64> {
    *tip = Tip::default();
    let mut head = session.head()?;
    let mut batch = WriteBatch::new();
    let mut done = 0;
    while let Some(row) = session
        .inner
        .kv
        .get(&keys::log(session.sid, head.next_seq))?
    {
        let entry = crate::session::decode_row(head.next_seq, row)?;
        let env = entry.envelope()?;
        index_record(
            session,
            &mut batch,
            &mut head,
            entry.seq,
            &entry.node,
            &entry.line,
            &env,
        );
        done += 1;
    }
    if done > 0 {
        batch.put(keys::head(session.sid), record::encode(&head));
        session.inner.commit(batch, Durability::Sync)?;
    }
    Ok(done)
}
