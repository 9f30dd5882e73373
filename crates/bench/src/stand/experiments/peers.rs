//! `xorflow bench peers`: timely dataflow, Apache Flink and Apache Storm next to xorflow on seed
//! 000's chain, in one run on one machine, so each performance claim is a ratio anyone can
//! reproduce.
//!
//! The peers live in `peers/`: `peers/timely` (a Rust program on the `timely` crate),
//! `peers/flink` (a Maven project on Flink's MiniCluster) and `peers/storm` (a Maven project on
//! Storm's LocalCluster). Each prints one JSON object with the
//! field names of `xorflow bench chain --json` (`elements_per_s`, `latency_p50_us`, ...), and
//! measures the same way: rate-controlled sources on an absolute schedule, the due time carried
//! in the element, notification latency from a substream's last arrival to its notification.
//!
//! Sweeps (P = 2 workers in one process for every system; systems alternate within each sweep
//! point, repetitions run the whole list again):
//! - `stages`: maximum throughput without completeness tracking, K = 1/10/30;
//! - `granularity`: maximum throughput with each system's completeness mechanism at K = 10,
//!   W = 1/100/1000 (xorflow: trAcker; timely: pointstamp frontiers; Flink: a punctuated
//!   watermark per substream per source subtask and a tumbling event-time window of W; Storm: its
//!   XOR acker, one tuple tree per element, acking on);
//! - `latency`: notification latency at 100,000 elements/s, K = 10, W = 100/1000 (Flink with
//!   punctuated watermarks at a 1 ms and at its default 100 ms buffer timeout, and with periodic
//!   watermarks every 1 ms).
//!
//! "Maximum throughput" here is the rate each system reaches with its own flow control (xorflow's
//! credit-based channels, Flink's credit-based network stack, the timely peer's bound on elements
//! in flight) when its sources emit as fast as they can.

mod build;

pub use build::{build, JvmPeers, Peers};

use super::super::report::{
    fmt_num, measures_metric, meta_lines, num, point_cells, ratio, sweep_label, write_csv_file,
    Align, Doc, Medians, Table,
};
use super::super::runner::{
    chain_command, read_raw, write_raw, Outcome, Point, Run, RunResult, Runner,
};
use super::super::{Meta, Profile};
use crate::chain::{ChainConfig, ChainMeasures};
use anyhow::{Context, Result};
use serde::Deserialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use xorflow_runtime::args::{Argv, EngineArgs};
use xorflow_runtime::TrackingMode;

/// Worker threads per system (the P).
pub const WORKERS: usize = 2;
/// Rate of the latency sweep, elements/s.
pub const LATENCY_RATE: f64 = 100_000.0;
/// Rate of the latency comparison with Storm, elements/s (one Storm sustains with acking).
pub const STORM_LATENCY_RATE: f64 = 10_000.0;
/// Name of that sweep.
pub const STORM_LATENCY_SWEEP: &str = "latency-storm";
/// Flink's buffer timeout in the throughput sweeps: its default, ms.
pub const FLINK_DEFAULT_BUFFER_TIMEOUT_MS: u64 = 100;

/// A run's result as every system prints it: the chain's measures, and who measured them.
#[derive(Clone, Debug, Deserialize)]
pub struct PeerResult {
    /// The peer engine ("timely", "flink", "storm"); None for xorflow's own results.
    pub engine: Option<String>,
    /// The peer engine's version.
    pub version: Option<String>,
    /// Flink's buffer timeout, ms.
    pub buffer_timeout_ms: Option<f64>,
    /// What every chain run measures.
    #[serde(flatten)]
    pub measures: ChainMeasures,
}

