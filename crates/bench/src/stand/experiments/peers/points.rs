//! The peers experiment's sweeps: the same chain workload on every system, each run as its own
//! program with its own flags.

use super::super::super::runner::{chain_command, Point, Run};
use super::super::super::Profile;
use super::{
    Peers, CLUSTER_LATENCY_SWEEP, CLUSTER_PROCESSES, CLUSTER_THROUGHPUT_SWEEP,
    FLINK_DEFAULT_BUFFER_TIMEOUT_MS, LATENCY_RATE, STORM_LATENCY_RATE, STORM_LATENCY_SWEEP,
    WORKERS,
};
use crate::chain::ChainConfig;
use std::path::Path;
use xorflow_runtime::args::{Argv, EngineArgs};
use xorflow_runtime::TrackingMode;

/// Sizes per profile: (repetitions, stages, granularities, latency granularities).
fn sweeps(p: Profile) -> (usize, &'static [usize], &'static [u64], &'static [u64]) {
    match p {
        Profile::Smoke => (1, &[1], &[100], &[100]),
        Profile::Quick => (1, &[1, 10, 30], &[1, 100, 1000], &[100, 1000]),
        Profile::Full => (3, &[1, 10, 30], &[1, 100, 1000], &[100, 1000]),
    }
}

/// Elements of a throughput run over `k` stages: enough for about 0.2-3 s of each system at its
/// expected speed (timely's progress tracking costs per timestamp, so W = 1 gets fewer; one stage
/// without tracking moves about 100 M elements/s, so K = 1 gets more).
fn throughput_elements(p: Profile, system: &str, w: Option<u64>, k: usize) -> u64 {
    let full = match (system, w) {
        ("timely", Some(1)) => 300_000,
        ("timely", Some(100)) => 2_000_000,
        ("flink", Some(1)) => 1_000_000,
        ("flink", _) => 2_000_000,
        // Storm on 2 cores: about 0.8 M elements/s at K = 1, 60 k at K = 10 without acking, 18 k
        // with acking.
        ("storm", None) if k == 1 => 1_000_000,
        ("storm", None) => 200_000,
        ("storm", Some(_)) => 100_000,
        (_, None) if k == 1 => 40_000_000,
        // xorflow and timely move 10-80 M elements/s at K = 10-30: 5 M left a run of 0.1-0.2 s
        // with 0.1 s of it start-up (1.49x at K = 10 in such runs, 1.69x with 40 M).
        (_, None) | ("xorflow", Some(_)) => 20_000_000,
        _ => 5_000_000,
    };
    match p {
        Profile::Smoke => (full / 50).max(20_000),
        Profile::Quick => full / 2,
        Profile::Full => full,
    }
}

/// One run of the chain workload as every system takes it (`--stages --granularity --elements
/// --rate --warmup`); a throughput run has no rate or warm-up.
#[derive(Clone, Copy, Debug)]
struct Workload {
    stages: usize,
    /// None: the system's default (xorflow) or no tracking (`--granularity 0`, peers).
    granularity: Option<u64>,
    elements: u64,
    rate: Option<f64>,
    warmup: Option<u64>,
    /// Processes the [`WORKERS`] workers are spread over (xorflow processes, timely processes,
    /// Flink TaskManagers).
    processes: usize,
}

impl Workload {
    /// A throughput run over `k` stages at granularity `w` (None: no tracking) on `system`.
    fn throughput(p: Profile, system: &str, w: Option<u64>, k: usize) -> Self {
        Workload {
            stages: k,
            granularity: w,
            elements: throughput_elements(p, system, w, k),
            rate: None,
            warmup: None,
            processes: 1,
        }
    }

    /// A fixed-rate run at K = 10.
    fn fixed_rate(w: u64, rate: f64, elements: u64, warmup: u64) -> Self {
        Workload {
            stages: 10,
            granularity: Some(w),
            elements,
            rate: Some(rate),
            warmup: Some(warmup),
            processes: 1,
        }
    }

