//! Checkpoint epochs, tracked beside event time (docs/state.md, "The cut").
//!
//! Sources advance their epoch every checkpoint interval; every batch carries the epoch of the
//! input it derives from, and its tag is XOR-ed into slot `epoch` of the *epoch component* of its
//! receiver as well as into its event-time slots. The epoch component of component `c` is
//! `components + c`; it has the same upstream components, shifted. So trAcker reports, per
//! component, the first epoch not yet fully processed there and upstream: the point where a
//! stateful vertex snapshots "every element of earlier epochs, none of later ones".
//!
//! Epoch heartbeats come from two kinds of participants, identified by heartbeat source ids after
//! the event-time sources:
//!
//! * source instance `s` (id `sources + s`): its next elements have epochs at or above the
//!   heartbeat;
//! * *emitter* `j` (id `2 * sources + j`), an instance of a vertex that emits on notifications
//!   rather than while processing an input batch (a window firing on its frontier): it will emit
//!   nothing below the heartbeat's epoch. An emitter's heartbeat caps the epoch frontiers of the
//!   components *downstream* of its own, not its own (that one is what it waits for). Emitters are
//!   registered at epoch 0 from the start, so no hold has to be placed in time.

use crate::ack::{ComponentId, SourceId};
use crate::heartbeats::Heartbeats;
use crate::time::{Time, INF};

/// Which participants the epoch dimension has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochDomain {
    /// Components C of the event-time dimension: the epoch component of `c` is `C + c`.
    pub components: usize,
    /// Source instances S.
    pub sources: usize,
    /// The component of each emitter instance (emitter `j` has heartbeat id `2S + j`).
    pub emitters: Vec<ComponentId>,
}

impl EpochDomain {
    /// The epoch component of component `c`.
    pub fn component(&self, c: ComponentId) -> ComponentId {
        c + self.components as ComponentId
    }

    /// The heartbeat id under which source instance `s` reports its epoch.
    pub fn source_id(&self, s: SourceId) -> SourceId {
        epoch_source_id(self.sources, s)
    }

    /// The heartbeat id of emitter `j`.
    pub fn emitter_id(&self, j: usize) -> SourceId {
        emitter_id(self.sources, j)
    }
}

/// The heartbeat id under which source instance `s` of `sources` reports its epoch.
pub fn epoch_source_id(sources: usize, s: SourceId) -> SourceId {
    s + sources as SourceId
}

/// The heartbeat id of emitter `j` in a job with `sources` source instances.
pub fn emitter_id(sources: usize, j: usize) -> SourceId {
    (2 * sources + j) as SourceId
}

/// The epoch heartbeats at a tracker.
#[derive(Clone, Debug)]
pub(crate) struct EpochHeartbeats {
    pub(crate) domain: EpochDomain,
    sources: Heartbeats,
    emitters: Heartbeats,
    /// Per component: the minimum heartbeat of its emitters (`INF` without any).
    emit_cap: Vec<Time>,
}

impl EpochHeartbeats {
    pub(crate) fn new(domain: EpochDomain) -> Self {
        let mut emit_cap = vec![INF; domain.components];
        for &c in &domain.emitters {
            emit_cap[c as usize] = 0;
        }
        EpochHeartbeats {
            sources: Heartbeats::new(domain.sources),
            emitters: Heartbeats::new(domain.emitters.len()),
            emit_cap,
            domain,
        }
    }

    /// Applies an epoch heartbeat; `Ok(false)` if `id` is not an epoch participant's.
    ///
    /// # Errors
    /// An id beyond every participant, naming it.
    pub(crate) fn apply(&mut self, id: SourceId, epoch: Time) -> Result<bool, String> {
        let s = self.domain.sources as SourceId;
        if id < s {
            return Ok(false);
        }
        if id < 2 * s {
            self.sources.apply(id - s, epoch)?;
            return Ok(true);
        }
        let j = (id - 2 * s) as usize;
        let Some(&c) = self.domain.emitters.get(j) else {
            return Err(format!(
                "epoch heartbeat from unknown participant {id} (job has {} sources and {} \
                 emitters)",
                s,
                self.domain.emitters.len()
            ));
        };
        self.emitters.apply(j as SourceId, epoch)?;
        let cap = (0..self.domain.emitters.len())
            .filter(|&i| self.domain.emitters[i] == c)
            .filter_map(|i| self.emitters.get(i as SourceId))
            .min()
            .unwrap_or(INF);
        self.emit_cap[c as usize] = cap;
        Ok(true)
    }

    /// The lowest epoch any source may still emit.
    pub(crate) fn sources_min(&self) -> Time {
        self.sources.min()
    }

    /// The lowest epoch the emitters of component `c` may still emit (`INF` without emitters).
    pub(crate) fn emit_cap(&self, c: ComponentId) -> Time {
        self.emit_cap[c as usize]
    }
}
