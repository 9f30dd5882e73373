//! `xorflow-lab bench sustainable --workload chain`: the highest rate at which the trAcker paper's chain runs
//! on xorflow and on the chain peers (timely, Apache Flink, Apache Storm: `peers/`, the same
//! programs `xorflow-lab bench peers` runs), each with its completeness mechanism at one granularity,
//! on the shared ladder ([`super::ladder`]).
//!
//! Every engine gets the same step: `rate x duration` elements on an absolute schedule (each
//! carries its due time, so a source held back by the engine shows as latency), K stages,
//! [`WORKERS`] workers in one process, the first third of the elements as warm-up. A step is
//! sustainable ([`judge`]) when every element the schedule emitted is received within the step
//! (a run still going `grace` after the schedule ends is stopped and fails; the JVM peers, whose
//! process also starts a JVM and runs warm-up jobs, by the `elapsed_s` of their measured run),
//! and the end-to-end element latency does not grow over it: the per-second p99 series by due
//! time ([`super::series`]; every engine prints one, asked with `--latency-by-second`) passes
//! [`super::growth`]. A peer whose output has no series (a Flink or Storm peer from before it
//! printed one) is judged by the rate its sources achieved against the schedule instead (both
//! throttle their sources when their bounded buffers fill, so a backlog shows as a lower rate):
//! at least [`MIN_ACHIEVED`] of the rate. REPORT.md says which engine was judged how.

use super::{growth, ladder, load_average, Verdict, Workload};
use crate::chain::{ChainConfig, ChainMeasures};
use crate::stand::experiments::peers::{build, JvmPeers, PeerResult, Peers, WORKERS};
use crate::subprocess::stdout_within;
use anyhow::{bail, Context, Result};
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xorflow_runtime::args::{Argv, EngineArgs};
use xorflow_runtime::TrackingMode;

mod report;

/// The least fraction of the asked rate a source must achieve when its engine printed no latency
/// series (the fallback of [`judge`]).
pub const MIN_ACHIEVED: f64 = 0.99;
/// Seconds the JVM peers get on top of the step and its grace: the JVM, their cluster's start
/// and their warm-up runs.
pub const JVM_SETUP_S: u64 = 120;
/// Flink's warm-up runs before the measured one (elements each, as fast as it goes).
const FLINK_WARMUP: (u32, u64) = (2, 500_000);
/// Storm's (it moves about 18,000 elements/s at K = 10 with acking here).
const STORM_WARMUP: (u32, u64) = (1, 20_000);

/// An engine on the chain ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// This binary (`xorflow-lab bench chain`).
    Xorflow,
    /// timely dataflow (`peers/timely`): pointstamp frontiers, one timestamp per substream.
    Timely,
    /// Apache Flink (`peers/flink`, MiniCluster): a punctuated watermark per substream.
    Flink,
    /// Apache Storm (`peers/storm`, LocalCluster): its XOR acker.
    Storm,
}

impl Engine {
    /// Every engine, in ladder order.
    pub const ALL: [Engine; 4] = [
        Engine::Xorflow,
        Engine::Timely,
        Engine::Flink,
        Engine::Storm,
    ];

    /// Its name in results.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Xorflow => "xorflow",
            Engine::Timely => "timely",
            Engine::Flink => "flink",
            Engine::Storm => "storm",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ChainLadderConfig {
    /// The rates, ascending, elements/s.
    pub rates: Vec<u64>,
    /// Seconds of schedule per step (at least 3).
    pub duration_s: u64,
    /// Pass-through stages K.
    pub stages: usize,
    /// Elements per substream (every engine's completeness unit); ignored with
    /// `tracking` = none, which runs every engine without tracking.
    pub granularity: u64,
    /// xorflow's completeness tracking.
    pub tracking: TrackingMode,
    /// Flink's buffer timeout, ms.
    pub flink_buffer_timeout_ms: u64,
    /// The engines, xorflow first.
    pub engines: Vec<Engine>,
    /// Results root: the run writes `<out>/chain-sustainable-<UTC>/`.
    pub out: PathBuf,
    /// Where the peers are (`peers/`).
    pub peers_dir: PathBuf,
    /// This binary.
    pub xorflow: PathBuf,
}

impl ChainLadderConfig {
    /// Elements of a step at `rate`: the schedule's `rate x duration`.
    pub fn elements(&self, rate: u64) -> u64 {
        rate * self.duration_s
    }

    /// Warm-up elements of a step at `rate`: the first third of its seconds.
    pub fn warmup(&self, rate: u64) -> u64 {
        rate * (self.duration_s / 3)
    }

