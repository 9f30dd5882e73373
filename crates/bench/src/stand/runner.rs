//! Measurement points, running them in fresh processes, and their outcomes as typed results
//! (with the raw JSON kept for `raw.jsonl`).

use crate::chain::ChainConfig;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a point runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Run {
    /// `xorflow-lab bench chain --json` with these options.
    Chain(Box<ChainConfig>),
    /// Another program (a peer engine, or a chain run whose command was recorded whole): the
    /// whole command line, program first, `--json` included.
    Program(Vec<String>),
}

/// One measurement point: a run, labelled by its sweep coordinates.
#[derive(Clone, Debug)]
pub struct Point {
    /// What is swept ("stages", "processes", "granularity", "multiplier", "pause", "latency").
    pub sweep: String,
    /// The swept value, as printed on the figure's axis.
    pub value: String,
    /// The configuration (tracking mode and its options, or the peer system), e.g.
    /// "tracker-2-shards-unbatched".
    pub config: String,
    /// Repetition number (1-based).
    pub rep: usize,
    /// What runs.
    pub run: Run,
}

/// The command line of a chain run of `exe` with `config`.
pub fn chain_command(exe: &Path, config: &ChainConfig) -> Vec<String> {
    let mut c = vec![
        exe.display().to_string(),
        "bench".into(),
        "chain".into(),
        "--json".into(),
    ];
    c.extend(config.to_argv());
    c
}

impl Point {
    /// The command line a runner with executable `exe` runs for this point.
    fn command(&self, exe: &Path) -> Vec<String> {
        match &self.run {
            Run::Program(p) => p.clone(),
            Run::Chain(c) => chain_command(exe, c),
        }
    }

    /// The program's command line as one string (peers; empty for chain points, whose
    /// command is `xorflow-lab bench chain --json` and the arguments).
    pub fn command_line(&self) -> String {
        match &self.run {
            Run::Program(p) => p.join(" "),
            Run::Chain(_) => String::new(),
        }
    }
}

/// A result type the stand reads back from a run's JSON line.
pub trait RunResult: DeserializeOwned + Clone {
    /// A measured value by its column name (`results.csv`); None when the run did not measure
    /// it (or measured no element).
    fn metric(&self, col: &str) -> Option<f64>;
}

/// A point and what its run reported (`None` with the reason when it failed).
#[derive(Clone, Debug)]
pub struct Outcome<R> {
    /// The point.
    pub point: Point,
    /// The run's result.
    pub result: Option<R>,
    /// The run's JSON line as printed (kept whole for raw.jsonl: peers print more than `R` reads).
    pub raw: Option<Value>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Wall-clock seconds the run took, start-up included.
    pub wall_s: f64,
}

/// One line of raw.jsonl: a point, its outcome and the run's whole JSON result. Fields in
/// alphabetical order, as the file has always had them.
#[derive(Serialize, Deserialize)]
struct RawLine {
    #[serde(default)]
    args: Vec<String>,
    config: String,
    error: Option<String>,
    program: Option<Vec<String>>,
    #[serde(default = "first_rep")]
    rep: usize,
    result: Option<Value>,
    sweep: String,
    value: String,
    #[serde(default)]
    wall_s: f64,
}

fn first_rep() -> usize {
    1
}

/// Writes raw.jsonl: every run's full JSON result, one per line with its point, for later
/// analysis (and for `bench report`).
///
/// # Errors
/// The file cannot be written.
pub fn write_raw<R>(dir: &Path, outcomes: &[Outcome<R>]) -> Result<()> {
    let mut raw = String::new();
    for o in outcomes {
        let p = &o.point;
        let (args, program) = match &p.run {
            Run::Chain(c) => (c.to_argv(), None),
            Run::Program(cmd) => (Vec::new(), Some(cmd.clone())),
        };
        let line = RawLine {
            args,
            config: p.config.clone(),
            error: o.error.clone(),
            program,
            rep: p.rep,
            result: o.raw.clone(),
            sweep: p.sweep.clone(),
            value: p.value.clone(),
            wall_s: o.wall_s,
        };
        raw.push_str(&serde_json::to_string(&line)?);
        raw.push('\n');
    }
    super::files::write_whole(&dir.join("raw.jsonl"), raw.as_bytes())
}

/// Reads the outcomes back from `dir/raw.jsonl`.
///
/// # Errors
/// The file is missing, or a line is not a point with a result of type `R`.
pub fn read_raw<R: RunResult>(dir: &Path) -> Result<Vec<Outcome<R>>> {
    let path = dir.join("raw.jsonl");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let mut outcomes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("raw.jsonl line {}", i + 1);
        let l: RawLine = serde_json::from_str(line).with_context(at)?;
        let run = match l.program {
            Some(p) => Run::Program(p),
            None => Run::Chain(Box::new(
                ChainConfig::parse_argv(&l.args).map_err(anyhow::Error::msg)?,
            )),
        };
        let result = match &l.result {
            Some(v) => Some(R::deserialize(v).with_context(at)?),
            None => None,
        };
        outcomes.push(Outcome {
            point: Point {
                sweep: l.sweep,
                value: l.value,
                config: l.config,
                rep: l.rep,
                run,
            },
            result,
            raw: l.result,
            error: l.error,
            wall_s: l.wall_s,
        });
    }
    Ok(outcomes)
}

/// Runs points through the `xorflow` executable (or their own programs).
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

    /// One more point than planned (a search step).
    pub fn add_point(&self) {
        self.bar.inc_length(1);
    }

    /// Runs one point and reads its result as an `R`.
    pub fn run<R: RunResult>(&mut self, p: &Point) -> Outcome<R> {
        self.bar
            .set_message(format!("{}={} {}", p.sweep, p.value, p.config));
        let t0 = Instant::now();
        let read = self.run_command(&p.command(&self.exe)).and_then(|v| {
            let r = R::deserialize(&v).context("unreadable JSON result")?;
            Ok((r, v))
        });
        let (result, raw, error) = match read {
            Ok((r, v)) => (Some(r), Some(v), None),
            Err(e) => {
                self.bar.println(format!(
                    "point {}={} {} failed: {e:#}",
                    p.sweep, p.value, p.config
                ));
                (None, None, Some(format!("{e:#}")))
            }
        };
        self.bar.inc(1);
        Outcome {
            point: p.clone(),
            result,
            raw,
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