    /// The same run over `processes` processes.
    fn on(self, processes: usize) -> Self {
        Workload { processes, ..self }
    }

    /// Worker threads per process.
    fn workers(&self) -> usize {
        WORKERS / self.processes
    }

    /// The same run on xorflow, tracking with `tracking`.
    fn xorflow(&self, tracking: TrackingMode) -> ChainConfig {
        let d = ChainConfig::default();
        ChainConfig {
            stages: self.stages,
            elements: self.elements,
            rate: self.rate.unwrap_or(d.rate),
            granularity: self.granularity.unwrap_or(d.granularity),
            warmup: self.warmup.unwrap_or(d.warmup),
            engine: EngineArgs {
                workers: self.workers(),
                processes: self.processes,
                tracking,
                ..EngineArgs::default()
            },
            ..d
        }
    }

    /// A peer's arguments for it (after `--json`, and the flag that spreads it over processes).
    fn peer_argv(&self, a: &mut Argv) {
        a.option("workers", Some(self.workers()));
        a.option("stages", Some(self.stages));
        a.option("granularity", Some(self.granularity.unwrap_or(0)));
        a.option("elements", Some(self.elements));
        a.option("rate", self.rate);
        a.option("warmup", self.warmup);
    }
}

/// Flink's own options: its watermarks (None: none, no window) and buffer timeout.
#[derive(Clone, Copy, Debug)]
struct FlinkOptions {
    watermarks: Option<&'static str>,
    buffer_timeout_ms: u64,
    watermark_interval_ms: Option<u64>,
}

/// Flink's configurations in the latency sweep, by name. Punctuated: one watermark per substream
/// per source subtask, as soon as it is complete; periodic: `forMonotonousTimestamps`, emitted
/// every 1 ms (Flink's shortest interval), Flink's usual setup.
const FLINK_LATENCY_CONFIGS: [(&str, FlinkOptions); 3] = [
    (
        "flink-1ms",
        FlinkOptions {
            watermarks: Some("punctuated"),
            buffer_timeout_ms: 1,
            watermark_interval_ms: None,
        },
    ),
    (
        "flink-100ms",
        FlinkOptions {
            watermarks: Some("punctuated"),
            buffer_timeout_ms: 100,
            watermark_interval_ms: None,
        },
    ),
    (
        "flink-periodic-1ms",
        FlinkOptions {
            watermarks: Some("periodic"),
            buffer_timeout_ms: 1,
            watermark_interval_ms: Some(1),
        },
    ),
];

/// How to run each system: the programs and their common arguments.
struct Systems<'a> {
    exe: &'a Path,
    peers: &'a Peers,
}

