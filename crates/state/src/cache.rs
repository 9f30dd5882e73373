//! The write-back cache's policy (the changelog thesis, section 3.2.1, Samza's store: an LRU cache
//! in front of RocksDB that flushes when 500 keys are dirty, at every commit, and on demand;
//! docs/papers.md).

/// When a table's write-back cache flushes to its backend and how much it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Flush once this many keys are dirty (`usize::MAX`: never on its own).
    pub dirty_limit: usize,
    /// Most keys kept in the cache: after a flush, the least recently used clean keys beyond it
    /// are dropped (`usize::MAX`: keep everything).
    pub capacity: usize,
}

impl CacheConfig {
    /// The in-memory backend: the cache is the state; nothing is flushed unless asked.
    pub const MEMORY: CacheConfig = CacheConfig {
        dirty_limit: usize::MAX,
        capacity: usize::MAX,
    };

    /// The on-disk backend's default: flush at 500 dirty keys (Samza's default), keep 100,000 keys.
    pub const DISK: CacheConfig = CacheConfig {
        dirty_limit: 500,
        capacity: 100_000,
    };

    /// Keys to keep after an eviction: three quarters of the capacity, so evictions are rare.
    pub(crate) fn keep_after_evict(self) -> usize {
        self.capacity - self.capacity / 4
    }
}
