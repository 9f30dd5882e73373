//! The operator lifecycle, and one file per operator kind.
//!
//! Every vertex instance is an [`Operator`] run by [`driver::OperatorVertex`], which writes the
//! shared part once: back-pressure, the input loop (process a batch, commit the output's send
//! tags, then register the batch's receive tag: docs/design.md, "Open output buffers"), marker
//! alignment, frontier notifications, flushing, end of stream and statistics. An operator only
//! says what it does with a batch and with a frontier:
//!
//! ```text
//! open -> { on_batch | produce | on_frontier | tick }* -> close
//!            snapshot(epoch) / restore(state) at any point between steps
//! ```
//!
//! The kinds: [`source`], [`unary`] (map, filter, flat_map), [`inspect`], [`window`],
//! [`process`] (keyed functions with timers: session windows), [`sink`], [`iterate`] (a cycle)
//! and [`epoch_snapshot`]; [`deferred`] is what windows and timers share; [`chain`] runs an
//! element-wise operator inside its producer's step (operator chaining).

pub mod chain;
mod deferred;
pub mod driver;
pub mod epoch_snapshot;
pub mod inspect;
pub mod iterate;
pub mod outputs;
pub mod process;
pub mod sink;
pub mod source;
pub mod source_pace;
mod store;
mod teardown;
pub mod unary;
pub mod window;
mod window_version;

pub use crate::error::OperatorError;
pub use driver::OperatorVertex;
pub use outputs::Outputs;

use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use xorflow_tracking::{ComponentId, Time, INF};

/// Input batches a vertex processes per step before the worker moves on (fairness between vertices).
pub(crate) const BATCHES_PER_STEP: usize = 8;

/// What became of an input batch's receive tag.
pub enum Receipt {
    /// The batch is processed: the driver registers its receive tag now.
    Done,
    /// The operator keeps (part of) the batch and registers the receive tag itself
    /// ([`WorkerCtx::ack_received`]), over sub-ranges that add up to the batch's range, once it is
    /// done with each part.
    Kept,
}

/// An operator's snapshot at an epoch boundary ([`Operator::snapshot`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorState {
    /// The operator keeps nothing across elements: nothing to save or restore.
    Stateless,
    /// The changes of its state tables since its previous snapshot (all of them if asked for a
    /// full one): `crates/state/src/delta.rs`.
    Delta(xorflow_state::delta::Delta),
}

