//! Sinks: user code that consumes the stream's elements and may act on notifications.

use super::{drain_input, Vertex};
use crate::channel::InputPort;
use crate::probe::ArrivalProbe;
use crate::stats::VertexStats;
use crate::worker_ctx::WorkerCtx;
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
        let probe_on = ctx.is_tracking() && ctx.latency_probe;
        let n = drain_input(
            &mut self.input,
            self.component,
            &mut self.stats,
            ctx,
            || false,
            |b, ctx| {
                if probe_on {
                    probe.record_batch(b.data.iter().map(|e| e.time), ctx.granularity, ctx.now_ns);
                }
                sink.write(b.data)
            },
        )?;
        let f = ctx.frontier(self.component);
        if ctx.is_tracking() && f > self.notified {
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
        self.input.all_ended()
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
        s
    }
}
