//! The backend trait: an ordered byte store the typed tables ([`crate::ValueTable`],
//! [`crate::ListTable`]) flush their write-back caches into and read their misses from.
//!
//! [`ChangelogBackend`] wraps either and mirrors its writes to a changelog (the changelog thesis,
//! docs/papers.md).
//!
//! Two implementations: [`MemoryBackend`] (a `BTreeMap`, the default for small state) and
//! [`DiskBackend`] (redb, a pure-Rust B-tree file, for state larger than memory; why redb:
//! docs/state.md, "The on-disk store"). Both pass the same tests (`tests/backends.rs`).

pub mod changelog;
mod disk;
mod memory;

pub use changelog::{ChangelogBackend, ChangelogFactory};
pub use disk::DiskBackend;
pub use memory::MemoryBackend;

use crate::error::StateError;
use std::sync::{Arc, Mutex};

/// Which backend a job uses (`--state-backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Everything in memory: the write-back cache never flushes except on demand.
    #[default]
    Memory,
    /// On disk (redb), behind a bounded write-back cache.
    Disk,
}

/// One write of a batch: `Some(value)` puts, `None` deletes.
pub type Write = (Vec<u8>, Option<Vec<u8>>);

/// What a backend has done, for the store I/O experiment (the changelog thesis, section 4.3: bytes
/// written by the local store).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// Key and value bytes handed to the store by puts, plus key bytes of deletes.
    pub bytes_written: u64,
    /// Puts.
    pub puts: u64,
    /// Deletes (single keys; a prefix delete counts the keys it removed).
    pub deletes: u64,
    /// Durable syncs.
    pub syncs: u64,
}

impl BackendStats {
    /// Counts a batch of writes.
    pub(crate) fn record(&mut self, batch: &[Write]) {
        for (k, v) in batch {
            match v {
                Some(v) => {
                    self.puts += 1;
                    self.bytes_written += (k.len() + v.len()) as u64;
                }
                None => {
                    self.deletes += 1;
                    self.bytes_written += k.len() as u64;
                }
            }
        }
    }
}

/// What [`Backend::scan_prefix`] calls with each (key, value); its error stops the scan.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), StateError> + 'a;

/// An ordered byte store. Keys are compared as byte strings.
pub trait Backend: Send {
    /// Which kind this is.
    fn kind(&self) -> BackendKind;

    /// The value stored under `key`.
    ///
    /// # Errors
    /// The store failed (disk: the file names itself).
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Applies `batch` in order, atomically as far as the store allows. Not durable until
    /// [`Backend::sync`].
    ///
    /// # Errors
    /// As [`Backend::get`].
    fn write(&mut self, batch: &[Write]) -> Result<(), StateError>;

    /// Deletes every key starting with `prefix`; returns how many.
    ///
    /// # Errors
    /// As [`Backend::get`].
    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<u64, StateError>;

    /// Calls `f` with every (key, value) whose key starts with `prefix`, in key order; `f`'s
    /// error stops the scan and is returned.
    ///
    /// # Errors
    /// As [`Backend::get`], or `f`'s.
    fn scan_prefix(&self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError>;

    /// Makes every write so far durable (a no-op in memory).
    ///
    /// # Errors
    /// As [`Backend::get`].
    fn sync(&mut self) -> Result<(), StateError>;

    /// Counters since the backend was opened.
    fn stats(&self) -> BackendStats;

    /// The on-disk backend, for what only it can do (savepoints: `crate::local`).
    fn as_disk(&mut self) -> Option<&mut DiskBackend> {
        None
    }

    /// The changelog-mirrored backend, for its checkpoints and restores (`changelog.rs`).
    fn as_changelog(&mut self) -> Option<&mut ChangelogBackend> {
        None
    }
}

/// A backend shared by the tables of one [`crate::StateStore`] (one operator instance: the lock
/// is never contended, it only makes the handle `Send`).
pub type SharedBackend = Arc<Mutex<Box<dyn Backend>>>;

/// Locks `b`; a poisoned lock (a panic elsewhere while holding it) still gives the store, whose
/// own operations are atomic per call.
pub(crate) fn lock(b: &SharedBackend) -> std::sync::MutexGuard<'_, Box<dyn Backend>> {
    b.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
