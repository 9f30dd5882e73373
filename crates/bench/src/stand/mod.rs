//! The bench stand: one command per experiment of seed 000, each producing raw CSV, PNG figures
//! and a REPORT.md in `bench/results/<experiment>-<UTC time>/`.

pub mod plot;
