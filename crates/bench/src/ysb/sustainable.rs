//! `xorflow-lab bench sustainable --workload ysb`: the highest rate each engine sustains (the Cloudprofiler paper,
//! section 4.4, after Karimov et al.): the rate rises in steps, each step a bounded run; a step
//! is sustainable when every emitted event is received and counted (the oracle's counts) and
//! event-time latency does not grow over it ([`judge`]). The ladder (engines alternating within a
//! step, each leaving after its first unsustainable step) is the one every workload shares:
//! [`crate::sustainable`].

use super::{command_line, Engine, Engines, Point, StandConfig};
use crate::sustainable::{best_table, growth, ladder, Workload};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::PathBuf;
use xorflow_runtime::ValueName;
use xorflow_ysb::bench::BenchResult;

pub use crate::sustainable::{Verdict, GROWTH_FACTOR, GROWTH_SLACK_MS};

/// Judges one step's result (see the module doc). Needs at least 3 s of per-second latency.
pub fn judge(r: &BenchResult) -> Verdict {
    let expected = if r.events_expected > 0 {
        r.events_expected
    } else {
        r.rate * r.duration_s
    };
    if r.events_emitted != expected {
        return Verdict::no(format!("emitted {} of {expected} events", r.events_emitted));
    }
    if r.counts_match_oracle != Some(true) {
        return Verdict::no("counts differ from the oracle's (events lost or counted twice)");
    }
    growth(&r.prewindow_p99_ms_by_second, "pre-window p99")
}

/// What to run.
#[derive(Clone, Debug)]
pub struct SustainableConfig {
    /// The rates, ascending, events/s.
    pub rates: Vec<u64>,
    /// Each step's settings but the rate.
    pub point: Point,
    /// The engines and where results go.
    pub stand: StandConfig,
}

/// One step's outcome for one engine.
pub type Step = crate::sustainable::Step<Engine, BenchResult>;

/// The YSB on the ladder: each step's counts go to `<dir>/counts-<engine>-<rate>.csv`.
struct Ysb<'a> {
    engines: Engines,
    point: Point,
    dir: &'a std::path::Path,
}

impl Workload for Ysb<'_> {
    type Engine = Engine;
    type Result = BenchResult;

    fn name(&self, engine: Engine) -> &'static str {
        engine.name()
    }

    fn run(&mut self, engine: Engine, rate: u64) -> Result<BenchResult> {
        let counts = self
            .dir
            .join(format!("counts-{}-{rate}.csv", engine.name()));
        self.engines
            .run(engine, Point { rate, ..self.point }, &counts)
    }

    fn judge(&self, _: Engine, _: u64, r: &BenchResult) -> Verdict {
        judge(r)
    }
}

/// Runs the ladder; returns the results folder (raw.jsonl, curve.csv, REPORT.md).
///
/// # Errors
/// A build fails or a file cannot be written (a failed run is an unsustainable step).
pub fn run(cfg: &SustainableConfig) -> Result<PathBuf> {
    let (dir, engines) = cfg.stand.start("ysb-sustainable")?;
    let mut w = Ysb {
        engines,
        point: cfg.point,
        dir: &dir,
    };
    let steps = ladder(&mut w, &cfg.rates, &cfg.stand.engines, &dir)?;
    crate::stand::files::write_whole(&dir.join("curve.csv"), curve(&steps).as_bytes())?;
    crate::stand::files::write_whole(&dir.join("REPORT.md"), report(cfg, &steps).as_bytes())?;
    Ok(dir)
}

