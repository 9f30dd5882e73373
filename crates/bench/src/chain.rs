//! Seed 000's chain workload: a source, K pass-through stages each preceded by a round-robin
//! re-partition, and a sink that measures notification latency.
//!
//! Element times are sequence numbers: source instance `k` of `n` emits times `k, k + n, k + 2n, ...`
//! (so the union over sources is `0, 1, 2, ...`) and heartbeats the next time after every poll. With
//! granularity `g` a substream is `g` consecutive sequence numbers.

use crate::generator::Schedule;
use serde::Serialize;
use xorflow_runtime::{
    Dataflow, Element, RunError, RuntimeConfig, Sink, Source, SourceOutput, SourcePoll,
};

/// Parameters of one chain run.
#[derive(Clone, Debug)]
pub struct ChainParams {
    /// Pass-through stages K.
    pub stages: usize,
    /// Elements in total over all sources.
    pub elements: u64,
    /// Total rate over all sources, elements/s; 0 = as fast as possible.
    pub rate: f64,
    /// Runtime configuration (workers, granularity, tracking, batching).
    pub runtime: RuntimeConfig,
}

/// Results of one chain run.
#[derive(Clone, Debug, Serialize)]
pub struct ChainResult {
    /// K.
    pub stages: usize,
    /// Worker threads per process.
    pub workers: usize,
    /// Processes (each with `workers` worker threads, except the dedicated tracker processes).
    pub processes: usize,
    /// Dedicated tracker processes (no workers; they host the tracker shards).
    pub tracker_processes: usize,
    /// Tracker shards.
    pub tracker_shards: usize,
    /// Local acker flush count (0: unbatched).
    pub ack_flush_count: usize,
    /// Self-cancelling acks per real ack / 2.
    pub ack_multiplier: usize,
    /// Granularity g.
    pub granularity: u64,
    /// "tracker" or "none".
    pub tracking: String,
    /// Elements emitted.
    pub elements: u64,
    /// Requested rate, elements/s (0: unlimited).
    pub rate: f64,
    /// The sink measured notification latency per slot.
    pub latency_probe: bool,
    /// Wall-clock seconds of the run.
    pub elapsed_s: f64,
    /// Elements/s achieved (emitted / elapsed).
    pub elements_per_s: f64,
    /// Notification latency at the sink, microseconds (None without tracking).
    pub latency_p50_us: Option<f64>,
    /// 99th percentile of the same.
    pub latency_p99_us: Option<f64>,
    /// Service messages (all kinds but data) per 1000 elements.
    pub service_messages_per_1000: f64,
    /// Messages and bytes by kind.
    pub traffic: serde_json::Value,
    /// Messages and bytes by kind sent by each process, in process order.
    pub traffic_per_process: Vec<serde_json::Value>,
    /// Seconds spent inside the tracker (None without tracking).
    pub tracker_busy_s: Option<f64>,
}

struct ChainSource {
    next: u64,
    step: u64,
    remaining: u64,
    emitted: u64,
    schedule: Option<Schedule>,
}

impl Source<u64> for ChainSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        if self.remaining == 0 {
            return SourcePoll::Done;
        }
        let schedule = *self
            .schedule
            .get_or_insert_with(|| Schedule::new(out.now_ns(), 0.0));
        let due = schedule.due_by(out.now_ns()).saturating_sub(self.emitted);
        if due == 0 {
            return SourcePoll::WaitUntil(schedule.due_ns(self.emitted));
        }
        let n = due.min(out.budget() as u64).min(self.remaining);
        for _ in 0..n {
            out.emit(self.next, self.next);
            self.next += self.step;
        }
        self.remaining -= n;
        self.emitted += n;
        out.heartbeat(self.next);
        if self.remaining == 0 {
            SourcePoll::Done
        } else {
            SourcePoll::Ready
        }
    }
}

struct CountSink;

impl Sink<u64> for CountSink {
    fn write(&mut self, _batch: Vec<Element<u64>>) -> Result<(), String> {
        Ok(())
    }
}

