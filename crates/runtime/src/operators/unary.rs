//! Element-wise operators (`map`, `filter`, `flat_map`): one input, one output, no state of their own.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::Element;

/// An element-wise operator; `logic` gets each input batch's elements and pushes any outputs
/// (which inherit the input's time: the builder's closures in `dataflow/stream.rs` are the only
/// ones, and tracking relies on it). Batch-level logic
/// lets the output port dispatch partitioning once per batch.
pub struct Unary<I, O, F> {
    logic: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F> Unary<I, O, F> {
    /// An operator applying `logic` to every input batch.
    pub fn new(logic: F) -> Self {
        Unary {
            logic,
            _types: PhantomData,
        }
    }
}

impl<I, O, F> Operator for Unary<I, O, F>
where
    I: Send + 'static,
    O: Clone + Send + 'static,
    F: FnMut(Vec<Element<I>>, &mut OutputPort<O>, &mut WorkerCtx) + Send + 'static,
{
    type In = I;
    type Out = OutputPort<O>;

    #[inline]
    fn on_batch(
        &mut self,
        b: Batch<I>,
        out: &mut OutputPort<O>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        // Outputs keep their input's time (`dataflow/stream.rs`: map, filter, flat_map). When
        // every input element is tracked at its own slot (`Batch::exact`), its outputs can be
        // too: each output lands in its input's slot, so registration and receipt stay in one
        // shard's piece (docs/design.md, requirement 8). A batch's range then stays the slots
        // its elements occupy instead of widening by a slot or two at every stage, which held a
        // slot's notification until the next slot's elements had passed (docs/distributed.md).
        let lineage = (!b.exact).then_some((b.lo, b.hi));
        out.set_lineage(lineage, ctx);
        let before = out.pushed();
        (self.logic)(b.data, out, ctx);
        stats.elements_out += out.pushed() - before;
        out.commit(ctx);
        Ok(Receipt::Done)
    }
}
