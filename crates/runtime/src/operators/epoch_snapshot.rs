//! Snapshots driven by notifications (the trAcker paper, "State snapshotting", docs/papers.md;
//! docs/design.md, "trAcker requirements"): a pass-through vertex that splits the stream into
//! epochs at given times, processes only the current epoch, and buffers elements of later epochs
//! until it learns that the current epoch is complete at this vertex. Then it "snapshots" (the
//! paper imitates a snapshot with a fixed pause of 100/500/1000 ms; here the instance pauses
//! without blocking its worker thread), moves to the next epoch and releases what it buffered.
//!
//! * With trAcker the notification is the vertex's own component frontier passing the epoch's end,
//!   and buffered elements *withhold their receive tags*: a batch's tag is registered only once its
//!   elements are processed. A batch whose tracking range straddles an epoch boundary is split by
//!   element time, and its receive tag is registered over the sub-range of each part when that
//!   part is processed (the sub-ranges add up to the batch's range, so the XOR still cancels);
//!   the released part's outputs are tracked over its own sub-range, which is still held open.
//! * With markers the notification is the aligned marker passing the epoch's end (Flink's barrier
//!   alignment over time-based markers). While anything is buffered or a pause runs, forwarded
//!   markers stop at the epoch's end: a marker promises that nothing below it follows, and the
//!   buffered elements have not been sent yet.
//! * Without tracking there are no notifications: the vertex passes everything through.
//!
//! Counters (per vertex, summed over instances): `snapshots` (pauses taken),
//! `snapshot_buffered_elements`, `snapshot_buffered_ns` (the sum over buffered elements of their
//! time in the buffer), and the histogram `snapshot_buffering_ns` of per-element buffer times.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::collections::VecDeque;
use xorflow_core::Element;
use xorflow_tracking::{ComponentId, Slot, Time, INF};

/// Counter: pauses taken (one per instance per epoch boundary).
pub const SNAPSHOTS: &str = "snapshots";
/// Counter: elements that waited in the buffer.
pub const BUFFERED_ELEMENTS: &str = "snapshot_buffered_elements";
/// Counter: total time buffered elements waited, ns (summed over elements).
pub const BUFFERED_NS: &str = "snapshot_buffered_ns";
/// Histogram: time each buffered element waited, ns.
pub const BUFFERING_HISTOGRAM: &str = "snapshot_buffering_ns";

/// The epochs of a snapshot vertex and the length of its imitated snapshot.
#[derive(Clone, Debug)]
pub struct EpochSpec {
    /// Epoch boundaries, time units, strictly increasing, each a multiple of the granularity
    /// (so every boundary is a slot boundary): epoch `k` is `[boundaries[k-1], boundaries[k])`.
    pub boundaries: Vec<Time>,
    /// How long an instance pauses at a boundary (the imitated snapshot), ns.
    pub pause_ns: u64,
}

impl EpochSpec {
    /// The epoch of time `t`: the number of boundaries at or below it.
    #[inline]
    fn epoch(&self, t: Time) -> usize {
        self.boundaries.partition_point(|&b| b <= t)
    }
}

/// A part of an input batch that belongs to one epoch, with the receive tag's sub-range.
struct Part<T> {
    epoch: usize,
    /// Where the receive tag is registered.
    component: ComponentId,
    lo: Slot,
    hi: Slot,
    /// The batch's checkpoint epoch (its receive tag's epoch slot).
    batch_epoch: u64,
    tag: u64,
    arrived_ns: u64,
    data: Vec<Element<T>>,
}

/// The snapshot operator on one worker.
pub struct EpochSnapshot<T> {
    component: ComponentId,
    spec: EpochSpec,
    /// The epoch being processed.
    current: usize,
    /// A pause (imitated snapshot) runs until this time, ns.
    pause_until: Option<u64>,
    /// Parts of later epochs, in arrival order, with their receive tags withheld.
    buffer: VecDeque<Part<T>>,
}