    /// The granularity every engine runs at (0: no tracking).
    pub fn granularity(&self) -> u64 {
        if self.tracking == TrackingMode::None {
            0
        } else {
            self.granularity
        }
    }

    /// How long a step may take past its schedule before it is stopped, s: half the step, at
    /// least 5 s.
    pub fn grace_s(&self) -> u64 {
        (self.duration_s / 2).max(5)
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// A message naming the option.
    pub fn validate(&self) -> Result<()> {
        if self.rates.is_empty() || !self.rates.is_sorted() || self.rates.contains(&0) {
            bail!("--rate must list rates above 0 in ascending order");
        }
        if self.duration_s < 3 {
            bail!("--duration must be at least 3s (the judge compares thirds of the step)");
        }
        if self.tracking != TrackingMode::None && self.granularity == 0 {
            bail!("--granularity must be at least 1 (or --tracking none)");
        }
        if self.engines.first() != Some(&Engine::Xorflow) {
            bail!("xorflow must be the first engine");
        }
        Ok(())
    }
}

/// One step's figures: what the engine printed, as it printed it, and the chain's measures in it.
#[derive(Clone, Debug)]
pub struct ChainStep {
    /// The engine's JSON line.
    pub json: serde_json::Value,
    /// The measures in it.
    pub measures: ChainMeasures,
}

impl Serialize for ChainStep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

/// The verdict on a step at `rate` of `cfg` (see the module doc).
pub fn judge(cfg: &ChainLadderConfig, rate: u64, m: &ChainMeasures) -> Verdict {
    let expected = cfg.elements(rate);
    if m.elements != expected {
        return Verdict::no(format!("emitted {} of {expected} elements", m.elements));
    }
    if let Some(r) = m.elements_received.filter(|&r| r != m.elements) {
        return Verdict::no(format!("received {r} of {} elements", m.elements));
    }
    // The step's time limit: what stops xorflow and timely, for the JVM peers' measured run.
    let limit = (cfg.duration_s + cfg.grace_s()) as f64;
    if m.elapsed_s > limit {
        return Verdict::no(format!(
            "not every element received within the step: the run took {:.1} s, over its {} s \
             schedule + {} s",
            m.elapsed_s,
            cfg.duration_s,
            cfg.grace_s()
        ));
    }
    if m.element_p99_ms_by_second.is_empty() {
        let achieved = m.achieved_rate.unwrap_or(0.0);
        if achieved < MIN_ACHIEVED * rate as f64 {
            return Verdict::no(format!(
                "the sources achieved {achieved:.0} elements/s, under {MIN_ACHIEVED} of the rate \
                 (held back: a backlog)"
            ));
        }
        return Verdict::ok();
    }
    let measured: u64 = m.element_count_by_second.iter().sum();
    if measured != m.elements - m.warmup {
        return Verdict::no(format!(
            "the latency series holds {measured} of the {} measured elements",
            m.elements - m.warmup
        ));
    }
    growth(&m.element_p99_ms_by_second, "element-latency p99")
}

/// The chain on the ladder: the built peers and the step settings.
struct Chain<'a> {
    cfg: &'a ChainLadderConfig,
    peers: Option<Peers>,
}

impl Chain<'_> {
    /// The command line of `engine` at `rate`.
    fn command(&self, engine: Engine, rate: u64) -> Result<Vec<String>> {
        let c = self.cfg;
        let g = c.granularity();
        if engine == Engine::Xorflow {
            let d = ChainConfig::default();
            let cfg = ChainConfig {
                stages: c.stages,
                elements: c.elements(rate),
                rate: rate as f64,
                granularity: if g == 0 { d.granularity } else { g },
                warmup: c.warmup(rate),
                latency_by_second: true,
                engine: EngineArgs {
                    workers: WORKERS,
                    tracking: c.tracking,
                    ..EngineArgs::default()
                },
                ..d
            };
            return Ok(crate::stand::runner::chain_command(&c.xorflow, &cfg));
        }
        let peers = self.peers.as_ref().context("the peers were not built")?;
        let mut a = Argv::default();
        let (base, warm) = match engine {
            Engine::Timely => (Some(vec![peers.timely.display().to_string()]), None),
            Engine::Flink => (peers.flink.clone(), Some(FLINK_WARMUP)),
            Engine::Storm => (peers.storm.clone(), Some(STORM_WARMUP)),
            Engine::Xorflow => unreachable!("handled above"),
        };
        a.extend(base.with_context(|| format!("{} was not built", engine.name()))?);
        a.switch("json", true);
        if let Some((runs, elements)) = warm {
            a.option("warmup-runs", Some(runs));
            a.option("warmup-run-elements", Some(elements));
        }
        a.option("workers", Some(WORKERS));
        a.option("stages", Some(c.stages));
        a.option("granularity", Some(g));
        a.option("elements", Some(c.elements(rate)));
        a.option("rate", Some(rate));
        a.option("warmup", Some(c.warmup(rate)));
        a.switch("latency-by-second", true);
        if engine == Engine::Flink {
            a.option("watermarks", (g > 0).then_some("punctuated"));
            a.option("buffer-timeout-ms", Some(c.flink_buffer_timeout_ms));
        }
        Ok(a.into_vec())
    }
}

