//! A write buffer in front of a backend (docs/design.md, "Write buffer").
//!
//! Commits made with `Durability::None` promise atomicity, not durability: the backend may
//! write them out later. [`BufferedKv`] takes that further: such a commit
//! ([`Kv::apply_buffered`]) goes to an in-memory **buffer**, which every read of the store
//! consults first, and the buffer is handed to the backend later as **one atomic batch** — when
//! it holds [`BUFFER_BYTES`] or [`BUFFER_OPS`] operations, every [`BUFFER_INTERVAL`] from a
//! background thread, before any other write (which is therefore applied after everything
//! buffered before it), on [`Kv::flush`], and when the store is dropped. A backend charges per
//! key and per write, so many small commits cost it one write of many keys.
//!
//! Handing the buffer over goes through a [`Coalesce`] hook given by the layer above: the
//! session log's **coalesces the log** (`crate::log::coalesce`), so single appends and small
//! batches cost the backend one key per pack of records, not one per commit. This module moves
//! bytes and knows nothing of the log format.
//!
//! A scan merges the buffer as it was when the scan began with the backend as it is (sled's
//! iterators are not snapshots); a buffered operation wins over the stored value of its key.
//! So a hand-over during a scan can move log records into a batch under a key the scan has
//! passed: readers of the log check that records come in sequence and reopen their scan at
//! a skipped one (`crate::log::rows::LogRows`).
//!
//! What a crash keeps is unchanged in kind: every batch handed over is atomic and applied in
//! order, so what survives is a prefix of the commits; a process kill may lose the commits of
//! the last [`BUFFER_INTERVAL`] more than the backend's own buffering would lose.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use super::{Guard, Kv, KvError, Pair, Scan, WriteBatch};

/// The buffer is handed to the backend once it holds this many bytes of keys and values.
pub const BUFFER_BYTES: usize = 512 * 1024;
/// … or this many operations.
pub const BUFFER_OPS: usize = 1024;
/// … or, from a background thread, at this interval when it holds anything.
pub const BUFFER_INTERVAL: Duration = Duration::from_millis(50);

/// Buffered operations by key: `Some(value)` a put, `None` a delete.
pub type Overlay = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// One buffered operation with its key.
type BufferedOp = (Vec<u8>, Option<Vec<u8>>);

#[derive(Default)]
struct State {
    /// Operations not yet handed to the backend.
    active: Overlay,
    /// Bytes of keys and values in `active`.
    bytes: usize,
    /// Operations being handed to the backend: still read from here until it has them.
    handing: Option<Arc<Overlay>>,
}

struct Shared {
    base: Box<dyn Kv>,
    coalesce: Arc<dyn Coalesce>,
    state: RwLock<State>,
    /// Held while the buffer is handed over, and while a write goes past it: one at a time,
    /// in order.
    order: Mutex<()>,
    /// Why handing the buffer over failed, if it did (reported by every later write).
    failed: Mutex<Option<String>>,
}

