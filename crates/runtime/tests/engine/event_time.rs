//! Event-time operators against batch oracles: sliding and session windows, allowed lateness
//! and the late side output, keyed timers (through sessions), unions and interval joins.
//!
//! Sources replay scripts of `(event time, key, value)` records in arrival order. A source
//! heartbeats `arrival - bound` (its watermark); a record whose event time is below the watermark
//! travels with the watermark as its time (the engine's contract: nothing below a heartbeat),
//! and the window reads its event time from the record. The oracle applies the documented rule
//! (`crates/core/src/window.rs`): window `[s, e)` takes a record travelling at `τ` if its event
//! time is in `[s, e)` and `e + lateness > τ`; a record no window takes is late.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xorflow_runtime::operators::process::{TIMERS_FIRED, TIMERS_LEFT_AT_END};
use xorflow_runtime::operators::window::{LATE_ELEMENTS, LATE_UPDATES};
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, RuntimeConfig, SessionWindows, Source, SourceOutput, SourcePoll,
    Time, TrackingMode, VecSink, WindowResult, WindowSpec,
};

/// (event time, key, value).
type Rec = (Time, u64, u64);
type Res = WindowResult<u64, (u64, u64)>;
/// Session results: a changelog, `None` withdrawing a session merged into another.
type SessionRes = WindowResult<u64, Option<(u64, u64)>>;
/// (start, end, key) -> (sum, count).
type Table = BTreeMap<(Time, Time, u64), (u64, u64)>;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// One emission: travel time, record, heartbeat after it.
#[derive(Clone, Debug)]
struct Ev {
    time: Time,
    rec: Rec,
    hb: Time,
}

/// `n` records with event times in `[0, tmax)` arriving up to `max_delay` later, in arrival
/// order; the source's watermark is `arrival - bound`. Late records travel at the watermark.
fn script(seed: u64, n: u64, tmax: u64, max_delay: u64, bound: u64, keys: u64) -> Vec<Ev> {
    let mut rng = Rng(seed);
    let mut raw: Vec<(u64, Rec)> = (0..n)
        .map(|i| {
            let t = rng.below(tmax);
            (t + rng.below(max_delay + 1), (t, rng.below(keys), i))
        })
        .collect();
    raw.sort_by_key(|r| r.0);
    let mut hb = 0;
    let mut out = Vec::new();
    for (arrival, rec) in raw {
        hb = hb.max(arrival.saturating_sub(bound));
        out.push(Ev {
            time: rec.0.max(hb),
            rec,
            hb,
        });
    }
    out
}

/// Replays a script; with `pace_ns`, at most 4 records per poll and a pause after each.
struct Script {
    evs: Arc<Vec<Ev>>,
    next: usize,
    pace_ns: u64,
}

