//! The children of an entry, read from the children index: the implicit first child (the
//! next record when it continues its parent's run), the index packs of an import and the
//! index keys of appends.
//!
//! May call: [`crate::log`], [`crate::core`], [`crate::kv`].

use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::log::handle::{Entry, Handle};
use crate::log::index_packs;

/// The children of `parent` (`None`: the roots), in log order.
pub(crate) fn children(s: &Handle, parent: Option<&str>) -> Result<Vec<Entry>> {
    let pseq = match parent {
        None => keys::ROOT,
        Some(id) => s.require_seq(id)?.0,
    };
    children_seqs(s, pseq)?
        .into_iter()
        .map(|seq| s.entry_at(seq))
        .collect()
}

/// The seqs of the children of the record at `pseq` (`keys::ROOT`: the roots), ascending:
/// the implicit first child, then the rows of the index (packs of an import, keys of
/// appends).
pub(crate) fn children_seqs(s: &Handle, pseq: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    // The implicit first child: the next record, when it continues this entry's run.
    if pseq != keys::ROOT {
        if let Some(next) = s.node_if_present(pseq + 1)? {
            if next.kind != EntryKind::Leaf.tag()
                && keys::child_row(&next, pseq + 1).is_none()
                && next.parent == grove_codec::record::Parent::Seq(pseq)
            {
                out.push(pseq + 1);
            }
        }
    }
    // Rows of an import (packs), then of appends (keys): appended seqs are the larger.
    out.extend(index_packs::packed_children(
        s.inner.kv.as_ref(),
        s.sid,
        pseq,
    )?);
    let start = keys::children_of(s.sid, pseq);
    let end = keys::prefix_end(&start);
    for pair in s.inner.kv.scan(&start, &end) {
        let (k, _) = pair?;
        out.push(keys::last_u64(&k).ok_or_else(|| GroveError::Corrupt("child key".into()))?);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
