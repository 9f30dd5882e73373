//! Operator chaining, the sending side: a consumer run inside its producer's step instead of
//! behind a queue.
//!
//! An element-wise vertex fed by a forward edge (`map`, `filter`, `flat_map`: `Stream::unary`
//! in `dataflow/stream.rs`) runs on the same worker as its producer and keeps no state, so the
//! edge needs no queue, no batch tag and no turn of the worker loop: the producer's output port
//! collects what it pushes to the consumer and, at every commit (after each processed input
//! batch, before that batch's receive tag), hands it over as one batch, which the consumer
//! processes at once, committing its own output. Everything it produces is then covered by send
//! tags before the producer's input is acknowledged (docs/design.md, requirement 1), as when the
//! batch crossed a queue. Flink calls this operator chaining; its tasks run such chains as one.
//!
//! What is not sent: the chained edge's tags and queue. The consumer's tracking component gets
//! no registrations, so its frontier is its upstream's; holds placed in it (a window's deferred
//! output) still hold everything below it. Measured: docs/cpu.md, "Operator chaining".

use crate::batch::Batch;
use crate::channel::Flush;
use crate::worker::ctx::WorkerCtx;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use xorflow_core::Element;
use xorflow_tracking::{ComponentId, Time};

/// A chained consumer as its producer's port drives it: the consumer's operator and its own
/// output port (`operators/chain.rs`).
pub trait Stage<T>: Send {
    /// Processes one batch (no tag: it crossed no channel) and commits what it produced.
    ///
    /// # Errors
    /// The operator's, naming what failed.
    fn on_batch(
        &mut self,
        b: Batch<T>,
        ctx: &mut WorkerCtx,
    ) -> Result<(), crate::error::OperatorError>;
    /// Its output port's [`crate::port::OutputPort::flush`].
    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool;
    /// Forwards `Marker(time)` (tracking `markers`): an element-wise operator holds nothing back.
    fn marker(&mut self, time: Time, ctx: &mut WorkerCtx);
    /// Tracking `none`: its input ended, so its output ends.
    fn end(&mut self, ctx: &mut WorkerCtx);
    /// Its output port's `ended`.
    fn ended(&self) -> bool;
    /// Its output port's `blocked`.
    fn blocked(&self) -> bool;
    /// Its output port's `is_idle`.
    fn is_idle(&self) -> bool;
    /// Sets the checkpoint epoch of its output.
    fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx);
}

/// What a chained consumer did, shared with the vertex standing in for it in the worker's list
/// (`operators/chain.rs`, `ChainedVertex`), which reports it as its own.
#[derive(Debug, Default)]
pub struct ChainCounts {
    /// Elements processed.
    pub elements_in: AtomicU64,
    /// Batches processed.
    pub batches_in: AtomicU64,
    /// Elements emitted (its output port's count after the last batch).
    pub elements_out: AtomicU64,
    /// The last marker forwarded (tracking `markers`): the consumer's in-band frontier.
    pub aligned: AtomicU64,
    /// Its input has ended (tracking `none`).
    pub ended: AtomicBool,
}

impl ChainCounts {
    /// Adds a processed batch of `n` elements.
    #[inline]
    pub fn batch(&self, n: usize) {
        self.elements_in.fetch_add(n as u64, Ordering::Relaxed);
        self.batches_in.fetch_add(1, Ordering::Relaxed);
    }
}

/// A producer's edge into a chained consumer: the elements pushed since the last commit, with
/// the tracking range they derive from, and the consumer.
pub struct ChainedEdge<T> {
    stage: Box<dyn Stage<T>>,
    /// The consumer vertex's tracking component.
    component: ComponentId,
    buf: Vec<Element<T>>,
    /// Tracking range (time units) of the buffered elements, as `EdgeOutput` keeps a batch's.
    tmin: Time,
    tmax: Time,
    /// Every buffered element was pushed without a lineage range (`Batch::exact`).
    exact: bool,
    /// The producer's lineage for what it pushes now (`OutputPort::set_lineage`).
    pub(super) lineage: Option<(Time, Time)>,
    epoch: u64,
    /// The consumer's first error, reported by the producer's step.
    failure: Option<crate::error::OperatorError>,
}

