//! The operation log (`grove log`, `grove undo`, `--at-op`, `--at-time`, `grove seal`): every
//! change of a session as a numbered operation, read back from the stamps its log carries.
//!
//! A transaction stamps its first record ([`grove_codec::op::OpStamp`]: kind, time, actor),
//! so an operation is the run of records from one stamp to the next, committed by the same
//! write as its records; the leaf before and after it follow from the log like the head
//! does. Records a session starts with that carry no stamp (written by store layouts up to
//! 9) form one `legacy` operation. Reading the operation log is one pass over the session's
//! node records.
//!
//! This room owns listing operations, the point in time after one, undo and the seal. It reads
//! the session through `Handle` and the log reader, and writes only through the write path
//! (undo is a leaf move). docs/design.md, "Operation log", explains the design.

use std::collections::BTreeMap;

use grove_codec::digest;
use grove_codec::op::{OpKind, OpStamp};
use grove_codec::record::{self, LeafTarget};
use grove_codec::{time, EntryKind, Envelope};

use crate::context::views::Views;
use crate::core::error::{GroveError, Result};
use crate::log::handle::{decode_row_stamped, Handle};
use crate::log::labels::Label;
use crate::log::write::{transact, Staged};
use crate::ops::lease::{self, Leases};
use crate::tree::paths;
use crate::tree::whole;
use crate::tree::whole::Tree;

/// One operation of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// Its number: 0 for the session's first operation, counting up in log order.
    pub number: u64,
    /// What it was.
    pub kind: OpKind,
    /// When it was committed (ms since the Unix epoch). For a `legacy` operation: its first
    /// record's timestamp, when that parses.
    pub time_ms: Option<i64>,
    /// Who made it; `None` for a `legacy` operation.
    pub actor: Option<String>,
    /// The log records it wrote: sequence numbers `first_seq .. end_seq`.
    pub first_seq: u64,
    /// One past its last record.
    pub end_seq: u64,
    /// The id of its first record.
    pub first_id: String,
    /// The id of its last record.
    pub last_id: String,
    /// The leaf before it (`None`: the root position).
    pub leaf_before: Option<String>,
    /// The leaf after it.
    pub leaf_after: Option<String>,
    leaf_before_seq: Option<u64>,
    leaf_after_seq: Option<u64>,
}

impl Operation {
    /// The number of records it wrote.
    pub fn records(&self) -> u64 {
        self.end_seq - self.first_seq
    }

    /// Its time in `toISOString` form.
    pub fn time(&self) -> Option<String> {
        self.time_ms.map(time::format_ms)
    }

    /// The record the leaf was at before it.
    pub(crate) fn leaf_before_seq(&self) -> Option<u64> {
        self.leaf_before_seq
    }

    /// The record the leaf was at after it.
    pub(crate) fn leaf_after_seq(&self) -> Option<u64> {
        self.leaf_after_seq
    }
}

/// A session as it stood after one operation: its first `end_seq` records and the leaf then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointInTime {
    /// The operation.
    pub op: u64,
    /// Records `0 .. end_seq` existed.
    pub end_seq: u64,
    /// The leaf then (`None`: the root position).
    pub leaf: Option<String>,
    leaf_seq: Option<u64>,
}

/// A session's seal: the running digest of its header, records and operation stamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// The digest, as lowercase hex.
    pub digest: String,
    /// Records covered.
    pub records: u64,
    /// Operations covered.
    pub operations: u64,
}

/// Whether a session still extends a seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealCheck {
    /// The session's history up to and including `operations` operations (`records`
    /// records) is exactly what was sealed; anything after was appended since.
    Extends {
        /// Operations the seal covers.
        operations: u64,
        /// Records the seal covers.
        records: u64,
    },
    /// No prefix of the session's history matches the seal: it was sealed from another
    /// session, or history was rewritten.
    Diverged,
}

/// One record as the operation log reads it.
pub(crate) struct Step<'a> {
    pub(crate) seq: u64,
    pub(crate) node: &'a record::NodeRecord,
    pub(crate) stamp: Option<&'a OpStamp>,
    pub(crate) line: &'a [u8],
}

/// The seal's domain and version, hashed first.
const SEAL_CONTEXT: &[u8] = b"grove 2026-12 session seal v1\0";

