//! One duration whose two ends are runtime stamps of possibly different processes, settled on
//! process 0 after a run: converted through the run's clock alignment (the Cloudprofiler paper,
//! section 3.3, its four cases; docs/papers.md) when there is one, else the plain difference; and
//! the tally that checks every converted sample against the plain difference, the truth on one
//! host.

use super::stats::{ClockCheck, VertexStats};
use xorflow_measure::clock::Alignment;

/// One settled sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settled {
    /// The duration, ns: converted into process 0's time through the clock alignment when the
    /// run has one, else the plain difference of the stamps. Never negative (0 when the end's
    /// stamp precedes the start's).
    pub ns: u64,
    /// |true - `ns`| is at most this, ns (0 without an alignment).
    pub bound_ns: f64,
    /// The plain difference of the two stamps, ns: exact when both processes run on one host,
    /// whose `CLOCK_MONOTONIC_RAW` they share.
    pub raw_ns: i64,
    /// Whether `ns` went through the alignment.
    pub converted: bool,
}

impl Settled {
    /// The duration from `start` to `end`, each `(process, CLOCK_MONOTONIC_RAW ns)`: through
    /// `clock` ([`Alignment::monotonic_duration`]) when given and it can convert both ends, else
    /// the plain difference.
    pub fn between(clock: Option<&Alignment>, start: (usize, u64), end: (usize, u64)) -> Settled {
        let raw = (end.1 as i128 - start.1 as i128) as i64;
        match clock.and_then(|a| a.monotonic_duration(start, end).ok()) {
            Some(s) => Settled {
                ns: s.ns.max(0.0).round() as u64,
                bound_ns: s.bound_ns,
                raw_ns: raw,
                converted: true,
            },
            None => Settled {
                ns: raw.max(0) as u64,
                bound_ns: 0.0,
                raw_ns: raw,
                converted: false,
            },
        }
    }
}

/// How the samples of one measure went through the alignment, counted while settling.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClockTally {
    bound_ns_max: f64,
    converted: u64,
    unconverted: u64,
    exceeded: u64,
}

/// Names of the counters a [`ClockTally`] leaves on a vertex for one measure.
#[derive(Clone, Copy, Debug)]
pub struct TallyCounters<'a> {
    /// The largest bound, ns (rounded up).
    pub bound: &'a str,
    /// Samples converted.
    pub converted: &'a str,
    /// Converted samples off the plain difference by more than their bound.
    pub exceeded: &'a str,
    /// Samples a run with an alignment left unconverted.
    pub unconverted: &'a str,
}

impl ClockTally {
    /// Counts sample `s` of a run whose alignment is `clock`.
    pub fn add(&mut self, s: &Settled, clock: Option<&Alignment>) {
        if s.converted {
            self.converted += 1;
            self.bound_ns_max = self.bound_ns_max.max(s.bound_ns);
            // Both clamp a negative duration to 0 the same way.
            if (s.ns as f64 - s.raw_ns.max(0) as f64).abs() > s.bound_ns {
                self.exceeded += 1;
            }
        } else if clock.is_some() {
            self.unconverted += 1;
        }
    }

    /// Adds the tally to `stats` as the counters `names`.
    pub fn write(&self, stats: &mut VertexStats, names: TallyCounters<'_>) {
        stats.count(names.bound, self.bound_ns_max.ceil() as u64);
        stats.count(names.converted, self.converted);
        stats.count(names.exceeded, self.exceeded);
        stats.count(names.unconverted, self.unconverted);
    }

    /// The check `stats`'s counters `names` hold, if a tally was written there.
    pub fn read(stats: &VertexStats, names: TallyCounters<'_>) -> Option<ClockCheck> {
        let bound = *stats.counters.get(names.bound)?;
        Some(ClockCheck {
            bound_us_max: bound as f64 / 1e3,
            converted: stats.counter(names.converted),
            unconverted: stats.counter(names.unconverted),
            bound_exceeded_same_host: stats.counter(names.exceeded),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_alignment_the_plain_difference_clamped_at_zero() {
        let s = Settled::between(None, (1, 1_000), (0, 1_250));
        assert_eq!((s.ns, s.raw_ns, s.converted), (250, 250, false));
        let s = Settled::between(None, (1, 1_000), (0, 900));
        assert_eq!((s.ns, s.raw_ns), (0, -100));
    }

    #[test]
    fn the_tally_counts_samples_off_the_truth_by_more_than_their_bound() {
        let mut t = ClockTally::default();
        let ok = Settled {
            ns: 1_010,
            bound_ns: 20.0,
            raw_ns: 1_000,
            converted: true,
        };
        let off = Settled { ns: 1_050, ..ok };
        let plain = Settled {
            converted: false,
            ..ok
        };
        for s in [ok, off, plain] {
            t.add(&s, None);
        }
        let names = TallyCounters {
            bound: "b",
            converted: "c",
            exceeded: "x",
            unconverted: "u",
        };
        let mut v = VertexStats::new("v");
        t.write(&mut v, names);
        let c = ClockTally::read(&v, names).unwrap();
        assert_eq!((c.converted, c.bound_exceeded_same_host), (2, 1));
        // Without an alignment an unconverted sample is expected, not counted.
        assert_eq!(c.unconverted, 0);
        assert_eq!(c.bound_us_max, 0.02);
        assert!(ClockTally::read(&VertexStats::new("w"), names).is_none());
    }
}
