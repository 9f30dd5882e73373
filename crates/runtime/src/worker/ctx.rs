//! What a vertex instance sees of its worker: index, clock, tracking state, frontiers, counters.

use crate::channel::{Batching, SendCtx};
use crate::config::RuntimeConfig;
use crate::measure::traffic::{MessageKind, Traffic};
use crate::progress::frontiers::{Frontiers, InBand};
use crate::progress::mode::Progress;
use crate::wake::Unparkers;
use std::sync::Arc;
use xorflow_tracking::{ComponentId, Granularity, Time};

pub use crate::progress::epoch_ctx::EpochCtx;

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
    /// The tracking mode's rules (`progress/mode.rs`): tags, acks, heartbeats and holds.
    pub progress: Box<dyn Progress>,
    /// Checkpoint epochs (with a checkpoint interval, under trAcker or markers): the
    /// [`Progress::epochs`] of `progress`, kept here as it is read per batch.
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
    /// How output is cut into batches: size, flush timeout, idle flushes, timer slack.
    pub batching: Batching,
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
        let (progress, frontiers) = crate::progress::mode::for_worker(config, components, sources);
        WorkerCtx {
            config: Arc::new(config.clone()),
            index,
            local_index,
            workers,
            epochs: progress.epochs(),
            versioned_cut: progress.versioned_cut(),
            progress,
            checkpointer: None,
            resume: None,
            granularity,
            frontiers,
            now_ns: crate::measure::clock::now_ns(),
            batching: Batching {
                batch_size: config.batch_size,
                flush_timeout_ns: config.flush_timeout.as_nanos() as u64,
                flush_on_idle: config.batch_flush_on_idle,
                timer_slack_ns: config.timer_slack.as_nanos() as u64,
                source_delay_ns: config.source_delay.as_nanos() as u64,
            },
            latency_sampling: config
                .latency_sample
                .unwrap_or_else(|| crate::config::sampling::Sampling::auto(config.granularity)),
            warmup_until: config.warmup_until,
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

    /// The notification API (`progress/frontiers.rs`): the frontier of a vertex instance in
    /// component `c` whose inputs report `in_band`, whatever the tracking mode.
    #[inline]
    pub fn frontier(&self, c: ComponentId, in_band: InBand) -> Time {
        self.frontiers.notified(c, in_band)
    }

    /// True when running with trAcker.
    pub fn is_tracking(&self) -> bool {
        self.progress.tracked()
    }

    /// Registers the receive tag of a processed batch of `epoch` (no-op without tracking).
    #[inline]
    pub fn ack_received(&mut self, c: ComponentId, lo: u64, hi: u64, epoch: u64, tag: u64) {
        self.progress.ack_received(c, lo, hi, epoch, tag);
    }

    /// The narrow handles a channel's sending side takes (`channel/handles.rs`), borrowed from
    /// this context for one call.
    #[inline]
    pub fn sending(&mut self) -> SendCtx<'_> {
        SendCtx {
            now_ns: self.now_ns,
            batching: &self.batching,
            granularity: self.granularity,
            progress: &mut *self.progress,
            traffic: &mut self.traffic,
            unparkers: &self.unparkers,
            local_index: self.local_index,
            wake_at_ns: &mut self.wake_at_ns,
        }
    }

    /// The epoch frontier of component `c` (the first epoch not fully processed there and
    /// upstream) as trAcker reports it; `None` without trAcker's epochs (with markers the
    /// driver aligns barriers itself: `operators/driver.rs`).
    #[inline]
    pub fn epoch_frontier(&self, c: ComponentId) -> Option<u64> {
        self.progress.epoch_frontier(&self.frontiers, c)
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
