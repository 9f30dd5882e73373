//! The output side of an operator as the driver sees it: none (sinks), one port, or two (a cycle's
//! loop and its results). The driver flushes, back-pressures, forwards markers and ends the stream
//! through this trait, so no operator writes that tail itself.

use crate::channel::Flush;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use xorflow_tracking::{ComponentId, Time};

/// The output ports of an operator.
pub trait Outputs: Send {
    /// True while some batch waits for room in a full channel.
    fn blocked(&self) -> bool;

    /// Sends the partial batches `which` says and retries held-back ones. Returns whether
    /// anything was sent.
    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool;

    /// Sends `Marker(time)` after what is buffered (tracking `markers`).
    fn marker(&mut self, time: Time, ctx: &mut WorkerCtx);

    /// Tracking `none`: once `input_ended`, sends everything and the end-of-stream markers, once.
    /// Returns whether it sent them now.
    fn end_when(&mut self, input_ended: bool, ctx: &mut WorkerCtx) -> bool;

    /// True once the end of the stream has been delivered (always for no outputs).
    fn ended(&self) -> bool;

    /// Components of the vertices fed (where a window's holds go).
    fn components(&self) -> Vec<ComponentId>;

    /// Sets the checkpoint epoch of what is pushed from now on ([`OutputPort::set_epoch`]).
    fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx);

    /// The first error of an operator chained into these outputs, once
    /// ([`OutputPort::failure`]).
    fn failure(&mut self) -> Option<crate::error::OperatorError> {
        None
    }
}

impl Outputs for () {
    fn blocked(&self) -> bool {
        false
    }
    fn flush(&mut self, _: &mut WorkerCtx, _: Flush) -> bool {
        false
    }
    fn marker(&mut self, _: Time, _: &mut WorkerCtx) {}
    fn end_when(&mut self, _: bool, _: &mut WorkerCtx) -> bool {
        false
    }
    fn ended(&self) -> bool {
        true
    }
    fn components(&self) -> Vec<ComponentId> {
        Vec::new()
    }
    fn set_epoch(&mut self, _: u64, _: &mut WorkerCtx) {}
}

impl<T: Clone + Send> Outputs for OutputPort<T> {
    #[inline]
    fn blocked(&self) -> bool {
        OutputPort::blocked(self)
    }
    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        OutputPort::flush(self, ctx, which)
    }
    fn marker(&mut self, time: Time, ctx: &mut WorkerCtx) {
        OutputPort::marker(self, time, ctx)
    }
    fn end_when(&mut self, input_ended: bool, ctx: &mut WorkerCtx) -> bool {
        OutputPort::end_when(self, input_ended, ctx)
    }
    fn ended(&self) -> bool {
        OutputPort::ended(self)
    }
    fn components(&self) -> Vec<ComponentId> {
        OutputPort::components(self).collect()
    }
    #[inline]
    fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        OutputPort::set_epoch(self, epoch, ctx)
    }
    fn failure(&mut self) -> Option<crate::error::OperatorError> {
        OutputPort::failure(self)
    }
}

impl<A: Outputs, B: Outputs> Outputs for (A, B) {
    #[inline]
    fn blocked(&self) -> bool {
        self.0.blocked() || self.1.blocked()
    }
    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        let a = self.0.flush(ctx, which);
        self.1.flush(ctx, which) || a
    }
    fn marker(&mut self, time: Time, ctx: &mut WorkerCtx) {
        self.0.marker(time, ctx);
        self.1.marker(time, ctx);
    }
    fn end_when(&mut self, input_ended: bool, ctx: &mut WorkerCtx) -> bool {
        let a = self.0.end_when(input_ended, ctx);
        self.1.end_when(input_ended, ctx) || a
    }
    fn ended(&self) -> bool {
        self.0.ended() && self.1.ended()
    }
    fn components(&self) -> Vec<ComponentId> {
        let mut c = self.0.components();
        c.extend(self.1.components());
        c
    }
    #[inline]
    fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        self.0.set_epoch(epoch, ctx);
        self.1.set_epoch(epoch, ctx);
    }
    fn failure(&mut self) -> Option<crate::error::OperatorError> {
        self.0.failure().or_else(|| self.1.failure())
    }
}
