//! `xorflow sql`: results against an independent oracle (DuckDB over the same files), on one
//! and two processes; SQL errors (exit 2, line and column); sinks and outputs.

mod errors;
mod nexmark;
mod oracle;
