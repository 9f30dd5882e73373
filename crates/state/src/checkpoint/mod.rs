//! Checkpoints on durable storage: snapshot files, manifests, retention and restore with
//! fallback (docs/state.md, "Checkpoints").
//!
//! Layout below the checkpoint directory:
//!
//! ```text
//! job                      the job id that owns the directory (refused for another job)
//! finished                 present once the job's run finished: the next run starts afresh
//! files/<vertex>-<instance>-c<checkpoint>.snap   one snapshot (a full one or an increment)
//! manifests/c<checkpoint>  the checkpoint's manifest: written last, after its files are durable
//! ```
//!
//! Every file is framed with a checksum (`framing.rs`). An operator instance's snapshot is
//! incremental: its file holds what changed since the previous checkpoint, and the manifest lists
//! the chain from the last full snapshot on. [`Chain`] decides when to start a new chain with a
//! full snapshot. The newest `retained` manifests are kept; a file is deleted once no retained
//! manifest names it.

mod chain;
mod framing;
mod location;
mod manifest;
#[cfg(feature = "s3")]
mod object;
mod storage;

pub use chain::Chain;
pub use location::{is_url, Location};
pub use manifest::{FileRef, Hold, Manifest};
#[cfg(feature = "s3")]
pub use object::ObjectStorage;
pub use storage::{LocalDir, Storage};

use crate::delta::Delta;
use crate::error::StateError;
use crate::store::{decode_snapshot, encode_snapshot};
use std::collections::BTreeSet;
use std::path::Path;

/// Version 2: list elements stored as runs (`run.rs`); version 1's one record per element does
/// not decode as runs, so its files are refused by name.
const SNAPSHOT_MAGIC: &[u8; 8] = b"XFSNAP2\n";

