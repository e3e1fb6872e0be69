//! A backend whose panics become errors. sled and redb panic on some damaged pages (redb's
//! `unreachable!` on a page whose type byte was changed, sled's asserts on a damaged page
//! table); [`Guarded`] wraps every call into the backend — scans included, item by item — in
//! `catch_unwind` and turns a panic into [`KvError::Panic`], so that a damaged store answers
//! with an error the caller can report and a server goes on serving. After a panic the
//! backend may hold a lock it did not release or a half-made change in memory, so the
//! store takes it for a failed write (it is poisoned: reads go on, writes are refused).
//!
//! [`quiet_backend_panics`] keeps the panic hook from printing what became an error.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::forward::Forward;
use super::{Kv, KvError, Pair, Scan};

thread_local! {
    static IN_BACKEND: Cell<u32> = const { Cell::new(0) };
}

/// Installs a panic hook that stays silent for panics inside a guarded backend call (they
/// are returned as [`KvError::Panic`]) and hands every other panic to the hook before it.
/// For programs (the `grove` CLI, a server) that print errors themselves.
pub fn quiet_backend_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if IN_BACKEND.with(Cell::get) == 0 {
            previous(info);
        }
    }));
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Runs `f`, a call into backend `backend` (opening it included), turning a panic into
/// [`KvError::Panic`].
pub(crate) fn guarded<T>(
    backend: &'static str,
    f: impl FnOnce() -> Result<T, KvError>,
) -> Result<T, KvError> {
    IN_BACKEND.with(|n| n.set(n.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    IN_BACKEND.with(|n| n.set(n.get().saturating_sub(1)));
    result.unwrap_or_else(|payload| {
        Err(KvError::Panic {
            backend,
            message: message(&*payload),
        })
    })
}

/// A backend whose panics are errors.
pub struct Guarded<K> {
    kv: K,
}

impl<K: Kv> Guarded<K> {
    /// Guards `kv`.
    pub fn new(kv: K) -> Guarded<K> {
        Guarded { kv }
    }
}

/// A scan whose items are read under the guard; it ends after a panic.
struct GuardedScan<'a> {
    backend: &'static str,
    inner: Option<Scan<'a>>,
    /// The bounds asked for and the direction: every key handed out must lie in
    /// `start .. end` and follow the one before it in scan order.
    start: Vec<u8>,
    end: Vec<u8>,
    rev: bool,
    /// The key handed out before (reused, so the check allocates once per scan).
    prev: Option<Vec<u8>>,
}

impl GuardedScan<'_> {
    /// Whether `key` may come next: inside the bounds and after the previous key in scan
    /// order. A damaged page can make a backend return keys it never stored (redb hands out
    /// the zeroed keys of a zeroed leaf page), which would otherwise read as a shorter range.
    fn in_order(&mut self, key: &[u8]) -> bool {
        let inside = key >= self.start.as_slice() && key < self.end.as_slice();
        let after = match &self.prev {
            None => true,
            Some(p) if self.rev => key < p.as_slice(),
            Some(p) => key > p.as_slice(),
        };
        let prev = self.prev.get_or_insert_with(Vec::new);
        prev.clear();
        prev.extend_from_slice(key);
        inside && after
    }
}

impl Iterator for GuardedScan<'_> {
    type Item = Result<Pair, KvError>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        match guarded(self.backend, || Ok(inner.next())) {
            Ok(Some(Ok((k, v)))) => {
                if self.in_order(&k) {
                    Some(Ok((k, v)))
                } else {
                    self.inner = None;
                    Some(Err(KvError::Disorder {
                        backend: self.backend,
                    }))
                }
            }
            Ok(item) => item,
            Err(e) => {
                self.inner = None;
                Some(Err(e))
            }
        }
    }
}

impl<K: Kv> Guarded<K> {
    fn scan_with<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        rev: bool,
        open: impl FnOnce() -> Scan<'a>,
    ) -> Scan<'a> {
        let backend = self.kv.name();
        match guarded(backend, || Ok(open())) {
            Ok(inner) => Box::new(GuardedScan {
                backend,
                inner: Some(inner),
                start: start.to_vec(),
                end: end.to_vec(),
                rev,
                prev: None,
            }),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }
}

impl<K: Kv> Forward for Guarded<K> {
    fn inner(&self) -> Result<&dyn Kv, KvError> {
        Ok(&self.kv)
    }

    /// Every call runs under the panic guard.
    fn call<T>(&self, call: impl FnOnce(&dyn Kv) -> Result<T, KvError>) -> Result<T, KvError> {
        guarded(self.kv.name(), || call(&self.kv))
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        let mut outside = false;
        let found = guarded(self.kv.name(), || {
            self.kv.read_last(start, end, &mut |k, v| {
                if k >= start && k < end {
                    read(k, v);
                } else {
                    outside = true;
                }
            })
        })?;
        if outside {
            return Err(KvError::Disorder {
                backend: self.kv.name(),
            });
        }
        Ok(found)
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.scan_with(start, end, false, || self.kv.scan(start, end))
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.scan_with(start, end, true, || self.kv.scan_rev(start, end))
    }
}
