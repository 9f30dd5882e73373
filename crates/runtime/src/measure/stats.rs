//! Per-vertex counters and the notification-latency histogram.

use crate::measure::settled::{ClockTally, TallyCounters};
use crate::measure::slot_log::SlotLog;
use crate::measure::span_log::SpanLog;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// When the measured (post-warm-up) elements passed a vertex: how many, the first and the last, on
/// [`crate::measure::clock::now_ns`]'s clock (comparable across the processes of one machine). A source's
/// span is when it emitted them, a sink's when they arrived.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasuredSpan {
    /// Measured elements.
    pub elements: u64,
    /// First one, ns (0 when `elements == 0`).
    pub first_ns: u64,
    /// Last one, ns.
    pub last_ns: u64,
}

impl MeasuredSpan {
    /// Records `n` measured elements at `now_ns`.
    #[inline]
    pub fn record(&mut self, n: u64, now_ns: u64) {
        if n == 0 {
            return;
        }
        if self.elements == 0 {
            self.first_ns = now_ns;
        }
        self.elements += n;
        self.last_ns = self.last_ns.max(now_ns);
    }

    /// Adds another instance's span (earliest first, latest last).
    pub fn merge(&mut self, o: &MeasuredSpan) {
        if o.elements == 0 {
            return;
        }
        self.first_ns = if self.elements == 0 {
            o.first_ns
        } else {
            self.first_ns.min(o.first_ns)
        };
        self.last_ns = self.last_ns.max(o.last_ns);
        self.elements += o.elements;
    }

    /// Elements/s over the span (`None` with fewer than 2 elements or an empty span): the first
    /// element opens the span, so `elements - 1` are counted over `last - first`.
    pub fn rate(&self) -> Option<f64> {
        let span = self.last_ns.saturating_sub(self.first_ns);
        (self.elements >= 2 && span > 0).then(|| (self.elements - 1) as f64 * 1e9 / span as f64)
    }
}

/// A histogram for a vertex's own measurements: 3 significant digits over 1 .. 2^62.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 62, 3).expect("valid histogram bounds")
}

fn to_v2(h: &Histogram<u64>) -> Vec<u8> {
    let mut v = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut v)
        .expect("serializing a histogram into memory");
    v
}

fn from_v2(b: &[u8]) -> Option<Histogram<u64>> {
    Deserializer::new().deserialize::<u64, _>(&mut &b[..]).ok()
}

/// [`VertexStats`] as sent between processes (histogram in HdrHistogram's V2 encoding).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VertexStatsWire {
    name: String,
    elements_in: u64,
    batches_in: u64,
    elements_out: u64,
    below_frontier: u64,
    latency_v2: Vec<u8>,
    measured: MeasuredSpan,
    counters: BTreeMap<String, u64>,
    histograms_v2: BTreeMap<String, Vec<u8>>,
    /// The unsettled slot log ([`SlotLog::encode`]), so process 0 measures notification latency
    /// from the last arrival at any instance of *any* process; empty when not shipped.
    #[serde(default)]
    slot_log: String,
    /// Slot records this process did not keep or ship.
    #[serde(default)]
    slot_log_dropped: u64,
    /// The unsettled span logs by measure ([`SpanLog::encode`], records not kept); empty when
    /// not shipped.
    #[serde(default)]
    spans: BTreeMap<String, (String, u64)>,
}

