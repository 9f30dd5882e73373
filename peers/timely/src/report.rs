//! What a run measured: each process's raw measurements ([`ProcessReport`]) and their merge into
//! the one JSON object `xorflow-lab bench peers` reads ([`Output`], the field names of
//! `xorflow-lab bench chain --json`). Every time is CLOCK_MONOTONIC ns (`clock.rs`), so reports of
//! several processes on one machine merge without conversion.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A latency histogram: 1 ns to 1 hour, 3 significant digits.
pub fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

/// A histogram of one second's element latencies: 1 us to 100 s, 2 significant digits (about
/// 20 KB).
fn second_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000, 2).expect("histogram bounds")
}

/// Seconds of schedule a per-second series keeps (ids due later are not in it).
const MAX_SECONDS: usize = 3600;

/// Records the latency `latency_ns` of an id due at `due_ns` in `series`, at its second of the
/// schedule that started at `start_ns` (a histogram per second, made at its first id).
pub fn record_second(
    series: &mut Vec<Histogram<u64>>,
    start_ns: u64,
    due_ns: u64,
    latency_ns: u64,
) {
    let i = (due_ns.saturating_sub(start_ns) / 1_000_000_000) as usize;
    if i >= MAX_SECONDS {
        return;
    }
    if i >= series.len() {
        series.resize_with(i + 1, second_hist);
    }
    series[i].saturating_record((latency_ns / 1000).max(1));
}

/// One worker's or one process's measurements, merged with [`Measured::add`].
pub struct Measured {
    /// Per sink and timestamp: arrival of its last element there to the sink seeing the frontier
    /// pass it, ns.
    pub notification: Histogram<u64>,
    /// Per notified timestamp: (timestamp, last arrival at this sink, notified), ns.
    pub slot_log: Vec<(u64, u64, u64)>,
    /// Due time at the input to arrival at a sink, ns.
    pub element: Histogram<u64>,
    /// The same per second of the schedule (the ids due in it), us ([`record_second`]).
    pub by_second: Vec<Histogram<u64>>,
    /// First and last measured emission, ns.
    pub span: Option<(u64, u64)>,
    /// Ids emitted after the warm-up.
    pub measured_emitted: u64,
    /// When the emission schedule started, ns.
    pub start_ns: u64,
    /// When the worker (process) finished, ns.
    pub finished_ns: u64,
    /// Elements that reached this process's sinks.
    pub arrived: u64,
}

impl Default for Measured {
    fn default() -> Self {
        Measured {
            notification: hist(),
            slot_log: Vec::new(),
            element: hist(),
            by_second: Vec::new(),
            span: None,
            measured_emitted: 0,
            start_ns: u64::MAX,
            finished_ns: 0,
            arrived: 0,
        }
    }
}

impl Measured {
    /// Adds another worker's or process's measurements (`arrived` is counted once per process
    /// by the caller, not per worker).
    pub fn add(&mut self, o: Measured) {
        self.notification.add(&o.notification).expect("same bounds");
        self.element.add(&o.element).expect("same bounds");
        if o.by_second.len() > self.by_second.len() {
            self.by_second.resize_with(o.by_second.len(), second_hist);
        }
        for (mine, theirs) in self.by_second.iter_mut().zip(&o.by_second) {
            mine.add(theirs).expect("same bounds");
        }
        self.slot_log.extend(o.slot_log);
        self.span = match (self.span, o.span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (s, None) | (None, s) => s,
        };
        self.measured_emitted += o.measured_emitted;
        self.start_ns = self.start_ns.min(o.start_ns);
        self.finished_ns = self.finished_ns.max(o.finished_ns);
        self.arrived += o.arrived;
    }

    /// The report a process of a cluster run prints on stdout for the launcher.
    pub fn to_report(&self) -> ProcessReport {
        ProcessReport {
            notification: encode(&self.notification),
            element: encode(&self.element),
            by_second: self.by_second.iter().map(encode).collect(),
            slot_log: self.slot_log.clone(),
            span: self.span,
            measured_emitted: self.measured_emitted,
            start_ns: self.start_ns,
            finished_ns: self.finished_ns,
            arrived: self.arrived,
        }
    }

