//! Sustainable throughput (the Cloudprofiler paper, section 4.4, after Karimov et al.): the rate rises in steps,
//! each step a bounded run per engine; a step is sustainable when everything emitted is received
//! and latency does not grow over it. This module is the part every workload shares: the ladder
//! ([`ladder`]: engines alternate within a step, an engine leaves after its first unsustainable
//! step, every step is appended to `raw.jsonl` as it ends, with the machine's load as it
//! started), the growth test on a per-second
//! latency series ([`growth`]) and the table of each engine's highest sustainable rate
//! ([`best_table`]). The workloads: the YSB (`crate::ysb::sustainable`) and the trAcker paper's chain
//! ([`chain`]).

pub mod chain;
pub mod series;

use anyhow::Result;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Latency grows when the last third's median per-second p99 exceeds the middle third's by this
/// factor plus [`GROWTH_SLACK_MS`] (the first third is warm-up: JIT, connection set-up).
pub const GROWTH_FACTOR: f64 = 1.25;
/// See [`GROWTH_FACTOR`], ms.
pub const GROWTH_SLACK_MS: f64 = 20.0;
/// Latency also grows when the last third's median exceeds the middle third's by more than
/// this many ms per second between them: a backlog, whose latency rises by (rate / capacity - 1)
/// s per s, 50 ms/s at 5 % over capacity. The factor alone passes a backlog that is already
/// seconds deep when the middle third starts (Storm at twice its capacity: 7.4 s -> 8.8 s).
pub const GROWTH_SLOPE_MS_PER_S: f64 = 50.0;

/// A step's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Sustainable.
    pub ok: bool,
    /// Why not (or "ok").
    pub why: String,
}

impl Verdict {
    /// Sustainable.
    pub fn ok() -> Self {
        Verdict {
            ok: true,
            why: "ok".into(),
        }
    }

    /// Not sustainable, because of `why`.
    pub fn no(why: impl Into<String>) -> Self {
        Verdict {
            ok: false,
            why: why.into(),
        }
    }
}

/// The medians of a per-second series' middle and last thirds (the first third is warm-up);
/// None with fewer than 3 entries.
pub fn thirds(series: &[f64]) -> Option<(f64, f64)> {
    let third = series.len() / 3;
    (third > 0).then(|| {
        (
            crate::subprocess::median(series[third..2 * third].to_vec()),
            crate::subprocess::median(series[2 * third..].to_vec()),
        )
    })
}

/// Whether a per-second latency series `series` (ms, one entry per second of the step, the
/// first third warm-up) grows: not sustainable when the last third's median exceeds
/// [`GROWTH_FACTOR`] x the middle third's + [`GROWTH_SLACK_MS`], or the middle third's by more
/// than [`GROWTH_SLOPE_MS_PER_S`] per second of a third, or when it has fewer than 3 seconds.
/// `what` names the latency in the reason ("pre-window p99").
pub fn growth(series: &[f64], what: &str) -> Verdict {
    let Some((middle, last)) = thirds(series) else {
        return Verdict::no(format!(
            "{} s of latency series: too short to judge",
            series.len()
        ));
    };
    let third_s = (series.len() / 3) as f64;
    let slope = (last - middle) / third_s;
    if last > middle * GROWTH_FACTOR + GROWTH_SLACK_MS || slope > GROWTH_SLOPE_MS_PER_S {
        return Verdict::no(format!(
            "{what} grows: median {middle:.1} ms in the middle third, {last:.1} ms in the last \
             ({slope:.0} ms per s)"
        ));
    }
    Verdict::ok()
}

/// One workload on the ladder: how to run one engine at one rate, and how to judge the result.
pub trait Workload {
    /// Who runs the steps.
    type Engine: Copy + PartialEq;
    /// One step's figures.
    type Result: Serialize;

    /// The engine's name in results ("xorflow", "flink", ...).
    fn name(&self, engine: Self::Engine) -> &'static str;

    /// Runs one step: `engine` at `rate` (events or elements/s).
    ///
    /// # Errors
    /// The run failed (not finished in time, exited unsuccessfully, printed no result): the
    /// ladder records an unsustainable step with the error as its reason.
    fn run(&mut self, engine: Self::Engine, rate: u64) -> Result<Self::Result>;

