//! Running one YSB point on one engine: xorflow (`xorflow-lab bench ysb --json`, this binary), Apache
//! Flink (`peers/flink`, `YsbJob`) or Apache Storm (`peers/storm`, `YsbTopology`), all under the
//! contract of `peers/ysb-contract.md`, each in its own process; the peers' counts are checked
//! against the oracle here (xorflow checks its own).

use crate::stand::experiments::peers::build::{flink_command, storm_command};
use crate::subprocess::stdout_within;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use xorflow_runtime::ValueName;
use xorflow_ysb::bench::BenchResult;

/// An engine of the comparison.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// This binary.
    #[default]
    Xorflow,
    /// Apache Flink 1.20, MiniCluster (`--task-managers` = processes).
    Flink,
    /// Apache Storm 2.8, LocalCluster (one process).
    Storm,
}

/// One measurement's settings.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Events/s, all sources together.
    pub rate: u64,
    /// Seconds of generation.
    pub duration_s: u64,
    /// Processes (xorflow), TaskManagers (Flink); Storm always runs in one.
    pub processes: usize,
    /// Workers per process (slots per TaskManager; Storm: executors per bolt).
    pub workers: usize,
    /// Source instances.
    pub sources: usize,
}

/// How to start each engine, and the inputs they share.
#[derive(Clone, Debug)]
pub struct Engines {
    /// This binary.
    pub xorflow: PathBuf,
    /// `java ... YsbJob`, when built.
    pub flink: Option<Vec<String>>,
    /// `java ... YsbTopology`, when built.
    pub storm: Option<Vec<String>>,
    /// Template events (`kafka-json.txt`).
    pub events: PathBuf,
    /// The ad -> campaign table.
    pub ad_campaigns: PathBuf,
}

impl Engines {
    /// Builds the JVM peers asked for (Maven, incremental) under `peers_dir`.
    ///
    /// # Errors
    /// A build fails (naming it and the flag that skips it).
    pub fn build(
        xorflow: PathBuf,
        peers_dir: &Path,
        want: &[Engine],
        events: PathBuf,
        ad_campaigns: PathBuf,
    ) -> Result<Self> {
        let flink = (want.contains(&Engine::Flink))
            .then(|| flink_command(peers_dir, "xorflow.peer.flink.YsbJob"))
            .transpose()?;
        let storm = (want.contains(&Engine::Storm))
            .then(|| storm_command(peers_dir, "xorflow.peer.storm.YsbTopology"))
            .transpose()?;
        Ok(Engines {
            xorflow,
            flink,
            storm,
            events,
            ad_campaigns,
        })
    }

    /// Runs `p` on `engine`, writing its counts to `counts` (checked against the oracle: a
    /// mismatch is recorded in the result, not an error), and returns its figures.
    ///
    /// # Errors
    /// The engine is not built, fails, runs past the duration plus 3 minutes, or prints no
    /// result.
    pub fn run(&self, engine: Engine, p: Point, counts: &Path) -> Result<BenchResult> {
        let (exe, args) = self.command(engine, p, counts, &[])?;
        let _ = std::fs::remove_file(counts);
        let timeout = Duration::from_secs(p.duration_s + 180);
        let out = stdout_within(&exe, &args, timeout)?;
        self.result_of(engine, p, counts, &out)
    }

    /// The command line that runs `p` on `engine` and writes its counts to `counts`:
    /// `(executable, arguments)`. `xorflow_args` go to xorflow's `bench ysb` only (e.g.
    /// `--tracking markers`, `--granularity 100ms`).
    ///
    /// # Errors
    /// The engine is not built.
    pub fn command(
        &self,
        engine: Engine,
        p: Point,
        counts: &Path,
        xorflow_args: &[String],
    ) -> Result<(String, Vec<String>)> {
        let s = |x: &dyn ToString| x.to_string();
        let files = [
            "--events".into(),
            s(&self.events.display()),
            "--ad-campaigns".into(),
            s(&self.ad_campaigns.display()),
            "--output".into(),
            s(&counts.display()),
            "--sources".into(),
            s(&p.sources),
            "--json".into(),
        ];
        let (exe, mut args): (String, Vec<String>) = match engine {
            Engine::Xorflow => (
                s(&self.xorflow.display()),
                ["bench", "ysb", "--rate", &s(&p.rate), "--duration"]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("{}s", p.duration_s)])
                    .chain([
                        "--processes".into(),
                        s(&p.processes),
                        "--workers".into(),
                        s(&p.workers),
                    ])
                    .chain(xorflow_args.iter().cloned())
                    .collect(),
            ),
            Engine::Flink | Engine::Storm => {
                let cmd = if engine == Engine::Flink {
                    &self.flink
                } else {
                    &self.storm
                };
                let cmd = cmd
                    .as_ref()
                    .with_context(|| format!("{} was not built", engine.name()))?;
                let mut a: Vec<String> = cmd[1..].to_vec();
                a.extend([
                    "--rate".into(),
                    s(&p.rate),
                    "--duration-s".into(),
                    s(&p.duration_s),
                ]);
                a.extend(["--workers".into(), s(&p.workers)]);
                if engine == Engine::Flink {
                    a.extend(["--task-managers".into(), s(&p.processes)]);
                }
                (cmd[0].clone(), a)
            }
        };
        args.extend(files);
        Ok((exe, args))
    }

    /// The result `engine` printed on `stdout` (its last JSON line) for a run of `p`; a peer's
    /// counts in `counts` are checked against the oracle here.
    ///
    /// # Errors
    /// No JSON line, a line that is not the contract's, or unreadable counts or inputs.
    pub fn result_of(
        &self,
        engine: Engine,
        p: Point,
        counts: &Path,
        stdout: &str,
    ) -> Result<BenchResult> {
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .with_context(|| format!("{} printed no JSON result: {stdout}", engine.name()))?;
        let mut r: BenchResult = serde_json::from_str(line).with_context(|| {
            format!(
                "{}'s result is not the contract's JSON: {line}",
                engine.name()
            )
        })?;
        if engine != Engine::Xorflow {
            r.counts_match_oracle = Some(self.counts_match(p, r.start_ms, counts)?);
        }
        Ok(r)
    }

    /// Whether `counts` holds exactly the oracle's rows for a run of `p` from `start_ms`.
    fn counts_match(&self, p: Point, start_ms: u64, counts: &Path) -> Result<bool> {
        let read = |f: &Path| {
            std::fs::read_to_string(f).with_context(|| format!("cannot read '{}'", f.display()))
        };
        let want = xorflow_ysb::oracle::scheduled(
            &read(&self.events)?,
            &read(&self.ad_campaigns)?,
            p.rate,
            p.duration_s,
            start_ms,
            xorflow_ysb::WINDOW_MS,
        )
        .map_err(anyhow::Error::msg)?;
        let mut text = String::from("campaign_id,window_start_ms,views\n");
        for ((c, w), v) in want {
            text.push_str(&format!("{c},{w},{v}\n"));
        }
        Ok(read(counts)? == text)
    }
}
