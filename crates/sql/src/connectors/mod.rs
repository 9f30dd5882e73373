//! The connectors SQL tables read: `filesystem` (JSON lines, CSV), `kafka` (JSON records) and
//! `nexmark` (the generator).

pub mod filesystem;
pub mod kafka;
pub mod nexmark;
