//! Why a job (a program built on the engine, such as `examples/flights` or `examples/ysb`)
//! failed, and the exit status the CLI gives it.

use crate::error::RunError;

/// A job's failure. [`JobError::exit_code`] maps it to the CLI's exit status.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Bad configuration (exit 2).
    #[error("{0}")]
    Config(String),
    /// Missing, unreadable or unusable input (exit 2).
    #[error("{0}")]
    Input(String),
    /// An output that cannot be written (exit 2).
    #[error("{0}")]
    Output(String),
    /// The engine failed (exit 1).
    #[error("{0}")]
    Run(#[from] RunError),
}

impl JobError {
    /// 2 for user errors (config, input, output, a run refused before it started:
    /// [`RunError::is_refusal`]), 1 for engine failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            JobError::Run(e) if !e.is_refusal() => 1,
            _ => 2,
        }
    }
}
