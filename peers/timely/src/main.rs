//! Seed 000's chain workload on timely dataflow, measured the way `xorflow bench chain` measures
//! itself, so `xorflow bench peers` can put the two side by side.
//!
//! Graph: an input, `K` pass-through stages each fed through an exchange (hash of element id and
//! stage, the counterpart of xorflow's per-stage re-partition), and a sink. Worker `i` of `P`
//! emits ids `i, i + P, ...` on an absolute schedule (id `n` is due `n / rate` seconds after the
//! start; a late worker catches up instead of drifting). With `--granularity W` the timestamp of
//! id `n` is `n / W`, so a timestamp is a substream of `W` consecutive elements; the input advances
//! to the next id's timestamp right after each send, and the sink learns that a substream is
//! complete when its input frontier passes the timestamp (timely's pointstamp progress tracking).
//! With `--granularity 0` every element has timestamp 0 ("no tracking": the frontier only moves
//! at the end).
//!
//! Measured, after the first `--warmup` ids:
//! - notification latency: per sink and timestamp, the arrival of its last element to the sink
//!   observing the frontier pass it, us; and the same from the timestamp's last arrival at *any*
//!   sink (seed 000's definition, as `xorflow bench chain` reports it too);
//! - element latency: due time at the input to arrival at the sink, us (no coordinated omission);
//! - elements/s: all emitted elements over the time from the start to every worker finishing.
//!
//! The input is flushed after every batch of sends (as xorflow's source sends partial batches):
//! otherwise timely buffers a timestamp's elements until the timestamp advances or its buffer fills,
//! which trades element latency for fewer, larger messages.
//!
//! In-flight elements are bounded (`--max-in-flight`): timely has no backpressure of its own, and an
//! unlimited input would otherwise only measure how fast memory fills.

use clap::Parser;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

/// Command-line options (the names of `xorflow bench chain` where they mean the same).
#[derive(Parser, Debug, Clone)]
#[command(about = "Seed 000's chain workload on timely dataflow")]
struct Args {
    /// Worker threads P (one process).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Pass-through stages K, each behind an exchange.
    #[arg(long, default_value_t = 10)]
    stages: usize,
    /// Elements per timestamp W (0: all elements at timestamp 0, no completeness tracking).
    #[arg(long, default_value_t = 1)]
    granularity: u64,
    /// Elements in total over all workers.
    #[arg(long, default_value_t = 1_000_000)]
    elements: u64,
    /// Total rate over all workers, elements/s (0: as fast as the bound on in-flight elements
    /// allows).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// The first ids, processed but not measured.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Most elements emitted but not yet at a sink, over all workers.
    #[arg(long, default_value_t = 131_072)]
    max_in_flight: u64,
    /// Print one JSON object instead of a line of text.
    #[arg(long)]
    json: bool,
}

/// What one run measured (field names as in `xorflow bench chain --json`).
#[derive(Serialize)]
struct Output {
    engine: &'static str,
    version: &'static str,
    stages: usize,
    workers: usize,
    granularity: u64,
    tracking: &'static str,
    elements: u64,
    warmup: u64,
    rate: f64,
    max_in_flight: u64,
    /// Measured ids over the span from the first to the last measured emission, elements/s.
    achieved_rate: f64,
    elapsed_s: f64,
    elements_per_s: f64,
    latency_p50_us: Option<f64>,
    latency_p95_us: Option<f64>,
    latency_p99_us: Option<f64>,
    notifications: u64,
    /// Notification latency from the timestamp's last arrival at any sink.
    notification_latency_any: Percentiles,
    element_latency: Percentiles,
}

#[derive(Serialize)]
struct Percentiles {
    count: u64,
    p50_us: Option<f64>,
    p90_us: Option<f64>,
    p95_us: Option<f64>,
    p99_us: Option<f64>,
    max_us: Option<f64>,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    let q = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3);
    Percentiles {
        count: h.len(),
        p50_us: q(0.5),
        p90_us: q(0.9),
        p95_us: q(0.95),
        p99_us: q(0.99),
        max_us: q(1.0),
    }
}

/// One worker's measurements.
struct WorkerResult {
    notification_ns: Histogram<u64>,
    /// Per notified timestamp: (timestamp, last arrival here, notified), ns since the start.
    slot_log: Vec<(u64, u64, u64)>,
    element_ns: Histogram<u64>,
    /// First and last measured emission, ns since the start.
    measured_span: Option<(u64, u64)>,
    measured_emitted: u64,
    finished_ns: u64,
}

