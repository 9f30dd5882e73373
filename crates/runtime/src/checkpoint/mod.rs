//! Checkpoints of a running job (docs/state.md, "Checkpoints"): what workers hand over at epoch
//! boundaries ([`Checkpointer`]) and the coordinator that files it ([`coordinator`]).
//!
//! A stateful instance snapshots when its epoch frontier rises (`progress/cut.rs`); a source
//! instance reports its replay position when it moves to a new epoch (`operators/source.rs`).
//! Each report covers a range of epochs. The coordinator writes snapshot files as they come and,
//! once every reporter has covered epoch `e`, commits checkpoint `e`'s manifest: the state chain
//! of every instance and the position of every source, as of the end of epoch `e`.

pub mod coordinator;

use crate::dataflow::Builder;
use crate::report::RunError;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread::JoinHandle;
use xorflow_state::checkpoint::CheckpointStore;

use crate::progress::cut::Covered;
use crossbeam_channel::Sender;
use xorflow_state::delta::Delta;

/// What a reporter hands over for the epochs `covered`.
pub(crate) enum Payload {
    /// A stateful instance's snapshot (a full one or an increment).
    State(Delta),
    /// A source instance's replay position after the covered epochs.
    Position(String),
}

/// One report to the coordinator.
pub(crate) struct Report {
    /// Who reports: `<vertex>/<worker>` for state, `source/<id>` for sources.
    pub reporter: String,
    /// The epochs the report covers.
    pub covered: Covered,
    /// What it carries.
    pub payload: Payload,
}

/// A running coordinator: the workers' handle and the thread to join at the end.
pub(crate) struct Running {
    pub handle: Checkpointer,
    pub thread: JoinHandle<Result<coordinator::CheckpointStats, String>>,
}

/// Starts the coordinator when the job writes checkpoints: claims the directory for job `job`
/// and waits, on every checkpoint, for each window instance (`<vertex>/<worker>` over `workers`
/// workers) and each source instance.
///
/// # Errors
/// The directory cannot be created, or holds another run's checkpoints.
pub(crate) fn start(b: &Builder, workers: usize, job: u64) -> Result<Option<Running>, RunError> {
    let (Some(dir), Some(_)) = (&b.config.checkpoint_dir, b.config.checkpoint_interval) else {
        return Ok(None);
    };
    // A directory that cannot be used is the user's to fix: refused as configuration.
    let err = |e: xorflow_state::StateError| RunError::Config(e.to_string());
    let store = CheckpointStore::local(dir, b.config.checkpoints_retained).map_err(err)?;
    let job = format!("{job:016x}");
    store.claim(&job, false).map_err(err)?;
    let mut reporters = BTreeSet::new();
    for (v, _) in b.deferred.iter().enumerate().filter(|(_, d)| **d) {
        let name = &b.graph.vertices[v].name;
        reporters.extend((0..workers).map(|w| format!("{name}/{w}")));
    }
    reporters.extend((0..b.sources).map(|s| format!("source/{s}")));
    let (c, handle, rx) = coordinator::Coordinator::new(Arc::new(store), job, reporters);
    let thread = std::thread::Builder::new()
        .name("xorflow-checkpoints".into())
        .spawn(move || c.run(rx))
        .map_err(|e| RunError::Checkpoint(format!("cannot start the coordinator: {e}")))?;
    Ok(Some(Running { handle, thread }))
}

/// The workers' handle on the coordinator of their process.
#[derive(Clone)]
pub struct Checkpointer {
    tx: Sender<Report>,
}

impl Checkpointer {
    /// Hands a stateful instance's snapshot to the coordinator (it is written in the
    /// background).
    pub fn state(&self, reporter: String, covered: Covered, delta: Delta) {
        // The coordinator outlives the workers; a send fails only if it has failed, which the
        // run reports on its own.
        let _ = self.tx.send(Report {
            reporter,
            covered,
            payload: Payload::State(delta),
        });
    }

    /// Hands a source instance's replay position to the coordinator.
    pub fn position(&self, reporter: String, covered: Covered, position: String) {
        let _ = self.tx.send(Report {
            reporter,
            covered,
            payload: Payload::Position(position),
        });
    }
}
