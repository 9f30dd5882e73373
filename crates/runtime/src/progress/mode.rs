//! The tracking mode's rules, in one place: what a worker does for completeness under trAcker,
//! in-band markers or no tracking. One trait, [`Progress`], three implementations; channels,
//! sources and operators ask it ("do markers travel in band?", "register this batch's send tag")
//! and never match on [`TrackingMode`] themselves (docs/design.md, "Layers").
//!
//! - [`TrackerProgress`]: trAcker (the trAcker paper, section 3; docs/design.md, "trAcker
//!   requirements"): send tags over slot ranges (`xorflow_tracking::range_tag`), receive tags,
//!   heartbeats and holds go into the worker's local acker; frontiers come from the tracker.
//! - [`MarkerProgress`]: markers (punctuations) in the batches, aligned per instance; checkpoint
//!   epochs travel as barriers (`progress/cut.rs`).
//! - [`NoProgress`]: no tracking; channels end with end-of-stream messages and windows close
//!   only then.

use super::epoch_ctx::EpochCtx;
use super::flush_policy::FlushPolicy;
use super::frontiers::Frontiers;
use crate::config::{CheckpointCut, RuntimeConfig, TrackingMode, ValueName};
use xorflow_tracking::range_tag::RangeTag;
use xorflow_tracking::{ComponentId, Granularity, LocalAcker, Slot, SourceId, TagSource, Time};

/// The worker-local trAcker state: local acker and tag source.
pub struct TrackerState {
    /// Per-worker XOR-merging acker.
    pub acker: LocalAcker,
    /// Random tags for batches and deferred-output holds.
    pub tags: TagSource,
}

/// What a worker does for completeness tracking, per mode. Every method has the behaviour of
/// "nothing to do" as its default, so each implementation states only what its mode does.
pub trait Progress: Send {
    /// The mode it implements (for reports and the job id).
    fn mode(&self) -> TrackingMode;

    /// Checkpoint epochs as this mode tracks them: trAcker beside event time, markers as
    /// barriers; `None` without a checkpoint interval or without tracking.
    fn epochs(&self) -> Option<EpochCtx>;

    /// True when trAcker's frontiers decide completeness: the worker is done when every
    /// component's frontier is `INF`, and batches carry send tags.
    fn tracked(&self) -> bool {
        false
    }

    /// True when markers travel in the batches: sources send one per granularity step, every
    /// instance aligns and forwards them, and checkpoint epochs travel as barriers.
    fn markers_in_band(&self) -> bool {
        false
    }

    /// True when channels end with an end-of-stream message (the only notification without
    /// tracking).
    fn ends_in_band(&self) -> bool {
        false
    }

    /// True when a stateful instance may keep versions instead of buffering the next epoch
    /// (`--checkpoint-cut versioned`; aligned barriers always buffer).
    fn versioned_cut(&self) -> bool {
        false
    }

    /// Registers `tag`'s open buffer over slots `range` of `component` (and slot `epoch` of its
    /// epoch component), under the range-tag rule (`xorflow_tracking::range_tag`).
    #[inline]
    fn register_send(
        &mut self,
        _tag: &mut RangeTag,
        _component: ComponentId,
        _range: (Slot, Slot),
        _epoch: u64,
    ) {
    }

    /// Registers the receive tag `tag` of a processed batch over slots `[lo, hi]` of component
    /// `c`, of checkpoint epoch `epoch`.
    #[inline]
    fn ack_received(&mut self, _c: ComponentId, _lo: Slot, _hi: Slot, _epoch: u64, _tag: u64) {}

    /// Source `source`'s heartbeat (time units, or an epoch under an epoch source id).
    fn heartbeat(&mut self, _source: SourceId, _time: Time) {}

    /// Opens a hold in slot `slot` of every component of `downstream` (deferred output:
    /// docs/design.md, requirement 8); returns its tag, 0 when nothing needs holding.
    fn open_hold(&mut self, _downstream: &[ComponentId], _slot: Slot) -> u64 {
        0
    }

    /// Releases holds `(slot, tag)` on every component of `downstream`.
    fn release_holds(&mut self, _downstream: &[ComponentId], _holds: &[(Slot, u64)]) {}

    /// The epoch frontier of component `c` as trAcker reports it; `None` when epochs are not
    /// tracked by trAcker (with markers the driver aligns barriers itself).
    fn epoch_frontier(&self, _frontiers: &Frontiers, _c: ComponentId) -> Option<u64> {
        None
    }

    /// The worker's trAcker state, to hand its acks on (`progress/handoff.rs`); `None` in the
    /// other modes.
    fn tracker(&mut self) -> Option<&mut TrackerState> {
        None
    }
}