impl Workload for Chain<'_> {
    type Engine = Engine;
    type Result = ChainStep;

    fn name(&self, engine: Engine) -> &'static str {
        engine.name()
    }

    fn run(&mut self, engine: Engine, rate: u64) -> Result<ChainStep> {
        let cmd = self.command(engine, rate)?;
        let mut timeout = self.cfg.duration_s + self.cfg.grace_s();
        if matches!(engine, Engine::Flink | Engine::Storm) {
            timeout += JVM_SETUP_S;
        }
        let t0 = Instant::now();
        let out = match stdout_within(&cmd[0], &cmd[1..], Duration::from_secs(timeout)) {
            Ok(out) => out,
            Err(_) if t0.elapsed() >= Duration::from_secs(timeout) => bail!(
                "not every element received within the step: still running {} s after its \
                 {} s schedule, stopped",
                timeout - self.cfg.duration_s,
                self.cfg.duration_s
            ),
            Err(e) => return Err(e),
        };
        let line = out
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .with_context(|| format!("{} printed no JSON result: {out}", engine.name()))?;
        let json: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}'s result is not JSON: {line}", engine.name()))?;
        let r: PeerResult = serde_json::from_value(json.clone()).with_context(|| {
            format!(
                "{}'s result lacks the chain's fields: {line}",
                engine.name()
            )
        })?;
        Ok(ChainStep {
            json,
            measures: r.measures,
        })
    }

    fn judge(&self, _: Engine, rate: u64, r: &ChainStep) -> Verdict {
        judge(self.cfg, rate, &r.measures)
    }
}

/// Runs the ladder; returns the results folder `<out>/chain-sustainable-<UTC>/` (raw.jsonl,
/// curve.csv, REPORT.md).
///
/// # Errors
/// Bad settings, a peer's build fails, or a file cannot be written (a failed run is an
/// unsustainable step).
pub fn run(cfg: &ChainLadderConfig) -> Result<PathBuf> {
    cfg.validate()?;
    let has = |e| cfg.engines.contains(&e);
    let peers = if cfg.engines.iter().any(|&e| e != Engine::Xorflow) {
        let jvm = JvmPeers {
            flink: has(Engine::Flink),
            storm: has(Engine::Storm),
        };
        Some(build(&cfg.peers_dir, jvm)?)
    } else {
        None
    };
    let dir = start_dir(&cfg.out)?;
    let load = load_average();
    let mut w = Chain { cfg, peers };
    let steps = ladder(&mut w, &cfg.rates, &cfg.engines, &dir)?;
    let java = w.peers.as_ref().and_then(|p| p.java_version.clone());
    crate::stand::files::write_whole(&dir.join("curve.csv"), report::curve(&steps).as_bytes())?;
    let text = report::report(cfg, &steps, (load, load_average()), java.as_deref());
    crate::stand::files::write_whole(&dir.join("REPORT.md"), text.as_bytes())?;
    Ok(dir)
}

