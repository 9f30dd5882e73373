//! The trAcker paper's snapshot experiment with real state (`xorflow-lab bench alignment`, docs/state.md): what
//! a checkpoint holds back, trAcker's buffered cut and its versioned cut (`--checkpoint-cut
//! versioned`) against aligned barriers (`--tracking markers`) in the same engine, with
//! 100/500/1000 ms of synchronous snapshot work, without and under backpressure.
//!
//! The workload is the chain with a keyed stateful stage (`bench chain --keyed-window`): its
//! keyed window holds real state, snapshotted into real checkpoint files; `--snapshot-work`
//! adds the synchronous phase of a larger state's snapshot (the worker thread is busy that
//! long), which is what the trAcker paper imitated with a sleep alone. One checkpoint interval is chosen
//! so that a run takes one or two checkpoints. Measured, summed over every vertex: elements
//! held back until their epoch began (trAcker: at stateful instances; barriers: at every
//! instance with input, a channel being blocked) and their mean time held; with throughput and
//! checkpoint duration. Backpressure: sources unlimited, channels full; its depth is the
//! channel capacity (64 batches, and 512 to show how alignment grows with the backlog).

use crate::subprocess::{json_of, median};
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

/// Options of `bench alignment`.
#[derive(clap::Args, Clone, Debug)]
pub struct AlignmentConfig {
    /// Repetitions of every setting, alternating.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Synchronous snapshot work per stateful instance (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "100ms,500ms,1s",
          value_parser = humantime::parse_duration)]
    pub work: Vec<Duration>,
    /// The rate of the runs without backpressure, elements/s.
    #[arg(long, default_value_t = 2_000_000.0)]
    pub rate: f64,
    /// Seconds of input per run at --rate (the unlimited runs take 25x as many elements, about as long).
    #[arg(long, default_value_t = 3.5)]
    pub seconds: f64,
    /// Checkpoint interval (one or two checkpoints per run).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// Channel capacities of the backpressured runs, batches (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "64,512")]
    pub backlog: Vec<usize>,
    /// The cuts compared: `tracker` (trAcker's buffered cut), `versioned` (trAcker's versioned
    /// cut), `markers` (aligned barriers); comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "tracker,versioned,markers"
    )]
    pub cuts: Vec<String>,
}

/// One run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AlignmentRun {
    /// `tracker` (trAcker's buffered cut), `versioned` (trAcker's versioned cut) or `markers`
    /// (aligned barriers).
    pub tracking: String,
    /// `rate` (no backpressure) or `backpressure`.
    pub load: String,
    /// Channel capacity, batches.
    pub channel_capacity: usize,
    /// Synchronous snapshot work, ms.
    pub work_ms: u64,
    /// Repetition.
    pub rep: usize,
    /// Source elements per second of wall time.
    pub elements_per_s: f64,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// Elements held back until their epoch began, over all vertices.
    pub held_elements: u64,
    /// Their mean time held, ms.
    pub held_mean_ms: f64,
    /// Checkpoint duration p50 (first report to manifest), ms.
    pub duration_p50_ms: f64,
}

/// Runs every setting `reps` times, alternating the cuts innermost.
///
/// # Errors
/// A run that fails or prints no result, with its command line.
pub fn run(cfg: &AlignmentConfig) -> anyhow::Result<Vec<AlignmentRun>> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut loads: Vec<(&str, usize)> = vec![("rate", 64)];
    loads.extend(cfg.backlog.iter().map(|&c| ("backpressure", c)));
    for c in &cfg.cuts {
        anyhow::ensure!(
            ["tracker", "versioned", "markers"].contains(&c.as_str()),
            "--cuts: unknown cut '{c}' (expected tracker, versioned or markers)"
        );
    }
    let mut out = Vec::new();
    for rep in 0..cfg.reps {
        for &work in &cfg.work {
            for &(load, capacity) in &loads {
                for tracking in cfg.cuts.iter().map(String::as_str) {
                    let tmp = tempfile::tempdir()?;
                    let r = one(&exe, cfg, tracking, load, capacity, work, tmp.path())?;
                    let r = AlignmentRun { rep, ..r };
                    eprintln!("{}", describe(&r));
                    out.push(r);
                }
            }
        }
    }
    Ok(out)
}

