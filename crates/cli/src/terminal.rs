//! Writing results to stdout: a closed pipe ends the process quietly, as it does `cat`.

use crate::outcome::CommandError;
use std::io::Write;

/// Writes `text` to stdout and flushes it. A closed stdout (the reader of a pipe is gone) ends the
/// process as SIGPIPE would, without a message, as `cat` does; any other error is an unwritable
/// output.
///
/// # Errors
/// [`CommandError::Output`]: stdout cannot be written.
pub fn print_out(text: &str) -> Result<(), CommandError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => die_of_sigpipe(),
        Err(e) => Err(CommandError::Output(format!("cannot write to stdout: {e}"))),
    }
}

/// Ends the process by SIGPIPE, the way a program that never ignored it would end (the runtime's,
/// which also removes the run's pending temporary outputs).
pub use xorflow_runtime::connectors::output_file::die_of_sigpipe;
