//! Seed 000's experiments as sweeps of chain runs: what each one runs, per profile.
//!
//! Deployments (processes stand in for the paper's single-CPU virtual machines, one worker each):
//! * `traffic` and `scalability` run the tracker as the paper did, in dedicated processes (one for
//!   the centralized tracker, two for 2 shards); "batched" flushes the local acker every 5 ms only
//!   (FlameStream's setting, `--ack-flush-on-idle false`), "unbatched" sends every ack at once.
//! * `latency` runs the centralized tracker in a dedicated process with the engine's default
//!   flushing (at once when a worker goes idle: latency first).
//! * `throughput` and `snapshots` use the engine's defaults (shards inside the worker processes).

use super::{Outcome, Point, Profile, Runner};
use serde_json::Value;

/// One experiment of the stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiment {
    /// Service messages and bytes per element by graph size, processes and granularity.
    Traffic,
    /// Maximum sustainable throughput, none / tracker / markers at granularity 1 and 100.
    Throughput,
    /// Notification latency p50/p95/p99 at a fixed rate, tracker vs markers.
    Latency,
    /// Centralized vs 2-shard tracker under 1x/5x/9x/17x ack load.
    Scalability,
    /// Snapshot buffering at 100/500/1000 ms pauses, tracker vs markers.
    Snapshots,
}

/// All experiments, in the paper's order.
pub const ALL: [Experiment; 5] = [
    Experiment::Traffic,
    Experiment::Throughput,
    Experiment::Latency,
    Experiment::Scalability,
    Experiment::Snapshots,
];

/// Sustainable: the sources achieved at least this share of the requested rate...
pub const SUSTAINED_SHARE: f64 = 0.95;
/// ...and the 99th percentile of end-to-end element latency stayed below this (a growing backlog
/// shows as latency growing with the run), ms.
pub const BACKLOG_P99_MS: f64 = 250.0;

