//! Checkpoints of a running job (docs/state.md, "Checkpoints"): what workers hand over at epoch
//! boundaries ([`Checkpointer`]), the per-process [`writer`] that files it, the [`coordinator`]
//! on process 0 that commits checkpoints, and the checkpoint a job [`resume`]s from.
//!
//! A stateful instance snapshots when its epoch frontier rises (`progress/cut.rs`); a source
//! instance reports its replay position when it moves to a new epoch (`operators/source.rs`).
//! Each report covers a range of epochs. Every process writes its own instances' snapshot files
//! into the checkpoint store (in parallel, and no state crosses the network) and tells process 0
//! what it filed; once every reporter of the job has covered epoch `e`, process 0 commits
//! checkpoint `e`'s manifest: the state chain of every instance and the position of every source,
//! as of the end of epoch `e`.

pub mod coordinator;
pub mod resume;
pub mod writer;

pub use resume::{Resume, RESUME_ENV};

use crate::error::RunError;
use crate::net::link::RemoteTx;
use crate::progress::cut::Covered;
use crate::wake::Unparkers;
use crossbeam_channel::Sender;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use xorflow_state::checkpoint::{CheckpointStore, FileRef, Hold};
use xorflow_state::delta::Delta;

/// What a reporter hands over for the epochs `covered`.
pub(crate) enum Payload {
    /// A stateful instance's snapshot (a full one or an increment) and the tracking slots it
    /// holds open at that point.
    State(Delta, Vec<Hold>),
    /// A source instance's replay position after the covered epochs.
    Position(String),
}

/// One report of a local instance.
pub(crate) struct Report {
    /// Who reports: `<vertex>/<worker>` for state, `source/<id>` for sources.
    pub reporter: String,
    /// The epochs the report covers.
    pub covered: Covered,
    /// What it carries.
    pub payload: Payload,
}

/// A report once its snapshot file is written: what process 0 needs to commit (sent over the
/// transport from the other processes, `Kind::Checkpoint` frames).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Filed {
    pub reporter: String,
    pub covered: Covered,
    pub entry: Entry,
}

/// What a [`Filed`] report holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Entry {
    /// A snapshot file and the holds as of it.
    State { file: FileRef, holds: Vec<Hold> },
    /// A replay position.
    Position(String),
}

/// What travels in `Kind::Checkpoint` frames (`net/frame.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Message {
    /// To process 0: another process filed a report.
    Filed(Filed),
    /// From process 0: checkpoint `.0` is complete (its manifest is written), so sinks may
    /// commit the output staged up to it (`operators/sink.rs`).
    Committed(u64),
}

/// The newest completed checkpoint as this process knows it: set by process 0's coordinator,
/// and on the other processes by the transport when process 0 says so; read by the sinks, whose
/// workers it wakes (a sink committing per checkpoint acts on it).
#[derive(Clone, Default)]
pub struct Committed(Arc<AtomicU64>, Arc<std::sync::OnceLock<Arc<Unparkers>>>);

impl std::fmt::Debug for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Committed({:?})", self.get())
    }
}

impl Committed {
    /// The newest completed checkpoint, if any.
    pub fn get(&self) -> Option<u64> {
        self.0.load(Ordering::Acquire).checked_sub(1)
    }

    /// Checkpoint `c` is complete (never moves back): wakes this process's workers.
    pub(crate) fn set(&self, c: u64) {
        if self.0.fetch_max(c + 1, Ordering::AcqRel) < c + 1 {
            if let Some(u) = self.1.get() {
                for w in 0..u.0.len() {
                    u.unpark(w);
                }
            }
        }
    }

    /// The workers [`Committed::set`] wakes (once; set as the run starts).
    pub(crate) fn wake(&self, unparkers: Arc<Unparkers>) {
        let _ = self.1.set(unparkers);
    }
}

/// What the transport of a process with checkpoints hands to the checkpoint thread.
#[derive(Clone)]
pub(crate) struct Inlet {
    pub tx: Sender<Inbound>,
    pub committed: Committed,
}

impl crate::net::payload::Inlet for Inlet {
    /// Takes a `Kind::Checkpoint` frame's message.
    fn take(&self, frame: &[u8]) -> Result<(), String> {
        let m: Message =
            crate::net::payload::decode(frame).map_err(|e| format!("checkpoint frame: {e}"))?;
        match m {
            // The coordinator stops only after every process's end-of-run report; a writer
            // that gets one fails the run with a message.
            Message::Filed(f) => {
                let _ = self.tx.send(Inbound::Filed(f));
            }
            Message::Committed(c) => self.committed.set(c),
        }
        Ok(())
    }
}

