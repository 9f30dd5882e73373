//! The job id every process of a job must agree on; the handshake compares it
//! (`net/transport.rs`), and a resumed job must have the id of the checkpointed one
//! (`checkpoint/mod.rs`). The id is a hash of the job's identity, a list of named values, which
//! the checkpoint directory also records, so that a refused resume names what differs.

use crate::config::{RuntimeConfig, ValueName};
use std::hash::{Hash, Hasher};
use xorflow_core::GraphDesc;

/// What every process must agree on and a resumed job must keep: the graph, the knobs that
/// shape the wiring, tracking and checkpointed state, and the job's own key (its options that
/// change the dataflow or its state, `RuntimeConfig::job_key`: `name=value` words). Not the
/// launch itself (it names this process's own index and hostfile path), nor anything that only
/// paces, observes or times the run.
pub(crate) fn identity(graph: &GraphDesc, c: &RuntimeConfig, processes: usize) -> Vec<String> {
    let mut h = rustc_hash::FxHasher::default();
    format!("{graph:?}").hash(&mut h);
    let mut id = vec![
        format!("dataflow={:016x}", h.finish()),
        format!("--workers={}", c.workers),
        format!("--processes={processes}"),
        format!("--tracking={}", c.tracking.name()),
        format!("granularity={}", c.granularity),
        format!("--tracker-shards={}", c.tracker_shards),
        // Which processes apply whose acks and send frontiers to whom.
        format!("--tracker-layout={}", c.tracker_layout.name()),
        format!("--tracker-regions={:?}", c.tracker_regions),
        format!("--channel-capacity={}", c.channel_capacity),
        format!("--tracker-processes={}", c.cluster.tracker_processes),
        // Checkpointed state is laid out by the window form: a resumed job must use the same.
        format!("--window-state={}", c.window_state.name()),
        // Checkpoints of changelog state hold changelog ranges instead of state.
        format!("--state-changelog={}", c.state.changelog.is_some()),
    ];
    // The job's words: `name=value`, a bare word as the job's name.
    id.extend(c.job_key.split_whitespace().map(|w| match w.contains('=') {
        true => w.to_string(),
        false => format!("job={w}"),
    }));
    id
}

/// A hash of [`identity`].
pub(crate) fn job_id(graph: &GraphDesc, c: &RuntimeConfig, processes: usize) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    identity(graph, c, processes).hash(&mut h);
    crate::dataflow::mix(h.finish())
}
