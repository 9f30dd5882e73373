//! The job id every process of a job must agree on; the handshake compares it
//! (`net/transport.rs`).

use crate::config::{RuntimeConfig, ValueName};
use std::hash::{Hash, Hasher};
use xorflow_core::GraphDesc;

/// A hash of everything every process must agree on: the graph and the knobs that shape the
/// wiring and tracking.
pub(crate) fn job_id(graph: &GraphDesc, c: &RuntimeConfig, processes: usize) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    // Not the launch itself: it names this process's own index and hostfile path.
    format!(
        "{graph:?}|{}|{:?}|{}|{}|{}|{:?}|{}|{processes}|{}|{}|{}|{}",
        c.workers,
        c.tracking,
        c.granularity,
        c.tracker_shards,
        // Which processes apply whose acks and send frontiers to whom.
        c.tracker_layout.name(),
        c.tracker_regions,
        c.channel_capacity,
        c.cluster.tracker_processes,
        // Checkpointed state is laid out by the window form: a resumed job must use the same.
        c.window_state.name(),
        // Checkpoints of changelog state hold changelog ranges instead of state.
        c.state.changelog.is_some(),
        c.job_key
    )
    .hash(&mut h);
    crate::dataflow::mix(h.finish())
}