impl RunResult for PeerResult {
    fn metric(&self, col: &str) -> Option<f64> {
        measures_metric(&self.measures, col)
    }
}

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
        }
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
                workers: WORKERS,
                tracking,
                ..EngineArgs::default()
            },
            ..d
        }
    }

    /// A peer's arguments for it (after `--json --workers`).
    fn peer_argv(&self, a: &mut Argv) {
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

    /// A peer's command: `base --json --workers P`, warm-up runs (`warm`: runs and elements),
    /// then the workload.
    fn peer(base: &[String], warm: Option<(u32, u64)>, w: &Workload) -> Argv {
        let mut a = Argv::default();
        a.extend(base.to_vec());
        a.switch("json", true);
        a.option("workers", Some(WORKERS));
        if let Some((runs, elements)) = warm {
            a.option("warmup-runs", Some(runs));
            a.option("warmup-run-elements", Some(elements));
        }
        w.peer_argv(&mut a);
        a
    }

    fn timely(&self, w: &Workload) -> Vec<String> {
        Self::peer(&[self.peers.timely.display().to_string()], None, w).into_vec()
    }

    /// Flink runs the job twice as a warm-up, `warm` elements each.
    fn flink(&self, w: &Workload, o: &FlinkOptions, warm: u64) -> Option<Vec<String>> {
        let base = self.peers.flink.as_ref()?;
        let mut a = Self::peer(base, Some((2, warm)), w);
        a.option("watermarks", o.watermarks);
        a.option("buffer-timeout-ms", Some(o.buffer_timeout_ms));
        a.option("watermark-interval-ms", o.watermark_interval_ms);
        Some(a.into_vec())
    }

    /// Storm runs the topology once as a warm-up, `warm` elements.
    fn storm(&self, w: &Workload, warm: u64) -> Option<Vec<String>> {
        let base = self.peers.storm.as_ref()?;
        Some(Self::peer(base, Some((1, warm)), w).into_vec())
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
            pts.extend(stages_points(&sys, p, k, rep));
        }
        for &w in gs {
            pts.extend(granularity_points(&sys, p, w, rep));
        }
        for &w in latency_gs {
            pts.extend(latency_points(&sys, p, w, rep));
        }
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

/// Maximum throughput without tracking over `k` stages.
fn stages_points(sys: &Systems<'_>, p: Profile, k: usize, rep: usize) -> Vec<Point> {
    let run = |system: &str| Workload::throughput(p, system, None, k);
    let no_watermarks = FlinkOptions {
        watermarks: None,
        buffer_timeout_ms: FLINK_DEFAULT_BUFFER_TIMEOUT_MS,
        watermark_interval_ms: None,
    };
    let flink_warm = run("flink").elements / 2;
    let storm_warm = run("storm").elements / 2;
    let commands = [
        (
            "xorflow",
            Some(sys.xorflow(&run("xorflow"), TrackingMode::None)),
        ),
        ("timely", Some(sys.timely(&run("timely")))),
        (
            "flink",
            sys.flink(&run("flink"), &no_watermarks, flink_warm),
        ),
        ("storm", sys.storm(&run("storm"), storm_warm)),
    ];
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point("stages", k.to_string(), c, rep, cmd?)))
        .collect()
}

/// Maximum throughput with each system's completeness mechanism at K = 10, granularity `w`.
fn granularity_points(sys: &Systems<'_>, p: Profile, w: u64, rep: usize) -> Vec<Point> {
    let run = |system: &str| Workload::throughput(p, system, Some(w), 10);
    let punctuated = FlinkOptions {
        watermarks: Some("punctuated"),
        buffer_timeout_ms: FLINK_DEFAULT_BUFFER_TIMEOUT_MS,
        watermark_interval_ms: None,
    };
    let flink_warm = run("flink").elements / 2;
    let storm_warm = run("storm").elements / 2;
    let commands = [
        (
            "xorflow",
            Some(sys.xorflow(&run("xorflow"), TrackingMode::Tracker)),
        ),
        ("timely", Some(sys.timely(&run("timely")))),
        ("flink", sys.flink(&run("flink"), &punctuated, flink_warm)),
        ("storm", sys.storm(&run("storm"), storm_warm)),
    ];
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point("granularity", w.to_string(), c, rep, cmd?)))
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

