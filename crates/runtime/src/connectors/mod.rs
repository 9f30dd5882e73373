//! Building blocks for connectors: how data enters and leaves a job.
//!
//! [`rows`]: a CSV or JSON-lines file read as rows of named fields. [`replay`]: a source
//! replaying records in arrival order with bounded disorder (late records keep their event
//! time).
//!
//! [`part_files`]: a directory of part files that a file sink commits one checkpoint at a time
//! ([`crate::Staging::PerCheckpoint`]), assembled into the output when the job has finished.
//! [`output_file`]: a job's result file, written beside its path and renamed there only when
//! the run succeeded. [`parquet_rows`]: rows written as a Parquet file.

pub mod output_file;
pub mod parquet_rows;
pub mod part_files;
pub mod replay;
pub mod rows;

pub use part_files::PartFiles;
