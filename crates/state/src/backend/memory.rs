//! The in-memory backend: a `BTreeMap` of byte strings.

use super::{Backend, BackendKind, BackendStats, ScanFn, Write};
use crate::error::StateError;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Every key and value in an ordered map in memory.
#[derive(Default)]
pub struct MemoryBackend {
    map: BTreeMap<Vec<u8>, Vec<u8>>,
    stats: BackendStats,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn prefixed<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)> + 'a {
        self.map
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
    }
}

impl Backend for MemoryBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Memory
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.map.get(key).cloned())
    }

    fn write(&mut self, batch: &[Write]) -> Result<(), StateError> {
        self.stats.record(batch);
        for (k, v) in batch {
            match v {
                Some(v) => self.map.insert(k.clone(), v.clone()),
                None => self.map.remove(k),
            };
        }
        Ok(())
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<u64, StateError> {
        let keys: Vec<Vec<u8>> = self.prefixed(prefix).map(|(k, _)| k.clone()).collect();
        for k in &keys {
            self.stats.bytes_written += k.len() as u64;
            self.map.remove(k);
        }
        self.stats.deletes += keys.len() as u64;
        Ok(keys.len() as u64)
    }

    fn scan_prefix(&self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
        for (k, v) in self.prefixed(prefix) {
            f(k, v)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StateError> {
        self.stats.syncs += 1;
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }
}
