//! Sinks: user code that consumes the stream's elements and may act on notifications.
//!
//! Exactly-once output with checkpoints (two-phase commit, as Flink's file sink): the sink
//! operator stages what it receives as keyed state instead of handing it to the [`Sink`] at once.
//! The staged elements go into the instance's snapshots (pre-commit: durable once the checkpoint's
//! files are), a completed checkpoint commits them, and a restore brings back exactly those of the
//! checkpoint; the sink gets them all, in arrival order, when the job has finished. So a failed and
//! resumed job hands the sink what a run without the failure would have, once.

use super::{Operator, OperatorState, Receipt};
use crate::batch::Batch;
use crate::measure::probe::{ArrivalProbe, SlotLog};
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::{Data, Element};
use xorflow_state::delta::Delta;
use xorflow_state::{ListTable, StateConfig, StateStore};
use xorflow_tracking::Time;

/// A sink instance (one per worker).
pub trait Sink<T>: Send {
    /// Consumes a batch of elements.
    ///
    /// # Errors
    /// A message naming what failed (e.g. the output file); the run is aborted with it.
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), String>;

    /// Every element with time below `frontier` has reached this sink: with trAcker at every
    /// instance (the component's frontier), with markers at this instance (its aligned marker).
    /// Never called without tracking. A place to commit or release results.
    fn on_frontier(&mut self, _frontier: Time) {}

    /// End of the run: flush and close.
    ///
    /// # Errors
    /// A message naming what failed.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Adds this instance's own measurements to its vertex's statistics at the end of the run
    /// ([`VertexStats::count`], [`VertexStats::histogram_mut`]); they are merged over instances
    /// and processes and reported with the vertex.
    fn report(&mut self, _stats: &mut VertexStats) {}
}

/// Elements staged until the job ends (with checkpoints): one list, in arrival order.
struct Staged<T> {
    /// Keeps the backend open.
    store: StateStore,
    list: ListTable<u8, (Time, T)>,
}

/// The operator around a [`Sink`]. It measures notification latency per slot: from receiving the
/// last element of a slot to the notification covering it (seed 000's "notification await time"),
/// and with checkpoints stages the elements (see the module doc).
pub struct SinkOp<T, S> {
    sink: S,
    probe: ArrivalProbe,
    /// The vertex's name, for its state and messages.
    name: String,
    /// Where staged elements live.
    state: StateConfig,
    staged: Option<Staged<T>>,
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
            _input: PhantomData,
        }
    }

    fn err(&self) -> impl Fn(xorflow_state::StateError) -> String + '_ {
        move |e| format!("sink '{}': {e}", self.name)
    }

    /// Hands every staged element to the sink, in arrival order (the job has finished).
    fn commit_staged(&mut self) -> Result<(), String> {
        let Some(mut st) = self.staged.take() else {
            return Ok(());
        };
        let all = st.list.take(&0).map_err(self.err())?;
        if !all.is_empty() {
            let batch = all.into_iter().map(|(t, d)| Element::new(t, d)).collect();
            self.sink.write(batch)?;
        }
        st.store.remove().map_err(self.err())
    }
}

impl<T: Data, S: Sink<T> + 'static> Operator for SinkOp<T, S> {
    type In = T;
    type Out = ();
    /// Staged output is state: a sink takes part in every checkpoint.
    const STATEFUL: bool = true;
    /// Staged elements are only ever appended (and taken at the very end).
    const APPEND_ONLY: bool = true;

    /// With checkpoints: opens the store the elements are staged in.
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), String> {
        if ctx.checkpointer.is_none() || ctx.epochs.is_none() {
            return Ok(());
        }
        let mut store = StateStore::open(&self.state, &self.name, ctx.index).map_err(self.err())?;
        let list = store.list_table("staged", |_: &u8| 0).map_err(self.err())?;
        self.staged = Some(Staged { store, list });
        Ok(())
    }

    fn on_batch(
        &mut self,
        b: Batch<T>,
        _out: &mut (),
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, String> {
        let warm = ctx.warmup_until;
        if ctx.latency_probe && ctx.frontiers.live() {
            self.probe.log.get_or_insert_with(SlotLog::default);
            self.probe.record_batch(
                b.data.iter().map(|e| e.time).filter(|&t| t >= warm),
                ctx.granularity,
                ctx.now_ns,
            );
        }
        let n = if warm == 0 {
            b.data.len()
        } else {
            b.data.iter().filter(|e| e.time >= warm).count()
        };
        stats.measured.record(n as u64, ctx.now_ns);
        match &mut self.staged {
            Some(st) => {
                for e in b.data {
                    let r = st.list.append(&0, (e.time, e.data));
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
    ) -> Result<(), String> {
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

    /// The elements staged since the previous snapshot (all of them if `full`).
    fn snapshot(&mut self, _epoch: u64, full: bool) -> Result<OperatorState, String> {
        let mut d = Delta::new(full);
        if let Some(st) = &mut self.staged {
            let r = st.list.snapshot(&mut d);
            r.map_err(|e| format!("sink '{}': {e}", self.name))?;
        }
        Ok(OperatorState::Delta(d))
    }

    /// Restores the elements staged up to the checkpoint.
    fn restore(&mut self, chain: &[Delta]) -> Result<(), String> {
        let Some(st) = &mut self.staged else {
            return Err(format!("sink '{}' restored without checkpoints", self.name));
        };
        let r = st.list.restore(chain, &|_| true);
        r.map_err(|e| format!("sink '{}': {e}", self.name))
    }

    /// The input has ended: commits what was staged, then closes the sink. Called only once the
    /// worker has finished its loop, so a job that fails before hands the sink nothing staged.
    fn close(&mut self) -> Result<(), String> {
        self.commit_staged()?;
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