impl Experiment {
    /// The command and folder name.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Traffic => "traffic",
            Experiment::Throughput => "throughput",
            Experiment::Latency => "latency",
            Experiment::Scalability => "scalability",
            Experiment::Snapshots => "snapshots",
        }
    }

    /// Parses a name.
    ///
    /// # Errors
    /// An unknown name, listing the known ones.
    pub fn parse(s: &str) -> Result<Self, String> {
        ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
            format!(
                "unknown experiment '{s}' (expected one of: {})",
                ALL.map(Experiment::name).join(", ")
            )
        })
    }

    /// The points to run (throughput adds its search steps while running).
    pub fn points(self, profile: Profile) -> Vec<Point> {
        match self {
            Experiment::Traffic => sweeps(TRAFFIC_CONFIGS, profile_traffic(profile)),
            Experiment::Latency => sweeps(LATENCY_CONFIGS, profile_latency(profile)),
            Experiment::Scalability => scalability(profile),
            Experiment::Snapshots => snapshots(profile),
            Experiment::Throughput => throughput_starts(profile),
        }
    }

    /// Runs the points (the throughput search adds points as it goes).
    pub fn run(self, runner: &mut Runner, points: Vec<Point>, profile: Profile) -> Vec<Outcome> {
        match self {
            Experiment::Throughput => throughput_search(runner, points, profile),
            _ => points.iter().map(|p| runner.run(p)).collect(),
        }
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Tracking options per configuration name.
fn config_args(config: &str) -> Vec<String> {
    let batched = [
        "--ack-flush-on-idle",
        "false",
        "--ack-flush-interval",
        "5ms",
    ];
    match config {
        "none" => s(&["--tracking", "none"]),
        "markers" => s(&["--tracking", "markers"]),
        // Engine defaults: shards inside the worker processes, flush when idle.
        "tracker-default" => s(&["--tracking", "tracker"]),
        "tracker-process" => s(&["--tracking", "tracker", "--tracker-processes", "1"]),
        c => {
            let mut a = s(&["--tracking", "tracker"]);
            if c.contains("2-shards") {
                a.extend(s(&["--tracker-shards", "2", "--tracker-processes", "2"]));
            } else {
                a.extend(s(&["--tracker-processes", "1"]));
            }
            if c.ends_with("unbatched") {
                a.extend(s(&["--ack-flush-count", "0"]));
            } else {
                a.extend(s(&batched));
            }
            a
        }
    }
}

const TRAFFIC_CONFIGS: &[&str] = &[
    "markers",
    "tracker",
    "tracker-unbatched",
    "tracker-2-shards",
    "tracker-2-shards-unbatched",
];
const LATENCY_CONFIGS: &[&str] = &["tracker-process", "markers"];

/// A fixed-rate sweep set: defaults and the values of each sweep.
struct SweepSet {
    stages: (usize, &'static [usize]),
    processes: (usize, &'static [usize]),
    granularity: (u64, &'static [u64]),
    rate: f64,
    elements: u64,
    warmup: u64,
    repeat: usize,
}

fn profile_traffic(p: Profile) -> SweepSet {
    match p {
        Profile::Smoke => SweepSet {
            stages: (10, &[]),
            processes: (2, &[]),
            granularity: (10, &[1, 10]),
            rate: 20_000.0,
            elements: 6_000,
            warmup: 2_000,
            repeat: 1,
        },
        Profile::Quick => SweepSet {
            stages: (30, &[10, 30, 100]),
            processes: (4, &[2, 4, 8]),
            granularity: (10, &[1, 10, 100]),
            rate: 20_000.0,
            elements: 30_000,
            warmup: 10_000,
            repeat: 1,
        },
        Profile::Full => SweepSet {
            stages: (30, &[10, 30, 100]),
            processes: (4, &[2, 4, 8]),
            granularity: (10, &[1, 10, 100]),
            rate: 20_000.0,
            elements: 80_000,
            warmup: 20_000,
            repeat: 3,
        },
    }
}

/// 10,000 elements/s: at 30 stages × 4 processes on 2 cores, 50,000 el/s put element latency
/// at 13-25 ms (queueing everywhere), which hides the tracking mechanisms behind load.
fn profile_latency(p: Profile) -> SweepSet {
    SweepSet {
        rate: 10_000.0,
        elements: match p {
            Profile::Smoke => 4_000,
            Profile::Quick => 25_000,
            Profile::Full => 60_000,
        },
        warmup: match p {
            Profile::Smoke => 1_000,
            Profile::Quick => 5_000,
            Profile::Full => 10_000,
        },
        ..profile_traffic(p)
    }
}

fn chain_args(
    stages: usize,
    processes: usize,
    g: u64,
    rate: f64,
    elements: u64,
    warmup: u64,
) -> Vec<String> {
    s(&[
        "--workers",
        "1",
        "--processes",
        &processes.to_string(),
        "--stages",
        &stages.to_string(),
        "--granularity",
        &g.to_string(),
        "--rate",
        &rate.to_string(),
        "--elements",
        &elements.to_string(),
        "--warmup",
        &warmup.to_string(),
    ])
}

/// One-at-a-time sweeps around the defaults (as the paper's figures), configurations interleaved.
fn sweeps(configs: &[&str], set: SweepSet) -> Vec<Point> {
    let mut pts = Vec::new();
    let (k0, p0, g0) = (set.stages.0, set.processes.0, set.granularity.0);
    let mut coords: Vec<(&str, String, usize, usize, u64)> = Vec::new();
    for &k in set.stages.1 {
        coords.push(("stages", k.to_string(), k, p0, g0));
    }
    for &n in set.processes.1 {
        coords.push(("processes", n.to_string(), k0, n, g0));
    }
    for &g in set.granularity.1 {
        coords.push(("granularity", g.to_string(), k0, p0, g));
    }
    for rep in 1..=set.repeat {
        for (sweep, value, k, n, g) in &coords {
            for &c in configs {
                let mut args = chain_args(*k, *n, *g, set.rate, set.elements, set.warmup);
                args.extend(config_args(c));
                pts.push(Point {
                    sweep: sweep.to_string(),
                    value: value.clone(),
                    config: c.to_string(),
                    rep,
                    args,
                    program: None,
                });
            }
        }
    }
    pts
}

fn scalability(p: Profile) -> Vec<Point> {
    let (mults, rate, elements, warmup, repeat): (&[usize], f64, u64, u64, usize) = match p {
        Profile::Smoke => (&[0, 8], 20_000.0, 6_000, 2_000, 1),
        // 20,000 el/s: the workers keep up at every multiplier while a single tracker process
        // does not at 17x (at 50,000 el/s the workers themselves were saturated at 1x).
        Profile::Quick => (&[0, 2, 4, 8], 20_000.0, 50_000, 10_000, 1),
        Profile::Full => (&[0, 2, 4, 8], 20_000.0, 100_000, 20_000, 3),
    };
    let mut pts = Vec::new();
    for rep in 1..=repeat {
        for &m in mults {
            for c in ["tracker", "tracker-2-shards"] {
                let mut args = chain_args(30, 4, 1, rate, elements, warmup);
                args.extend(config_args(c));
                args.extend(s(&["--ack-multiplier", &m.to_string()]));
                pts.push(Point {
                    sweep: "multiplier".into(),
                    value: format!("{}x", 2 * m + 1),
                    config: c.into(),
                    rep,
                    args,
                    program: None,
                });
            }
        }
    }
    pts
}

fn snapshots(p: Profile) -> Vec<Point> {
    let (pauses, repeat): (&[u64], usize) = match p {
        Profile::Smoke => (&[100], 1),
        Profile::Quick => (&[100, 500, 1000], 1),
        Profile::Full => (&[100, 500, 1000], 3),
    };
    let rate = 20_000.0;
    let warmup = 10_000u64;
    // The boundary comes 1 s after the warm-up; the run goes on for the pause plus 2 s.
    let at = warmup + rate as u64;
    let mut pts = Vec::new();
    for rep in 1..=repeat {
        for &pause in pauses {
            for c in ["tracker-default", "markers"] {
                let elements = at + (rate * (pause as f64 / 1e3 + 2.0)) as u64;
                let mut args = chain_args(10, 2, 100, rate, elements, warmup);
                args.extend(config_args(c));
                args.extend(s(&[
                    "--snapshot-at",
                    &at.to_string(),
                    "--snapshot-pause",
                    &format!("{pause}ms"),
                ]));
                pts.push(Point {
                    sweep: "pause".into(),
                    value: format!("{pause} ms"),
                    config: c.into(),
                    rep,
                    args,
                    program: None,
                });
            }
        }
    }
    pts
}

/// Throughput: where each (configuration, granularity) search starts.
fn throughput_starts(p: Profile) -> Vec<Point> {
    let (configs, gs): (&[&str], &[u64]) = match p {
        Profile::Smoke => (&["none", "tracker-default"], &[100]),
        _ => (&["none", "tracker-default", "markers"], &[1, 100]),
    };
    // Near saturation one run's verdict is noisy (p99 swings by 5x between neighbouring rates),
    // so the full profile repeats the whole search and the report takes the median.
    let reps = if p == Profile::Full { 3 } else { 1 };
    let mut pts = Vec::new();
    for rep in 1..=reps {
        for &g in gs {
            for &c in configs {
                pts.push(throughput_point(p, c, g, 250_000.0, rep));
            }
        }
    }
    pts
}

fn throughput_point(p: Profile, config: &str, g: u64, rate: f64, rep: usize) -> Point {
    // Long enough to see a backlog grow: 1.5 s (quick) or 3 s (full) of measured input.
    let secs = match p {
        Profile::Smoke => 0.5,
        Profile::Quick => 1.5,
        Profile::Full => 3.0,
    };
    let warmup = (rate * 0.5) as u64;
    let elements = warmup + (rate * secs) as u64;
    let mut args = chain_args(10, 2, g, rate, elements, warmup);
    args.extend(config_args(config));
    args.push("--no-latency-probe".into());
    Point {
        sweep: "granularity".into(),
        value: g.to_string(),
        config: config.into(),
        rep,
        args,
        program: None,
    }
}

/// True when a run kept up with its requested rate (see [`SUSTAINED_SHARE`], [`BACKLOG_P99_MS`]).
pub fn sustained(r: &Value) -> bool {
    let rate = r["rate"].as_f64().unwrap_or(0.0);
    let achieved = r["achieved_rate"].as_f64().unwrap_or(0.0);
    let p99_ms = r["element_latency"]["p99_us"]
        .as_f64()
        .unwrap_or(f64::INFINITY)
        / 1e3;
    achieved >= SUSTAINED_SHARE * rate && p99_ms <= BACKLOG_P99_MS
}

/// Doubles the rate from each start until a run does not keep up, then bisects between the last
/// rate that kept up and the first that did not (2 steps quick, 3 full). The smoke profile runs
/// the starts only.
fn throughput_search(runner: &mut Runner, starts: Vec<Point>, profile: Profile) -> Vec<Outcome> {
    let mut out = Vec::new();
    let bisections = match profile {
        Profile::Smoke => 0,
        Profile::Quick => 2,
        Profile::Full => 3,
    };
    let max_rate = 64e6;
    for start in starts {
        let g: u64 = start.value.parse().unwrap_or(1);
        let config = start.config.clone();
        let rep = start.rep;
        let rate_of = |p: &Point| {
            let i = p.args.iter().position(|a| a == "--rate").expect("rate arg");
            p.args[i + 1].parse::<f64>().expect("rate value")
        };
        let mut point = start;
        let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
        loop {
            let rate = rate_of(&point);
            let o = runner.run(&point);
            let ok = o.result.as_ref().is_some_and(sustained);
            out.push(o);
            if ok {
                good = Some(rate);
            } else {
                bad = Some(rate);
            }
            if profile == Profile::Smoke {
                break;
            }
            let next = match (good, bad) {
                (Some(gd), None) if gd * 2.0 <= max_rate => gd * 2.0,
                (Some(_), None) => break,
                (None, Some(b)) if b > 10_000.0 => b / 4.0,
                (None, Some(_)) => break,
                (Some(gd), Some(b)) => {
                    if bisections == 0 || b / gd < 1.0 + 0.5f64.powi(bisections) {
                        break;
                    }
                    (gd * b).sqrt()
                }
                (None, None) => break,
            };
            runner.bar.inc_length(1);
            point = throughput_point(profile, &config, g, next.round(), rep);
        }
    }
    out
}