/// A backend with a write buffer in front (module docs).
pub struct BufferedKv {
    shared: Arc<Shared>,
    stop: Arc<Stop>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Tells the background thread to end (when the store is dropped).
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl BufferedKv {
    /// Puts a buffer in front of `base`, with a background thread that hands it over every
    /// [`BUFFER_INTERVAL`] (it ends when the store is dropped), handing the buffer over as
    /// `coalesce` makes it one batch.
    pub fn new(base: Box<dyn Kv>, coalesce: Arc<dyn Coalesce>) -> Result<BufferedKv, KvError> {
        let shared = Arc::new(Shared {
            base,
            coalesce,
            state: RwLock::new(State::default()),
            order: Mutex::new(()),
            failed: Mutex::new(None),
        });
        let weak = Arc::downgrade(&shared);
        let stop = Arc::new(Stop::default());
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("grove-write-buffer".into())
            .spawn(move || hand_over_periodically(&weak, &thread_stop))
            .map_err(|source| KvError::Io {
                context: "starting the write buffer's thread".into(),
                source,
            })?;
        Ok(BufferedKv {
            shared,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for BufferedKv {
    /// Ends the background thread first, so that the last handle of the shared state — and
    /// with it the final hand-over and the backend's own close — is dropped here, on the
    /// dropping thread, before the store's owner goes on (a process that exits right after
    /// closing its store loses nothing to a thread it did not wait for).
    fn drop(&mut self) {
        *self.stop.stopped.lock() = true;
        self.stop.cv.notify_one();
        if let Some(thread) = self.thread.take() {
            // A panic of that thread has been reported already; the hand-over below is what
            // matters now.
            let _ = thread.join();
        }
    }
}

fn hand_over_periodically(shared: &Weak<Shared>, stop: &Stop) {
    loop {
        {
            let mut stopped = stop.stopped.lock();
            if !*stopped {
                stop.cv.wait_for(&mut stopped, BUFFER_INTERVAL);
            }
            if *stopped {
                return;
            }
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if !shared.state.read().active.is_empty() {
            let _order = shared.order.lock();
            // A failure is recorded, and reported by the next write or flush.
            let _ = shared.hand_over();
        }
    }
}

impl Shared {
    /// Refuses writes once handing the buffer over has failed.
    fn check(&self) -> Result<(), KvError> {
        match self.failed.lock().as_ref() {
            Some(reason) => Err(KvError::Buffer(reason.clone())),
            None => Ok(()),
        }
    }

    /// Hands the buffer to the backend as one atomic batch. The caller holds `order`.
    fn hand_over(&self) -> Result<(), KvError> {
        self.check()?;
        let overlay = {
            let mut state = self.state.write();
            if state.active.is_empty() {
                return Ok(());
            }
            let overlay = Arc::new(std::mem::take(&mut state.active));
            state.bytes = 0;
            state.handing = Some(Arc::clone(&overlay));
            overlay
        };
        match self.base.apply(self.coalesce.coalesce(&overlay)) {
            Ok(()) => {
                self.state.write().handing = None;
                Ok(())
            }
            Err(e) => {
                // The operations stay visible (`handing`); the store takes no more writes.
                *self.failed.lock() = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// The buffered operation on `key`, if any.
    fn buffered(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let state = self.state.read();
        state
            .active
            .get(key)
            .or_else(|| state.handing.as_ref().and_then(|h| h.get(key)))
            .cloned()
    }

    /// The buffered operations on keys in `[start, end)`, ascending (the newer of two on one
    /// key).
    fn buffered_range(&self, start: &[u8], end: &[u8]) -> Vec<BufferedOp> {
        if start >= end {
            return Vec::new();
        }
        let state = self.state.read();
        let range = (Bound::Included(start), Bound::Excluded(end));
        let newer = state.active.range::<[u8], _>(range);
        let Some(handing) = &state.handing else {
            return newer.map(|(k, v)| (k.clone(), v.clone())).collect();
        };
        let mut older = handing.range::<[u8], _>(range).peekable();
        let mut newer = newer.peekable();
        let mut out = Vec::new();
        loop {
            let order = match (newer.peek(), older.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((a, _)), Some((b, _))) => a.cmp(b),
            };
            if order == std::cmp::Ordering::Equal {
                // The older operation on the key is replaced by the newer.
                older.next();
            }
            let take_newer = order != std::cmp::Ordering::Greater;
            let next = if take_newer {
                newer.next()
            } else {
                older.next()
            };
            if let Some((k, v)) = next {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }

    /// The buffered operation on the greatest buffered key in `[start, end)`, if any.
    fn last_buffered(&self, start: &[u8], end: &[u8]) -> Option<BufferedOp> {
        if start >= end {
            return None;
        }
        let state = self.state.read();
        let range = (Bound::Included(start), Bound::Excluded(end));
        let newer = state.active.range::<[u8], _>(range).next_back();
        let older = state
            .handing
            .as_ref()
            .and_then(|h| h.range::<[u8], _>(range).next_back());
        let last = match (newer, older) {
            (Some(n), Some(o)) if o.0 > n.0 => o,
            (Some(n), _) => n,
            (None, o) => o?,
        };
        Some((last.0.clone(), last.1.clone()))
    }

    /// `scan` or `scan_rev` of the backend with the buffered operations laid over it.
    fn merged(&self, start: &[u8], end: &[u8], rev: bool) -> Scan<'_> {
        let mut over = self.buffered_range(start, end);
        if over.is_empty() {
            return if rev {
                self.base.scan_rev(start, end)
            } else {
                self.base.scan(start, end)
            };
        }
        if rev {
            over.reverse();
        }
        let base = if rev {
            self.base.scan_rev(start, end)
        } else {
            self.base.scan(start, end)
        };
        Box::new(Merged {
            base: base.peekable(),
            over: over.into_iter().peekable(),
            rev,
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle is gone: what is buffered goes to the backend now. A failure here
        // has no one to report to (`Store::flush` is how a caller learns of one).
        let _ = self.hand_over();
    }
}

/// A backend scan with buffered operations laid over it, in the scan's direction.
struct Merged<'a> {
    base: std::iter::Peekable<Scan<'a>>,
    over: std::iter::Peekable<std::vec::IntoIter<BufferedOp>>,
    rev: bool,
}

impl Iterator for Merged<'_> {
    type Item = Result<Pair, KvError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_over = match (self.base.peek(), self.over.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) | (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(Ok((base_key, _))), Some((over_key, _))) => {
                    let order = over_key.cmp(base_key);
                    match if self.rev { order.reverse() } else { order } {
                        std::cmp::Ordering::Less => true,
                        std::cmp::Ordering::Greater => false,
                        std::cmp::Ordering::Equal => {
                            // The buffered operation replaces the stored value.
                            self.base.next();
                            true
                        }
                    }
                }
            };
            if !take_over {
                return self.base.next();
            }
            match self.over.next() {
                Some((key, Some(value))) => return Some(Ok((key, value))),
                Some((_, None)) => continue,
                None => return None,
            }
        }
    }
}

/// How the buffered operations are handed to the backend as one batch. The layer that knows
/// what the values are implements it: the session log coalesces consecutive log values of a
/// session into batches (`crate::log::coalesce`); [`AsTheyAre`] writes each as it is.
pub trait Coalesce: Send + Sync {
    /// The operations, in key order, as one batch.
    fn coalesce(&self, ops: &Overlay) -> WriteBatch;
}

/// Hands every buffered operation over as it is.
#[derive(Debug, Default, Clone, Copy)]
pub struct AsTheyAre;

impl Coalesce for AsTheyAre {
    fn coalesce(&self, ops: &Overlay) -> WriteBatch {
        let mut batch = WriteBatch::new();
        for (key, value) in ops {
            match value {
                Some(v) => batch.put(key.clone(), v.clone()),
                None => batch.delete(key.clone()),
            }
        }
        batch
    }
}

impl Kv for BufferedKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        match self.shared.buffered(key) {
            Some(op) => Ok(op),
            None => self.shared.base.get(key),
        }
    }

    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        match self.shared.buffered(key) {
            Some(Some(value)) => {
                read(&value);
                Ok(true)
            }
            Some(None) => Ok(false),
            None => self.shared.base.read_value(key, read),
        }
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        // The greatest buffered key below `end`, against the backend's keys above it (the
        // backend's own floor lookup, not a scan); below a buffered delete, again.
        let mut end = end.to_vec();
        loop {
            let Some((key, op)) = self.shared.last_buffered(start, &end) else {
                return self.shared.base.read_last(start, &end, read);
            };
            let mut above = key.clone();
            above.push(0);
            if self.shared.base.read_last(&above, &end, read)? {
                return Ok(true);
            }
            match op {
                Some(value) => {
                    read(&key, &value);
                    return Ok(true);
                }
                None => end = key,
            }
        }
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.shared.merged(start, end, false)
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.shared.merged(start, end, true)
    }

    /// Applies `batch` after everything buffered (which goes first, as one batch).
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        let _order = self.shared.order.lock();
        self.shared.hand_over()?;
        self.shared.base.apply(batch)
    }

    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        let _order = self.shared.order.lock();
        self.shared.hand_over()?;
        self.shared.base.apply_ordered(batch)
    }

    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        // Buffered writes go first, so the guards are checked against everything written.
        let _order = self.shared.order.lock();
        self.shared.hand_over()?;
        self.shared.base.apply_if_all(guards, batch)
    }

