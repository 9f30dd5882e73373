//! What a worker knows of checkpoint epochs: how epoch components and heartbeat ids are numbered
//! beside the event-time ones (`crates/tracking/src/epochs.rs`).

use xorflow_tracking::{ComponentId, SourceId};

/// What a worker needs to know of checkpoint epochs (`crates/tracking/src/epochs.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochCtx {
    /// Components C of the event-time dimension: the epoch component of `c` is `C + c`.
    pub components: usize,
    /// Source instances S: source `s` heartbeats its epoch as `S + s`.
    pub sources: usize,
    /// How long an epoch lasts at a source, ns.
    pub interval_ns: u64,
}

impl EpochCtx {
    /// The epoch component of `c`.
    #[inline]
    pub fn component(&self, c: ComponentId) -> ComponentId {
        c + self.components as ComponentId
    }

    /// The heartbeat id under which source instance `s` reports its epoch.
    pub fn source_id(&self, s: SourceId) -> SourceId {
        xorflow_tracking::epochs::epoch_source_id(self.sources, s)
    }

    /// The heartbeat id of emitter `j` (`execute/mod.rs`, `epoch_domain`, numbers them).
    pub fn emitter_id(&self, j: usize) -> SourceId {
        xorflow_tracking::epochs::emitter_id(self.sources, j)
    }
}
