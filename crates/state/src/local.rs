//! Local recovery (the changelog thesis's host affinity, docs/papers.md; Flink calls it local
//! recovery): a process that restarts on the same host reuses its on-disk store instead of
//! rebuilding it from the checkpoint store.
//!
//! Every checkpoint leaves a persistent redb savepoint in each on-disk store
//! ([`crate::StateStore::savepoint`]), taken from the same state at the same moment as the
//! snapshot that goes into the checkpoint. A restore from checkpoint `c` then rolls the file back
//! to `c`'s savepoint ([`open`]), and the tables rebuild their in-memory metadata from it
//! ([`crate::ValueTable::reopen`], [`crate::ListTable::reopen`]); nothing is read from the
//! checkpoint store. The file is used only when all of these hold, else it is deleted and the
//! instance restores from the checkpoint store as before:
//!
//! * redb opens it: after a crash redb repairs the file, verifying every page's checksum, and
//!   recovers the last durable commit (each savepoint is one);
//! * it records the same owner (job id and checkpoint store: [`Affinity::owner`]), so a savepoint
//!   of another job or store with the same checkpoint number is never taken for this one;
//! * it has a savepoint for exactly the checkpoint restored.

use crate::backend::DiskBackend;
use crate::error::StateError;
use std::path::Path;

/// What a checkpointed job tells an on-disk store when it opens it.
#[derive(Clone, Copy, Debug)]
pub struct Affinity<'a> {
    /// Who the file's savepoints belong to: the job id and its checkpoint store's location.
    pub owner: &'a str,
    /// The checkpoint the job restores, if it restores one.
    pub resume: Option<u64>,
    /// Local recovery is on: the store takes savepoints and a restore rolls back to one. Off,
    /// the file still lives in the job's folder (a restarted process replaces its
    /// predecessor's file instead of leaving it behind) but is always opened empty.
    pub savepoints: bool,
}

/// How an on-disk store was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// Empty (no restore, or the local file could not be used: `why` says why, for a restore).
    Fresh {
        /// Why a restore could not use the local file (`None`: nothing was to be restored).
        why: Option<String>,
    },
    /// Rolled back to the savepoint of the restored checkpoint.
    RolledBack(u64),
}

/// Opens the store at `path` for `affinity`: rolled back to the savepoint of the checkpoint it
/// restores when the file allows (module docs), else empty.
///
/// # Errors
/// A fresh file cannot be created.
pub(crate) fn open(
    path: &Path,
    affinity: Option<Affinity<'_>>,
) -> Result<(DiskBackend, Opened), StateError> {
    let restore = affinity.filter(|a| a.savepoints);
    let why = match restore.and_then(|a| a.resume.map(|c| (a.owner, c))) {
        None => None,
        Some((owner, c)) => match try_rollback(path, owner, c) {
            Ok(b) => return Ok((b, Opened::RolledBack(c))),
            Err(why) => Some(why),
        },
    };
    // Deleting the file is cheaper than deleting every key of a large one.
    remove(path)?;
    let mut b = DiskBackend::open(path)?;
    if let Some(a) = affinity {
        b.set_owner(a.owner)?;
    }
    Ok((b, Opened::Fresh { why }))
}

/// The file at `path`, rolled back to checkpoint `c`'s savepoint, or why not.
fn try_rollback(path: &Path, owner: &str, c: u64) -> Result<DiskBackend, String> {
    if !path.exists() {
        return Err("no local state file".into());
    }
    let mut b = DiskBackend::open(path).map_err(|e| e.to_string())?;
    match b.owner().map_err(|e| e.to_string())? {
        Some(o) if o == owner => {}
        Some(o) => return Err(format!("the local file belongs to '{o}'")),
        None => return Err("the local file records no owner".into()),
    }
    match b.rollback(c).map_err(|e| e.to_string())? {
        true => Ok(b),
        false => Err(format!("the local file has no savepoint of checkpoint {c}")),
    }
}

/// Deletes the file at `path` if there is one.
fn remove(path: &Path) -> Result<(), StateError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StateError::Backend {
            path: path.into(),
            detail: format!("cannot delete the old local state file: {e}"),
        }),
        _ => Ok(()),
    }
}
