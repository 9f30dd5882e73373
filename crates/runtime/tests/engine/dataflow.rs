//! Integration tests of the runtime against independent batch oracles.
//!
//! Every pipeline here runs the real engine (worker threads, bounded channels, trAcker or no
//! tracking) and compares what the sinks received with the same computation done in plain Rust over
//! std collections. Sources replay pre-generated scripts, so the oracle sees exactly the elements
//! the engine was given (including the lateness rule: late elements are dropped by the script, not
//! by the engine). Every run is wrapped in [`bounded`] so a deadlock fails the test instead of
//! hanging the suite.

use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xorflow_runtime::measure::clock::now_ns;
use xorflow_runtime::operators::chain::CHAINED;
use xorflow_runtime::operators::window::EPOCH_RISES;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, RunError, RunReport, RuntimeConfig, Sink, Source, SourceOutput,
    SourcePoll, Stream, Time, TrackingMode, VecSink, WindowResult,
};

type Res = WindowResult<u64, (u64, u64)>;
/// (time, start, end, key, (sum, count)) of one window result.
type ResRow = (Time, Time, Time, u64, (u64, u64));

const MODES: [TrackingMode; 2] = [TrackingMode::Tracker, TrackingMode::None];

// ---------------------------------------------------------------------------------------------
// Helpers: deterministic randomness, scripted sources, sinks, oracles.
// ---------------------------------------------------------------------------------------------

/// SplitMix64: deterministic, dependency-free randomness for scripts.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One scripted emission: the element and the heartbeat the source sends right after it.
#[derive(Clone, Debug)]
struct Ev<T> {
    time: Time,
    data: T,
    hb: Time,
}

/// A source replaying a script, at most `budget` elements per poll, pausing `pace_ns` after
/// each poll (0: none).
struct Script<T> {
    evs: Arc<Vec<Ev<T>>>,
    next: usize,
    pace_ns: u64,
}

impl<T> Script<T> {
    fn new(evs: Arc<Vec<Ev<T>>>) -> Self {
        Self::paced(evs, 0)
    }

    fn paced(evs: Arc<Vec<Ev<T>>>, pace_ns: u64) -> Self {
        Script {
            evs,
            next: 0,
            pace_ns,
        }
    }
}

impl<T: Clone + Send + Sync> Source<T> for Script<T> {
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll {
        let budget = out.budget();
        let mut n = 0;
        while n < budget && self.next < self.evs.len() {
            let ev = &self.evs[self.next];
            out.emit(ev.time, ev.data.clone());
            out.heartbeat(ev.hb);
            self.next += 1;
            n += 1;
        }
        if self.next == self.evs.len() {
            SourcePoll::Done
        } else if self.pace_ns > 0 {
            SourcePoll::WaitUntil(out.now_ns() + self.pace_ns)
        } else {
            SourcePoll::Ready
        }
    }
}

/// Checks the source contract of a script: no element below an earlier heartbeat, heartbeats
/// never decrease.
fn check_script<T>(evs: &[Ev<T>]) {
    let mut hb = 0;
    for e in evs {
        assert!(
            e.time >= hb,
            "script emits time {} below heartbeat {hb}",
            e.time
        );
        assert!(e.hb >= hb, "script heartbeat goes back");
        hb = e.hb;
    }
}

/// In-order script of instance `inst`: times `0, step, 2 step, ...`, values unique per instance.
fn in_order(inst: usize, n: u64, step: u64) -> Vec<Ev<u64>> {
    (0..n)
        .map(|j| Ev {
            time: j * step,
            data: inst as u64 * 1_000_000 + j,
            hb: j * step,
        })
        .collect()
}

/// An out-of-order script like a live feed: event times uniform in `[0, tmax)`, each arriving
/// `delay` in `[0, max_delay]` later; elements are replayed in arrival order and after each the
/// source heartbeats `arrival - lateness`. An element whose time is below that bound is late:
/// dropped here (never emitted), the same rule the flights job applies. Returns the emitted script.
fn disordered(
    rng: &mut Rng,
    n: u64,
    tmax: u64,
    max_delay: u64,
    lateness: u64,
    values: u64,
) -> Vec<Ev<u64>> {
    let mut raw: Vec<(u64, u64, u64)> = (0..n)
        .map(|_| {
            let t = rng.below(tmax);
            let d = rng.below(max_delay + 1);
            (t + d, t, rng.below(values))
        })
        .collect();
    raw.sort_by_key(|r| r.0);
    let mut out = Vec::new();
    let mut hb = 0;
    for (arrival, t, v) in raw {
        let bound = arrival.saturating_sub(lateness);
        if t < bound {
            continue; // late
        }
        hb = hb.max(bound);
        out.push(Ev {
            time: t,
            data: v,
            hb,
        });
    }
    check_script(&out);
    out
}

/// Runs `f` on its own thread and fails if it does not finish within `secs` (a hang or deadlock
/// becomes a test failure instead of a stuck suite). Panics inside `f` propagate.
fn bounded<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let h = std::thread::spawn(f);
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !h.is_finished() {
        assert!(
            Instant::now() < deadline,
            "run did not finish within {secs} s (deadlock or lost wake-up?)"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    match h.join() {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn config(workers: usize, tracking: TrackingMode) -> RuntimeConfig {
    RuntimeConfig {
        workers,
        tracking,
        ..RuntimeConfig::default()
    }
}

/// Sorted (time, value) pairs of collected elements.
fn pairs<T: Ord + Clone>(els: &[Element<T>]) -> Vec<(Time, T)> {
    let mut v: Vec<(Time, T)> = els.iter().map(|e| (e.time, e.data.clone())).collect();
    v.sort();
    v
}

/// Multiset equality with a readable failure: sizes and the first differing items only.
fn assert_same<T: Ord + Clone + std::fmt::Debug>(
    mut actual: Vec<T>,
    mut expected: Vec<T>,
    what: &str,
) {
    actual.sort();
    expected.sort();
    if actual == expected {
        return;
    }
    let count = |v: &[T]| {
        let mut m: BTreeMap<T, i64> = BTreeMap::new();
        for x in v {
            *m.entry(x.clone()).or_default() += 1;
        }
        m
    };
    let (a, e) = (count(&actual), count(&expected));
    let missing: Vec<_> = e
        .iter()
        .filter(|(k, n)| a.get(*k).copied().unwrap_or(0) < **n)
        .take(5)
        .collect();
    let extra: Vec<_> = a
        .iter()
        .filter(|(k, n)| e.get(*k).copied().unwrap_or(0) < **n)
        .take(5)
        .collect();
    panic!(
        "{what}: got {} items, expected {}; missing (item, expected count) {missing:?}; \
         unexpected (item, actual count) {extra:?}",
        actual.len(),
        expected.len()
    );
}

/// Sum and count of `f(value)` per (window, key).
struct SumCount<F>(F);

impl<T, F> Aggregate<T> for SumCount<F>
where
    F: Fn(&T) -> (u64, u64) + Send + Sync + 'static,
{
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn init(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, acc: &mut (u64, u64), v: &T) {
        let (s, c) = (self.0)(v);
        acc.0 += s;
        acc.1 += c;
    }
    fn finish(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

/// Batch group-by oracle of a keyed tumbling window summing `(sum, count)` pairs: items are
/// (time, key, (sum, count)); results carry time `end - 1` like the engine's.
fn window_oracle(
    items: impl IntoIterator<Item = (Time, u64, (u64, u64))>,
    size: u64,
) -> Vec<ResRow> {
    let mut m: BTreeMap<(Time, u64), (u64, u64)> = BTreeMap::new();
    for (t, k, (s, c)) in items {
        let e = m.entry((t - t % size, k)).or_default();
        e.0 += s;
        e.1 += c;
    }
    m.into_iter()
        .map(|((start, k), v)| (start + size - 1, start, start + size, k, v))
        .collect()
}

/// Window results as comparable rows; also checks every result's time is `end - 1`.
fn rows(els: &[Element<Res>]) -> Vec<ResRow> {
    els.iter()
        .map(|e| {
            assert_eq!(e.time, e.data.end - 1, "window result time is not end - 1");
            (e.time, e.data.start, e.data.end, e.data.key, e.data.value)
        })
        .collect()
}

/// Rows of an oracle as the input items of a downstream window keyed by `key(row key)`.
fn as_items(rows: &[ResRow], key: impl Fn(u64) -> u64) -> Vec<(Time, u64, (u64, u64))> {
    rows.iter().map(|r| (r.0, key(r.3), r.4)).collect()
}

/// A sink recording the worker each element arrived at.
struct WorkerSink<T> {
    worker: usize,
    shared: WorkerLog<T>,
}

impl<T: Send> Sink<T> for WorkerSink<T> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        let mut g = self.shared.lock().unwrap();
        g.extend(batch.into_iter().map(|e| (self.worker, e)));
        Ok(())
    }
}

type WorkerLog<T> = Arc<Mutex<Vec<(usize, Element<T>)>>>;

fn worker_sink<T: Send + 'static>(log: &WorkerLog<T>) -> impl FnMut(usize) -> WorkerSink<T> {
    let shared = log.clone();
    move |worker| WorkerSink {
        worker,
        shared: shared.clone(),
    }
}

/// A sink checking the notification invariant at the sink itself: when any instance is told
/// `on_frontier(f)`, every element with time < f must already have been written (by the
/// instances of all workers). `expected` holds the oracle's element count per time.
struct FrontierCheck {
    written: Arc<Mutex<BTreeMap<Time, u64>>>,
    expected: Arc<BTreeMap<Time, u64>>,
    log: Arc<Mutex<FrontierLog>>,
}

#[derive(Default, Debug)]
struct FrontierLog {
    notifications: u64,
    /// (frontier, written below it, expected below it)
    violations: Vec<(Time, u64, u64)>,
    last: BTreeMap<usize, Time>,
    regressions: u64,
}

struct FrontierSink<T> {
    worker: usize,
    check: Arc<FrontierCheck>,
    _t: std::marker::PhantomData<fn(T)>,
}

impl<T> Sink<T> for FrontierSink<T> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        let mut w = self.check.written.lock().unwrap();
        for e in batch {
            *w.entry(e.time).or_default() += 1;
        }
        Ok(())
    }

    fn on_frontier(&mut self, f: Time) {
        let below = |m: &BTreeMap<Time, u64>| m.range(..f).map(|(_, n)| *n).sum::<u64>();
        let got = below(&self.check.written.lock().unwrap());
        let want = below(&self.check.expected);
        let mut log = self.check.log.lock().unwrap();
        log.notifications += 1;
        if got != want {
            log.violations.push((f, got, want));
        }
        let last = log.last.insert(self.worker, f).unwrap_or(0);
        if f <= last {
            log.regressions += 1;
        }
    }
}

