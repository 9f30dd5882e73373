//! `xorflow sql`: results against an independent oracle (DuckDB over the same files), on one
//! and two processes; SQL errors (exit 2, line and column); sinks and outputs.

#[path = "../common/mod.rs"]
mod common;
mod errors;
mod explain;
mod file_input;
mod flights;
mod job_file;
mod nexmark;
mod oracle;
mod recovery;
mod replay;
