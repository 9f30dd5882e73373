//! How a command of `xorflow` or `xorflow-lab` ends: its [`Outcome`], whose exit status is
//! decided here and nowhere else; the error a command returns ([`CommandError`]) and its
//! outcome; which process of a run reports.

use std::process::{ExitCode, Termination};
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::net::cluster::is_local_child;
use xorflow_runtime::{JobError, RunError};

/// How a command ended. Both binaries' `main` return it, and [`Outcome::status`] is the one
/// place an exit status is decided (README, "Exit status", says the same to users):
///
/// | outcome         | status | when |
/// |-----------------|--------|------|
/// | [`Success`]     | 0      | the command did what was asked |
/// | [`Config`]      | 2      | a wrong option or configuration: a bad value, options that contradict or name one file, a metrics port in use, a checkpoint directory of another run or job |
/// | [`Input`]       | 2      | an input that is missing, unreadable or unusable |
/// | [`Output`]      | 2      | an output that cannot be written (stdout included) |
/// | [`Engine`]      | 1      | the engine failed (a process died or stayed silent, a vertex failed, a window closed too early), or what the lab ran did |
/// | [`Interrupted`] | 130    | Ctrl-C stopped a command that ends by itself instead of by the signal (`xorflow-lab profile`) |
/// | [`Unsupported`] | 77     | a tool that cannot run on this machine, skipped (`xorflow-lab delay-router` without root or namespaces) |
///
/// A job stopped by SIGINT, SIGTERM or SIGHUP ends by that signal (status 128 + its number in a
/// shell), raised again once its temporary outputs are removed (the runtime's
/// `connectors/output_file.rs`); a closed stdout ends the process by SIGPIPE
/// ([`crate::terminal::die_of_sigpipe`]). Neither returns to `main`.
///
/// [`Success`]: Outcome::Success
/// [`Config`]: Outcome::Config
/// [`Input`]: Outcome::Input
/// [`Output`]: Outcome::Output
/// [`Engine`]: Outcome::Engine
/// [`Interrupted`]: Outcome::Interrupted
/// [`Unsupported`]: Outcome::Unsupported
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done as asked.
    Success,
    /// A wrong option or configuration.
    Config,
    /// An input that cannot be used.
    Input,
    /// An output that cannot be written.
    Output,
    /// The engine, or what the lab ran, failed.
    Engine,
    /// Stopped by Ctrl-C.
    Interrupted,
    /// Cannot run on this machine: skipped.
    Unsupported,
}

impl Outcome {
    /// The exit status: the table of [`Outcome`].
    pub const fn status(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Config | Outcome::Input | Outcome::Output => 2,
            Outcome::Engine => 1,
            Outcome::Interrupted => 128 + libc::SIGINT as u8,
            Outcome::Unsupported => 77,
        }
    }
}

impl Termination for Outcome {
    fn report(self) -> ExitCode {
        ExitCode::from(self.status())
    }
}

/// Why a command failed: what to print and, by its kind, its [`Outcome`].
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A wrong option or configuration.
    #[error("{0}")]
    Config(String),
    /// An input that cannot be used.
    #[error("{0}")]
    Input(String),
    /// An output that cannot be written.
    #[error("{0}")]
    Output(String),
    /// The engine, or what the lab ran, failed.
    #[error("{0}")]
    Engine(String),
    /// Ctrl-C stopped it before it was done.
    #[error("{0}")]
    Interrupted(String),
    /// A job failed, or was refused before it started.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A run of the engine failed, or was refused before it started.
    #[error(transparent)]
    Run(#[from] RunError),
}

impl CommandError {
    /// How a command that failed this way ends.
    pub fn outcome(&self) -> Outcome {
        match self {
            CommandError::Config(_) => Outcome::Config,
            CommandError::Input(_) | CommandError::Job(JobError::Input(_)) => Outcome::Input,
            CommandError::Output(_) | CommandError::Job(JobError::Output(_)) => Outcome::Output,
            CommandError::Engine(_) => Outcome::Engine,
            CommandError::Interrupted(_) => Outcome::Interrupted,
            CommandError::Job(JobError::Config(_)) => Outcome::Config,
            CommandError::Job(JobError::Run(e)) | CommandError::Run(e) => run_outcome(e),
        }
    }
}

/// A failed run's outcome: refused before it started (the user's to fix), or failed.
fn run_outcome(e: &RunError) -> Outcome {
    if e.is_refusal() {
        Outcome::Config
    } else {
        Outcome::Engine
    }
}

/// An experiment's error (`anyhow`, printed with its causes): the lab's failure.
impl From<anyhow::Error> for CommandError {
    fn from(e: anyhow::Error) -> Self {
        CommandError::Engine(format!("{e:#}"))
    }
}

/// A command's outcome: success, or its error printed on stderr (`error: ...`) and the outcome
/// of its kind.
pub fn finish(r: Result<(), CommandError>) -> Outcome {
    match r {
        Ok(()) => Outcome::Success,
        Err(e) => {
            crate::say!("error: {e}");
            e.outcome()
        }
    }
}

/// True when this process must not print results: a child of a local launch (process 0 reports)
/// or a non-zero process of a hostfile run.
pub fn quiet(e: &EngineArgs) -> bool {
    is_local_child() || e.process.is_some_and(|p| p != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xorflow_runtime::ClusterError;

    /// Catches: a refused run (an invalid configuration, a metrics port in use, a checkpoint
    /// directory of another job) ending with the engine's status 1 instead of 2, or the
    /// statuses drifting from README's.
    #[test]
    fn refusals_are_2_and_engine_failures_1() {
        let refused = [
            CommandError::Run(RunError::Config("--workers 0".into())),
            CommandError::Job(JobError::Run(RunError::CheckpointDir(
                xorflow_state::StateError::Other("belongs to another job".into()),
            ))),
            CommandError::Job(JobError::Config("--window".into())),
            CommandError::Job(JobError::Input("missing".into())),
            CommandError::Output("cannot write to stdout".into()),
        ];
        for e in &refused {
            assert_eq!(e.outcome().status(), 2, "{e:?}");
        }
        let failed = [
            CommandError::Run(RunError::Cluster(ClusterError::Lost(
                "process 1 died".into(),
            ))),
            CommandError::Job(JobError::Run(RunError::Vertex {
                worker: 0,
                error: "disk full".into(),
            })),
            CommandError::from(anyhow::anyhow!("a build failed")),
        ];
        for e in &failed {
            assert_eq!(e.outcome().status(), 1, "{e:?}");
        }
        assert_eq!(Outcome::Success.status(), 0);
        assert_eq!(Outcome::Interrupted.status(), 130);
        assert_eq!(Outcome::Unsupported.status(), 77);
    }
}