/// Notification latency at [`LATENCY_RATE`], K = 10, granularity `w` (Flink in each of its
/// configurations).
fn latency_points(sys: &Systems<'_>, p: Profile, w: u64, rep: usize) -> Vec<Point> {
    let (elements, warmup) = latency_elements(p);
    let run = Workload::fixed_rate(w, LATENCY_RATE, elements, warmup);
    let mut commands = vec![
        ("xorflow", Some(sys.xorflow(&run, TrackingMode::Tracker))),
        ("timely", Some(sys.timely(&run))),
    ];
    for (config, o) in &FLINK_LATENCY_CONFIGS {
        commands.push((config, sys.flink(&run, o, 500_000)));
    }
    commands
        .into_iter()
        .filter_map(|(c, cmd)| Some(point("latency", w.to_string(), c, rep, cmd?)))
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

/// Columns of the peers' results.csv.
pub const PEER_COLUMNS: &[&str] = &[
    "sweep",
    "value",
    "config",
    "rep",
    "ok",
    "error",
    "wall_s",
    "engine",
    "version",
    "stages",
    "workers",
    "granularity",
    "rate",
    "elements",
    "achieved_rate",
    "elements_per_s",
    "notification_p50_us",
    "notification_p95_us",
    "notification_p99_us",
    "notification_any_p50_us",
    "notification_any_p99_us",
    "element_latency_p50_us",
    "element_latency_p99_us",
    "buffer_timeout_ms",
    "command",
];

/// The engine and version that produced an outcome (xorflow's: this checkout's commit).
fn engine(o: &Outcome<PeerResult>, meta: &Meta) -> (String, String) {
    match &o.result {
        Some(PeerResult {
            engine: Some(e),
            version,
            ..
        }) => (e.clone(), version.clone().unwrap_or_default()),
        Some(_) => ("xorflow".into(), format!("git {}", meta.git)),
        None => (String::new(), String::new()),
    }
}

fn write_csv(dir: &Path, meta: &Meta, outcomes: &[Outcome<PeerResult>]) -> Result<()> {
    let rows = outcomes.iter().map(|o| {
        let mut row = point_cells(o);
        let (eng, ver) = engine(o, meta);
        row.extend([eng, ver]);
        for col in &PEER_COLUMNS[row.len()..PEER_COLUMNS.len() - 2] {
            row.push(fmt_num(o.result.as_ref().and_then(|r| r.metric(col))));
        }
        row.push(fmt_num(o.result.as_ref().and_then(|r| r.buffer_timeout_ms)));
        row.push(o.point.command_line());
        row
    });
    write_csv_file(&dir.join("results.csv"), PEER_COLUMNS, rows)
}

/// The medians and which systems ran in each sweep.
struct Sweeps<'a> {
    m: Medians<PeerResult>,
    outcomes: &'a [Outcome<PeerResult>],
}

impl Sweeps<'_> {
    /// The systems that ran in a sweep, in first-seen order.
    fn configs_in(&self, sweep: &str) -> Vec<String> {
        self.m
            .configs
            .iter()
            .filter(|c| {
                self.outcomes
                    .iter()
                    .any(|o| o.point.sweep == sweep && &o.point.config == *c)
            })
            .cloned()
            .collect()
    }

    /// The peers that ran in a sweep (their columns and ratios), in first-seen order.
    fn peers_in(&self, sweep: &str) -> Vec<String> {
        self.configs_in(sweep)
            .into_iter()
            .filter(|c| c != "xorflow")
            .collect()
    }

    /// Medians of `col` per system, then xorflow's ratio to each peer.
    fn ratio_table(&self, md: &mut String, sweep: &str, col: &str) {
        let Some(values) = self.m.values.get(sweep) else {
            return;
        };
        let (configs, peers) = (self.configs_in(sweep), self.peers_in(sweep));
        let mut head = vec![(sweep_label(sweep).to_string(), Align::Left)];
        head.extend(configs.iter().map(|c| (c.clone(), Align::Right)));
        head.extend(
            peers
                .iter()
                .map(|p| (format!("xorflow / {p}"), Align::Right)),
        );
        let mut t = Table::new(head);
        for v in values {
            let mut row = vec![v.clone()];
            row.extend(configs.iter().map(|c| num(self.m.get(sweep, v, c, col), 0)));
            row.extend(peers.iter().map(|p| {
                let x = self.m.get(sweep, v, "xorflow", col);
                ratio(x, self.m.get(sweep, v, p, col))
            }));
            t.row(row);
        }
        let _ = writeln!(md, "{}", t.render());
    }

    /// Achieved rate and element latency per system of a fixed-rate sweep.
    fn element_table(&self, md: &mut String, sweep: &str) {
        let Some(values) = self.m.values.get(sweep) else {
            return;
        };
        md.push_str("### Achieved rate and element latency (end to end, p50/p99, us)\n\n");
        let mut t = Table::with(&[
            ("granularity", Align::Left),
            ("system", Align::Left),
            ("achieved elements/s", Align::Right),
            ("element p50", Align::Right),
            ("element p99", Align::Right),
        ]);
        for v in values {
            for c in &self.configs_in(sweep) {
                let g = |col| num(self.m.get(sweep, v, c, col), 0);
                t.row(vec![
                    v.clone(),
                    c.clone(),
                    g("achieved_rate"),
                    g("element_latency_p50_us"),
                    g("element_latency_p99_us"),
                ]);
            }
        }
        let _ = writeln!(md, "{}", t.render());
    }
}

