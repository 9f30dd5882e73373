//! Building blocks for connectors: how data enters and leaves a job.
//!
//! [`rows`]: a CSV or JSON-lines file read as rows of named fields. [`line_blocks`]: a JSON-lines
//! input cut into blocks that a source's instances read in parallel while they emit. [`replay`]: a source
//! replaying records in arrival order with bounded disorder (late records keep their event
//! time), at a steady [`rate`] if asked; [`pace`]: stored input replayed at its event-time pace. [`live_rows`]: a source of rows read as they arrive on a stream (standard input); [`print_rows`]: a sink printing
//! rows to standard output as their windows close.
//!
//! [`part_files`]: a directory of part files that a file sink commits one checkpoint at a time
//! ([`crate::Staging::PerCheckpoint`]), assembled into the output when the job has finished.
//! [`output_file`]: a job's result file, written beside its path and renamed there only when
//! the run succeeded. [`parquet_rows`]: rows written as a Parquet file.

pub mod line_blocks;
pub mod live_rows;
pub mod output_file;
pub mod pace;
pub mod parquet_rows;
pub mod part_files;
pub mod print_rows;
pub mod rate;
pub mod replay;
pub mod rows;

pub use part_files::PartFiles;
