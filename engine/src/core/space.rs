//! The free-space guard: a write is refused with [`GroveError::DiskFull`] **before** it
//! reaches the backend when the disk holding the store could not take it and keep a reserve
//! (docs/design.md, "A full disk"). Neither backend copes with running out of space: sled
//! 0.34 loses the failed write of its log buffer and waits forever in the next flush, and
//! redb refuses every later write until it is reopened. Refusing early keeps the backend away
//! from ENOSPC, so every operation stays whole or absent and writing resumes as soon as space
//! is freed (the next write asks the file system again).
//!
//! The guard asks the file system (`statvfs`) at most once per [`RECHECK`] (250 ms) while the
//! disk has more than [`TRUSTED`] bytes to spare past the reserve and the write, so an append
//! on a roomy disk costs a subtraction; closer to full it asks before every write, so that
//! another process filling the disk is seen at once (not up to 250 ms later, when sled may
//! already have run out of space in its own log). This module owns that bookkeeping; it calls
//! only the file system.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::core::error::{GroveError, Result};

/// The default free space a store keeps in reserve (see [`crate::StoreConfig::disk_reserve`]):
/// room for the backend's own work past the bytes of a write (sled's next 512 KiB log segment,
/// its snapshot, a blob file; redb's next region).
pub const DEFAULT_RESERVE: u64 = 4 << 20;

/// How much a write may take on disk, as a multiple of its bytes (sled writes a value to its
/// log and again when it rewrites the page; large values go to blob files).
const OVERHEAD: u64 = 3;

/// The longest the guard trusts an answer of the file system (another process may fill the
/// disk meanwhile).
pub const RECHECK: Duration = Duration::from_millis(250);

/// The margin past the reserve and the write above which the guard trusts an answer of the
/// file system for [`RECHECK`]; below it, every write asks again.
pub const TRUSTED: u64 = 64 << 20;

/// Free space past the reserve above which the disk has room: a flush then runs on the
/// caller's thread, without the bound of [`crate::kv::Bounded`] and its hand-over to a
/// worker thread (which costs a sync append about a third more).
pub const ROOMY: u64 = 256 << 20;

/// The guard of one store directory.
pub(crate) struct Space {
    dir: PathBuf,
    reserve: u64,
    state: Mutex<State>,
    /// Whether the disk had [`ROOMY`] bytes past the reserve at the last answer.
    roomy: Option<Arc<AtomicBool>>,
}

struct State {
    /// Bytes that may still be written before the file system is asked again.
    budget: u64,
    asked: Option<Instant>,
}

fn available(dir: &Path) -> Result<u64> {
    fs2::available_space(dir).map_err(|source| GroveError::Io {
        path: dir.to_owned(),
        source,
    })
}

/// Refuses to open the store in `dir` for writing when its disk has less than `reserve`
/// bytes free: both backends write at open (sled a new log segment, and it zeroes and syncs
/// free ones; redb its repair), and sled may then wait forever on the disk it filled.
pub(crate) fn room_to_open(dir: &Path, reserve: u64) -> Result<()> {
    let free = available(dir)?;
    if free < reserve {
        return Err(GroveError::DiskFull {
            dir: dir.to_owned(),
            needed: 0,
            required: reserve,
            available: free,
        });
    }
    Ok(())
}

/// Whether the disk holding `dir` has at least `reserve` bytes free (`false` when the file
/// system does not say).
pub(crate) fn has_room(dir: &Path, reserve: u64) -> bool {
    available(dir).is_ok_and(|free| free >= reserve)
}

impl Space {
    /// The guard of `dir`, keeping `reserve` bytes free; it tells `roomy` whether the disk
    /// has room ([`ROOMY`]) each time it asks the file system.
    pub(crate) fn new(dir: &Path, reserve: u64, roomy: Option<Arc<AtomicBool>>) -> Space {
        let space = Space {
            dir: dir.to_owned(),
            reserve,
            state: Mutex::new(State {
                budget: 0,
                asked: None,
            }),
            roomy,
        };
        if let Ok(free) = available(dir) {
            space.tell(free);
        }
        space
    }

    fn tell(&self, free: u64) {
        if let Some(roomy) = &self.roomy {
            let room = free >= self.reserve.saturating_add(ROOMY);
            roomy.store(room, Ordering::Relaxed);
        }
    }

    /// Admits a write of `bytes`, or refuses it when the disk cannot take it and the reserve.
    pub(crate) fn admit(&self, bytes: usize) -> Result<()> {
        let cost = (bytes as u64).saturating_mul(OVERHEAD);
        let mut state = self.state.lock();
        let fresh = state.asked.is_some_and(|at| at.elapsed() < RECHECK);
        if fresh && state.budget >= cost.saturating_add(TRUSTED) {
            state.budget -= cost;
            return Ok(());
        }
        let free = available(&self.dir)?;
        self.tell(free);
        state.asked = Some(Instant::now());
        let required = cost.saturating_add(self.reserve);
        if free < required {
            state.budget = 0;
            return Err(GroveError::DiskFull {
                dir: self.dir.clone(),
                needed: bytes as u64,
                required,
                available: free,
            });
        }
        state.budget = free - required;
        Ok(())
    }
}
