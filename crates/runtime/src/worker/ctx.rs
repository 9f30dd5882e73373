//! What a vertex instance sees of its worker: index, clock, tracking state, frontiers, counters.

use crate::config::{RuntimeConfig, TrackingMode};
use crate::measure::traffic::{MessageKind, Traffic};
use crate::progress::flush_policy::FlushPolicy;
use crate::progress::frontiers::{Frontiers, InBand};
use crate::wake::Unparkers;
use std::sync::Arc;
use xorflow_tracking::{ComponentId, Granularity, LocalAcker, TagSource, Time};

/// The worker-local trAcker state: local acker and tag source.
pub struct Tracking {
    /// Per-worker XOR-merging acker.
    pub acker: LocalAcker,
    /// Random tags for batches and deferred-output holds.
    pub tags: TagSource,
}

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
    pub fn source_id(&self, s: xorflow_tracking::SourceId) -> xorflow_tracking::SourceId {
        xorflow_tracking::epochs::epoch_source_id(self.sources, s)
    }

    /// The heartbeat id of emitter `j` (`execute/mod.rs`, `epoch_domain`, numbers them).
    pub fn emitter_id(&self, j: usize) -> xorflow_tracking::SourceId {
        xorflow_tracking::epochs::emitter_id(self.sources, j)
    }
}

/// Per-worker context passed to every vertex instance step.
///
/// A vertex reads the run's options from [`WorkerCtx::config`]; the fields below that repeat
/// one of them are those read per element or per batch on the hot path, kept at hand (and in
/// the unit the path needs: ns, [`Granularity`]).
pub struct WorkerCtx {
    /// The run's configuration, as every worker of this process has it.
    pub config: Arc<RuntimeConfig>,
    /// This worker's global index in `0..workers`.
    pub index: usize,
    /// This worker's index within its process.
    pub local_index: usize,
    /// Number of workers P in the whole job (all processes).
    pub workers: usize,
    /// How completeness is tracked.
    pub mode: TrackingMode,
    /// trAcker state; `None` unless tracking with trAcker.
    pub tracking: Option<Tracking>,
    /// Checkpoint epochs (trAcker with a checkpoint interval only).
    pub epochs: Option<EpochCtx>,
    /// Where snapshots and source positions go (with a checkpoint directory).
    pub checkpointer: Option<crate::checkpoint::Checkpointer>,
    /// The checkpoint the job resumes from (`--resume`): read by instances as they open.
    pub resume: Option<std::sync::Arc<crate::checkpoint::Resume>>,
    /// Tracking granularity.
    pub granularity: Granularity,
    /// Every component's frontier as known here, and the notification API.
    pub frontiers: Frontiers,
    /// Cached clock (ns), refreshed by the worker loop and before each input batch.
    pub now_ns: u64,
    /// Elements per batch.
    pub batch_size: usize,
    /// Flush timeout of partial batches, ns.
    pub flush_timeout_ns: u64,
    /// Partial batches leave when the worker goes idle ([`RuntimeConfig::batch_flush_on_idle`]).
    pub batch_flush_on_idle: bool,
    /// Timer slack of this worker's thread, ns ([`RuntimeConfig::timer_slack`]).
    pub timer_slack_ns: u64,
    /// Which slots the probe measures ([`RuntimeConfig::latency_sample`], or the default for the
    /// granularity).
    pub latency_sampling: crate::config::sampling::Sampling,
    /// Times below this are warm-up, not measured ([`RuntimeConfig::warmup_until`]).
    pub warmup_until: u64,
    /// trAcker's cut keeps versions instead of buffering (`--checkpoint-cut versioned`).
    pub versioned_cut: bool,
    /// Earliest time (ns) a vertex asked to run again (rate-controlled sources); the worker parks
    /// no longer than this.
    pub wake_at_ns: u64,
    /// Messages sent by this worker, by kind.
    pub traffic: Traffic,
    /// Wakes other workers after sending to them.
    pub unparkers: Arc<Unparkers>,
    /// The process's event-log channels ([`RuntimeConfig::event_log`]); `None`: logging off.
    pub logs: Option<xorflow_measure::log::Logs>,
}