    /// The verdict on a finished step.
    fn judge(&self, engine: Self::Engine, rate: u64, result: &Self::Result) -> Verdict;
}

/// One step's outcome for one engine.
#[derive(Clone, Debug)]
pub struct Step<E, R> {
    /// Who.
    pub engine: E,
    /// The rate asked for, events or elements/s.
    pub rate: u64,
    /// Its figures; `None` when the run failed.
    pub result: Option<R>,
    /// The machine's 1-minute load average as the step started (the machine is shared).
    pub load_before: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Runs the ladder over `rates` (ascending) with `engines`, in order within each step: each
/// step's result goes to `<dir>/raw.jsonl` as it ends (its JSON with `engine`, `rate`,
/// `sustainable`, `why` and `load_before`; a failed run's line has only those), and an engine leaves after its
/// first unsustainable step. Returns every step run, in order.
///
/// # Errors
/// `raw.jsonl` cannot be written (a failed run is an unsustainable step, not an error).
pub fn ladder<W: Workload>(
    w: &mut W,
    rates: &[u64],
    engines: &[W::Engine],
    dir: &Path,
) -> Result<Vec<Step<W::Engine, W::Result>>> {
    let mut live = engines.to_vec();
    let mut steps = Vec::new();
    for &rate in rates {
        for engine in live.clone() {
            let name = w.name(engine);
            eprintln!("sustainable: {name} at {rate}/s");
            let load_before = load_average();
            let (result, verdict, mut line) = match w.run(engine, rate) {
                Ok(r) => {
                    let v = w.judge(engine, rate, &r);
                    let line = match serde_json::to_value(&r)? {
                        o @ serde_json::Value::Object(_) => o,
                        other => serde_json::json!({ "result": other }),
                    };
                    (Some(r), v, line)
                }
                Err(err) => (
                    None,
                    Verdict::no(format!("run failed: {err:#}")),
                    serde_json::json!({}),
                ),
            };
            line["engine"] = name.into();
            line["rate"] = rate.into();
            line["sustainable"] = verdict.ok.into();
            line["why"] = verdict.why.clone().into();
            line["load_before"] = load_before.into();
            crate::ysb::append_raw(dir, &line)?;
            eprintln!("sustainable: {name} at {rate}/s: {}", verdict.why);
            if !verdict.ok {
                live.retain(|&x| x != engine);
            }
            steps.push(Step {
                engine,
                rate,
                result,
                load_before,
                verdict,
            });
        }
    }
    Ok(steps)
}

/// The machine's 1-minute load average (None where /proc is not there).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The highest rate `engine` sustained (None: none of its steps).
pub fn best<E: PartialEq, R>(steps: &[Step<E, R>], engine: E) -> Option<u64> {
    steps
        .iter()
        .filter(|s| s.engine == engine && s.verdict.ok)
        .map(|s| s.rate)
        .max()
}

/// `x` (> 0) to 3 significant digits: 0.250, 0.000500.
fn significant(x: f64) -> String {
    let digits = (2 - x.log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// The Markdown table of each engine's highest sustainable rate (`unit`, e.g. "events/s"), its
/// first unsustainable step and its ratio to the first engine's (xorflow).
pub fn best_table<E: Copy + PartialEq, R>(
    steps: &[Step<E, R>],
    engines: &[E],
    name: impl Fn(E) -> &'static str,
    unit: &str,
) -> String {
    let mut t = format!(
        "| engine | highest sustainable rate, {unit} | first unsustainable step: why | ratio to {} |\n\
         |---|---:|---|---:|\n",
        engines.first().map_or("-", |&e| name(e))
    );
    let first = engines.first().and_then(|&e| best(steps, e));
    for &e in engines {
        let b = best(steps, e);
        let failed = steps
            .iter()
            .find(|s| s.engine == e && !s.verdict.ok)
            .map_or("none (every step passed)".to_string(), |s| {
                format!("{}: {}", s.rate, s.verdict.why)
            });
        let ratio = match (b, first) {
            (Some(b), Some(f)) => significant(b as f64 / f as f64),
            _ => "-".into(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {ratio} |",
            name(e),
            b.map_or("none of the steps".into(), |r| r.to_string()),
            failed.replace('|', "/")
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_passes_a_flat_series_and_fails_a_rising_or_short_one() {
        // The first third (warm-up) may be anything.
        let flat = [500.0, 90.0, 5.0, 4.0, 6.0, 5.0, 5.0, 7.0, 4.0];
        assert!(growth(&flat, "p99").ok);
        let rising: Vec<f64> = (0..9).map(|i| 10.0 + 40.0 * i as f64).collect();
        let v = growth(&rising, "p99");
        assert!(!v.ok && v.why.contains("p99 grows"), "{v:?}");
        // Just within the bound: middle median 100, last 100 * 1.25 + 20 = 145.
        let edge = [0.0, 0.0, 0.0, 100.0, 100.0, 100.0, 145.0, 145.0, 145.0];
        assert!(growth(&edge, "p99").ok);
        let over = [0.0, 0.0, 0.0, 100.0, 100.0, 100.0, 146.0, 146.0, 146.0];
        assert!(!growth(&over, "p99").ok);
        // A deep backlog: within 1.25x, but 100 ms more every second.
        let deep = [
            0.0, 0.0, 0.0, 5000.0, 5000.0, 5000.0, 5300.0, 5300.0, 5300.0,
        ];
        let v = growth(&deep, "p99");
        assert!(!v.ok && v.why.contains("100 ms per s"), "{v:?}");
        let steady = [
            0.0, 0.0, 0.0, 5000.0, 5000.0, 5000.0, 5140.0, 5140.0, 5140.0,
        ];
        assert!(growth(&steady, "p99").ok);
        assert!(growth(&[1.0, 1.0], "p99").why.contains("too short"));
    }

    /// A workload whose engine 1 fails at 30/s and engine 2 errors at 20/s.
    struct Fake;
    impl Workload for Fake {
        type Engine = u8;
        type Result = u64;
        fn name(&self, e: u8) -> &'static str {
            ["zero", "one", "two"][e as usize]
        }
        fn run(&mut self, e: u8, rate: u64) -> Result<u64> {
            anyhow::ensure!(!(e == 2 && rate >= 20), "boom");
            Ok(rate)
        }
        fn judge(&self, e: u8, rate: u64, _: &u64) -> Verdict {
            if e == 1 && rate >= 30 {
                Verdict::no("too fast")
            } else {
                Verdict::ok()
            }
        }
    }

    #[test]
    fn an_engine_leaves_after_its_first_unsustainable_step() {
        let dir = std::env::temp_dir().join(format!("xorflow-ladder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let steps = ladder(&mut Fake, &[10, 20, 30, 40], &[0, 1, 2], &dir).unwrap();
        let run: Vec<(u8, u64, bool)> = steps
            .iter()
            .map(|s| (s.engine, s.rate, s.verdict.ok))
            .collect();
        assert_eq!(
            run,
            [
                (0, 10, true),
                (1, 10, true),
                (2, 10, true),
                (0, 20, true),
                (1, 20, true),
                (2, 20, false),
                (0, 30, true),
                (1, 30, false),
                (0, 40, true),
            ]
        );
        assert_eq!((best(&steps, 0), best(&steps, 1)), (Some(40), Some(20)));
        let raw = std::fs::read_to_string(dir.join("raw.jsonl")).unwrap();
        assert_eq!(raw.lines().count(), 9);
        assert!(raw.contains(r#""why":"run failed: boom""#), "{raw}");
        assert_eq!(raw.matches(r#""load_before":"#).count(), 9, "{raw}");
        let t = best_table(&steps, &[0, 1, 2], |e| Fake.name(e), "elements/s");
        assert!(t.contains("| one | 20 | 30: too fast | 0.500 |"), "{t}");
        assert!(
            t.contains("| zero | 40 | none (every step passed) | 1.00 |"),
            "{t}"
        );
        assert_eq!(significant(0.0005), "0.000500");
        assert!(
            t.contains("| two | 10 | 20: run failed: boom | 0.250 |"),
            "{t}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