/// An operator: what one vertex instance does with its input and with progress. All methods but
/// [`Operator::on_batch`] have defaults, so a stateless element-wise operator writes one method.
pub trait Operator: Send + Sized + 'static {
    /// Element type of the input (`()` for sources, which have none).
    type In: Send;
    /// The output side: an [`crate::port::OutputPort`], a pair of them, or `()` for sinks.
    type Out: Outputs;

    /// Keeps state across epochs: with checkpoints, the driver processes only batches of the
    /// instance's current epoch, snapshots the instance when its epoch frontier rises and then
    /// calls [`Operator::on_epoch`] (`progress/cut.rs`).
    const STATEFUL: bool = false;

    /// Its snapshots only ever add keys, never change or delete one (the staged output of a
    /// sink that gets it at the end): its chain of snapshot files then restarts with a full
    /// snapshot only every 256 checkpoints (`xorflow_state::checkpoint::Chain::append_only`),
    /// not every 16 or whenever its increments outweigh the last full one. Asked once, when the
    /// vertex is built.
    fn append_only(&self) -> bool {
        false
    }

    /// Keeps taking input while the outputs are back-pressured (a cycle must drain its own loop
    /// to make progress: `operators/iterate.rs`).
    const DRAINS_WHEN_BLOCKED: bool = false;

    /// Called once on the worker thread before the first step.
    ///
    /// # Errors
    /// A message naming what failed; the run is aborted with it.
    fn open(&mut self, _ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Takes the instance's event-log channel `<vertex>.out`, opened by the driver for sources
    /// only (a source logs each element it emits); others ignore it.
    fn take_event_log(&mut self, _channel: xorflow_measure::log::Channel) {}

    /// Processes one input batch: pushes outputs and commits them ([`Outputs`]), before the
    /// driver registers the batch's receive tag (unless [`Receipt::Kept`]).
    ///
    /// # Errors
    /// A message naming what failed (a sink that cannot write, say); the run is aborted.
    fn on_batch(
        &mut self,
        batch: Batch<Self::In>,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError>;

    /// Produces without input (sources): emits, heartbeats. Returns whether it did anything.
    ///
    /// # Errors
    /// As [`Operator::on_batch`].
    fn produce(
        &mut self,
        _out: &mut Self::Out,
        _ctx: &mut WorkerCtx,
        _stats: &mut VertexStats,
    ) -> Result<bool, OperatorError> {
        Ok(false)
    }

    /// The frontier of this instance rose to `frontier`: every element with a smaller time has
    /// reached it ([`WorkerCtx::frontier`], whatever the tracking mode). Called only for vertices
    /// registered as notified, once per rise, after the step's input.
    ///
    /// # Errors
    /// As [`Operator::on_batch`].
    fn on_frontier(
        &mut self,
        _frontier: Time,
        _out: &mut Self::Out,
        _ctx: &mut WorkerCtx,
        _stats: &mut VertexStats,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Called every step before and after the input, with the current frontier: for operators
    /// whose work depends on the clock as well as the input (a snapshot's pause). Returns whether
    /// it did anything.
    fn tick(
        &mut self,
        _frontier: Time,
        _out: &mut Self::Out,
        _ctx: &mut WorkerCtx,
        _stats: &mut VertexStats,
    ) -> bool {
        false
    }

    /// The highest marker this operator may forward now (tracking `markers`): a marker promises
    /// that nothing below it follows, so an operator holding elements back caps it.
    fn marker_cap(&self) -> Time {
        INF
    }

    /// Sources: true once every source instance has ended (the driver then ends the output
    /// without tracking). Operators with input end when their input has.
    fn exhausted(&self) -> bool {
        true
    }

    /// The operator's state as of the end of checkpoint epoch `epoch`: the changes since its
    /// previous snapshot, or all of it if `full`. Default: [`OperatorState::Stateless`].
    ///
    /// # Errors
    /// A message naming what could not be saved.
    fn snapshot(&mut self, _epoch: u64, _full: bool) -> Result<OperatorState, OperatorError> {
        Ok(OperatorState::Stateless)
    }

    /// After the snapshot of checkpoints `covered` has been handed over: an operator with an
    /// on-disk store records a savepoint of it for local recovery (`StateStore::savepoint`;
    /// `completed`: the newest completed checkpoint, whose older savepoints can go). Default:
    /// nothing.
    ///
    /// # Errors
    /// A message naming the store that failed.
    fn savepoint(
        &mut self,
        _covered: std::ops::RangeInclusive<u64>,
        _completed: Option<u64>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// True if the operator keeps versions for trAcker's versioned cut (`--checkpoint-cut
    /// versioned`): it can process batches of the epoch after the one it has yet to snapshot,
    /// and still snapshot that one. Default: false (its batches wait: the buffered cut).
    fn versioned(&self) -> bool {
        false
    }

    /// Versioned cut: before the first batch of epoch `epoch` (the one after the current),
    /// the operator starts keeping the state as of now apart from what that epoch changes; its
    /// next snapshot states the older version, and what it emits meanwhile belongs to `epoch`.
    ///
    /// # Errors
    /// A message naming what cannot keep a version.
    fn begin_version(&mut self, _epoch: u64, _ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        Err("this operator keeps no versions".into())
    }

    /// Stateful operators: the instance has moved to checkpoint epoch `epoch` (after its
    /// snapshot of the epochs before, or its restore): what it emits from now on belongs to
    /// `epoch`.
    fn on_epoch(&mut self, _epoch: u64, _ctx: &mut WorkerCtx) {}

    /// The tracking slots the instance holds open for output it has yet to emit, as of its last
    /// [`Operator::snapshot`] (a window's deferred results: `operators/window.rs`). Recorded with
    /// the snapshot; a resumed job gives them to trAcker before anything runs.
    fn holds(&self) -> Vec<xorflow_state::checkpoint::Hold> {
        Vec::new()
    }

    /// The job resumes from checkpoint `resume` (`--resume`), after [`Operator::open`] and, for
    /// stateful operators, [`Operator::restore`]: sources seek to their positions here.
    ///
    /// # Errors
    /// What cannot resume (a source without a recorded position), naming it.
    fn on_resume(
        &mut self,
        _resume: &crate::checkpoint::Resume,
        _ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Local recovery: if [`Operator::open`] found the instance's on-disk store rolled back to
    /// the checkpoint being restored (`xorflow_state::local`), rebuilds the operator's state
    /// from it and returns true; the driver then reads no chain. Default: false.
    ///
    /// # Errors
    /// The store's content does not decode.
    fn restore_local(&mut self) -> Result<bool, OperatorError> {
        Ok(false)
    }

    /// Restores the state its snapshots gave: a full one, then the increments after it.
    /// Default: accepts only no state at all.
    ///
    /// # Errors
    /// State this operator cannot take.
    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError> {
        expect_no_state(chain, "a stateless operator")
    }

    /// Called once after the worker loop ends (sinks flush their files here).
    ///
    /// # Errors
    /// A message naming what failed.
    fn close(&mut self) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Adds the operator's own measurements to its vertex's statistics at the end of the run.
    fn report(&mut self, _stats: &mut VertexStats) {}

    /// Sources: the lowest heartbeat of the instances still running (how far the input has
    /// got, for the live frontier lag: `measure/live/`). `None` for other operators, and for a
    /// source operator hosting no instance on this worker (it has no input to be behind).
    fn heartbeat(&self) -> Option<Time> {
        None
    }

    /// How many instances of its vertex this operator stands for on its worker: the source
    /// instances it hosts (0 to `--sources`), 1 for other operators (the live metrics' instance
    /// counts).
    fn hosted_instances(&self) -> usize {
        1
    }
}

/// Accepts a chain of snapshots only if it holds no state at all; `who` names the operator in
/// the error.
///
/// # Errors
/// The chain holds records.
pub(crate) fn expect_no_state(
    chain: &[xorflow_state::delta::Delta],
    who: &str,
) -> Result<(), OperatorError> {
    match chain.iter().map(|d| d.records.len()).sum::<usize>() {
        0 => Ok(()),
        n => Err(format!("{who} cannot restore {n} records of state").into()),
    }
}

/// A vertex instance as the worker loop drives it (object-safe; [`OperatorVertex`] implements it
/// for every [`Operator`]).
pub trait Vertex: Send {
    /// Called once before the first step.
    ///
    /// # Errors
    /// As [`Operator::open`].
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), OperatorError>;

    /// Runs one scheduling quantum: takes some input (or emits from a source), sends output, fires
    /// notifications. Returns whether it did any work.
    ///
    /// # Errors
    /// A message naming what failed (a sink that cannot write, say); the run is aborted.
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, OperatorError>;

    /// Sends the partial batches `which` says and retries held-back batches. Returns whether
    /// anything was sent.
    fn flush(&mut self, ctx: &mut WorkerCtx, which: crate::channel::Flush) -> bool;

    /// Tracking `none`: true once the instance has seen end of stream on every input, emitted
    /// everything and delivered its own end-of-stream markers.
    fn ended(&self) -> bool;

    /// The instance's state as of the end of `epoch` ([`Operator::snapshot`]).
    ///
    /// # Errors
    /// As [`Operator::snapshot`].
    fn snapshot(&mut self, epoch: u64, full: bool) -> Result<OperatorState, OperatorError>;

    /// Restores a chain of snapshots ([`Operator::restore`]).
    ///
    /// # Errors
    /// As [`Operator::restore`].
    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError>;

    /// Called once after the worker loop ends.
    ///
    /// # Errors
    /// As [`Operator::close`].
    fn close(&mut self) -> Result<(), OperatorError>;

    /// Counters of this instance.
    fn stats(&mut self) -> VertexStats;

    /// Its totals so far, for the live metrics (`measure/live/`): cheap, no allocation.
    fn live_counts(&self, ctx: &WorkerCtx) -> crate::measure::live::InstanceCounts;

    /// The component whose frontier this vertex acts on (windows, sinks, snapshots), if any:
    /// notifications for other components are not worth waking a worker for.
    fn notified_component(&self) -> Option<ComponentId>;

    /// True for a source's instance (it has no input).
    fn is_source(&self) -> bool;
}