impl<T> ChainedEdge<T> {
    /// The edge into `stage`, a consumer vertex in tracking component `component`.
    pub fn new(component: ComponentId, stage: Box<dyn Stage<T>>) -> Self {
        ChainedEdge {
            stage,
            component,
            buf: Vec::new(),
            tmin: 0,
            tmax: 0,
            exact: true,
            lineage: None,
            epoch: 0,
            failure: None,
        }
    }

    /// The consumer's component (a producer's holds go there: `OutputPort::components`).
    pub fn component(&self) -> ComponentId {
        self.component
    }

    /// Buffers `elements`, handing a full batch over at once (`--batch-size`), as a queue's
    /// sender would send it.
    #[inline]
    pub fn push_all(&mut self, elements: impl Iterator<Item = Element<T>>, ctx: &mut WorkerCtx) {
        for el in elements {
            let (lo, hi) = self.lineage.unwrap_or((el.time, el.time));
            if self.buf.is_empty() {
                (self.tmin, self.tmax, self.exact) = (lo, hi, self.lineage.is_none());
            } else {
                self.tmin = self.tmin.min(lo);
                self.tmax = self.tmax.max(hi);
                self.exact &= self.lineage.is_none();
            }
            self.buf.push(el);
            if self.buf.len() >= ctx.batching.batch_size {
                self.hand_over(ctx);
            }
        }
    }

    /// Hands the buffered elements to the consumer as one batch over their slot range.
    pub fn hand_over(&mut self, ctx: &mut WorkerCtx) {
        if self.buf.is_empty() {
            return;
        }
        let g = ctx.granularity;
        // Room for twice this batch (as `EdgeOutput` sizes its next buffer): the buffer
        // rarely grows while it fills, yet a trickle costs no full batch's allocation.
        let cap = (self.buf.len() * 2)
            .max(16)
            .min(ctx.batching.batch_size.max(16));
        let batch = Batch {
            tag: 0,
            lo: g.slot(self.tmin),
            hi: g.slot(self.tmax),
            epoch: self.epoch,
            exact: self.exact,
            markers: Vec::new(),
            data: std::mem::replace(&mut self.buf, Vec::with_capacity(cap)),
        };
        if let Err(e) = self.stage.on_batch(batch, ctx) {
            self.failure.get_or_insert(e);
        }
    }

    /// The consumer's first error, once.
    pub fn failure(&mut self) -> Option<crate::error::OperatorError> {
        self.failure.take()
    }

    /// Hands over what is buffered, then flushes the consumer's output.
    pub fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        self.hand_over(ctx);
        self.stage.flush(ctx, which)
    }

    /// Hands over what is buffered, then forwards the marker.
    pub fn marker(&mut self, time: Time, ctx: &mut WorkerCtx) {
        self.hand_over(ctx);
        self.stage.marker(time, ctx);
    }

    /// Hands over what is buffered, then ends the consumer's output.
    pub fn end(&mut self, ctx: &mut WorkerCtx) {
        self.hand_over(ctx);
        self.stage.end(ctx);
    }

    /// Hands over what is buffered (it belongs to the epoch before), then moves the consumer's
    /// output to `epoch`.
    pub fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        if epoch == self.epoch {
            return;
        }
        self.hand_over(ctx);
        self.epoch = epoch;
        self.stage.set_epoch(epoch, ctx);
    }

    /// The consumer's output has delivered its end.
    pub fn ended(&self) -> bool {
        self.buf.is_empty() && self.stage.ended()
    }

    /// The consumer's output waits for room.
    #[inline]
    pub fn blocked(&self) -> bool {
        self.stage.blocked()
    }

    /// Nothing buffered here or in the consumer's output.
    pub fn is_idle(&self) -> bool {
        self.buf.is_empty() && self.stage.is_idle()
    }
}