    fn apply_buffered(&self, batch: WriteBatch, ordered: bool) -> Result<(), KvError> {
        self.shared.check()?;
        if batch.size() >= BUFFER_BYTES {
            return if ordered {
                self.apply_ordered(batch)
            } else {
                self.apply(batch)
            };
        }
        let full = {
            let mut state = self.shared.state.write();
            state.bytes += batch.size();
            for (key, value) in batch.into_ops() {
                state.active.insert(key, value);
            }
            state.bytes >= BUFFER_BYTES || state.active.len() >= BUFFER_OPS
        };
        if full {
            let _order = self.shared.order.lock();
            self.shared.hand_over()?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), KvError> {
        {
            let _order = self.shared.order.lock();
            self.shared.hand_over()?;
        }
        self.shared.base.flush()
    }

    fn shared(&self) -> bool {
        self.shared.base.shared()
    }

    fn round_trips(&self) -> Option<u64> {
        self.shared.base.round_trips()
    }

    fn unavailable(&self) -> Option<String> {
        self.shared.base.unavailable()
    }

    fn compact(&self) -> Result<bool, KvError> {
        {
            let _order = self.shared.order.lock();
            self.shared.hand_over()?;
        }
        self.shared.base.compact()
    }

    fn name(&self) -> &'static str {
        self.shared.base.name()
    }
}
