//! Commit notices: a count of the store's committed writes that a reader can wait on, so a
//! replay that follows a session (`grove replay --follow`) sleeps until something was
//! written instead of polling the backend; and listeners called after each commit, so that a
//! waiter that is not a thread (the server's followed replays, tasks on an async runtime) can
//! be woken too.
//!
//! It also keeps, once the search index asks for them ([`Commits::watch`]), the sessions the
//! commits touched since the index last caught up ([`Commits::take_touched`]), so that the
//! index reads only those (docs/design.md, "Search").
//!
//! This room owns the count, its condition variable, the listeners and the touched sessions;
//! the store's commit path bumps it after every write it acknowledges, and readers wait on it.
//! It calls nothing but the listeners, which it holds weakly: a listener its owner dropped is
//! forgotten, and reads only the keys of a batch ([`crate::core::keys`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::core::keys;
use crate::kv::WriteBatch;

/// The most sessions kept as touched; past that, every session is (a catch-up then reads the
/// whole catalogue).
const TOUCHED_KEPT: usize = 65_536;

/// The sessions commits touched since the last [`Commits::take_touched`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Touched {
    /// The session numbers whose record, head or log rows a commit wrote or removed.
    pub(crate) sids: BTreeSet<u64>,
    /// Every session may have changed: the catalogue's id index was written (a session
    /// published or deleted), or more sessions were touched than are kept.
    pub(crate) all: bool,
}

/// What a batch tells of the sessions it touches: their numbers, and whether it writes the
/// catalogue's id index.
pub(crate) fn touched_by(batch: &WriteBatch) -> Touched {
    let mut touched = Touched::default();
    for (key, _) in batch.ops() {
        match key.first() {
            Some(&keys::T_HEAD)
            | Some(&keys::T_SESSION)
            | Some(&keys::T_LOG)
            | Some(&keys::T_LOG_PACK) => {
                if let Some(sid) = key
                    .get(1..9)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_be_bytes)
                {
                    touched.sids.insert(sid);
                }
            }
            Some(&keys::T_SESSION_ID) => touched.all = true,
            _ => {}
        }
    }
    touched
}

/// A function called after each commit ([`crate::Store::on_commit`]).
pub type CommitListener = dyn Fn() + Send + Sync;

/// The number of writes the store has committed since it was opened.
#[derive(Default)]
pub(crate) struct Commits {
    count: Mutex<u64>,
    changed: Condvar,
    listeners: Mutex<Vec<Weak<CommitListener>>>,
    /// Whether the sessions commits touch are kept ([`Commits::watch`]).
    watching: AtomicBool,
    touched: Mutex<Touched>,
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

    /// Whether a commit should say what it touched ([`Commits::note`]).
    pub(crate) fn watching(&self) -> bool {
        self.watching.load(Ordering::Acquire)
    }

    /// Keeps the sessions commits touch from now on.
    #[cfg_attr(not(feature = "search"), allow(dead_code))]
    pub(crate) fn watch(&self) {
        self.watching.store(true, Ordering::Release);
    }

    /// Adds what a committed batch touched.
    pub(crate) fn note(&self, batch: Touched) {
        let mut touched = self.touched.lock();
        touched.all |= batch.all;
        if !touched.all {
            touched.sids.extend(batch.sids);
            if touched.sids.len() > TOUCHED_KEPT {
                touched.all = true;
            }
        }
        if touched.all {
            touched.sids.clear();
        }
    }

    /// What commits touched since the last call, forgotten here.
    #[cfg_attr(not(feature = "search"), allow(dead_code))]
    pub(crate) fn take_touched(&self) -> Touched {
        std::mem::take(&mut *self.touched.lock())
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
