//! Operator chaining, the consumer's side: the operator of a vertex chained into its producer
//! ([`Chained`], run from the producer's output port: `port/chained.rs`), and the vertex
//! standing in for it in the worker's list ([`ChainedVertex`]), which reports what it did.
//!
//! Only stateless element-wise operators are chained (`dataflow/stream.rs`, `Stream::unary`):
//! a chained operator is never opened, snapshotted or closed, and must acknowledge every batch
//! as processed ([`Receipt::Done`]).

use super::{expect_no_state, Operator, OperatorState, Receipt, Vertex};
use crate::batch::Batch;
use crate::channel::Flush;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::chained::{ChainCounts, Stage};
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use xorflow_tracking::{ComponentId, Time};

/// Counter: instances of the vertex that ran chained into their producer (their CPU is the
/// producer's: `docs/cpu.md`, "Operator chaining").
pub const CHAINED: &str = "chained_instances";

/// A chained operator with its own output port.
pub(crate) struct Chained<Op: Operator> {
    op: Op,
    out: Op::Out,
    counts: Arc<ChainCounts>,
    /// Given to the operator; a chained one keeps nothing in it (`Stream::unary`).
    scratch: VertexStats,
}

impl<Op: Operator> Chained<Op> {
    /// `op` writing to `out`, counting into `counts`.
    pub fn new(op: Op, out: Op::Out, counts: Arc<ChainCounts>) -> Self {
        Chained {
            op,
            out,
            counts,
            scratch: VertexStats::new("chained"),
        }
    }
}

impl<I, O, Op> Stage<I> for Chained<Op>
where
    I: Send,
    O: Clone + Send,
    Op: Operator<In = I, Out = OutputPort<O>>,
{
    #[inline]
    fn on_batch(&mut self, b: Batch<I>, ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        self.counts.batch(b.data.len());
        self.out.set_epoch(b.epoch, ctx);
        match self.op.on_batch(b, &mut self.out, ctx, &mut self.scratch)? {
            Receipt::Done => {}
            Receipt::Kept => return Err("a chained operator kept a batch".into()),
        }
        // Only this worker's thread writes it; the live metrics read it from theirs.
        (self.counts.elements_out).store(self.out.pushed(), Ordering::Relaxed);
        self.out.failure().map_or(Ok(()), Err)
    }

    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        self.out.flush(ctx, which)
    }

    fn marker(&mut self, time: Time, ctx: &mut WorkerCtx) {
        self.counts.aligned.store(time, Ordering::Relaxed);
        self.out.marker(time, ctx);
    }

    fn end(&mut self, ctx: &mut WorkerCtx) {
        self.counts.ended.store(true, Ordering::Relaxed);
        self.out.end_when(true, ctx);
    }

    fn ended(&self) -> bool {
        self.out.ended()
    }

    fn blocked(&self) -> bool {
        self.out.blocked()
    }

    fn is_idle(&self) -> bool {
        self.out.is_idle()
    }

    fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        self.out.set_epoch(epoch, ctx);
    }
}

/// The worker's entry for a chained vertex instance: it never steps (its producer runs it) and
/// reports the counts its [`Chained`] operator kept.
pub(crate) struct ChainedVertex {
    name: String,
    counts: Arc<ChainCounts>,
}

impl ChainedVertex {
    /// The stand-in of vertex `name` whose chained operator counts into `counts`.
    pub fn new(name: &str, counts: Arc<ChainCounts>) -> Self {
        ChainedVertex {
            name: name.to_string(),
            counts,
        }
    }
}

impl Vertex for ChainedVertex {
    fn open(&mut self, _ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        Ok(())
    }

    fn step(&mut self, _ctx: &mut WorkerCtx) -> Result<bool, OperatorError> {
        Ok(false)
    }

    fn flush(&mut self, _ctx: &mut WorkerCtx, _which: Flush) -> bool {
        false
    }

    /// Its producer's port ends its output, and the producer ends only after it.
    fn ended(&self) -> bool {
        true
    }

    fn snapshot(&mut self, _epoch: u64, _full: bool) -> Result<OperatorState, OperatorError> {
        Ok(OperatorState::Stateless)
    }

    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError> {
        expect_no_state(chain, "a chained operator")
    }

    fn close(&mut self) -> Result<(), OperatorError> {
        Ok(())
    }

    fn stats(&mut self) -> VertexStats {
        let mut s = VertexStats::new(&self.name);
        s.elements_in = self.counts.elements_in.load(Ordering::Relaxed);
        s.batches_in = self.counts.batches_in.load(Ordering::Relaxed);
        s.elements_out = self.counts.elements_out.load(Ordering::Relaxed);
        s.count(CHAINED, 1);
        s
    }

    fn live_counts(&self, _ctx: &WorkerCtx) -> crate::measure::live::InstanceCounts {
        crate::measure::live::InstanceCounts {
            elements_in: self.counts.elements_in.load(Ordering::Relaxed),
            elements_out: self.counts.elements_out.load(Ordering::Relaxed),
            blocked_ns: 0,
            // Element-wise: it acts on no frontier (its component's is its producer's).
            frontier: None,
            instances: 1,
            queue_fill: 0.0,
        }
    }

    fn notified_component(&self) -> Option<ComponentId> {
        None
    }

    fn is_source(&self) -> bool {
        false
    }
}
