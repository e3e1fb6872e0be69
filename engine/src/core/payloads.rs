//! The payload store: JSON string values of at least the store's threshold (base64 images,
//! large tool outputs) are kept once, under their blake3 (`0x20 ++ hash`), and the log row
//! holds its line with those values cut out and a table of where they go
//! ([`grove_codec::splice`]); a payload that is canonical base64 is stored as the bytes it
//! decodes to ([`grove_codec::payload`]). Within a session and across sessions, the same bytes are stored
//! once; a fork writes the cut lines only.
//!
//! Every read of a line joins it back (the decode of a log row calls [`expand`]), so contexts,
//! exports, digests and seals see the original bytes. A payload is removed only by
//! [`crate::Store::gc`] (`crate::maintain::gc`), which removes those no log row references
//! and reports each one; deleting a session removes none.
//!
//! This room owns the cut on the write path and the join on the read path. It
//! calls the codec's splice format and the key-value trait; the write path and the row decoder
//! call it. docs/design.md, "Payloads", explains the design.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::Ordering;

use grove_codec::{payload, splice};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::Inner;
use crate::kv::{Kv, WriteBatch};

/// The default threshold: string values of 4 KiB or more are payloads.
pub const DEFAULT_PAYLOAD_THRESHOLD: usize = 4096;

/// Payloads a transaction has staged or found stored, so each is checked once.
#[derive(Default)]
pub(crate) struct SeenPayloads(HashSet<[u8; 32]>);

impl Inner {
    /// The stored form of `line`: cut, with its payloads that are not stored yet put into
    /// `batch`; `None` when the line has no payload (or the store keeps none).
    pub(crate) fn stage_line(
        &self,
        line: &[u8],
        batch: &mut WriteBatch,
        staged: &mut SeenPayloads,
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
                batch.put(key, payload::stored_form(bytes).into_owned());
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
    let line = splice::join(stored, |hash, line| {
        // Read in place: the value goes into the line (encoded again when stored decoded)
        // without a copy of its own.
        let mut joined = Ok(());
        let found = kv
            .read_value(&keys::payload(hash), &mut |value| {
                joined = payload::line_form_into(value, line);
            })
            .map_err(|e| grove_codec::CodecError::CorruptRecord(e.to_string()))?;
        if !found {
            return Err(grove_codec::CodecError::CorruptRecord(format!(
                "payload {} is missing",
                grove_codec::digest::hex(hash)
            )));
        }
        joined
    })
    .map_err(|e| GroveError::Corrupt(e.to_string()))?;
    Ok(Cow::Owned(line))
}

/// Payload counts of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadStats {
    /// Payloads stored.
    pub payloads: u64,
    /// Their bytes as stored (a payload of base64 text: the bytes it decodes to).
    pub bytes: u64,
}

/// Sets the payload threshold: string values of at least `threshold` bytes written from
/// now on are stored once as payloads; `None` (or 0) stores every line whole. Lines
/// already written stay as they are.
pub(crate) fn set_payload_threshold(inner: &Inner, threshold: Option<usize>) {
    inner
        .payload_threshold
        .store(threshold.unwrap_or(0), Ordering::Relaxed);
}

/// The payloads stored and their bytes (one scan of the payload table).
pub(crate) fn payload_stats(inner: &Inner) -> Result<PayloadStats> {
    let (start, end) = payload_range();
    let mut stats = PayloadStats::default();
    for pair in inner.kv.scan(&start, &end) {
        let (_, v) = pair?;
        stats.payloads += 1;
        stats.bytes += v.len() as u64;
    }
    Ok(stats)
}

pub(crate) fn payload_range() -> (Vec<u8>, Vec<u8>) {
    (vec![keys::T_PAYLOAD], vec![keys::T_PAYLOAD + 1])
}
