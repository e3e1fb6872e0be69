//! The redactions of a session as its log records them (docs/design.md, "Redaction"): each is
//! a leaf record that leaves the leaf where it is and carries a
//! [`grove_codec::redact::RedactionNote`] naming the record redacted, the paths, the reason
//! and the digests of the line before and after. This room reads them back, tells a line that
//! redactions explain from one that was damaged or altered, and rewrites a stored log row in
//! place (a row, a batch or a log pack: the value holding the record keeps its key).
//!
//! May call: [`crate::core`], [`crate::kv`], the log reader ([`crate::log::rows`],
//! [`crate::log::index_packs`]).

use std::collections::BTreeMap;

use grove_codec::digest::{self, Digest};
use grove_codec::pack::{LogPack, LogPackWriter, LogValue};
use grove_codec::redact::RedactionNote;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::log::handle::Handle;
use crate::log::index_packs;

/// A session's redactions, by the record they redacted, in log order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Redactions {
    /// Redacted record → (the seq of each redaction's leaf record, its note), oldest first.
    by_seq: BTreeMap<u64, Vec<(u64, RedactionNote)>>,
}

impl Redactions {
    /// The redactions of record `seq`, oldest first: (the redaction's record, its note).
    pub(crate) fn of(&self, seq: u64) -> &[(u64, RedactionNote)] {
        self.by_seq.get(&seq).map_or(&[], Vec::as_slice)
    }

    /// Every redacted record with its redactions.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &[(u64, RedactionNote)])> {
        self.by_seq.iter().map(|(s, v)| (*s, v.as_slice()))
    }

    /// Whether the session has none.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }

    /// The redaction that explains record `seq` holding a line hashing to `now` when its
    /// node's content digest is `content`: the notes of `seq` (made before `upto`, a record
    /// bound: those a reader of the log up to there has seen) lead from `content` to `now`,
    /// each starting where the one before ended. Returns the last one's record.
    pub(crate) fn explains(
        &self,
        seq: u64,
        content: &Digest,
        now: &Digest,
        upto: u64,
    ) -> Option<u64> {
        let mut at = digest::hex(content);
        let want = digest::hex(now);
        let mut by = None;
        for (record, note) in self.of(seq).iter().filter(|(r, _)| *r < upto) {
            if note.before == at {
                at.clone_from(&note.after);
                by = Some(*record);
            }
        }
        (at == want && by.is_some()).then_some(by).flatten()
    }
}

impl Handle {
    /// The session's redactions: the notes of its leaf records (one read of the leaf history
    /// and of each leaf record).
    pub(crate) fn redactions(&self) -> Result<Redactions> {
        let mut out = Redactions::default();
        for seq in index_packs::leaf_seqs(self.inner.kv.as_ref(), self.sid)? {
            let line = self.line(seq)?;
            if let Some(note) = RedactionNote::of_line(&line) {
                out.by_seq.entry(note.seq).or_default().push((seq, note));
            }
        }
        Ok(out)
    }

    /// Whether a redaction record is at or after record `from` (one range read of the leaf
    /// history, and a read of each leaf record found), and the position after the last leaf
    /// record read (`from` when none): how a process that shares the store learns that
    /// another one redacted a line it holds a copy of ([`crate::context::views`]).
    pub(crate) fn redaction_since(&self, from: u64) -> Result<(bool, u64)> {
        let seqs: Vec<u64> = if from < self.packed {
            index_packs::leaf_seqs(self.inner.kv.as_ref(), self.sid)?
                .into_iter()
                .filter(|seq| *seq >= from)
                .collect()
        } else {
            let start = keys::leaf_history(self.sid, from);
            let end = keys::prefix_end(&keys::session_prefix(keys::T_LEAF_HISTORY, self.sid));
            let mut out = Vec::new();
            for pair in self.inner.kv.scan(&start, &end) {
                let (key, _) = pair?;
                out.push(
                    keys::last_u64(&key)
                        .ok_or_else(|| GroveError::Corrupt("leaf history key".to_owned()))?,
                );
            }
            out
        };
        let mut after = from;
        for seq in seqs {
            if RedactionNote::of_line(&self.line(seq)?).is_some() {
                return Ok((true, seq + 1));
            }
            after = after.max(seq + 1);
        }
        Ok((false, after))
    }

    /// The stored log value that holds record `seq` with that record's line replaced by
    /// `line` (stored whole): `(key, value)`, the key unchanged (a single row, a batch under a
    /// log key, or a log pack). The row keeps its node — content and chain digests included —
    /// but for the message span, found again in `line`, and its operation stamp; its CRC-32 is
    /// the new line's.
    pub(crate) fn rewritten_value(&self, seq: u64, line: &str) -> Result<(Vec<u8>, Vec<u8>)> {
        let kv = &self.inner.kv;
        let (lo, hi) = if seq >= self.packed {
            (
                keys::log(self.sid, self.packed),
                keys::log(self.sid, seq + 1),
            )
        } else {
            (
                keys::log_pack(self.sid, 0),
                keys::log_pack(self.sid, seq + 1),
            )
        };
        let mut found: Option<(Vec<u8>, Vec<u8>)> = None;
        kv.read_last(&lo, &hi, &mut |key, value| {
            found = Some((key.to_vec(), value.to_vec()));
        })?;
        let missing = || {
            GroveError::Corrupt(format!(
                "record {seq} of session {} is not in its log",
                self.id()
            ))
        };
        let (key, value) = found.ok_or_else(missing)?;
        let first = keys::last_u64(&key).ok_or_else(missing)?;
        let index = usize::try_from(seq - first).map_err(|_| missing())?;
        let corrupt = |e: grove_codec::CodecError| {
            GroveError::Corrupt(format!("the log value holding record {seq}: {e}"))
        };
        let mut rows: Vec<Vec<u8>> = if seq >= self.packed {
            match LogValue::parse(&value).map_err(corrupt)? {
                LogValue::Row(row) => vec![row.to_vec()],
                LogValue::Batch(pack) => (0..pack.len())
                    .filter_map(|i| pack.row(i).map(<[u8]>::to_vec))
                    .collect(),
            }
        } else {
            let pack = LogPack::parse(&value).map_err(corrupt)?;
            (0..pack.len())
                .filter_map(|i| pack.row(i).map(<[u8]>::to_vec))
                .collect()
        };
        let slot = rows.get_mut(index).ok_or_else(missing)?;
        let old = grove_codec::record::decode_log(slot).map_err(corrupt)?;
        let mut node = old.node;
        crate::log::fold::set_message_span(&mut node, line);
        *slot = grove_codec::record::encode_log_stamped(&node, line.as_bytes(), old.op.as_ref());
        let mut pack = LogPackWriter::with_capacity(rows.len(), rows.iter().map(Vec::len).sum());
        for row in &rows {
            pack.push(row).map_err(corrupt)?;
        }
        let value = if seq < self.packed {
            pack.take()
        } else if rows.len() == 1 && value.first() != Some(&grove_codec::pack::BATCH_MARK) {
            pack.take_row().unwrap_or_default()
        } else {
            pack.take_batch()
        };
        Ok((key, value))
    }
}
