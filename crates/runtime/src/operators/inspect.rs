//! A pass-through vertex whose user code sees every batch and the vertex's statistics: where a
//! job measures what passes a point of the graph (the YSB bench's pre-window and window-emission
//! latencies, `examples/ysb/src/bench/`) without a sink there.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::marker::PhantomData;
use xorflow_core::Element;

/// Passes its input through unchanged (same times, same order) after calling `f` with the batch's
/// elements and the instance's [`VertexStats`], whose counters and histograms the run report
/// merges over instances and processes.
pub struct Inspect<T, F> {
    f: F,
    _types: PhantomData<fn(T)>,
}

impl<T, F> Inspect<T, F> {
    /// A vertex calling `f` on every input batch.
    pub fn new(f: F) -> Self {
        Inspect {
            f,
            _types: PhantomData,
        }
    }
}

impl<T, F> Operator for Inspect<T, F>
where
    T: Clone + Send + 'static,
    F: FnMut(&[Element<T>], &mut VertexStats) + Send + 'static,
{
    type In = T;
    type Out = OutputPort<T>;

    #[inline]
    fn on_batch(
        &mut self,
        b: Batch<T>,
        out: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        (self.f)(&b.data, stats);
        // As `unary.rs`: outputs keep their input's slots.
        let lineage = (!b.exact).then_some((b.lo, b.hi));
        out.set_lineage(lineage, ctx);
        stats.elements_out += b.data.len() as u64;
        out.push_all(b.data.into_iter(), ctx);
        out.commit(ctx);
        Ok(Receipt::Done)
    }
}
