//! Sinks: user code that consumes the stream's elements and may act on notifications.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::probe::{ArrivalProbe, SlotLog};
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::Element;
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

/// The operator around a [`Sink`]. It measures notification latency per slot: from receiving the
/// last element of a slot to the notification covering it (seed 000's "notification await time").
pub struct SinkOp<T, S> {
    sink: S,
    probe: ArrivalProbe,
    _input: PhantomData<fn(T)>,
}

impl<T: Send, S: Sink<T>> SinkOp<T, S> {
    /// The operator writing into `sink`.
    pub fn new(sink: S) -> Self {
        SinkOp {
            sink,
            probe: ArrivalProbe::default(),
            _input: PhantomData,
        }
    }
}

impl<T: Send + 'static, S: Sink<T> + 'static> Operator for SinkOp<T, S> {
    type In = T;
    type Out = ();

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
        self.sink.write(b.data)?;
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

    fn close(&mut self) -> Result<(), String> {
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
