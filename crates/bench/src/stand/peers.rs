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

use super::report::{fmt_num, metric, num, ratio, Medians};
use super::{Meta, Outcome, Point, Profile, Runner};
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Where the peers are and how to run them.
#[derive(Clone, Debug)]
pub struct Peers {
    /// The timely peer's executable.
    pub timely: PathBuf,
    /// The command that runs the Flink job (`java ... ChainJob`); None when Flink is skipped.
    pub flink: Option<Vec<String>>,
    /// The command that runs the Storm topology (`java ... ChainTopology`); None when skipped.
    pub storm: Option<Vec<String>>,
    /// `java -version`'s first line.
    pub java_version: Option<String>,
}

fn run_build(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start the build of {what} ({cmd:?})"))?;
    if !out.status.success() {
        bail!(
            "building {what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Which JVM peers to build and run.
#[derive(Clone, Copy, Debug)]
pub struct JvmPeers {
    /// Apache Flink (`peers/flink`).
    pub flink: bool,
    /// Apache Storm (`peers/storm`).
    pub storm: bool,
}

/// Builds the Maven project `dir/<name>` (`mvn package`, incremental) and returns the java
/// command that runs `main_class` on its classes and dependencies with `opens`.
fn jvm_peer(
    dir: &Path,
    name: &str,
    flag: &str,
    main_class: &str,
    opens: &[&str],
) -> Result<Vec<String>> {
    let pom = dir.join(name).join("pom.xml");
    if !pom.is_file() {
        bail!("'{}' not found", pom.display());
    }
    let _ = writeln!(
        std::io::stderr(),
        "peers: building the {name} peer (mvn package; the first build downloads it)"
    );
    run_build(
        Command::new("mvn")
            .args(["-q", "-B", "package", "-f"])
            .arg(&pom),
        &format!("the {name} peer (mvn; install Maven or pass {flag})"),
    )?;
    let target = dir.join(name).join("target");
    let cp = format!(
        "{}:{}/*",
        target.join("classes").display(),
        target.join("dependency").display()
    );
    let mut cmd: Vec<String> = ["java", "-Xms1g", "-Xmx2g", "-XX:+UseParallelGC"]
        .map(String::from)
        .to_vec();
    for m in opens {
        cmd.push(format!("--add-opens={m}=ALL-UNNAMED"));
    }
    cmd.extend(["-cp".into(), cp, main_class.into()]);
    Ok(cmd)
}

/// Builds what is missing (cargo and Maven are incremental, so a built peer costs seconds) and
/// returns how to run the peers; the JVM peers only as `jvm` asks.
///
/// # Errors
/// `dir` has no peers, a tool is missing (naming it), or a build fails (with its output).
pub fn build(dir: &Path, jvm: JvmPeers) -> Result<Peers> {
    let manifest = dir.join("timely/Cargo.toml");
    if !manifest.is_file() {
        bail!(
            "'{}' not found: run from the repository root or pass --peers-dir",
            manifest.display()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "peers: building the timely peer (cargo build --release)"
    );
    run_build(
        Command::new("cargo")
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(&manifest),
        "the timely peer",
    )?;
    let timely = dir.join("timely/target/release/xorflow-peer-timely");
    if !timely.is_file() {
        bail!("the timely build left no '{}'", timely.display());
    }
    let java_version = if jvm.flink || jvm.storm {
        let java = Command::new("java").arg("-version").output().map_err(|e| {
            anyhow::anyhow!(
                "the Flink and Storm peers need java (JDK 17) on PATH: {e}; or pass --no-flink \
                 --no-storm"
            )
        })?;
        String::from_utf8_lossy(&java.stderr)
            .lines()
            .next()
            .map(str::to_string)
    } else {
        None
    };
    // Flink 1.20 on Java 17 needs these opens for its serializers and closure cleaner.
    let flink = jvm
        .flink
        .then(|| {
            jvm_peer(
                dir,
                "flink",
                "--no-flink",
                "xorflow.peer.flink.ChainJob",
                &[
                    "java.base/java.lang",
                    "java.base/java.util",
                    "java.base/java.lang.reflect",
                    "java.base/java.io",
                    "java.base/java.net",
                    "java.base/java.nio",
                    "java.base/java.util.concurrent",
                    "java.base/java.time",
                ],
            )
        })
        .transpose()?;
    let storm = jvm
        .storm
        .then(|| {
            jvm_peer(
                dir,
                "storm",
                "--no-storm",
                "xorflow.peer.storm.ChainTopology",
                &[
                    "java.base/java.lang",
                    "java.base/java.util",
                    "java.base/java.nio",
                ],
            )
        })
        .transpose()?;
    Ok(Peers {
        timely,
        flink,
        storm,
        java_version,
    })
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
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

fn point(sweep: &str, value: String, config: &str, rep: usize, program: Vec<String>) -> Point {
    Point {
        sweep: sweep.into(),
        value,
        config: config.into(),
        rep,
        args: Vec::new(),
        program: Some(program),
    }
}

/// Flink's configurations in the latency sweep: (config, watermarks, buffer timeout in ms).
/// Punctuated: one watermark per substream per source subtask, as soon as it is complete;
/// periodic: `forMonotonousTimestamps`, emitted every 1 ms (Flink's shortest interval), Flink's
/// usual setup.
const FLINK_LATENCY_CONFIGS: [(&str, &str, &str); 3] = [
    ("flink-1ms", "punctuated", "1"),
    ("flink-100ms", "punctuated", "100"),
    ("flink-periodic-1ms", "periodic", "1"),
];

/// The points, systems alternating within each sweep point.
pub fn points(p: Profile, exe: &Path, peers: &Peers) -> Vec<Point> {
    let (reps, stages, gs, latency_gs) = sweeps(p);
    let xorflow = |args: Vec<String>| {
        let mut c = vec![exe.display().to_string(), "bench".into(), "chain".into()];
        c.push("--json".into());
        c.extend(s(&["--workers", &WORKERS.to_string()]));
        c.extend(args);
        c
    };
    let timely = |args: Vec<String>| {
        let mut c = vec![peers.timely.display().to_string(), "--json".into()];
        c.extend(s(&["--workers", &WORKERS.to_string()]));
        c.extend(args);
        c
    };
    // A JVM peer's command: its base, then `warm_runs` warm-up runs of `warm` elements.
    let jvm = |base: &Option<Vec<String>>, warm_runs: u32, args: Vec<String>, warm: u64| {
        base.as_ref().map(|base| {
            let mut c = base.clone();
            c.push("--json".into());
            c.extend(s(&["--workers", &WORKERS.to_string()]));
            c.extend(s(&[
                "--warmup-runs",
                &warm_runs.to_string(),
                "--warmup-run-elements",
                &warm.to_string(),
            ]));
            c.extend(args);
            c
        })
    };
    let flink = |args: Vec<String>, warm: u64| jvm(&peers.flink, 2, args, warm);
    let storm = |args: Vec<String>, warm: u64| jvm(&peers.storm, 1, args, warm);
    let mut pts = Vec::new();
    for rep in 1..=reps {
        for &k in stages {
            let base = |sys: &str| {
                s(&[
                    "--stages",
                    &k.to_string(),
                    "--elements",
                    &throughput_elements(p, sys, None, k).to_string(),
                ])
            };
            let mut a = base("xorflow");
            a.extend(s(&["--tracking", "none"]));
            pts.push(point("stages", k.to_string(), "xorflow", rep, xorflow(a)));
            let mut a = base("timely");
            a.extend(s(&["--granularity", "0"]));
            pts.push(point("stages", k.to_string(), "timely", rep, timely(a)));
            let mut a = base("flink");
            a.extend(s(&["--granularity", "0", "--buffer-timeout-ms", "100"]));
            let warm = throughput_elements(p, "flink", None, k) / 2;
            if let Some(c) = flink(a, warm) {
                pts.push(point("stages", k.to_string(), "flink", rep, c));
            }
            let mut a = base("storm");
            a.extend(s(&["--granularity", "0"]));
            let warm = throughput_elements(p, "storm", None, k) / 2;
            if let Some(c) = storm(a, warm) {
                pts.push(point("stages", k.to_string(), "storm", rep, c));
            }
        }
        for &w in gs {
            let base = |sys: &str| {
                s(&[
                    "--stages",
                    "10",
                    "--granularity",
                    &w.to_string(),
                    "--elements",
                    &throughput_elements(p, sys, Some(w), 10).to_string(),
                ])
            };
            let mut a = base("xorflow");
            a.extend(s(&["--tracking", "tracker"]));
            pts.push(point(
                "granularity",
                w.to_string(),
                "xorflow",
                rep,
                xorflow(a),
            ));
            pts.push(point(
                "granularity",
                w.to_string(),
                "timely",
                rep,
                timely(base("timely")),
            ));
            let mut a = base("flink");
            a.extend(s(&[
                "--watermarks",
                "punctuated",
                "--buffer-timeout-ms",
                "100",
            ]));
            let warm = throughput_elements(p, "flink", Some(w), 10) / 2;
            if let Some(c) = flink(a, warm) {
                pts.push(point("granularity", w.to_string(), "flink", rep, c));
            }
            let warm = throughput_elements(p, "storm", Some(w), 10) / 2;
            if let Some(c) = storm(base("storm"), warm) {
                pts.push(point("granularity", w.to_string(), "storm", rep, c));
            }
        }
        let (elements, warmup) = match p {
            Profile::Smoke => (60_000u64, 20_000u64),
            Profile::Quick => (250_000, 50_000),
            Profile::Full => (500_000, 100_000),
        };
        // A fixed-rate run at K = 10: granularity, rate, elements, warm-up.
        let fixed_rate = |w: u64, rate: f64, elements: u64, warmup: u64| {
            s(&[
                "--stages",
                "10",
                "--granularity",
                &w.to_string(),
                "--rate",
                &rate.to_string(),
                "--elements",
                &elements.to_string(),
                "--warmup",
                &warmup.to_string(),
            ])
        };
        for &w in latency_gs {
            let base = fixed_rate(w, LATENCY_RATE, elements, warmup);
            let mut a = base.clone();
            a.extend(s(&["--tracking", "tracker"]));
            pts.push(point("latency", w.to_string(), "xorflow", rep, xorflow(a)));
            pts.push(point(
                "latency",
                w.to_string(),
                "timely",
                rep,
                timely(base.clone()),
            ));
            for (config, watermarks, timeout) in FLINK_LATENCY_CONFIGS {
                let mut a = base.clone();
                a.extend(s(&[
                    "--watermarks",
                    watermarks,
                    "--buffer-timeout-ms",
                    timeout,
                ]));
                if watermarks == "periodic" {
                    a.extend(s(&["--watermark-interval-ms", "1"]));
                }
                if let Some(c) = flink(a, 500_000) {
                    pts.push(point("latency", w.to_string(), config, rep, c));
                }
            }
        }
        // Storm with acking tops out near 18,000 elements/s at K = 10 here, far below the latency
        // sweep's rate; it is compared with xorflow at a rate both sustain.
        if peers.storm.is_some() {
            for &w in latency_gs {
                let base = fixed_rate(w, STORM_LATENCY_RATE, elements / 10, warmup / 10);
                let mut a = base.clone();
                a.extend(s(&["--tracking", "tracker"]));
                pts.push(point(
                    STORM_LATENCY_SWEEP,
                    w.to_string(),
                    "xorflow",
                    rep,
                    xorflow(a),
                ));
                if let Some(c) = storm(base, 20_000) {
                    pts.push(point(STORM_LATENCY_SWEEP, w.to_string(), "storm", rep, c));
                }
            }
        }
    }
    pts
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

fn engine(o: &Outcome, meta: &Meta) -> (String, String) {
    match &o.result {
        Some(r) if r["engine"].is_string() => (
            r["engine"].as_str().unwrap_or("").to_string(),
            r["version"].as_str().unwrap_or("").to_string(),
        ),
        Some(_) => ("xorflow".into(), format!("git {}", meta.git)),
        None => (String::new(), String::new()),
    }
}

fn write_csv(dir: &Path, meta: &Meta, outcomes: &[Outcome]) -> Result<()> {
    let path = dir.join("results.csv");
    let mut w = csv::Writer::from_path(&path)
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    w.write_record(PEER_COLUMNS)?;
    for o in outcomes {
        let p = &o.point;
        let (eng, ver) = engine(o, meta);
        let mut row = vec![
            p.sweep.clone(),
            p.value.clone(),
            p.config.clone(),
            p.rep.to_string(),
            o.result.is_some().to_string(),
            o.error.clone().unwrap_or_default(),
            format!("{:.3}", o.wall_s),
            eng,
            ver,
        ];
        for col in &PEER_COLUMNS[row.len()..PEER_COLUMNS.len() - 2] {
            row.push(match &o.result {
                None => String::new(),
                Some(r) => fmt_num(metric(r, col)),
            });
        }
        row.push(match &o.result {
            Some(r) => fmt_num(r["buffer_timeout_ms"].as_f64()),
            None => String::new(),
        });
        row.push(p.command_line());
        w.write_record(&row)?;
    }
    w.flush()?;
    Ok(())
}

/// Writes results.csv, raw.jsonl, the figures and REPORT.md into `dir`.
///
/// # Errors
/// A file cannot be written or a figure cannot be drawn.
pub fn write(
    dir: &Path,
    meta: &Meta,
    java_version: Option<&str>,
    outcomes: &[Outcome],
) -> Result<()> {
    write_csv(dir, meta, outcomes)?;
    super::report::write_raw(dir, outcomes)?;
    let m = Medians::new(outcomes);
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.result.is_none()).collect();
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
        super::report::meta_lines(meta),
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
    let fig = |chart: super::plot::BarChart, file: &str, md: &mut String| -> Result<()> {
        super::report::figure(dir, chart, file, false, md)
    };
    // The systems that ran in a sweep, in first-seen order.
    let configs_in = |sweep: &str| -> Vec<String> {
        m.configs
            .iter()
            .filter(|c| {
                outcomes
                    .iter()
                    .any(|o| o.point.sweep == sweep && &o.point.config == *c)
            })
            .cloned()
            .collect()
    };
    let peer_cols = |md: &mut String, sweep: &str, col: &str, digits: usize, peers: &[String]| {
        let Some(values) = m.values.get(sweep) else {
            return;
        };
        let configs = configs_in(sweep);
        let mut head = format!("| {} |", super::report::sweep_label(sweep));
        let mut rule = String::from("|---|");
        for c in &configs {
            let _ = write!(head, " {c} |");
            rule.push_str("---:|");
        }
        for p in peers {
            let _ = write!(head, " xorflow / {p} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(md, "{head}\n{rule}");
        for v in values {
            let mut row = format!("| {v} |");
            for c in &configs {
                let _ = write!(row, " {} |", num(m.get(sweep, v, c, col), digits));
            }
            for p in peers {
                let _ = write!(
                    row,
                    " {} |",
                    ratio(m.get(sweep, v, "xorflow", col), m.get(sweep, v, p, col))
                );
            }
            let _ = writeln!(md, "{row}");
        }
        md.push('\n');
    };
    // The peers that ran in a sweep (their columns and ratios), in first-seen order.
    let peers_in = |sweep: &str| -> Vec<String> {
        configs_in(sweep)
            .into_iter()
            .filter(|c| c != "xorflow")
            .collect()
    };
    let (stage_peers, granularity_peers, latency_peers) = (
        peers_in("stages"),
        peers_in("granularity"),
        peers_in("latency"),
    );
    md.push_str(
        "## Maximum throughput without completeness tracking, elements/s\n\n\
         K pass-through stages, each behind a re-partition (xorflow `--tracking none`; timely: all \
         elements at one timestamp; Flink: no watermarks, `rebalance().map(identity)` per stage, \
         buffer timeout 100 ms; Storm: acking off, a shuffle grouping per stage). Ratio above 1: \
         xorflow is faster.\n\n",
    );
    peer_cols(&mut md, "stages", "elements_per_s", 0, &stage_peers);
    fig(
        m.chart(
            "stages",
            "elements_per_s",
            "Throughput without tracking",
            "elements/s",
            true,
        ),
        "peers_throughput_by_stages.png",
        &mut md,
    )?;
    md.push_str(
        "## Maximum throughput with completeness tracking, K = 10, elements/s\n\n\
         Each system's own mechanism at granularity W (elements per substream): xorflow's trAcker; \
         timely's pointstamp frontiers (timestamp = id / W); Flink's watermarks, one punctuated \
         watermark per substream per source subtask, and a tumbling event-time window of W at the \
         end; Storm's acker, which XORs the tuple ids of every spout tuple's tree, so it tracks \
         each element whatever W is (W only groups the spout's acks into substreams).\n\n",
    );
    peer_cols(
        &mut md,
        "granularity",
        "elements_per_s",
        0,
        &granularity_peers,
    );
    fig(
        m.chart(
            "granularity",
            "elements_per_s",
            "Throughput with completeness tracking (K = 10)",
            "elements/s",
            true,
        ),
        "peers_throughput_by_granularity.png",
        &mut md,
    )?;
    let _ = writeln!(
        md,
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
    for (col, q, what) in [
        ("notification_p50_us", "p50", "per instance"),
        ("notification_p99_us", "p99", "per instance"),
        (
            "notification_any_p50_us",
            "any_p50",
            "from the last arrival anywhere",
        ),
        (
            "notification_any_p99_us",
            "any_p99",
            "from the last arrival anywhere",
        ),
    ] {
        let q = q.trim_start_matches("any_");
        let tag = if what == "per instance" { "" } else { "_any" };
        let _ = writeln!(md, "### {q} {what}, us\n");
        peer_cols(&mut md, "latency", col, 0, &latency_peers);
        fig(
            m.chart(
                "latency",
                col,
                &format!("Notification latency {q}, {what}"),
                &format!("notification latency {q}, us"),
                true,
            ),
            &format!("peers_latency{tag}_{q}.png"),
            &mut md,
        )?;
    }
    // Achieved rate and element latency per system of a fixed-rate sweep.
    let element_table = |md: &mut String, sweep: &str| {
        let Some(values) = m.values.get(sweep) else {
            return;
        };
        md.push_str("### Achieved rate and element latency (end to end, p50/p99, us)\n\n");
        md.push_str("| granularity | system | achieved elements/s | element p50 | element p99 |\n|---|---|---:|---:|---:|\n");
        for v in values {
            for c in &configs_in(sweep) {
                let g = |col| m.get(sweep, v, c, col);
                let _ = writeln!(
                    md,
                    "| {v} | {c} | {} | {} | {} |",
                    num(g("achieved_rate"), 0),
                    num(g("element_latency_p50_us"), 0),
                    num(g("element_latency_p99_us"), 0)
                );
            }
        }
        md.push('\n');
    };
    element_table(&mut md, "latency");
    let storm_latency_peers = peers_in(STORM_LATENCY_SWEEP);
    if !storm_latency_peers.is_empty() {
        let _ = writeln!(
            md,
            "## Notification latency next to Storm's acker, {} elements/s, K = 10\n\n\
             Storm with acking moves about 18,000 elements/s on this machine, so it is compared \
             with xorflow at a rate both sustain. Storm's acker XORs the ids of each spout tuple's \
             tree and tells the spout when it is complete; a spout task's part of a substream is \
             complete when all its trees are. From the last arrival anywhere (at a sink), us; \
             ratio below 1: xorflow notifies sooner.\n",
            STORM_LATENCY_RATE
        );
        for (col, q) in [
            ("notification_any_p50_us", "p50"),
            ("notification_any_p99_us", "p99"),
        ] {
            let _ = writeln!(md, "### {q} from the last arrival anywhere, us\n");
            peer_cols(&mut md, STORM_LATENCY_SWEEP, col, 0, &storm_latency_peers);
            fig(
                m.chart(
                    STORM_LATENCY_SWEEP,
                    col,
                    &format!(
                        "Notification latency {q} next to Storm, from the last arrival anywhere"
                    ),
                    &format!("notification latency {q}, us"),
                    true,
                ),
                &format!("peers_latency_storm_{q}.png"),
                &mut md,
            )?;
        }
        element_table(&mut md, STORM_LATENCY_SWEEP);
    }
    md.push_str("## Where xorflow is ahead and where it is behind\n\n");
    for (sweep, col, higher_better, what) in [
        (
            "stages",
            "elements_per_s",
            true,
            "throughput without tracking, K",
        ),
        (
            "granularity",
            "elements_per_s",
            true,
            "throughput with tracking, W",
        ),
        (
            "latency",
            "notification_p50_us",
            false,
            "notification p50, W",
        ),
        (
            "latency",
            "notification_p99_us",
            false,
            "notification p99, W",
        ),
        (
            "latency",
            "notification_any_p50_us",
            false,
            "notification p50 from the last arrival anywhere, W",
        ),
        (
            "latency",
            "notification_any_p99_us",
            false,
            "notification p99 from the last arrival anywhere, W",
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p50_us",
            false,
            "notification p50 from the last arrival anywhere at 10,000 elements/s, W",
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p99_us",
            false,
            "notification p99 from the last arrival anywhere at 10,000 elements/s, W",
        ),
    ] {
        let Some(values) = m.values.get(sweep) else {
            continue;
        };
        for v in values {
            let others = match sweep {
                "latency" => &latency_peers,
                "stages" => &stage_peers,
                STORM_LATENCY_SWEEP => &storm_latency_peers,
                _ => &granularity_peers,
            };
            for p in others {
                let (Some(x), Some(y)) = (m.get(sweep, v, "xorflow", col), m.get(sweep, v, p, col))
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
    md.push_str("\nThe exact command of every run is in results.csv (`command`) and runs.log.\n");
    let path = dir.join("REPORT.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write '{}'", path.display()))?;
    Ok(())
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
    let outcomes: Vec<Outcome> = pts.iter().map(|p| runner.run(p)).collect();
    runner.finish();
    write(&dir, &meta, peers.java_version.as_deref(), &outcomes)?;
    let _ = writeln!(
        std::io::stderr(),
        "peers: {}",
        dir.join("REPORT.md").display()
    );
    Ok(dir)
}