    /// Reads a process's report back.
    ///
    /// # Errors
    /// A histogram that does not decode.
    pub fn from_report(r: ProcessReport) -> anyhow::Result<Self> {
        Ok(Measured {
            notification: decode(&r.notification)?,
            element: decode(&r.element)?,
            by_second: r
                .by_second
                .iter()
                .map(|b| decode(b))
                .collect::<anyhow::Result<_>>()?,
            slot_log: r.slot_log,
            span: r.span,
            measured_emitted: r.measured_emitted,
            start_ns: r.start_ns,
            finished_ns: r.finished_ns,
            arrived: r.arrived,
        })
    }
}

/// [`Measured`] on the wire between a cluster run's processes and its launcher: histograms in
/// HdrHistogram's V2 encoding.
#[derive(Serialize, Deserialize)]
pub struct ProcessReport {
    notification: Vec<u8>,
    element: Vec<u8>,
    #[serde(default)]
    by_second: Vec<Vec<u8>>,
    slot_log: Vec<(u64, u64, u64)>,
    span: Option<(u64, u64)>,
    measured_emitted: u64,
    start_ns: u64,
    finished_ns: u64,
    arrived: u64,
}

fn encode(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("a histogram serializes into memory");
    out
}

fn decode(b: &[u8]) -> anyhow::Result<Histogram<u64>> {
    Deserializer::new()
        .deserialize(&mut &b[..])
        .map_err(|e| anyhow::anyhow!("a process report's histogram does not decode: {e:?}"))
}

/// What one run measured (field names as in `xorflow-lab bench chain --json`).
#[derive(Serialize)]
pub struct Output {
    pub engine: &'static str,
    pub version: &'static str,
    pub stages: usize,
    /// Worker threads per process.
    pub workers: usize,
    pub processes: usize,
    pub granularity: u64,
    pub tracking: &'static str,
    pub elements: u64,
    pub warmup: u64,
    pub rate: f64,
    /// The bound on elements in flight over all workers; None with `--feed open` (no bound).
    pub max_in_flight: Option<u64>,
    /// How the input was fed (`paced` or `open`) and, when open, the elements per step.
    pub feed: crate::Feed,
    pub chunk: Option<u64>,
    /// Measured ids over the span from the first to the last measured emission, elements/s.
    pub achieved_rate: f64,
    pub elapsed_s: f64,
    pub elements_per_s: f64,
    pub latency_p50_us: Option<f64>,
    pub latency_p95_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub notifications: u64,
    /// Notification latency from the timestamp's last arrival at any sink.
    pub notification_latency_any: Percentiles,
    pub element_latency: Percentiles,
    /// Element latency p99 per second of the schedule, ms (0 for a second without measured ids).
    pub element_p99_ms_by_second: Vec<f64>,
    /// Measured ids due in each second of the schedule.
    pub element_count_by_second: Vec<u64>,
}

/// Quantiles of a latency histogram, us.
#[derive(Serialize)]
pub struct Percentiles {
    count: u64,
    p50_us: Option<f64>,
    p90_us: Option<f64>,
    p95_us: Option<f64>,
    p99_us: Option<f64>,
    max_us: Option<f64>,
}

fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    Percentiles {
        count: h.len(),
        p50_us: quantile_us(h, 0.5),
        p90_us: quantile_us(h, 0.9),
        p95_us: quantile_us(h, 0.95),
        p99_us: quantile_us(h, 0.99),
        max_us: quantile_us(h, 1.0),
    }
}

/// Notification latency from each timestamp's last arrival at *any* sink (the trAcker paper's
/// definition): the slot logs of every sink, grouped by timestamp.
fn from_last_arrival_anywhere(slot_log: &mut [(u64, u64, u64)]) -> Histogram<u64> {
    let mut any = hist();
    slot_log.sort_by_key(|r| r.0);
    for group in slot_log.chunk_by(|a, b| a.0 == b.0) {
        let last = group.iter().map(|r| r.1).max().unwrap_or(0);
        for r in group {
            let _ = any.record(r.2.saturating_sub(last).max(1));
        }
    }
    any
}

