//! Sinks: user code that consumes the stream's elements and may act on notifications.

use super::{drain_input, Input, Vertex};
use crate::channel::InputPort;
use crate::config::TrackingMode;
use crate::measure::probe::ArrivalProbe;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use xorflow_core::Element;
use xorflow_tracking::{ComponentId, Time};

/// A sink instance (one per worker).
pub trait Sink<T>: Send {
    /// Consumes a batch of elements.
    ///
    /// # Errors
    /// A message naming what failed (e.g. the output file); the run is aborted with it.
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), String>;

    /// Every element with time below `frontier` has reached this sink (trAcker only): a place to
    /// commit or release results.
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

/// A sink vertex instance. It measures notification latency per slot: from receiving the last
/// element of a slot to the notification covering it (seed 000's "notification await time").
pub struct SinkVertex<T, S> {
    component: ComponentId,
    input: InputPort<T>,
    sink: S,
    probe: ArrivalProbe,
    notified: Time,
    stats: VertexStats,
}

impl<T: Send, S: Sink<T>> SinkVertex<T, S> {
    /// An instance of a sink vertex in `component`.
    pub fn new(name: &str, component: ComponentId, input: InputPort<T>, sink: S) -> Self {
        SinkVertex {
            component,
            input,
            sink,
            probe: ArrivalProbe::default(),
            notified: 0,
            stats: VertexStats::new(name),
        }
    }
}

impl<T: Send, S: Sink<T>> Vertex for SinkVertex<T, S> {
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, String> {
        let (sink, probe) = (&mut self.sink, &mut self.probe);
        let mut measured = crate::measure::stats::MeasuredSpan::default();
        let probe_on = ctx.mode != TrackingMode::None && ctx.latency_probe;
        if probe_on && probe.log.is_none() {
            probe.log = Some(crate::measure::probe::SlotLog::default());
        }
        let warm = ctx.warmup_until;
        let mut aligned = None;
        let n = drain_input(
            &mut self.input,
            self.component,
            &mut self.stats,
            ctx,
            || false,
            |input, ctx| match input {
                Input::Batch(b) => {
                    if probe_on {
                        probe.record_batch(
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
                    measured.record(n as u64, ctx.now_ns);
                    sink.write(b.data)
                }
                Input::Aligned(t) => {
                    aligned = Some(t);
                    ctx.frontier_seen_ns = crate::measure::clock::now_ns();
                    Ok(())
                }
            },
        )?;
        self.stats.measured.merge(&measured);
        let f = match ctx.mode {
            TrackingMode::Tracker => ctx.frontier(self.component),
            TrackingMode::Markers => aligned.unwrap_or(self.notified),
            TrackingMode::None => 0,
        };
        if f > self.notified {
            let stats = &mut self.stats;
            self.probe
                .complete(ctx.granularity.slot(f), ctx.frontier_seen_ns, |ns, n| {
                    stats.record_latency_n(ns, n)
                });
            self.notified = f;
            self.sink.on_frontier(f);
        }
        Ok(n > 0)
    }

    fn flush(&mut self, _ctx: &mut WorkerCtx, _force: bool) -> bool {
        false
    }

    fn ended(&self) -> bool {
        self.input.all_ended() || self.input.aligner.aligned() == xorflow_tracking::INF
    }

    fn finish(&mut self) -> Result<(), String> {
        self.sink.finish()
    }

    fn notified_component(&self) -> Option<ComponentId> {
        Some(self.component)
    }

    fn stats(&mut self) -> VertexStats {
        let mut s = self.stats.clone();
        s.below_frontier = self.probe.below_frontier;
        if let Some(log) = &mut self.probe.log {
            s.slot_log.append(log);
        }
        self.sink.report(&mut s);
        s
    }
}
