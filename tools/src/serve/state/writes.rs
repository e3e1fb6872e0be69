//! The write requests in flight ([`Writes`]), for health: when each began, so that a write
//! stuck for longer than `--health-timeout` makes the server unhealthy. A middleware of the
//! routes (`routes/server.rs`) begins one per write request; it ends when dropped. It calls
//! nothing of the server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The write requests in flight: when each began.
#[derive(Default)]
pub struct Writes {
    next: AtomicU64,
    started: Mutex<BTreeMap<u64, Instant>>,
}

/// One write request in flight; it is over when this is dropped.
pub(in crate::serve) struct InFlight<'a> {
    writes: &'a Writes,
    ticket: u64,
}

impl Writes {
    pub(in crate::serve) fn begin(&self) -> InFlight<'_> {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        self.started.lock().insert(ticket, Instant::now());
        InFlight {
            writes: self,
            ticket,
        }
    }

    /// How long the oldest write in flight has been running.
    pub(in crate::serve) fn oldest(&self) -> Option<Duration> {
        self.started
            .lock()
            .first_key_value()
            .map(|(_, at)| at.elapsed())
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.writes.started.lock().remove(&self.ticket);
    }
}