/// The run's output from every process's measurements merged into `m`.
///
/// # Errors
/// Not every element reached a sink.
pub fn output(a: &crate::Args, mut m: Measured) -> anyhow::Result<Output> {
    anyhow::ensure!(
        m.arrived == a.elements,
        "{} of {} elements arrived at the sinks",
        m.arrived,
        a.elements
    );
    let any = from_last_arrival_anywhere(&mut m.slot_log);
    let elapsed_s = m.finished_ns.saturating_sub(m.start_ns) as f64 / 1e9;
    let span_s = m
        .span
        .map_or(0.0, |(s, e)| e.saturating_sub(s) as f64 / 1e9);
    let n = &m.notification;
    Ok(Output {
        engine: "timely",
        version: "0.31.0",
        stages: a.stages,
        workers: a.workers,
        processes: a.processes,
        granularity: a.granularity,
        tracking: if a.granularity == 0 {
            "none"
        } else {
            "frontier"
        },
        elements: a.elements,
        warmup: a.warmup,
        rate: a.rate,
        max_in_flight: (a.feed == crate::Feed::Paced).then_some(a.max_in_flight),
        feed: a.feed,
        chunk: (a.feed == crate::Feed::Open).then_some(a.chunk),
        achieved_rate: if span_s > 0.0 {
            m.measured_emitted.saturating_sub(1) as f64 / span_s
        } else {
            0.0
        },
        elapsed_s,
        elements_per_s: a.elements as f64 / elapsed_s.max(1e-9),
        latency_p50_us: quantile_us(n, 0.5),
        latency_p95_us: quantile_us(n, 0.95),
        latency_p99_us: quantile_us(n, 0.99),
        notifications: n.len(),
        notification_latency_any: percentiles(&any),
        element_latency: percentiles(&m.element),
        element_p99_ms_by_second: m
            .by_second
            .iter()
            .map(|h| h.value_at_quantile(0.99) as f64 / 1e3)
            .collect(),
        element_count_by_second: m.by_second.iter().map(Histogram::len).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_and_merges() {
        let mut a = Measured {
            start_ns: 100,
            finished_ns: 900,
            arrived: 3,
            span: Some((150, 400)),
            slot_log: vec![(0, 500, 520)],
            ..Measured::default()
        };
        a.element.record(1_000).unwrap();
        // Due 1.5 s after the start: second 1.
        record_second(&mut a.by_second, 100, 1_500_000_100, 7_000_000);
        let b = Measured {
            start_ns: 90,
            finished_ns: 1_000,
            arrived: 2,
            span: Some((140, 300)),
            slot_log: vec![(0, 510, 530)],
            ..Measured::default()
        };
        let mut m = Measured::from_report(
            serde_json::from_str::<ProcessReport>(&serde_json::to_string(&a.to_report()).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(m.element.len(), 1);
        assert_eq!(m.by_second.len(), 2);
        assert_eq!(m.by_second[1].len(), 1);
        // Recorded in us: 7 ms is 7000.
        assert_eq!(m.by_second[1].value_at_quantile(0.99) / 10, 700);
        // The per-second series: a's second 1, b's second 0.
        let mut b = b;
        record_second(&mut b.by_second, 100, 200, 3_000_000);
        m.add(b);
        assert_eq!(
            m.by_second.iter().map(Histogram::len).collect::<Vec<_>>(),
            [1, 1]
        );
        assert_eq!((m.start_ns, m.finished_ns, m.arrived), (90, 1_000, 5));
        assert_eq!(m.span, Some((140, 400)));
        // From the last arrival anywhere (510): 520 - 510 -> 10, 530 - 510 -> 20.
        let any = from_last_arrival_anywhere(&mut m.slot_log);
        assert_eq!((any.min(), any.max()), (10, 20));
    }
}