/// Counters of one vertex (one instance, or merged over all instances).
#[derive(Clone, Debug)]
pub struct VertexStats {
    /// Vertex name.
    pub name: String,
    /// Elements received.
    pub elements_in: u64,
    /// Batches received.
    pub batches_in: u64,
    /// Elements emitted (sources; window results for windows).
    pub elements_out: u64,
    /// Elements that arrived for a slot or window this instance had already been notified complete.
    /// Must be 0 with trAcker (the invariant); windows count and skip such elements.
    pub below_frontier: u64,
    /// Notification latency, ns: from the instance receiving the last element of a substream (or
    /// window) to the notification that it is complete. Empty without tracking.
    pub notification_latency_ns: Histogram<u64>,
    /// When the measured (post-warm-up) elements were emitted (sources) or arrived (sinks).
    pub measured: MeasuredSpan,
    /// Named counters of the operator or user code (summed over instances), e.g. a snapshot
    /// vertex's buffered elements.
    pub counters: BTreeMap<String, u64>,
    /// Named histograms of the operator or user code (merged over instances), e.g. a sink's
    /// end-to-end element latency in ns; made with [`histogram`].
    pub histograms: BTreeMap<String, Histogram<u64>>,
    /// Per-slot records of this process's instances: [`VertexStats::merge`] leaves them alone, the
    /// process moves them together ([`SlotLog::append`]), other processes ship theirs to process 0
    /// in their reports ([`VertexStats::to_wire`]), and process 0 turns them into the
    /// [`NOTIFICATION_LATENCY_ANY`] histogram with [`VertexStats::settle_slot_log`].
    pub slot_log: SlotLog,
    /// Sampled spans by measure (e.g. a sink's element latency from the source's due time),
    /// handled as `slot_log`: moved, not merged, and settled on process 0 into histogram `name`
    /// with [`VertexStats::settle_logs`].
    pub spans: BTreeMap<String, SpanLog>,
}

/// Histogram of a sink's notification latency in ns measured from the substream's last arrival at
/// any instance of any process (the trAcker paper's definition, docs/papers.md; see [`SlotLog`]).
/// Across processes the stamps are converted into process 0's time by the run's clock alignment
/// (the Cloudprofiler paper's), each sample within [`NOTIFICATION_LATENCY_ANY_BOUND`] of the truth.
pub const NOTIFICATION_LATENCY_ANY: &str = "notification_latency_any_ns";

/// Histogram of a sink's notification latency in ns measured from the first moment a frontier
/// could pass the substream: the last arrival at any instance of it *or of an earlier one*
/// (a frontier passes a slot only with every slot before it). Equal to
/// [`NOTIFICATION_LATENCY_ANY`] where slots arrive in order; see
/// [`crate::measure::slot_log::SlotLog::settle`].
pub const NOTIFICATION_LATENCY_FRONTIER: &str = "notification_latency_frontier_ns";

/// Counter: the largest error bound of a [`NOTIFICATION_LATENCY_ANY`] sample, ns (rounded up;
/// absent in a run of one process, whose stamps share one clock).
pub const NOTIFICATION_LATENCY_ANY_BOUND: &str = "notification_latency_any_bound_ns_max";

/// Counter: [`NOTIFICATION_LATENCY_ANY`] samples converted through the clock alignment.
pub const CLOCK_CONVERTED: &str = "clock_converted_samples";

/// Counter: converted samples that differ from the plain difference of the two stamps by more
/// than their bound. The plain difference is the truth when every process runs on one host
/// (they share `CLOCK_MONOTONIC_RAW`), so there it must stay 0; across hosts it is no check.
pub const CLOCK_BOUND_EXCEEDED: &str = "clock_bound_exceeded_same_host";

/// Counter: samples of a multi-process run left unconverted (a process without a clock map).
pub const CLOCK_UNCONVERTED: &str = "clock_unconverted_samples";

/// How a sink's [`NOTIFICATION_LATENCY_ANY`] samples went through the clock alignment (runs of
/// several processes; docs/measurement.md, "The runtime's own stamps, converted").
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockCheck {
    /// The largest error bound of a sample, us.
    pub bound_us_max: f64,
    /// Samples converted.
    pub converted: u64,
    /// Samples left as the plain difference (a process without a clock map).
    pub unconverted: u64,
    /// Converted samples off the plain difference by more than their bound: must be 0 when every
    /// process runs on one host.
    pub bound_exceeded_same_host: u64,
}

