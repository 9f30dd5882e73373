//! Restarts after a lost process (`--restart-attempts`): when a process of a local launch dies
//! (kill -9, a crash) or goes silent past `--peer-timeout`, the attempt fails on every process;
//! process 0 then starts the job again, every process included, from the last completed
//! checkpoint (Flink's full restart: docs/state.md, "Recovery"). The staged output of the failed
//! attempt is discarded with it (`operators/sink.rs`), so the output is that of a run without
//! the failure.

use super::run_attempt;
use crate::config::RuntimeConfig;
use crate::dataflow::Builder;
use crate::error::RunError;
use crate::net::cluster::Launch;
use crate::report::RunReport;

/// Runs the job `b` describes in this process, restarting it after a lost process up to
/// `restart_attempts` times.
///
/// # Errors
/// See [`crate::Dataflow::run`]; after the last attempt, its error.
pub(crate) fn run_built(mut b: Builder) -> Result<RunReport, RunError> {
    let mut causes = Vec::new();
    loop {
        let (result, finished) = run_attempt(&mut b);
        match result {
            Ok(mut report) => {
                if let Some(c) = &mut report.checkpoints {
                    c.restarts = causes;
                }
                return Ok(report);
            }
            Err(e) if restartable(&b.config, &e, finished, causes.len()) => {
                tracing::warn!(
                    "{e}; restarting the job from its last checkpoint (restart {} of {})",
                    causes.len() + 1,
                    b.config.restart_attempts
                );
                causes.push(e.to_string());
                b.restart_causes = causes.clone();
                b.config.resume = true;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A failed attempt is restarted when the job checkpoints, this is process 0 of a local launch
/// (it starts the others again; a hostfile's processes are started by someone else), a process
/// was lost or could not be started or connected (any cluster failure but a refused setup,
/// which a local launch does not have), attempts remain, and no local worker had finished (its sinks may have handed their
/// output over: a restart could repeat it).
fn restartable(c: &RuntimeConfig, e: &RunError, finished: bool, restarts: usize) -> bool {
    c.checkpoint_dir.is_some()
        && c.checkpoint_interval.is_some()
        && c.cluster.is_process_zero()
        && matches!(c.cluster.launch, Launch::Local { .. })
        && matches!(e, RunError::Cluster(c) if !c.is_refusal())
        && !finished
        && restarts < c.restart_attempts
}
