//! A checkpoint's manifest: which files hold each operator instance's state and where each
//! source resumes. Written last: a checkpoint exists once its manifest does.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One snapshot file of an operator instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Name in the store (`files/...`).
    pub name: String,
    /// Size, bytes.
    pub bytes: u64,
    /// True for a full snapshot (a chain starts with one).
    pub full: bool,
}

/// A completed checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The checkpoint's number (increasing over the job's life, across restarts).
    pub checkpoint: u64,
    /// The job the checkpoint belongs to (its job id: `runtime/src/execute/job_id.rs`).
    pub job: String,
    /// Wall clock when it completed, ms since the Unix epoch.
    pub completed_ms: u64,
    /// Per operator instance (`vertex/instance`): its chain of snapshot files, a full one first,
    /// then the increments after it, up to and including this checkpoint's.
    pub state: BTreeMap<String, Vec<FileRef>>,
    /// Per source instance (`vertex/instance`): where it resumes, in the source's own terms
    /// (a file's next record, a partition's next offset).
    pub positions: BTreeMap<String, String>,
    /// Per sink instance: what the sink commits with this checkpoint (its staged files).
    pub sinks: BTreeMap<String, Vec<String>>,
}

impl Manifest {
    /// Every file the checkpoint needs.
    pub fn files(&self) -> impl Iterator<Item = &FileRef> {
        self.state.values().flatten()
    }

    /// Bytes of the files first written for this checkpoint (the increment's size).
    pub fn new_bytes(&self) -> u64 {
        self.files()
            .filter(|f| f.name.contains(&format!("-c{:010}", self.checkpoint)))
            .map(|f| f.bytes)
            .sum()
    }
}
