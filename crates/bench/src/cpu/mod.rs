//! `xorflow-lab bench cpu`: the CPU-efficiency paper's experiments on CPU efficiency per task (docs/papers.md), on the YSB workload of
//! `peers/ysb-contract.md`, for xorflow, Apache Flink and Apache Storm, scaled to this 2-core
//! machine. Each run is sampled by `xorflow-lab profile` (crates/profile), which maps stacks to tasks
//! by the engine's application profile (`profiles/*.toml`); CPU per event = a task's CPU / the
//! events the generator emitted. Results go to `<out>/cpu-<UTC>/` (docs/cpu.md):
//!
//! * `runs/<id>/`: each run's command, stdout, stderr, counts and profile folder;
//! * `raw.jsonl`: one line per finished run (written as it ends: an interrupted sweep keeps
//!   what it measured); `failures.txt`: runs that failed, and why;
//! * `runs.csv`, `tasks.csv`, `REPORT.md`: [`report`].
//!
//! * [`spec`]: what one run is; [`plan`]: the runs of each experiment; [`pin`]: one core per
//!   process; [`measured`]: running one; [`report`]: the tables, with the paper's figures.

pub mod measured;
pub mod pin;
pub mod plan;
pub mod report;
pub mod spec;

use crate::ysb::{append_raw, StandConfig};
use anyhow::{Context, Result};
use measured::{Measured, Runner};
use std::io::Write as _;
use std::path::PathBuf;
use xorflow_runtime::ValueName;

pub use plan::Plan;
pub use spec::Experiment;

/// Runs the plan with `stand`'s engines (built once; the table sizes differ only in their
/// inputs); returns the results folder. A run that fails is tried again ([`ATTEMPTS`]), every
/// failed attempt is recorded in `failures.txt`, and a run that never finished is left out of
/// the tables; the sweep goes on.
///
/// # Errors
/// The results folder cannot be written, or a peer cannot be built.
pub fn run(plan: &Plan, stand: &StandConfig) -> Result<PathBuf> {
    let (dir, base) = stand.start("cpu")?;
    let mut engines = std::collections::BTreeMap::new();
    for c in plan.campaign_counts() {
        let inputs = dir.join(format!("inputs-{c}"));
        std::fs::create_dir_all(&inputs)
            .with_context(|| format!("cannot create '{}'", inputs.display()))?;
        let (events, table) = xorflow_ysb::bench::generated_with(crate::ysb::TEMPLATES, 1, c);
        let mut e = base.clone();
        e.events = inputs.join("kafka-json.txt");
        e.ad_campaigns = inputs.join("ad-to-campaign-ids.txt");
        crate::stand::files::write_whole(&e.events, events.as_bytes())?;
        crate::stand::files::write_whole(&e.ad_campaigns, table.as_bytes())?;
        engines.insert(c, e);
    }
    // start_dir's own inputs are those of the base table size, written again above.
    for f in ["kafka-json.txt", "ad-to-campaign-ids.txt"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let runner = Runner {
        xorflow: stand.xorflow.clone(),
        engines,
        runs_dir: dir.join("runs"),
    };
    let specs = plan.specs();
    let mut done: Vec<Measured> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        eprintln!(
            "bench cpu: run {}/{}: {} {} {}{}",
            i + 1,
            specs.len(),
            spec.experiment.name(),
            spec.engine.name(),
            spec.label,
            if spec.profiled { "" } else { " (not profiled)" }
        );
        if let Some(m) = run_with_retry(&runner, spec, i, &dir)? {
            append_raw(&dir, &serde_json::to_value(&m)?)?;
            done.push(m);
        }
    }
    report::write(&dir, plan, &done)?;
    Ok(dir)
}

/// Attempts per run: perf now and then writes a perf.data that its own `perf script` cannot
/// read ("failed to process type"), which fails a run through no fault of the engine.
pub const ATTEMPTS: usize = 2;

/// Runs `spec`, once more if it fails; every failed attempt is a line of `failures.txt`
/// (`ID (attempt K of N): why`) and its folder is kept as `runs/ID-failed-K`. `None` when every
/// attempt failed.
///
/// # Errors
/// `failures.txt` or a folder cannot be written.
fn run_with_retry(
    runner: &Runner,
    spec: &spec::RunSpec,
    i: usize,
    dir: &std::path::Path,
) -> Result<Option<Measured>> {
    let id = spec.id(i);
    for attempt in 1..=ATTEMPTS {
        let e = match runner.run(spec, i) {
            Ok(m) => return Ok(Some(m)),
            Err(e) => e,
        };
        eprintln!("bench cpu: run {id} failed (attempt {attempt} of {ATTEMPTS}): {e:#}");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("failures.txt"))?;
        writeln!(f, "{id} (attempt {attempt} of {ATTEMPTS}): {e:#}")?;
        let runs = &runner.runs_dir;
        std::fs::rename(runs.join(&id), runs.join(format!("{id}-failed-{attempt}")))?;
    }
    Ok(None)
}
