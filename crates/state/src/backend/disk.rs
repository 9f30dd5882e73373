//! The on-disk backend: one redb file per operator instance (docs/state.md, "The on-disk store").
//!
//! Cache flushes commit with `Durability::None` (written, not fsynced: a crash may lose them, and
//! the checkpoint, not the local file, is what recovery trusts); [`Backend::sync`] commits with
//! `Durability::Immediate`. Persistent savepoints, one per checkpoint ([`DiskBackend::savepoint`]),
//! let a restarted process roll its local file back to a completed checkpoint instead of
//! reloading it from the checkpoint store (the changelog thesis's host affinity, docs/papers.md:
//! `crate::local`).

use super::{Backend, BackendKind, BackendStats, ScanFn, Write};
use crate::error::StateError;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("state");
/// Last checkpoint a savepoint covers -> (persistent savepoint id, first checkpoint it covers):
/// an instance whose state did not change over several checkpoint epochs takes one snapshot,
/// and one savepoint, for all of them (host affinity: `crate::local`).
const SAVEPOINTS: TableDefinition<u64, (u64, u64)> = TableDefinition::new("savepoints");
/// The file's owner (`owner` -> job and checkpoint store).
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");

/// A redb database file.
pub struct DiskBackend {
    db: redb::Database,
    path: PathBuf,
    stats: BackendStats,
}

impl DiskBackend {
    /// Opens the store at `path`, creating it (and its directory) if needed. An existing file
    /// keeps its content (`crate::local` decides whether to use it).
    ///
    /// # Errors
    /// The file cannot be created or is not a redb file.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StateError::Backend {
                path: path.into(),
                detail: format!("cannot create its directory: {e}"),
            })?;
        }
        let db = redb::Database::create(path).map_err(|e| StateError::Backend {
            path: path.into(),
            detail: e.to_string(),
        })?;
        let b = DiskBackend {
            db,
            path: path.into(),
            stats: BackendStats::default(),
        };
        // The table exists from now on, so reads never meet a missing table.
        b.commit(false, |_| Ok(()))?;
        Ok(b)
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> StateError {
        StateError::Backend {
            path: self.path.clone(),
            detail: e.to_string(),
        }
    }

    /// Runs `f` in one write transaction and commits it (durably if `durable`).
    fn commit<R>(
        &self,
        durable: bool,
        f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<R, StateError>,
    ) -> Result<R, StateError> {
        let mut tx = self.db.begin_write().map_err(|e| self.err(e))?;
        let d = if durable {
            redb::Durability::Immediate
        } else {
            redb::Durability::None
        };
        tx.set_durability(d).map_err(|e| self.err(e))?;
        let r = {
            let mut t = tx.open_table(TABLE).map_err(|e| self.err(e))?;
            f(&mut t)?
        };
        tx.commit().map_err(|e| self.err(e))?;
        Ok(r)
    }

    /// Durably records the current content as the persistent savepoint of checkpoints
    /// `covered` (the content is the same after each), and deletes the savepoints of
    /// checkpoints below `keep_from` (no longer restorable: an older checkpoint than the newest
    /// completed one is restored only after a corrupt file, and then from the checkpoint store).
    ///
    /// # Errors
    /// As [`Backend::get`].
    pub fn savepoint(
        &mut self,
        covered: std::ops::RangeInclusive<u64>,
        keep_from: u64,
    ) -> Result<(), StateError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        // First, while the transaction has written nothing: the savepoint is the content as
        // of the last commit (cache flushes included, durable with this commit).
        let id = tx.persistent_savepoint().map_err(|e| self.err(e))?;
        {
            let mut t = tx.open_table(SAVEPOINTS).map_err(|e| self.err(e))?;
            let mut old = Vec::new();
            for item in t.range(..keep_from).map_err(|e| self.err(e))? {
                let (c, sp) = item.map_err(|e| self.err(e))?;
                old.push((c.value(), sp.value().0));
            }
            for (c, sp) in old {
                t.remove(c).map_err(|e| self.err(e))?;
                tx.delete_persistent_savepoint(sp)
                    .map_err(|e| self.err(e))?;
            }
            t.insert(*covered.end(), (id, *covered.start()))
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        self.stats.syncs += 1;
        Ok(())
    }

    /// Rolls the content back to the savepoint covering checkpoint `checkpoint` and deletes
    /// every savepoint; false (and nothing changed) if none covers it.
    ///
    /// # Errors
    /// The store failed.
    pub fn rollback(&mut self, checkpoint: u64) -> Result<bool, StateError> {
        let mut tx = self.db.begin_write().map_err(|e| self.err(e))?;
        let id = {
            let t = tx.open_table(SAVEPOINTS).map_err(|e| self.err(e))?;
            // The first savepoint ending at or after `checkpoint`, if it starts at or before.
            let mut next = t.range(checkpoint..).map_err(|e| self.err(e))?;
            let first = match next.next() {
                Some(item) => Some(item.map_err(|e| self.err(e))?.1.value()),
                None => None,
            };
            first.and_then(|(id, from)| (from <= checkpoint).then_some(id))
        };
        let Some(id) = id else {
            tx.abort().map_err(|e| self.err(e))?;
            return Ok(false);
        };
        let sp = tx.get_persistent_savepoint(id).map_err(|e| self.err(e))?;
        tx.restore_savepoint(&sp).map_err(|e| self.err(e))?;
        let ids: Vec<u64> = tx
            .list_persistent_savepoints()
            .map_err(|e| self.err(e))?
            .collect();
        for other in ids {
            tx.delete_persistent_savepoint(other)
                .map_err(|e| self.err(e))?;
        }
        // The map as of the savepoint names savepoints that are gone now.
        tx.delete_table(SAVEPOINTS).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// The owner recorded by [`DiskBackend::set_owner`], if any.
    ///
    /// # Errors
    /// As [`Backend::get`].
    pub fn owner(&self) -> Result<Option<String>, StateError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let t = match tx.open_table(META) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.err(e)),
        };
        let v = t.get("owner").map_err(|e| self.err(e))?;
        Ok(v.map(|g| g.value().to_string()))
    }

    /// Records who the file's savepoints belong to (a job and its checkpoint store: a
    /// savepoint is only restored for the checkpoint of the same store it was taken for).
    ///
    /// # Errors
    /// As [`Backend::get`].
    pub fn set_owner(&mut self, owner: &str) -> Result<(), StateError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut t = tx.open_table(META).map_err(|e| self.err(e))?;
            t.insert("owner", owner).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }
}

