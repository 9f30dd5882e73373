//! `xorflow-lab bench peers --workload ysb`: the YSB on xorflow, Apache Flink and Apache Storm side
//! by side at one rate, repeated with the engines alternating (the machine is shared and noisy:
//! only ratios measured in one run are reported), into `<out>/ysb-peers-<UTC>/`.

use super::{append_raw, command_line, Engine, Point, StandConfig};
use crate::subprocess::median;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use xorflow_runtime::ValueName;
use xorflow_ysb::bench::BenchResult;

/// What to compare.
#[derive(Clone, Debug)]
pub struct PeersConfig {
    /// The point every engine runs.
    pub point: Point,
    /// Repetitions (each runs every engine once, in order).
    pub reps: usize,
    /// The engines and where results go.
    pub stand: StandConfig,
}

/// Runs the comparison; returns the results folder.
///
/// # Errors
/// A build or a run fails, or a file cannot be written.
pub fn run(cfg: &PeersConfig) -> Result<PathBuf> {
    let (dir, e) = cfg.stand.start("ysb-peers")?;
    let mut results: Vec<(Engine, BenchResult)> = Vec::new();
    for rep in 0..cfg.reps {
        for &engine in &cfg.stand.engines {
            eprintln!("ysb peers: {} rep {}/{}", engine.name(), rep + 1, cfg.reps);
            let counts = dir.join(format!("counts-{}-{rep}.csv", engine.name()));
            let r = e.run(engine, cfg.point, &counts)?;
            append_raw(&dir, &serde_json::to_value(&r)?)?;
            results.push((engine, r));
        }
    }
    crate::stand::files::write_whole(&dir.join("REPORT.md"), report(cfg, &results).as_bytes())?;
    Ok(dir)
}

/// The medians over repetitions of one engine's figure.
fn med(results: &[(Engine, BenchResult)], e: Engine, f: impl Fn(&BenchResult) -> f64) -> f64 {
    median(
        results
            .iter()
            .filter(|r| r.0 == e)
            .map(|r| f(&r.1))
            .collect(),
    )
}

/// REPORT.md: the table of medians and each figure's ratio to xorflow's.
pub fn report(cfg: &PeersConfig, results: &[(Engine, BenchResult)]) -> String {
    let p = cfg.point;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# YSB: xorflow, Apache Flink and Apache Storm side by side\n"
    );
    let _ = writeln!(t, "Command: `{}`\n", command_line());
    let _ = writeln!(
        t,
        "{} events/s for {} s; {} sources; {} process(es) x {} workers (Flink: TaskManagers x \
         slots; Storm: one LocalCluster, {} executors per bolt); {} repetitions, engines \
         alternating; medians. Contract: `peers/ysb-contract.md`.\n",
        p.rate, p.duration_s, p.sources, p.processes, p.workers, p.workers, cfg.reps
    );
    let _ = writeln!(
        t,
        "| engine | events/s | generator lag max, ms | window latency p50 / p90 / p99, ms | \
         updated - start p50 / p99, ms | pre-window p50 / p99, ms | counts = oracle |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---|");
    for &e in &cfg.stand.engines {
        let m = |f: &dyn Fn(&BenchResult) -> f64| med(results, e, f);
        let ok = results
            .iter()
            .filter(|r| r.0 == e)
            .all(|r| r.1.counts_match_oracle == Some(true));
        let _ = writeln!(
            t,
            "| {} | {:.0} | {:.1} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} | {:.2} / {:.2} | {} |",
            e.name(),
            m(&|r| r.throughput_events_per_s),
            m(&|r| r.generator_lag_ms_max),
            m(&|r| r.window_latency_ms.p50),
            m(&|r| r.window_latency_ms.p90),
            m(&|r| r.window_latency_ms.p99),
            m(&|r| r.updated_latency_ms.p50),
            m(&|r| r.updated_latency_ms.p99),
            m(&|r| r.prewindow_latency_ms.p50),
            m(&|r| r.prewindow_latency_ms.p99),
            if ok { "yes" } else { "NO" }
        );
    }
    let x = |f: &dyn Fn(&BenchResult) -> f64| med(results, Engine::Xorflow, f);
    let _ = writeln!(
        t,
        "\nRatios to xorflow (> 1: the peer's figure is larger):\n"
    );
    let _ = writeln!(
        t,
        "| engine | window latency p50 | window latency p99 | pre-window p99 |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|");
    for &e in cfg.stand.engines.iter().filter(|&&e| e != Engine::Xorflow) {
        let r = |f: &dyn Fn(&BenchResult) -> f64| med(results, e, f) / x(f).max(1e-9);
        let _ = writeln!(
            t,
            "| {} | {:.1}x | {:.1}x | {:.1}x |",
            e.name(),
            r(&|r| r.window_latency_ms.p50),
            r(&|r| r.window_latency_ms.p99),
            r(&|r| r.prewindow_latency_ms.p99)
        );
    }
    t.push_str(NOTES);
    t
}

const NOTES: &str = "
Definitions (docs/ysb.md): window latency = emission of a (campaign, 10 s window) minus the
event time of its last event (seeds 003/004); updated - start = the original YSB's
`time_updated - window_start`, which includes the 10 s window; pre-window = arrival at the
stage before the window's key exchange minus event time (the CPU-efficiency paper's Enrich). Only windows wholly
inside the generation count. Event times are the generator's due times, so a generator that
falls behind (backpressure) shows in the pre-window latency and the generator lag.

Each engine closes windows its own way: xorflow by trAcker's frontier (1 s substreams), Flink by
periodic watermarks (200 ms, bounded out-of-orderness 0), Storm with the original YSB's
CampaignProcessor (time buckets flushed every second; its event-time windowed bolt loses views at
high rates: `peers/ysb-contract.md`).

Inputs: 100,000 template events and the table as `xorflow-lab ysb generate --events 100000 --seed 1`
draws them (event times replaced by the schedule), in this folder with each engine's counts.
";

/// Reads a folder's raw.jsonl back (for tests and re-reports).
///
/// # Errors
/// The file cannot be read or a line is not a result.
pub fn read_raw(dir: &Path) -> Result<Vec<BenchResult>> {
    let text = std::fs::read_to_string(dir.join("raw.jsonl"))?;
    text.lines().map(|l| Ok(serde_json::from_str(l)?)).collect()
}
