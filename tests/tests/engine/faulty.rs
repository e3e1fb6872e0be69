//! One backend for tests of failing and hanging backends: memory underneath, shared with the
//! test (clones share everything), whose writes fail, whose flushes fail or hang, on demand,
//! and which counts both.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use grove::kv::{Kv, KvError, MemoryKv, WriteBatch};

/// A memory backend with switches for failures (see the module doc).
#[derive(Clone, Default)]
pub struct Faulty {
    pub kv: Arc<MemoryKv>,
    /// Every apply fails (`KvError::Buffer("injected failure")`).
    pub fail_apply: Arc<AtomicBool>,
    /// Every flush fails (`KvError::Io`, "disk on fire").
    pub fail_flush: Arc<AtomicBool>,
    /// Every flush waits while this is set (as sled's after a failed log write).
    pub hang_flush: Arc<AtomicBool>,
    /// Every flush takes this many microseconds (as a disk's does).
    pub flush_micros: Arc<AtomicU64>,
    pub applies: Arc<AtomicUsize>,
    pub flushes: Arc<AtomicUsize>,
}

impl Faulty {
    pub fn set(flag: &AtomicBool, on: bool) {
        flag.store(on, Ordering::SeqCst);
    }

    pub fn count(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }
}

impl Kv for Faulty {
    grove_tests::forward_reads!(kv);
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        if self.fail_apply.load(Ordering::SeqCst) {
            return Err(KvError::Buffer("injected failure".into()));
        }
        self.applies.fetch_add(1, Ordering::SeqCst);
        self.kv.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        self.flushes.fetch_add(1, Ordering::SeqCst);
        let micros = self.flush_micros.load(Ordering::SeqCst);
        if micros > 0 {
            std::thread::sleep(Duration::from_micros(micros));
        }
        while self.hang_flush.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.fail_flush.load(Ordering::SeqCst) {
            return Err(KvError::Io {
                context: "flush".into(),
                source: std::io::Error::other("disk on fire"),
            });
        }
        self.kv.flush()
    }
    fn name(&self) -> &'static str {
        "faulty"
    }
}
