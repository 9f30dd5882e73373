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
    /// Per operator instance: the tracking slots it held open at this checkpoint for output it
    /// has yet to emit (a window's deferred results). A resumed job XORs them into trAcker before
    /// anything runs, so no downstream frontier passes a restored window's results.
    #[serde(default)]
    pub holds: BTreeMap<String, Vec<Hold>>,
}

/// A tracking slot an operator instance holds open: `tag` XOR-ed into `slot` of `component`
/// (event time), released by XOR-ing it again once the output is emitted
/// (`crates/runtime/src/operators/window.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The downstream component held.
    pub component: u32,
    /// The slot held (granularity units).
    pub slot: u64,
    /// The random tag.
    pub tag: u64,
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