/// Makes `<out>/chain-sustainable-<UTC>/`.
fn start_dir(out: &Path) -> Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let dir = out.join(format!("chain-sustainable-{stamp}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ChainLadderConfig {
        ChainLadderConfig {
            rates: vec![1000],
            duration_s: 9,
            stages: 10,
            granularity: 1000,
            tracking: TrackingMode::Tracker,
            flink_buffer_timeout_ms: 100,
            engines: vec![Engine::Xorflow],
            out: PathBuf::new(),
            peers_dir: PathBuf::new(),
            xorflow: PathBuf::from("xorflow"),
        }
    }

    /// A step at 1000 elements/s for 9 s (3 s warm-up) with per-second p99 `series`.
    fn measures(series: &[f64]) -> ChainMeasures {
        let mut m: ChainMeasures = serde_json::from_str(
            r#"{"stages":10,"workers":2,"granularity":1000,"tracking":"tracker",
            "elements":9000,"warmup":3000,"rate":1000,"achieved_rate":1000.0,
            "element_latency":{"count":6000},"latency_p50_us":null,"latency_p95_us":null,
            "latency_p99_us":null,"elapsed_s":9.1,"elements_per_s":989.0,
            "elements_received":9000}"#,
        )
        .unwrap();
        m.element_p99_ms_by_second = series.to_vec();
        m.element_count_by_second = series
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 3 { 0 } else { 1000 })
            .collect();
        m
    }

    #[test]
    fn a_flat_series_is_sustainable_and_a_growing_one_is_not() {
        let c = cfg();
        let flat = measures(&[0.0, 0.0, 0.0, 0.8, 1.2, 0.9, 1.0, 0.7, 1.1]);
        assert_eq!(judge(&c, 1000, &flat), Verdict::ok());
        // A backlog: the latency of each second's elements rises by 100 ms a second.
        let rising: Vec<f64> = (0..9).map(|i| 100.0 * i as f64).collect();
        let v = judge(&c, 1000, &measures(&rising));
        assert!(
            !v.ok && v.why.contains("element-latency p99 grows"),
            "{v:?}"
        );
    }

    #[test]
    fn lost_or_missing_elements_are_unsustainable() {
        let c = cfg();
        let flat = [1.0; 9];
        let mut m = measures(&flat);
        m.elements_received = Some(8999);
        assert_eq!(judge(&c, 1000, &m).why, "received 8999 of 9000 elements");
        let mut m = measures(&flat);
        m.elements = 8000;
        assert_eq!(judge(&c, 1000, &m).why, "emitted 8000 of 9000 elements");
        let mut m = measures(&flat);
        m.element_count_by_second[8] = 999;
        assert!(judge(&c, 1000, &m).why.contains("holds 5999 of the 6000"));
        let short = measures(&[1.0, 1.0]);
        assert!(!judge(&c, 1000, &short).ok, "too short to judge");
    }

    #[test]
    fn a_run_past_the_steps_time_limit_is_unsustainable() {
        // 9 s of schedule + 5 s of grace; a JVM peer's process is not stopped then, its
        // measured run's elapsed time decides.
        let c = cfg();
        let mut m = measures(&[1.0; 9]);
        m.elapsed_s = 14.0;
        assert!(judge(&c, 1000, &m).ok);
        m.elapsed_s = 18.5;
        let v = judge(&c, 1000, &m);
        assert!(
            v.why.contains("took 18.5 s, over its 9 s schedule + 5 s"),
            "{v:?}"
        );
    }

    #[test]
    fn without_a_series_the_achieved_rate_decides() {
        let c = cfg();
        let mut m = measures(&[]);
        m.elements_received = None;
        m.achieved_rate = Some(995.0);
        assert!(judge(&c, 1000, &m).ok);
        m.achieved_rate = Some(980.0);
        assert!(judge(&c, 1000, &m).why.contains("achieved 980"));
        m.achieved_rate = None;
        assert!(!judge(&c, 1000, &m).ok);
    }

    #[test]
    fn every_engine_gets_the_same_step() {
        let c = ChainLadderConfig {
            engines: Engine::ALL.to_vec(),
            ..cfg()
        };
        let w = Chain {
            cfg: &c,
            peers: Some(Peers {
                timely: PathBuf::from("timely"),
                flink: Some(vec!["java".into(), "Flink".into()]),
                storm: Some(vec!["java".into(), "Storm".into()]),
                java_version: None,
            }),
        };
        let x = w.command(Engine::Xorflow, 2000).unwrap().join(" ");
        for part in [
            "bench chain --json",
            "--elements 18000",
            "--rate 2000",
            "--granularity 1000",
            "--warmup 6000",
            "--latency-by-second",
        ] {
            assert!(x.contains(part), "{part} in {x}");
        }
        let f = w.command(Engine::Flink, 2000).unwrap().join(" ");
        assert!(
            f.starts_with("java Flink --json --warmup-runs 2 --warmup-run-elements 500000 --workers 2 --stages 10 --granularity 1000 --elements 18000 --rate 2000 --warmup 6000 --latency-by-second --watermarks punctuated --buffer-timeout-ms 100"),
            "{f}"
        );
        let s = w.command(Engine::Storm, 2000).unwrap().join(" ");
        assert_eq!(s, "java Storm --json --warmup-runs 1 --warmup-run-elements 20000 --workers 2 --stages 10 --granularity 1000 --elements 18000 --rate 2000 --warmup 6000 --latency-by-second");
        let t = w.command(Engine::Timely, 2000).unwrap().join(" ");
        assert_eq!(t, "timely --json --workers 2 --stages 10 --granularity 1000 --elements 18000 --rate 2000 --warmup 6000 --latency-by-second");
        assert!(c.validate().is_ok());
        let bad = ChainLadderConfig {
            rates: vec![2000, 1000],
            ..cfg()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("ascending"));
    }
}
