//! A session handle: reads of the log and the tree, and the two primitive writes
//! (append an entry, record a leaf move), under the session's writer lock. The log row is
//! written before the index rows and the head that point at it (see `crate::log::write`), so a
//! reader never sees an index without its entry.

use std::sync::Arc;

use grove_codec::entry::Envelope;
use grove_codec::record::{self, LeafTarget, NodeRecord, SessionRecord};
use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::Inner;
use crate::kv::Durability;
use crate::log::index_packs;
use crate::log::shared::Logs;

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

/// The outcome of [`crate::Session::append_if`].
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

/// Per-call options of [`crate::Session::append_with`].
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// Use this id instead of a generated one (it must be new to the session).
    pub id: Option<String>,
    /// Use this timestamp instead of now.
    pub timestamp: Option<String>,
    /// Override the store's durability for this call.
    pub durability: Option<Durability>,
}

/// Per-call options of [`crate::Session::append_exact_with`].
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

/// The actor of operations made through a handle that was given none.
pub const DEFAULT_ACTOR: &str = "library";

/// A handle on one session. Cheap to clone; handles of the same store share writer locks.
#[derive(Clone)]
pub struct Handle {
    pub(crate) inner: Arc<Inner>,
    /// The session log's state shared by every handle of the store.
    pub(crate) logs: Arc<Logs>,
    pub(crate) sid: u64,
    pub(crate) record: Arc<SessionRecord>,
    /// Records `0 .. packed` are stored in log packs and their ids in id packs (an
    /// imported session); the rest in single rows. Fixed when the session is written.
    pub(crate) packed: u64,
    /// Who this handle's operations are stamped with; `None`: [`DEFAULT_ACTOR`].
    pub(crate) actor: Option<Arc<str>>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("id", &self.record.id)
            .finish()
    }
}

impl Handle {
    /// A handle on a session without packs (one just created).
    pub(crate) fn new(logs: Arc<Logs>, sid: u64, record: SessionRecord) -> Handle {
        Handle {
            inner: logs.inner.clone(),
            logs,
            sid,
            record: Arc::new(record),
            packed: 0,
            actor: None,
        }
    }

    /// This handle, stamping its operations with `actor`.
    pub(crate) fn with_actor(mut self, actor: &str) -> Handle {
        self.actor = Some(Arc::from(actor));
        self
    }

    /// This handle, stamping its operations with `actor` (`None`: [`DEFAULT_ACTOR`]).
    pub(crate) fn with_actor_of(mut self, actor: Option<Arc<str>>) -> Handle {
        self.actor = actor;
        self
    }

    /// Who this handle's operations are stamped with.
    pub(crate) fn actor(&self) -> &str {
        self.actor.as_deref().unwrap_or(DEFAULT_ACTOR)
    }

    /// A handle on a stored session whose record and packed count are known.
    pub(crate) fn known(
        logs: Arc<Logs>,
        sid: u64,
        record: Arc<SessionRecord>,
        packed: u64,
    ) -> Handle {
        Handle {
            inner: logs.inner.clone(),
            logs,
            sid,
            record,
            packed,
            actor: None,
        }
    }

    /// A handle on a stored session: reads its packed count (one point read). Its state
    /// (head, id index) is read, and a last record a crash interrupted completed, the first
    /// time the process needs it ([`crate::log::ids`]).
    pub(crate) fn open(logs: Arc<Logs>, sid: u64, record: SessionRecord) -> Result<Handle> {
        let packed = packed_count(&logs.inner, sid)?;
        Ok(Handle {
            packed,
            ..Handle::new(logs, sid, record)
        })
    }

    /// The session id.
    pub(crate) fn id(&self) -> &str {
        &self.record.id
    }

    /// The session's stored description (header line, cwd, lineage).
    pub(crate) fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// The raw log row at `seq`, or `Corrupt` when it is missing.
    pub(crate) fn row(&self, seq: u64) -> Result<Vec<u8>> {
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
    pub(crate) fn entry_at(&self, seq: u64) -> Result<Entry> {
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
    pub(crate) fn entry(&self, id: &str) -> Result<Entry> {
        let (seq, node) = self.require_seq(id)?;
        Ok(Entry {
            seq,
            node,
            line: self.line(seq)?,
        })
    }

    /// Resolves an entry id or unique id prefix; `@` is the leaf and `@-` its parent.
    pub(crate) fn resolve_entry(&self, spec: &str) -> Result<Option<String>> {
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
    pub(crate) fn log(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log_range(0, u64::MAX).entries(self.id())
    }

    /// `n` distinct 8-hex entry ids unused in the session right now (pi's `createEntryId`,
    /// in bulk): nothing reserves them, so they stay unused for a caller that is the
    /// session's only writer; an id taken meanwhile is refused by the append that uses it.
    pub(crate) fn fresh_ids(&self, n: usize) -> Result<Vec<String>> {
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
    pub(crate) fn log_from(&self, start: u64) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log_range(start, u64::MAX).entries(self.id())
    }

    /// The log record `id`, an entry or a leaf record (pi's `getEntry`, which finds both),
    /// or `EntryNotFound`.
    pub(crate) fn log_record(&self, id: &str) -> Result<Entry> {
        match self.seq_of_any(id)? {
            Some(seq) => self.entry_at(seq),
            None => Err(GroveError::EntryNotFound(id.to_owned())),
        }
    }

    /// The tree entries in log order (leaf records left out; shadowed duplicates kept).
    pub(crate) fn entries(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.log()
            .filter(|e| !matches!(e, Ok(e) if e.is_leaf_record()))
    }

    /// The active leaf's id (`None`: the root position).
    pub(crate) fn leaf(&self) -> Result<Option<String>> {
        Ok(match self.head()?.leaf {
            None => None,
            Some(seq) => Some(self.node(seq)?.id.into()),
        })
    }

    /// The leaf history: every leaf record in log order, as (record id, target id).
    pub(crate) fn leaf_history(&self) -> Result<Vec<(String, Option<String>)>> {
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
