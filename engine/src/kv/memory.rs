//! An in-memory backend for tests: a `BTreeMap` behind a lock. Flush is a no-op.

use std::collections::BTreeMap;

use parking_lot::RwLock;

use super::{Kv, KvError, Pair, Scan, WriteBatch};

/// The in-memory backend.
#[derive(Default)]
pub struct MemoryKv {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl MemoryKv {
    /// An empty store.
    pub fn new() -> MemoryKv {
        MemoryKv::default()
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

    fn apply_if(
        &self,
        guard: &[u8],
        expected: Option<&[u8]>,
        batch: WriteBatch,
    ) -> Result<bool, KvError> {
        let mut map = self.map.write();
        if map.get(guard).map(Vec::as_slice) != expected {
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

    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }

    fn name(&self) -> &'static str {
        "memory"
    }
}