/// Runs one chain.
///
/// # Errors
/// Whatever the runtime reports (invalid configuration, failed worker).
pub fn run(p: &ChainParams) -> Result<ChainResult, RunError> {
    let mut runtime = p.runtime.clone();
    runtime.job_key = format!("chain elements={} rate={}", p.elements, p.rate);
    let df = Dataflow::new(runtime)?;
    let sources = p.runtime.workers * p.runtime.cluster.launch_processes();
    let per_source = p.elements / sources as u64;
    let extra = p.elements % sources as u64;
    let rate = p.rate / sources as f64;
    let mut s = df.source("source", sources, move |k| ChainSource {
        next: k as u64,
        step: sources as u64,
        remaining: per_source + u64::from((k as u64) < extra),
        emitted: 0,
        schedule: (rate > 0.0).then(|| Schedule::new(xorflow_runtime::clock::now_ns(), rate)),
    });
    for i in 0..p.stages {
        s = s.rebalance().map(&format!("stage-{i}"), |x| x);
    }
    s.sink("sink", |_| CountSink);
    let report = df.run()?;
    let sink = report.vertex("sink").expect("sink vertex");
    let n = report.source_elements();
    let service = report.traffic.service().messages;
    Ok(ChainResult {
        stages: p.stages,
        workers: p.runtime.workers,
        granularity: p.runtime.granularity,
        tracking: p.runtime.tracking.name().into(),
        processes: report.processes,
        tracker_processes: report.tracker_processes,
        tracker_shards: report.tracker_shards,
        ack_flush_count: p.runtime.ack_flush_count,
        ack_multiplier: p.runtime.ack_multiplier,
        elements: n,
        rate: p.rate,
        latency_probe: p.runtime.latency_probe,
        elapsed_s: report.elapsed.as_secs_f64(),
        elements_per_s: report.elements_per_s(),
        latency_p50_us: sink.latency_us(0.5),
        latency_p99_us: sink.latency_us(0.99),
        service_messages_per_1000: service as f64 * 1000.0 / n.max(1) as f64,
        traffic: report.traffic.to_json(),
        traffic_per_process: report
            .traffic_per_process()
            .iter()
            .map(|t| t.to_json())
            .collect(),
        tracker_busy_s: report.tracker.as_ref().map(|t| t.busy_s),
    })
}

/// One line of text for a result.
pub fn describe(r: &ChainResult) -> String {
    let lat = match (r.latency_p50_us, r.latency_p99_us) {
        (Some(a), Some(b)) => format!("notification latency p50 {a:.1} us p99 {b:.1} us"),
        _ => "notification latency n/a".into(),
    };
    format!(
        "chain K={} N={} P={} g={} tracking={}{}: {} elements in {:.3} s = {:.2} M elements/s; {lat}; \
         {:.3} service messages per 1000 elements ({})",
        r.stages,
        r.processes,
        r.workers,
        r.granularity,
        r.tracking,
        if r.tracking == "tracker" {
            format!(
                " shards={}{}{}",
                r.tracker_shards,
                if r.tracker_processes > 0 {
                    format!(" in {} tracker processes", r.tracker_processes)
                } else {
                    String::new()
                },
                if r.ack_flush_count == 0 { " unbatched" } else { "" }
            )
        } else {
            String::new()
        },
        r.elements,
        r.elapsed_s,
        r.elements_per_s / 1e6,
        r.service_messages_per_1000,
        traffic_line(&r.traffic)
    )
}

/// `kind messages/bytes` for every service kind with traffic.
fn traffic_line(t: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    for k in [
        "ack",
        "heartbeat",
        "frontier",
        "marker",
        "end_of_stream",
        "control",
    ] {
        let m = t[k]["messages"].as_u64().unwrap_or(0);
        if m > 0 {
            parts.push(format!("{k} {m}/{}B", t[k]["bytes"].as_u64().unwrap_or(0)));
        }
    }
    if parts.is_empty() {
        "no service messages".into()
    } else {
        parts.join(", ")
    }
}
