//! The session log's state shared by every handle of an open store ([`Logs`]): the core's
//! shared state, each session's writer lock with its [`Tip`], each session's id index, what
//! the catalogue knows of sessions this process opened, and the hook a layer above gives to
//! run before a session's write (the context views persist a due view with it).
//!
//! May call: [`crate::core`], [`crate::kv`], the log's [`tip`](crate::log::tip) and
//! [`ids`](crate::log::ids) for their types.

use std::collections::HashMap;
use std::sync::Arc;

use grove_codec::record::SessionRecord;
use parking_lot::Mutex;

use crate::core::error::Result;
use crate::core::shared::Inner;
use crate::log::id_state::{IdIndexSlot, ID_INDEXES_KEPT};
use crate::log::tip::{Tip, SESSION_LOCKS_KEPT};

/// Called by a session's writer under its writer lock, before its transaction, with the
/// session's leaf (a layer above keeps a cache to write out with the write).
pub(crate) trait BeforeWrite: Send + Sync {
    /// Runs before a write of session `sid` (its `record` and packed count `packed`) whose
    /// leaf is `leaf`. A failure is the cache's, not the writer's: it is ignored.
    fn before_write(
        &self,
        logs: &Arc<Logs>,
        sid: u64,
        record: &Arc<SessionRecord>,
        packed: u64,
        leaf: Option<u64>,
    ) -> Result<()>;
}

/// The session log's shared state (module docs).
pub(crate) struct Logs {
    pub(crate) inner: Arc<Inner>,
    session_locks: Mutex<HashMap<u64, Arc<Mutex<Tip>>>>,
    /// Each session's id index, loaded on first use ([`crate::log::ids`]).
    id_indexes: Mutex<HashMap<u64, Arc<IdIndexSlot>>>,
    /// What a session's number stands for, read once: its record and packed count, written
    /// when the session is and never changed (a number is not reused), so that opening a
    /// session by id reads only its catalogue row.
    pub(crate) described: Mutex<HashMap<u64, (Arc<SessionRecord>, u64)>>,
    /// The session numbers of ids this process opened, for `Store::session_for_write` in a
    /// shared store: trusted without reading the catalogue row, because every commit there
    /// checks that row in its own statement.
    pub(crate) named: Mutex<HashMap<String, u64>>,
    before_write: Option<Arc<dyn BeforeWrite>>,
}

impl Logs {
    /// The log state of the open store `inner`, running `before_write` before each session's
    /// write.
    pub(crate) fn new(inner: Arc<Inner>, before_write: Option<Arc<dyn BeforeWrite>>) -> Logs {
        Logs {
            inner,
            session_locks: Mutex::new(HashMap::new()),
            id_indexes: Mutex::new(HashMap::new()),
            described: Mutex::new(HashMap::new()),
            named: Mutex::new(HashMap::new()),
            before_write,
        }
    }

    /// The writer lock of session `sid`, which also guards its [`Tip`]: writes to a session
    /// are serialized, writes to different sessions are not. Locks nobody holds are dropped
    /// once more than [`SESSION_LOCKS_KEPT`] sessions have one, so memory stays bounded when a
    /// process writes many sessions.
    pub(crate) fn session_lock(&self, sid: u64) -> Arc<Mutex<Tip>> {
        let mut locks = self.session_locks.lock();
        if locks.len() >= SESSION_LOCKS_KEPT && !locks.contains_key(&sid) {
            locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        locks.entry(sid).or_default().clone()
    }

    /// The id-index slot of session `sid`.
    pub(crate) fn id_index(&self, sid: u64) -> Arc<IdIndexSlot> {
        let mut slots = self.id_indexes.lock();
        if slots.len() >= ID_INDEXES_KEPT && !slots.contains_key(&sid) {
            slots.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        slots.entry(sid).or_default().clone()
    }

    /// Forgets a session's id index (it was deleted).
    pub(crate) fn forget_id_index(&self, sid: u64) {
        self.id_indexes.lock().remove(&sid);
    }

    /// Runs the before-write hook for session `sid` at `leaf` (its failure is ignored).
    pub(crate) fn before_write(
        self: &Arc<Logs>,
        sid: u64,
        record: &Arc<SessionRecord>,
        packed: u64,
        leaf: Option<u64>,
    ) {
        if let Some(hook) = &self.before_write {
            let _ = hook.before_write(self, sid, record, packed, leaf);
        }
    }

    /// Whether `id` still names session `sid` in the catalogue; when it does not (another
    /// process deleted the session), this process forgets the name
    /// (`Store::session_for_write`).
    pub(crate) fn still_listed(&self, id: &str, sid: u64) -> Result<bool> {
        let listed = self.inner.sid_of(id)? == Some(sid);
        if !listed {
            let mut named = self.named.lock();
            if named.get(id) == Some(&sid) {
                named.remove(id);
            }
        }
        Ok(listed)
    }
}