/// curve.csv: one row per step.
fn curve(steps: &[Step]) -> String {
    let mut t = String::from(
        "engine,rate,events_per_s,prewindow_p99_ms,window_latency_p99_ms,generator_lag_ms_max,sustainable\n",
    );
    for s in steps {
        let r = s.result.as_ref();
        let f =
            |g: &dyn Fn(&BenchResult) -> f64| r.map_or(String::new(), |r| format!("{:.3}", g(r)));
        let _ = writeln!(
            t,
            "{},{},{},{},{},{},{}",
            s.engine.name(),
            s.rate,
            f(&|r| r.throughput_events_per_s),
            f(&|r| r.prewindow_latency_ms.p99),
            f(&|r| r.window_latency_ms.p99),
            f(&|r| r.generator_lag_ms_max),
            s.verdict.ok
        );
    }
    t
}

/// REPORT.md: each engine's last sustainable rate and the curve.
fn report(cfg: &SustainableConfig, steps: &[Step]) -> String {
    let mut t = String::from("# Sustainable throughput, YSB\n\n");
    let _ = writeln!(t, "Command: `{}`\n", command_line());
    let p = cfg.point;
    let _ = writeln!(
        t,
        "Steps of {} s; {} sources; {} process(es) x {} workers. A step is sustainable when every \
         event is emitted and counted (counts = the oracle's) and the pre-window latency's \
         per-second p99 does not grow: the last third's median stays within {GROWTH_FACTOR}x the \
         middle third's + {GROWTH_SLACK_MS} ms (the Cloudprofiler paper, section 4.4).\n",
        p.duration_s, p.sources, p.processes, p.workers
    );
    t.push_str(&best_table(
        steps,
        &cfg.stand.engines,
        |e| e.name(),
        "events/s",
    ));
    let _ = writeln!(
        t,
        "\n| engine | rate | events/s | pre-window p99, ms | window p99, ms | verdict |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---|");
    for s in steps {
        let r = s.result.as_ref();
        let f = |g: &dyn Fn(&BenchResult) -> f64| r.map_or("-".into(), |r| format!("{:.1}", g(r)));
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} |",
            s.engine.name(),
            s.rate,
            f(&|r| r.throughput_events_per_s),
            f(&|r| r.prewindow_latency_ms.p99),
            f(&|r| r.window_latency_ms.p99),
            s.verdict.why
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(series: Vec<f64>) -> BenchResult {
        let mut r: BenchResult = serde_json::from_str(
            r#"{"engine":"x","rate":10,"duration_s":9,"sources":1,"workers":1,"processes":1,
            "start_ms":0,"events_emitted":90,"views_counted":30,"windows":1,
            "generator_lag_ms_max":0,"throughput_events_per_s":10,
            "window_latency_ms":{"p50":0,"p90":0,"p99":0,"max":0,"count":0},
            "updated_latency_ms":{"p50":0,"p90":0,"p99":0,"max":0,"count":0},
            "prewindow_latency_ms":{"p50":0,"p90":0,"p99":0,"max":0,"count":0},
            "counts_match_oracle":true}"#,
        )
        .unwrap();
        r.prewindow_p99_ms_by_second = series;
        r
    }

    #[test]
    fn a_flat_series_is_sustainable_and_a_growing_one_is_not() {
        let flat = result(vec![500.0, 90.0, 5.0, 4.0, 6.0, 5.0, 5.0, 7.0, 4.0]);
        assert!(judge(&flat).ok, "{:?}", judge(&flat));
        // A backlog: latency rises linearly through the run.
        let grows = result((0..9).map(|i| 10.0 + 40.0 * i as f64).collect());
        let v = judge(&grows);
        assert!(!v.ok && v.why.contains("grows"), "{v:?}");
    }

    #[test]
    fn lost_events_or_wrong_counts_are_unsustainable() {
        let mut r = result(vec![1.0; 9]);
        r.events_emitted = 89;
        assert!(judge(&r).why.contains("emitted 89 of 90"));
        let mut r = result(vec![1.0; 9]);
        r.counts_match_oracle = Some(false);
        assert!(!judge(&r).ok);
        assert!(!judge(&result(vec![1.0, 1.0])).ok, "too short to judge");
    }
}
