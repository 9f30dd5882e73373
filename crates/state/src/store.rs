//! The state of one operator instance: its backend, its cache policy and its tables.

use crate::backend::changelog::{ChangelogStats, LogRange, RANGE_KEY};
use crate::backend::{BackendKind, ChangelogBackend, MemoryBackend, SharedBackend};
use crate::cache::CacheConfig;
use crate::delta::Delta;
use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::list::ListTable;
use crate::local::{Affinity, Opened};
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
    /// Where on-disk stores live: one file per operator instance, in a folder per process
    /// (`p<pid>`) or, for a checkpointed job, per job and checkpoint store (`j<hash>`: a
    /// restarted process finds its predecessor's files there, `local.rs`).
    pub dir: PathBuf,
    /// The write-back cache of on-disk tables ([`CacheConfig::DISK`] by default).
    pub cache: CacheConfig,
    /// Changelog state (`--state-changelog`): on-disk stores mirror their writes to a
    /// changelog, and checkpoints record ranges of it (`backend/changelog.rs`).
    pub changelog: Option<std::sync::Arc<dyn crate::backend::ChangelogFactory>>,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            backend: BackendKind::Memory,
            dir: std::env::temp_dir().join("xorflow-state"),
            cache: CacheConfig::DISK,
            changelog: None,
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
    /// How the disk file was opened.
    opened: Opened,
    /// A checkpointed job's store: savepoints are taken.
    local: bool,
}

impl StateStore {
    /// The store of instance `instance` of vertex `vertex`, empty (the disk file is
    /// `dir/p<pid>/<vertex>-<instance>.redb`).
    ///
    /// # Errors
    /// The disk file cannot be created.
    pub fn open(config: &StateConfig, vertex: &str, instance: usize) -> Result<Self, StateError> {
        Self::open_with(config, vertex, instance, None)
    }

