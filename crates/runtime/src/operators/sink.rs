//! Sinks: user code that consumes the stream's elements and may act on notifications.
//!
//! Exactly-once output with checkpoints (two-phase commit, as Flink's file sink): the sink
//! operator stages what it receives as keyed state, per checkpoint epoch, instead of handing it to
//! the [`Sink`] at once. The staged elements go into the instance's snapshots (pre-commit: durable
//! once the checkpoint's files are) and a restore brings back exactly those of the checkpoint.
//! When they reach the sink is the sink's [`Staging`]:
//!
//! * [`Staging::PerCheckpoint`]: once checkpoint `c` is complete (process 0 announces it:
//!   `checkpoint/coordinator.rs`), the elements of epochs up to `c` go to [`Sink::write`], then
//!   [`Sink::commit`]`(c)` makes them visible; a restore first calls [`Sink::rollback`] with the
//!   last checkpoint the sink had committed as of the restored snapshot, so what it committed
//!   later (and will get again) is discarded. What follows the last checkpoint is written at the
//!   end. State stays bounded by what one checkpoint interval stages.
//! * [`Staging::AtEnd`] (the default): everything is held until the job has finished, for sinks
//!   that cannot take back what they were given.
//! * [`Staging::Direct`]: no staging, for sinks without effects outside the run (measurements).
//!
//! So a failed and resumed job hands the sink what a run without the failure would have, once.

use super::{Operator, OperatorState, Receipt};
use crate::batch::Batch;
use crate::measure::probe::ArrivalProbe;
use crate::measure::slot_log::SlotLog;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::{Data, Element};
use xorflow_state::delta::Delta;
use xorflow_state::{ListTable, StateConfig, StateStore, ValueTable};
use xorflow_tracking::Time;

/// A sink instance (one per worker).
pub trait Sink<T>: Send {
    /// Consumes a batch of elements.
    ///
    /// # Errors
    /// A message naming what failed (e.g. the output file); the run is aborted with it.
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError>;

    /// Every element with time below `frontier` has reached this sink: with trAcker at every
    /// instance (the component's frontier), with markers at this instance (its aligned marker).
    /// Never called without tracking. A place to commit or release results.
    fn on_frontier(&mut self, _frontier: Time) {}

    /// How the sink takes part in checkpoints (the module doc). Asked once, when the run opens.
    fn staging(&self) -> Staging {
        Staging::AtEnd
    }

    /// The run opens, before anything else: `checkpointed` says whether the elements come
    /// staged per checkpoint ([`Sink::commit`] follows) or unstaged (no checkpoints, or
    /// [`Staging::Direct`]). A place to connect, so that an unreachable output fails the run
    /// before any input is read.
    ///
    /// # Errors
    /// A message naming what failed.
    fn open(&mut self, _checkpointed: bool) -> Result<(), OperatorError> {
        Ok(())
    }

    /// [`Staging::PerCheckpoint`]: everything written since the previous commit (or rollback)
    /// belongs to checkpoint `checkpoint`, which is complete: make it visible. Must be idempotent
    /// per checkpoint: a restore may deliver the same elements for the same checkpoint again
    /// after a [`Sink::rollback`].
    ///
    /// # Errors
    /// A message naming what failed; the run is aborted with it.
    fn commit(&mut self, _checkpoint: u64) -> Result<(), OperatorError> {
        Ok(())
    }

    /// [`Staging::PerCheckpoint`]: the run restarts from a checkpoint as of which this sink had
    /// committed up to checkpoint `committed` (`None`: nothing). Discard every later commit and
    /// whatever was written since: the restored run writes them again.
    ///
    /// # Errors
    /// A message naming what failed.
    fn rollback(&mut self, _committed: Option<u64>) -> Result<(), OperatorError> {
        Ok(())
    }

    /// [`Staging::PerCheckpoint`], a run that restores nothing (neither a checkpoint nor
    /// `--resume`): what an earlier, abandoned run with the same output committed is not part of
    /// its output. Unlike [`Sink::rollback`]`(None)` on a restore, which must leave the record
    /// of a commit that raced with the failure readable for [`Sink::durable_commit`], this may
    /// hide every earlier commit. The default is `rollback(None)`.
    ///
    /// # Errors
    /// A message naming what failed.
    fn fresh_start(&mut self) -> Result<(), OperatorError> {
        self.rollback(None)
    }