impl Backend for DiskBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Disk
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let t = tx.open_table(TABLE).map_err(|e| self.err(e))?;
        let v = t.get(key).map_err(|e| self.err(e))?;
        Ok(v.map(|g| g.value().to_vec()))
    }

    fn write(&mut self, batch: &[Write]) -> Result<(), StateError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.stats.record(batch);
        let path = self.path.clone();
        let err = |e: redb::StorageError| StateError::Backend {
            path: path.clone(),
            detail: e.to_string(),
        };
        self.commit(false, |t| {
            for (k, v) in batch {
                match v {
                    Some(v) => {
                        t.insert(k.as_slice(), v.as_slice()).map_err(err)?;
                    }
                    None => {
                        t.remove(k.as_slice()).map_err(err)?;
                    }
                }
            }
            Ok(())
        })
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<u64, StateError> {
        let path = self.path.clone();
        let err = move |e: redb::StorageError| StateError::Backend {
            path: path.clone(),
            detail: e.to_string(),
        };
        let (n, bytes) = self.commit(false, |t| {
            // Only the prefix's range is visited (retain_in would walk to the table's end).
            let mut keys = Vec::new();
            for item in t.range::<&[u8]>(prefix..).map_err(&err)? {
                let (k, _) = item.map_err(&err)?;
                if !k.value().starts_with(prefix) {
                    break;
                }
                keys.push(k.value().to_vec());
            }
            let bytes: usize = keys.iter().map(Vec::len).sum();
            for k in &keys {
                t.remove(k.as_slice()).map_err(&err)?;
            }
            Ok((keys.len() as u64, bytes as u64))
        })?;
        self.stats.deletes += n;
        self.stats.bytes_written += bytes;
        Ok(n)
    }

    fn scan_prefix(&self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let t = tx.open_table(TABLE).map_err(|e| self.err(e))?;
        for item in t.range::<&[u8]>(prefix..).map_err(|e| self.err(e))? {
            let (k, v) = item.map_err(|e| self.err(e))?;
            if !k.value().starts_with(prefix) {
                break;
            }
            f(k.value(), v.value())?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StateError> {
        self.stats.syncs += 1;
        self.commit(true, |_| Ok(()))
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn as_disk(&mut self) -> Option<&mut DiskBackend> {
        Some(self)
    }
}
