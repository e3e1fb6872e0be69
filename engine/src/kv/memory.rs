//! An in-memory backend for tests: a `BTreeMap` behind a lock. Flush is a no-op. A map made
//! with [`MemoryKv::new_shared`] plays a database several processes share: each
//! [`MemoryKv::handle`] on it is one process's, and the engine fences its commits on it as it
//! does on PostgreSQL.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::{Guard, Kv, KvError, Pair, Scan, WriteBatch};

/// The in-memory backend.
#[derive(Default)]
pub struct MemoryKv {
    map: Arc<RwLock<BTreeMap<Vec<u8>, Vec<u8>>>>,
    /// Whether it plays a database processes share ([`Kv::shared`]).
    shared: bool,
}

impl MemoryKv {
    /// An empty store.
    pub fn new() -> MemoryKv {
        MemoryKv::default()
    }

    /// An empty store that says other processes share it ([`Kv::shared`]), as a database
    /// server does; [`MemoryKv::handle`] gives each of them a handle.
    pub fn new_shared() -> MemoryKv {
        MemoryKv {
            shared: true,
            ..MemoryKv::default()
        }
    }

    /// Another handle on the same map (another process's, for a shared one).
    pub fn handle(&self) -> MemoryKv {
        MemoryKv {
            map: self.map.clone(),
            shared: self.shared,
        }
    }

    fn collect(&self, start: &[u8], end: &[u8]) -> Vec<Pair> {
        if start >= end {
            return Vec::new();
        }
        self.map
            .read()
            .range(start.to_vec()..end.to_vec())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl Kv for MemoryKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        Ok(self.map.read().get(key).cloned())
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        let map = self.map.read();
        let found = (start < end)
            .then(|| map.range(start.to_vec()..end.to_vec()).next_back())
            .flatten();
        Ok(super::deliver(found, read))
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        Box::new(self.collect(start, end).into_iter().map(Ok))
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        Box::new(self.collect(start, end).into_iter().rev().map(Ok))
    }

    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        let mut map = self.map.write();
        for (k, v) in batch.into_ops() {
            match v {
                Some(v) => {
                    map.insert(k, v);
                }
                None => {
                    map.remove(&k);
                }
            }
        }
        Ok(())
    }

    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        let mut map = self.map.write();
        if guards
            .iter()
            .any(|(key, expected)| map.get(*key).map(Vec::as_slice) != *expected)
        {
            return Ok(false);
        }
        for (k, v) in batch.into_ops() {
            match v {
                Some(v) => {
                    map.insert(k, v);
                }
                None => {
                    map.remove(&k);
                }
            }
        }
        Ok(true)
    }

    fn shared(&self) -> bool {
        self.shared
    }

    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }

    fn name(&self) -> &'static str {
        "memory"
    }
}
