//! Building blocks for connectors: how data leaves (and, later, enters) a job.
//!
//! [`part_files`]: a directory of part files that a file sink commits one checkpoint at a time
//! ([`crate::Staging::PerCheckpoint`]), assembled into the output when the job has finished.
//! [`output_file`]: a job's result file, written beside its path and renamed there only when
//! the run succeeded.

pub mod output_file;
pub mod part_files;

pub use part_files::PartFiles;
