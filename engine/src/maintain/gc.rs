//! Payload collection: removes the payloads ([`crate::core::payloads`]) no log row of any
//! session references, marking every reference in the log, then sweeping; before that it
//! finishes every session's redactions ([`crate::ops::redact::finish`]) and removes the
//! catalogue index rows of sessions no longer listed.
//!
//! May call: [`crate::ops`], [`crate::log`], [`crate::core`], [`crate::kv`].

use std::collections::HashSet;
use std::sync::Arc;

use grove_codec::pack::{LogPack, LogValue};
use grove_codec::record::SessionRecord;
use grove_codec::{record, splice};

use crate::context::views::Views;
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::payloads::payload_range;
use crate::core::shared::Inner;
use crate::kv::{Durability, WriteBatch};
use crate::log::handle::Handle;
use crate::log::shared::Logs;

/// What [`crate::Store::gc`] did.
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
    /// Redactions a crash had left recorded but not applied, applied now.
    pub redactions_applied: u64,
    /// Whether redactions were made since the backend's files were last rewritten: they may
    /// still hold redacted bytes in their free space until `grove gc` rewrites them
    /// (`Store::rewrite`), which a store open elsewhere (a server, a native
    /// package) cannot do.
    pub rewrite_due: bool,
    /// Whether the search index's segments were rewritten without deleted documents.
    pub search_compacted: bool,
    /// Whether the backend rewrote its storage in place because a redaction asked for it
    /// (PostgreSQL: `VACUUM FULL` of the store's table), which leaves `rewrite_due` false.
    pub backend_compacted: bool,
    /// Catalogue index rows removed: rows of sessions no longer listed (a deletion removes
    /// the rows its session's record and current labels name; the label rows of labels
    /// changed since and the last-activity row of a later hour are left to this sweep), and
    /// last-activity rows of an hour that is no longer their session's.
    pub catalogue_rows_removed: u64,
}

impl GcReport {
    /// Bytes removed.
    pub fn removed_bytes(&self) -> u64 {
        self.removed.iter().map(|(_, b)| b).sum()
    }
}

/// Removes the payloads no log row of any session references, and reports each one
/// removed. Writers of payloads wait while it runs (it marks every reference in the log,
/// then sweeps). Read-only stores refuse it.
pub(crate) fn gc(logs: &Arc<Logs>, views: &Views) -> Result<GcReport> {
    let inner = &*logs.inner;
    inner.check_writable()?;
    // Redactions first: a row they rewrite drops its references to payloads.
    let mut applied = 0;
    let listed = vec![keys::T_SESSION_ID];
    let mut sids = Vec::new();
    for pair in inner.kv.scan(&listed, &keys::prefix_end(&listed)) {
        let (_, v) = pair?;
        sids.extend(keys::u64_value(&v));
    }
    for sid in sids {
        let Some(record) = inner.get::<SessionRecord>(&keys::session(sid))? else {
            continue;
        };
        let handle = Handle::open(logs.clone(), sid, record)?;
        applied += crate::ops::redact::finish(&handle, views)?;
    }
    let catalogue_rows_removed = sweep_catalogue_indexes(logs)?;
    let _gate = inner.payload_gate.write();
    let referenced = payload_references(inner)?;
    let (start, end) = payload_range();
    let mut report = GcReport {
        redactions_applied: applied,
        catalogue_rows_removed,
        rewrite_due: inner.kv.get(&keys::meta(keys::META_REWRITE_DUE))?.is_some(),
        ..GcReport::default()
    };
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
        inner.commit(batch, Durability::Sync)?;
    }
    if report.rewrite_due {
        report.backend_compacted = compact_backend(inner)?;
        report.rewrite_due = !report.backend_compacted;
    }
    Ok(report)
}

/// Asks the backend to rewrite its storage in place ([`crate::kv::Kv::compact`]); whether it
/// did. The `rewrite_due` mark goes first, so a redaction committed meanwhile marks it again
/// (or is rewritten with the rest); it comes back if the rewrite fails.
fn compact_backend(inner: &Inner) -> Result<bool> {
    let due = keys::meta(keys::META_REWRITE_DUE);
    let mut batch = WriteBatch::new();
    batch.delete(due.clone());
    inner.commit(batch, Durability::Sync)?;
    let done = inner.kv.compact();
    if !matches!(done, Ok(true)) {
        let mut batch = WriteBatch::new();
        batch.put(due, Vec::new());
        inner.commit(batch, Durability::Sync)?;
    }
    Ok(done?)
}

/// Removes the catalogue index rows (`0x09`–`0x0C`) whose session is no longer listed under
/// its id with its number, and the last-activity rows of an hour that is no longer the
/// session's; how many. A row and its listing are written in one batch, and a deletion
/// unlists the session before it removes the rows, so such a row is never a session's on its
/// way in; a last-activity row is written by the append that makes it current.
fn sweep_catalogue_indexes(logs: &Arc<Logs>) -> Result<u64> {
    let inner = &*logs.inner;
    let mut removed = 0;
    let mut batch = WriteBatch::new();
    for (tag, prefix, tail) in [
        (keys::T_BY_CWD, 17, 0),
        (keys::T_BY_CREATED, 9, 0),
        (keys::T_BY_LABEL, 17, 8),
        (keys::T_BY_UPDATED, 9, 0),
    ] {
        for pair in inner.kv.scan(&[tag], &[tag + 1]) {
            let (key, _) = pair?;
            let listed = match keys::catalogue_entry(&key, prefix, tail) {
                Some((id, sid)) if inner.sid_of(&id)? == Some(sid) => {
                    tag != keys::T_BY_UPDATED || current_hour(logs, sid, &key)?
                }
                _ => false,
            };
            if !listed {
                batch.delete(key);
                removed += 1;
            }
            if batch.len() >= 10_000 {
                inner.commit(std::mem::take(&mut batch), Durability::None)?;
            }
        }
    }
    if !batch.is_empty() {
        inner.commit(batch, Durability::Sync)?;
    }
    Ok(removed)
}

/// Whether the last-activity row `key` of session `sid` is of its last activity's hour.
fn current_hour(logs: &Arc<Logs>, sid: u64, key: &[u8]) -> Result<bool> {
    let Some(record) = logs.inner.get::<SessionRecord>(&keys::session(sid))? else {
        return Ok(false);
    };
    let created = record.created.clone();
    let last = Handle::open(logs.clone(), sid, record)?
        .head()?
        .last_timestamp;
    let hour = crate::log::catalogue::activity_hour(last.as_deref(), &created);
    Ok(hour.is_some() && hour == keys::updated_hour(key))
}

/// Every payload a log row references: one scan of the log and log-pack tables.
fn payload_references(inner: &Inner) -> Result<HashSet<[u8; 32]>> {
    let mut out = HashSet::new();
    let mut note = |row: &[u8]| -> Result<()> {
        let (_, line) = record::split_log(row).map_err(|e| GroveError::Corrupt(e.to_string()))?;
        if splice::is_spliced(line) {
            let (splices, _) =
                splice::parse(line).map_err(|e| GroveError::Corrupt(e.to_string()))?;
            out.extend(splices.into_iter().map(|s| s.hash));
        }
        Ok(())
    };
    for (tag, pack) in [(keys::T_LOG, false), (keys::T_LOG_PACK, true)] {
        for pair in inner.kv.scan(&[tag], &[tag + 1]) {
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
