//! `xorflow-lab bench wan`: the wide-area paper's wide-area experiments (docs/papers.md) on xorflow, with the delay injected in user space
//! between the processes on this machine (`crates/runtime/src/net/delay/`). Results go to
//! `<out>/wan-<UTC>/` (docs/wan.md):
//!
//! * `runs/<id>/`: each run's command, stdout, counts and delay matrix;
//! * `plan.json`: the sweep and its command; `raw.jsonl`: one line per finished run, written as
//!   it ends; `failures.txt`: runs that failed, and why (the sweep goes on);
//! * `runs.csv`, `REPORT.md`: [`report`], with each mesh series' knee (written again from
//!   `plan.json` and `raw.jsonl` by `xorflow-lab bench wan --report DIR`).
//!
//! * [`spec`]: what one run is; [`plan`]: the runs of each experiment; [`measured`]: running
//!   one; [`report`]: the tables; [`tcp_counters`]: what the kernels' TCP did in namespaces.

pub mod flink_cluster;
mod jvm;
pub mod measured;
pub mod netns;
pub mod plan;
pub mod report;
pub mod spec;
pub mod storm_cluster;
pub mod tcp_counters;

use crate::ysb::{append_raw, StandConfig};
use anyhow::Result;
use measured::{Measured, Runner};
use std::io::Write as _;
use std::path::PathBuf;
use xorflow_runtime::ValueName;

pub use plan::Plan;
pub use spec::{Experiment, Network};

/// Runs the plan with `stand`'s xorflow; returns the results folder. A run that fails is
/// recorded in `failures.txt` and left out of the tables.
///
/// # Errors
/// The results folder cannot be written.
pub fn run(plan: &Plan, stand: &StandConfig) -> Result<PathBuf> {
    let (dir, engines) = stand.start("wan")?;
    let file = report::PlanFile {
        command: crate::ysb::command_line(),
        plan: plan.clone(),
    };
    crate::stand::files::write_whole(
        &dir.join("plan.json"),
        serde_json::to_string_pretty(&file)?.as_bytes(),
    )?;
    let runner = Runner {
        engines,
        runs_dir: dir.join("runs"),
        duration_s: plan.duration_s,
        chain_duration_s: plan.chain_duration_s,
        network: plan.network,
        tcp_congestion: plan.tcp_congestion.clone(),
    };
    let specs = plan.specs();
    let mut done: Vec<Measured> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        eprintln!(
            "bench wan: run {}/{}: {} {} {} p={} {}/s {} {}",
            i + 1,
            specs.len(),
            spec.experiment.name(),
            spec.engine.name(),
            match spec.workload {
                spec::Workload::Ysb => "ysb",
                spec::Workload::Chain => "chain",
            },
            spec.processes,
            spec.rate,
            spec.delay.label(),
            spec.variant
        );
        match runner.run(spec, i) {
            Ok(m) => {
                append_raw(&dir, &serde_json::to_value(&m)?)?;
                done.push(m);
            }
            Err(e) => {
                eprintln!("bench wan: run {} failed: {e:#}", spec.id(i));
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("failures.txt"))?;
                writeln!(f, "{}: {e:#}", spec.id(i))?;
            }
        }
    }
    report::write(&dir, &file, &done)?;
    Ok(dir)
}
