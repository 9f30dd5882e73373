//! The connectors SQL tables read: `filesystem` (JSON lines, CSV) and `nexmark` (the generator).

pub mod filesystem;
pub mod nexmark;