impl FrontierCheck {
    fn new(expected_times: impl IntoIterator<Item = Time>) -> Arc<Self> {
        let mut m = BTreeMap::new();
        for t in expected_times {
            *m.entry(t).or_default() += 1;
        }
        Arc::new(FrontierCheck {
            written: Arc::default(),
            expected: Arc::new(m),
            log: Arc::default(),
        })
    }

    fn factory<T>(self: &Arc<Self>) -> impl FnMut(usize) -> FrontierSink<T> {
        let check = self.clone();
        move |worker| FrontierSink {
            worker,
            check: check.clone(),
            _t: std::marker::PhantomData,
        }
    }

    fn assert_ok(&self, what: &str) {
        let log = self.log.lock().unwrap();
        assert!(
            log.violations.is_empty(),
            "{what}: on_frontier(f) before all elements < f were written: (f, written, expected) \
             {:?}",
            &log.violations[..log.violations.len().min(5)]
        );
        assert_eq!(log.regressions, 0, "{what}: on_frontier did not increase");
    }
}

/// trAcker's own invariants on a finished run: nothing arrived below a notified frontier, no
/// frontier moved back.
fn assert_tracker_clean(report: &RunReport, what: &str) {
    assert_eq!(
        report.below_frontier(),
        0,
        "{what}: elements below frontier"
    );
    if report.tracking == TrackingMode::Tracker {
        let t = report.tracker.as_ref().expect("tracker stats with trAcker");
        assert_eq!(t.epoch_regressions, 0, "{what}: epoch frontier regressions");
        // With shards, merged lineage ranges may register below a shard's frontier, harmlessly
        // (crates/tracking/src/tracker.rs, `Tracker::regressions`).
        if report.tracker_shards == 1 {
            assert_eq!(t.regressions, 0, "{what}: tracker frontier regressions");
        }
    } else {
        assert!(
            report.tracker.is_none(),
            "{what}: tracker stats without tracking"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Element-wise chains, re-partitioning and fan-out.
// ---------------------------------------------------------------------------------------------

fn dup(x: u64) -> Vec<u64> {
    if x.is_multiple_of(3) {
        vec![x, x + 1]
    } else if x.is_multiple_of(5) {
        vec![]
    } else {
        vec![x]
    }
}

/// Catches: lost or duplicated elements on forward/round-robin/hash edges, wrong times on derived
/// elements, a stream consumed by several vertices not copied to each, key_by not co-locating
/// equal keys, round-robin not spreading evenly, sources with several instances per worker (or
/// none on some workers) not all being run, and (trAcker) a sink notified before it got all
/// elements below the frontier.
#[test]
fn elementwise_chains_match_oracle() {
    for workers in 1..=3 {
        for mode in MODES {
            for instances in 1..=4 {
                let what = format!(
                    "workers {workers}, {mode:?}, {instances} instances, batch flush on idle {}, \
                     instance frontiers {}",
                    instances % 2 == 1,
                    (instances + workers) % 2 == 0
                );
                let scripts: Arc<Vec<Arc<Vec<Ev<u64>>>>> = Arc::new(
                    (0..instances)
                        .map(|i| Arc::new(in_order(i, 700 + 137 * i as u64, 1 + i as u64)))
                        .collect(),
                );
                let input: Vec<(Time, u64)> = scripts
                    .iter()
                    .flat_map(|s| s.iter().map(|e| (e.time, e.data)))
                    .collect();
                let total = input.len() as u64;
                // Oracle.
                let filtered: Vec<(Time, u64)> = input
                    .iter()
                    .map(|&(t, x)| (t, x * 3 + 1))
                    .filter(|(_, x)| x % 2 == 0)
                    .collect();
                let duped: Vec<(Time, u64)> = filtered
                    .iter()
                    .flat_map(|&(t, x)| dup(x).into_iter().map(move |y| (t, y)))
                    .collect();
                let out_expected: Vec<(Time, u64)> =
                    duped.iter().map(|&(t, x)| (t, x + 10)).collect();
                let check = FrontierCheck::new(out_expected.iter().map(|p| p.0));

                let out = VecSink::shared();
                let tap = Arc::new(Mutex::new(Vec::new()));
                let keyed = Arc::new(Mutex::new(Vec::new()));
                let raw = Arc::new(Mutex::new(Vec::new()));
                let (out2, tap2, keyed2, raw2, check2, scripts2) = (
                    out.factory(),
                    tap.clone(),
                    keyed.clone(),
                    raw.clone(),
                    check.clone(),
                    scripts.clone(),
                );
                let report = bounded(30, move || {
                    let cfg = RuntimeConfig {
                        batch_size: 16,
                        // Half the runs leave partial batches to the flush timeout.
                        batch_flush_on_idle: instances % 2 == 1,
                        // Sinks fed by an exchange track per instance or per vertex (checked
                        // below their frontiers either way).
                        instance_frontiers: (instances + workers) % 2 == 0,
                        ..config(workers, mode)
                    };
                    let df = Dataflow::new(cfg).unwrap();
                    let src =
                        df.source("src", instances, move |i| Script::new(scripts2[i].clone()));
                    let f = src
                        .map("triple", |x| x * 3 + 1)
                        .filter("even", |x| x % 2 == 0);
                    let d = f.rebalance().flat_map("dup", dup);
                    d.key_by(|x| x % 7)
                        .map("plus10", |x| x + 10)
                        .sink("out", out2);
                    d.rebalance()
                        .map("plus10b", |x| x + 10)
                        .sink("check", check2.factory());
                    // Fan-out: the filter's and the source's streams have extra consumers.
                    f.rebalance().sink("tap", worker_sink(&tap2));
                    d.key_by(|x| x % 7).sink("keyed", worker_sink(&keyed2));
                    src.key_by(|x| *x).sink("raw", worker_sink(&raw2));
                    df.run().unwrap()
                });
                assert_tracker_clean(&report, &what);
                assert_same(
                    pairs(&out.take()),
                    out_expected.clone(),
                    &format!("{what}: out"),
                );
                let tap = tap.lock().unwrap();
                let tap_pairs: Vec<(Time, u64)> =
                    tap.iter().map(|(_, e)| (e.time, e.data)).collect();
                assert_same(tap_pairs, filtered.clone(), &format!("{what}: tap"));
                let raw = raw.lock().unwrap();
                let raw_pairs: Vec<(Time, u64)> =
                    raw.iter().map(|(_, e)| (e.time, e.data)).collect();
                assert_same(raw_pairs, input.clone(), &format!("{what}: raw"));
                let keyed = keyed.lock().unwrap();
                let keyed_pairs: Vec<(Time, u64)> =
                    keyed.iter().map(|(_, e)| (e.time, e.data)).collect();
                assert_same(keyed_pairs, duped.clone(), &format!("{what}: keyed"));

                // key_by: every key arrives at exactly one worker.
                let mut key_workers: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
                for (w, e) in keyed.iter() {
                    key_workers.entry(e.data % 7).or_default().insert(*w);
                }
                for (k, ws) in &key_workers {
                    assert_eq!(ws.len(), 1, "{what}: key {k} reached workers {ws:?}");
                }
                // Round-robin: each of the P senders spreads its elements evenly, so the
                // receivers' totals differ by at most P.
                let mut per_worker = vec![0u64; workers];
                for (w, _) in tap.iter() {
                    per_worker[*w] += 1;
                }
                let (lo, hi) = (
                    *per_worker.iter().min().unwrap(),
                    *per_worker.iter().max().unwrap(),
                );
                assert!(
                    hi - lo <= workers as u64,
                    "{what}: round-robin uneven {per_worker:?}"
                );
                // Counters agree with the oracle.
                assert_eq!(report.source_elements(), total, "{what}");
                assert_eq!(
                    report.vertex("triple").unwrap().elements_in,
                    total,
                    "{what}"
                );
                assert_eq!(
                    report.vertex("dup").unwrap().elements_in,
                    filtered.len() as u64,
                    "{what}"
                );
                assert_eq!(report.vertex("raw").unwrap().elements_in, total, "{what}");
                if mode == TrackingMode::Tracker {
                    check.assert_ok(&what);
                }
                assert_same(
                    check
                        .written
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|(t, n)| (*t, *n))
                        .collect(),
                    check.expected.iter().map(|(t, n)| (*t, *n)).collect(),
                    &format!("{what}: check sink"),
                );
            }
        }
    }
}

/// Catches: a stream consumed by two vertices delivering each element to only one of them (or
/// the copies diverging), on forward and re-partitioned edges at once.
#[test]
fn fan_out_delivers_every_element_to_every_consumer() {
    for workers in 1..=3 {
        for mode in MODES {
            let what = format!("fan-out, workers {workers}, {mode:?}");
            let scripts: Arc<Vec<Arc<Vec<Ev<u64>>>>> =
                Arc::new((0..3).map(|i| Arc::new(in_order(i, 500, 2))).collect());
            let input: Vec<(Time, u64)> = scripts
                .iter()
                .flat_map(|s| s.iter().map(|e| (e.time, e.data)))
                .collect();
            let sinks: Vec<_> = (0..4).map(|_| VecSink::<u64>::shared()).collect();
            let facts: Vec<_> = sinks.iter().map(|s| s.factory()).collect();
            let report = bounded(30, move || {
                let cfg = RuntimeConfig {
                    batch_size: 16,
                    channel_capacity: 1,
                    ..config(workers, mode)
                };
                let df = Dataflow::new(cfg).unwrap();
                let src = df.source("src", 3, move |i| Script::new(scripts[i].clone()));
                let mut facts = facts.into_iter();
                src.sink("a", facts.next().unwrap());
                src.rebalance().sink("b", facts.next().unwrap());
                let m = src.map("id", |x| x);
                m.key_by(|x| x % 3).sink("c", facts.next().unwrap());
                m.rebalance().sink("d", facts.next().unwrap());
                df.run().unwrap()
            });
            assert_tracker_clean(&report, &what);
            for (i, s) in sinks.iter().enumerate() {
                assert_same(
                    pairs(&s.take()),
                    input.clone(),
                    &format!("{what}: sink {i}"),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Keyed tumbling windows over out-of-order input.
// ---------------------------------------------------------------------------------------------

fn disordered_scripts(
    seed: u64,
    instances: usize,
    n: u64,
    tmax: u64,
    max_delay: u64,
    lateness: u64,
) -> Arc<Vec<Arc<Vec<Ev<u64>>>>> {
    let mut rng = Rng(seed);
    Arc::new(
        (0..instances)
            .map(|_| Arc::new(disordered(&mut rng, n, tmax, max_delay, lateness, 1000)))
            .collect(),
    )
}

fn all_items(scripts: &[Arc<Vec<Ev<u64>>>]) -> Vec<(Time, u64)> {
    scripts
        .iter()
        .flat_map(|s| s.iter().map(|e| (e.time, e.data)))
        .collect()
}

/// Catches: windows closing before all their elements arrived (partial sums, a second result for
/// the same (window, key), or elements counted below the frontier), wrong window bounds or result
/// times, keys split over instances, windows never closing or closing twice, with out-of-order
/// input, several source instances and slot granularities that do not divide the window size.
#[test]
fn keyed_windows_match_group_by_oracle() {
    let mut seed = 1;
    for workers in 1..=3 {
        for mode in MODES {
            for (instances, granularity, size) in [(1, 1, 10), (2, 3, 10), (4, 1, 7), (3, 16, 25)] {
                seed += 1;
                let what = format!(
                    "windows, workers {workers}, {mode:?}, {instances} instances, g {granularity}, \
                     size {size}, seed {seed}"
                );
                let scripts = disordered_scripts(seed, instances, 1500, 1000, 40, 25);
                let items = all_items(&scripts);
                let keys = 11;
                let expected =
                    window_oracle(items.iter().map(|&(t, v)| (t, v % keys, (v, 1))), size);
                let check = FrontierCheck::new(expected.iter().map(|r| r.0));
                let out = VecSink::<Res>::shared();
                let (fact, check2) = (out.factory(), check.clone());
                let report = bounded(30, move || {
                    let cfg = RuntimeConfig {
                        batch_size: 32,
                        granularity,
                        ..config(workers, mode)
                    };
                    let df = Dataflow::new(cfg).unwrap();
                    let w = df
                        .source("src", instances, move |i| Script::new(scripts[i].clone()))
                        .rebalance()
                        .map("id", |x| x)
                        .tumbling_window(
                            "win",
                            size,
                            move |v: &u64| v % keys,
                            SumCount(|v: &u64| (*v, 1)),
                        );
                    w.sink("out", fact);
                    w.rebalance().sink("check", check2.factory());
                    df.run().unwrap()
                });
                assert_tracker_clean(&report, &what);
                assert_same(rows(&out.take()), expected.clone(), &what);
                assert_eq!(
                    report.vertex("win").unwrap().elements_out,
                    expected.len() as u64,
                    "{what}: window results counted"
                );
                if mode == TrackingMode::Tracker {
                    check.assert_ok(&what);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Window -> window chains (deferred outputs must hold their slots open).
// ---------------------------------------------------------------------------------------------

struct ChainOut {
    w5: VecSinkHandle,
    w15: VecSinkHandle,
    wk2: VecSinkHandle,
    w7: VecSinkHandle,
    w20: VecSinkHandle,
}

type VecSinkHandle = xorflow_runtime::SharedVec<Res>;

/// Builds: source -> w5 (key v%5) -> { sink, w15 (same key), wk2 (key%2, size 15),
/// w7 (same key, size 7, not aligned with 5), rebalance -> relay map -> w20 (same key) }.
fn build_chain(
    df: &Dataflow,
    instances: usize,
    scripts: Arc<Vec<Arc<Vec<Ev<u64>>>>>,
    out: &ChainOut,
    check: &Arc<FrontierCheck>,
    pace_ns: u64,
) {
    let w5 = df
        .source("src", instances, move |i| {
            Script::paced(scripts[i].clone(), pace_ns)
        })
        // An element-wise vertex on exact batches: it tracks its outputs by their own times
        // (operators/unary.rs), where "relay" below, after a window, keeps the batch's range.
        .map("pre", |v| v)
        .tumbling_window("w5", 5, |v: &u64| v % 5, SumCount(|v: &u64| (*v, 1)));
    w5.sink("s5", out.w5.factory());
    let val = |r: &Res| r.value;
    let w15 = w5.tumbling_window("w15", 15, |r: &Res| r.key, SumCount(val));
    w15.sink("s15", out.w15.factory());
    w15.sink("s15check", check.factory());
    w5.tumbling_window("wk2", 15, |r: &Res| r.key % 2, SumCount(val))
        .sink("sk2", out.wk2.factory());
    w5.tumbling_window("w7", 7, |r: &Res| r.key, SumCount(val))
        .sink("s7", out.w7.factory());
    let relay: Stream<Res> = w5.rebalance().map("relay", |r| r);
    relay
        .tumbling_window("w20", 20, |r: &Res| r.key, SumCount(val))
        .sink("s20", out.w20.factory());
}

/// Catches: a window emitting its results after the downstream window's component was already
/// declared complete at the results' time (missing deferred-output hold, hold in the wrong slot
/// or component, hold released before the results' send tags are registered, hold lost through a
/// pass-through vertex): the downstream window would close early and drop or split the late
/// results, which shows as an oracle mismatch and below_frontier > 0. Also catches a result time
/// other than `end - 1` (the 15-window would group them differently).
#[test]
fn window_to_window_chains_are_exact() {
    let mut seed = 100;
    for workers in 1..=3 {
        for mode in MODES {
            for (instances, granularity, batch_size) in [(1, 1, 16), (3, 1, 64), (2, 4, 16)] {
                seed += 1;
                chain_case(workers, mode, instances, granularity, batch_size, seed);
            }
        }
    }
}

/// The same chains with batches of 1 and 4 elements (most interleavings of holds and results).
#[test]
fn window_to_window_chains_are_exact_with_tiny_batches() {
    let mut seed = 200;
    for workers in 1..=3 {
        for (instances, granularity, batch_size) in [(1, 1, 4), (2, 4, 1), (3, 2, 2)] {
            seed += 1;
            chain_case(
                workers,
                TrackingMode::Tracker,
                instances,
                granularity,
                batch_size,
                seed,
            );
        }
    }
}

/// The same chains with checkpoint epochs tracked beside event time (an epoch every 20 us, so a
/// run passes many), with one and two tracker shards: windows emit in their epoch and heartbeat it
/// (crates/tracking/src/epochs.rs). Catches epoch acks that never cancel (the run would not end:
/// every epoch frontier must reach INF), windows that never see their epoch frontier rise, and
/// any change to the results.
#[test]
fn window_to_window_chains_are_exact_with_checkpoint_epochs() {
    let mut seed = 300;
    for workers in 1..=3 {
        for (instances, granularity, batch_size, shards) in
            [(1, 1, 16, 1), (3, 1, 4, 2), (2, 4, 1, 2)]
        {
            seed += 1;
            let epochs = Epochs {
                interval: std::time::Duration::from_micros(20),
            };
            let case = ChainShape {
                workers,
                instances,
                granularity,
                batch_size,
                shards,
            };
            chain_case_with(case, TrackingMode::Tracker, seed, Some(epochs));
        }
    }
}

/// The same chains over 2 and 3 tracker shards, with tiny batches. Catches an element-wise
/// vertex tracking its outputs in other slots than its inputs' (so in another shard) while the
/// input's receipt lands in one shard and the outputs' registration in another: a shard would
/// see the outputs' slots complete before they are registered (operators/unary.rs; the
/// "relay" vertex reads a window's results, tracked at their hold slots).
#[test]
fn window_to_window_chains_are_exact_with_shards() {
    let mut seed = 400;
    for workers in 1..=3 {
        for (instances, granularity, batch_size, shards) in
            [(1, 1, 2, 2), (3, 1, 4, 3), (2, 4, 1, 2), (2, 2, 16, 3)]
        {
            seed += 1;
            let case = ChainShape {
                workers,
                instances,
                granularity,
                batch_size,
                shards,
            };
            chain_case_with(case, TrackingMode::Tracker, seed, None);
        }
    }
}

/// Operator chaining (`port/chained.rs`): element-wise vertices on forward edges run inside
/// their producer, after a source and after a window, whose deferred output then holds the
/// chained vertex's component. Every tracking mode, with and without chaining, with checkpoint
/// epochs and with two tracker shards, against the batch oracle. Catches: a chained stage's
/// outputs registered after its producer's input is acknowledged (a window closing early:
/// oracle mismatch, elements below the frontier), a marker overtaking the elements it follows
/// (markers), an end of stream not passed down the chain (the run would not end: `bounded`),
/// a hold placed where the chain's downstream does not see it, counts lost with the queue.
#[test]
fn chained_vertices_match_oracle_in_every_mode() {
    let mut seed = 500;
    let modes = [
        TrackingMode::Tracker,
        TrackingMode::Markers,
        TrackingMode::None,
    ];
    for workers in 1..=3 {
        for (m, mode) in modes.into_iter().enumerate() {
            for chaining in [true, false] {
                seed += 1;
                let variant = (workers + m) % 3;
                chained_case(workers, mode, chaining, variant, seed);
            }
        }
    }
}

/// One run of [`chained_vertices_match_oracle_in_every_mode`]; `variant` 0 sends every ack
/// alone (`--ack-flush-count 0`), 1 adds checkpoint epochs (trAcker and markers), 2 two tracker
/// shards (trAcker).
fn chained_case(workers: usize, mode: TrackingMode, chaining: bool, variant: usize, seed: u64) {
    let what = format!("workers {workers}, {mode:?}, chaining {chaining}, variant {variant}");
    let instances = 1 + (seed as usize % 3);
    let scripts = disordered_scripts(seed, instances, 1500, 600, 12, 8);
    let items = all_items(&scripts);
    // Oracle: pre (x3), odd_out (drop x3 % 4 == 1), dup, then the 5-window keyed v % 5,
    // relayed, then a 15-window over the relayed results.
    let filtered: Vec<(Time, u64)> = (items.iter())
        .map(|&(t, v)| (t, v * 3))
        .filter(|(_, v)| v % 4 != 1)
        .collect();
    let mapped: Vec<(Time, u64)> = (filtered.iter())
        .flat_map(|&(t, v)| dup(v).into_iter().map(move |y| (t, y)))
        .collect();
    let o5 = window_oracle(mapped.iter().map(|&(t, v)| (t, v % 5, (v, 1))), 5);
    let o15 = window_oracle(as_items(&o5, |k| k), 15);
    let check = FrontierCheck::new(o15.iter().map(|r| r.0));
    let (w15, relayed) = (VecSink::shared(), VecSink::shared());
    let (w15f, relayedf, check2) = (w15.factory(), relayed.factory(), check.clone());
    let report = bounded(30, move || {
        let cfg = RuntimeConfig {
            batch_size: 8,
            channel_capacity: 4,
            chaining,
            checkpoint_interval: (variant == 1 && mode != TrackingMode::None)
                .then(|| Duration::from_micros(50)),
            tracker_shards: if variant == 2 && mode == TrackingMode::Tracker {
                2
            } else {
                1
            },
            // Unbatched acks: every registration travels alone, so one out of order shows.
            ack_flush_count: if variant == 0 { 0 } else { 4096 },
            ..config(workers, mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        let relay = df
            .source("src", instances, move |i| {
                Script::paced(scripts[i].clone(), 10_000)
            })
            .map("pre", |v| v * 3)
            .filter("odd_out", |v| v % 4 != 1)
            .flat_map("dup", dup)
            .tumbling_window("w5", 5, |v: &u64| v % 5, SumCount(|v: &u64| (*v, 1)))
            .map("relay", |r| r)
            .filter("all", |_| true);
        relay.sink("relayed", relayedf);
        let w = relay.tumbling_window("w15", 15, |r: &Res| r.key, SumCount(|r: &Res| r.value));
        w.sink("s15", w15f);
        w.sink("s15check", check2.factory());
        df.run().unwrap()
    });
    assert_tracker_clean(&report, &what);
    assert_same(
        rows(&relayed.take()),
        o5.clone(),
        &format!("{what}: relayed"),
    );
    assert_same(rows(&w15.take()), o15, &format!("{what}: w15"));
    if mode == TrackingMode::Tracker {
        check.assert_ok(&what);
    }
    let counts = |v: &str| report.vertex(v).unwrap().elements_in;
    assert_eq!(counts("pre"), items.len() as u64, "{what}");
    assert_eq!(counts("dup"), filtered.len() as u64, "{what}");
    assert_eq!(counts("relay"), o5.len() as u64, "{what}");
    // Every vertex counts what it emits, chained or not (the live metrics'
    // xorflow_vertex_elements_out_total reads the same count).
    let out = |v: &str| report.vertex(v).unwrap().elements_out;
    assert_eq!(out("src"), items.len() as u64, "{what}: src out");
    assert_eq!(out("pre"), items.len() as u64, "{what}: pre out");
    assert_eq!(out("odd_out"), filtered.len() as u64, "{what}: odd_out out");
    assert_eq!(out("dup"), mapped.len() as u64, "{what}: dup out");
    assert_eq!(out("w5"), o5.len() as u64, "{what}: w5 out");
    assert_eq!(out("relay"), o5.len() as u64, "{what}: relay out");
    assert_eq!(out("all"), o5.len() as u64, "{what}: all out");
    let chained = report.vertex("relay").unwrap().counter(CHAINED);
    assert_eq!(
        chained > 0,
        chaining,
        "{what}: relay chained {chained} times"
    );
}

#[derive(Clone, Copy, Debug)]
struct Epochs {
    interval: std::time::Duration,
}

/// The shape of one chain run.
#[derive(Clone, Copy, Debug)]
struct ChainShape {
    workers: usize,
    instances: usize,
    granularity: u64,
    batch_size: usize,
    /// Tracker shards.
    shards: usize,
}

fn chain_case(
    workers: usize,
    mode: TrackingMode,
    instances: usize,
    granularity: u64,
    batch_size: usize,
    seed: u64,
) {
    let case = ChainShape {
        workers,
        instances,
        granularity,
        batch_size,
        shards: 1,
    };
    chain_case_with(case, mode, seed, None)
}

fn chain_case_with(case: ChainShape, mode: TrackingMode, seed: u64, epochs: Option<Epochs>) {
    let what = format!("chain, {case:?}, {mode:?}, seed {seed}, epochs {epochs:?}");
    let ChainShape {
        workers,
        instances,
        granularity,
        batch_size,
        shards,
    } = case;
    let scripts = disordered_scripts(seed, instances, 1200, 600, 12, 8);
    let items = all_items(&scripts);
    let o5 = window_oracle(items.iter().map(|&(t, v)| (t, v % 5, (v, 1))), 5);
    let o15 = window_oracle(as_items(&o5, |k| k), 15);
    let ok2 = window_oracle(as_items(&o5, |k| k % 2), 15);
    let o7 = window_oracle(as_items(&o5, |k| k), 7);
    let o20 = window_oracle(as_items(&o5, |k| k), 20);
    // The 15-window directly over the input equals the chained one (5 divides 15).
    assert_eq!(
        o15,
        window_oracle(items.iter().map(|&(t, v)| (t, v % 5, (v, 1))), 15)
    );
    let out = Arc::new(ChainOut {
        w5: VecSink::shared(),
        w15: VecSink::shared(),
        wk2: VecSink::shared(),
        w7: VecSink::shared(),
        w20: VecSink::shared(),
    });
    let check = FrontierCheck::new(o15.iter().map(|r| r.0));
    let (out2, check2) = (out.clone(), check.clone());
    let report = bounded(30, move || {
        let cfg = RuntimeConfig {
            batch_size,
            granularity,
            channel_capacity: 8,
            checkpoint_interval: epochs.map(|e| e.interval),
            tracker_shards: shards,
            ..config(workers, mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        // With epochs the sources pause 20 us per poll, so the run spans many epochs.
        let pace_ns = if epochs.is_some() { 20_000 } else { 0 };
        build_chain(&df, instances, scripts, &out2, &check2, pace_ns);
        df.run().unwrap()
    });
    assert_tracker_clean(&report, &what);
    assert_same(rows(&out.w5.take()), o5, &format!("{what}: w5"));
    assert_same(rows(&out.w15.take()), o15, &format!("{what}: w15"));
    assert_same(rows(&out.wk2.take()), ok2, &format!("{what}: wk2"));
    assert_same(rows(&out.w7.take()), o7, &format!("{what}: w7"));
    assert_same(rows(&out.w20.take()), o20, &format!("{what}: w20"));
    if mode == TrackingMode::Tracker {
        check.assert_ok(&what);
    }
    let rises = report.vertex("w5").expect("w5").counter(EPOCH_RISES);
    match epochs {
        Some(_) => assert!(rises > 0, "{what}: w5's epoch frontier never rose"),
        None => assert_eq!(rises, 0, "{what}: epochs without a checkpoint interval"),
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Backpressure.
// ---------------------------------------------------------------------------------------------

/// Catches: deadlocks or lost batches when every channel holds one tiny batch (held-back batches
/// never retried, an end-of-stream marker overtaking or lost behind a full channel, a vertex
/// taking input while its output is full and dropping it, a fan-out where one slow branch stalls
/// the other forever).
#[test]
fn backpressure_with_tiny_channels_loses_nothing() {
    for workers in [2, 3] {
        for mode in MODES {
            backpressure_case(workers, 16, mode);
        }
    }
}

/// The hardest setting for backpressure: batches of 1 or 2 elements through channels of one batch.
#[test]
fn backpressure_with_tiny_batches_loses_nothing() {
    for workers in [2, 3] {
        for batch_size in [1, 2] {
            for mode in MODES {
                backpressure_case(workers, batch_size, mode);
            }
        }
    }
}

fn backpressure_case(workers: usize, batch_size: usize, mode: TrackingMode) {
    let what = format!("backpressure, workers {workers}, batch {batch_size}, {mode:?}");
    let scripts = disordered_scripts(7 + batch_size as u64, 2, 1200, 400, 10, 10);
    let items = all_items(&scripts);
    // Oracle of the chain: +1 eight times, then windows of 10 keyed by v % 4.
    let chained: Vec<(Time, u64)> = items.iter().map(|&(t, v)| (t, v + 8)).collect();
    let expected = window_oracle(chained.iter().map(|&(t, v)| (t, v % 4, (v, 1))), 10);
    let out = VecSink::<Res>::shared();
    let side = VecSink::<u64>::shared();
    let (fact, mut side_fact) = (out.factory(), Some(side.factory()));
    let report = bounded(60, move || {
        let cfg = RuntimeConfig {
            batch_size,
            channel_capacity: 1,
            ..config(workers, mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        let mut s = df.source("src", 2, move |i| Script::new(scripts[i].clone()));
        for i in 0..8 {
            let part = if i % 2 == 0 {
                s.rebalance()
            } else {
                s.key_by(|x| *x)
            };
            s = part.map(&format!("hop{i}"), |x| x + 1);
            if i == 3 {
                // A second, slower consumer in the middle of the chain.
                s.rebalance()
                    .flat_map("side_dup", |x| [x, x])
                    .sink("side", side_fact.take().unwrap());
            }
        }
        s.tumbling_window("win", 10, |v: &u64| v % 4, SumCount(|v: &u64| (*v, 1)))
            .sink("out", fact);
        df.run().unwrap()
    });
    assert_tracker_clean(&report, &what);
    assert_same(rows(&out.take()), expected, &what);
    let side_expected: Vec<(Time, u64)> = items
        .iter()
        .flat_map(|&(t, v)| [(t, v + 4), (t, v + 4)])
        .collect();
    assert_same(pairs(&side.take()), side_expected, &format!("{what}: side"));
}

// ---------------------------------------------------------------------------------------------
// 5 + 7. Slow sources: flush timeout, windows closing while the source still runs (trAcker),
// and only at end of stream without tracking.
// ---------------------------------------------------------------------------------------------

/// What the paced source saw.
#[derive(Default)]
struct PaceLog {
    last_emit_ns: AtomicU64,
    /// Elements emitted so far (stored before the poll returns, so before its heartbeat applies).
    emitted: AtomicU64,
    done_ns: AtomicU64,
    /// Gate A (some element reached the raw sink) timed out.
    raw_gate_timed_out: AtomicBool,
    /// Gate B (the first window's result reached its sink) timed out.
    window_gate_timed_out: AtomicBool,
}

type Gate = Arc<dyn Fn() -> bool + Send + Sync>;

/// A rate-limited source: element `i` (time `i`, value `i`) at least `step_ns` after the previous
/// one, heartbeat `i + 1` after it. Before element `raw_at` it waits (up to `raw_wait_ns`) until
/// `raw_gate()` holds; before element `win_at`, until `win_gate()` holds (up to `win_wait_ns`).
/// The gates make the assertions deterministic: on a loaded machine the source just waits longer.
struct Paced {
    n: u64,
    next: u64,
    step_ns: u64,
    due: u64,
    gates: Vec<(u64, Gate, u64)>,
    gate_since: Option<u64>,
    log: Arc<PaceLog>,
}

impl Source<u64> for Paced {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        let now = now_ns();
        if self.next == self.n {
            self.log.done_ns.store(now, Ordering::SeqCst);
            return SourcePoll::Done;
        }
        if self.due > now {
            return SourcePoll::WaitUntil(self.due);
        }
        for (g, (at, gate, wait)) in self.gates.iter().enumerate() {
            if *at == self.next && !gate() {
                let since = *self.gate_since.get_or_insert(now);
                if now - since < *wait {
                    return SourcePoll::WaitUntil(now + 1_000_000);
                }
                let flag = if g == 0 {
                    &self.log.raw_gate_timed_out
                } else {
                    &self.log.window_gate_timed_out
                };
                flag.store(true, Ordering::SeqCst);
            }
        }
        self.gate_since = None;
        out.emit(self.next, self.next);
        self.next += 1;
        out.heartbeat(self.next);
        self.log.emitted.store(self.next, Ordering::SeqCst);
        let t = now_ns();
        self.log.last_emit_ns.store(t, Ordering::SeqCst);
        self.due = t + self.step_ns;
        SourcePoll::WaitUntil(self.due)
    }
}

/// A sink recording the clock at receipt of every element.
struct TimedSink<T> {
    shared: TimedLog<T>,
}

impl<T: Send> Sink<T> for TimedSink<T> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        let now = now_ns();
        self.shared
            .lock()
            .unwrap()
            .extend(batch.into_iter().map(|e| (now, e)));
        Ok(())
    }
}

type TimedLog<T> = Arc<Mutex<Vec<(u64, Element<T>)>>>;

/// Runs the paced source into a raw sink (through a map) and a window of 10 into a timed sink.
/// With `busy`, every worker also hosts an instance of a full-speed source (into a filter that
/// drops everything) until the paced source is done, so no worker is ever idle: partial batches
/// then move only on the flush timeout and acks only on the ack flush interval.
fn run_paced(
    mode: TrackingMode,
    workers: usize,
    busy: bool,
) -> (Arc<PaceLog>, TimedLog<u64>, TimedLog<Res>) {
    let log = Arc::new(PaceLog::default());
    let raw: TimedLog<u64> = Arc::default();
    let win: TimedLog<Res> = Arc::default();
    let (raw2, win2) = (raw.clone(), win.clone());
    let raw_gate: Gate = Arc::new(move || !raw2.lock().unwrap().is_empty());
    let win_gate: Gate =
        Arc::new(move || win2.lock().unwrap().iter().any(|(_, e)| e.data.start == 0));
    // trAcker must get the first window out while the source runs: wait up to 10 s for it.
    // Without tracking it cannot: wait only 150 ms, then finish.
    let win_wait = if mode == TrackingMode::Tracker {
        10_000_000_000
    } else {
        150_000_000
    };
    let (log2, raw3, win3, log4) = (log.clone(), raw.clone(), win.clone(), log.clone());
    let report = bounded(30, move || {
        let cfg = RuntimeConfig {
            batch_size: 1024,
            flush_timeout: Duration::from_millis(2),
            // Busy workers: only the interval may flush the local acker.
            ack_flush_count: if busy { 1 << 40 } else { 4096 },
            ..config(workers, mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        let mut gates = Some(vec![
            (20, raw_gate, 10_000_000_000),
            (49, win_gate, win_wait),
        ]);
        let src = df.source("paced", 1, move |_| Paced {
            n: 50,
            next: 0,
            step_ns: 2_000_000,
            due: 0,
            gates: gates.take().expect("one paced instance"),
            gate_since: None,
            log: log2.clone(),
        });
        src.rebalance()
            .map("id", |x| x)
            .sink("raw", move |_| TimedSink {
                shared: raw3.clone(),
            });
        src.rebalance()
            .tumbling_window("win", 10, |v: &u64| v % 3, SumCount(|v: &u64| (*v, 1)))
            .sink("out", move |_| TimedSink {
                shared: win3.clone(),
            });
        if busy {
            df.source("busy", workers, move |_| Busy {
                next: 1 << 40,
                paced: log4.clone(),
                deadline: now_ns() + 20_000_000_000,
            })
            .filter("drop", |_| false)
            .sink("nothing", VecSink::<u64>::shared().factory());
        }
        df.run().unwrap()
    });
    assert_tracker_clean(&report, &format!("paced {mode:?}, busy {busy}"));
    (log, raw, win)
}

/// A full-speed source that runs until the paced source is done (or a deadline), with times far
/// above the paced source's so it never holds the frontier back.
struct Busy {
    next: u64,
    paced: Arc<PaceLog>,
    deadline: u64,
}

impl Source<u64> for Busy {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        if self.paced.done_ns.load(Ordering::SeqCst) != 0 || now_ns() > self.deadline {
            return SourcePoll::Done;
        }
        out.heartbeat(self.next);
        for _ in 0..out.budget() {
            out.emit(self.next, self.next);
            self.next += 1;
        }
        out.heartbeat(self.next);
        SourcePoll::Ready
    }
}

fn paced_oracle() -> Vec<ResRow> {
    window_oracle((0..50u64).map(|v| (v, v % 3, (v, 1))), 10)
}

/// Catches (trAcker): partial batches that wait for a full batch of 1024 instead of the flush
/// timeout (nothing would reach the sinks until the end; with `busy` workers are never idle, so
/// only the timeout can send them), windows that only close at end of stream, acks or heartbeats
/// held in the local acker while a worker is busy (ack flush interval ignored), heartbeats of a
/// waiting source not reaching the tracker, a parked worker not woken by a frontier
/// notification or by its source's schedule.
#[test]
fn slow_source_tracker_closes_windows_while_running() {
    for (workers, busy) in [(1, false), (2, false), (1, true), (2, true)] {
        let (log, raw, win) = run_paced(TrackingMode::Tracker, workers, busy);
        let what = format!("paced tracker, workers {workers}, busy {busy}");
        assert!(
            !log.raw_gate_timed_out.load(Ordering::SeqCst),
            "{what}: no element reached the sink within 10 s while the source was running"
        );
        assert!(
            !log.window_gate_timed_out.load(Ordering::SeqCst),
            "{what}: the first window's result did not arrive within 10 s while the source ran"
        );
        let last_emit = log.last_emit_ns.load(Ordering::SeqCst);
        let raw = raw.lock().unwrap();
        let win = win.lock().unwrap();
        let first_win = win
            .iter()
            .filter(|(_, e)| e.data.start == 0)
            .map(|(ns, _)| *ns)
            .min()
            .unwrap();
        assert!(
            first_win < last_emit,
            "{what}: window [0,10) after the last emission"
        );
        assert!(raw.iter().map(|(ns, _)| *ns).min().unwrap() < last_emit);
        let got: Vec<Element<Res>> = win.iter().map(|(_, e)| e.clone()).collect();
        assert_same(rows(&got), paced_oracle(), &what);
        let raw_pairs: Vec<(Time, u64)> = raw.iter().map(|(_, e)| (e.time, e.data)).collect();
        assert_same(raw_pairs, (0..50).map(|v| (v, v)).collect(), &what);
    }
}

/// Catches (no tracking): windows closed before end of stream (without tracking nothing says a
/// window is complete, so an early result would be a guess), and partial batches stuck until the
/// end instead of being flushed on the timeout.
#[test]
fn slow_source_without_tracking_closes_windows_only_at_end() {
    for (workers, busy) in [(1, false), (2, false), (2, true)] {
        let (log, raw, win) = run_paced(TrackingMode::None, workers, busy);
        let what = format!("paced none, workers {workers}, busy {busy}");
        assert!(
            !log.raw_gate_timed_out.load(Ordering::SeqCst),
            "{what}: no element reached the sink within 10 s while the source was running"
        );
        assert!(
            log.window_gate_timed_out.load(Ordering::SeqCst),
            "{what}: a window result arrived before end of stream without tracking"
        );
        let done = log.done_ns.load(Ordering::SeqCst);
        assert!(done > 0);
        let win = win.lock().unwrap();
        for (ns, e) in win.iter() {
            assert!(
                *ns >= done,
                "{what}: result {:?} arrived before the source finished",
                e.data
            );
        }
        let got: Vec<Element<Res>> = win.iter().map(|(_, e)| e.clone()).collect();
        assert_same(rows(&got), paced_oracle(), &what);
        assert_eq!(raw.lock().unwrap().len(), 50, "{what}");
    }
}

/// A source emitting element k at `start + k * step_ns` and logging when it did.
struct Spaced {
    n: u64,
    next: u64,
    step_ns: u64,
    start: Option<u64>,
    emitted_ns: Arc<Mutex<Vec<u64>>>,
}

impl Source<u64> for Spaced {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        if self.next == self.n {
            return SourcePoll::Done;
        }
        let start = *self.start.get_or_insert_with(now_ns);
        let due = start + self.next * self.step_ns;
        if due > now_ns() {
            return SourcePoll::WaitUntil(due);
        }
        out.emit(self.next, self.next);
        self.next += 1;
        out.heartbeat(self.next);
        self.emitted_ns.lock().unwrap().push(now_ns());
        SourcePoll::Ready
    }
}

/// Milliseconds from emission to the sink of each of 5 elements spaced 100 ms apart, through
/// four stages on one worker, without idle flushes, at a 400 ms flush timeout and `slack`.
fn same_worker_hops_ms(mode: TrackingMode, slack: Duration) -> Vec<u64> {
    let emitted: Arc<Mutex<Vec<u64>>> = Arc::default();
    let got: TimedLog<u64> = Arc::default();
    let (emitted2, got2) = (emitted.clone(), got.clone());
    bounded(30, move || {
        let cfg = RuntimeConfig {
            flush_timeout: Duration::from_millis(400),
            timer_slack: slack,
            batch_flush_on_idle: false,
            ..config(1, mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        df.source("spaced", 1, move |_| Spaced {
            n: 5,
            next: 0,
            step_ns: 100_000_000,
            start: None,
            emitted_ns: emitted2.clone(),
        })
        .map("a", |x| x)
        .map("b", |x| x)
        .filter("c", |_| true)
        .sink("out", move |_| TimedSink {
            shared: got2.clone(),
        });
        df.run().unwrap()
    });
    let emitted = emitted.lock().unwrap();
    let mut got = got.lock().unwrap().clone();
    got.sort_by_key(|(_, e)| e.data);
    assert_eq!(got.len(), 5, "{mode:?}");
    (got.iter().zip(emitted.iter()))
        .map(|((at, _), sent)| at.saturating_sub(*sent) / 1_000_000)
        .collect()
}

/// Catches: a partial batch for a vertex on the same worker held for the flush timeout when the
/// worker's parks may overshoot by as much (a latency budget: `--timer-slack` and
/// `--flush-timeout` alike, no idle flushes; `channel::Flush::Idle`). Holding it saves no
/// wake-up, and at each of four stages it cost the whole 400 ms timeout: 1.6 s per element. And
/// the other side: with a slack well under the timeout the batches are held to fill up, as
/// `--batch-flush-on-idle false` promises (sending them at once cost the YSB 52 % more CPU at
/// 100,000 events/s, docs/cpu.md).
#[test]
fn batches_for_the_same_worker_wait_only_when_a_park_would_not_overshoot() {
    for mode in [TrackingMode::Tracker, TrackingMode::None] {
        let budget = same_worker_hops_ms(mode, Duration::from_millis(400));
        // Well under one timeout, for a loaded test machine's sake.
        assert!(
            budget.iter().all(|&ms| ms < 200),
            "{mode:?}, 400 ms slack: {budget:?}"
        );
        let held = same_worker_hops_ms(mode, Duration::from_micros(1));
        // The first element waits for at least one stage's timeout.
        assert!(held[0] >= 390, "{mode:?}, 1 us slack: {held:?}");
    }
}

/// A sink that records `on_frontier` calls with the clock, to see notifications arrive while a
/// slow source is still running (sinks are notified, not only windows).
struct NotifiedSink {
    frontiers: Arc<Mutex<Vec<(u64, Time)>>>,
    source: Arc<PaceLog>,
    /// (frontier, elements the source had emitted when it was notified)
    ahead: Arc<Mutex<Vec<(Time, u64)>>>,
}

impl Sink<u64> for NotifiedSink {
    fn write(&mut self, _batch: Vec<Element<u64>>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn on_frontier(&mut self, f: Time) {
        // The source heartbeats `emitted` after each poll, so no frontier can exceed it.
        let emitted = self.source.emitted.load(Ordering::SeqCst);
        if f != u64::MAX && f > emitted {
            self.ahead.lock().unwrap().push((f, emitted));
        }
        self.frontiers.lock().unwrap().push((now_ns(), f));
    }
}

/// Catches: sinks never told about progress (on_frontier only at the end, or never), and
/// notifications that run ahead of heartbeats (a frontier above what the source promised).
#[test]
fn sink_on_frontier_follows_a_slow_source() {
    let frontiers: Arc<Mutex<Vec<(u64, Time)>>> = Arc::default();
    let log = Arc::new(PaceLog::default());
    let seen = frontiers.clone();
    let gate: Gate = Arc::new(move || seen.lock().unwrap().iter().any(|(_, f)| *f >= 10));
    let ahead: Arc<Mutex<Vec<(Time, u64)>>> = Arc::default();
    let (f2, log2, log3, ahead2) = (frontiers.clone(), log.clone(), log.clone(), ahead.clone());
    bounded(30, move || {
        let df = Dataflow::new(config(2, TrackingMode::Tracker)).unwrap();
        let mut gates = Some(vec![(30, gate, 10_000_000_000)]);
        df.source("paced", 1, move |_| Paced {
            n: 40,
            next: 0,
            step_ns: 1_000_000,
            due: 0,
            gates: gates.take().unwrap(),
            gate_since: None,
            log: log2.clone(),
        })
        .rebalance()
        .sink("s", move |_| NotifiedSink {
            frontiers: f2.clone(),
            source: log3.clone(),
            ahead: ahead2.clone(),
        });
        df.run().unwrap()
    });
    assert!(
        !log.raw_gate_timed_out.load(Ordering::SeqCst),
        "no on_frontier(>= 10) within 10 s while the source was at element 30"
    );
    let ahead = ahead.lock().unwrap();
    assert!(
        ahead.is_empty(),
        "frontier above the source's heartbeat: (frontier, emitted) {ahead:?}"
    );
    let last_emit = log.last_emit_ns.load(Ordering::SeqCst);
    let fr = frontiers.lock().unwrap();
    assert!(fr.iter().any(|(ns, f)| *ns < last_emit && *f >= 10));
}

// ---------------------------------------------------------------------------------------------
// 6. Failures never hang.
// ---------------------------------------------------------------------------------------------

/// An endless source: times 0, 1, 2, ..., heartbeating after every poll.
struct Endless(u64);

impl Source<u64> for Endless {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        for _ in 0..out.budget() {
            out.emit(self.0, self.0);
            self.0 += 1;
        }
        out.heartbeat(self.0);
        SourcePoll::Ready
    }
}

/// Catches: a panic in user code hanging the run (other workers blocked on backpressure or
/// waiting for a frontier that never comes), the panic being reported as an echo ("aborted") or
/// losing its message.
#[test]
fn panicking_map_fails_the_run_with_its_message() {
    for workers in 1..=3 {
        for mode in MODES {
            let what = format!("panic, workers {workers}, {mode:?}");
            let r = bounded(10, move || {
                let cfg = RuntimeConfig {
                    channel_capacity: 2,
                    batch_size: 64,
                    ..config(workers, mode)
                };
                let df = Dataflow::new(cfg).unwrap();
                df.source("endless", workers, |_| Endless(0))
                    .rebalance()
                    .map("explode", |x: u64| {
                        if x == 12_345 {
                            panic!("boom at element {x}");
                        }
                        x
                    })
                    .key_by(|x| *x)
                    .sink("out", VecSink::<u64>::shared().factory());
                df.run()
            });
            match r {
                Err(RunError::Panic { message, .. }) => {
                    assert!(
                        message.contains("boom at element 12345"),
                        "{what}: {message}"
                    )
                }
                other => panic!("{what}: expected a panic error, got {other:?}"),
            }
        }
    }
}

/// Catches: a panic inside a window's aggregate (run by the window operator, not a closure of the
/// element-wise API) not being caught and reported, or hanging the run.
#[test]
fn panicking_aggregate_fails_the_run() {
    struct Bad;
    impl Aggregate<u64> for Bad {
        type Acc = u64;
        type Out = u64;
        fn init(&self) -> u64 {
            0
        }
        fn add(&self, acc: &mut u64, v: &u64) {
            assert!(*v != 5000, "aggregate rejects 5000");
            *acc += v;
        }
        fn finish(&self, acc: u64) -> u64 {
            acc
        }
    }
    for mode in MODES {
        let r = bounded(10, move || {
            let df = Dataflow::new(config(2, mode)).unwrap();
            df.source("endless", 1, |_| Endless(0))
                .tumbling_window("win", 100, |v: &u64| v % 2, Bad)
                .sink("out", VecSink::shared().factory());
            df.run()
        });
        match r {
            Err(RunError::Panic { message, .. }) => {
                assert!(message.contains("aggregate rejects 5000"), "{message}")
            }
            other => panic!("{mode:?}: expected a panic error, got {other:?}"),
        }
    }
}

struct FailingSink {
    writes: u32,
    fail: bool,
}

impl Sink<u64> for FailingSink {
    fn write(&mut self, _batch: Vec<Element<u64>>) -> Result<(), OperatorError> {
        self.writes += 1;
        if self.fail && self.writes == 3 {
            return Err("disk full: /tmp/out.csv".into());
        }
        Ok(())
    }
}

/// Catches: a sink's error being swallowed (run returns Ok), reported as a panic or as the echo
/// of another worker, or the run hanging while an endless source keeps the healthy workers busy
/// (they must be aborted).
#[test]
fn sink_error_fails_the_run_with_its_message() {
    for workers in 1..=3 {
        for mode in MODES {
            let what = format!("sink error, workers {workers}, {mode:?}");
            let r = bounded(10, move || {
                let cfg = RuntimeConfig {
                    batch_size: 16,
                    ..config(workers, mode)
                };
                let df = Dataflow::new(cfg).unwrap();
                df.source("endless", 2, |_| Endless(0))
                    .rebalance()
                    .sink("out", move |w| FailingSink {
                        writes: 0,
                        // Only the last worker's instance fails: the others must be stopped.
                        fail: w + 1 == workers,
                    });
                df.run()
            });
            match r {
                Err(e @ RunError::Vertex { .. }) => {
                    assert!(
                        !e.is_echo(),
                        "{what}: echo reported instead of the cause: {e}"
                    );
                    assert!(e.to_string().contains("disk full"), "{what}: {e}");
                }
                other => panic!("{what}: expected a vertex error, got {other:?}"),
            }
        }
    }
}

/// Catches: an error from Sink::finish (a failed final flush/close) being ignored.
#[test]
fn sink_finish_error_fails_the_run() {
    struct CloseFails;
    impl Sink<u64> for CloseFails {
        fn write(&mut self, _batch: Vec<Element<u64>>) -> Result<(), OperatorError> {
            Ok(())
        }
        fn finish(&mut self) -> Result<(), OperatorError> {
            Err("close failed: quota".into())
        }
    }
    for mode in MODES {
        let r = bounded(10, move || {
            let df = Dataflow::new(config(2, mode)).unwrap();
            let s = Arc::new(in_order(0, 100, 1));
            df.source("src", 1, move |_| Script::new(s.clone()))
                .sink("out", |_| CloseFails);
            df.run()
        });
        match r {
            Err(e @ RunError::Vertex { .. }) => {
                assert!(e.to_string().contains("close failed"), "{e}")
            }
            other => panic!("{mode:?}: expected a vertex error, got {other:?}"),
        }
    }
}

/// Catches: invalid configurations accepted (a run with 0 workers would finish with no output, a
/// batch size of 0 would never send, a channel of capacity 0 cannot hold a batch).
#[test]
fn invalid_configs_are_rejected() {
    let cases: [(&str, RuntimeConfig); 4] = [
        (
            "workers",
            RuntimeConfig {
                workers: 0,
                ..RuntimeConfig::default()
            },
        ),
        (
            "batch size",
            RuntimeConfig {
                batch_size: 0,
                ..RuntimeConfig::default()
            },
        ),
        (
            "channel capacity",
            RuntimeConfig {
                channel_capacity: 0,
                ..RuntimeConfig::default()
            },
        ),
        (
            "granularity",
            RuntimeConfig {
                granularity: 0,
                ..RuntimeConfig::default()
            },
        ),
    ];
    for (field, cfg) in cases {
        match Dataflow::new(cfg) {
            Err(RunError::Config(m)) => assert!(m.contains(field), "{field}: {m}"),
            Err(e) => panic!("{field}: wrong error {e}"),
            Ok(_) => panic!("{field}: invalid config accepted"),
        }
    }
    assert!(Dataflow::new(RuntimeConfig::default()).is_ok());
}

/// Catches: an empty source (Done at once, never emitting) or a source vertex with instances on
/// only some workers keeping the tracker from completing (the run would hang), and windows with
/// no element producing results.
#[test]
fn empty_sources_complete() {
    for workers in 1..=3 {
        for mode in MODES {
            let out = VecSink::<Res>::shared();
            let fact = out.factory();
            let report = bounded(10, move || {
                let df = Dataflow::new(config(workers, mode)).unwrap();
                let empty: Arc<Vec<Ev<u64>>> = Arc::new(Vec::new());
                df.source("src", 2, move |_| Script::new(empty.clone()))
                    .tumbling_window("w", 5, |v: &u64| *v, SumCount(|v: &u64| (*v, 1)))
                    .sink("out", fact);
                df.run().unwrap()
            });
            assert_tracker_clean(&report, "empty");
            assert!(out.take().is_empty());
            assert_eq!(report.source_elements(), 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 8. Property test: random small pipelines.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    instances: usize,
    batch_size: usize,
    channel_capacity: usize,
    granularity: u64,
    size: u64,
    second: Option<u64>,
    n: u64,
    tmax: u64,
    max_delay: u64,
    lateness: u64,
    keys: u64,
    seed: u64,
    mode: TrackingMode,
}

fn case(batch: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Case> {
    (
        (1usize..=3, 1usize..=3, batch, 1usize..=4, 1u64..=5),
        (1u64..=20, prop::option::of(1u64..=30), 0u64..=250),
        (1u64..=400, 0u64..=30, 0u64..=15, 1u64..=6, any::<u64>()),
        prop::sample::select(vec![
            TrackingMode::Tracker,
            TrackingMode::Tracker,
            TrackingMode::None,
        ]),
    )
        .prop_map(
            |(
                (workers, instances, batch_size, channel_capacity, granularity),
                (size, second, n),
                (tmax, max_delay, lateness, keys, seed),
                mode,
            )| Case {
                workers,
                instances,
                batch_size,
                channel_capacity,
                granularity,
                size,
                second,
                n,
                tmax,
                max_delay,
                lateness,
                keys,
                seed,
                mode,
            },
        )
}

/// Runs one random pipeline: a keyed window (optionally feeding a second window keyed
/// differently) into a sink and a frontier-checking sink (trAcker in 2 of 3 cases, else none).
fn window_pipeline_matches_oracle(c: Case) -> Result<(), TestCaseError> {
    let scripts = disordered_scripts(c.seed, c.instances, c.n, c.tmax, c.max_delay, c.lateness);
    let items = all_items(&scripts);
    let keys = c.keys;
    let first = window_oracle(items.iter().map(|&(t, v)| (t, v % keys, (v, 1))), c.size);
    let expected = match c.second {
        Some(s2) => window_oracle(as_items(&first, |k| k % 2), s2),
        None => first.clone(),
    };
    let check = FrontierCheck::new(expected.iter().map(|r| r.0));
    let out = VecSink::<Res>::shared();
    let (fact, check2, cc) = (out.factory(), check.clone(), c.clone());
    let report = bounded(30, move || {
        let cfg = RuntimeConfig {
            batch_size: cc.batch_size,
            channel_capacity: cc.channel_capacity,
            granularity: cc.granularity,
            ..config(cc.workers, cc.mode)
        };
        let df = Dataflow::new(cfg).unwrap();
        let w = df
            .source("src", cc.instances, move |i| {
                Script::new(scripts[i].clone())
            })
            .tumbling_window(
                "w1",
                cc.size,
                move |v: &u64| v % keys,
                SumCount(|v: &u64| (*v, 1)),
            );
        let w = match cc.second {
            Some(s2) => {
                w.tumbling_window("w2", s2, |r: &Res| r.key % 2, SumCount(|r: &Res| r.value))
            }
            None => w,
        };
        w.sink("out", fact);
        w.rebalance().sink("check", check2.factory());
        df.run().unwrap()
    });
    prop_assert_eq!(report.below_frontier(), 0);
    if c.mode == TrackingMode::Tracker {
        prop_assert_eq!(report.tracker.as_ref().unwrap().regressions, 0);
    }
    let mut got = rows(&out.take());
    got.sort();
    prop_assert_eq!(got, expected);
    let log = check.log.lock().unwrap();
    prop_assert!(
        log.violations.is_empty(),
        "early on_frontier: {:?}",
        log.violations
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    })]

    /// Catches: any loss, duplication or early close in windows (and window -> window chains)
    /// under random parallelism, batching, channel sizes, granularities, sparse or empty slots
    /// and disorder; trAcker's invariants (nothing below a frontier, no regression, sinks
    /// notified only after everything below the frontier was written).
    #[test]
    fn random_window_pipelines_match_oracle(c in case(16..=24)) {
        window_pipeline_matches_oracle(c)?;
    }

    /// Tiny batches, 1..=8 elements (many more batches, tags and interleavings per run).
    #[test]
    fn random_window_pipelines_with_tiny_batches_match_oracle(c in case(1..=8)) {
        window_pipeline_matches_oracle(c)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions of bugs these tests found.
// ---------------------------------------------------------------------------------------------

/// Any `batch_size` below 16 (accepted by `RuntimeConfig::validate`) used to make the first full
/// batch panic in `EdgeOutput::seal_and_send`, whose next-buffer capacity was
/// `clamp(16, batch_size)` (min > max). Every batch size must work.
#[test]
fn batch_sizes_below_16_work() {
    for batch_size in [1, 2, 4, 15] {
        let out = VecSink::<u64>::shared();
        let fact = out.factory();
        let r = bounded(10, move || {
            let cfg = RuntimeConfig {
                batch_size,
                ..config(1, TrackingMode::Tracker)
            };
            let df = Dataflow::new(cfg).unwrap();
            let s = Arc::new(in_order(0, 100, 1));
            df.source("src", 1, move |_| Script::new(s.clone()))
                .sink("out", fact);
            df.run().map(|_| ())
        });
        assert!(r.is_ok(), "batch_size {batch_size}: {r:?}");
        assert_eq!(out.take().len(), 100, "batch_size {batch_size}");
    }
}