impl WorkerCtx {
    /// What an on-disk store of a checkpointed job needs for local recovery: the owner of its
    /// savepoints, the checkpoint being restored, and whether local recovery is on (`None`
    /// without checkpoints).
    pub fn affinity(&self) -> Option<xorflow_state::local::Affinity<'_>> {
        let c = self.checkpointer.as_ref()?;
        Some(xorflow_state::local::Affinity {
            owner: c.owner(),
            resume: self.resume.as_ref().map(|r| r.manifest.checkpoint),
            savepoints: c.local_recovery(),
        })
    }

    pub(crate) fn new(
        index: usize,
        local_index: usize,
        workers: usize,
        config: &RuntimeConfig,
        components: usize,
        sources: usize,
        unparkers: Arc<Unparkers>,
    ) -> Self {
        let granularity = Granularity::new(config.granularity);
        let epochs = match (config.tracking, config.checkpoint_interval) {
            (TrackingMode::Tracker | TrackingMode::Markers, Some(i)) => Some(EpochCtx {
                components,
                sources,
                interval_ns: i.as_nanos().max(1) as u64,
            }),
            _ => None,
        };
        // Epoch components follow the event-time ones in the frontier table (trAcker only:
        // with markers, epochs travel as barriers).
        let tracked = if epochs.is_some() && config.tracking == TrackingMode::Tracker {
            2 * components
        } else {
            components
        };
        WorkerCtx {
            config: Arc::new(config.clone()),
            index,
            local_index,
            workers,
            mode: config.tracking,
            tracking: (config.tracking == TrackingMode::Tracker).then(|| Tracking {
                acker: FlushPolicy::of(config).local_acker(granularity),
                tags: TagSource::from_entropy(),
            }),
            epochs,
            checkpointer: None,
            resume: None,
            granularity,
            frontiers: Frontiers::new(config.tracking, tracked, config.tracker_shards),
            now_ns: crate::measure::clock::now_ns(),
            batch_size: config.batch_size,
            flush_timeout_ns: config.flush_timeout.as_nanos() as u64,
            batch_flush_on_idle: config.batch_flush_on_idle,
            timer_slack_ns: config.timer_slack.as_nanos() as u64,
            latency_sampling: config
                .latency_sample
                .unwrap_or_else(|| crate::config::sampling::Sampling::auto(config.granularity)),
            warmup_until: config.warmup_until,
            versioned_cut: config.checkpoint_cut == crate::config::CheckpointCut::Versioned
                && config.tracking != TrackingMode::Markers,
            wake_at_ns: u64::MAX,
            traffic: Traffic::default(),
            unparkers,
            logs: None,
        }
    }

    /// Opens event-log channel `name` for this worker (one file per opening): `None` when
    /// logging is off or the channel's handler is `null`, so a vertex without a channel checks
    /// one `Option` per batch and nothing per element.
    ///
    /// # Errors
    /// The file cannot be created (naming it) or the name is not a valid channel name.
    pub fn open_log(&self, name: &str) -> Result<Option<xorflow_measure::log::Channel>, String> {
        let Some(logs) = &self.logs else {
            return Ok(None);
        };
        if *logs.config().handler_for(name) == xorflow_measure::log::HandlerSpec::Null {
            return Ok(None);
        }
        logs.open(name)
            .map(Some)
            .map_err(|e| format!("event log '{name}': {e}"))
    }

    /// A context for unit tests: worker 0 of 1, default configuration, one component.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        Self::new(
            0,
            0,
            1,
            &RuntimeConfig::default(),
            1,
            1,
            Arc::new(Unparkers::new(1)),
        )
    }

    /// The notification API (`progress/frontiers.rs`): the frontier of a vertex instance in
    /// component `c` whose inputs report `in_band`, whatever the tracking mode.
    #[inline]
    pub fn frontier(&self, c: ComponentId, in_band: InBand) -> Time {
        self.frontiers.notified(c, in_band)
    }

    /// True when running with trAcker.
    pub fn is_tracking(&self) -> bool {
        self.tracking.is_some()
    }

    /// Registers the receive tag of a processed batch of `epoch` (no-op without tracking).
    #[inline]
    pub fn ack_received(&mut self, c: ComponentId, lo: u64, hi: u64, epoch: u64, tag: u64) {
        if let Some(t) = &mut self.tracking {
            t.acker.xor_slots(c, lo, hi, tag);
            if let Some(e) = &self.epochs {
                t.acker.xor_slots(e.component(c), epoch, epoch, tag);
            }
        }
    }

    /// The epoch frontier of component `c` (the first epoch not fully processed there and
    /// upstream) as trAcker reports it; `None` without trAcker's epochs (with markers the
    /// driver aligns barriers itself: `operators/driver.rs`).
    #[inline]
    pub fn epoch_frontier(&self, c: ComponentId) -> Option<u64> {
        if self.mode != TrackingMode::Tracker {
            return None;
        }
        self.epochs.map(|e| self.frontiers.of(e.component(c)))
    }

    /// Counts one sent message.
    #[inline]
    pub fn count(&mut self, kind: MessageKind, payload_bytes: u64) {
        self.traffic.record(kind, payload_bytes);
    }

    /// Asks the worker to run again no later than `at_ns`.
    pub fn wake_at(&mut self, at_ns: u64) {
        self.wake_at_ns = self.wake_at_ns.min(at_ns);
    }
}