/// The report's title, run facts, versions and failed runs.
fn header(meta: &Meta, java_version: Option<&str>, outcomes: &[Outcome<PeerResult>]) -> String {
    let failed: Vec<&Outcome<PeerResult>> =
        outcomes.iter().filter(|o| o.result.is_none()).collect();
    // The engines that ran, by name, in the order the issue introduces them.
    let names: Vec<&str> = [
        ("timely", "timely dataflow"),
        ("flink", "Apache Flink"),
        ("storm", "Apache Storm"),
    ]
    .into_iter()
    .filter(|(e, _)| outcomes.iter().any(|o| engine(o, meta).0 == *e))
    .map(|(_, n)| n)
    .collect();
    let mut md = format!(
        "# Peers: xorflow next to {} on seed 000's chain ({} profile)\n\n\
         {}- runs: {} ({} failed; see results.csv and runs.log), medians over repetitions\n\
         - every system: {WORKERS} worker threads in one process; systems alternate within each \
         point\n",
        names.join(", "),
        meta.profile,
        meta_lines(meta),
        outcomes.len(),
        failed.len(),
    );
    let versions: std::collections::BTreeMap<String, String> = outcomes
        .iter()
        .filter(|o| o.result.is_some())
        .map(|o| engine(o, meta))
        .collect();
    for (e, v) in &versions {
        let _ = writeln!(md, "- {e}: {v}");
    }
    if let Some(j) = java_version {
        let _ = writeln!(md, "- java: {j}");
    }
    for o in &failed {
        let _ = writeln!(
            md,
            "- FAILED {}={} {} rep {}: {}",
            o.point.sweep,
            o.point.value,
            o.point.config,
            o.point.rep,
            o.error.as_deref().unwrap_or("")
        );
    }
    md.push('\n');
    md
}

/// Maximum throughput without and with completeness tracking.
fn throughput_sections(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    doc.md.push_str(
        "## Maximum throughput without completeness tracking, elements/s\n\n\
         K pass-through stages, each behind a re-partition (xorflow `--tracking none`; timely: all \
         elements at one timestamp; Flink: no watermarks, `rebalance().map(identity)` per stage, \
         buffer timeout 100 ms; Storm: acking off, a shuffle grouping per stage). Ratio above 1: \
         xorflow is faster.\n\n",
    );
    s.ratio_table(&mut doc.md, "stages", "elements_per_s");
    let chart = s.m.chart(
        "stages",
        "elements_per_s",
        "Throughput without tracking",
        "elements/s",
        true,
    );
    doc.figure(chart, "peers_throughput_by_stages")?;
    doc.md.push_str(
        "## Maximum throughput with completeness tracking, K = 10, elements/s\n\n\
         Each system's own mechanism at granularity W (elements per substream): xorflow's trAcker; \
         timely's pointstamp frontiers (timestamp = id / W); Flink's watermarks, one punctuated \
         watermark per substream per source subtask, and a tumbling event-time window of W at the \
         end; Storm's acker, which XORs the tuple ids of every spout tuple's tree, so it tracks \
         each element whatever W is (W only groups the spout's acks into substreams).\n\n",
    );
    s.ratio_table(&mut doc.md, "granularity", "elements_per_s");
    let chart = s.m.chart(
        "granularity",
        "elements_per_s",
        "Throughput with completeness tracking (K = 10)",
        "elements/s",
        true,
    );
    doc.figure(chart, "peers_throughput_by_granularity")
}