/// The checkpoint number in a file or manifest name (`...c0000000012...`).
fn checkpoint_of(name: &str) -> Option<u64> {
    let base = name.rsplit('/').next()?;
    let at = base.rfind("c")?;
    let digits: String = base[at + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
const MANIFEST_MAGIC: &[u8; 8] = b"XFMANI1\n";
const JOB_MAGIC: &[u8; 8] = b"XFJOB01\n";
const FINISHED_MAGIC: &[u8; 8] = b"XFDONE1\n";

/// The job id of an owner text (its first line).
fn first_line(owner: &str) -> &str {
    owner.lines().next().unwrap_or("")
}

/// What differs between the owner texts `old` (the checkpoints') and `new` (this run's): their
/// lines after the id are `name=value`, listed as `name: old -> new`.
fn differences(old: &str, new: &str) -> String {
    let parse = |t: &str| -> std::collections::BTreeMap<String, String> {
        (t.lines().skip(1))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let (old_map, new_map) = (parse(old), parse(new));
    let none = String::from("(none)");
    let keys: BTreeSet<&String> = old_map.keys().chain(new_map.keys()).collect();
    let diff: Vec<String> = (keys.into_iter())
        .filter_map(|k| {
            let (o, n) = (
                old_map.get(k).unwrap_or(&none),
                new_map.get(k).unwrap_or(&none),
            );
            (o != n).then(|| format!("{k}: {o} -> {n}"))
        })
        .collect();
    match (diff.is_empty(), old_map.is_empty()) {
        (false, _) => format!("these differ (checkpointed -> now): {}", diff.join("; ")),
        // Checkpoints of a version that recorded the id only.
        (true, true) => format!(
            "its id is {}, this one's {}",
            first_line(old),
            first_line(new)
        ),
        (true, false) => "their ids differ".into(),
    }
}

/// What claiming a checkpoint store found ([`CheckpointStore::claim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// No checkpoint of an earlier run: the run starts from the beginning.
    Empty,
    /// The checkpoints of a run that finished, now removed: the run starts from the beginning
    /// (`removed`: how many checkpoints it had).
    Afresh {
        /// The finished run's checkpoints.
        removed: usize,
    },
    /// Checkpoints of an unfinished run of this job: the run resumes from them.
    Resume,
}

/// A restorable checkpoint, read and verified.
#[derive(Debug)]
pub struct Restored {
    /// Its manifest.
    pub manifest: Manifest,
    /// Newer checkpoints that could not be used, each with why (a corrupt or missing file).
    pub skipped: Vec<String>,
}

/// The checkpoints of one job in a [`Storage`].
pub struct CheckpointStore {
    storage: Box<dyn Storage>,
    retained: usize,
}

impl CheckpointStore {
    /// The store in local directory `dir`, keeping the newest `retained` checkpoints.
    ///
    /// # Errors
    /// The directory cannot be created; `retained` is 0.
    pub fn local(dir: &Path, retained: usize) -> Result<Self, StateError> {
        Self::new(Box::new(LocalDir::open(dir)?), retained)
    }

    /// The store `location` names ([`location::parse`]): a local directory (a path or
    /// `file:///dir`) or, with the `s3` feature, an object store (`s3://bucket/prefix`), keeping
    /// the newest `retained` checkpoints.
    ///
    /// # Errors
    /// As [`location::parse`], [`CheckpointStore::local`] and `ObjectStorage::open`.
    pub fn open(location: &Path, retained: usize) -> Result<Self, StateError> {
        match location::parse(location)? {
            Location::Dir(dir) => Self::local(&dir, retained),
            #[cfg(feature = "s3")]
            Location::Object(url) => Self::new(Box::new(ObjectStorage::open(&url)?), retained),
            #[cfg(not(feature = "s3"))]
            Location::Object(url) => unreachable!("parse refuses {url} without the s3 feature"),
        }
    }

    /// The store in `storage`, keeping the newest `retained` checkpoints.
    ///
    /// # Errors
    /// `retained` is 0.
    pub fn new(storage: Box<dyn Storage>, retained: usize) -> Result<Self, StateError> {
        if retained == 0 {
            return Err(StateError::Other(
                "--checkpoints-retained must be at least 1".into(),
            ));
        }
        Ok(CheckpointStore { storage, retained })
    }

    /// Where the store is.
    pub fn location(&self) -> String {
        self.storage.location()
    }

    /// Claims the store for job `job`. The checkpoints of a finished run ([`Self::mark_finished`])
    /// are removed and the run starts afresh, unless `resume`, which has nothing to continue
    /// then. Other checkpoints are refused unless `resume`, and with `resume` they must belong
    /// to `job`.
    ///
    /// # Errors
    /// `resume` of a finished run; the store holds an unfinished run's checkpoints and `resume`
    /// is false; it belongs to another job; it cannot be written.
    pub fn claim(&self, job: &str, resume: bool) -> Result<Claim, StateError> {
        let manifests = self.manifests()?;
        let owner = match self.storage.get("job") {
            Ok(b) => Some(
                framing::unframe(JOB_MAGIC, &b)
                    .map(|p| String::from_utf8_lossy(p).to_string())
                    .map_err(|detail| StateError::Corrupt {
                        path: self.storage.describe("job"),
                        detail,
                    })?,
            ),
            Err(_) => None,
        };
        let finished = self.storage.get("finished").is_ok();
        let claim = if resume {
            // Another job's first: what differs is what the user most needs to hear.
            if let Some(o) = owner.filter(|o| first_line(o) != first_line(job)) {
                return Err(StateError::Other(format!(
                    "checkpoint directory '{}' belongs to another job: --resume continues only \
                     the same job with the same options; {}",
                    self.location(),
                    differences(&o, job)
                )));
            }
            if finished {
                return Err(StateError::Other(format!(
                    "the job whose checkpoints are in '{}' finished (newest checkpoint: {}): \
                     there is nothing to resume; run it without --resume to start it afresh",
                    self.location(),
                    manifests.last().map_or("none", String::as_str)
                )));
            }
            Claim::Resume
        } else if finished {
            self.clear()?;
            Claim::Afresh {
                removed: manifests.len(),
            }
        } else if let Some(newest) = manifests.last() {
            return Err(StateError::Other(format!(
                "checkpoint directory '{}' holds {} checkpoint(s) of an earlier run (newest: \
                 {newest}); pass --resume to continue from them, or choose an empty \
                 --checkpoint-dir",
                self.location(),
                manifests.len(),
            )));
        } else {
            Claim::Empty
        };
        self.storage
            .put("job", &framing::frame(JOB_MAGIC, job.as_bytes()))?;
        Ok(claim)
    }

    /// Marks the run whose checkpoints these are as finished: the next run in this directory
    /// starts afresh instead of being refused, and `--resume` says there is nothing to continue.
    ///
    /// # Errors
    /// The marker cannot be written.
    pub fn mark_finished(&self) -> Result<(), StateError> {
        self.storage
            .put("finished", &framing::frame(FINISHED_MAGIC, b""))
    }

    /// Removes every checkpoint, file and marker of the store (a finished run's), the marker
    /// last: a removal cut short leaves a finished run, removed again next time.
    fn clear(&self) -> Result<(), StateError> {
        for prefix in ["manifests", "files"] {
            for name in self.storage.list(prefix)? {
                self.storage.delete(&name)?;
            }
        }
        self.storage.delete("finished")
    }

    /// Writes the snapshot `delta` of operator instance `instance` (`vertex/index`) for
    /// checkpoint `checkpoint`; returns its reference for the manifest.
    ///
    /// # Errors
    /// The write failed.
    pub fn write_snapshot(
        &self,
        instance: &str,
        checkpoint: u64,
        delta: &Delta,
    ) -> Result<FileRef, StateError> {
        let safe: String = instance
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let name = format!("files/{safe}-c{checkpoint:010}.snap");
        let bytes = framing::frame(SNAPSHOT_MAGIC, &encode_snapshot(delta));
        self.storage.put(&name, &bytes)?;
        Ok(FileRef {
            name,
            bytes: bytes.len() as u64,
            full: delta.full,
        })
    }

    /// Completes a checkpoint: writes its manifest (after every file it names is durable), then
    /// deletes checkpoints beyond the retained ones and files no retained manifest names.
    /// Returns the names deleted.
    ///
    /// # Errors
    /// The manifest could not be written (the checkpoint did not complete), or a deletion failed.
    pub fn commit(&self, manifest: &Manifest) -> Result<Vec<String>, StateError> {
        let json = serde_json::to_vec_pretty(manifest).expect("a manifest serializes");
        let name = Self::manifest_name(manifest.checkpoint);
        self.storage
            .put(&name, &framing::frame(MANIFEST_MAGIC, &json))?;
        self.retain()
    }

    fn manifest_name(checkpoint: u64) -> String {
        format!("manifests/c{checkpoint:010}")
    }

    /// Manifest names, oldest first.
    fn manifests(&self) -> Result<Vec<String>, StateError> {
        self.storage.list("manifests")
    }

    /// Deletes manifests beyond the newest `retained`, then every file none of the remaining
    /// names, except files of checkpoints newer than the newest manifest (still being written).
    /// A manifest that cannot be read keeps nothing alive (it cannot be restored).
    fn retain(&self) -> Result<Vec<String>, StateError> {
        let manifests = self.manifests()?;
        let drop_n = manifests.len().saturating_sub(self.retained);
        let mut deleted = Vec::new();
        for m in &manifests[..drop_n] {
            self.storage.delete(m)?;
            deleted.push(m.clone());
        }
        let mut live = BTreeSet::new();
        for m in &manifests[drop_n..] {
            if let Ok(man) = self.read_manifest(m) {
                live.extend(man.files().map(|f| f.name.clone()));
            }
        }
        let newest = manifests.last().and_then(|m| checkpoint_of(m)).unwrap_or(0);
        for f in self.storage.list("files")? {
            let in_flight = checkpoint_of(&f).is_none_or(|c| c > newest);
            if !live.contains(&f) && !in_flight {
                self.storage.delete(&f)?;
                deleted.push(f);
            }
        }
        Ok(deleted)
    }

    fn read_manifest(&self, name: &str) -> Result<Manifest, StateError> {
        let bytes = self.storage.get(name)?;
        let corrupt = |detail| StateError::Corrupt {
            path: self.storage.describe(name),
            detail,
        };
        let payload = framing::unframe(MANIFEST_MAGIC, &bytes).map_err(corrupt)?;
        serde_json::from_slice(payload).map_err(|e| corrupt(format!("bad manifest: {e}")))
    }

    /// Reads and verifies one snapshot file.
    ///
    /// # Errors
    /// Missing, or corrupt (the error names the file).
    pub fn read_snapshot(&self, f: &FileRef) -> Result<Delta, StateError> {
        let bytes = self.storage.get(&f.name)?;
        let corrupt = |detail| StateError::Corrupt {
            path: self.storage.describe(&f.name),
            detail,
        };
        let payload = framing::unframe(SNAPSHOT_MAGIC, &bytes).map_err(corrupt)?;
        decode_snapshot(payload).map_err(corrupt)
    }

    /// Reads the chain of an operator instance, verifying every file.
    ///
    /// # Errors
    /// As [`CheckpointStore::read_snapshot`]; a chain that does not start with a full snapshot.
    pub fn read_chain(&self, chain: &[FileRef]) -> Result<Vec<Delta>, StateError> {
        if chain.first().is_some_and(|f| !f.full) {
            return Err(StateError::Corrupt {
                path: self.storage.describe(&chain[0].name),
                detail: "a chain must start with a full snapshot".into(),
            });
        }
        chain.iter().map(|f| self.read_snapshot(f)).collect()
    }

    /// Checkpoint `checkpoint`'s manifest, verified with every file it names (what the other
    /// processes of a resumed job read once process 0 has chosen it).
    ///
    /// # Errors
    /// The manifest or one of its files is missing or corrupt, naming it.
    pub fn checkpoint(&self, checkpoint: u64) -> Result<Manifest, StateError> {
        let m = self.read_manifest(&Self::manifest_name(checkpoint))?;
        for f in m.files() {
            self.read_snapshot(f)?;
        }
        Ok(m)
    }

    /// The newest checkpoint whose manifest and files all verify, with the newer ones that did
    /// not and why; `None` if the store has no checkpoint.
    ///
    /// # Errors
    /// The store has checkpoints and none verifies: the error names the newest one's bad file.
    pub fn latest(&self) -> Result<Option<Restored>, StateError> {
        let manifests = self.manifests()?;
        let mut skipped = Vec::new();
        for name in manifests.iter().rev() {
            let checked = self.read_manifest(name).and_then(|m| {
                for f in m.files() {
                    self.read_snapshot(f)?;
                }
                Ok(m)
            });
            match checked {
                Ok(manifest) => return Ok(Some(Restored { manifest, skipped })),
                Err(e) => skipped.push(format!("{name}: {e}")),
            }
        }
        if skipped.is_empty() {
            return Ok(None);
        }
        Err(StateError::Other(format!(
            "no usable checkpoint in '{}': {}",
            self.location(),
            skipped.join("; ")
        )))
    }
}
