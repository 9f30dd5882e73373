//! Keyed event-time tumbling windows, closed by the frontier of their tracking component.
//!
//! Deferred output holds its slot open (docs/design.md, requirement 8): when a window `[a, b)` is opened
//! on an instance by an input batch tracked over slots `[lo, hi]`, before that batch's receive tag,
//! the instance XORs a fresh tag `r` into slot `lo` of every downstream component (the creator's
//! slot, not the results' slot `b - 1`). When the frontier reaches `b` the results (time `b - 1`)
//! are pushed with tracking range `[lo, lo]` and committed, and only then is `r` XOR-ed again to
//! release the hold. So a downstream component, even another window, can never be declared complete
//! at `b - 1` between the notification and the emission, and with a sharded tracker the hold, the
//! creator's receive tag and the output all live in the shard owning `lo` (docs/sharding-notes.md,
//! option 1: conservative, shard-local).
use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::channel::OutputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::hash::Hash;
use std::sync::Arc;
use xorflow_core::{Aggregate, Element, TumblingWindows, WindowResult};
use xorflow_tracking::{ComponentId, Time};

/// Per-window metadata: the hold tag and the last element's arrival.
#[derive(Debug)]
struct Meta {
    hold: u64,
    /// Tracking slot of the hold (the creating batch's first slot).
    hold_slot: u64,
    last_arrival_ns: u64,
}

/// A keyed tumbling window operator.
pub struct Window<T, K, A: Aggregate<T>> {
    /// Components of the downstream vertices: where holds go.
    downstream: Vec<ComponentId>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    agg: Arc<A>,
    windows: TumblingWindows<K, A::Acc, Meta>,
    /// Everything below this time has been fired (the frontier used at the last firing).
    fired_below: Time,
}

impl<T, K, A> Window<T, K, A>
where
    T: Send,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<T>,
{
    /// A window operator with windows of `size` time units, feeding the components
    /// `downstream` (its output port's, where the holds go).
    pub fn new(
        size: Time,
        downstream: Vec<ComponentId>,
        key: Arc<dyn Fn(&T) -> K + Send + Sync>,
        agg: Arc<A>,
    ) -> Self {
        Window {
            downstream,
            key,
            agg,
            windows: TumblingWindows::new(size),
            fired_below: 0,
        }
    }

    /// Adds one element to its window, opening the window (and its hold) if needed. Returns
    /// false for an element below what has been fired (late).
    #[inline]
    fn add(&mut self, el: &Element<T>, lo: u64, ctx: &mut WorkerCtx) -> bool {
        if el.time < self.fired_below {
            return false;
        }
        let now = ctx.now_ns;
        let (w, created) = self.windows.window_for(el.time, |_, _| Meta {
            hold: 0,
            hold_slot: lo,
            last_arrival_ns: now,
        });
        if created {
            if let Some(tr) = &mut ctx.tracking {
                // Hold the creator's slot of every downstream component before this batch's
                // receive tag, which the driver registers after on_batch returns.
                let r = tr.tags.next_tag();
                for &c in &self.downstream {
                    tr.acker.xor_slots(c, lo, lo, r);
                }
                w.meta.hold = r;
            }
        }
        w.meta.last_arrival_ns = now;
        let acc = w
            .groups
            .entry((self.key)(&el.data))
            .or_insert_with(|| self.agg.init());
        self.agg.add(acc, &el.data);
        true
    }
}

impl<T, K, A> Operator for Window<T, K, A>
where
    T: Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<T>,
    WindowResult<K, A::Out>: Clone,
{
    type In = T;
    type Out = OutputPort<WindowResult<K, A::Out>>;

    fn on_batch(
        &mut self,
        b: Batch<T>,
        _out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, String> {
        let lo = b.lo;
        for el in &b.data {
            if !self.add(el, lo, ctx) {
                stats.below_frontier += 1;
            }
        }
        Ok(Receipt::Done)
    }

    /// Emits every window ending at or below `frontier`, then releases their holds.
    fn on_frontier(
        &mut self,
        frontier: Time,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(), String> {
        if self.windows.first_end().is_none_or(|e| e > frontier) {
            self.fired_below = self.fired_below.max(frontier);
            return Ok(());
        }
        let done = self.windows.take_complete(frontier);
        let mut holds = Vec::with_capacity(done.len());
        for (start, end, w) in done {
            if ctx.frontiers.live() {
                stats.record_latency(ctx.frontiers.seen_ns.saturating_sub(w.meta.last_arrival_ns));
            }
            out.set_lineage(Some((w.meta.hold_slot, w.meta.hold_slot)), ctx);
            for (key, acc) in w.groups {
                let value = self.agg.finish(acc);
                stats.elements_out += 1;
                let r = WindowResult {
                    start,
                    end,
                    key,
                    value,
                };
                out.push(Element::new(end - 1, r), ctx);
            }
            holds.push((w.meta.hold_slot, w.meta.hold));
        }
        out.commit(ctx);
        if let Some(tr) = &mut ctx.tracking {
            for (s, r) in holds {
                for &c in &self.downstream {
                    tr.acker.xor_slots(c, s, s, r);
                }
            }
        }
        self.fired_below = self.fired_below.max(frontier);
        Ok(())
    }
}
