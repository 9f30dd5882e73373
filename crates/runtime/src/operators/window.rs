//! Keyed event-time tumbling windows, closed by the frontier of their tracking component.
//!
//! Deferred output holds its slot open (DESIGN.md section 2, item 8): when a window `[a, b)` is opened
//! on an instance by an input batch tracked over slots `[lo, hi]`, before that batch's receive tag,
//! the instance XORs a fresh tag `r` into slot `lo` of every downstream component (the creator's
//! slot, not the results' slot `b - 1`). When the frontier reaches `b` the results (time `b - 1`)
//! are pushed with tracking range `[lo, lo]` and committed, and only then is `r` XOR-ed again to
//! release the hold. So a downstream component, even another window, can never be declared complete
//! at `b - 1` between the notification and the emission, and with a sharded tracker the hold, the
//! creator's receive tag and the output all live in the shard owning `lo` (docs/sharding-notes.md,
//! option 1: conservative, shard-local).
use super::{drain_input, Input, Vertex};
use crate::channel::output::OutputPort;
use crate::channel::InputPort;
use crate::config::TrackingMode;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::hash::Hash;
use std::sync::Arc;
use xorflow_core::{Aggregate, Element, TumblingWindows, WindowResult, INF};
use xorflow_tracking::{ComponentId, Time};

/// Per-window metadata: the hold tag and the last element's arrival.
#[derive(Debug)]
struct Meta {
    hold: u64,
    /// Tracking slot of the hold (the creating batch's first slot).
    hold_slot: u64,
    last_arrival_ns: u64,
}

/// An instance of a keyed tumbling window vertex.
pub struct WindowVertex<T, K, A: Aggregate<T>> {
    component: ComponentId,
    input: InputPort<T>,
    output: OutputPort<WindowResult<K, A::Out>>,
    /// Components of the downstream vertices: where holds go.
    downstream: Vec<ComponentId>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    agg: Arc<A>,
    windows: TumblingWindows<K, A::Acc, Meta>,
    /// Everything below this time has been fired (the frontier used at the last firing).
    fired_below: Time,
    stats: VertexStats,
}

impl<T, K, A> WindowVertex<T, K, A>
where
    T: Send,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<T>,
{
    /// An instance of a window vertex in `component` with windows of `size` time units.
    pub fn new(
        name: &str,
        component: ComponentId,
        size: Time,
        input: InputPort<T>,
        output: OutputPort<WindowResult<K, A::Out>>,
        key: Arc<dyn Fn(&T) -> K + Send + Sync>,
        agg: Arc<A>,
    ) -> Self {
        WindowVertex {
            component,
            input,
            downstream: output.components().collect(),
            output,
            key,
            agg,
            windows: TumblingWindows::new(size),
            fired_below: 0,
            stats: VertexStats::new(name),
        }
    }

    /// Emits every window ending at or below `frontier`, then releases their holds.
    fn fire(&mut self, frontier: Time, ctx: &mut WorkerCtx) {
        if self.windows.first_end().is_none_or(|e| e > frontier) {
            self.fired_below = self.fired_below.max(frontier);
            return;
        }
        let done = self.windows.take_complete(frontier);
        let mut holds = Vec::with_capacity(done.len());
        for (start, end, w) in done {
            if ctx.mode != TrackingMode::None {
                self.stats
                    .record_latency(ctx.frontier_seen_ns.saturating_sub(w.meta.last_arrival_ns));
            }
            self.output
                .set_lineage(Some((w.meta.hold_slot, w.meta.hold_slot)), ctx);
            for (key, acc) in w.groups {
                let value = self.agg.finish(acc);
                self.stats.elements_out += 1;
                self.output.push(
                    Element::new(
                        end - 1,
                        WindowResult {
                            start,
                            end,
                            key,
                            value,
                        },
                    ),
                    ctx,
                );
            }
            holds.push((w.meta.hold_slot, w.meta.hold));
        }
        self.output.commit(ctx);
        if let Some(tr) = &mut ctx.tracking {
            for (s, r) in holds {
                for &c in &self.downstream {
                    tr.acker.xor_slots(c, s, s, r);
                }
            }
        }
        self.fired_below = self.fired_below.max(frontier);
    }
}

impl<T, K, A> Vertex for WindowVertex<T, K, A>
where
    T: Send,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<T>,
{
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, String> {
        if self.output.blocked() && !self.output.flush(ctx, false) {
            return Ok(false);
        }
        let comps = &self.downstream;
        let (windows, key, agg, fired_below) =
            (&mut self.windows, &self.key, &self.agg, self.fired_below);
        let mut late = 0u64;
        let mut aligned = None;
        let n = drain_input(
            &mut self.input,
            self.component,
            &mut self.stats,
            ctx,
            || false,
            |input, ctx| {
                let b = match input {
                    Input::Batch(b) => b,
                    Input::Aligned(t) => {
                        aligned = Some(t);
                        ctx.frontier_seen_ns = crate::measure::clock::now_ns();
                        return Ok(());
                    }
                };
                let now = ctx.now_ns;
                let lo = b.lo;
                for el in b.data {
                    if el.time < fired_below {
                        late += 1;
                        continue;
                    }
                    let (w, created) = windows.window_for(el.time, |_, _| Meta {
                        hold: 0,
                        hold_slot: lo,
                        last_arrival_ns: now,
                    });
                    if created {
                        if let Some(tr) = &mut ctx.tracking {
                            // Hold the creator's slot of every downstream component before this
                            // batch's receive tag, which drain_input registers after we return.
                            let r = tr.tags.next_tag();
                            for &c in comps {
                                tr.acker.xor_slots(c, lo, lo, r);
                            }
                            w.meta.hold = r;
                        }
                    }
                    w.meta.last_arrival_ns = now;
                    let acc = w.groups.entry(key(&el.data)).or_insert_with(|| agg.init());
                    agg.add(acc, &el.data);
                }
                Ok(())
            },
        )?;
        self.stats.below_frontier += late;
        let mut did = n > 0;
        let frontier = match ctx.mode {
            TrackingMode::Tracker => ctx.frontier(self.component),
            TrackingMode::Markers => self.input.aligner.aligned(),
            TrackingMode::None if self.input.all_ended() => INF,
            TrackingMode::None => 0,
        };
        if frontier > self.fired_below {
            self.fire(frontier, ctx);
            did = true;
        }
        if let Some(t) = aligned {
            // Results first, then the marker that says they are complete.
            self.output.marker(t, ctx);
            did = true;
        }
        did |= self.output.end_when(self.input.all_ended(), ctx);
        Ok(did)
    }

    fn flush(&mut self, ctx: &mut WorkerCtx, force: bool) -> bool {
        self.output.flush(ctx, force)
    }

    fn ended(&self) -> bool {
        self.output.ended()
    }

    fn notified_component(&self) -> Option<ComponentId> {
        Some(self.component)
    }

    fn stats(&mut self) -> VertexStats {
        self.stats.clone()
    }
}
