//! Element-wise operators (`map`, `filter`, `flat_map`): one input, one output, no state of their own.

use super::{drain_input, Input, Vertex};
use crate::channel::output::OutputPort;
use crate::channel::InputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use xorflow_core::Element;
use xorflow_tracking::ComponentId;

/// An element-wise operator instance; `logic` gets each input batch's elements and pushes any
/// outputs (which inherit the input's time by convention of the builder's closures). Batch-level
/// logic lets the output port dispatch partitioning once per batch.
pub struct UnaryVertex<I, O, F> {
    component: ComponentId,
    input: InputPort<I>,
    output: OutputPort<O>,
    logic: F,
    stats: VertexStats,
}

impl<I, O, F> UnaryVertex<I, O, F>
where
    O: Clone + Send,
    F: FnMut(Vec<Element<I>>, &mut OutputPort<O>, &mut WorkerCtx) + Send,
{
    /// An instance of a vertex in `component`.
    pub fn new(
        name: &str,
        component: ComponentId,
        input: InputPort<I>,
        output: OutputPort<O>,
        logic: F,
    ) -> Self {
        UnaryVertex {
            component,
            input,
            output,
            logic,
            stats: VertexStats::new(name),
        }
    }
}

impl<I, O, F> Vertex for UnaryVertex<I, O, F>
where
    I: Send,
    O: Clone + Send,
    F: FnMut(Vec<Element<I>>, &mut OutputPort<O>, &mut WorkerCtx) + Send,
{
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, String> {
        if self.output.blocked() && !self.output.flush(ctx, false) {
            return Ok(false);
        }
        let (output, logic) = (&mut self.output, &mut self.logic);
        let blocked = std::cell::Cell::new(false);
        let n = drain_input(
            &mut self.input,
            self.component,
            &mut self.stats,
            ctx,
            || blocked.get(),
            |input, ctx| {
                match input {
                    Input::Batch(b) => {
                        output.set_lineage(Some((b.lo, b.hi)), ctx);
                        logic(b.data, output, ctx);
                        output.commit(ctx);
                        blocked.set(output.blocked());
                    }
                    Input::Aligned(t) => output.marker(t, ctx),
                }
                Ok(())
            },
        )?;
        let mut did = n > 0;
        did |= self.output.end_when(self.input.all_ended(), ctx);
        Ok(did)
    }

    fn flush(&mut self, ctx: &mut WorkerCtx, force: bool) -> bool {
        self.output.flush(ctx, force)
    }

    fn ended(&self) -> bool {
        self.output.ended()
    }

    fn stats(&mut self) -> VertexStats {
        self.stats.clone()
    }
}
