//! The YSB on the bench stand: xorflow next to Apache Flink and Apache Storm
//! (`xorflow-lab bench peers --workload ysb`, [`peers`]) and the highest rate each sustains
//! (`xorflow-lab bench sustainable --workload ysb`, [`sustainable`]). Every engine runs the same
//! contract (`peers/ysb-contract.md`): the generator inside the job, the same template events at
//! the same rate, counts checked against the oracle (`examples/ysb/src/oracle.rs`).

pub mod engines;
pub mod peers;
pub mod sustainable;

use anyhow::{Context, Result};
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use engines::{Engine, Engines, Point};

/// Template events written for a results folder (the bench's default: seed 1).
pub const TEMPLATES: u64 = 100_000;

/// Makes `<root>/<kind>-<UTC time>/` with the shared inputs in it (template events and table,
/// generated with seed 1 as `xorflow-lab ysb generate` would); returns the folder and the two files.
///
/// # Errors
/// A folder or file cannot be written.
pub fn start_dir(root: &Path, kind: &str) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let dir = root.join(format!("{kind}-{stamp}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let (events, table) = xorflow_ysb::bench::generated(TEMPLATES, 1);
    let (e, t) = (
        dir.join("kafka-json.txt"),
        dir.join("ad-to-campaign-ids.txt"),
    );
    crate::stand::files::write_whole(&e, events.as_bytes())?;
    crate::stand::files::write_whole(&t, table.as_bytes())?;
    Ok((dir, e, t))
}

/// What both YSB experiments share: the engines, where results go, where the peers are.
#[derive(Clone, Debug)]
pub struct StandConfig {
    /// The engines, xorflow first.
    pub engines: Vec<Engine>,
    /// Results root.
    pub out: PathBuf,
    /// Where the JVM peers' Maven projects are.
    pub peers_dir: PathBuf,
    /// This binary.
    pub xorflow: PathBuf,
}

impl StandConfig {
    /// Makes the results folder `<out>/<kind>-<UTC>/` with the inputs ([`start_dir`]) and builds
    /// the engines.
    ///
    /// # Errors
    /// A folder or file cannot be written, or a build fails.
    pub fn start(&self, kind: &str) -> Result<(PathBuf, Engines)> {
        let (dir, events, table) = start_dir(&self.out, kind)?;
        let e = Engines::build(
            self.xorflow.clone(),
            &self.peers_dir,
            &self.engines,
            events,
            table,
        )?;
        Ok((dir, e))
    }
}

/// Appends one result line to `<dir>/raw.jsonl` (written as each run ends, so an interrupted
/// sweep keeps what it measured).
///
/// # Errors
/// The file cannot be written.
pub fn append_raw(dir: &Path, line: &serde_json::Value) -> Result<()> {
    let path = dir.join("raw.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open '{}'", path.display()))?;
    writeln!(f, "{line}").with_context(|| format!("cannot write '{}'", path.display()))
}

/// The command line that produced a folder, for its REPORT.md.
pub fn command_line() -> String {
    let mut args = std::env::args();
    let _ = args.next();
    std::iter::once("xorflow-lab".to_string())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}
