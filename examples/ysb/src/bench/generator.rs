//! The generator inside the job: source instance `s` of `S` emits events `s, s + S, ...` of the
//! [`Schedule`], each when it is due (an absolute schedule: a late event is emitted at once and
//! the next ones keep their due times), as pre-serialized lines ([`Templates`]).
//!
//! Its lag (emission minus due time) is recorded per event: a generator that cannot hold its
//! rate shows in `generator_lag_us`, not in a lower rate nobody notices.

use super::schedule::{Schedule, Templates};
use hdrhistogram::Histogram;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use xorflow_runtime::measure::{clock, stats};
use xorflow_runtime::{Source, SourceOutput, SourcePoll, VertexStats};

/// Histogram of the generator's lag behind its schedule, us (sources' statistics).
pub const GENERATOR_LAG_US: &str = "generator_lag_us";

/// One source instance.
pub struct RateSource {
    templates: Arc<Templates>,
    schedule: Schedule,
    /// Next event to emit.
    next: u64,
    /// Instances (the stride).
    stride: u64,
    /// `schedule.start_ms` on the worker's monotonic clock, ns (the clock `poll` sees).
    start_mono_ns: u64,
    lag_us: Histogram<u64>,
}

impl RateSource {
    /// Instance `instance` of `instances`; `start_mono_ns` is `schedule.start_ms` on this
    /// process's monotonic clock ([`mono_of_epoch_ms`], read once per process so that every
    /// instance of a process runs the same schedule).
    pub fn new(
        templates: Arc<Templates>,
        schedule: Schedule,
        start_mono_ns: u64,
        instance: usize,
        instances: usize,
    ) -> Self {
        RateSource {
            templates,
            schedule,
            next: instance as u64,
            stride: instances as u64,
            start_mono_ns,
            lag_us: stats::histogram(),
        }
    }
}

/// The monotonic clock's reading (`clock::now_ns`) at epoch ms `ms`: the schedule is in wall
/// time (event times are epoch ms, as the original's), the workers wait on the monotonic clock.
/// The wall clock is read between two monotonic readings and paired with their midpoint; of up
/// to 5 tries the tightest pair is kept (a preemption between the reads would shift the whole
/// schedule, and across processes the shift shows in [`super::schedule_clock`]'s spread).
pub fn mono_of_epoch_ms(ms: u64) -> u64 {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let before = clock::now_ns();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let after = clock::now_ns();
        if after - before < best.0 {
            best = (after - before, before + (after - before) / 2, wall);
        }
        if best.0 < 1_000 {
            break;
        }
    }
    (best.1 + ms * 1_000_000).saturating_sub(best.2)
}

impl Source<String> for RateSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, String>) -> SourcePoll {
        let now = out.now_ns();
        let total = self.schedule.events();
        for _ in 0..out.budget() {
            if self.next >= total {
                return SourcePoll::Done;
            }
            let due = self.start_mono_ns + self.schedule.offset_ns(self.next);
            let ms = self.schedule.event_ms(self.next);
            if due > now {
                // Nothing of this instance lies below the next due event's time.
                out.heartbeat(ms);
                return SourcePoll::WaitUntil(due);
            }
            self.lag_us.saturating_record((now - due) / 1000);
            out.emit(ms, self.templates.line(self.next, ms));
            out.heartbeat(ms);
            self.next += self.stride;
        }
        if self.next >= total {
            SourcePoll::Done
        } else {
            SourcePoll::Ready
        }
    }

    fn report(&mut self, stats: &mut VertexStats) {
        let _ = stats.histogram_mut(GENERATOR_LAG_US).add(&self.lag_us);
        super::schedule_clock::record(stats, self.start_mono_ns);
    }
}
