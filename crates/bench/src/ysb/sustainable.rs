//! `xorflow bench sustainable --workload ysb`: the highest rate each engine sustains (seed 002,
//! section 4.4, after Karimov et al.): the rate rises in steps, each step a bounded run; a step
//! is sustainable when every emitted event is received and counted (the oracle's counts) and
//! event-time latency does not grow over it ([`judge`]). An engine leaves the ladder after its
//! first unsustainable step; the engines alternate within a step.

use super::{append_raw, command_line, Engine, Point, StandConfig};
use crate::subprocess::median;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::PathBuf;
use xorflow_ysb::bench::BenchResult;

/// Latency grows when the last third's median per-second p99 exceeds the middle third's by this
/// factor plus [`GROWTH_SLACK_MS`] (the first third is warm-up: JIT, connection set-up).
pub const GROWTH_FACTOR: f64 = 1.25;
/// See [`GROWTH_FACTOR`], ms.
pub const GROWTH_SLACK_MS: f64 = 20.0;

/// A step's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Sustainable.
    pub ok: bool,
    /// Why not (or "ok").
    pub why: String,
}

/// Judges one step's result (see the module doc). Needs at least 3 s of per-second latency.
pub fn judge(r: &BenchResult) -> Verdict {
    let no = |why: String| Verdict { ok: false, why };
    let expected = if r.events_expected > 0 {
        r.events_expected
    } else {
        r.rate * r.duration_s
    };
    if r.events_emitted != expected {
        return no(format!("emitted {} of {expected} events", r.events_emitted));
    }
    if r.counts_match_oracle != Some(true) {
        return no("counts differ from the oracle's (events lost or counted twice)".into());
    }
    let s = &r.prewindow_p99_ms_by_second;
    if s.len() < 3 {
        return no(format!(
            "{} s of latency series: too short to judge",
            s.len()
        ));
    }
    let third = s.len() / 3;
    let middle = median(s[third..2 * third].to_vec());
    let last = median(s[2 * third..].to_vec());
    if last > middle * GROWTH_FACTOR + GROWTH_SLACK_MS {
        return no(format!(
            "pre-window p99 grows: median {middle:.1} ms in the middle third, {last:.1} ms in the last"
        ));
    }
    Verdict {
        ok: true,
        why: "ok".into(),
    }
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
#[derive(Clone, Debug)]
pub struct Step {
    /// Who.
    pub engine: Engine,
    /// The rate asked for, events/s.
    pub rate: u64,
    /// Its figures; `None` when the run failed.
    pub result: Option<BenchResult>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Runs the ladder; returns the results folder (raw.jsonl, curve.csv, REPORT.md).
///
/// # Errors
/// A build fails or a file cannot be written (a failed run is an unsustainable step).
pub fn run(cfg: &SustainableConfig) -> Result<PathBuf> {
    let (dir, e) = cfg.stand.start("ysb-sustainable")?;
    let mut live = cfg.stand.engines.clone();
    let mut steps = Vec::new();
    for &rate in &cfg.rates {
        for engine in live.clone() {
            eprintln!("sustainable: {} at {rate} events/s", engine.name());
            let p = Point { rate, ..cfg.point };
            let counts = dir.join(format!("counts-{}-{rate}.csv", engine.name()));
            let (result, verdict) = match e.run(engine, p, &counts) {
                Ok(r) => {
                    let v = judge(&r);
                    let mut line = serde_json::to_value(&r)?;
                    line["sustainable"] = v.ok.into();
                    line["why"] = v.why.clone().into();
                    append_raw(&dir, &line)?;
                    (Some(r), v)
                }
                Err(err) => (
                    None,
                    Verdict {
                        ok: false,
                        why: format!("run failed: {err:#}"),
                    },
                ),
            };
            if !verdict.ok {
                live.retain(|&x| x != engine);
            }
            steps.push(Step {
                engine,
                rate,
                result,
                verdict,
            });
        }
    }
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
         middle third's + {GROWTH_SLACK_MS} ms (seed 002, section 4.4).\n",
        p.duration_s, p.sources, p.processes, p.workers
    );
    let _ = writeln!(
        t,
        "| engine | highest sustainable rate, events/s |\n|---|---:|"
    );
    for &e in &cfg.stand.engines {
        let best = steps
            .iter()
            .filter(|s| s.engine == e && s.verdict.ok)
            .map(|s| s.rate)
            .max();
        let _ = writeln!(
            t,
            "| {} | {} |",
            e.name(),
            best.map_or("none of the steps".into(), |r| r.to_string())
        );
    }
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
