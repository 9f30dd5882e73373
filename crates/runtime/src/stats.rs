//! Per-vertex counters and the notification-latency histogram.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// [`VertexStats`] as sent between processes (histogram in HdrHistogram's V2 encoding).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VertexStatsWire {
    name: String,
    elements_in: u64,
    batches_in: u64,
    elements_out: u64,
    below_frontier: u64,
    latency_v2: Vec<u8>,
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
}

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
        }
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
    }

    /// The wire form.
    pub fn to_wire(&self) -> VertexStatsWire {
        let mut latency_v2 = Vec::new();
        V2Serializer::new()
            .serialize(&self.notification_latency_ns, &mut latency_v2)
            .expect("serializing a histogram into memory");
        VertexStatsWire {
            name: self.name.clone(),
            elements_in: self.elements_in,
            batches_in: self.batches_in,
            elements_out: self.elements_out,
            below_frontier: self.below_frontier,
            latency_v2,
        }
    }

    /// Back from the wire form (an undecodable histogram comes back empty).
    pub fn from_wire(w: &VertexStatsWire) -> Self {
        let mut s = VertexStats::new(&w.name);
        s.elements_in = w.elements_in;
        s.batches_in = w.batches_in;
        s.elements_out = w.elements_out;
        s.below_frontier = w.below_frontier;
        if let Ok(h) = Deserializer::new().deserialize::<u64, _>(&mut &w.latency_v2[..]) {
            let _ = s.notification_latency_ns.add(&h);
        }
        s
    }

    /// Latency quantile in microseconds (`q` in 0..=1), or `None` without samples.
    pub fn latency_us(&self, q: f64) -> Option<f64> {
        let h = &self.notification_latency_ns;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }
}
