//! A per-second end-to-end latency series recorded at a sink, for the sustainable-throughput
//! judge ([`super::growth`]): whether latency grows over a run. Second `i` holds the elements
//! due at the source in `[start + i s, start + (i + 1) s)` (the schedule's seconds, so a backlog
//! shows as rising latency in later seconds), each in a histogram of 1 us to 100 s at 2
//! significant digits. One histogram per second, made when its first element arrives: nothing
//! is allocated per element.

use hdrhistogram::Histogram;
use std::sync::{Arc, OnceLock};
use xorflow_runtime::measure::per_second::{self, MAX_US};
use xorflow_runtime::VertexStats;

/// Seconds a series keeps (one hour); elements due later are not in it. The run's report
/// merges each second into a histogram of the runtime's (about 0.4 MB), so a series of D seconds
/// costs about 0.4 D MB at the end of the run.
pub const MAX_SECONDS: usize = 3600;

/// One sink instance's series.
#[derive(Debug)]
pub struct PerSecond {
    /// The start of second 0, ns on the machine's monotonic clock: the sources' schedule start,
    /// shared with them (set by whichever polls or arrives first).
    start: Arc<OnceLock<u64>>,
    /// `start`, once read.
    base: Option<u64>,
    /// Second `i`'s latencies, us.
    seconds: Vec<Histogram<u64>>,
}

impl PerSecond {
    /// An empty series whose second 0 starts at `start` (the first due time recorded, if no
    /// source has set it by then).
    pub fn new(start: Arc<OnceLock<u64>>) -> Self {
        PerSecond {
            start,
            base: None,
            seconds: Vec::new(),
        }
    }

    /// Records an element due at `due_ns` that took `latency_ns` to arrive.
    #[inline]
    pub fn record(&mut self, due_ns: u64, latency_ns: u64) {
        let base = match self.base {
            Some(b) => b,
            None => *self.base.insert(*self.start.get_or_init(|| due_ns)),
        };
        let i = (due_ns.saturating_sub(base) / 1_000_000_000) as usize;
        if i >= MAX_SECONDS {
            return;
        }
        if i >= self.seconds.len() {
            self.seconds.resize_with(i + 1, per_second::histogram);
        }
        self.seconds[i].saturating_record((latency_ns / 1000).clamp(1, MAX_US));
    }

    /// Adds every second to `stats` as the histogram `<prefix>/<second, 6 digits>`.
    pub fn report(&self, stats: &mut VertexStats, prefix: &str) {
        for (i, h) in self.seconds.iter().enumerate() {
            let name = format!("{prefix}/{i:06}");
            let _ = stats
                .histograms
                .entry(name)
                .or_insert_with(per_second::histogram)
                .add(h);
        }
    }
}

/// The series `prefix` of a finished run's (merged) `stats`: per second, the p99 in ms (0 for a
/// second without elements) and the element count ([`per_second::read`]).
pub use per_second::read;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_follow_the_schedule_and_merge_over_instances() {
        let start = Arc::new(OnceLock::new());
        let _ = start.set(10_000_000_000);
        let (mut a, mut b) = (PerSecond::new(start.clone()), PerSecond::new(start));
        // Second 0: 1 ms; second 2: 50 ms (a) and 70 ms (b); second 1 has nothing.
        a.record(10_500_000_000, 1_000_000);
        a.record(12_000_000_000, 50_000_000);
        b.record(12_999_999_999, 70_000_000);
        // Due before the start (another process's schedule): second 0.
        b.record(9_000_000_000, 2_000_000);
        let mut stats = VertexStats::new("sink");
        a.report(&mut stats, "lat");
        b.report(&mut stats, "lat");
        stats
            .histograms
            .insert("later".into(), per_second::histogram());
        let (p99, count) = read(&stats, "lat");
        assert_eq!(count, [2, 0, 2]);
        assert_eq!(p99[1], 0.0);
        assert!((p99[0] - 2.0).abs() < 0.05, "{p99:?}");
        assert!((p99[2] - 70.0).abs() < 1.0, "{p99:?}");
        assert_eq!(read(&stats, "other"), (vec![], vec![]));
    }

    #[test]
    fn the_first_element_sets_the_start_when_no_source_has() {
        let start = Arc::new(OnceLock::new());
        let mut s = PerSecond::new(start.clone());
        s.record(5_000_000_000, 1_000);
        s.record(7_100_000_000, 1_000);
        assert_eq!(start.get(), Some(&5_000_000_000));
        assert_eq!(s.seconds.len(), 3);
        s.record(5_000_000_000 + MAX_SECONDS as u64 * 1_000_000_000, 1_000);
        assert_eq!(s.seconds.len(), 3, "beyond the last second: not kept");
    }
}
