//! A job's outcome as the process's exit status, and which process of a run reports.

use std::process::ExitCode;
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::net::cluster::is_local_child;

/// A job's result, or its error printed and the exit status for it (2: configuration, input or
/// output; 1: the engine).
///
/// # Errors
/// The exit status, after the error was printed.
pub fn job_outcome<T>(r: Result<T, xorflow_runtime::JobError>) -> Result<T, ExitCode> {
    r.map_err(|e| {
        crate::say!("error: {e}");
        ExitCode::from(e.exit_code() as u8)
    })
}

/// True when this process must not print results: a child of a local launch (process 0 reports)
/// or a non-zero process of a hostfile run.
pub fn quiet(e: &EngineArgs) -> bool {
    is_local_child() || e.process.is_some_and(|p| p != 0)
}