    /// The store of instance `instance` of vertex `vertex` in a checkpointed job (`affinity`):
    /// on disk it is `dir/j<hash of the owner>/<vertex>-<instance>.redb`, rolled back to the
    /// savepoint of the checkpoint the job restores if the file has it (see
    /// [`StateStore::opened`] and `local.rs`), else empty.
    ///
    /// # Errors
    /// The disk file cannot be created.
    pub fn open_with(
        config: &StateConfig,
        vertex: &str,
        instance: usize,
        affinity: Option<Affinity<'_>>,
    ) -> Result<Self, StateError> {
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
                let folder = match affinity {
                    // Processes of a local cluster share the machine: one folder each.
                    None => format!("p{}", std::process::id()),
                    Some(a) => {
                        let mut h = rustc_hash::FxHasher::default();
                        std::hash::Hash::hash(a.owner, &mut h);
                        format!("j{:016x}", std::hash::Hasher::finish(&h))
                    }
                };
                let path = config
                    .dir
                    .join(folder)
                    .join(format!("{safe}-{instance}.redb"));
                let (b, opened) = crate::local::open(&path, affinity)?;
                let b: Box<dyn crate::Backend> = match &config.changelog {
                    Some(f) => Box::new(ChangelogBackend::new(
                        Box::new(b),
                        f.open(vertex, instance)?,
                    )?),
                    None => Box::new(b),
                };
                let mut store = Self::with_backend(b, config.cache);
                store.path = Some(path);
                store.opened = opened;
                store.local = affinity.is_some_and(|a| a.savepoints);
                Ok(store)
            }
        }
    }

    /// The on-disk store's file (`None` in memory).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// How the store was opened: empty, or rolled back to a checkpoint's savepoint (its tables
    /// then `reopen` instead of restoring a chain).
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    /// True for an on-disk store of a checkpointed job: it takes savepoints
    /// ([`StateStore::savepoint`]).
    pub fn is_local(&self) -> bool {
        self.local && self.path.is_some()
    }

    /// True when the store was rolled back to the savepoint of the checkpoint being restored.
    pub fn restored_locally(&self) -> bool {
        matches!(self.opened, Opened::RolledBack(_))
    }

    /// After the snapshot of checkpoints `covered` (every table flushed first: the savepoint is
    /// the backend's content), an on-disk store of a checkpointed job records a savepoint of it
    /// for local recovery, and drops those of checkpoints before `completed`, the newest
    /// completed one. A no-op in memory or without checkpoints.
    ///
    /// # Errors
    /// The backend failed.
    pub fn savepoint(
        &self,
        covered: std::ops::RangeInclusive<u64>,
        completed: Option<u64>,
    ) -> Result<(), StateError> {
        if !self.is_local() {
            return Ok(());
        }
        let mut b = crate::backend::lock(&self.backend);
        let disk = b.as_disk().ok_or_else(|| {
            StateError::Other("a store with a file path has a disk backend".into())
        })?;
        disk.savepoint(covered, completed.unwrap_or(0))
    }

    /// A store over `backend` with cache policy `cache` (tests: any backend with any policy).
    pub fn with_backend(backend: Box<dyn crate::Backend>, cache: CacheConfig) -> Self {
        StateStore {
            backend: Arc::new(Mutex::new(backend)),
            path: None,
            cache,
            tables: Vec::new(),
            opened: Opened::Fresh { why: None },
            local: false,
        }
    }

    fn register(&mut self, name: &str) -> Result<u8, StateError> {
        if self.tables.iter().any(|t| t == name) {
            return Err(StateError::Other(format!(
                "state table '{name}' is declared twice"
            )));
        }
        // Id 255 is kept for the store's own keys (`backend/changelog.rs`, `RANGE_KEY`).
        let id = u8::try_from(self.tables.len())
            .ok()
            .filter(|&id| id < 255)
            .ok_or_else(|| {
                StateError::Other("an operator may declare at most 255 state tables".into())
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

    /// The backend's counters (bytes written: the changelog thesis's store I/O, docs/papers.md).
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

    /// True when the store mirrors its writes to a changelog.
    pub fn has_changelog(&self) -> bool {
        crate::backend::lock(&self.backend).as_changelog().is_some()
    }

    /// Changelog state: flushes the changelog (the tables must have flushed first) and makes
    /// `d` the checkpoint's record of the store: its changelog range alone, a full snapshot.
    /// Returns false (and leaves `d` alone) without a changelog.
    ///
    /// # Errors
    /// The changelog or the backend failed.
    pub fn changelog_snapshot(&self, d: &mut Delta) -> Result<bool, StateError> {
        let mut b = crate::backend::lock(&self.backend);
        let Some(c) = b.as_changelog() else {
            return Ok(false);
        };
        let range = c.checkpoint()?;
        *d = Delta::new(true);
        d.records.push(crate::delta::Record::Put {
            key: RANGE_KEY.to_vec(),
            value: range.encode(),
        });
        Ok(true)
    }

    /// Changelog state: restores the store by replaying the range the checkpoint's `chain`
    /// records, then goes on writing after it ([`StateStore::changelog_resume`]). Returns the
    /// records replayed, or `None` without a changelog.
    ///
    /// # Errors
    /// The chain records no range (a checkpoint of a job without changelog), or the replay
    /// failed.
    pub fn changelog_restore(&self, chain: &[Delta]) -> Result<Option<u64>, StateError> {
        let mut b = crate::backend::lock(&self.backend);
        let Some(c) = b.as_changelog() else {
            return Ok(None);
        };
        let range = chain
            .last()
            .and_then(|d| d.records.iter().find(|r| r.key() == RANGE_KEY))
            .and_then(|r| match r {
                crate::delta::Record::Put { value, .. } => Some(LogRange::decode(value)),
                _ => None,
            })
            .ok_or_else(|| {
                StateError::Other(
                    "the checkpoint records no changelog range: was it taken without                      --state-changelog?"
                        .into(),
                )
            })?
            .map_err(StateError::Other)?;
        let n = c.replay(range)?;
        c.resume()?;
        Ok(Some(n))
    }

    /// Changelog state, after the store was rolled back to a local savepoint: goes on from the
    /// range the savepoint records (rebasing if the failed attempt wrote after it). A no-op
    /// without a changelog.
    ///
    /// # Errors
    /// As [`ChangelogBackend::resume`].
    pub fn changelog_resume(&self) -> Result<(), StateError> {
        match crate::backend::lock(&self.backend).as_changelog() {
            Some(c) => c.resume(),
            None => Ok(()),
        }
    }

    /// The changelog's counters, if the store has one.
    pub fn changelog_stats(&self) -> Option<ChangelogStats> {
        crate::backend::lock(&self.backend)
            .as_changelog()
            .map(|c| c.log_stats())
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
