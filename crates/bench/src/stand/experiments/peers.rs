//! `xorflow-lab bench peers`: timely dataflow, Apache Flink and Apache Storm next to xorflow on seed
//! 000's chain, in one run on one machine, so each performance claim is a ratio anyone can
//! reproduce.
//!
//! The peers live in `peers/`: `peers/timely` (a Rust program on the `timely` crate),
//! `peers/flink` (a Maven project on Flink's MiniCluster) and `peers/storm` (a Maven project on
//! Storm's LocalCluster). Each prints one JSON object with the
//! field names of `xorflow-lab bench chain --json` (`elements_per_s`, `latency_p50_us`, ...), and
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
//! - `cluster-throughput` and `cluster-latency`: the same throughput (K = 10, without tracking
//!   and at each W) and latency runs with every system spread over 2 processes of 1 worker each:
//!   xorflow's processes over its TCP transport, timely's own TCP cluster mode
//!   (`peers/timely --processes 2`), Flink's MiniCluster with 2 TaskManagers (`--task-managers 2`,
//!   shuffles over Flink's Netty network stack). Storm's LocalCluster is one process: no cluster
//!   runs.
//!
//! "Maximum throughput" here is the rate each system reaches with its own flow control (xorflow's
//! credit-based channels, Flink's credit-based network stack, the timely peer's bound on elements
//! in flight) when its sources emit as fast as they can.

pub mod build;
mod points;
mod report;

pub use build::{build, JvmPeers, Peers};
pub use points::points;
pub use report::{write, PEER_COLUMNS};

use super::super::report::measures_metric;
use super::super::runner::{read_raw, write_raw, Outcome, RunResult, Runner};
use super::super::{Meta, Profile};
use crate::chain::ChainMeasures;
use anyhow::Result;
use serde::Deserialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Worker threads per system (the P).
pub const WORKERS: usize = 2;
/// Processes of the cluster runs: [`WORKERS`] / this many workers each.
pub const CLUSTER_PROCESSES: usize = 2;
/// The sweep of maximum throughput over [`CLUSTER_PROCESSES`] processes, K = 10: value "none"
/// (no tracking) or the granularity.
pub const CLUSTER_THROUGHPUT_SWEEP: &str = "cluster-throughput";
/// The sweep of notification latency over [`CLUSTER_PROCESSES`] processes at
/// [`LATENCY_RATE`], K = 10, by granularity.
pub const CLUSTER_LATENCY_SWEEP: &str = "cluster-latency";
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

/// Every sweep's name, in the order they run.
pub const SWEEPS: [&str; 6] = [
    "stages",
    "granularity",
    "latency",
    STORM_LATENCY_SWEEP,
    CLUSTER_THROUGHPUT_SWEEP,
    CLUSTER_LATENCY_SWEEP,
];

/// Builds the peers, runs every point of the sweeps named in `only` (all when empty) and writes
/// the results folder `<out_root>/peers/peers-<UTC>`.
///
/// # Errors
/// An unknown sweep name, a build fails, or a folder or file cannot be written.
pub fn run(
    profile: Profile,
    out_root: &Path,
    exe: &Path,
    peers_dir: &Path,
    jvm: JvmPeers,
    only: &[String],
) -> Result<PathBuf> {
    if let Some(bad) = only.iter().find(|s| !SWEEPS.contains(&s.as_str())) {
        anyhow::bail!(
            "unknown sweep '{bad}' (--sweeps takes {})",
            SWEEPS.join(", ")
        );
    }
    let peers = build(peers_dir, jvm)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    // Peers runs keep to their own folder: `<out>/peers/peers-<UTC>`.
    let dir = out_root.join("peers").join(format!("peers-{stamp}"));
    let meta = Meta::collect(profile);
    super::super::files::start_run_dir(&dir, &meta)?;
    let pts: Vec<_> = points(profile, exe, &peers)
        .into_iter()
        .filter(|p| only.is_empty() || only.contains(&p.sweep))
        .collect();
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
