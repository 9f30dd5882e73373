//! What every typed table holds besides its cache: its name and id, how keys map to key groups,
//! the shared backend and the cache policy.

use crate::backend::SharedBackend;
use crate::cache::CacheConfig;
use crate::codec;
use crate::error::StateError;
use crate::key_group::KeyGroup;
use serde::Serialize;
use std::sync::Arc;

/// The key group of a key (derived from the key's own hash, so a key's state and its routing
/// agree: [`crate::KeyGroups::of_hash`]).
pub type GroupFn<K> = Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>;

/// A table's identity and surroundings.
pub(crate) struct TableCtx<K> {
    /// Name (in errors).
    pub name: String,
    /// Id: the first byte of its stored keys (`codec.rs`).
    pub id: u8,
    pub group: GroupFn<K>,
    pub backend: SharedBackend,
    pub config: CacheConfig,
}

impl<K: Serialize> TableCtx<K> {
    /// The stored key of `k` (for a list: the prefix of its elements).
    pub(crate) fn key_bytes(&self, k: &K) -> Result<Vec<u8>, StateError> {
        codec::key_bytes(&self.name, self.id, (self.group)(k), k)
    }

    /// True in memory: the cache is the whole state and the backend is never written.
    pub(crate) fn in_memory(&self) -> bool {
        self.config == CacheConfig::MEMORY
    }
}
