//! The bench's latencies, in us on the wall clock (event times are epoch ms, as the original's):
//!
//! - pre-window (the CPU-efficiency paper's Enrich task, docs/papers.md): from an event's event
//!   time to its arrival at the vertex just before the window's key exchange, per view;
//! - window (the CPU-efficiency and wide-area papers): from the window's last event's event time to
//!   the window's emission, per (campaign, window);
//! - updated (the original YSB's figure): emission minus window start, per (campaign, window);
//!   it includes the 10 s of the window itself.
//!
//! Only windows wholly inside the generation count ([`Schedule::covers`]). Across hosts these
//! compare wall clocks of different machines (as the original does); on one machine they share
//! one clock.

use super::schedule::Schedule;
use crate::WINDOW_MS;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};
use xorflow_core::{Aggregate, Element, WindowResult};
use xorflow_runtime::measure::per_second;
use xorflow_runtime::VertexStats;

/// Histogram of the pre-window latency, us.
pub const PREWINDOW_US: &str = "prewindow_latency_us";
/// Histogram of the window latency (the CPU-efficiency and wide-area papers' definition), us.
pub const WINDOW_US: &str = "window_latency_us";
/// Histogram of the original's `time_updated - window_start`, us.
pub const UPDATED_US: &str = "updated_latency_us";

/// Now on the wall clock, us since the epoch.
pub fn epoch_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The bench's window aggregate: (views, the largest event time among them in ms).
pub struct CountAndLast;

impl Aggregate<(u32, u64)> for CountAndLast {
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn init(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, acc: &mut (u64, u64), x: &(u32, u64)) {
        acc.0 += 1;
        acc.1 = acc.1.max(x.1);
    }
    fn finish(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

/// Records the pre-window latency of every (campaign, event time) of a batch, overall and per
/// second of the generation (one clock read per batch: its elements arrived together).
pub fn record_prewindow(
    schedule: &Schedule,
    batch: &[Element<(u32, u64)>],
    stats: &mut VertexStats,
) {
    let now = epoch_us();
    let latency = |e: &Element<(u32, u64)>| now.saturating_sub(e.data.1 * 1000);
    let h = stats.histogram_mut(PREWINDOW_US);
    for e in batch {
        h.saturating_record(latency(e));
    }
    // Per second: one map lookup per run of equal seconds (a batch is mostly one second).
    let second = |e: &Element<(u32, u64)>| e.data.1.saturating_sub(schedule.start_ms) / 1000;
    for run in batch.chunk_by(|a, b| second(a) == second(b)) {
        let h = per_second::histogram_mut(stats, PREWINDOW_US, second(&run[0]));
        for e in run {
            h.saturating_record(latency(e).min(per_second::MAX_US));
        }
    }
}

/// The p99 of each second's pre-window latency, ms (0 for a second without views): whether
/// latency grows over a run (`xorflow-lab bench sustainable`).
pub fn prewindow_by_second(stats: Option<&VertexStats>, duration_s: u64) -> Vec<f64> {
    let mut p99 = stats.map_or_else(Vec::new, |s| per_second::read(s, PREWINDOW_US).0);
    p99.resize(duration_s as usize, 0.0);
    p99
}

/// Records the window and updated latencies of the windows of a batch that `schedule` covers.
pub fn record_emission(
    schedule: &Schedule,
    batch: &[Element<WindowResult<u32, (u64, u64)>>],
    stats: &mut VertexStats,
) {
    let now = epoch_us();
    for w in batch
        .iter()
        .filter(|w| schedule.covers(w.data.start, WINDOW_MS))
    {
        let last_ms = w.data.value.1;
        stats
            .histogram_mut(WINDOW_US)
            .saturating_record(now.saturating_sub(last_ms * 1000));
        stats
            .histogram_mut(UPDATED_US)
            .saturating_record(now.saturating_sub(w.data.start * 1000));
    }
}

/// A latency distribution in ms (the peers' JSON uses the same shape: `peers/ysb-contract.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Latency {
    /// Median, ms.
    pub p50: f64,
    /// 90th percentile, ms.
    pub p90: f64,
    /// 95th percentile, ms (the wide-area paper reports it; 0 in results written before it was
    /// added and in the JVM peers', which report p50/p90/p99).
    #[serde(default)]
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// Largest, ms.
    pub max: f64,
    /// Samples.
    pub count: u64,
}

impl Latency {
    /// The distribution of a histogram in us (all zeros when empty).
    pub fn of_us(h: Option<&Histogram<u64>>) -> Self {
        Self::of(h, 1e3)
    }

    /// The distribution of a histogram whose unit is `1 / per_ms` ms (1e3: us, 1e6: ns).
    pub fn of(h: Option<&Histogram<u64>>, per_ms: f64) -> Self {
        let Some(h) = h.filter(|h| !h.is_empty()) else {
            return Latency::default();
        };
        let ms = |v: u64| v as f64 / per_ms;
        Latency {
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            count: h.len(),
        }
    }
}
