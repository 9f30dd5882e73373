//! Streaming SQL for xorflow, in Flink SQL's dialect (docs/sql.md): statements are parsed by
//! sqlparser with a dialect of our own ([`dialect`]), planned onto the runtime's operators
//! (windows, joins, keyed processes) and run by the runtime like any other job; windows close
//! when trAcker's frontier passes their end.
#![warn(missing_docs)]

pub mod catalog;
pub mod changelog;
pub mod connectors;
pub mod dialect;
pub mod error;
pub mod exec;
pub mod expr;
pub mod job;
pub mod key;
pub mod plan;
pub mod schema;
pub mod sinks;
pub mod types;
