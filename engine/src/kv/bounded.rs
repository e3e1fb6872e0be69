//! A backend whose flushes and whose closing are waited for at most a bound. sled 0.34 can
//! wait forever in a flush after one of its log writes failed (another process filled the
//! disk between grove's free-space check and sled's write: docs/design.md, "A full disk"),
//! and it flushes again when its last handle is dropped. [`Bounded`] runs both on a worker
//! thread of its own and waits for them at most [`Bounded::new`]'s `timeout` (flushes only
//! while the disk is near full, as the store's free-space guard last saw it: the hand-over
//! to the worker costs a sync append about a third more, and a disk with room does not make
//! sled wait): a flush that
//! takes longer is [`KvError::Stalled`] (the store takes it for a failed flush and refuses
//! writes; reads go on), and a close that takes longer is abandoned — the process goes on, and
//! the backend's files stay as its last completed flush left them.
//!
//! Every other call goes to the backend directly: only a flush waits on the disk. This module
//! calls only the backend it wraps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam::channel::{bounded, Receiver, RecvTimeoutError, Sender};

use super::forward::Forward;
use super::{Kv, KvError};

/// The default bound of a flush and of closing ([`crate::StoreConfig::flush_timeout`]).
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(60);

enum Job<K> {
    /// Flush, and answer.
    Flush(Sender<Result<(), KvError>>),
    /// Drop this handle (the last one: closing the backend), then answer.
    Close(Arc<K>, Sender<()>),
}

/// A backend whose flushes and closing wait at most a bound.
pub struct Bounded<K: Kv + 'static> {
    /// `None` only while being dropped.
    kv: Option<Arc<K>>,
    jobs: Sender<Job<K>>,
    timeout: Duration,
    /// A flush did not finish within the bound: the worker may never take another job.
    stalled: AtomicBool,
    /// Set while the disk has room (the store's free-space guard says so): flushes run on
    /// the caller's thread then, since only a disk near full makes sled wait forever.
    roomy: Arc<AtomicBool>,
}

impl<K: Kv + 'static> Bounded<K> {
    /// Wraps `kv`; a flush or the close taking longer than `timeout` is given up on. While
    /// `roomy` is set, flushes are made on the caller's thread, without the bound.
    pub fn new(kv: K, timeout: Duration, roomy: Arc<AtomicBool>) -> Result<Bounded<K>, KvError> {
        let kv = Arc::new(kv);
        // A rendezvous channel: a job is handed over only to a worker that is waiting for one.
        let (jobs, queue) = bounded::<Job<K>>(0);
        let worker = Arc::clone(&kv);
        std::thread::Builder::new()
            .name(format!("grove-{}-flush", kv.name()))
            .spawn(move || work(worker, queue))
            .map_err(|source| KvError::Io {
                context: "starting the flush thread".to_owned(),
                source,
            })?;
        Ok(Bounded {
            kv: Some(kv),
            jobs,
            timeout,
            stalled: AtomicBool::new(false),
            roomy,
        })
    }

    fn kv(&self) -> Result<&K, KvError> {
        self.kv.as_deref().ok_or(KvError::Closed)
    }

    fn stalled(&self, what: &'static str) -> KvError {
        self.stalled.store(true, Ordering::Relaxed);
        KvError::Stalled {
            backend: self.kv.as_deref().map_or("backend", Kv::name),
            what,
            waited: self.timeout,
        }
    }
}

/// The worker: flushes on request; on close drops the last handle (the backend's own close).
fn work<K: Kv>(kv: Arc<K>, queue: Receiver<Job<K>>) {
    for job in queue.iter() {
        match job {
            Job::Flush(answer) => {
                let _ = answer.send(kv.flush());
            }
            Job::Close(last, answer) => {
                drop(kv);
                drop(last);
                let _ = answer.send(());
                return;
            }
        }
    }
}

impl<K: Kv + 'static> Forward for Bounded<K> {
    fn inner(&self) -> Result<&dyn Kv, KvError> {
        Ok(self.kv()?)
    }

    fn flush(&self) -> Result<(), KvError> {
        if self.stalled.load(Ordering::Relaxed) {
            return Err(self.stalled("flush"));
        }
        if self.roomy.load(Ordering::Relaxed) {
            return self.kv()?.flush();
        }
        let (answer, outcome) = bounded(1);
        // A worker still inside an earlier flush takes no new job: that flush stalled.
        self.jobs
            .send_timeout(Job::Flush(answer), self.timeout)
            .map_err(|_| self.stalled("flush"))?;
        match outcome.recv_timeout(self.timeout) {
            Ok(result) => result,
            // A worker gone without an answer (it cannot panic: the backend is guarded) is
            // treated as one that never answers.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                Err(self.stalled("flush"))
            }
        }
    }

    fn name(&self) -> &'static str {
        self.kv.as_deref().map_or("backend", Kv::name)
    }
}

impl<K: Kv + 'static> Drop for Bounded<K> {
    fn drop(&mut self) {
        let Some(kv) = self.kv.take() else { return };
        if self.stalled.load(Ordering::Relaxed) {
            // The worker holds a handle and may never return from its flush.
            return;
        }
        // The worker drops the last handle, so the backend's own close (sled flushes) runs
        // there; it is waited for at most the bound. A worker stuck in a flush never takes
        // the job, and the backend is left open until the process ends.
        let (answer, closed) = bounded(1);
        if self
            .jobs
            .send_timeout(Job::Close(kv, answer), self.timeout)
            .is_ok()
        {
            let _ = closed.recv_timeout(self.timeout);
        }
    }
}
