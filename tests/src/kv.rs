//! A test backend that wraps another forwards its reads with [`forward_reads!`], written once
//! here: `get`, `scan` and `scan_rev` go to the wrapped backend unchanged. Writes stay each
//! wrapper's own, so the trait's defaults for ordered and buffered writes still reach the
//! wrapper's `apply` (where the tests inject their faults). The engine's wrappers forward the
//! whole trait with `grove::kv::Forward` instead.

/// The reads of a test backend wrapping the one in field `$field` (module docs). Use it
/// inside `impl Kv for ...`; `Kv`, `KvError` and `Scan` come from `grove::kv`.
#[macro_export]
macro_rules! forward_reads {
    ($field:ident) => {
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, grove::kv::KvError> {
            self.$field.get(key)
        }

        fn scan(&self, start: &[u8], end: &[u8]) -> grove::kv::Scan<'_> {
            self.$field.scan(start, end)
        }

        fn scan_rev(&self, start: &[u8], end: &[u8]) -> grove::kv::Scan<'_> {
            self.$field.scan_rev(start, end)
        }
    };
}
