//! Iterate until a fixpoint: a vertex whose output feeds back into its own input (a cycle).
//!
//! Each element goes through `step`; [`Iteration::Again`] sends the new value around the loop
//! (re-partitioned round-robin over all instances, so the cycle crosses workers and processes),
//! [`Iteration::Done`] sends a result downstream. The loop lies inside the vertex's own tracking
//! component (DESIGN.md section 2: a cycle must lie inside one component): elements sent around
//! the loop are tagged like any other, so the component's frontier passes a time only when no
//! element of that time is circulating any more. Markers cannot do this (an instance would wait
//! for its own marker), so a cyclic graph is rejected with `--tracking markers`.

use super::{drain_input, Input, Vertex};
use crate::channel::output::OutputPort;
use crate::channel::InputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::sync::Arc;
use xorflow_core::Element;
use xorflow_tracking::ComponentId;

/// What one step of an iteration produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Iteration<T, O> {
    /// Go around the loop again with this value.
    Again(T),
    /// Fixpoint reached: emit this downstream.
    Done(O),
}

/// An instance of an iterate vertex.
pub struct IterateVertex<T, O> {
    component: ComponentId,
    input: InputPort<T>,
    feedback: OutputPort<T>,
    output: OutputPort<O>,
    step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync>,
    stats: VertexStats,
}

impl<T: Clone + Send, O: Clone + Send> IterateVertex<T, O> {
    /// An instance reading `input` (upstream and loop channels), sending to `feedback` (the loop)
    /// and `output` (downstream).
    pub fn new(
        name: &str,
        component: ComponentId,
        input: InputPort<T>,
        feedback: OutputPort<T>,
        output: OutputPort<O>,
        step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync>,
    ) -> Self {
        IterateVertex {
            component,
            input,
            feedback,
            output,
            step,
            stats: VertexStats::new(name),
        }
    }
}

impl<T: Clone + Send, O: Clone + Send> Vertex for IterateVertex<T, O> {
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, String> {
        let mut did = false;
        if self.feedback.blocked() {
            did |= self.feedback.flush(ctx, false);
        }
        if self.output.blocked() {
            did |= self.output.flush(ctx, false);
        }
        let (feedback, output, step) = (&mut self.feedback, &mut self.output, &self.step);
        let mut out = 0u64;
        // Taking input while the loop is blocked could deadlock the cycle's bounded channels, so
        // the loop's own channels are drained even then: a full loop makes progress by emitting
        // results, never by waiting on itself.
        let n = drain_input(
            &mut self.input,
            self.component,
            &mut self.stats,
            ctx,
            || false,
            |input, ctx| {
                if let Input::Batch(b) = input {
                    feedback.set_lineage(Some((b.lo, b.hi)), ctx);
                    output.set_lineage(Some((b.lo, b.hi)), ctx);
                    for el in b.data {
                        match step(el.data) {
                            Iteration::Again(x) => feedback.push(Element::new(el.time, x), ctx),
                            Iteration::Done(o) => {
                                out += 1;
                                output.push(Element::new(el.time, o), ctx)
                            }
                        }
                    }
                    feedback.commit(ctx);
                    output.commit(ctx);
                }
                Ok(())
            },
        )?;
        self.stats.elements_out += out;
        Ok(did || n > 0)
    }

    fn flush(&mut self, ctx: &mut WorkerCtx, force: bool) -> bool {
        let a = self.feedback.flush(ctx, force);
        self.output.flush(ctx, force) || a
    }

    fn ended(&self) -> bool {
        // Only trAcker can tell that nothing circulates any more.
        false
    }

    fn stats(&mut self) -> VertexStats {
        self.stats.clone()
    }
}