/// Notification latency at [`LATENCY_RATE`], both measures.
fn latency_section(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    let _ = writeln!(
        doc.md,
        "## Notification latency at {} elements/s, K = 10\n\n\
         From a substream's last element arriving where completeness is observed (xorflow and \
         timely: the sink; Flink: the window operator) to the notification (xorflow: the tracker's \
         frontier; timely: the input frontier; Flink: the window firing; Storm: the spout's ack \
         callback completing the spout task's part of the substream). Flink ran with \
         punctuated watermarks at a 1 ms and at its default 100 ms buffer timeout, and with \
         periodic monotonous watermarks every 1 ms at a 1 ms buffer timeout. Ratio below 1: \
         xorflow notifies sooner.\n\n\
         Two measures. *Per instance*: from the substream's last element at the same instance \
         (sink or window subtask) that is notified. *From the last arrival anywhere* (seed 000's \
         definition): from the substream's last element at any instance. A substream is complete \
         only when its last element has arrived everywhere, so the per-instance figure also holds \
         the skew between partitions, i.e. the data path's jitter; the second isolates the \
         completeness mechanism. Storm notifies the spout, which receives nothing, so it has only \
         the second.\n",
        LATENCY_RATE
    );
    for (any, what) in [
        (false, "per instance"),
        (true, "from the last arrival anywhere"),
    ] {
        for q in ["p50", "p99"] {
            let (col, tag) = if any {
                (format!("notification_any_{q}_us"), "_any")
            } else {
                (format!("notification_{q}_us"), "")
            };
            let _ = writeln!(doc.md, "### {q} {what}, us\n");
            s.ratio_table(&mut doc.md, "latency", &col);
            let chart = s.m.chart(
                "latency",
                &col,
                &format!("Notification latency {q}, {what}"),
                &format!("notification latency {q}, us"),
                true,
            );
            doc.figure(chart, &format!("peers_latency{tag}_{q}"))?;
        }
    }
    s.element_table(&mut doc.md, "latency");
    Ok(())
}

/// Notification latency next to Storm's acker at [`STORM_LATENCY_RATE`] (when Storm ran).
fn storm_section(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    if s.peers_in(STORM_LATENCY_SWEEP).is_empty() {
        return Ok(());
    }
    let _ = writeln!(
        doc.md,
        "## Notification latency next to Storm's acker, {} elements/s, K = 10\n\n\
         Storm with acking moves about 18,000 elements/s on this machine, so it is compared \
         with xorflow at a rate both sustain. Storm's acker XORs the ids of each spout tuple's \
         tree and tells the spout when it is complete; a spout task's part of a substream is \
         complete when all its trees are. From the last arrival anywhere (at a sink), us; \
         ratio below 1: xorflow notifies sooner.\n",
        STORM_LATENCY_RATE
    );
    for q in ["p50", "p99"] {
        let col = format!("notification_any_{q}_us");
        let _ = writeln!(doc.md, "### {q} from the last arrival anywhere, us\n");
        s.ratio_table(&mut doc.md, STORM_LATENCY_SWEEP, &col);
        let chart = s.m.chart(
            STORM_LATENCY_SWEEP,
            &col,
            &format!("Notification latency {q} next to Storm, from the last arrival anywhere"),
            &format!("notification latency {q}, us"),
            true,
        );
        doc.figure(chart, &format!("peers_latency_storm_{q}"))?;
    }
    s.element_table(&mut doc.md, STORM_LATENCY_SWEEP);
    Ok(())
}

