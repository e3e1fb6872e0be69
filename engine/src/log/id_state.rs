//! The in-memory state of a session's id index ([`IdIndex`]): its runs, tail and head, as
//! [`crate::log::ids`] loads and keeps them. Types only, so that the log's shared state can
//! hold them.
//!
//! May call: nothing of grove's but records and packs.

use std::collections::HashMap;
use std::sync::OnceLock;

use compact_str::CompactString;
use grove_codec::pack::IdFilter;
use grove_codec::record::HeadRecord;
use parking_lot::RwLock;

/// Ids the tail holds before the next commit writes them as a run.
pub const ID_RUN_FLUSH: usize = 256;
/// Bytes of log rows the tail's records hold before the next commit writes their ids as a run
/// (whichever comes first): a process rebuilds the tail by reading those records, so this
/// bounds what loading a session's state reads.
pub const ID_RUN_FLUSH_BYTES: u64 = 256 * 1024;
/// Runs of one size class merged into one.
pub const ID_RUN_FANOUT: usize = 4;

/// One id run, as its description says.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) first: u64,
    pub(crate) end: u64,
    pub(crate) filter: IdFilter,
}

impl Run {
    pub(crate) fn count(&self) -> u64 {
        self.end - self.first
    }

    /// The run's size class: 0 below `FLUSH × FANOUT` ids, then one more per factor FANOUT.
    pub(crate) fn class(&self) -> u32 {
        let mut class = 0;
        let mut bound = (ID_RUN_FLUSH * ID_RUN_FANOUT) as u64;
        while self.count() >= bound {
            class += 1;
            bound = bound.saturating_mul(ID_RUN_FANOUT as u64);
        }
        class
    }
}

/// What an id lookup beyond the tail needs: read on the first such lookup, not when the
/// session is loaded (the filters take 10 bits per id, so reading them costs O(session)).
#[derive(Debug)]
pub(crate) struct Lookup {
    /// The runs, ascending: they tile `packed .. tail_from`.
    pub(crate) runs: Vec<Run>,
}

/// A session's id index and head as loaded in memory.
#[derive(Debug)]
pub(crate) struct IdIndex {
    /// The runs, read on first use.
    pub(crate) lookup: OnceLock<Lookup>,
    /// The filter of the id packs (of a session that has them), read on the first duplicate
    /// check that reaches the packs.
    pub(crate) pack_filter: OnceLock<IdFilter>,
    /// The first record of the tail.
    pub(crate) tail_from: u64,
    /// Ids of the records `tail_from ..`.
    pub(crate) tail: HashMap<CompactString, u64>,
    /// Bytes of those records' log rows.
    pub(crate) tail_bytes: u64,
    /// The session's head: the stored checkpoint folded over the records after it.
    pub(crate) head: HeadRecord,
    /// Which reading of the session's state this is: a new number each time it is read from
    /// the store (in a shared store, after another process appended), kept while this
    /// process appends ([`next_generation`]).
    pub(crate) generation: u64,
}

/// A number no state read before has: [`IdIndex::generation`].
pub(crate) fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One session's slot: `None` until first used (and after a failed commit, so that it is
/// read again from the store).
pub(crate) type IdIndexSlot = RwLock<Option<IdIndex>>;

/// Slots kept for sessions no one is using (beyond it, unused ones are dropped).
pub(crate) const ID_INDEXES_KEPT: usize = 4096;