fn one(
    exe: &Path,
    cfg: &AlignmentConfig,
    tracking: &str,
    load: &str,
    capacity: usize,
    work: Duration,
    dir: &Path,
) -> anyhow::Result<AlignmentRun> {
    let at_rate = (cfg.rate * cfg.seconds) as u64;
    let (elements, rate) = match load {
        "rate" => (at_rate, cfg.rate),
        _ => (at_rate * 25, 0.0),
    };
    let (mode, cut) = match tracking {
        "versioned" => ("tracker", "versioned"),
        other => (other, "buffered"),
    };
    let args: Vec<String> = [
        "bench",
        "chain",
        "--json",
        "--keyed-window",
        "1000000",
        "--keys",
        "10000",
        "--stages",
        "2",
        "--granularity",
        "1000",
    ]
    .map(String::from)
    .into_iter()
    .chain([
        "--elements".into(),
        elements.to_string(),
        "--rate".into(),
        rate.to_string(),
        "--tracking".into(),
        mode.into(),
        "--checkpoint-cut".into(),
        cut.into(),
        "--channel-capacity".into(),
        capacity.to_string(),
        "--checkpoint-dir".into(),
        dir.join("checkpoints").display().to_string(),
        "--checkpoint-interval".into(),
        format!("{}ms", cfg.interval.as_millis()),
        "--snapshot-work".into(),
        format!("{}ms", work.as_millis()),
    ])
    .collect();
    let v = json_of(exe, &args)?;
    let c = &v["checkpoints"];
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    Ok(AlignmentRun {
        tracking: tracking.into(),
        load: load.into(),
        channel_capacity: capacity,
        work_ms: work.as_millis() as u64,
        rep: 0,
        elements_per_s: f(&v["elements_per_s"]),
        checkpoints: c["completed"].as_u64().unwrap_or(0),
        held_elements: c["buffered_elements"].as_u64().unwrap_or(0),
        held_mean_ms: f(&c["buffered_mean_ms"]),
        duration_p50_ms: f(&c["duration_p50_ms"]),
    })
}

/// One line per run.
pub fn describe(r: &AlignmentRun) -> String {
    format!(
        "rep {} {} {} (capacity {}), work {} ms: {:.2} M elements/s, {} checkpoints, {} \
         elements held, {:.1} ms mean, checkpoint p50 {:.0} ms",
        r.rep,
        r.tracking,
        r.load,
        r.channel_capacity,
        r.work_ms,
        r.elements_per_s / 1e6,
        r.checkpoints,
        r.held_elements,
        r.held_mean_ms,
        r.duration_p50_ms
    )
}

/// A Markdown table of medians over repetitions, trAcker's two cuts and barriers side by side.
pub fn table(runs: &[AlignmentRun]) -> String {
    let mut s = String::from(
        "| load | work | trAcker buffered: held elements / mean ms | trAcker versioned: held \
         elements / mean ms | barriers: held elements / mean ms | elements/s buffered / \
         versioned / barriers |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut keys: Vec<(String, usize, u64)> = Vec::new();
    for r in runs {
        let k = (r.load.clone(), r.channel_capacity, r.work_ms);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (load, cap, work) in keys {
        let m = |tr: &str, f: fn(&AlignmentRun) -> f64| {
            median(
                runs.iter()
                    .filter(|r| {
                        r.tracking == tr
                            && r.load == load
                            && r.channel_capacity == cap
                            && r.work_ms == work
                    })
                    .map(f)
                    .collect(),
            )
        };
        let held = |tr| m(tr, |r| r.held_elements as f64);
        let mean = |tr| m(tr, |r| r.held_mean_ms);
        let rate = |tr| m(tr, |r| r.elements_per_s) / 1e6;
        let what = if load == "rate" {
            "rate-limited".to_string()
        } else {
            format!("backpressure, {cap} batches per channel")
        };
        s.push_str(&format!(
            "| {what} | {work} ms | {:.0} / {:.1} | {:.0} / {:.1} | {:.0} / {:.1} | {:.2} / {:.2} \
             / {:.2} M |\n",
            held("tracker"),
            mean("tracker"),
            held("versioned"),
            mean("versioned"),
            held("markers"),
            mean("markers"),
            rate("tracker"),
            rate("versioned"),
            rate("markers"),
        ));
    }
    s
}
