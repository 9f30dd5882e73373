//! Why a job (a program built on the engine, such as `examples/flights` or `examples/ysb`)
//! failed. The CLI's exit status comes from its kind (`crates/cli/src/outcome.rs`).

use crate::error::RunError;

/// A job's failure: the user's to fix (configuration, input, output, or a run the engine refused
/// to start: [`RunError::is_refusal`]), or the engine's (any other [`JobError::Run`]).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Bad configuration.
    #[error("{0}")]
    Config(String),
    /// Missing, unreadable or unusable input.
    #[error("{0}")]
    Input(String),
    /// An output that cannot be written.
    #[error("{0}")]
    Output(String),
    /// The run failed, or was refused before it started ([`RunError::is_refusal`]).
    #[error("{0}")]
    Run(#[from] RunError),
}
