//! The store's own operation log (`21 ++ n`, docs/format.md "StoreOpRecord"): operations on
//! the store as a whole — a retention run — each written when it begins (`started`, what a
//! crash leaves) and rewritten when it ends (`done`), so none is silent. And the pins that
//! retention spares (`08 ++ sid`).
//!
//! May call: [`crate::core`], [`crate::kv`].

use grove_codec::record::StoreOpRecord;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::Inner;
use crate::kv::{Durability, WriteBatch};

/// The number the next store operation gets (one past the last).
fn next_number(inner: &Inner) -> Result<u64> {
    let start = vec![keys::T_STORE_OP];
    let mut last = None;
    inner
        .kv
        .read_last(&start, &keys::prefix_end(&start), &mut |k, _| {
            last = keys::last_u64(k);
        })?;
    Ok(last.map_or(0, |n| n + 1))
}

/// Writes `record` as a new store operation, durably; its number. Under the catalogue lock,
/// so two operations never take one number.
pub(crate) fn begin(inner: &Inner, record: &StoreOpRecord) -> Result<u64> {
    let _guard = inner.catalogue.lock();
    let n = next_number(inner)?;
    let mut batch = WriteBatch::new();
    batch.put(keys::store_op(n), grove_codec::record::encode(record));
    inner.commit(batch, Durability::Sync)?;
    Ok(n)
}

/// Rewrites store operation `n` (its end), durably.
pub(crate) fn finish(inner: &Inner, n: u64, record: &StoreOpRecord) -> Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(keys::store_op(n), grove_codec::record::encode(record));
    inner.commit(batch, Durability::Sync)
}

/// Every store operation, oldest first, with its number.
pub(crate) fn list(inner: &Inner) -> Result<Vec<(u64, StoreOpRecord)>> {
    let start = vec![keys::T_STORE_OP];
    let mut out = Vec::new();
    for pair in inner.kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, v) = pair?;
        let n = keys::last_u64(&k)
            .ok_or_else(|| GroveError::Corrupt("store operation key".to_owned()))?;
        let record: StoreOpRecord = grove_codec::record::decode(&v)
            .map_err(|e| GroveError::Corrupt(format!("store operation {n}: {e}")))?;
        out.push((n, record));
    }
    Ok(out)
}

/// Pins (`true`) or unpins session number `sid`.
pub(crate) fn set_pinned(inner: &Inner, sid: u64, pinned: bool) -> Result<()> {
    let mut batch = WriteBatch::new();
    match pinned {
        true => batch.put(keys::pin(sid), Vec::new()),
        false => batch.delete(keys::pin(sid)),
    }
    inner.commit(batch, inner.durability)
}

/// Whether session number `sid` is pinned.
pub(crate) fn is_pinned(inner: &Inner, sid: u64) -> Result<bool> {
    Ok(inner.kv.get(&keys::pin(sid))?.is_some())
}