/// The progress rules and frontier table of one worker for `config`: `components` tracking
/// components and `sources` source instances in the graph.
pub fn for_worker(
    config: &RuntimeConfig,
    components: usize,
    sources: usize,
) -> (Box<dyn Progress>, Frontiers) {
    let epochs = config.checkpoint_interval.map(|i| EpochCtx {
        components,
        sources,
        interval_ns: i.as_nanos().max(1) as u64,
    });
    match config.tracking {
        TrackingMode::Tracker => {
            // Epoch components follow the event-time ones in the frontier table.
            let tracked = if epochs.is_some() {
                2 * components
            } else {
                components
            };
            let g = Granularity::new(config.granularity);
            let p = TrackerProgress {
                state: TrackerState {
                    acker: FlushPolicy::of(config).local_acker(g),
                    tags: TagSource::from_entropy(),
                },
                epochs,
                versioned: config.checkpoint_cut == CheckpointCut::Versioned,
            };
            let f = Frontiers::new(config.tracking, tracked, config.tracker_shards);
            (Box::new(p), f)
        }
        TrackingMode::Markers => {
            let f = Frontiers::new(config.tracking, components, config.tracker_shards);
            (Box::new(MarkerProgress { epochs }), f)
        }
        TrackingMode::None => {
            let f = Frontiers::new(config.tracking, components, config.tracker_shards);
            (Box::new(NoProgress), f)
        }
    }
}

/// True when `mode` runs trAcker: tracker shards, the process acker, epoch components and a
/// component per instance exist only then. The setup (`execute/`, `dataflow/`) asks here, as a
/// worker asks [`Progress::tracked`].
pub fn runs_tracker(mode: TrackingMode) -> bool {
    mode == TrackingMode::Tracker
}

/// Refuses a cyclic `graph` without trAcker: an instance would wait for a marker that depends on
/// its own output (trAcker tracks cycles: docs/design.md, "Cycles").
///
/// # Errors
/// The cycle, by vertex names, and the mode that cannot run it.
pub fn check_cycles(graph: &xorflow_core::GraphDesc, mode: TrackingMode) -> Result<(), String> {
    let awaited = match mode {
        TrackingMode::Tracker => return Ok(()),
        TrackingMode::Markers => "marker",
        TrackingMode::None => "end-of-stream marker",
    };
    let Some(cycle) = graph.find_cycle() else {
        return Ok(());
    };
    Err(format!(
        "tracking '{}' cannot run a cyclic graph (cycle: {}): an instance would wait for a \
         {awaited} that depends on its own output; use --tracking tracker",
        mode.name(),
        cycle.join(" -> "),
    ))
}

/// trAcker: tags, acks, heartbeats and holds into the worker's local acker.
pub struct TrackerProgress {
    state: TrackerState,
    epochs: Option<EpochCtx>,
    versioned: bool,
}

impl Progress for TrackerProgress {
    fn mode(&self) -> TrackingMode {
        TrackingMode::Tracker
    }

    fn epochs(&self) -> Option<EpochCtx> {
        self.epochs
    }

    fn tracked(&self) -> bool {
        true
    }

    fn versioned_cut(&self) -> bool {
        self.versioned
    }

    /// With checkpoint epochs every tag is also XOR-ed into slot `epoch` of the receiver's epoch
    /// component (a buffer holds one epoch), so re-registering under a fresh tag swaps the tag
    /// there too.
    #[inline]
    fn register_send(
        &mut self,
        tag: &mut RangeTag,
        component: ComponentId,
        range: (Slot, Slot),
        epoch: u64,
    ) {
        let epoch_c = self.epochs.map(|e| e.component(component));
        let TrackerState { acker, tags } = &mut self.state;
        tag.register(range, tags, |lo, hi, x| {
            acker.xor_slots(component, lo, hi, x);
            if let Some(ec) = epoch_c {
                acker.xor_slots(ec, epoch, epoch, x);
            }
        });
    }

    #[inline]
    fn ack_received(&mut self, c: ComponentId, lo: Slot, hi: Slot, epoch: u64, tag: u64) {
        let acker = &mut self.state.acker;
        acker.xor_slots(c, lo, hi, tag);
        if let Some(e) = &self.epochs {
            acker.xor_slots(e.component(c), epoch, epoch, tag);
        }
    }

    fn heartbeat(&mut self, source: SourceId, time: Time) {
        self.state.acker.heartbeat(source, time);
    }

    fn open_hold(&mut self, downstream: &[ComponentId], slot: Slot) -> u64 {
        let tag = self.state.tags.next_tag();
        for &c in downstream {
            self.state.acker.xor_slots(c, slot, slot, tag);
        }
        tag
    }

    fn release_holds(&mut self, downstream: &[ComponentId], holds: &[(Slot, u64)]) {
        for &(slot, tag) in holds {
            for &c in downstream {
                self.state.acker.xor_slots(c, slot, slot, tag);
            }
        }
    }

    fn epoch_frontier(&self, frontiers: &Frontiers, c: ComponentId) -> Option<u64> {
        self.epochs.map(|e| frontiers.of(e.component(c)))
    }

    fn tracker(&mut self) -> Option<&mut TrackerState> {
        Some(&mut self.state)
    }
}

/// Markers in the batches, aligned by every instance; epochs as barriers.
pub struct MarkerProgress {
    epochs: Option<EpochCtx>,
}

impl Progress for MarkerProgress {
    fn mode(&self) -> TrackingMode {
        TrackingMode::Markers
    }

    fn epochs(&self) -> Option<EpochCtx> {
        self.epochs
    }

    fn markers_in_band(&self) -> bool {
        true
    }
}

/// No tracking: end-of-stream messages only, no checkpoint epochs.
pub struct NoProgress;

impl Progress for NoProgress {
    fn mode(&self) -> TrackingMode {
        TrackingMode::None
    }

    fn epochs(&self) -> Option<EpochCtx> {
        None
    }

    fn ends_in_band(&self) -> bool {
        true
    }
}