/// The counters of the slot log's clock tally.
const SLOT_COUNTERS: TallyCounters<'static> = TallyCounters {
    bound: NOTIFICATION_LATENCY_ANY_BOUND,
    converted: CLOCK_CONVERTED,
    exceeded: CLOCK_BOUND_EXCEEDED,
    unconverted: CLOCK_UNCONVERTED,
};

/// The counter names of span measure `name`'s clock tally: `name.bound_ns_max`,
/// `name.clock_converted_samples`, `name.clock_bound_exceeded_same_host`,
/// `name.clock_unconverted_samples`.
struct SpanCounters([String; 4]);

fn span_counters(name: &str) -> SpanCounters {
    SpanCounters([
        format!("{name}.bound_ns_max"),
        format!("{name}.{CLOCK_CONVERTED}"),
        format!("{name}.{CLOCK_BOUND_EXCEEDED}"),
        format!("{name}.{CLOCK_UNCONVERTED}"),
    ])
}

impl SpanCounters {
    fn as_names(&self) -> TallyCounters<'_> {
        TallyCounters {
            bound: &self.0[0],
            converted: &self.0[1],
            exceeded: &self.0[2],
            unconverted: &self.0[3],
        }
    }
}

/// Counter of slot records a sink could not keep for [`NOTIFICATION_LATENCY_ANY`].
pub const SLOT_LOG_DROPPED: &str = "slot_log_dropped";

impl VertexStats {
    /// Zeroed counters for vertex `name`.
    pub fn new(name: &str) -> Self {
        VertexStats {
            name: name.to_string(),
            elements_in: 0,
            batches_in: 0,
            elements_out: 0,
            below_frontier: 0,
            // 3 significant digits over 1 ns .. 1 hour.
            notification_latency_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
            measured: MeasuredSpan::default(),
            counters: BTreeMap::new(),
            histograms: BTreeMap::new(),
            slot_log: SlotLog::default(),
            spans: BTreeMap::new(),
        }
    }

    /// Moves `o`'s unsettled logs (slot log, span logs) into this vertex's; `o`'s end stamps
    /// were taken by `process` when it is another process's (`None`: this one's, untagged).
    pub fn take_logs(&mut self, o: &mut VertexStats, process: Option<usize>) {
        if let Some(p) = process {
            o.slot_log.tag(p);
            o.spans.values_mut().for_each(|l| l.tag(p));
        }
        self.slot_log.append(&mut o.slot_log);
        for (name, log) in &mut o.spans {
            self.span_mut(name).append(log);
        }
    }

    /// The span log of measure `name`, created empty on first use.
    pub fn span_mut(&mut self, name: &str) -> &mut SpanLog {
        if !self.spans.contains_key(name) {
            self.spans.insert(name.to_string(), SpanLog::default());
        }
        self.spans.get_mut(name).expect("inserted above")
    }

    /// Settles every unsettled log: the slot log ([`VertexStats::settle_slot_log`]) and each
    /// span log `name` into histogram `name` (ns), with its clock counters `name.*`
    /// ([`VertexStats::span_check`]) when `clock` is given and `name.dropped` for records not
    /// kept. Call on process 0 once every process's logs are in.
    pub fn settle_logs(&mut self, clock: Option<&xorflow_measure::clock::Alignment>) {
        self.settle_slot_log(clock);
        for (name, mut log) in std::mem::take(&mut self.spans) {
            let mut tally = ClockTally::default();
            let h = self.histogram_mut(&name);
            log.settle(clock, |s| {
                h.saturating_record(s.ns.max(1));
                tally.add(&s, clock);
            });
            if clock.is_some() {
                tally.write(self, span_counters(&name).as_names());
            }
            if log.dropped > 0 {
                self.count(&format!("{name}.dropped"), log.dropped);
            }
        }
    }

    /// How span measure `name` went through the clock alignment (None in a run of one process).
    pub fn span_check(&self, name: &str) -> Option<ClockCheck> {
        ClockTally::read(self, span_counters(name).as_names())
    }

