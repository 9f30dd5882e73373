//! Iterate until a fixpoint: a vertex whose output feeds back into its own input (a cycle).
//!
//! Each element goes through `step`; [`Iteration::Again`] sends the new value around the loop
//! (re-partitioned round-robin over all instances, so the cycle crosses workers and processes),
//! [`Iteration::Done`] sends a result downstream. The loop lies inside the vertex's own tracking
//! component (docs/design.md, "trAcker requirements": a cycle must lie inside one component): elements sent around
//! the loop are tagged like any other, so the component's frontier passes a time only when no
//! element of that time is circulating any more. Markers cannot do this (an instance would wait
//! for its own marker), so a cyclic graph is rejected with `--tracking markers`.

use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::sync::Arc;
use xorflow_core::Element;

/// What one step of an iteration produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Iteration<T, O> {
    /// Go around the loop again with this value.
    Again(T),
    /// Fixpoint reached: emit this downstream.
    Done(O),
}

/// An iterate operator; its outputs are (the loop, the results downstream). Its input port reads
/// both the upstream channels and the loop's.
pub struct Iterate<T, O> {
    step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync>,
}

impl<T, O> Iterate<T, O> {
    /// An operator applying `step` to every element.
    pub fn new(step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync>) -> Self {
        Iterate { step }
    }
}

impl<T: Clone + Send + 'static, O: Clone + Send + 'static> Operator for Iterate<T, O> {
    type In = T;
    type Out = (OutputPort<T>, OutputPort<O>);

    /// Taking input while the loop is blocked could deadlock the cycle's bounded channels, so the
    /// loop's own channels are drained even then: a full loop makes progress by emitting results,
    /// never by waiting on itself.
    const DRAINS_WHEN_BLOCKED: bool = true;

    fn on_batch(
        &mut self,
        b: Batch<T>,
        (feedback, output): &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        feedback.set_lineage(Some((b.lo, b.hi)), ctx);
        output.set_lineage(Some((b.lo, b.hi)), ctx);
        for el in b.data {
            match (self.step)(el.data) {
                Iteration::Again(x) => feedback.push(Element::new(el.time, x), ctx),
                Iteration::Done(o) => {
                    stats.elements_out += 1;
                    output.push(Element::new(el.time, o), ctx)
                }
            }
        }
        feedback.commit(ctx);
        output.commit(ctx);
        Ok(Receipt::Done)
    }
}
