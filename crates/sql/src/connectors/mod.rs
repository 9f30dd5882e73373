//! The connectors of SQL tables: `filesystem` (JSON lines, CSV), `kafka` (JSON records),
//! `nexmark` (the generator) and `upsert-kafka` (a changelog as keyed records, written only);
//! `json_format` is the JSON format files and Kafka records share; `file_source` reads a JSON
//! file table while the job runs.

pub mod file_source;
pub mod filesystem;
pub mod json_format;
pub mod kafka;
pub mod nexmark;
pub mod upsert_kafka;