/// What the checkpoint thread of a process receives.
pub(crate) enum Inbound {
    /// A local instance's report, to file.
    Report(Report),
    /// Another process's filed report (process 0 only).
    Filed(Filed),
    /// The job is over: stop once everything before is handled (process 0 only).
    Stop,
}

/// The checkpoint thread of a process: the coordinator on process 0, a writer elsewhere.
pub(crate) struct Running {
    /// The workers' handle.
    pub handle: Checkpointer,
    /// Process 0's coordinator (not a writer).
    leader: bool,
    tx: Sender<Inbound>,
    thread: JoinHandle<Result<coordinator::CheckpointStats, String>>,
}

impl Running {
    /// A completed checkpoint wakes these workers ([`Committed::set`]).
    pub(crate) fn wake_on_commit(&self, unparkers: Arc<Unparkers>) {
        self.handle.committed.wake(unparkers);
    }

    /// Where the transport delivers checkpoint frames.
    pub fn inlet(&self) -> Inlet {
        Inlet {
            tx: self.tx.clone(),
            committed: self.handle.committed.clone(),
        }
    }

    /// Waits for the thread: a writer ends once the local workers are gone (their handles
    /// dropped), the coordinator when told to stop (every process's reports have arrived).
    /// Returns the coordinator's statistics (`None` from a writer).
    ///
    /// # Errors
    /// A file or manifest that could not be written; the thread panicked.
    pub fn finish(self) -> Result<Option<coordinator::CheckpointStats>, RunError> {
        let Running {
            handle,
            leader,
            tx,
            thread,
        } = self;
        drop(handle);
        let _ = tx.send(Inbound::Stop);
        drop(tx);
        let r = thread
            .join()
            .map_err(|_| RunError::Checkpoint("the checkpoint thread panicked".into()))?;
        let stats = r.map_err(RunError::Checkpoint)?;
        Ok(leader.then_some(stats))
    }
}

/// The checkpoint store of a job that writes checkpoints, and the checkpoint it resumes from.
pub(crate) struct Prepared {
    pub store: Arc<CheckpointStore>,
    pub resume: Option<Arc<Resume>>,
}

/// Opens the checkpoint store of a job that writes checkpoints (`None` otherwise); process 0
/// claims it for job `job` (`crate::execute::job_id`, a hash of `identity`) before any other
/// process starts. Finds
/// the checkpoint to resume from ([`resume::find`]); process 0 names it to the local processes
/// it is about to start.
///
/// # Errors
/// The directory cannot be created; it holds another run's checkpoints (or, resuming, another
/// job's); no checkpoint verifies.
pub(crate) fn prepare(
    config: &mut crate::config::RuntimeConfig,
    job: u64,
    identity: &[String],
) -> Result<Option<Prepared>, RunError> {
    let (Some(dir), Some(_)) = (&config.checkpoint_dir, config.checkpoint_interval) else {
        return Ok(None);
    };
    // A directory that cannot be used is the user's to fix: a refusal, not an engine failure.
    let err = RunError::CheckpointDir;
    let store = Arc::new(CheckpointStore::open(dir, config.checkpoints_retained).map_err(err)?);
    let leader = config.cluster.is_process_zero();
    if leader {
        // The id, then what it is a hash of: a refused resume names what differs.
        let owner = format!("{job:016x}\n{}", identity.join("\n"));
        let claim = store.claim(&owner, config.resume);
        if let xorflow_state::checkpoint::Claim::Afresh { removed } = claim.map_err(err)? {
            tracing::warn!(
                "checkpoint directory '{}' held the {removed} checkpoint(s) of a run that \
                 finished: starting afresh",
                store.location()
            );
        }
    }
    let resume = resume::find(&store, config.resume)?;
    if let (true, Some(r)) = (leader, &resume) {
        let n = r.manifest.checkpoint.to_string();
        config.cluster.child_env.push((RESUME_ENV.to_string(), n));
    }
    Ok(Some(Prepared { store, resume }))
}