fn stage_key(id: u64, stage: u64) -> u64 {
    // A cheap 64-bit mix (splitmix64's finalizer) so consecutive ids spread over workers.
    let mut z = id ^ stage.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.workers >= 1, "--workers must be at least 1");
    anyhow::ensure!(args.elements >= 1, "--elements must be at least 1");
    anyhow::ensure!(
        args.rate >= 0.0 && args.rate.is_finite(),
        "--rate must be a finite number >= 0, got {}",
        args.rate
    );
    anyhow::ensure!(
        args.max_in_flight >= 1,
        "--max-in-flight must be at least 1"
    );
    let a = args.clone();
    let emitted = Arc::new(AtomicU64::new(0));
    let arrived = Arc::new(AtomicU64::new(0));
    let arrived_total = arrived.clone();
    let start: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let guards = timely::execute(timely::Config::process(a.workers), move |worker| {
        let index = worker.index() as u64;
        let peers = worker.peers() as u64;
        let a = a.clone();
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let mut notification_ns = hist();
        let mut element_ns = hist();
        let notif = Arc::new(std::sync::Mutex::new(hist()));
        let elem = Arc::new(std::sync::Mutex::new(hist()));
        let slot_log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let time_of = {
            let g = a.granularity;
            move |id: u64| id.checked_div(g).unwrap_or(0)
        };
        {
            let (notif, elem, arrived, start, slot_log) = (
                notif.clone(),
                elem.clone(),
                arrived.clone(),
                start.clone(),
                slot_log.clone(),
            );
            let warmup = a.warmup;
            let g = a.granularity;
            worker.dataflow::<u64, _, _>(|scope| {
                // The input's own exchange would hold a flushed batch until the timestamp
                // advances (it flushes its per-worker buffers only then); an operator's output
                // buffers are flushed when it yields, so a pipeline hop makes `input.flush()` work.
                let mut stream = scope
                    .input_from(&mut input)
                    .container::<Vec<(u64, u64)>>()
                    .unary(Pipeline, "feed", |_cap, _info| {
                        move |input, output| {
                            input.for_each_time(|time, data| {
                                output.session(&time).give_containers(data);
                            });
                        }
                    });
                for k in 0..a.stages as u64 {
                    stream = stream.unary(
                        Exchange::new(move |x: &(u64, u64)| stage_key(x.0, k)),
                        "stage",
                        |_cap, _info| {
                            move |input, output| {
                                input.for_each_time(|time, data| {
                                    output.session(&time).give_containers(data);
                                });
                            }
                        },
                    );
                }
                stream = stream.probe_with(&probe);
                // Per timestamp: the arrival of its last element here, ns since the start.
                let mut last: BTreeMap<u64, u64> = BTreeMap::new();
                stream.sink(Pipeline, "sink", move |(input, frontier)| {
                    let t0 = *start.get_or_init(Instant::now);
                    let mut n = 0u64;
                    input.for_each_time(|time, data| {
                        let now = t0.elapsed().as_nanos() as u64;
                        let mut e = elem.lock().expect("histogram lock");
                        for c in data {
                            for &(id, due) in c.iter() {
                                n += 1;
                                if id >= warmup {
                                    let _ = e.record(now.saturating_sub(due).max(1));
                                }
                            }
                        }
                        if g > 0 && (*time.time() + 1) * g > warmup {
                            last.insert(*time.time(), now);
                        }
                    });
                    if n > 0 {
                        arrived.fetch_add(n, Ordering::Relaxed);
                    }
                    if !last.is_empty() {
                        let now = t0.elapsed().as_nanos() as u64;
                        let mut h = notif.lock().expect("histogram lock");
                        let mut log = slot_log.lock().expect("log lock");
                        while let Some((&t, &at)) = last.first_key_value() {
                            if frontier.less_equal(&t) {
                                break;
                            }
                            let _ = h.record(now.saturating_sub(at).max(1));
                            log.push((t, at, now));
                            last.pop_first();
                        }
                    }
                });
            });
        }
        // Every worker has built the dataflow; the first one here starts the clock for all.
        timely::synchronization::Barrier::new(worker).wait();
        let t0 = *start.get_or_init(Instant::now);
        let ns = |t0: Instant| t0.elapsed().as_nanos() as u64;
        let mut next = index;
        let mut span: Option<(u64, u64)> = None;
        let mut measured_emitted = 0u64;
        let ns_per_element = if a.rate > 0.0 { 1e9 / a.rate } else { 0.0 };
        input.advance_to(time_of(next));
        while next < a.elements {
            let now = ns(t0);
            let mut batch = 0u64;
            while next < a.elements && batch < 1024 {
                let due = if a.rate > 0.0 {
                    (next as f64 * ns_per_element) as u64
                } else {
                    now
                };
                if due > now {
                    break;
                }
                let in_flight = emitted
                    .load(Ordering::Relaxed)
                    .saturating_sub(arrived.load(Ordering::Relaxed));
                if in_flight + batch >= a.max_in_flight {
                    break;
                }
                input.send((next, due));
                if next >= a.warmup {
                    measured_emitted += 1;
                    span = Some(span.map_or((now, now), |(s, _)| (s, now)));
                }
                next += peers;
                batch += 1;
                let t = time_of(next);
                if t > *input.time() {
                    input.advance_to(t);
                }
            }
            // Send what this batch buffered now, not when the timestamp advances.
            input.flush();
            emitted.fetch_add(batch, Ordering::Relaxed);
            if next >= a.elements {
                break;
            }
            let wait = if a.rate > 0.0 {
                let due = (next as f64 * ns_per_element) as u64;
                Some(Duration::from_nanos(due.saturating_sub(ns(t0))))
            } else {
                Some(Duration::ZERO)
            };
            worker.step_or_park(wait);
        }
        input.close();
        while !probe.done() {
            worker.step_or_park(Some(Duration::from_millis(1)));
        }
        // Drain the sink's last notifications.
        while worker.step() {}
        notification_ns
            .add(&*notif.lock().expect("lock"))
            .expect("same bounds");
        element_ns
            .add(&*elem.lock().expect("lock"))
            .expect("same bounds");
        let slot_log = std::mem::take(&mut *slot_log.lock().expect("lock"));
        WorkerResult {
            notification_ns,
            slot_log,
            element_ns,
            measured_span: span,
            measured_emitted,
            finished_ns: ns(t0),
        }
    })
    .map_err(|e| anyhow::anyhow!("timely failed to start: {e}"))?;
    let mut notification = hist();
    let mut element = hist();
    let mut slot_log = Vec::new();
    let (mut first, mut last_emit, mut measured, mut finished) = (u64::MAX, 0u64, 0u64, 0u64);
    for r in guards.join() {
        let r = r.map_err(|e| anyhow::anyhow!("a timely worker failed: {e}"))?;
        notification.add(&r.notification_ns).expect("same bounds");
        element.add(&r.element_ns).expect("same bounds");
        slot_log.extend(r.slot_log);
        if let Some((s, e)) = r.measured_span {
            first = first.min(s);
            last_emit = last_emit.max(e);
        }
        measured += r.measured_emitted;
        finished = finished.max(r.finished_ns);
    }
    let got = arrived_total.load(Ordering::Relaxed);
    anyhow::ensure!(
        got == args.elements,
        "{got} of {} elements arrived at the sinks",
        args.elements
    );
    let elapsed_s = finished as f64 / 1e9;
    // From the timestamp's last arrival at any sink: group the workers' records by timestamp.
    let mut any = hist();
    slot_log.sort_by_key(|r| r.0);
    for group in slot_log.chunk_by(|a, b| a.0 == b.0) {
        let last = group.iter().map(|r| r.1).max().unwrap_or(0);
        for r in group {
            let _ = any.record(r.2.saturating_sub(last).max(1));
        }
    }
    let span_s = last_emit.saturating_sub(first) as f64 / 1e9;
    let q =
        |h: &Histogram<u64>, q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3);
    let out = Output {
        engine: "timely",
        version: "0.31.0",
        stages: args.stages,
        workers: args.workers,
        granularity: args.granularity,
        tracking: if args.granularity == 0 {
            "none"
        } else {
            "frontier"
        },
        elements: args.elements,
        warmup: args.warmup,
        rate: args.rate,
        max_in_flight: args.max_in_flight,
        achieved_rate: if span_s > 0.0 {
            measured.saturating_sub(1) as f64 / span_s
        } else {
            0.0
        },
        elapsed_s,
        elements_per_s: args.elements as f64 / elapsed_s.max(1e-9),
        latency_p50_us: q(&notification, 0.5),
        latency_p95_us: q(&notification, 0.95),
        latency_p99_us: q(&notification, 0.99),
        notifications: notification.len(),
        notification_latency_any: percentiles(&any),
        element_latency: percentiles(&element),
    };
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!(
            "timely: K={} P={} W={} {} elements in {:.3} s = {:.0} elements/s; notification p50 {:?} us p99 {:?} us",
            out.stages,
            out.workers,
            out.granularity,
            out.elements,
            out.elapsed_s,
            out.elements_per_s,
            out.latency_p50_us,
            out.latency_p99_us
        );
    }
    Ok(())
}
