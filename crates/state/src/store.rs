//! The state of one operator instance: its backend, its cache policy and its tables.

use crate::backend::{BackendKind, DiskBackend, MemoryBackend, SharedBackend};
use crate::cache::CacheConfig;
use crate::delta::Delta;
use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::list::ListTable;
use crate::table::TableCtx;
use crate::value::ValueTable;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::hash::Hash;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How a job keeps its state (`--state-backend`, `--state-dir`).
#[derive(Clone, Debug)]
pub struct StateConfig {
    /// Memory or disk.
    pub backend: BackendKind,
    /// Where on-disk stores live (one file per operator instance below it).
    pub dir: PathBuf,
    /// The write-back cache of on-disk tables ([`CacheConfig::DISK`] by default).
    pub cache: CacheConfig,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            backend: BackendKind::Memory,
            // One folder per process: processes of a local cluster share the machine.
            dir: std::env::temp_dir()
                .join("xorflow-state")
                .join(format!("p{}", std::process::id())),
            cache: CacheConfig::DISK,
        }
    }
}

/// The state of one operator instance: tables are created from it and share its backend.
pub struct StateStore {
    backend: SharedBackend,
    /// The disk backend's file.
    path: Option<PathBuf>,
    cache: CacheConfig,
    tables: Vec<String>,
}

impl StateStore {
    /// The store of instance `instance` of vertex `vertex` (the disk file is
    /// `dir/<vertex>-<instance>.redb`, emptied: a restore fills it from a checkpoint).
    ///
    /// # Errors
    /// The disk file cannot be created.
    pub fn open(config: &StateConfig, vertex: &str, instance: usize) -> Result<Self, StateError> {
        match config.backend {
            BackendKind::Memory => Ok(Self::with_backend(
                Box::new(MemoryBackend::new()),
                CacheConfig::MEMORY,
            )),
            BackendKind::Disk => {
                let safe: String = vertex
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                let path = config.dir.join(format!("{safe}-{instance}.redb"));
                let mut b = DiskBackend::open(&path)?;
                b.clear()?;
                let mut store = Self::with_backend(Box::new(b), config.cache);
                store.path = Some(path);
                Ok(store)
            }
        }
    }

    /// A store over `backend` with cache policy `cache` (tests: any backend with any policy).
    pub fn with_backend(backend: Box<dyn crate::Backend>, cache: CacheConfig) -> Self {
        StateStore {
            backend: Arc::new(Mutex::new(backend)),
            path: None,
            cache,
            tables: Vec::new(),
        }
    }

    fn register(&mut self, name: &str) -> Result<u8, StateError> {
        if self.tables.iter().any(|t| t == name) {
            return Err(StateError::Other(format!(
                "state table '{name}' is declared twice"
            )));
        }
        let id = u8::try_from(self.tables.len()).map_err(|_| {
            StateError::Other("an operator may declare at most 256 state tables".into())
        })?;
        self.tables.push(name.into());
        Ok(id)
    }

    /// True when the store keeps everything in memory ([`CacheConfig::MEMORY`]).
    pub(crate) fn in_memory(&self) -> bool {
        self.cache == CacheConfig::MEMORY
    }

    /// A new table's surroundings: its id, the backend, the cache policy.
    pub(crate) fn table<K>(
        &mut self,
        name: &str,
        group: impl Fn(&K) -> KeyGroup + Send + Sync + 'static,
    ) -> Result<TableCtx<K>, StateError> {
        Ok(TableCtx {
            name: name.into(),
            id: self.register(name)?,
            group: Arc::new(group),
            backend: self.backend.clone(),
            config: self.cache,
        })
    }

    /// Declares value state `name` (one `V` per key; `group` gives a key's key group).
    ///
    /// # Errors
    /// The name is taken, or 256 tables exist.
    pub fn value_table<K, V>(
        &mut self,
        name: &str,
        group: impl Fn(&K) -> KeyGroup + Send + Sync + 'static,
    ) -> Result<ValueTable<K, V>, StateError>
    where
        K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send,
        V: Clone + Serialize + DeserializeOwned + Send,
    {
        Ok(ValueTable::new(self.table(name, group)?))
    }

    /// Declares list state `name` (an append-only list of `V` per key).
    ///
    /// # Errors
    /// As [`StateStore::value_table`].
    pub fn list_table<K, V>(
        &mut self,
        name: &str,
        group: impl Fn(&K) -> KeyGroup + Send + Sync + 'static,
    ) -> Result<ListTable<K, V>, StateError>
    where
        K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send,
        V: Clone + Serialize + DeserializeOwned + Send,
    {
        Ok(ListTable::new(self.table(name, group)?))
    }

    /// Makes the backend durable (a checkpoint of a disk store).
    ///
    /// # Errors
    /// The backend failed.
    pub fn sync(&self) -> Result<(), StateError> {
        crate::backend::lock(&self.backend).sync()
    }

    /// The backend's counters (bytes written: seed 001's store I/O).
    pub fn stats(&self) -> crate::backend::BackendStats {
        crate::backend::lock(&self.backend).stats()
    }

    /// Closes the store and deletes its disk file, if it has one (and the tables still open
    /// on it must not be used again).
    ///
    /// # Errors
    /// The file exists and cannot be deleted.
    pub fn remove(self) -> Result<(), StateError> {
        let StateStore { backend, path, .. } = self;
        drop(backend);
        match path {
            Some(p) => {
                std::fs::remove_file(&p).or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(StateError::Backend {
                        path: p.clone(),
                        detail: format!("cannot delete: {e}"),
                    }),
                })?;
                // The folder goes too once its last store has (removing a non-empty one fails).
                if let Some(dir) = p.parent() {
                    let _ = std::fs::remove_dir(dir);
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Which backend this store uses.
    pub fn kind(&self) -> BackendKind {
        crate::backend::lock(&self.backend).kind()
    }
}

/// Encodes a delta as the bytes of an operator snapshot: one byte saying whether it is full,
/// then its records.
pub fn encode_snapshot(d: &Delta) -> Vec<u8> {
    let mut out = vec![u8::from(d.full)];
    d.encode_into(&mut out);
    out
}

/// Decodes [`encode_snapshot`]'s bytes.
///
/// # Errors
/// Empty or malformed bytes.
pub fn decode_snapshot(bytes: &[u8]) -> Result<Delta, String> {
    let (&full, rest) = bytes.split_first().ok_or("an empty snapshot")?;
    Delta::decode(rest, full == 1)
}
