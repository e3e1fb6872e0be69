//! Commit notices: a count of the store's committed writes that a reader can wait on, so a
//! replay that follows a session (`grove replay --follow`) sleeps until something was
//! written instead of polling the backend; and listeners called after each commit, so that a
//! waiter that is not a thread (the server's followed replays, tasks on an async runtime) can
//! be woken too.
//!
//! This room owns the count, its condition variable and the listeners; the store's commit
//! path bumps it after every write it acknowledges, and readers wait on it. It calls nothing
//! but the listeners, which it holds weakly: a listener its owner dropped is forgotten.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// A function called after each commit ([`crate::Store::on_commit`]).
pub type CommitListener = dyn Fn() + Send + Sync;

/// The number of writes the store has committed since it was opened.
#[derive(Default)]
pub(crate) struct Commits {
    count: Mutex<u64>,
    changed: Condvar,
    listeners: Mutex<Vec<Weak<CommitListener>>>,
}

impl Commits {
    /// One more write was committed.
    pub(crate) fn bump(&self) {
        *self.count.lock() += 1;
        self.changed.notify_all();
        let mut listeners = self.listeners.lock();
        if listeners.is_empty() {
            return;
        }
        listeners.retain(|listener| match listener.upgrade() {
            Some(call) => {
                call();
                true
            }
            None => false,
        });
    }

    /// Calls `listener` after each commit from now on, until its owner drops it.
    pub(crate) fn listen(&self, listener: &Arc<CommitListener>) {
        let mut listeners = self.listeners.lock();
        listeners.retain(|l| l.strong_count() > 0);
        listeners.push(Arc::downgrade(listener));
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
