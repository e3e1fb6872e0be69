//! What the server remembers of the open for writing that a full disk refused at start
//! ([`FullDisk`]): the answer every write gets while the store is open only to read, and
//! whether there is room again. The mode itself (refusing writes, reopening the store) is
//! `serve/full_disk.rs`. It calls the engine's error type and `fs2` for the free space.

use std::path::PathBuf;

use grove::GroveError;

/// The open for writing the disk refused at start.
#[derive(Debug, Clone)]
pub struct FullDisk {
    /// The store directory.
    pub dir: PathBuf,
    /// The free space a writer needs there (the reserve).
    pub reserve: u64,
}

impl FullDisk {
    /// The error a write gets, with the free space now.
    pub fn error(&self) -> GroveError {
        GroveError::DiskFull {
            dir: self.dir.clone(),
            needed: 0,
            required: self.reserve,
            available: fs2::available_space(&self.dir).unwrap_or(0),
        }
    }

    /// Whether the disk has the reserve free now (`false` when the file system does not say),
    /// as the engine's open for writing asks.
    pub(in crate::serve) fn has_room(&self) -> bool {
        fs2::available_space(&self.dir).is_ok_and(|free| free >= self.reserve)
    }
}
