//! The write path. A [`Txn`] stages the records of one operation (an append, a leaf move, a
//! move with its branch summary, a batch of appends) over an overlay of what it has staged so
//! far, then commits them as one atomic batch together with the new head. Callers hold the
//! session's writer lock for the whole transaction.

use std::collections::HashMap;

use grove_codec::digest;
use grove_codec::entry::Envelope;
use grove_codec::record::{self, HeadRecord, LeafTarget, NodeRecord, Parent};
use grove_codec::writer::{leaf_line, NewEntry};
use grove_codec::{EntryKind, Role};

use crate::error::{GroveError, Result};
use crate::fold;
use crate::keys;
use crate::kv::WriteBatch;
use crate::session::Session;
use crate::store::Durability;
use crate::util;

/// One operation's staged writes.
pub(crate) struct Txn<'s> {
    session: &'s Session,
    pub(crate) head: HeadRecord,
    batch: WriteBatch,
    nodes: HashMap<u64, NodeRecord>,
    ids: HashMap<String, u64>,
}

impl<'s> Txn<'s> {
    /// Starts a transaction on the session's current head.
    pub(crate) fn begin(session: &'s Session) -> Result<Txn<'s>> {
        Ok(Txn {
            session,
            head: session.head()?,
            batch: WriteBatch::new(),
            nodes: HashMap::new(),
            ids: HashMap::new(),
        })
    }

    pub(crate) fn node(&self, seq: u64) -> Result<NodeRecord> {
        match self.nodes.get(&seq) {
            Some(n) => Ok(n.clone()),
            None => self.session.node(seq),
        }
    }

    fn seq_of_any(&self, id: &str) -> Result<Option<u64>> {
        match self.ids.get(id) {
            Some(&s) => Ok(Some(s)),
            None => self.session.seq_of_any(id),
        }
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
            if self.seq_of_any(&id)?.is_none() {
                return Ok(id);
            }
        }
        loop {
            let id = util::new_session_id();
            if self.seq_of_any(&id)?.is_none() {
                return Ok(id);
            }
        }
    }

    fn timestamp(&mut self, given: Option<String>) -> String {
        let t = given.unwrap_or_else(|| util::timestamp_after(self.head.last_timestamp.as_deref()));
        self.head.last_timestamp = Some(t.clone());
        t
    }

    fn put_record(&mut self, seq: u64, id: &str, line: String, node: NodeRecord) {
        let sid = self.session.sid;
        self.batch.put(keys::line(sid, seq), line.into_bytes());
        self.batch.put(keys::node(sid, seq), record::encode(&node));
        self.batch
            .put(keys::entry_id(sid, id), seq.to_be_bytes().to_vec());
        self.nodes.insert(seq, node);
        self.ids.insert(id.to_owned(), seq);
        self.head.next_seq += 1;
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
            Some(id) if self.seq_of_any(&id)?.is_some() => return Err(GroveError::DuplicateId(id)),
            Some(id) => id,
            None => self.fresh_id()?,
        };
        let timestamp = self.timestamp(timestamp);
        let parent_id = parent.as_ref().map(|(_, n)| n.id.as_str());
        let line = entry
            .to_line(&id, parent_id, &timestamp)
            .map_err(|e| GroveError::InvalidArgument(e.0))?;
        let envelope = Envelope::parse(&line).map_err(GroveError::InvalidArgument)?;
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
        let sid = self.session.sid;
        match envelope.kind {
            EntryKind::Label => {
                let target = envelope.target_id.clone().unwrap_or_default();
                self.require_entry(&target)?;
                self.session
                    .label_update(&mut self.batch, &line, &target, seq);
            }
            EntryKind::SessionInfo => self.head.name_at = Some(seq),
            EntryKind::Compaction => self.batch.put(keys::compaction(sid, seq), Vec::new()),
            _ => {}
        }
        let parent_jump = match parent.as_ref().and_then(|(_, n)| n.jump) {
            Some(j) => Some(self.node(j.seq)?),
            None => None,
        };
        let node = fold::derive_node(
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
        if let Some(pseq) = keys::child_row(&node, seq) {
            self.batch.put(keys::child(sid, pseq, seq), Vec::new());
        }
        self.put_record(seq, &id, line, node);
        self.head.entries += 1;
        self.head.leaf = Some(seq);
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
        self.batch
            .put(keys::leaf_history(self.session.sid, seq), Vec::new());
        self.put_record(seq, &id, line, node);
        self.head.leaf = target;
        Ok(id)
    }

    /// Writes everything staged, and the head, in one atomic batch.
    pub(crate) fn commit(mut self, durability: Durability) -> Result<()> {
        self.batch
            .put(keys::head(self.session.sid), record::encode(&self.head));
        self.session.inner.commit(self.batch, durability)
    }
}
