//! The bench stand: one command per experiment of seed 000, each producing raw CSV, PNG figures
//! and a REPORT.md in `bench/results/<experiment>-<UTC time>/`.
//!
//! Every measurement point is one `xorflow bench chain --json ...` run in a fresh process (which
//! starts its own cluster with `--processes`), so runs never share state; points are run in sweep
//! order with the configurations interleaved, so machine noise hits them alike. Processes stand in
//! for the paper's virtual machines (one worker each, as the paper's single-CPU VMs).

pub mod experiments;
pub mod peers;
pub mod plot;
pub mod report;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// One measurement point: a chain run with given arguments, labelled by its sweep coordinates.
#[derive(Clone, Debug)]
pub struct Point {
    /// What is swept ("stages", "processes", "granularity", "multiplier", "pause", "rate").
    pub sweep: String,
    /// The swept value, as printed on the figure's axis.
    pub value: String,
    /// The configuration (tracking mode and its options), e.g. "tracker-2-shards-unbatched".
    pub config: String,
    /// Repetition number (1-based).
    pub rep: usize,
    /// Arguments after `bench chain` (`--json` is added).
    pub args: Vec<String>,
    /// Another program instead (a peer system): the whole command line, program first, `--json`
    /// included; `args` is then unused.
    pub program: Option<Vec<String>>,
}

impl Point {
    /// The command line a runner with executable `exe` runs for this point.
    fn command(&self, exe: &Path) -> Vec<String> {
        match &self.program {
            Some(p) => p.clone(),
            None => {
                let mut c = vec![exe.display().to_string(), "bench".into(), "chain".into()];
                c.push("--json".into());
                c.extend(self.args.iter().cloned());
                c
            }
        }
    }

    /// The program's command line as one string (peers; empty for chain points, whose
    /// command is `xorflow bench chain --json` and the arguments).
    pub fn command_line(&self) -> String {
        self.program
            .as_ref()
            .map(|p| p.join(" "))
            .unwrap_or_default()
    }
}

/// A point and what its run reported (`None` with the reason when it failed).
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The point.
    pub point: Point,
    /// The run's JSON result.
    pub result: Option<Value>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Wall-clock seconds the run took, start-up included.
    pub wall_s: f64,
}

/// Runs chain points through the `xorflow` executable.
pub struct Runner {
    exe: PathBuf,
    /// A run taking longer than this is killed and recorded as failed.
    pub timeout: Duration,
    bar: ProgressBar,
    log: std::fs::File,
}

impl Runner {
    /// A runner of `exe` with a progress bar of `total` points, logging every command and its
    /// stderr to `log`.
    ///
    /// # Errors
    /// The log cannot be created.
    pub fn new(exe: PathBuf, total: u64, log: &Path) -> Result<Self> {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {elapsed} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Ok(Runner {
            exe,
            timeout: Duration::from_secs(300),
            bar,
            log: std::fs::File::create(log)
                .with_context(|| format!("cannot create '{}'", log.display()))?,
        })
    }

    /// Sets the progress bar's label (the experiment).
    pub fn stage(&self, name: &str) {
        self.bar.set_prefix(name.to_string());
    }

    /// Runs one point.
    pub fn run(&mut self, p: &Point) -> Outcome {
        self.bar
            .set_message(format!("{}={} {}", p.sweep, p.value, p.config));
        let t0 = Instant::now();
        let (result, error) = match self.run_command(&p.command(&self.exe)) {
            Ok(v) => (Some(v), None),
            Err(e) => {
                self.bar.println(format!(
                    "point {}={} {} failed: {e:#}",
                    p.sweep, p.value, p.config
                ));
                (None, Some(format!("{e:#}")))
            }
        };
        self.bar.inc(1);
        Outcome {
            point: p.clone(),
            result,
            error,
            wall_s: t0.elapsed().as_secs_f64(),
        }
    }

    fn run_command(&mut self, cmd: &[String]) -> Result<Value> {
        let _ = writeln!(self.log, "$ {}", cmd.join(" "));
        let dir = tempfile::tempdir()?;
        let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path)?)
            .stderr(std::fs::File::create(&err_path)?)
            .spawn()
            .with_context(|| format!("cannot start '{}'", cmd[0]))?;
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if t0.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                bail!("killed after {:?} (timeout)", self.timeout);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = std::fs::read_to_string(&out_path)?;
        let err = std::fs::read_to_string(&err_path)?;
        let _ = write!(self.log, "{err}");
        if !status.success() {
            bail!("exit {status}: {}", err.trim());
        }
        let line = out
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .context("no JSON result line")?;
        serde_json::from_str(line).context("unreadable JSON result")
    }

    /// Ends the progress bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
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
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
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
            cpu_model: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
                .unwrap_or_default(),
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
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
        let meta = Meta::collect(o.profile);
        std::fs::write(dir.join("meta.json"), serde_json::to_string_pretty(&meta)?)?;
        let points = e.points(o.profile);
        let mut runner = Runner::new(o.exe.clone(), points.len() as u64, &dir.join("runs.log"))?;
        runner.stage(e.name());
        let outcomes = e.run(&mut runner, points, o.profile);
        runner.finish();
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
/// of its results folder (after the report code changed; no run is repeated). The experiment is
/// the folder name's prefix (`traffic-20261121T083038Z` is traffic).
///
/// # Errors
/// The folder's name names no experiment, or its files are missing or unreadable.
pub fn rewrite_report(dir: &Path) -> Result<()> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let prefix = name.rsplit_once('-').map_or(name.as_str(), |(p, _)| p);
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .with_context(|| format!("cannot read '{}'", dir.join(f).display()))
    };
    let meta: Meta = serde_json::from_str(&read("meta.json")?).context("meta.json")?;
    let mut outcomes = Vec::new();
    for (i, line) in read("raw.jsonl")?.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("raw.jsonl line {}: not JSON", i + 1))?;
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let strings = |k: &str| -> Option<Vec<String>> {
            v[k].as_array().map(|a| {
                a.iter()
                    .map(|x| x.as_str().unwrap_or_default().to_string())
                    .collect()
            })
        };
        outcomes.push(Outcome {
            point: Point {
                sweep: text("sweep"),
                value: text("value"),
                config: text("config"),
                rep: v["rep"].as_u64().unwrap_or(1) as usize,
                args: strings("args").unwrap_or_default(),
                program: strings("program"),
            },
            result: Some(v["result"].clone()).filter(|r| !r.is_null()),
            error: v["error"].as_str().map(str::to_string),
            wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
        });
    }
    if prefix == "peers" {
        // The java version is not in meta.json; keep the line the run wrote.
        let java = std::fs::read_to_string(dir.join("REPORT.md"))
            .ok()
            .and_then(|r| {
                r.lines()
                    .find_map(|l| l.strip_prefix("- java: ").map(str::to_string))
            });
        return peers::write(dir, &meta, java.as_deref(), &outcomes);
    }
    let e = experiments::Experiment::parse(prefix)
        .map_err(|e| anyhow::anyhow!("'{}': {e}", dir.display()))?;
    report::write(e, dir, &meta, &outcomes)
}
