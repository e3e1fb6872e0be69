//! Commit notices: a count of the store's committed writes that a reader can wait on, so a
//! replay that follows a session (`grove replay --follow`) sleeps until something was
//! written instead of polling the backend.
//!
//! This room owns the count and its condition variable; the store's commit path bumps it
//! after every write it acknowledges, and readers wait on it. It calls nothing.

use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// The number of writes the store has committed since it was opened.
#[derive(Default)]
pub(crate) struct Commits {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Commits {
    /// One more write was committed.
    pub(crate) fn bump(&self) {
        *self.count.lock() += 1;
        self.changed.notify_all();
    }

    /// The count now.
    pub(crate) fn count(&self) -> u64 {
        *self.count.lock()
    }

    /// Waits until the count passes `seen` or `timeout` elapses; returns the count then.
    pub(crate) fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let mut count = self.count.lock();
        if *count == seen {
            self.changed.wait_for(&mut count, timeout);
        }
        *count
    }
}