/// Visits every record in log order with its node, stamp and line. Each line passes the
/// read checks of context and export ([`decode_row_stamped`]: its CRC-32 or content hash)
/// before it is visited, so no seal, seal check or audit file is ever a digest of damaged
/// bytes: damage is `Corrupt` naming the session and the entry.
pub(crate) fn walk_log(s: &Handle, mut visit: impl FnMut(Step<'_>) -> Result<()>) -> Result<()> {
    let kv = s.inner.kv.as_ref();
    for row in s.log_range(0, u64::MAX) {
        let (seq, row) = row?;
        // A line stored cut is seen whole: seals and audit files cover the content.
        let (entry, stamp) = decode_row_stamped(kv, s.id(), seq, row)?;
        visit(Step {
            seq,
            node: &entry.node,
            stamp: stamp.as_ref(),
            line: entry.line.as_bytes(),
        })?;
    }
    Ok(())
}

/// Every operation, oldest first (one pass over the log).
pub(crate) fn operations(s: &Handle) -> Result<Vec<Operation>> {
    let mut ops: Vec<Operation> = Vec::new();
    // Ids by seq, to name leaves (a leaf is always an earlier record).
    let mut ids: Vec<compact_str::CompactString> = Vec::new();
    let mut leaf: Option<u64> = None;
    walk_log(s, |step| {
        let id_of = |ids: &[compact_str::CompactString], seq: Option<u64>| {
            seq.and_then(|s| ids.get(s as usize)).map(|i| i.to_string())
        };
        if step.stamp.is_some() || ops.is_empty() {
            let (kind, time_ms, actor) = match step.stamp {
                Some(stamp) => (
                    stamp.kind().unwrap_or(OpKind::Legacy),
                    i64::try_from(stamp.time_ms).ok(),
                    Some(stamp.actor.clone()),
                ),
                None => {
                    let line = std::str::from_utf8(step.line).unwrap_or_default();
                    let time_ms = Envelope::parse(line)
                        .ok()
                        .and_then(|e| time::parse_ms(&e.timestamp));
                    (OpKind::Legacy, time_ms, None)
                }
            };
            ops.push(Operation {
                number: ops.len() as u64,
                kind,
                time_ms,
                actor,
                first_seq: step.seq,
                end_seq: step.seq,
                first_id: step.node.id.to_string(),
                last_id: String::new(),
                leaf_before: id_of(&ids, leaf),
                leaf_after: None,
                leaf_before_seq: leaf,
                leaf_after_seq: None,
            });
        }
        leaf = leaf_after(step.seq, step.node);
        ids.push(step.node.id.clone());
        if let Some(op) = ops.last_mut() {
            op.end_seq = step.seq + 1;
            op.last_id = step.node.id.to_string();
            op.leaf_after_seq = leaf;
            op.leaf_after = id_of(&ids, leaf);
        }
        Ok(())
    })?;
    Ok(ops)
}

/// The stamps of the session's log: each record that begins an operation, by position,
/// with its stamp as stored (unknown kinds included). A copy imported with them
/// ([`ImportOptions::stamps`](crate::ImportOptions::stamps)) has the same operations and
/// the same seal.
pub(crate) fn stamps(s: &Handle) -> Result<Vec<(u64, OpStamp)>> {
    let mut stamps = Vec::new();
    walk_log(s, |step| {
        if let Some(stamp) = step.stamp {
            stamps.push((step.seq, stamp.clone()));
        }
        Ok(())
    })?;
    Ok(stamps)
}

/// Operation `n`, or `OperationNotFound`.
pub(crate) fn operation(s: &Handle, n: u64) -> Result<Operation> {
    let mut ops = operations(s)?;
    let count = ops.len() as u64;
    if n >= count {
        return Err(no_operation(s, n, count));
    }
    Ok(ops.swap_remove(n as usize))
}

fn no_operation(s: &Handle, op: u64, count: u64) -> GroveError {
    GroveError::OperationNotFound {
        session: s.id().to_owned(),
        op,
        count,
    }
}

/// The session as it stood after operation `n`.
pub(crate) fn at_op(s: &Handle, n: u64) -> Result<PointInTime> {
    let op = operation(s, n)?;
    Ok(PointInTime {
        op: op.number,
        end_seq: op.end_seq,
        leaf: op.leaf_after,
        leaf_seq: op.leaf_after_seq,
    })
}

/// The session as it stood at `time` (an ISO-8601 / RFC 3339 time): after the last
/// operation committed at or before it, in log order.
pub(crate) fn at_time(s: &Handle, time: &str) -> Result<PointInTime> {
    let ms = time::parse_ms(time)
        .ok_or_else(|| GroveError::InvalidArgument(format!("'{time}' is not an RFC 3339 time")))?;
    let op = operations(s)?
        .into_iter()
        .rev()
        .find(|op| op.time_ms.is_some_and(|t| t <= ms))
        .ok_or_else(|| GroveError::BeforeFirstOperation {
            session: s.id().to_owned(),
            time: time.to_owned(),
        })?;
    Ok(PointInTime {
        op: op.number,
        end_seq: op.end_seq,
        leaf: op.leaf_after,
        leaf_seq: op.leaf_after_seq,
    })
}

/// The context as the session stood at `at`: the context at the leaf it had then (a
/// context depends only on the path, which later records never change).
pub(crate) fn context_as_of(
    s: &Handle,
    views: &Views,
    at: &PointInTime,
    options: crate::ContextOptions,
) -> Result<crate::Context> {
    crate::context::read::build_context_at(s, views, at.leaf_seq, options)
}

/// The branch as the session stood at `at` (leaf to root, or to the compaction
/// boundary, like [`crate::tree::paths::branch`]).
pub(crate) fn branch_as_of(s: &Handle, at: &PointInTime) -> Result<Vec<crate::log::handle::Entry>> {
    match at.leaf_seq {
        None => Ok(Vec::new()),
        Some(seq) => paths::branch_seq(s, seq),
    }
}

/// The full path (root to leaf) as the session stood at `at`.
pub(crate) fn path_as_of(s: &Handle, at: &PointInTime) -> Result<Vec<crate::log::handle::Entry>> {
    match at.leaf_seq {
        None => Ok(Vec::new()),
        Some(seq) => paths::path_to_root_seq(s, seq),
    }
}

/// The tree as the session stood at `at`: its entries then, its labels then, its
/// active path then.
pub(crate) fn tree_as_of(s: &Handle, at: &PointInTime) -> Result<Tree> {
    let labels = labels_upto(s, at.end_seq)?;
    whole::tree_upto(s, at.end_seq, at.leaf_seq, &labels)
}

/// The labels set by records `0 .. end` (spec §6.1: last in log order wins, trimmed,
/// blank clears).
pub(crate) fn labels_upto(s: &Handle, end: u64) -> Result<BTreeMap<String, Label>> {
    let mut out = BTreeMap::new();
    for entry in s.log_range(0, end).entries(s.id()) {
        let entry = entry?;
        if entry.kind() != EntryKind::Label {
            continue;
        }
        let env = entry.envelope()?;
        let Some(target) = env.target_id else {
            continue;
        };
        match crate::log::labels::label_value(&entry.line) {
            Some((label, label_json)) => {
                out.insert(
                    target,
                    Label {
                        label,
                        label_json,
                        timestamp: env.timestamp,
                        set_by: entry.id().to_owned(),
                    },
                );
            }
            None => {
                out.remove(&target);
            }
        }
    }
    Ok(out)
}

/// Puts the leaf back where it was before the last operation, or before operation
/// `to_op`: a leaf move recorded as an `undo` operation, which a later undo can undo in
/// turn. History is never rewritten. Refused with `Busy` while a turn or a navigation
/// holds the session. Returns the undo operation.
pub(crate) fn undo(s: &Handle, leases: &Leases, to_op: Option<u64>) -> Result<Operation> {
    lease::check_idle(s, leases)?;
    // Under the writer lock: no operation lands between choosing the target and moving.
    let idle = |tries| lease::idle_lease(s, leases, tries);
    transact(s, OpKind::Undo, s.inner.durability, Some(&idle), |txn| {
        let ops = operations(s)?;
        let count = ops.len() as u64;
        let target = match to_op {
            Some(n) => ops
                .get(usize::try_from(n).unwrap_or(usize::MAX))
                .ok_or_else(|| no_operation(s, n, count))?,
            None => ops.last().ok_or_else(|| {
                GroveError::InvalidState(format!("session {} has no operation to undo", s.id()))
            })?,
        };
        txn.move_leaf(target.leaf_before_seq)?;
        Ok(Staged::Commit(()))
    })?;
    operations(s)?
        .pop()
        .ok_or_else(|| GroveError::Corrupt("the undo operation is not in the log".into()))
}

/// The session's seal: a digest of its header and of every record (its line's blake3 and
/// its operation stamp) in log order, so it covers the records and the operation log
/// (docs/format.md, "Seal").
pub(crate) fn seal(s: &Handle) -> Result<Seal> {
    let mut state = seal_start_of(s);
    let mut records = 0;
    let mut operations = 0;
    let mut contents = Contents::of(s);
    walk_log(s, |step| {
        operations += u64::from(step.stamp.is_some() || records == 0);
        records += 1;
        let (content, _) = contents.content(&step)?;
        state = seal_step(&state, &step, &content);
        Ok(())
    })?;
    Ok(Seal {
        digest: digest::hex(&state),
        records,
        operations,
    })
}

/// Whether the session still extends the seal `digest` (hex): whether the running
/// digest after some operation equals it. One pass over the log.
pub(crate) fn check_seal(s: &Handle, digest_hex: &str) -> Result<SealCheck> {
    let want = digest_hex.trim().to_ascii_lowercase();
    if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(GroveError::InvalidArgument(format!(
            "'{digest_hex}' is not a seal: 64 hex digits expected"
        )));
    }
    let mut state = seal_start_of(s);
    if digest::hex(&state) == want {
        return Ok(SealCheck::Extends {
            operations: 0,
            records: 0,
        });
    }
    let mut records = 0u64;
    let mut operations = 0u64;
    let mut found = None;
    let mut contents = Contents::of(s);
    // The digest after each operation is the state before the next operation's first
    // record (or at the end of the log).
    walk_log(s, |step| {
        if found.is_some() {
            return Ok(());
        }
        if step.stamp.is_some() && records > 0 && digest::hex(&state) == want {
            found = Some((operations, records));
            return Ok(());
        }
        operations += u64::from(step.stamp.is_some() || records == 0);
        records += 1;
        let (content, _) = contents.content(&step)?;
        state = seal_step(&state, &step, &content);
        Ok(())
    })?;
    if found.is_none() && records > 0 && digest::hex(&state) == want {
        found = Some((operations, records));
    }
    Ok(match found {
        Some((operations, records)) => SealCheck::Extends {
            operations,
            records,
        },
        None => SealCheck::Diverged,
    })
}