impl Source<Rec> for Script {
    fn position(&self) -> Option<String> {
        Some(self.next.to_string())
    }

    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        self.next = position
            .parse()
            .map_err(|e| format!("position {position}: {e}"))?;
        Ok(())
    }

    fn poll(&mut self, out: &mut SourceOutput<'_, Rec>) -> SourcePoll {
        let budget = if self.pace_ns > 0 { 4 } else { out.budget() };
        for _ in 0..budget {
            let Some(ev) = self.evs.get(self.next) else {
                break;
            };
            out.emit(ev.time, ev.rec);
            out.heartbeat(ev.hb);
            self.next += 1;
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

struct SumCount;

impl Aggregate<Rec> for SumCount {
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn init(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, acc: &mut (u64, u64), r: &Rec) {
        acc.0 += r.2;
        acc.1 += 1;
    }
    fn finish(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

/// The oracle: every window's final (sum, count) per key, and the late records (event time,
/// key, value, travel time), by the rule in the module docs.
fn oracle(scripts: &[Vec<Ev>], size: Time, slide: Time, lateness: Time) -> (Table, Vec<Rec>) {
    let mut table = Table::new();
    let mut late = Vec::new();
    for ev in scripts.iter().flatten() {
        let (t, k, v) = ev.rec;
        let mut taken = false;
        // Windows start at multiples of the slide, not below 0.
        let mut s = (t / slide) * slide;
        loop {
            let e = s + size;
            if e > t && e + lateness > ev.time {
                let acc = table.entry((s, e, k)).or_default();
                acc.0 += v;
                acc.1 += 1;
                taken = true;
            }
            if s < slide {
                break;
            }
            s -= slide;
            if s + size <= t {
                break;
            }
        }
        if !taken {
            late.push(ev.rec);
        }
    }
    late.sort();
    (table, late)
}

/// Runs `f` on its own thread, failing after `secs` (a hang becomes a failure).
fn bounded<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let h = std::thread::spawn(f);
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !h.is_finished() {
        assert!(Instant::now() < deadline, "run did not finish in {secs} s");
        std::thread::sleep(Duration::from_millis(2));
    }
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// What a run gave: every result (with its travel time), the late side output, the counters.
struct Outcome {
    results: Vec<Element<Res>>,
    late: Vec<Element<Rec>>,
    late_counted: u64,
    updates_counted: u64,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    workers: usize,
    sources: usize,
    size: Time,
    slide: Time,
    lateness: Time,
    mode: TrackingMode,
    event_time: bool,
    /// Pause of the sources after every 4 records, ns (0: none).
    pace_ns: u64,
}

fn run(case: Case, scripts: Vec<Vec<Ev>>) -> Outcome {
    let results = VecSink::<Res>::shared();
    let late = VecSink::<Rec>::shared();
    let (rf, lf) = (results.factory(), late.factory());
    let report = bounded(60, move || {
        let cfg = RuntimeConfig {
            workers: case.workers,
            tracking: case.mode,
            batch_size: 16,
            granularity: 5,
            ..RuntimeConfig::default()
        };
        let df = Dataflow::new(cfg).unwrap();
        let scripts: Vec<Arc<Vec<Ev>>> = scripts.into_iter().map(Arc::new).collect();
        let src = df.source("src", case.sources, move |i| Script {
            evs: scripts[i].clone(),
            next: 0,
            pace_ns: case.pace_ns,
        });
        let mut spec = WindowSpec::sliding(case.size, case.slide).allowed_lateness(case.lateness);
        if case.event_time {
            spec = spec.event_time(|r: &Rec| r.0);
        }
        let w = src.window("win", spec, |r: &Rec| r.1, SumCount);
        w.results.sink("out", rf);
        w.late.sink("late", lf);
        df.run().unwrap()
    });
    let win = report.vertex("win").unwrap();
    Outcome {
        results: results.take(),
        late: late.take(),
        late_counted: win.counter(LATE_ELEMENTS),
        updates_counted: win.counter(LATE_UPDATES),
    }
}

/// Checks a run against the oracle: each (window, key)'s last result (the largest count: an
/// update only adds) is the oracle's; each fired at most once at `end - 1`; every other result
/// was an update for a late record, after the window's end (a key or window that only late
/// records reached has updates only); the late output is exactly the late records.
/// Returns how many updates there were.
fn check(case: Case, scripts: Vec<Vec<Ev>>) -> u64 {
    let (want, want_late) = oracle(&scripts, case.size, case.slide, case.lateness);
    let out = run(case, scripts);
    let mut last = Table::new();
    let mut on_time: BTreeMap<(Time, Time, u64), u64> = BTreeMap::new();
    for el in &out.results {
        let r = &el.data;
        let id = (r.start, r.end, r.key);
        // An update travels with its late record, which came after the firing at `end`.
        if el.time == r.end - 1 {
            *on_time.entry(id).or_default() += 1;
        } else {
            assert!(
                el.time >= r.end,
                "{case:?}: result {el:?} neither on time nor after"
            );
        }
        let best = last.entry(id).or_default();
        if r.value.1 >= best.1 {
            *best = r.value;
        }
    }
    assert_eq!(last, want, "{case:?}: final results");
    assert!(
        on_time.values().all(|&n| n == 1),
        "{case:?}: one firing per (window, key)"
    );
    let updates = (out.results.len() - on_time.len()) as u64;
    assert_eq!(updates, out.updates_counted, "{case:?}: updates counted");
    let mut late: Vec<Rec> = out.late.iter().map(|e| e.data).collect();
    late.sort();
    assert_eq!(late, want_late, "{case:?}: late side output");
    assert_eq!(
        out.late_counted,
        want_late.len() as u64,
        "{case:?}: late counted"
    );
    if case.mode == TrackingMode::None || !case.event_time {
        // Nothing fires before the end (none), or nothing travels behind its window (no
        // event-time extractor): no updates.
        assert_eq!(updates, 0, "{case:?}: no updates");
    }
    updates
}

#[test]
fn sliding_windows_count_each_element_in_every_window_holding_it() {
    for (size, slide) in [(12, 4), (10, 3), (6, 6)] {
        for mode in [TrackingMode::Tracker, TrackingMode::None] {
            let case = Case {
                workers: 2,
                sources: 2,
                size,
                slide,
                lateness: 0,
                mode,
                event_time: false,
                pace_ns: 0,
            };
            // In order: travel time is event time, nothing is late.
            let scripts = (0..2).map(|i| script(i, 400, 300, 0, 0, 5)).collect();
            check(case, scripts);
        }
    }
}

#[test]
fn late_records_update_fired_windows_until_the_lateness_has_passed() {
    for mode in [
        TrackingMode::Tracker,
        TrackingMode::Markers,
        TrackingMode::None,
    ] {
        let case = Case {
            workers: 2,
            sources: 2,
            size: 20,
            slide: 10,
            lateness: 15,
            mode,
            event_time: true,
            // Paced, so windows fire while late records are still to come.
            pace_ns: 1_000_000,
        };
        // Delays up to 60 against a watermark 5 behind arrival: many records are behind the
        // watermark, some within the lateness, some past it.
        let scripts: Vec<Vec<Ev>> = (0..2).map(|i| script(10 + i, 600, 400, 60, 5, 4)).collect();
        let (want, late) = oracle(&scripts, 20, 10, 15);
        assert!(late.len() > 20, "the script has records past the lateness");
        let behind = scripts
            .iter()
            .flatten()
            .filter(|e| e.time > e.rec.0)
            .count();
        assert!(behind > late.len() + 20, "and records within it");
        assert!(!want.is_empty());
        let updates = check(case, scripts);
        if mode != TrackingMode::None {
            assert!(updates > 0, "{mode:?}: late records updated fired windows");
        }
    }
}

#[test]
fn without_lateness_records_behind_their_windows_all_go_to_the_side_output() {
    let case = Case {
        workers: 2,
        sources: 1,
        size: 10,
        slide: 10,
        lateness: 0,
        mode: TrackingMode::Tracker,
        event_time: true,
        pace_ns: 0,
    };
    check(case, vec![script(3, 500, 300, 40, 0, 3)]);
}

// ---------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------

/// Batch sessionization of records none of which is late: per key, event times sorted; a gap
/// of `gap` or more starts a new session `[first, last + gap)`.
fn sessions_oracle(scripts: &[Vec<Ev>], gap: Time) -> Table {
    let mut by_key: BTreeMap<u64, Vec<(Time, u64)>> = BTreeMap::new();
    for ev in scripts.iter().flatten() {
        by_key
            .entry(ev.rec.1)
            .or_default()
            .push((ev.rec.0, ev.rec.2));
    }
    let mut out = Table::new();
    for (k, mut v) in by_key {
        v.sort();
        let mut i = 0;
        while i < v.len() {
            let (start, mut last, mut acc) = (v[i].0, v[i].0, (0, 0));
            while i < v.len() && v[i].0 < last + gap {
                (last, acc) = (v[i].0, (acc.0 + v[i].1, acc.1 + 1));
                i += 1;
            }
            out.insert((start, last + gap, k), acc);
        }
    }
    out
}

/// Sessions with lateness, by the rule of `crates/core/src/session.rs` replayed in one
/// source's order: a session `[s, e)` takes a record at travel time `τ` while `e + lateness > τ`
/// and their ranges overlap. Returns every session's final result and the late records.
fn late_sessions_oracle(script: &[Ev], gap: Time, lateness: Time) -> (Table, Vec<Rec>) {
    // Per key: (start, end, (sum, count)) of each session.
    type Open = Vec<(Time, Time, (u64, u64))>;
    let mut open: BTreeMap<u64, Open> = BTreeMap::new();
    let mut late = Vec::new();
    for ev in script {
        let (t, k, v) = ev.rec;
        let sessions = open.entry(k).or_default();
        let (mut s, mut e, mut acc) = (t, t + gap, (v, 1));
        loop {
            let hit = sessions
                .iter()
                .position(|x| x.1 + lateness > ev.time && x.0 < e && s < x.1);
            let Some(i) = hit else { break };
            let x = sessions.remove(i);
            (s, e, acc) = (s.min(x.0), e.max(x.1), (acc.0 + x.2 .0, acc.1 + x.2 .1));
        }
        if e + lateness <= ev.time {
            late.push(ev.rec);
            // The merge found nothing live: put back what was there (nothing was removed).
            continue;
        }
        sessions.push((s, e, acc));
    }
    let table = (open.into_iter())
        .flat_map(|(k, v)| v.into_iter().map(move |(s, e, acc)| ((s, e, k), acc)))
        .collect();
    late.sort();
    (table, late)
}

#[derive(Clone, Copy, Debug)]
struct SessionCase {
    workers: usize,
    gap: Time,
    lateness: Time,
    mode: TrackingMode,
    pace_ns: u64,
}

/// Runs session windows over `scripts` (one source each); returns the results, the late
/// output and the timers fired.
fn run_sessions(
    c: SessionCase,
    scripts: Vec<Vec<Ev>>,
) -> (Vec<Element<SessionRes>>, Vec<Rec>, u64) {
    let results = VecSink::<SessionRes>::shared();
    let late = VecSink::<Rec>::shared();
    let (rf, lf) = (results.factory(), late.factory());
    let sources = scripts.len();
    let report = bounded(60, move || {
        let cfg = RuntimeConfig {
            workers: c.workers,
            tracking: c.mode,
            batch_size: 16,
            granularity: 5,
            ..RuntimeConfig::default()
        };
        let df = Dataflow::new(cfg).unwrap();
        let scripts: Vec<Arc<Vec<Ev>>> = scripts.into_iter().map(Arc::new).collect();
        let src = df.source("src", sources, move |i| Script {
            evs: scripts[i].clone(),
            next: 0,
            pace_ns: c.pace_ns,
        });
        let sessions = SessionWindows::new(c.gap, SumCount)
            .allowed_lateness(c.lateness)
            .event_time(|r: &Rec| r.0);
        let w = src.session_window("sessions", sessions, |r: &Rec| r.1);
        w.results.sink("out", rf);
        w.late.sink("late", lf);
        df.run().unwrap()
    });
    let fired = report.vertex("sessions").unwrap().counter(TIMERS_FIRED);
    let mut late: Vec<Rec> = late.take().into_iter().map(|e| e.data).collect();
    late.sort();
    (results.take(), late, fired)
}

/// The sessions a changelog of results leaves, applied in arrival order (one key's results
/// come from one instance, in order): a result replaces its session's, a tombstone removes it.
fn last_results(results: &[Element<SessionRes>]) -> Table {
    let mut last = Table::new();
    for el in results {
        let r = &el.data;
        assert!(
            el.time >= r.end - 1,
            "result {el:?} before its session's end"
        );
        let id = (r.start, r.end, r.key);
        match r.value {
            Some(v) => {
                let before = last.insert(id, v);
                assert!(before.is_none_or(|b| b.1 < v.1), "{el:?} after {before:?}");
            }
            None => assert!(last.remove(&id).is_some(), "tombstone {el:?} of no session"),
        }
    }
    last
}

#[test]
fn sessions_match_a_batch_sessionization() {
    for mode in [TrackingMode::Tracker, TrackingMode::None] {
        for (workers, gap) in [(1, 7), (3, 25)] {
            let c = SessionCase {
                workers,
                gap,
                lateness: 0,
                mode,
                pace_ns: 0,
            };
            // Disordered within the watermark (bound = max delay): nothing is late.
            let scripts: Vec<Vec<Ev>> = (0..2)
                .map(|i| script(20 + i, 500, 3000, 30, 30, 4))
                .collect();
            let want = sessions_oracle(&scripts, gap);
            assert!(want.len() > 20, "{c:?}: the script makes many sessions");
            let (results, late, fired) = run_sessions(c, scripts);
            assert!(late.is_empty(), "{c:?}: nothing is late");
            // No lateness: every session fires once, when complete, and is never updated.
            assert_eq!(results.len(), want.len(), "{c:?}: one result per session");
            assert_eq!(last_results(&results), want, "{c:?}");
            assert!(fired >= want.len() as u64, "{c:?}: timers fired");
        }
    }
}

#[test]
fn late_records_update_sessions_and_the_rest_go_aside() {
    for mode in [TrackingMode::Tracker, TrackingMode::None] {
        let c = SessionCase {
            workers: 2,
            gap: 10,
            lateness: 20,
            mode,
            pace_ns: 1_000_000,
        };
        let script = script(31, 500, 1500, 80, 5, 3);
        let (want, want_late) = late_sessions_oracle(&script, c.gap, c.lateness);
        assert!(
            want_late.len() > 10 && want.len() > 20,
            "the script has late records"
        );
        let (results, late, _) = run_sessions(c, vec![script]);
        assert_eq!(late, want_late, "{c:?}: late side output");
        // The changelog leaves exactly the final sessions: each session a late record merged
        // after it fired was withdrawn.
        let last = last_results(&results);
        assert_eq!(last, want, "{c:?}");
        if mode == TrackingMode::None {
            assert_eq!(
                results.len(),
                want.len(),
                "{c:?}: all fire at the end, once"
            );
        } else {
            assert!(
                results.len() > want.len(),
                "{c:?}: late records updated sessions"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unions and interval joins
// ---------------------------------------------------------------------------------------------

/// Runs an interval join of `left` and `right` scripts (one source each, pausing `pace_ns`
/// after every 4 records) with bounds `(lower, upper)`; returns the (left value, right value)
/// pairs emitted.
fn run_join(
    c: (usize, TrackingMode, u64),
    left: Vec<Ev>,
    right: Vec<Ev>,
    bounds: (i64, i64),
) -> Vec<(u64, u64)> {
    run_join_timers(c, left, right, bounds).0
}

/// As [`run_join`], with the join's cleanup timers fired while the input ran and left unfired
/// at its end.
fn run_join_timers(
    (workers, mode, pace_ns): (usize, TrackingMode, u64),
    left: Vec<Ev>,
    right: Vec<Ev>,
    bounds: (i64, i64),
) -> (Vec<(u64, u64)>, u64, u64) {
    let out = VecSink::<(u64, u64)>::shared();
    let f = out.factory();
    let report = bounded(60, move || {
        let cfg = RuntimeConfig {
            workers,
            tracking: mode,
            batch_size: 16,
            granularity: 5,
            ..RuntimeConfig::default()
        };
        let df = Dataflow::new(cfg).unwrap();
        let source = |name: &str, evs: Vec<Ev>| {
            let evs = Arc::new(evs);
            df.source(name, 1, move |_| Script {
                evs: evs.clone(),
                next: 0,
                pace_ns,
            })
        };
        let (l, r) = (source("left", left), source("right", right));
        let key = |x: &Rec| x.1;
        l.interval_join("join", &r, key, key, bounds, |a: &Rec, b: &Rec| (a.2, b.2))
            .sink("out", f);
        df.run().unwrap()
    });
    let join = report.vertex("join").expect("the join's vertex");
    let timers = (join.counter(TIMERS_FIRED), join.counter(TIMERS_LEFT_AT_END));
    let mut pairs: Vec<(u64, u64)> = out.take().into_iter().map(|e| e.data).collect();
    pairs.sort();
    (pairs, timers.0, timers.1)
}

/// The nested-loop join: every (left, right) pair of a key with `a + lower <= b <= a + upper`.
fn join_oracle(left: &[Ev], right: &[Ev], (lower, upper): (i64, i64)) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for l in left {
        for r in right.iter().filter(|r| r.rec.1 == l.rec.1) {
            let d = r.time as i64 - l.time as i64;
            if lower <= d && d <= upper {
                out.push((l.rec.2, r.rec.2));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn interval_joins_emit_every_matching_pair_once() {
    for mode in [
        TrackingMode::Tracker,
        TrackingMode::Markers,
        TrackingMode::None,
    ] {
        for bounds in [(-5, 5), (0, 12), (-20, -3), (0, 0)] {
            // Disordered within the watermark: no element is late.
            let left = script(50, 400, 600, 20, 20, 6);
            let mut right = script(51, 400, 600, 20, 20, 6);
            right.iter_mut().for_each(|e| e.rec.2 += 1_000_000);
            let want = join_oracle(&left, &right, bounds);
            assert!(
                want.len() > 20 || bounds == (0, 0),
                "{bounds:?}: {} pairs",
                want.len()
            );
            // Paced, so buffers are cleaned up while partners are still to come.
            let (got, fired, left_at_end) =
                run_join_timers((3, mode, 200_000), left, right, bounds);
            assert_eq!(got, want, "{mode:?} {bounds:?}");
            // The last elements' cleanups lie beyond the input's end: left unfired there
            // (`KeyedProcess::CLEANUP_TIMERS`). With a frontier, earlier ones fire as it moves.
            assert!(left_at_end > 0, "{mode:?} {bounds:?}");
            if mode != TrackingMode::None {
                assert!(fired > 0, "{mode:?} {bounds:?}: {fired} fired");
            }
        }
    }
}

#[test]
fn a_union_carries_both_streams_with_their_times() {
    let out = VecSink::<Rec>::shared();
    let f = out.factory();
    let (a, b) = (
        script(60, 300, 500, 10, 10, 3),
        script(61, 300, 500, 10, 10, 3),
    );
    let mut want: Vec<(Time, Rec)> = a.iter().chain(&b).map(|e| (e.time, e.rec)).collect();
    want.sort();
    bounded(60, move || {
        let df = Dataflow::new(RuntimeConfig {
            workers: 2,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let src = |name: &str, evs: Vec<Ev>| {
            let evs = Arc::new(evs);
            df.source(name, 1, move |_| Script {
                evs: evs.clone(),
                next: 0,
                pace_ns: 0,
            })
        };
        let (x, y) = (src("a", a), src("b", b));
        x.union("both", &y).sink("out", f);
        df.run().unwrap()
    });
    let mut got: Vec<(Time, Rec)> = out.take().into_iter().map(|e| (e.time, e.data)).collect();
    got.sort();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: a run that fails, resumed
// ---------------------------------------------------------------------------------------------

/// Collects results and fails the run (once `fail_after` results were written across its
/// instances, if set), like a sink whose disk filled up.
struct FailingSink {
    seen: Arc<std::sync::Mutex<Vec<Element<Res>>>>,
    fail_after: Option<usize>,
}

impl xorflow_runtime::Sink<Res> for FailingSink {
    fn write(&mut self, batch: Vec<Element<Res>>) -> Result<(), OperatorError> {
        let mut seen = self.seen.lock().unwrap();
        seen.extend(batch);
        match self.fail_after {
            Some(n) if seen.len() >= n => {
                Err(format!("sink failed after {} results", seen.len()).into())
            }
            _ => Ok(()),
        }
    }
}

type Build = fn(&xorflow_runtime::Stream<Rec>) -> xorflow_runtime::Stream<Res>;

/// Runs `build` over `script` with checkpoints every 5 ms: a first run fails after
/// `fail_after` results, a second resumes from its newest checkpoint. Returns both runs'
/// results.
fn fail_and_resume(script: Vec<Ev>, fail_after: usize, build: Build) -> Vec<Element<Res>> {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let script = Arc::new(script);
    for (resume, fail_after) in [(false, Some(fail_after)), (true, None)] {
        let (seen2, script2, ck) = (seen.clone(), script.clone(), dir.path().join("ck"));
        let outcome = bounded(60, move || {
            let cfg = RuntimeConfig {
                workers: 2,
                batch_size: 8,
                granularity: 5,
                checkpoint_interval: Some(Duration::from_millis(5)),
                checkpoint_dir: Some(ck),
                resume,
                ..RuntimeConfig::default()
            };
            let df = Dataflow::new(cfg).unwrap();
            let src = df.source("src", 1, move |_| Script {
                evs: script2.clone(),
                next: 0,
                pace_ns: 300_000,
            });
            build(&src).sink("out", move |_| FailingSink {
                seen: seen2.clone(),
                fail_after,
            });
            df.run()
        });
        if !resume {
            assert!(outcome.is_err(), "the first run fails");
            continue;
        }
        let report = outcome.expect("the resumed run succeeds");
        let ck = report.checkpoints.as_ref().expect("checkpointed");
        assert!(
            ck.resumed_from.is_some(),
            "resumed from a checkpoint: {ck:?}"
        );
        let replayed = report.vertex("src").unwrap().elements_out;
        assert!(
            replayed < script.len() as u64,
            "the resumed run skipped what was checkpointed"
        );
    }
    let seen = seen.lock().unwrap();
    seen.clone()
}

/// The windows (sliding, lateness 15) of a run that failed and was resumed hold exactly the
/// oracle's counts: a record lost or counted twice across the checkpoint would show.
#[test]
fn sliding_windows_with_lateness_resume_from_a_checkpoint_exactly_once() {
    let script = script(41, 1500, 1500, 40, 5, 3);
    let (want, _) = oracle(std::slice::from_ref(&script), 20, 10, 15);
    let build: Build = |s| {
        let spec = WindowSpec::sliding(20, 10)
            .allowed_lateness(15)
            .event_time(|r: &Rec| r.0);
        s.window("win", spec, |r: &Rec| r.1, SumCount).results
    };
    let results = fail_and_resume(script, want.len() / 3, build);
    let mut last = Table::new();
    for el in &results {
        let best = last
            .entry((el.data.start, el.data.end, el.data.key))
            .or_default();
        *best = (*best).max(el.data.value);
    }
    assert_eq!(last, want);
}

/// The same for sessions with lateness.
#[test]
fn sessions_resume_from_a_checkpoint_exactly_once() {
    let script = script(43, 1500, 4000, 40, 5, 3);
    let (want, _) = late_sessions_oracle(&script, 12, 15);
    let build: Build = |s| {
        let sessions = SessionWindows::new(12, SumCount)
            .allowed_lateness(15)
            .event_time(|r: &Rec| r.0);
        // The results without tombstones: the failed run's output after its last checkpoint
        // was never committed, so its tombstones and results need not match the resumed run's.
        (s.session_window("sessions", sessions, |r: &Rec| r.1)
            .results)
            .flat_map("results", |r| {
                let value = r.value?;
                Some(WindowResult {
                    start: r.start,
                    end: r.end,
                    key: r.key,
                    value,
                })
            })
    };
    let results = fail_and_resume(script, want.len() / 3, build);
    let mut last = Table::new();
    for el in &results {
        let best = last.entry((el.data.start, el.data.end, el.data.key));
        let best = best.or_default();
        *best = (*best).max(el.data.value);
    }
    for (id, acc) in &want {
        assert_eq!(last.get(id), Some(acc), "session {id:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any window shape, lateness, disorder and parallelism: final results and the late output
    /// match the oracle, under trAcker and without tracking.
    #[test]
    fn windows_match_the_oracle(
        seed in any::<u64>(),
        size in 1u64..30,
        slide_div in 1u64..4,
        lateness in 0u64..40,
        delay in 0u64..50,
        bound in 0u64..10,
        workers in 1usize..4,
        sources in 1usize..3,
        tracker in any::<bool>(),
    ) {
        let slide = (size / slide_div).max(1);
        let mode = if tracker { TrackingMode::Tracker } else { TrackingMode::None };
        let case = Case { workers, sources, size, slide, lateness, mode, event_time: true, pace_ns: 0 };
        let scripts = (0..sources as u64).map(|i| script(seed ^ i, 200, 200, delay, bound, 3)).collect();
        check(case, scripts);
    }

    /// Interval joins of any bounds over disordered inputs match the nested-loop join.
    #[test]
    fn interval_joins_match_the_oracle(
        seed in any::<u64>(),
        lower in -30i64..30,
        width in 0i64..30,
        delay in 0u64..40,
        workers in 1usize..4,
        tracker in any::<bool>(),
    ) {
        let mode = if tracker { TrackingMode::Tracker } else { TrackingMode::None };
        let bounds = (lower, lower + width);
        let left = script(seed, 200, 300, delay, delay, 4);
        let mut right = script(seed ^ 1, 200, 300, delay, delay, 4);
        right.iter_mut().for_each(|e| e.rec.2 += 1_000_000);
        let want = join_oracle(&left, &right, bounds);
        prop_assert_eq!(run_join((workers, mode, 0), left, right, bounds), want);
    }

    /// Sessions of any gap and lateness over one disordered source: final results and the
    /// late output match the replayed rule.
    #[test]
    fn sessions_match_the_oracle(
        seed in any::<u64>(),
        gap in 1u64..30,
        lateness in 0u64..40,
        delay in 0u64..60,
        bound in 0u64..10,
        workers in 1usize..4,
        tracker in any::<bool>(),
    ) {
        let mode = if tracker { TrackingMode::Tracker } else { TrackingMode::None };
        let c = SessionCase { workers, gap, lateness, mode, pace_ns: 0 };
        let script = script(seed, 300, 600, delay, bound, 3);
        let (want, want_late) = late_sessions_oracle(&script, gap, lateness);
        let (results, late, _) = run_sessions(c, vec![script]);
        prop_assert_eq!(late, want_late);
        let last = last_results(&results);
        for (id, acc) in &want {
            prop_assert_eq!(last.get(id), Some(acc), "session {:?}", id);
        }
    }
}
