//! # xorflow-bench: the bench stand
//!
//! Workloads and experiments that reproduce the papers' measurements. Issue by issue this grows into
//! one command per experiment: the trAcker paper's chain, the changelog thesis's state experiments, and the YSB
//! (`ysb`: the peers side by side), and sustainable throughput on the YSB and the chain
//! (`sustainable`).

pub mod alignment;
pub mod chain;
pub mod changelog;
pub mod checkpoint_cost;
pub mod cpu;
pub mod floor;
pub mod generator;
pub mod machine;
pub mod named;
pub mod restore;
pub mod stand;
pub mod store_io;
pub mod subprocess;
pub mod sustainable;
pub mod wan;
pub mod ysb;