/// What the checkpoint thread needs to know of the job it serves.
pub(crate) struct Participants {
    /// Who files a report for every checkpoint: each stateful instance (`<vertex>/<worker>`)
    /// and each source instance (`source/<s>`): [`Participants::reporters`].
    pub reporters: BTreeSet<String>,
    /// The live metrics completed checkpoints are counted in (`--metrics-addr`).
    pub live: Option<std::sync::Arc<crate::measure::live::Live>>,
    /// `RuntimeConfig::local_recovery`.
    pub local_recovery: bool,
}

impl Participants {
    /// The reporters of a job whose stateful vertices are named `stateful`, over `workers`
    /// workers of the job and `sources` source instances.
    pub fn reporters<'a>(
        stateful: impl Iterator<Item = &'a str>,
        workers: usize,
        sources: usize,
    ) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for name in stateful {
            out.extend((0..workers).map(|w| format!("{name}/{w}")));
        }
        out.extend((0..sources).map(|s| format!("source/{s}")));
        out
    }
}

/// Starts the checkpoint thread of a process. On process 0 (`to_leader` is `None`) the
/// coordinator of job `job`, which waits on every checkpoint for each of `job_parts`' reporters
/// and tells `peers` (every other process) of each completed one. Elsewhere a writer sending
/// what it files to process 0 over `to_leader`.
///
/// # Errors
/// The thread cannot start.
pub(crate) fn start(
    job_parts: Participants,
    prepared: &Prepared,
    job: u64,
    to_leader: Option<RemoteTx>,
    peers: Vec<RemoteTx>,
) -> Result<Running, RunError> {
    let store = &prepared.store;
    let (tx, rx) = crossbeam_channel::unbounded();
    let spawn = |name: &str, f: Box<dyn FnOnce() -> _ + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .map_err(|e| RunError::Checkpoint(format!("cannot start the {name} thread: {e}")))
    };
    let leader = to_leader.is_none();
    let committed = Committed::default();
    let thread = match to_leader {
        Some(leader) => {
            let w = writer::Writer::new(store.clone(), leader);
            spawn("xorflow-checkpoint-writer", Box::new(move || w.run(rx)))?
        }
        None => {
            let job = format!("{job:016x}");
            let resume = prepared.resume.as_deref();
            let reporters = job_parts.reporters;
            let mut c = coordinator::Coordinator::new(store.clone(), job, reporters, resume);
            c.announce_to(committed.clone(), peers);
            c.report_to(job_parts.live);
            spawn("xorflow-checkpoints", Box::new(move || c.run(rx)))?
        }
    };
    Ok(Running {
        handle: Checkpointer {
            tx: tx.clone(),
            committed,
            owner: format!("job {job:016x} at {}", store.location()).into(),
            local_recovery: job_parts.local_recovery,
        },
        leader,
        tx,
        thread,
    })
}

/// The workers' handle on the checkpoint thread of their process.
#[derive(Clone)]
pub struct Checkpointer {
    tx: Sender<Inbound>,
    committed: Committed,
    /// Who on-disk stores and their savepoints belong to: the job and its checkpoint store
    /// (`xorflow_state::local`).
    owner: std::sync::Arc<str>,
    /// `RuntimeConfig::local_recovery`.
    local_recovery: bool,
}

impl Checkpointer {
    /// The owner on-disk stores record, for savepoints of this job's checkpoints.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Whether on-disk stores take savepoints and restores roll back to them.
    pub fn local_recovery(&self) -> bool {
        self.local_recovery
    }

    /// The newest completed checkpoint this process knows of.
    pub fn committed(&self) -> Option<u64> {
        self.committed.get()
    }

    /// Hands a stateful instance's snapshot to the checkpoint thread (it is written in the
    /// background).
    pub fn state(&self, reporter: String, covered: Covered, delta: Delta, holds: Vec<Hold>) {
        self.send(reporter, covered, Payload::State(delta, holds));
    }

    /// Hands a source instance's replay position to the checkpoint thread.
    pub fn position(&self, reporter: String, covered: Covered, position: String) {
        self.send(reporter, covered, Payload::Position(position));
    }

    fn send(&self, reporter: String, covered: Covered, payload: Payload) {
        // The thread outlives the workers; a send fails only if it has failed, which the run
        // reports on its own.
        let _ = self.tx.send(Inbound::Report(Report {
            reporter,
            covered,
            payload,
        }));
    }
}
