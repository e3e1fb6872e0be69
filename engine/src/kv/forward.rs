//! The key-value trait forwarded once for every wrapper of a backend ([`Forward`]): a wrapper
//! names the backend it wraps and how a call reaches it, overrides what it changes, and every
//! other call of [`Kv`] goes through unchanged.
//!
//! May call: [`crate::kv`]'s trait and types.

use super::{Guard, Kv, KvError, Scan, WriteBatch};

/// A backend wrapped around another ([`super::Guarded`], [`super::Bounded`]). Every [`Kv`]
/// call a wrapper does not override reaches [`Forward::inner`] through [`Forward::call`];
/// the blanket `impl Kv for F: Forward` is the only forwarding of the trait.
pub trait Forward: Send + Sync {
    /// The wrapped backend, or why it cannot be reached now.
    fn inner(&self) -> Result<&dyn Kv, KvError>;

    /// Runs one call on the wrapped backend; the default runs it as it is (a wrapper puts its
    /// guard around it here).
    fn call<T>(&self, call: impl FnOnce(&dyn Kv) -> Result<T, KvError>) -> Result<T, KvError> {
        call(self.inner()?)
    }

    /// [`Kv::get`].
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.call(|kv| kv.get(key))
    }

    /// [`Kv::read_value`].
    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        self.call(|kv| kv.read_value(key, read))
    }

    /// [`Kv::read_last`].
    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        self.call(|kv| kv.read_last(start, end, read))
    }

    /// [`Kv::scan`].
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        match self.inner() {
            Ok(kv) => kv.scan(start, end),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }

    /// [`Kv::scan_rev`].
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        match self.inner() {
            Ok(kv) => kv.scan_rev(start, end),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }

    /// [`Kv::apply`].
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.call(|kv| kv.apply(batch))
    }

    /// [`Kv::apply_ordered`].
    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.call(|kv| kv.apply_ordered(batch))
    }

    /// [`Kv::apply_buffered`].
    fn apply_buffered(&self, batch: WriteBatch, ordered: bool) -> Result<(), KvError> {
        self.call(|kv| kv.apply_buffered(batch, ordered))
    }

    /// [`Kv::apply_if_all`].
    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        self.call(|kv| kv.apply_if_all(guards, batch))
    }

    /// [`Kv::flush`].
    fn flush(&self) -> Result<(), KvError> {
        self.call(|kv| kv.flush())
    }

    /// [`Kv::name`]: the wrapped backend's.
    fn name(&self) -> &'static str {
        self.inner().map_or("backend", |kv| kv.name())
    }

    /// [`Kv::round_trips`].
    fn round_trips(&self) -> Option<u64> {
        self.inner().ok()?.round_trips()
    }

    /// [`Kv::shared`].
    fn shared(&self) -> bool {
        self.inner().is_ok_and(|kv| kv.shared())
    }

    /// [`Kv::unavailable`].
    fn unavailable(&self) -> Option<String> {
        self.inner().ok()?.unavailable()
    }

    /// [`Kv::compact`].
    fn compact(&self) -> Result<bool, KvError> {
        self.call(|kv| kv.compact())
    }
}

impl<F: Forward> Kv for F {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        Forward::get(self, key)
    }

    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        Forward::read_value(self, key, read)
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        Forward::read_last(self, start, end, read)
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        Forward::scan(self, start, end)
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        Forward::scan_rev(self, start, end)
    }

    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        Forward::apply(self, batch)
    }

    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        Forward::apply_ordered(self, batch)
    }

    fn apply_buffered(&self, batch: WriteBatch, ordered: bool) -> Result<(), KvError> {
        Forward::apply_buffered(self, batch, ordered)
    }

    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        Forward::apply_if_all(self, guards, batch)
    }

    fn flush(&self) -> Result<(), KvError> {
        Forward::flush(self)
    }

    fn name(&self) -> &'static str {
        Forward::name(self)
    }

    fn round_trips(&self) -> Option<u64> {
        Forward::round_trips(self)
    }

    fn shared(&self) -> bool {
        Forward::shared(self)
    }

    fn unavailable(&self) -> Option<String> {
        Forward::unavailable(self)
    }

    fn compact(&self) -> Result<bool, KvError> {
        Forward::compact(self)
    }
}
