//! The checkpoint a resumed job starts from (`--resume`, or a restart after a lost process):
//! which one, and what each instance reads of it.
//!
//! Every process of a job must restore the same checkpoint. Process 0 chooses it (the newest
//! that verifies, skipping corrupt ones) and hands its number to the local processes it starts in
//! [`RESUME_ENV`]; a process started that way restores exactly that one.

use crate::error::RunError;
use std::sync::Arc;
use xorflow_state::checkpoint::{CheckpointStore, Hold, Manifest};
use xorflow_state::delta::Delta;

/// Environment variable naming the checkpoint a local child process restores.
pub const RESUME_ENV: &str = "XORFLOW_RESUME_CHECKPOINT";

/// The checkpoint a resumed job starts from: stateful instances restore their chains
/// (`operators/driver.rs`), sources seek to their positions (`operators/source.rs`), trAcker
/// gets the holds (`execute/tracking.rs`), and every instance starts in epoch `checkpoint + 1`.
pub struct Resume {
    /// The checkpoint's manifest.
    pub manifest: Manifest,
    /// Where its files are.
    pub store: Arc<CheckpointStore>,
    /// Newer checkpoints that could not be used, each with why.
    pub skipped: Vec<String>,
}

impl Resume {
    /// The first epoch after the checkpoint: where every instance starts.
    pub fn first_epoch(&self) -> u64 {
        self.manifest.checkpoint + 1
    }

    /// The state chain of instance `reporter` (`<vertex>/<worker>`), read and verified; empty if
    /// the checkpoint holds none for it.
    ///
    /// # Errors
    /// A file that is missing or fails its checksum (the checkpoint verified at start: only if
    /// it changed since).
    pub fn chain(&self, reporter: &str) -> Result<Vec<Delta>, String> {
        match self.manifest.state.get(reporter) {
            Some(files) => self.store.read_chain(files).map_err(|e| e.to_string()),
            None => Ok(Vec::new()),
        }
    }

    /// Where source instance `id` resumes, in the source's terms.
    ///
    /// # Errors
    /// The checkpoint recorded no position for it (the source cannot resume).
    pub fn position(&self, id: xorflow_tracking::SourceId) -> Result<&str, String> {
        match self.manifest.positions.get(&format!("source/{id}")) {
            Some(p) if !p.is_empty() => Ok(p),
            _ => Err(format!(
                "checkpoint {} has no replay position for source instance {id}: the source \
                 cannot resume (Source::position)",
                self.manifest.checkpoint
            )),
        }
    }

    /// Every hold of the checkpoint.
    pub fn holds(&self) -> impl Iterator<Item = &Hold> {
        self.manifest.holds.values().flatten()
    }
}

/// The checkpoint this process resumes from, if any: the one [`RESUME_ENV`] names (a local child
/// of a resumed job), else with `resume` the newest of `store` that verifies (warning about each
/// newer one skipped, or that there is none: the job then starts from the beginning).
///
/// # Errors
/// The named checkpoint does not verify, or none of the store's does (exit 2, naming the file).
pub(crate) fn find(
    store: &Arc<CheckpointStore>,
    resume: bool,
) -> Result<Option<Arc<Resume>>, RunError> {
    let err = RunError::CheckpointDir;
    if let Ok(n) = std::env::var(RESUME_ENV) {
        let n: u64 = n
            .parse()
            .map_err(|_| RunError::Config(format!("{RESUME_ENV}='{n}' is not a checkpoint")))?;
        let manifest = store.checkpoint(n).map_err(err)?;
        return Ok(Some(Arc::new(Resume {
            manifest,
            store: store.clone(),
            skipped: Vec::new(),
        })));
    }
    if !resume {
        return Ok(None);
    }
    let Some(r) = store.latest().map_err(err)? else {
        tracing::warn!(
            "--resume: '{}' holds no checkpoint; starting from the beginning",
            store.location()
        );
        return Ok(None);
    };
    for s in &r.skipped {
        tracing::warn!("--resume: skipped unusable checkpoint {s}");
    }
    tracing::info!(
        "--resume: continuing from checkpoint {} in '{}'",
        r.manifest.checkpoint,
        store.location()
    );
    Ok(Some(Arc::new(Resume {
        manifest: r.manifest,
        store: store.clone(),
        skipped: r.skipped,
    })))
}
