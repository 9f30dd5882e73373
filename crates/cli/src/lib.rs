//! What the `xorflow` binary (run and inspect jobs) and the `xorflow-lab` binary (the bench
//! stand, the peers, the profiler and the delay tools: `crates/lab`) share: how they print, log,
//! read duration options, job files (`--config`) and a job's Kafka input options, and turn a
//! job's outcome into an exit status.
//!
//! Exit statuses, for both binaries, are decided in one place: [`outcome::Outcome`] (0 success,
//! 2 bad configuration, input or output, 1 the engine failed; 130 Ctrl-C and 77 a tool that cannot
//! run on this machine, in the lab).

/// Prints a line on stderr. A closed or failing stderr is ignored: there is nowhere left to say
/// anything, and `eprintln!` would panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod checkpoint_summary;
pub mod help;
pub mod job_file;
pub mod kafka_input;
pub mod logging;
pub mod options;
pub mod outcome;
pub mod terminal;
