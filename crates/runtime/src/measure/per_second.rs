//! Latency series per second of a run, kept in a vertex's statistics as histograms named
//! `<prefix>/<second, 6 digits>`, so they merge over instances and processes like any other
//! histogram. The sustainable-throughput judge reads them to see whether latency grows over a
//! run (sustainable throughput: the Cloudprofiler paper, section 4.3, after Karimov et al.;
//! docs/papers.md): the YSB's pre-window latency (`examples/ysb/src/bench/latency.rs`) and the
//! chain's element latency (`crates/bench/src/sustainable/series.rs`).

use crate::measure::stats::VertexStats;
use hdrhistogram::Histogram;

/// Largest latency a second records, us (100 s); larger ones count as this.
pub const MAX_US: u64 = 100_000_000;

/// One second's histogram: 1 us to [`MAX_US`] at 2 significant digits (about 40 KB).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 2).expect("valid histogram bounds")
}

/// Second `i`'s histogram of series `prefix` in `stats`, made on first use. The name is written
/// into a stack buffer, so a lookup of an existing second allocates nothing.
pub fn histogram_mut<'a>(
    stats: &'a mut VertexStats,
    prefix: &str,
    i: u64,
) -> &'a mut Histogram<u64> {
    use std::io::Write as _;
    let mut buf = [0u8; 128];
    let free = {
        let mut w = &mut buf[..];
        let _ = write!(w, "{prefix}/{i:06}");
        w.len()
    };
    let name = std::str::from_utf8(&buf[..buf.len() - free]).expect("a UTF-8 name");
    if !stats.histograms.contains_key(name) {
        stats.histograms.insert(name.to_string(), histogram());
    }
    stats.histograms.get_mut(name).expect("inserted above")
}

/// Series `prefix` of a finished run's (merged) `stats`: per second, the p99 in ms (0 for a
/// second without samples) and the sample count. Empty when none was recorded.
pub fn read(stats: &VertexStats, prefix: &str) -> (Vec<f64>, Vec<u64>) {
    let (mut p99, mut count) = (Vec::new(), Vec::new());
    let from = format!("{prefix}/");
    for (name, h) in stats.histograms.range(from.clone()..) {
        let Some(i) = name
            .strip_prefix(&from)
            .and_then(|s| s.parse::<usize>().ok())
        else {
            break;
        };
        if i >= p99.len() {
            p99.resize(i + 1, 0.0);
            count.resize(i + 1, 0);
        }
        if !h.is_empty() {
            p99[i] = h.value_at_quantile(0.99) as f64 / 1000.0;
        }
        count[i] = h.len();
    }
    (p99, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_found_again_and_read_in_order() {
        let mut s = VertexStats::new("sink");
        histogram_mut(&mut s, "lat", 2).record(3000).unwrap();
        histogram_mut(&mut s, "lat", 0).record(1000).unwrap();
        histogram_mut(&mut s, "lat", 2).record(5000).unwrap();
        // Another series sorting after this one's is not read into it.
        histogram_mut(&mut s, "lat2", 0).record(9000).unwrap();
        let (p99, count) = read(&s, "lat");
        assert_eq!(count, [1, 0, 2]);
        assert_eq!(p99[1], 0.0);
        assert!((p99[2] - 5.0).abs() < 0.05, "{p99:?}");
        assert!(read(&s, "none").0.is_empty());
    }
}
