//! Element-wise operators (`map`, `filter`, `flat_map`): one input, one output, no state of their own.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::channel::OutputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::Element;

/// An element-wise operator; `logic` gets each input batch's elements and pushes any outputs
/// (which inherit the input's time by convention of the builder's closures). Batch-level logic
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
        _stats: &mut VertexStats,
    ) -> Result<Receipt, String> {
        out.set_lineage(Some((b.lo, b.hi)), ctx);
        (self.logic)(b.data, out, ctx);
        out.commit(ctx);
        Ok(Receipt::Done)
    }
}
