//! The trAcker paper's chain workload (docs/papers.md) on timely dataflow, measured the way
//! `xorflow-lab bench chain` measures itself, so `xorflow-lab bench peers` can put the two side by side.
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
//!   sink (the trAcker paper's definition, as `xorflow-lab bench chain` reports it too);
//! - element latency: due time at the input to arrival at the sink, us (no coordinated omission);
//!   and, with `--latency-by-second`, its p99 per second of the schedule (the ids due in it), what
//!   `xorflow-lab bench sustainable --workload chain` judges growth by;
//! - elements/s: all emitted elements over the time from the start to every worker finishing.
//!
//! Two ways to feed the input (`--feed`), one per mode measured, each as timely's own examples
//! and benchmarks do it for that mode:
//! - `paced` (latency runs): batches of at most 1,024 due elements, the input flushed after every
//!   batch (as xorflow's source sends partial batches: otherwise timely buffers a timestamp's
//!   elements until the timestamp advances or its buffer fills, which trades element latency for
//!   fewer, larger messages), in-flight elements bounded (`--max-in-flight`: timely has no
//!   backpressure of its own, and an unbounded paced input only measures how fast memory fills),
//!   idle workers parked until the next element is due;
//! - `open` (throughput runs): open loop, `--chunk` elements sent between two steps of the worker
//!   with no flush and no feed hop (the input's buffers ship when full or when the timestamp
//!   advances), nothing bounding what is in flight, the worker never parked: timely's examples
//!   feed their inputs so, and issue 51's independent harness measured timely so.
//!
//! `--processes N` runs N timely processes on this machine in timely's own TCP cluster mode
//! (`cluster.rs`), `--workers` threads each. Each process bounds what it has in flight to its share
//! of `--max-in-flight` (its own emissions against the arrivals at its own sinks: with the hashed
//! exchanges each sink receives from every process, so a process that falls behind holds the
//! others back too). Times are CLOCK_MONOTONIC (`clock.rs`), comparable across the processes.

mod clock;
mod cluster;
mod report;

use clap::Parser;
use clock::now_ns;
use report::Measured;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::CommunicationConfig;
use timely::WorkerConfig;

/// Command-line options (the names of `xorflow-lab bench chain` where they mean the same).
#[derive(Parser, Debug, Clone)]
#[command(about = "The trAcker paper's chain workload on timely dataflow")]
pub struct Args {
    /// Worker threads per process.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Timely processes on this machine, connected by timely's own TCP cluster mode.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Pass-through stages K, each behind an exchange.
    #[arg(long, default_value_t = 10)]
    pub stages: usize,
    /// Elements per timestamp W (0: all elements at timestamp 0, no completeness tracking).
    #[arg(long, default_value_t = 1)]
    pub granularity: u64,
    /// Elements in total over all workers.
    #[arg(long, default_value_t = 1_000_000)]
    pub elements: u64,
    /// Total rate over all workers, elements/s (0: as fast as the bound on in-flight elements
    /// allows).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// The first ids, processed but not measured.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Most elements emitted but not yet at a sink, over all workers (`--feed paced` only).
    #[arg(long, default_value_t = 131_072)]
    pub max_in_flight: u64,
    /// How the input is fed: `paced` for latency runs, `open` for throughput runs (module docs).
    #[arg(long, value_enum, default_value_t = Feed::Paced)]
    pub feed: Feed,
    /// Elements a worker sends between two steps with `--feed open`.
    #[arg(long, default_value_t = 16_384)]
    pub chunk: u64,
    /// Print one JSON object instead of a line of text.
    #[arg(long)]
    pub json: bool,
    /// Also record the element latency of each second of the schedule (a second histogram
    /// record per id, as `xorflow-lab bench chain --latency-by-second`).
    #[arg(long)]
    pub latency_by_second: bool,
    /// Set by `--processes N` for its copies: this copy's index.
    #[arg(long, hide = true, requires = "addresses")]
    pub process: Option<usize>,
    /// Set by `--processes N` for its copies: every process's address, comma-separated.
    #[arg(long, hide = true)]
    pub addresses: Option<String>,
    /// Set by `--processes N` for its copies: exit when stdin closes.
    #[arg(long, hide = true)]
    pub exit_with_stdin: bool,
}

