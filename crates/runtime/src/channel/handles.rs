//! The narrow handles a channel's sending side takes from its worker, instead of the whole
//! worker context: how to cut batches ([`Batching`]) and, in [`SendCtx`], the tracking mode's
//! tagging (`progress/mode.rs`), the clock, traffic counters and the wake-ups of other workers.

use crate::measure::traffic::{MessageKind, Traffic};
use crate::progress::mode::Progress;
use crate::wake::Unparkers;
use xorflow_tracking::Granularity;

/// How a worker cuts its output into batches (`--batch-size`, `--flush-timeout`,
/// `--batch-flush-on-idle`, `--timer-slack`, `--source-delay`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// Elements per batch before it is sent.
    pub batch_size: usize,
    /// A partial batch is sent after this long, ns.
    pub flush_timeout_ns: u64,
    /// Partial batches leave when the worker goes idle (`RuntimeConfig::batch_flush_on_idle`).
    pub flush_on_idle: bool,
    /// How late this worker's timed waits may wake, ns (`RuntimeConfig::timer_slack`).
    pub timer_slack_ns: u64,
    /// How late a paced source whose elements come closer together than this may be polled,
    /// ns (`RuntimeConfig::source_delay`, `operators/source_pace.rs`).
    pub source_delay_ns: u64,
}

/// What sending a batch needs of the worker, borrowed for one call into a channel.
pub struct SendCtx<'a> {
    /// The worker's cached clock, ns.
    pub now_ns: u64,
    /// Batch size and flush rules.
    pub batching: &'a Batching,
    /// Tracking granularity: batches carry slot ranges.
    pub granularity: Granularity,
    /// The tracking mode's rules: send tags under trAcker, nothing otherwise.
    pub progress: &'a mut dyn Progress,
    /// Messages sent by this worker, by kind.
    pub traffic: &'a mut Traffic,
    /// Wakes the local worker a batch is queued for.
    pub unparkers: &'a Unparkers,
    /// This worker's index within its process (its own queue needs no wake-up).
    pub local_index: usize,
    /// Earliest time (ns) the worker must run again: a partial batch falls due then.
    pub wake_at_ns: &'a mut u64,
}

impl SendCtx<'_> {
    /// Asks the worker to run again no later than `at_ns`.
    #[inline]
    pub fn wake_at(&mut self, at_ns: u64) {
        *self.wake_at_ns = (*self.wake_at_ns).min(at_ns);
    }

    /// Counts one sent message of `payload_bytes`.
    #[inline]
    pub fn count(&mut self, kind: MessageKind, payload_bytes: u64) {
        self.traffic.record(kind, payload_bytes);
    }
}