impl Systems<'_> {
    fn xorflow(&self, w: &Workload, tracking: TrackingMode) -> Vec<String> {
        chain_command(self.exe, &w.xorflow(tracking))
    }

    /// A peer's command: `base --json`, `--<processes_flag> N` over several processes,
    /// warm-up runs (`warm`: runs and elements), then the workload.
    fn peer(base: &[String], processes_flag: &str, warm: Option<(u32, u64)>, w: &Workload) -> Argv {
        let mut a = Argv::default();
        a.extend(base.to_vec());
        a.switch("json", true);
        if w.processes > 1 {
            a.option(processes_flag, Some(w.processes));
        }
        if let Some((runs, elements)) = warm {
            a.option("warmup-runs", Some(runs));
            a.option("warmup-run-elements", Some(elements));
        }
        w.peer_argv(&mut a);
        a
    }

    /// Timely as its own examples run it for the mode (docs/peers.md, "Each peer at its
    /// best"): a throughput run feeds the input open loop in chunks of 16,384 elements, with no
    /// flush and nothing bounding what is in flight; a paced run flushes each batch and bounds
    /// what is in flight (`peers/timely/src/main.rs`, `--feed`).
    fn timely(&self, w: &Workload) -> Vec<String> {
        // Its own TCP cluster mode (`peers/timely/src/cluster.rs`).
        let base = [self.peers.timely.display().to_string()];
        let mut a = Self::peer(&base, "processes", None, w);
        a.option(
            "feed",
            Some(if w.rate.is_none() { "open" } else { "paced" }),
        );
        a.into_vec()
    }

    /// Flink runs the job twice as a warm-up, `warm` elements each.
    fn flink(&self, w: &Workload, o: &FlinkOptions, warm: u64) -> Option<Vec<String>> {
        let base = self.peers.flink.as_ref()?;
        // TaskManagers of its MiniCluster, connected by Flink's network stack.
        let mut a = Self::peer(base, "task-managers", Some((2, warm)), w);
        a.option("watermarks", o.watermarks);
        a.option("buffer-timeout-ms", Some(o.buffer_timeout_ms));
        a.option("watermark-interval-ms", o.watermark_interval_ms);
        Some(a.into_vec())
    }

    /// Storm runs the topology once as a warm-up, `warm` elements. None over several
    /// processes: Storm's LocalCluster runs its workers in one process.
    fn storm(&self, w: &Workload, warm: u64) -> Option<Vec<String>> {
        let base = self.peers.storm.as_ref().filter(|_| w.processes == 1)?;
        Some(Self::peer(base, "", Some((1, warm)), w).into_vec())
    }
}

fn point(sweep: &str, value: String, config: &str, rep: usize, program: Vec<String>) -> Point {
    Point {
        sweep: sweep.into(),
        value,
        config: config.into(),
        rep,
        run: Run::Program(program),
    }
}

/// The points, systems alternating within each sweep point.
pub fn points(p: Profile, exe: &Path, peers: &Peers) -> Vec<Point> {
    let (reps, stages, gs, latency_gs) = sweeps(p);
    let sys = Systems { exe, peers };
    let mut pts = Vec::new();
    for rep in 1..=reps {
        for &k in stages {
            let at = ("stages", k.to_string());
            pts.extend(throughput_points(&sys, p, at, k, None, 1, rep));
        }
        for &w in gs {
            let at = ("granularity", w.to_string());
            pts.extend(throughput_points(&sys, p, at, 10, Some(w), 1, rep));
        }
        for &w in latency_gs {
            pts.extend(latency_points(&sys, p, "latency", w, 1, rep));
        }
        pts.extend(cluster_points(&sys, p, latency_gs, rep));
        // Storm with acking tops out near 18,000 elements/s at K = 10 here, far below the latency
        // sweep's rate; it is compared with xorflow at a rate both sustain.
        if peers.storm.is_some() {
            for &w in latency_gs {
                pts.extend(storm_latency_points(&sys, p, w, rep));
            }
        }
    }
    pts
}

/// Maximum throughput over `k` stages on `processes` processes, in sweep `sweep` at `value`:
/// without tracking when `w` is None (xorflow `--tracking none`, no Flink watermarks), else
/// each system's completeness mechanism at granularity `w`.
#[allow(clippy::too_many_arguments)]
fn throughput_points(
    sys: &Systems<'_>,
    p: Profile,
    (sweep, value): (&str, String),
    k: usize,
    w: Option<u64>,
    processes: usize,
    rep: usize,
) -> Vec<Point> {
    let run = |system: &str| Workload::throughput(p, system, w, k).on(processes);
    let flink = FlinkOptions {
        watermarks: w.map(|_| "punctuated"),
        buffer_timeout_ms: FLINK_DEFAULT_BUFFER_TIMEOUT_MS,
        watermark_interval_ms: None,
    };
    let tracking = if w.is_some() {
        TrackingMode::Tracker
    } else {
        TrackingMode::None
    };
    let flink_warm = run("flink").elements / 2;
    let storm_warm = run("storm").elements / 2;
    let commands = [
        ("xorflow", Some(sys.xorflow(&run("xorflow"), tracking))),
        ("timely", Some(sys.timely(&run("timely")))),
        ("flink", sys.flink(&run("flink"), &flink, flink_warm)),
        ("storm", sys.storm(&run("storm"), storm_warm)),
    ];
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point(sweep, value.clone(), c, rep, cmd?)))
        .collect()
}