fn seal_start_of(s: &Handle) -> digest::Digest {
    seal_start(s.id(), &s.record().header)
}

/// The seal of a session with no record yet: its id and header line.
pub(crate) fn seal_start(id: &str, header: &str) -> digest::Digest {
    let mut h = blake3::Hasher::new();
    h.update(SEAL_CONTEXT);
    h.update(id.as_bytes());
    h.update(b"\0");
    h.update(header.as_bytes());
    *h.finalize().as_bytes()
}

/// The content digest seals and audit files cover for each record: its line's blake3, or,
/// for a record whose line redactions changed, the content digest its node keeps (the line
/// as written), when the session's redactions lead from that digest to the line it holds
/// now (docs/design.md, "Redaction"). Anything else keeps the line's own digest, so an
/// altered line changes the seal.
pub(crate) struct Contents<'h> {
    s: &'h Handle,
    redactions: Option<crate::log::redactions::Redactions>,
}

impl<'h> Contents<'h> {
    /// The contents of `s`'s records.
    pub(crate) fn of(s: &'h Handle) -> Contents<'h> {
        Contents {
            s,
            redactions: None,
        }
    }

    /// Record `step`'s content digest, and the record of the redaction that explains its
    /// line when one does.
    pub(crate) fn content(&mut self, step: &Step<'_>) -> Result<(digest::Digest, Option<u64>)> {
        let now = digest::content_hash(step.line);
        if now == step.node.content {
            return Ok((now, None));
        }
        if self.redactions.is_none() {
            self.redactions = Some(self.s.redactions()?);
        }
        let by = self
            .redactions
            .as_ref()
            .and_then(|r| r.explains(step.seq, &step.node.content, &now, u64::MAX));
        Ok(match by {
            Some(by) => (step.node.content, Some(by)),
            None => (now, None),
        })
    }
}

/// The running seal digest after one more record whose content digest is `content`
/// ([`Contents`]).
pub(crate) fn seal_step(
    state: &digest::Digest,
    step: &Step<'_>,
    content: &digest::Digest,
) -> digest::Digest {
    seal_next(state, step.seq, content, step.stamp)
}

/// [`seal_step`] of record `seq` with its content digest and stamp.
pub(crate) fn seal_next(
    state: &digest::Digest,
    seq: u64,
    content: &digest::Digest,
    stamp: Option<&OpStamp>,
) -> digest::Digest {
    let stamp = stamp.map(OpStamp::to_bytes).unwrap_or_default();
    let mut h = blake3::Hasher::new();
    h.update(state);
    h.update(&seq.to_be_bytes());
    h.update(content);
    h.update(&(stamp.len() as u64).to_be_bytes());
    h.update(&stamp);
    *h.finalize().as_bytes()
}

/// The leaf after record `seq`: an entry becomes the leaf, a leaf record moves it.
pub(crate) fn leaf_after(seq: u64, node: &record::NodeRecord) -> Option<u64> {
    if node.kind == EntryKind::Leaf.tag() {
        match node.leaf_target {
            Some(LeafTarget::Seq(t)) => Some(t),
            _ => None,
        }
    } else {
        Some(seq)
    }
}