    /// [`Staging::PerCheckpoint`], after a restore's [`Sink::rollback`]: the last checkpoint
    /// whose commit the output itself holds durably, if the sink can tell (a commit marker
    /// written in the same transaction as the data: `crates/kafka/src/sink.rs`). A commit can
    /// race with a failure (made after the checkpoint completed, before a snapshot recorded it):
    /// the operator then skips the epochs up to it instead of writing them again. `u64::MAX`:
    /// the output holds a finished run. `None` (the default): the sink cannot tell, and its
    /// rollback must discard such commits.
    ///
    /// # Errors
    /// A message naming what failed.
    fn durable_commit(&mut self) -> Result<Option<u64>, OperatorError> {
        Ok(None)
    }

    /// End of the run: flush and close. With [`Staging::PerCheckpoint`], what was written after
    /// the last commit is the output after the last checkpoint.
    ///
    /// # Errors
    /// A message naming what failed.
    fn finish(&mut self) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Adds this instance's own measurements to its vertex's statistics at the end of the run
    /// ([`VertexStats::count`], [`VertexStats::histogram_mut`]); they are merged over instances
    /// and processes and reported with the vertex.
    fn report(&mut self, _stats: &mut VertexStats) {}
}

/// When a sink receives what it is sent, with checkpoints (the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// Staged until the job has finished.
    AtEnd,
    /// Staged until the checkpoint covering it is complete, then [`Sink::commit`]ted.
    PerCheckpoint,
    /// Not staged: written at once, even with checkpoints (no exactly-once output).
    Direct,
}

/// Elements staged with checkpoints: one list per checkpoint epoch, in arrival order.
struct Staged<T> {
    /// Keeps the backend open.
    store: StateStore,
    list: ListTable<u64, (Time, T)>,
    /// Key 0: the last checkpoint committed to the sink ([`Staging::PerCheckpoint`]), as
    /// snapshots record it.
    committed: ValueTable<u8, u64>,
    /// The same in memory: checked on every batch without a table lookup.
    last_committed: Option<u64>,
    per_checkpoint: bool,
}

/// The operator around a [`Sink`]. It measures notification latency per slot: from receiving the
/// last element of a slot to the notification covering it (the trAcker paper's "notification await
/// time", docs/papers.md), and with checkpoints stages the elements (see the module doc).
pub struct SinkOp<T, S> {
    sink: S,
    probe: ArrivalProbe,
    /// The vertex's name, for its state and messages.
    name: String,
    /// Where staged elements live.
    state: StateConfig,
    staged: Option<Staged<T>>,
    /// The checkpoint epoch of what arrives now (`Operator::on_epoch`).
    epoch: u64,
    _input: PhantomData<fn(T)>,
}

impl<T: Data, S: Sink<T>> SinkOp<T, S> {
    /// The operator of vertex `name` writing into `sink`, staging in `state` with checkpoints.
    pub fn new(name: &str, sink: S, state: StateConfig) -> Self {
        SinkOp {
            sink,
            probe: ArrivalProbe::default(),
            name: name.to_string(),
            state,
            staged: None,
            epoch: 0,
            _input: PhantomData,
        }
    }

    fn err(&self) -> impl Fn(xorflow_state::StateError) -> String + '_ {
        move |e| format!("sink '{}': {e}", self.name)
    }

    /// Hands the sink the staged elements of every epoch up to `upto` (all of them if `None`),
    /// oldest epoch first and in arrival order within one; with `upto`, then commits checkpoint
    /// `upto`.
    fn deliver(&mut self, upto: Option<u64>) -> Result<(), OperatorError> {
        let Some(st) = &mut self.staged else {
            return Ok(());
        };
        let name = &self.name;
        let err = |e| OperatorError::state(format!("sink '{name}'"), e);
        let mut epochs: Vec<u64> = st.list.keys().copied().collect();
        epochs.retain(|&e| upto.is_none_or(|c| e <= c));
        epochs.sort_unstable();
        for e in epochs {
            let rows = st.list.take(&e).map_err(err)?;
            if !rows.is_empty() {
                let batch = rows.into_iter().map(|(t, d)| Element::new(t, d)).collect();
                self.sink.write(batch)?;
            }
        }
        if let Some(c) = upto {
            self.sink.commit(c)?;
            st.committed.insert(&0, c).map_err(err)?;
            st.last_committed = Some(c);
        }
        Ok(())
    }

    /// After a restore: the last checkpoint committed as of the restored state, and the sink
    /// rolled back to it ([`Staging::PerCheckpoint`]).
    fn roll_back(&mut self) -> Result<(), OperatorError> {
        let Some(st) = &mut self.staged else {
            return Ok(());
        };
        let err = |e| OperatorError::state(format!("sink '{}'", self.name), e);
        st.last_committed = st.committed.get(&0).map_err(err)?.copied();
        if !st.per_checkpoint {
            return Ok(());
        }
        self.sink.rollback(st.last_committed)?;
        let Some(durable) = self.sink.durable_commit()? else {
            return Ok(());
        };
        if st.last_committed.is_some_and(|l| l >= durable) {
            return Ok(());
        }
        // Committed after the snapshot: those epochs are in the output already.
        let mut epochs: Vec<u64> = st.list.keys().copied().collect();
        epochs.retain(|&e| e <= durable);
        for e in epochs {
            st.list.take(&e).map_err(err)?;
        }
        st.committed.insert(&0, durable).map_err(err)?;
        st.last_committed = Some(durable);
        Ok(())
    }

    /// [`Staging::PerCheckpoint`]: commits what a newly completed checkpoint covers.
    fn commit_completed(&mut self, ctx: &WorkerCtx) -> Result<(), OperatorError> {
        let Some(st) = &self.staged else {
            return Ok(());
        };
        if !st.per_checkpoint {
            return Ok(());
        }
        let done = ctx.checkpointer.as_ref().and_then(|c| c.committed());
        match done {
            Some(c) if st.last_committed.is_none_or(|l| l < c) => self.deliver(Some(c)),
            _ => Ok(()),
        }
    }
}