/// Elements and warm-up of the latency sweep's runs.
fn latency_elements(p: Profile) -> (u64, u64) {
    match p {
        Profile::Smoke => (60_000, 20_000),
        Profile::Quick => (250_000, 50_000),
        Profile::Full => (500_000, 100_000),
    }
}

/// Notification latency at [`LATENCY_RATE`], K = 10, granularity `w` on `processes` processes
/// (Flink in each of its configurations), in sweep `sweep`.
fn latency_points(
    sys: &Systems<'_>,
    p: Profile,
    sweep: &str,
    w: u64,
    processes: usize,
    rep: usize,
) -> Vec<Point> {
    let (elements, warmup) = latency_elements(p);
    let run = Workload::fixed_rate(w, LATENCY_RATE, elements, warmup).on(processes);
    let xorflow = sys.xorflow(&run, TrackingMode::Tracker);
    // The idle flush before gating (docs/distributed.md, session 6): a worker going idle hands
    // over every ack, not only those that can move a frontier. Beside the default, since the
    // gate trades latency in one process for fewer messages across processes.
    let mut always = xorflow.clone();
    always.extend(["--ack-flush-on-idle".into(), "always".into()]);
    let mut commands = vec![
        ("xorflow", Some(xorflow)),
        ("xorflow-idle-always", Some(always)),
        ("timely", Some(sys.timely(&run))),
    ];
    for (config, o) in &FLINK_LATENCY_CONFIGS {
        commands.push((config, sys.flink(&run, o, 500_000)));
    }
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point(sweep, w.to_string(), c, rep, cmd?)))
        .collect()
}

/// Notification latency next to Storm's acker at [`STORM_LATENCY_RATE`].
fn storm_latency_points(sys: &Systems<'_>, p: Profile, w: u64, rep: usize) -> Vec<Point> {
    let (elements, warmup) = latency_elements(p);
    let run = Workload::fixed_rate(w, STORM_LATENCY_RATE, elements / 10, warmup / 10);
    let commands = [
        ("xorflow", Some(sys.xorflow(&run, TrackingMode::Tracker))),
        ("storm", sys.storm(&run, 20_000)),
    ];
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point(STORM_LATENCY_SWEEP, w.to_string(), c, rep, cmd?)))
        .collect()
}

/// The chain over [`CLUSTER_PROCESSES`] processes of one worker each (xorflow's processes,
/// timely's TCP cluster mode, Flink's TaskManagers): throughput at K = 10 without tracking and
/// at each granularity, then notification latency at [`LATENCY_RATE`]. Storm has no cluster
/// runs (its LocalCluster is one process).
fn cluster_points(sys: &Systems<'_>, p: Profile, latency_gs: &[u64], rep: usize) -> Vec<Point> {
    let (_, _, gs, _) = sweeps(p);
    let mut pts = Vec::new();
    for w in std::iter::once(None).chain(gs.iter().map(|&w| Some(w))) {
        let value = w.map_or("none".to_string(), |w| w.to_string());
        let at = (CLUSTER_THROUGHPUT_SWEEP, value);
        pts.extend(throughput_points(sys, p, at, 10, w, CLUSTER_PROCESSES, rep));
    }
    for &w in latency_gs {
        pts.extend(latency_points(
            sys,
            p,
            CLUSTER_LATENCY_SWEEP,
            w,
            CLUSTER_PROCESSES,
            rep,
        ));
    }
    pts
}