    /// Turns the per-slot records of all instances merged so far into the
    /// [`NOTIFICATION_LATENCY_ANY`] and [`NOTIFICATION_LATENCY_FRONTIER`] histograms (and [`SLOT_LOG_DROPPED`]); call once every instance
    /// of the process is merged. `clock`: the run's alignment (runs of several processes), which
    /// converts the samples and fills the clock counters ([`NOTIFICATION_LATENCY_ANY_BOUND`],
    /// [`CLOCK_CONVERTED`], [`CLOCK_BOUND_EXCEEDED`], [`CLOCK_UNCONVERTED`]).
    pub fn settle_slot_log(&mut self, clock: Option<&xorflow_measure::clock::Alignment>) {
        if self.slot_log.records.is_empty() && self.slot_log.dropped == 0 {
            return;
        }
        let mut log = std::mem::take(&mut self.slot_log);
        let mut tally = ClockTally::default();
        let mut any = histogram();
        let mut frontier = histogram();
        log.settle(clock, |s, f| {
            any.saturating_record(s.ns.max(1));
            frontier.saturating_record(f.ns.max(1));
            tally.add(&s, clock);
        });
        // Equal bounds (`histogram()`), so adding cannot fail.
        let equal = "histograms of equal bounds add";
        self.histogram_mut(NOTIFICATION_LATENCY_ANY)
            .add(&any)
            .expect(equal);
        self.histogram_mut(NOTIFICATION_LATENCY_FRONTIER)
            .add(&frontier)
            .expect(equal);
        if clock.is_some() {
            tally.write(self, SLOT_COUNTERS);
        }
        if log.dropped > 0 {
            self.count(SLOT_LOG_DROPPED, log.dropped);
        }
    }

    /// The clock counters [`VertexStats::settle_slot_log`] left, if it had an alignment.
    pub fn clock_check(&self) -> Option<ClockCheck> {
        ClockTally::read(self, SLOT_COUNTERS)
    }

    /// Adds `n` to counter `name`.
    pub fn count(&mut self, name: &str, n: u64) {
        // Look up before inserting: no String is made for a counter that exists.
        match self.counters.get_mut(name) {
            Some(c) => *c += n,
            None => {
                self.counters.insert(name.to_string(), n);
            }
        }
    }

    /// Counter `name` (0 when never counted).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// Histogram `name`, created empty on first use.
    pub fn histogram_mut(&mut self, name: &str) -> &mut Histogram<u64> {
        if !self.histograms.contains_key(name) {
            self.histograms.insert(name.to_string(), histogram());
        }
        self.histograms.get_mut(name).expect("inserted above")
    }

    /// Records one notification latency sample (ns), clamped to the histogram's range.
    #[inline]
    pub fn record_latency(&mut self, ns: u64) {
        self.record_latency_n(ns, 1);
    }

    /// Records `count` equal latency samples (ns).
    #[inline]
    pub fn record_latency_n(&mut self, ns: u64, count: u64) {
        self.notification_latency_ns
            .saturating_record_n(ns.max(1), count);
    }

    /// Adds another instance's counters.
    pub fn merge(&mut self, o: &VertexStats) {
        self.elements_in += o.elements_in;
        self.batches_in += o.batches_in;
        self.elements_out += o.elements_out;
        self.below_frontier += o.below_frontier;
        self.notification_latency_ns
            .add(&o.notification_latency_ns)
            .expect("histograms with equal bounds");
        self.measured.merge(&o.measured);
        for (k, v) in &o.counters {
            *self.counters.entry(k.clone()).or_default() += v;
        }
        for (k, h) in &o.histograms {
            // Both come from `histogram()`; a value beyond its range was saturated when recorded.
            let _ = self.histogram_mut(k).add(h);
        }
    }