impl<T: Data, S: Sink<T> + 'static> Operator for SinkOp<T, S> {
    type In = T;
    type Out = ();
    /// Staged output is state: a sink takes part in every checkpoint.
    const STATEFUL: bool = true;

    /// Staged elements of a sink that gets them at the end are only ever appended. Those of a
    /// sink committing per checkpoint leave its state with every commit, so its chain must
    /// restart with a (small) full snapshot as soon as the increments outweigh it.
    fn append_only(&self) -> bool {
        self.sink.staging() == Staging::AtEnd
    }

    /// With checkpoints: opens the store the elements are staged in.
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        let staging = self.sink.staging();
        if ctx.checkpointer.is_none() || ctx.epochs.is_none() || staging == Staging::Direct {
            return self.sink.open(false);
        }
        self.sink.open(true)?;
        // Staged output is kept by checkpoints alone, never in a changelog.
        let state = StateConfig {
            changelog: None,
            ..self.state.clone()
        };
        let mut store = super::store::open(&state, &self.name, ctx).map_err(self.err())?;
        let list = store
            .list_table("staged", |_: &u64| 0)
            .map_err(self.err())?;
        let committed = store
            .value_table("committed", |_: &u8| 0)
            .map_err(self.err())?;
        self.staged = Some(Staged {
            store,
            list,
            committed,
            last_committed: None,
            per_checkpoint: staging == Staging::PerCheckpoint,
        });
        // A run that restores nothing has committed nothing: what an earlier, abandoned run
        // committed must not become part of its output (a resumed run rolls back in restore).
        if staging == Staging::PerCheckpoint && ctx.resume.is_none() {
            self.sink.fresh_start()?;
        }
        Ok(())
    }

    fn on_batch(
        &mut self,
        b: Batch<T>,
        _out: &mut (),
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        // A batch tracked at its elements' own slots from past the warm-up holds nothing of it.
        let warm = match ctx.warmup_until {
            w if b.exact && ctx.granularity.start(b.lo) >= w => 0,
            w => w,
        };
        if ctx.config.latency_probe && ctx.frontiers.live() {
            if self.probe.log.is_none() {
                self.probe.log = Some(SlotLog::default());
                self.probe.sampling = ctx.latency_sampling;
            }
            self.probe
                .record_batch(&b.data, warm, ctx.granularity, ctx.now_ns);
        }
        let n = if warm == 0 {
            b.data.len()
        } else {
            b.data.iter().filter(|e| e.time >= warm).count()
        };
        stats.measured.record(n as u64, ctx.now_ns);
        self.commit_completed(ctx)?;
        // Staged under the batch's epoch: with the versioned cut a batch of the next epoch
        // comes before the snapshot of this one.
        let epoch = b.epoch.max(self.epoch);
        match &mut self.staged {
            Some(st) => {
                for e in b.data {
                    let r = st.list.append(&epoch, (e.time, e.data));
                    r.map_err(|e| format!("sink '{}': {e}", self.name))?;
                }
            }
            None => self.sink.write(b.data)?,
        }
        Ok(Receipt::Done)
    }

    fn on_frontier(
        &mut self,
        f: Time,
        _out: &mut (),
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(), OperatorError> {
        self.commit_completed(ctx)?;
        // Without tracking the only "frontier" is this instance's own end of input, which says
        // nothing of the other instances: a sink hears of progress only while it is tracked.
        if !ctx.frontiers.live() {
            return Ok(());
        }
        self.probe
            .complete(ctx.granularity.slot(f), ctx.frontiers.seen_ns, |ns, n| {
                stats.record_latency_n(ns, n)
            });
        self.sink.on_frontier(f);
        Ok(())
    }

    fn on_epoch(&mut self, epoch: u64, _ctx: &mut WorkerCtx) {
        self.epoch = epoch;
    }

    /// The changes to the staged elements since the previous snapshot (all of them if `full`):
    /// the elements staged since, and the epochs committed since.
    fn snapshot(&mut self, epoch: u64, full: bool) -> Result<OperatorState, OperatorError> {
        let mut d = Delta::new(full);
        if let Some(st) = &mut self.staged {
            let err = |e| OperatorError::state(format!("sink '{}'", self.name), e);
            // Versioned cut: rows of later epochs wait for their own snapshot.
            st.list
                .snapshot_where(&mut d, &|&e| e <= epoch)
                .map_err(err)?;
            st.committed.snapshot(&mut d).map_err(err)?;
        }
        Ok(OperatorState::Delta(d))
    }

    /// Flushes the staged elements and records the store's savepoint (on disk: local
    /// recovery).
    fn savepoint(
        &mut self,
        covered: std::ops::RangeInclusive<u64>,
        completed: Option<u64>,
    ) -> Result<(), OperatorError> {
        let Some(st) = self.staged.as_mut().filter(|st| st.store.is_local()) else {
            return Ok(());
        };
        let err = |e| OperatorError::state(format!("sink '{}'", self.name), e);
        st.list.flush().map_err(err)?;
        st.committed.flush().map_err(err)?;
        st.store.savepoint(covered, completed).map_err(err)
    }

    /// The staged elements from the local store rolled back to the checkpoint.
    fn restore_local(&mut self) -> Result<bool, OperatorError> {
        let Some(st) = self
            .staged
            .as_mut()
            .filter(|st| st.store.restored_locally())
        else {
            return Ok(false);
        };
        st.list
            .reopen()
            .map_err(|e| format!("sink '{}': {e}", self.name))?;
        st.committed.reopen();
        self.roll_back()?;
        Ok(true)
    }

    /// Staged rows are kept per epoch: a batch of the next epoch goes to its own list, which a
    /// snapshot of this one leaves out (the versioned cut needs nothing more).
    fn versioned(&self) -> bool {
        true
    }

    fn begin_version(&mut self, _epoch: u64, _ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Restores the elements staged and not yet committed as of the checkpoint, and rolls the
    /// sink back to what it had committed then.
    fn restore(&mut self, chain: &[Delta]) -> Result<(), OperatorError> {
        let Some(st) = &mut self.staged else {
            // A direct sink stages nothing: its snapshots are empty.
            return super::expect_no_state(chain, &format!("sink '{}'", self.name));
        };
        let err = |e| OperatorError::state(format!("sink '{}'", self.name), e);
        st.list.restore(chain, &|_| true).map_err(err)?;
        st.committed.restore(chain, &|_| true).map_err(err)?;
        self.roll_back()
    }

    /// The resumed checkpoint is complete: commits what it covers.
    fn on_resume(
        &mut self,
        r: &crate::checkpoint::Resume,
        _ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        let c = r.manifest.checkpoint;
        match &self.staged {
            Some(st) if st.per_checkpoint => match st.last_committed {
                Some(l) if l > c => Err(format!(
                    "sink '{}': its output holds {} and this run restores checkpoint {c}: what \
                     was committed after {c} cannot be taken back (was a newer checkpoint \
                     skipped, or the checkpoint directory replaced?)",
                    self.name,
                    if l == u64::MAX {
                        "a finished run".to_string()
                    } else {
                        format!("the output up to checkpoint {l}")
                    }
                )
                .into()),
                Some(l) if l == c => Ok(()),
                _ => self.deliver(Some(c)),
            },
            _ => Ok(()),
        }
    }

    /// The input has ended: hands over what is still staged, then closes the sink. Called only
    /// once the worker has finished its loop, so a job that fails before hands the sink nothing
    /// more.
    fn close(&mut self) -> Result<(), OperatorError> {
        self.deliver(None)?;
        if let Some(st) = self.staged.take() {
            st.store.remove().map_err(self.err())?;
        }
        self.sink.finish()
    }

    fn report(&mut self, s: &mut VertexStats) {
        s.below_frontier = self.probe.below_frontier;
        if let Some(log) = &mut self.probe.log {
            s.slot_log.append(log);
        }
        self.sink.report(s);
    }
}
