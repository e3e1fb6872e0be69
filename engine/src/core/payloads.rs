//! The payload store: JSON string values of at least the store's threshold (base64 images,
//! large tool outputs) are kept once, under their blake3 (`0x20 ++ hash`), and the log row
//! holds its line with those values cut out and a table of where they go
//! ([`grove_codec::splice`]). Within a session and across sessions, the same bytes are stored
//! once; a fork writes the cut lines only.
//!
//! Every read of a line joins it back (the decode of a log row calls [`expand`]), so contexts,
//! exports, digests and seals see the original bytes. A payload is removed only by
//! [`crate::Store::gc`], which removes those no log row references and reports each one;
//! deleting a session removes none.
//!
//! This room owns the cut on the write path, the join on the read path and the collection. It
//! calls the codec's splice format and the key-value trait; the write path and the row decoder
//! call it. docs/design.md, "Payloads", explains the design.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::Ordering;

use grove_codec::pack::{LogPack, LogValue};
use grove_codec::record;
use grove_codec::splice;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::{Kv, WriteBatch};
use crate::store::{Inner, Store};

/// The default threshold: string values of 4 KiB or more are payloads.
pub const DEFAULT_PAYLOAD_THRESHOLD: usize = 4096;

/// Payloads a transaction has staged or found stored, so each is checked once.
#[derive(Default)]
pub(crate) struct Staged(HashSet<[u8; 32]>);

impl Inner {
    /// The stored form of `line`: cut, with its payloads that are not stored yet put into
    /// `batch`; `None` when the line has no payload (or the store keeps none).
    pub(crate) fn stage_line(
        &self,
        line: &[u8],
        batch: &mut WriteBatch,
        staged: &mut Staged,
    ) -> Result<Option<Vec<u8>>> {
        let threshold = self.payload_threshold.load(Ordering::Relaxed);
        if threshold == 0 {
            return Ok(None);
        }
        let Some(cut) = splice::cut(line, threshold) else {
            return Ok(None);
        };
        for (hash, bytes) in cut.payloads {
            if !staged.0.insert(hash) {
                continue;
            }
            let key = keys::payload(&hash);
            if !self.kv.read_value(&key, &mut |_| {})? {
                batch.put(key, bytes.to_vec());
            }
        }
        Ok(Some(cut.stored))
    }
}

/// The line a stored line stands for: itself, or a spliced line joined with its payloads.
pub(crate) fn expand<'a>(kv: &dyn Kv, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    if !splice::is_spliced(stored) {
        return Ok(Cow::Borrowed(stored));
    }
    let line = splice::join(stored, |hash| {
        kv.get(&keys::payload(hash))
            .map_err(|e| grove_codec::CodecError::CorruptRecord(e.to_string()))?
            .ok_or_else(|| {
                grove_codec::CodecError::CorruptRecord(format!(
                    "payload {} is missing",
                    grove_codec::digest::hex(hash)
                ))
            })
    })
    .map_err(|e| GroveError::Corrupt(e.to_string()))?;
    Ok(Cow::Owned(line))
}

/// What [`Store::gc`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GcReport {
    /// Payloads stored before the collection.
    pub payloads: u64,
    /// Their bytes.
    pub payload_bytes: u64,
    /// Payloads some log row references (kept).
    pub referenced: u64,
    /// The payloads removed: blake3 (hex) and size.
    pub removed: Vec<(String, u64)>,
}

impl GcReport {
    /// Bytes removed.
    pub fn removed_bytes(&self) -> u64 {
        self.removed.iter().map(|(_, b)| b).sum()
    }
}

/// Payload counts of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadStats {
    /// Payloads stored.
    pub payloads: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Store {
    /// Sets the payload threshold: string values of at least `threshold` bytes written from
    /// now on are stored once as payloads; `None` (or 0) stores every line whole. Lines
    /// already written stay as they are.
    pub fn set_payload_threshold(&self, threshold: Option<usize>) {
        self.inner
            .payload_threshold
            .store(threshold.unwrap_or(0), Ordering::Relaxed);
    }

    /// The payloads stored and their bytes (one scan of the payload table).
    pub fn payload_stats(&self) -> Result<PayloadStats> {
        let (start, end) = payload_range();
        let mut stats = PayloadStats::default();
        for pair in self.inner.kv.scan(&start, &end) {
            let (_, v) = pair?;
            stats.payloads += 1;
            stats.bytes += v.len() as u64;
        }
        Ok(stats)
    }

    /// Removes the payloads no log row of any session references, and reports each one
    /// removed. Writers of payloads wait while it runs (it marks every reference in the log,
    /// then sweeps). Read-only stores refuse it.
    pub fn gc(&self) -> Result<GcReport> {
        let inner = &self.inner;
        inner.check_writable()?;
        let _gate = inner.payload_gate.write();
        let referenced = self.payload_references()?;
        let (start, end) = payload_range();
        let mut report = GcReport::default();
        let mut batch = WriteBatch::new();
        for pair in inner.kv.scan(&start, &end) {
            let (k, v) = pair?;
            report.payloads += 1;
            report.payload_bytes += v.len() as u64;
            let hash: Option<[u8; 32]> = k.get(1..).and_then(|h| h.try_into().ok());
            match hash {
                Some(h) if referenced.contains(&h) => report.referenced += 1,
                _ => {
                    report
                        .removed
                        .push((crate::core::util::hex(&k[1..]), v.len() as u64));
                    batch.delete(k.to_vec());
                }
            }
        }
        if !batch.is_empty() {
            inner.commit(batch, crate::Durability::Sync)?;
        }
        Ok(report)
    }

    /// Every payload a log row references: one scan of the log and log-pack tables.
    fn payload_references(&self) -> Result<HashSet<[u8; 32]>> {
        let mut out = HashSet::new();
        let mut note = |row: &[u8]| -> Result<()> {
            let (_, line) =
                record::split_log(row).map_err(|e| GroveError::Corrupt(e.to_string()))?;
            if splice::is_spliced(line) {
                let (splices, _) =
                    splice::parse(line).map_err(|e| GroveError::Corrupt(e.to_string()))?;
                out.extend(splices.into_iter().map(|s| s.hash));
            }
            Ok(())
        };
        for (tag, pack) in [(keys::T_LOG, false), (keys::T_LOG_PACK, true)] {
            for pair in self.inner.kv.scan(&[tag], &[tag + 1]) {
                let (_, v) = pair?;
                let rows = if pack {
                    LogPack::parse(&v).map_err(|e| GroveError::Corrupt(e.to_string()))?
                } else {
                    match LogValue::parse(&v).map_err(|e| GroveError::Corrupt(e.to_string()))? {
                        LogValue::Row(row) => {
                            note(row)?;
                            continue;
                        }
                        LogValue::Batch(pack) => pack,
                    }
                };
                for i in 0..rows.len() {
                    if let Some(row) = rows.row(i) {
                        note(row)?;
                    }
                }
            }
        }
        Ok(out)
    }
}

fn payload_range() -> (Vec<u8>, Vec<u8>) {
    (vec![keys::T_PAYLOAD], vec![keys::T_PAYLOAD + 1])
}
