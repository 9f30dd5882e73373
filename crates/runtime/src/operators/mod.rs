//! Vertex instances: what each worker runs for every vertex of the dataflow.
//!
//! One file per operator kind. They share the input loop in [`drain_input`]: process a batch, commit
//! the output's send tags, then register the batch's receive tag (DESIGN.md section 2, item 1).

pub mod epoch_snapshot;
pub mod iterate;
pub mod sink;
pub mod source;
pub mod unary;
pub mod window;

use crate::batch::{Batch, Msg};
use crate::channel::InputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use xorflow_tracking::{ComponentId, Time};

/// What [`drain_input`] hands a vertex.
pub(crate) enum Input<T> {
    /// A batch of elements (its markers already taken out).
    Batch(Batch<T>),
    /// The aligned marker rose to this time (tracking `markers`).
    Aligned(Time),
}

/// Input batches a vertex processes per step before the worker moves on (fairness between vertices).
pub(crate) const BATCHES_PER_STEP: usize = 8;

/// A vertex instance as the worker loop drives it.
pub trait Vertex: Send {
    /// Runs one scheduling quantum: takes some input (or emits from a source), sends output, fires
    /// notifications. Returns whether it did any work.
    ///
    /// # Errors
    /// A message naming what failed (a sink that cannot write, say); the run is aborted.
    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, String>;

    /// Sends partial batches older than the flush timeout (all with `force`) and retries held-back
    /// batches. Returns whether anything was sent.
    fn flush(&mut self, ctx: &mut WorkerCtx, force: bool) -> bool;

    /// Tracking `none`: true once the instance has seen end of stream on every input, emitted
    /// everything and delivered its own end-of-stream markers.
    fn ended(&self) -> bool;

    /// Called once after the worker loop ends (sinks flush their files here).
    ///
    /// # Errors
    /// A message naming what failed.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Counters of this instance.
    fn stats(&mut self) -> VertexStats;

    /// The component whose frontier this vertex acts on (windows, sinks), if any: notifications
    /// for other components are not worth waking a worker for.
    fn notified_component(&self) -> Option<ComponentId> {
        None
    }
}

/// Pops and processes up to [`BATCHES_PER_STEP`] input batches while `blocked()` is false:
/// `process(Input::Batch(b), ctx)` handles the elements and commits outputs; the batch's receive
/// tag is registered for `component` after it returns. Then each marker that came with the batch
/// is aligned over the input channels, and every rise of the aligned marker is handed over as
/// `Input::Aligned`. Returns the number of messages processed, or the first error.
pub(crate) fn drain_input<T>(
    input: &mut InputPort<T>,
    component: ComponentId,
    stats: &mut VertexStats,
    ctx: &mut WorkerCtx,
    blocked: impl FnMut() -> bool,
    mut process: impl FnMut(Input<T>, &mut WorkerCtx) -> Result<(), String>,
) -> Result<usize, String> {
    drain_input_keeping(input, component, stats, ctx, blocked, |i, ctx| {
        process(i, ctx).map(|()| Receipt::Done)
    })
}

/// What became of an input batch's receive tag.
pub(crate) enum Receipt {
    /// The batch is processed: register its receive tag now.
    Done,
    /// The vertex keeps (part of) the batch and registers the receive tag itself, over
    /// sub-ranges that add up to the batch's range, once it is done with each part.
    Kept,
}

/// [`drain_input`] for vertices that may keep input for later (withholding its receive tag):
/// `process` says whether the batch is done.
pub(crate) fn drain_input_keeping<T>(
    input: &mut InputPort<T>,
    component: ComponentId,
    stats: &mut VertexStats,
    ctx: &mut WorkerCtx,
    mut blocked: impl FnMut() -> bool,
    mut process: impl FnMut(Input<T>, &mut WorkerCtx) -> Result<Receipt, String>,
) -> Result<usize, String> {
    let mut n = 0;
    while n < BATCHES_PER_STEP && !blocked() {
        match input.pop(ctx) {
            Some(Msg::Data(mut b)) => {
                let markers = std::mem::take(&mut b.markers);
                if !b.data.is_empty() {
                    let (lo, hi, tag) = (b.lo, b.hi, b.tag);
                    stats.elements_in += b.data.len() as u64;
                    stats.batches_in += 1;
                    ctx.now_ns = crate::measure::clock::now_ns();
                    if let Receipt::Done = process(Input::Batch(b), ctx)? {
                        ctx.ack_received(component, lo, hi, tag);
                    }
                }
                let ch = input.last_channel();
                for m in markers {
                    if let Some(a) = input.aligner.observe(ch, m) {
                        process(Input::Aligned(a), ctx)?;
                    }
                }
                n += 1;
            }
            Some(Msg::End) => n += 1,
            None => break,
        }
    }
    Ok(n)
}