/// How the input is fed (`--feed`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Feed {
    /// Due elements in batches of at most 1,024, flushed, in-flight bounded, idle workers parked.
    Paced,
    /// Open loop: `--chunk` elements between steps, no flush, nothing bounding what is in flight.
    Open,
}

fn stage_key(id: u64, stage: u64) -> u64 {
    // A cheap 64-bit mix (splitmix64's finalizer) so consecutive ids spread over workers.
    let mut z = id ^ stage.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn check(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.workers >= 1, "--workers must be at least 1");
    anyhow::ensure!(args.processes >= 1, "--processes must be at least 1");
    anyhow::ensure!(args.elements >= 1, "--elements must be at least 1");
    anyhow::ensure!(
        args.rate >= 0.0 && args.rate.is_finite(),
        "--rate must be a finite number >= 0, got {}",
        args.rate
    );
    anyhow::ensure!(args.chunk >= 1, "--chunk must be at least 1");
    anyhow::ensure!(
        args.max_in_flight >= args.processes as u64,
        "--max-in-flight must be at least the number of processes"
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    check(&args)?;
    if let Some(p) = args.process {
        // A copy started by `--processes N`: measure, print the report for the launcher.
        if args.exit_with_stdin {
            cluster::exit_with_stdin();
        }
        let addresses: Vec<String> = args
            .addresses
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::to_string)
            .collect();
        anyhow::ensure!(
            addresses.len() == args.processes && p < args.processes,
            "--process {p} with {} addresses for --processes {}",
            addresses.len(),
            args.processes
        );
        let comm = CommunicationConfig::Cluster {
            threads: args.workers,
            process: p,
            addresses,
            report: false,
            zerocopy: false,
        };
        let m = run_process(&args, comm)?;
        println!("{}", serde_json::to_string(&m.to_report())?);
        return Ok(());
    }
    let m = if args.processes > 1 {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        cluster::launch(&argv, args.processes)?
    } else {
        run_process(&args, CommunicationConfig::Process(args.workers))?
    };
    let out = report::output(&args, m)?;
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!(
            "timely: K={} P={}x{} W={} {} elements in {:.3} s = {:.0} elements/s; notification p50 {:?} us p99 {:?} us",
            out.stages,
            out.processes,
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

/// Runs this process's workers on `comm` and returns their measurements merged.
fn run_process(a: &Args, comm: CommunicationConfig) -> anyhow::Result<Measured> {
    let a = a.clone();
    // This process's share of the bound on elements in flight (none for an open feed).
    let open = a.feed == Feed::Open;
    let max_in_flight = if open {
        u64::MAX
    } else {
        a.max_in_flight / a.processes as u64
    };
    let emitted = Arc::new(AtomicU64::new(0));
    let arrived = Arc::new(AtomicU64::new(0));
    let arrived_total = arrived.clone();
    let start: Arc<OnceLock<u64>> = Arc::new(OnceLock::new());
    let config = timely::Config {
        communication: comm,
        worker: WorkerConfig::default(),
    };
    let guards = timely::execute(config, move |worker| {
        let index = worker.index() as u64;
        let peers = worker.peers() as u64;
        let a = a.clone();
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let notif = Arc::new(Mutex::new(report::hist()));
        let elem = Arc::new(Mutex::new(report::hist()));
        let by_second = Arc::new(Mutex::new(Vec::new()));
        let slot_log = Arc::new(Mutex::new(Vec::new()));
        let time_of = {
            let g = a.granularity;
            move |id: u64| id.checked_div(g).unwrap_or(0)
        };
        {
            let (notif, elem, arrived, slot_log, by_second, start) = (
                notif.clone(),
                elem.clone(),
                arrived.clone(),
                slot_log.clone(),
                by_second.clone(),
                start.clone(),
            );
            let warmup = a.warmup;
            let g = a.granularity;
            let per_second = a.latency_by_second;
            worker.dataflow::<u64, _, _>(|scope| {
                let fed = scope.input_from(&mut input).container::<Vec<(u64, u64)>>();
                // Paced: the input's own exchange would hold a flushed batch until the timestamp
                // advances (it flushes its per-worker buffers only then); an operator's output
                // buffers are flushed when it yields, so a pipeline hop makes `input.flush()`
                // work. Open: no flush, so no hop.
                let mut stream = if open {
                    fed
                } else {
                    fed.unary(Pipeline, "feed", |_cap, _info| {
                        move |input, output| {
                            input.for_each_time(|time, data| {
                                output.session(&time).give_containers(data);
                            });
                        }
                    })
                };
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
                // Per timestamp: the arrival of its last element here, ns.
                let mut last: BTreeMap<u64, u64> = BTreeMap::new();
                stream.sink(Pipeline, "sink", move |(input, frontier)| {
                    let mut n = 0u64;
                    input.for_each_time(|time, data| {
                        let now = now_ns();
                        let mut e = elem.lock().expect("histogram lock");
                        let mut s = by_second.lock().expect("histogram lock");
                        for c in data {
                            for &(id, due) in c.iter() {
                                n += 1;
                                if id >= warmup {
                                    let l = now.saturating_sub(due).max(1);
                                    let _ = e.record(l);
                                    if per_second {
                                        // The sink runs after this process's start is set.
                                        let t0 = start.get().copied().unwrap_or(due);
                                        report::record_second(&mut s, t0, due, l);
                                    }
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
                        let now = now_ns();
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
        // Every worker (of every process) has built the dataflow; the first one of this process
        // here starts its clock.
        timely::synchronization::Barrier::new(worker).wait();
        let t0 = *start.get_or_init(now_ns);
        let mut next = index;
        let mut span: Option<(u64, u64)> = None;
        let mut measured_emitted = 0u64;
        let ns_per_element = if a.rate > 0.0 { 1e9 / a.rate } else { 0.0 };
        let chunk = if open { a.chunk } else { 1024 };
        input.advance_to(time_of(next));
        while next < a.elements {
            let now = now_ns();
            let mut batch = 0u64;
            while next < a.elements && batch < chunk {
                let due = if a.rate > 0.0 {
                    t0 + (next as f64 * ns_per_element) as u64
                } else {
                    now
                };
                if due > now {
                    break;
                }
                let in_flight = emitted
                    .load(Ordering::Relaxed)
                    .saturating_sub(arrived.load(Ordering::Relaxed));
                if in_flight + batch >= max_in_flight {
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
            if !open {
                // Send what this batch buffered now, not when the timestamp advances.
                input.flush();
            }
            emitted.fetch_add(batch, Ordering::Relaxed);
            if next >= a.elements {
                break;
            }
            let wait = if open && a.rate == 0.0 {
                // Open loop: step once and send the next chunk; parking is for idle workers.
                worker.step();
                continue;
            } else if a.rate > 0.0 {
                let due = t0 + (next as f64 * ns_per_element) as u64;
                Some(Duration::from_nanos(due.saturating_sub(now_ns())))
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
        let mut m = Measured {
            span,
            measured_emitted,
            start_ns: t0,
            finished_ns: now_ns(),
            ..Measured::default()
        };
        m.notification
            .add(&*notif.lock().expect("lock"))
            .expect("same bounds");
        m.element
            .add(&*elem.lock().expect("lock"))
            .expect("same bounds");
        m.slot_log = std::mem::take(&mut *slot_log.lock().expect("lock"));
        m.by_second = std::mem::take(&mut *by_second.lock().expect("lock"));
        m
    })
    .map_err(|e| anyhow::anyhow!("timely failed to start: {e}"))?;
    let mut merged = Measured::default();
    for r in guards.join() {
        merged.add(r.map_err(|e| anyhow::anyhow!("a timely worker failed: {e}"))?);
    }
    merged.arrived = arrived_total.load(Ordering::Relaxed);
    Ok(merged)
}