impl<T: Clone + Send> EpochSnapshot<T> {
    /// The operator of a snapshot vertex in `component` (its own component: the receive tags it
    /// withholds are registered there).
    ///
    /// # Panics
    /// If the boundaries are not strictly increasing (the builder checks granularity alignment).
    pub fn new(name: &str, component: ComponentId, spec: EpochSpec) -> Self {
        assert!(
            spec.boundaries.windows(2).all(|w| w[0] < w[1]),
            "epoch boundaries of '{name}' must be strictly increasing"
        );
        EpochSnapshot {
            component,
            spec,
            current: 0,
            pause_until: None,
            buffer: VecDeque::new(),
        }
    }

    /// True once the current epoch is complete at this vertex (never without live
    /// notifications: then the vertex passes everything through).
    fn notified(&self, frontier: Time, ctx: &WorkerCtx) -> bool {
        let Some(&end) = self.spec.boundaries.get(self.current) else {
            return false; // the last epoch never ends before the stream does
        };
        ctx.frontiers.live() && frontier >= end
    }

    /// Runs the epoch state machine: end a finished pause, start a pause on notification, release
    /// buffered parts of the current epoch. Returns whether anything changed.
    fn advance(
        &mut self,
        frontier: Time,
        output: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> bool {
        let mut did = false;
        loop {
            if let Some(until) = self.pause_until {
                if ctx.now_ns < until {
                    ctx.wake_at(until);
                    return did;
                }
                self.pause_until = None;
                self.current += 1;
                did = true;
            }
            did |= self.release(output, ctx, stats);
            // Only once this epoch's buffered parts are out: with markers, the notification
            // speaks of the input, not of what this vertex has processed.
            if self.notified(frontier, ctx) && !self.buffer.iter().any(|p| p.epoch <= self.current)
            {
                // The epoch's output leaves before the snapshot, so no batch mixes epochs.
                output.flush(ctx, crate::channel::Flush::All);
                stats.count(SNAPSHOTS, 1);
                self.pause_until = Some(ctx.now_ns + self.spec.pause_ns);
                did = true;
                continue;
            }
            return did;
        }
    }

    /// Releases buffered parts of the current epoch in arrival order (later epochs stay) while
    /// the output takes them. Returns whether any was released.
    fn release(
        &mut self,
        output: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> bool {
        let mut did = false;
        while !output.blocked() {
            let Some(i) = self.buffer.iter().position(|p| p.epoch <= self.current) else {
                break;
            };
            let p = self.buffer.remove(i).expect("position is in range");
            let waited = ctx.now_ns.saturating_sub(p.arrived_ns);
            let n = p.data.len() as u64;
            stats.count(BUFFERED_NS, waited * n);
            if n > 0 {
                stats
                    .histogram_mut(BUFFERING_HISTOGRAM)
                    .saturating_record_n(waited.max(1), n);
            }
            process(output, p, ctx);
            did = true;
        }
        did
    }
}

/// Sends a part's elements on, tracked over its sub-range, and registers its receive tag.
fn process<T: Clone + Send>(output: &mut OutputPort<T>, p: Part<T>, ctx: &mut WorkerCtx) {
    output.set_lineage(Some((p.lo, p.hi)), ctx);
    output.set_epoch(p.batch_epoch, ctx);
    output.push_all(p.data.into_iter(), ctx);
    output.commit(ctx);
    ctx.ack_received(p.component, p.lo, p.hi, p.batch_epoch, p.tag);
}

/// Splits an input batch into parts by epoch: by its tracking range when that lies in one
/// epoch, else by element time (clamped to the range's epochs), each part getting the
/// sub-range of its epoch. Without trAcker (no ranges) by element time alone.
fn split<T>(
    spec: &EpochSpec,
    current: usize,
    component: ComponentId,
    b: Batch<T>,
    ctx: &WorkerCtx,
) -> Vec<Part<T>> {
    let g = ctx.granularity;
    let arrived_ns = ctx.now_ns;
    let part = |epoch, lo, hi, data| Part {
        epoch,
        component,
        lo,
        hi,
        batch_epoch: b.epoch,
        tag: b.tag,
        arrived_ns,
        data,
    };
    let (e_lo, e_hi) = if ctx.is_tracking() {
        (spec.epoch(g.start(b.lo)), spec.epoch(g.start(b.hi)))
    } else {
        (0, usize::MAX)
    };
    if e_lo == e_hi {
        return vec![part(e_lo, b.lo, b.hi, b.data)];
    }
    // The slots of the batch's range that lie in epoch `e` (boundaries are slot starts).
    let sub_range = |e: usize| {
        let lo = if e == e_lo {
            b.lo
        } else {
            g.slot(spec.boundaries[e - 1])
        };
        let hi = if e == e_hi {
            b.hi
        } else {
            g.slot(spec.boundaries[e]) - 1
        };
        (lo, hi)
    };
    let mut parts: Vec<Part<T>> = Vec::new();
    for el in b.data {
        let e = spec.epoch(el.time).clamp(e_lo, e_hi);
        match parts.iter_mut().find(|p| p.epoch == e) {
            Some(p) => p.data.push(el),
            None => {
                let (lo, hi) = if ctx.is_tracking() {
                    sub_range(e)
                } else {
                    (0, 0)
                };
                parts.push(part(e, lo, hi, vec![el]));
            }
        }
    }
    parts.sort_by_key(|p| p.epoch);
    if ctx.is_tracking() {
        // Epochs of the range without elements: their sub-ranges are acknowledged at once
        // (nothing derives from them), so the split still adds up to the whole range.
        for e in e_lo..=e_hi {
            if !parts.iter().any(|p| p.epoch == e) {
                let (lo, hi) = sub_range(e);
                parts.push(part(current.min(e), lo, hi, Vec::new()));
            }
        }
    }
    parts
}

impl<T: Clone + Send + 'static> Operator for EpochSnapshot<T> {
    type In = T;
    type Out = OutputPort<T>;

    fn on_batch(
        &mut self,
        b: Batch<T>,
        output: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        let before = output.pushed();
        let r = self.take(b, output, ctx, stats);
        stats.elements_out += output.pushed() - before;
        r
    }

    fn tick(
        &mut self,
        frontier: Time,
        output: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> bool {
        let before = output.pushed();
        let did = self.advance(frontier, output, ctx, stats);
        stats.elements_out += output.pushed() - before;
        did
    }

    /// Nothing buffered may be overtaken by a marker: the start of the earliest buffered epoch,
    /// or during a pause the end of the current one.
    fn marker_cap(&self) -> Time {
        match self.buffer.iter().map(|p| p.epoch).min() {
            Some(0) => 0,
            Some(e) => self.spec.boundaries[e - 1],
            None if self.pause_until.is_some() => self.spec.boundaries[self.current],
            None => INF,
        }
    }
}

impl<T: Clone + Send + 'static> EpochSnapshot<T> {
    /// [`Operator::on_batch`]: the batch goes on, whole or split by epoch, or waits for its
    /// epoch.
    fn take(
        &mut self,
        b: Batch<T>,
        output: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        if !ctx.frontiers.live() {
            // No notifications, no epochs: the batch goes straight on.
            let whole = Part {
                epoch: 0,
                component: self.component,
                lo: b.lo,
                hi: b.hi,
                batch_epoch: b.epoch,
                tag: b.tag,
                arrived_ns: ctx.now_ns,
                data: b.data,
            };
            process(output, whole, ctx);
            return Ok(Receipt::Kept);
        }
        let paused = self.pause_until.is_some();
        let mut buffered = 0;
        for p in split(&self.spec, self.current, self.component, b, ctx) {
            if p.epoch <= self.current && !paused {
                process(output, p, ctx);
            } else {
                buffered += p.data.len() as u64;
                self.buffer.push_back(p);
            }
        }
        stats.count(BUFFERED_ELEMENTS, buffered);
        Ok(Receipt::Kept)
    }
}
