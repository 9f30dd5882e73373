//! Keyed process functions with event-time timers (Flink's `KeyedProcessFunction`).
//!
//! A [`KeyedProcess`] sees each element of its key with that key's state, and may emit results,
//! emit to a side output, and set timers. A timer for time `t` fires once the frontier of the
//! operator's tracking component reaches `t` (every element with a smaller time has arrived);
//! its results are emitted with time `t - 1`. The runtime keeps the state and the timers in
//! checkpoints (`crates/runtime/src/operators/process.rs`).

use crate::{Data, Time};

/// What a [`KeyedProcess`] call may do: emit, emit to the side output, set timers. Buffers are
/// the operator's, reused across calls (nothing is allocated per element once they have grown).
pub struct ProcessContext<'a, O, S> {
    time: Time,
    frontier: Time,
    out: &'a mut Vec<O>,
    side: &'a mut Vec<S>,
    timers: &'a mut Vec<Time>,
}

impl<'a, O, S> ProcessContext<'a, O, S> {
    /// A context at `time` (the element's, or the timer's) with the operator's `frontier`, over
    /// the operator's buffers. Called by the runtime.
    pub fn new(
        time: Time,
        frontier: Time,
        out: &'a mut Vec<O>,
        side: &'a mut Vec<S>,
        timers: &'a mut Vec<Time>,
    ) -> Self {
        ProcessContext {
            time,
            frontier,
            out,
            side,
            timers,
        }
    }

    /// The element's time, or the firing timer's.
    pub fn time(&self) -> Time {
        self.time
    }

    /// How far this instance has fired timers: every timer below it has fired, and no element
    /// below it can still arrive (Flink's current watermark).
    pub fn frontier(&self) -> Time {
        self.frontier
    }

    /// Emits `o`: with the element's time from `on_element`, with `t - 1` from a timer at `t`.
    pub fn emit(&mut self, o: O) {
        self.out.push(o);
    }

    /// Emits `s` on the side output, with the same time as [`ProcessContext::emit`].
    pub fn side(&mut self, s: S) {
        self.side.push(s);
    }

    /// Sets a timer for this key at `t`, time units. One at or below the current time (the
    /// element's, or the firing timer's) is set for just after it; setting one twice fires it
    /// once.
    pub fn set_timer(&mut self, t: Time) {
        self.timers.push(t.max(self.time.saturating_add(1)));
    }
}

/// A function of one key's elements, state and timers. `K` is the key (the stream is
/// partitioned by it), `T` the input.
pub trait KeyedProcess<K, T>: Send + Sync + 'static {
    /// Kept per key; `None` when the key has none (set it to `None` to delete it).
    type State: Data;
    /// Results.
    type Out: Data;
    /// The side output (late elements, say).
    type Side: Data;

    /// One element of `key`, at `ctx.time()`.
    fn on_element(
        &self,
        key: &K,
        state: &mut Option<Self::State>,
        element: T,
        ctx: &mut ProcessContext<'_, Self::Out, Self::Side>,
    );

    /// Whether the operator hands each input batch's elements of one key to
    /// [`KeyedProcess::on_elements`] together (a mini-batch, as Flink SQL's
    /// `table.exec.mini-batch` folds a key's rows before emitting its change), instead of one
    /// by one to `on_element`.
    const BATCHED: bool = false;

    /// Whether the function's timers only drop state and never emit (an interval join's
    /// cleanup). Then, once the input has ended (the frontier at [`crate::INF`]), the operator
    /// does not fire them: the state they would clear goes with the operator, and a bounded run
    /// whose elements all wait for the end (Nexmark q7 over the generator: every bid in one
    /// window) skips a lookup and a cleanup per element. Timers that come due while the input
    /// runs fire as always.
    const CLEANUP_TIMERS: bool = false;

    /// Several elements of `key` from one input batch, in arrival order, at `ctx.time()` (the
    /// latest of their times); called instead of `on_element` when [`KeyedProcess::BATCHED`].
    /// By default, each element in turn.
    fn on_elements(
        &self,
        key: &K,
        state: &mut Option<Self::State>,
        elements: &mut Vec<T>,
        ctx: &mut ProcessContext<'_, Self::Out, Self::Side>,
    ) {
        for e in elements.drain(..) {
            self.on_element(key, state, e, ctx);
        }
    }

    /// A timer of `key` set for `ctx.time()` has fired.
    fn on_timer(
        &self,
        key: &K,
        state: &mut Option<Self::State>,
        ctx: &mut ProcessContext<'_, Self::Out, Self::Side>,
    );
}
