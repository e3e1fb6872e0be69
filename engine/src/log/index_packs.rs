//! The children index and the leaf history of a session live in two forms: an import writes
//! them as packs of up to 1,024 rows (`0x1D`, `0x1E`), an append as one key per row (`0x13`,
//! `0x14`). Readers take both (docs/format.md, "Index packs").
//!
//! Why packs: sled's open reads a snapshot of its page table and walks every page, and a page
//! holds at most 16 keys whatever their size, so a session of 1,000,000 entries with 10,000
//! branch points spent two thirds of its store's pages on these 20,000 empty rows.

use grove_codec::record::{self, ChildPackRecord, LeafPackRecord};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::util;
use crate::kv::Kv;

/// Decodes the children-index pack stored under `key`.
pub(crate) fn decode_child_pack(key: &[u8], value: &[u8]) -> Result<ChildPackRecord> {
    record::decode::<ChildPackRecord>(value)
        .map_err(|e| GroveError::Corrupt(format!("children-index pack {}: {e}", util::hex(key))))
}

/// Decodes the leaf-history pack stored under `key`.
pub(crate) fn decode_leaf_pack(key: &[u8], value: &[u8]) -> Result<LeafPackRecord> {
    record::decode::<LeafPackRecord>(value)
        .map_err(|e| GroveError::Corrupt(format!("leaf-history pack {}: {e}", util::hex(key))))
}

/// The children of `parent` (or [`keys::ROOT`]) that session `sid`'s packs hold, ascending.
/// Packs are sorted and do not overlap, so the rows of one parent lie in the last pack that
/// starts at or before it and in the packs before that one that start with it.
pub(crate) fn packed_children(kv: &dyn Kv, sid: u64, parent: u64) -> Result<Vec<u64>> {
    let start = keys::session_prefix(keys::T_CHILD_PACK, sid);
    let end = keys::prefix_end(&keys::child_packs_of(sid, parent));
    let mut out = Vec::new();
    for pair in kv.scan_rev(&start, &end) {
        let (k, v) = pair?;
        let pack = decode_child_pack(&k, &v)?;
        out.extend(
            pack.rows
                .iter()
                .filter(|&&(p, _)| p == parent)
                .map(|&(_, c)| c),
        );
        if pack.rows.first().is_none_or(|&(p, _)| p < parent) {
            break;
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The seqs of session `sid`'s leaf records, from its packs and its rows, ascending.
pub(crate) fn leaf_seqs(kv: &dyn Kv, sid: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let start = keys::session_prefix(keys::T_LEAF_PACK, sid);
    for pair in kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, v) = pair?;
        out.extend(decode_leaf_pack(&k, &v)?.seqs);
    }
    let start = keys::session_prefix(keys::T_LEAF_HISTORY, sid);
    for pair in kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, _) = pair?;
        out.push(keys::last_u64(&k).ok_or_else(|| GroveError::Corrupt("leaf key".into()))?);
    }
    out.sort_unstable();
    Ok(out)
}