/// Per sweep point and peer: is xorflow ahead or behind?
fn ahead_section(md: &mut String, s: &Sweeps<'_>) {
    md.push_str("## Where xorflow is ahead and where it is behind\n\n");
    let any = "from the last arrival anywhere";
    let storm = format!("{any} at 10,000 elements/s");
    let rows: [(&str, &str, bool, String); 8] = [
        (
            "stages",
            "elements_per_s",
            true,
            "throughput without tracking, K".into(),
        ),
        (
            "granularity",
            "elements_per_s",
            true,
            "throughput with tracking, W".into(),
        ),
        (
            "latency",
            "notification_p50_us",
            false,
            "notification p50, W".into(),
        ),
        (
            "latency",
            "notification_p99_us",
            false,
            "notification p99, W".into(),
        ),
        (
            "latency",
            "notification_any_p50_us",
            false,
            format!("notification p50 {any}, W"),
        ),
        (
            "latency",
            "notification_any_p99_us",
            false,
            format!("notification p99 {any}, W"),
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p50_us",
            false,
            format!("notification p50 {storm}, W"),
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p99_us",
            false,
            format!("notification p99 {storm}, W"),
        ),
    ];
    for (sweep, col, higher_better, what) in rows {
        let Some(values) = s.m.values.get(sweep) else {
            continue;
        };
        let peers = s.peers_in(sweep);
        for v in values {
            for p in &peers {
                let (Some(x), Some(y)) =
                    (s.m.get(sweep, v, "xorflow", col), s.m.get(sweep, v, p, col))
                else {
                    continue;
                };
                let ahead = if higher_better { x > y } else { x < y };
                let _ = writeln!(
                    md,
                    "- {what} = {v}: xorflow {} {p} (xorflow {} vs {})",
                    if ahead { "ahead of" } else { "behind" },
                    num(Some(x), 0),
                    num(Some(y), 0)
                );
            }
        }
    }
}

/// Writes results.csv, the figures and REPORT.md into `dir`.
///
/// # Errors
/// A file cannot be written or a figure cannot be drawn.
pub fn write(
    dir: &Path,
    meta: &Meta,
    java_version: Option<&str>,
    outcomes: &[Outcome<PeerResult>],
) -> Result<()> {
    write_csv(dir, meta, outcomes)?;
    let s = Sweeps {
        m: Medians::new(outcomes),
        outcomes,
    };
    let mut doc = Doc::new(dir, header(meta, java_version, outcomes));
    throughput_sections(&mut doc, &s)?;
    latency_section(&mut doc, &s)?;
    storm_section(&mut doc, &s)?;
    ahead_section(&mut doc.md, &s);
    doc.md
        .push_str("\nThe exact command of every run is in results.csv (`command`) and runs.log.\n");
    doc.finish()
}

/// Writes a peers results folder's CSV, figures and REPORT.md again from its raw.jsonl.
///
/// # Errors
/// Its files are missing or unreadable, or a figure cannot be drawn.
pub fn rewrite(dir: &Path, meta: &Meta) -> Result<()> {
    // The java version is not in meta.json; keep the line the run wrote.
    let java = std::fs::read_to_string(dir.join("REPORT.md"))
        .ok()
        .and_then(|r| {
            r.lines()
                .find_map(|l| l.strip_prefix("- java: ").map(str::to_string))
        });
    write(dir, meta, java.as_deref(), &read_raw(dir)?)
}

/// Builds the peers, runs every point and writes the results folder `<out_root>/peers/peers-<UTC>`.
///
/// # Errors
/// A build fails, or a folder or file cannot be written.
pub fn run(
    profile: Profile,
    out_root: &Path,
    exe: &Path,
    peers_dir: &Path,
    jvm: JvmPeers,
) -> Result<PathBuf> {
    let peers = build(peers_dir, jvm)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    // Peers runs keep to their own folder: `<out>/peers/peers-<UTC>`.
    let dir = out_root.join("peers").join(format!("peers-{stamp}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let meta = Meta::collect(profile);
    std::fs::write(dir.join("meta.json"), serde_json::to_string_pretty(&meta)?)?;
    let pts = points(profile, exe, &peers);
    let mut runner = Runner::new(exe.to_path_buf(), pts.len() as u64, &dir.join("runs.log"))?;
    runner.stage("peers");
    let outcomes: Vec<Outcome<PeerResult>> = pts.iter().map(|p| runner.run(p)).collect();
    runner.finish();
    write_raw(&dir, &outcomes)?;
    write(&dir, &meta, peers.java_version.as_deref(), &outcomes)?;
    let _ = writeln!(
        std::io::stderr(),
        "peers: {}",
        dir.join("REPORT.md").display()
    );
    Ok(dir)
}
