//! The bench stand: one command per experiment of the trAcker paper, each producing raw CSV, SVG figures
//! and a REPORT.md in `bench/results/<experiment>-<UTC time>/`.
//!
//! Every measurement point is one `xorflow-lab bench chain --json ...` run in a fresh process (which
//! starts its own cluster with `--processes`), so runs never share state; points are run in sweep
//! order with the configurations interleaved, so machine noise hits them alike. Processes stand in
//! for the paper's virtual machines (one worker each, as the paper's single-CPU VMs).

pub mod experiments;
pub mod files;
pub mod plot;
pub mod report;
pub mod runner;

pub use experiments::peers;

use anyhow::{Context, Result};
use runner::{read_raw, write_raw, Runner};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use xorflow_runtime::ValueName;

/// How big the sweeps are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// A few tiny points per experiment (CI: all five in under 2 minutes).
    Smoke,
    /// Every sweep with short runs (all five in under 10 minutes on 2 cores).
    Quick,
    /// Every sweep with the full run lengths and 3 repetitions.
    Full,
}

impl Profile {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Smoke => "smoke",
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }
}

/// Facts about the run recorded with the results.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    /// The command line as typed.
    pub command: String,
    /// `git rev-parse --short HEAD`, with `-dirty` for local changes (or "unknown").
    pub git: String,
    /// UTC start time, RFC 3339.
    pub started_utc: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// CPU model (from /proc/cpuinfo).
    pub cpu_model: String,
    /// Total memory, GiB.
    pub memory_gib: f64,
    /// Kernel release.
    pub kernel: String,
    /// The profile.
    pub profile: String,
}

impl Meta {
    /// Collects the facts of this machine and checkout.
    pub fn collect(profile: Profile) -> Self {
        let sh = |cmd: &str, args: &[&str]| {
            Command::new(cmd)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let mut git = sh("git", &["rev-parse", "--short", "HEAD"]).unwrap_or("unknown".into());
        if sh("git", &["status", "--porcelain", "--untracked-files=no"])
            .is_some_and(|s| !s.is_empty())
        {
            git.push_str("-dirty");
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        Meta {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            git,
            started_utc: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: crate::machine::cpu_model(),
            memory_gib: mem_kib / 1024.0 / 1024.0,
            kernel: sh("uname", &["-r"]).unwrap_or_default(),
            profile: profile.name().into(),
        }
    }
}

/// Options of one stand run.
#[derive(Clone, Debug)]
pub struct StandOptions {
    /// Experiments to run, in order.
    pub experiments: Vec<experiments::Experiment>,
    /// Sweep sizes.
    pub profile: Profile,
    /// Results root (a folder per experiment and time is made in it).
    pub out_root: PathBuf,
    /// The `xorflow` executable running the points.
    pub exe: PathBuf,
}

/// Runs the experiments; returns the result folders.
///
/// # Errors
/// A folder or file cannot be written, or a figure cannot be drawn.
pub fn run(o: &StandOptions) -> Result<Vec<PathBuf>> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let mut dirs = Vec::new();
    for &e in &o.experiments {
        let dir = o.out_root.join(format!("{}-{stamp}", e.name()));
        let meta = Meta::collect(o.profile);
        files::start_run_dir(&dir, &meta)?;
        let points = e.points(o.profile);
        let mut runner = Runner::new(o.exe.clone(), points.len() as u64, &dir.join("runs.log"))?;
        runner.stage(e.name());
        let outcomes = e.run(&mut runner, points, o.profile);
        runner.finish();
        write_raw(&dir, &outcomes)?;
        report::write(e, &dir, &meta, &outcomes)?;
        let _ = writeln!(
            std::io::stderr(),
            "{}: {}",
            e.name(),
            dir.join("REPORT.md").display()
        );
        dirs.push(dir);
    }
    Ok(dirs)
}

/// Writes an experiment's CSV, figures and REPORT.md again from the `meta.json` and `raw.jsonl`
/// of its results folder (after the report code changed; no run is repeated, raw.jsonl is left
/// as it is). The experiment is the folder name's prefix (`traffic-20261121T083038Z` is traffic).
///
/// # Errors
/// The folder's name names no experiment, or its files are missing or unreadable.
pub fn rewrite_report(dir: &Path) -> Result<()> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let prefix = name.rsplit_once('-').map_or(name.as_str(), |(p, _)| p);
    let meta_path = dir.join("meta.json");
    let meta = std::fs::read_to_string(&meta_path)
        .with_context(|| format!("cannot read '{}'", meta_path.display()))?;
    let meta: Meta = serde_json::from_str(&meta).context("meta.json")?;
    if prefix == "peers" {
        return peers::rewrite(dir, &meta);
    }
    let e = crate::named::by_name::<experiments::Experiment>(prefix)
        .map_err(|e| anyhow::anyhow!("'{}': {e}", dir.display()))?;
    report::write(e, dir, &meta, &read_raw(dir)?)
}