    /// The wire form; with `logs`, the unsettled slot and span logs go along (see
    /// [`VertexStatsWire`]).
    pub fn to_wire(&self, logs: bool) -> VertexStatsWire {
        let latency_v2 = to_v2(&self.notification_latency_ns);
        let (log, cut) = if logs {
            self.slot_log.encode()
        } else {
            (String::new(), 0)
        };
        VertexStatsWire {
            slot_log: log,
            slot_log_dropped: self.slot_log.dropped + cut,
            spans: (self.spans.iter())
                .filter(|_| logs)
                .map(|(k, l)| (k.clone(), (l.encode(), l.dropped)))
                .collect(),
            name: self.name.clone(),
            elements_in: self.elements_in,
            batches_in: self.batches_in,
            elements_out: self.elements_out,
            below_frontier: self.below_frontier,
            latency_v2,
            measured: self.measured,
            counters: self.counters.clone(),
            histograms_v2: self
                .histograms
                .iter()
                .map(|(k, h)| (k.clone(), to_v2(h)))
                .collect(),
        }
    }

    /// Back from the wire form (an undecodable histogram comes back empty, an undecodable slot
    /// log as dropped records).
    pub fn from_wire(w: &VertexStatsWire) -> Self {
        let mut s = VertexStats::new(&w.name);
        s.slot_log = SlotLog::decode(&w.slot_log, w.slot_log_dropped).unwrap_or_else(|e| {
            tracing::warn!("vertex {}: {e}", w.name);
            SlotLog {
                records: Vec::new(),
                dropped: w.slot_log_dropped + 1,
            }
        });
        for (k, (text, dropped)) in &w.spans {
            let log = SpanLog::decode(text, *dropped).unwrap_or_else(|e| {
                tracing::warn!("vertex {}, {k}: {e}", w.name);
                SpanLog {
                    records: Vec::new(),
                    dropped: dropped + 1,
                }
            });
            s.spans.insert(k.clone(), log);
        }
        s.elements_in = w.elements_in;
        s.batches_in = w.batches_in;
        s.elements_out = w.elements_out;
        s.below_frontier = w.below_frontier;
        if let Some(h) = from_v2(&w.latency_v2) {
            let _ = s.notification_latency_ns.add(&h);
        }
        s.measured = w.measured;
        s.counters = w.counters.clone();
        for (k, b) in &w.histograms_v2 {
            if let Some(h) = from_v2(b) {
                let _ = s.histogram_mut(k).add(&h);
            }
        }
        s
    }

    /// Quantile `q` (0..=1) of histogram `name` in microseconds, assuming it holds ns; `None`
    /// when it is missing or empty.
    pub fn histogram_us(&self, name: &str, q: f64) -> Option<f64> {
        let h = self.histograms.get(name)?;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }

    /// Latency quantile in microseconds (`q` in 0..=1), or `None` without samples.
    pub fn latency_us(&self, q: f64) -> Option<f64> {
        let h = &self.notification_latency_ns;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_spans_counters_and_histograms_merge_and_survive_the_wire() {
        let mut a = VertexStats::new("v");
        a.measured.record(0, 5); // nothing measured: no effect
        a.measured.record(10, 1_000);
        a.measured.record(1, 3_000);
        a.count("buffered", 4);
        a.histogram_mut("lat").record(100).unwrap();
        let mut b = VertexStats::new("v");
        b.measured.record(5, 500);
        b.count("buffered", 1);
        b.count("other", 2);
        b.histogram_mut("lat").record(300).unwrap();
        a.merge(&VertexStats::from_wire(&b.to_wire(false)));
        assert_eq!(
            a.measured,
            MeasuredSpan {
                elements: 16,
                first_ns: 500,
                last_ns: 3_000
            }
        );
        // 15 elements after the first over 2.5 us.
        assert_eq!(a.measured.rate(), Some(15.0 * 1e9 / 2_500.0));
        assert_eq!(
            (a.counter("buffered"), a.counter("other"), a.counter("none")),
            (5, 2, 0)
        );
        assert_eq!(a.histograms["lat"].len(), 2);
        assert_eq!(a.histogram_us("lat", 1.0), Some(0.3));
        assert_eq!(MeasuredSpan::default().rate(), None);
        let mut empty = MeasuredSpan::default();
        empty.merge(&MeasuredSpan::default());
        assert_eq!(empty, MeasuredSpan::default());
    }

    fn record(
        slot: u64,
        last_arrival_ns: u64,
        notified_ns: u64,
    ) -> crate::measure::slot_log::SlotRecord {
        crate::measure::slot_log::SlotRecord {
            slot,
            last_arrival_ns,
            notified_ns,
            process: 0,
        }
    }

    #[test]
    fn another_process_slot_log_travels_so_the_any_measure_spans_processes() {
        // Process 1's sink saw slot 7's last element at 900, process 0's at 500; both were
        // notified at 1_000. From the last arrival anywhere: 100 for both.
        let mut p0 = VertexStats::new("sink");
        p0.slot_log.records.push(record(7, 500, 1_000));
        let mut p1 = VertexStats::new("sink");
        p1.slot_log.records.push(record(7, 900, 1_000));
        p1.slot_log.dropped = 2;
        // Not shipped: nothing arrives.
        assert!(VertexStats::from_wire(&p1.to_wire(false))
            .slot_log
            .records
            .is_empty());
        let mut arrived = VertexStats::from_wire(&p1.to_wire(true));
        assert_eq!(arrived.slot_log.records, p1.slot_log.records);
        assert_eq!(arrived.slot_log.dropped, 2);
        p0.slot_log.append(&mut arrived.slot_log);
        p0.merge(&arrived);
        p0.settle_slot_log(None);
        let any = &p0.histograms[NOTIFICATION_LATENCY_ANY];
        assert_eq!((any.len(), any.min(), any.max()), (2, 100, 100));
        assert_eq!(p0.counter(SLOT_LOG_DROPPED), 2);
    }

    #[test]
    fn a_shipped_slot_log_is_capped_and_a_damaged_one_refused() {
        let mut v = VertexStats::new("sink");
        let n = SlotLog::SHIP_CAP + 3;
        v.slot_log.records = (0..n as u64).map(|i| record(i, i, i + 1)).collect();
        let (text, cut) = v.slot_log.encode();
        assert_eq!(cut, 3);
        let back = SlotLog::decode(&text, cut).unwrap();
        assert_eq!(back.records.len(), SlotLog::SHIP_CAP);
        assert_eq!(back.records[5], record(5, 5, 6));
        assert!(SlotLog::decode("not base64!", 0).is_err());
        assert!(SlotLog::decode("AAAA", 0).is_err(), "3 bytes are no record");
    }

    #[test]
    fn span_logs_travel_with_another_process_report_and_settle_into_a_histogram() {
        let mut p0 = VertexStats::new("sink");
        p0.span_mut("lat").push((1, 1_000), 1_400);
        let mut p1 = VertexStats::new("sink");
        p1.span_mut("lat").push((0, 2_000), 2_100);
        p1.span_mut("lat").dropped = 3;
        assert!(VertexStats::from_wire(&p1.to_wire(false)).spans.is_empty());
        let mut arrived = VertexStats::from_wire(&p1.to_wire(true));
        let mut merged = VertexStats::new("sink");
        merged.take_logs(&mut p0, None);
        merged.take_logs(&mut arrived, Some(1));
        let log = &merged.spans["lat"];
        let ends: Vec<u32> = log.records.iter().map(|r| r.end_process).collect();
        assert_eq!((ends, log.dropped), (vec![0, 1], 3));
        merged.settle_logs(None);
        let h = &merged.histograms["lat"];
        assert_eq!((h.len(), h.min(), h.max()), (2, 100, 400));
        assert_eq!(merged.counter("lat.dropped"), 3);
        // Without an alignment there is no clock check.
        assert!(merged.span_check("lat").is_none());
        assert!(merged.spans.is_empty());
    }
}
