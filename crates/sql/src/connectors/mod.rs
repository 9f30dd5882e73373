//! The connectors of SQL tables: `filesystem` (JSON lines, CSV), `kafka` (JSON records),
//! `nexmark` (the generator) and `upsert-kafka` (a changelog as keyed records, written only).

pub mod filesystem;
pub mod kafka;
pub mod nexmark;
pub mod upsert_kafka;
