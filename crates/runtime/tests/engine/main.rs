//! The runtime against independent oracles, one test binary: dataflows and their operators
//! (`dataflow.rs`, `event_time.rs`), cycles (`cycle.rs`), notification-driven snapshots
//! (`epoch_snapshot.rs`) and the checkpoint cut (`cut.rs`). One binary because each links and
//! instantiates the whole runtime (about 20 s of a CI build apiece); `cpu_accounting.rs` stays
//! apart, where no other test's threads share its CPU clocks, and `layers.rs`, which reads the
//! sources.

mod cut;
mod cycle;
mod dataflow;
mod epoch_snapshot;
mod event_time;
