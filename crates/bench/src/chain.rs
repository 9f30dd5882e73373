//! The trAcker paper's chain workload: a source, K pass-through stages each preceded by a round-robin
//! re-partition, and a sink that measures notification latency.
//!
//! Element times are sequence numbers: source instance `k` of `n` emits times `k, k + n, k + 2n, ...`
//! (so the union over sources is `0, 1, 2, ...`) and heartbeats the next time after every poll. With
//! granularity `g` a substream is `g` consecutive sequence numbers.
//!
//! Each element carries the time it was due on the source's schedule (ns on the machine's
//! monotonic clock; the emission time when the rate is unlimited), so the sink measures end-to-end
//! latency without coordinated omission: a source that falls behind its schedule shows as latency.
//! The first `warmup` elements are processed but not measured.

use crate::generator::Schedule;
use crate::sustainable::series::PerSecond;
use clap::{Args, Parser};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use xorflow_runtime::args::{Argv, EngineArgs};
use xorflow_runtime::measure::span_log::SpanLog;
use xorflow_runtime::measure::stats::{NOTIFICATION_LATENCY_ANY, NOTIFICATION_LATENCY_FRONTIER};
use xorflow_runtime::measure::traffic::Count;
use xorflow_runtime::operators::epoch_snapshot::{
    BUFFERED_ELEMENTS, BUFFERED_NS, BUFFERING_HISTOGRAM, SNAPSHOTS,
};
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::ValueName;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, EpochSpec, MessageKind, RunError, RunReport, RuntimeConfig, Sink,
    Source, SourceOutput, SourcePoll, Staging, Traffic, VertexStats, WindowResult,
};

/// Sink histogram: end-to-end latency of measured elements, ns (due time to arrival at the sink).
pub const ELEMENT_LATENCY: &str = "element_latency_ns";
/// Sink histogram: the same for the elements right after the snapshot boundary.
pub const POST_SNAPSHOT_LATENCY: &str = "post_snapshot_latency_ns";
/// Sink span measure, then histogram: element latency of a sample of the measured elements
/// (1 in [`ChainSpans::every`]), each from its source's due time to the sink, settled through the
/// clock alignment (the Cloudprofiler paper): the element latency across hosts. Runs of several processes only.
pub const ELEMENT_LATENCY_CLOCK: &str = "element_latency_clock_ns";
/// Sink histograms `<this>/<second>`: element latency per second of the schedule, us
/// (`--latency-by-second`, [`crate::sustainable::series`]).
pub const ELEMENT_LATENCY_BY_SECOND: &str = "element_latency_us_by_second";

/// The trAcker paper's snapshot experiment on the chain: every stage is a snapshot vertex with one epoch
/// boundary ([`xorflow_runtime::Stream::epoch_snapshots`]).
#[derive(Clone, Debug)]
pub struct SnapshotParams {
    /// The epoch boundary, an element number (rounded up to a multiple of the granularity).
    pub at: u64,
    /// The imitated snapshot's pause.
    pub pause: Duration,
    /// Elements from the boundary on whose latency counts as "right after the snapshot".
    pub post_elements: u64,
}

/// The chain's keyed stateful stage (`--keyed-window`): a tumbling count per key.
#[derive(Clone, Copy, Debug)]
pub struct KeyedStage {
    /// Window size, element numbers.
    pub window: u64,
    /// Keys: an element's key is its payload modulo this.
    pub keys: u64,
}

/// Parameters of one chain run.
#[derive(Clone, Debug)]
pub struct ChainParams {
    /// Pass-through stages K.
    pub stages: usize,
    /// Elements in total over all sources.
    pub elements: u64,
    /// Total rate over all sources, elements/s; 0 = as fast as possible.
    pub rate: f64,
    /// Warm-up elements: the first ones, processed but not measured.
    pub warmup: u64,
    /// Snapshot stages instead of pass-through ones.
    pub snapshot: Option<SnapshotParams>,
    /// A keyed stateful stage before the sink.
    pub keyed: Option<KeyedStage>,
    /// The sink also records element latency per second of the schedule.
    pub latency_by_second: bool,
    /// Runtime configuration (workers, granularity, tracking, batching).
    pub runtime: RuntimeConfig,
}

/// The options of one chain run as `xorflow-lab bench chain` takes them (its own, then the engine's):
/// the CLI parses them, the bench stand builds them and renders them back with
/// [`ChainConfig::to_argv`].
#[derive(Args, Clone, Debug, PartialEq)]
pub struct ChainConfig {
    /// Pass-through stages K (at most 1000; with the workers' channels at most 33554432 channel
    /// slots in all, see --channel-capacity).
    #[arg(long, default_value_t = 10)]
    pub stages: usize,
    /// Elements in total.
    #[arg(long, default_value_t = 20_000_000)]
    pub elements: u64,
    /// Total source rate, elements/s (0: as fast as possible; not negative, and no run of more
    /// than 100 years).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Tracking granularity g: consecutive element numbers per substream.
    #[arg(long, default_value_t = 1)]
    pub granularity: u64,
    /// Warm-up: the first N elements are processed but not measured (latencies, achieved rates).
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// The trAcker paper's snapshot experiment: every stage snapshots at this element number (one epoch
    /// boundary), driven by notifications (tracker) or aligned markers (markers).
    #[arg(long)]
    pub snapshot_at: Option<u64>,
    /// The imitated snapshot's pause at the boundary (e.g. 100ms, 500ms, 1s).
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub snapshot_pause: Duration,
    /// Elements from the boundary on whose latency is reported as "right after the snapshot"
    /// (default: those due within the pause plus 500 ms at --rate, else 10,000).
    #[arg(long)]
    pub post_snapshot_elements: Option<u64>,
    /// A keyed stateful stage after the pass-through ones: a tumbling window of this many
    /// element numbers counting elements per key (`--keys` keys, the payload modulo the keys),
    /// its results going to a sink that only counts them (no latency measured then). State that
    /// checkpoints snapshot: `xorflow-lab bench checkpoints`.
    #[arg(long)]
    pub keyed_window: Option<u64>,
    /// Keys of the keyed stage (--keyed-window).
    #[arg(long, default_value_t = 1024)]
    pub keys: u64,
    /// With checkpoints: every stateful instance's snapshot also takes this long on its worker
    /// (a synchronous snapshot of a larger state: `bench alignment`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub snapshot_work: Option<Duration>,
    /// The sink also records the element latency of each second of the schedule (the elements
    /// due in it): `element_p99_ms_by_second` and `element_count_by_second` in the result, what
    /// `bench sustainable --workload chain` judges growth by. Costs a second histogram record per
    /// element and about 0.4 MB per second of run at the end.
    #[arg(long)]
    pub latency_by_second: bool,
    /// The engine's options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Parses [`ChainConfig`] alone (its defaults, and arguments read back from results).
#[derive(Parser)]
struct ChainOnly {
    #[command(flatten)]
    chain: ChainConfig,
}

impl Default for ChainConfig {
    /// The defaults the command line declares.
    fn default() -> Self {
        ChainOnly::parse_from(["chain"]).chain
    }
}

impl ChainConfig {
    /// Parses the arguments after `bench chain` (without `--json`).
    ///
    /// # Errors
    /// clap's message for arguments that are not `bench chain`'s.
    pub fn parse_argv(argv: &[String]) -> Result<Self, String> {
        ChainOnly::try_parse_from(std::iter::once("chain").chain(argv.iter().map(String::as_str)))
            .map(|o| o.chain)
            .map_err(|e| e.to_string())
    }

    /// The arguments that give this configuration back when parsed (non-default options only).
    pub fn to_argv(&self) -> Vec<String> {
        let d = ChainConfig::default();
        let mut a = Argv::default();
        a.value("stages", self.stages, d.stages);
        a.value("elements", self.elements, d.elements);
        a.value("rate", self.rate, d.rate);
        a.value("granularity", self.granularity, d.granularity);
        a.value("warmup", self.warmup, d.warmup);
        a.option("snapshot-at", self.snapshot_at);
        a.duration("snapshot-pause", self.snapshot_pause, d.snapshot_pause);
        a.option("post-snapshot-elements", self.post_snapshot_elements);
        a.option("keyed-window", self.keyed_window);
        a.value("keys", self.keys, d.keys);
        if let Some(w) = self.snapshot_work {
            a.duration("snapshot-work", w, Duration::ZERO);
        }
        a.switch("latency-by-second", self.latency_by_second);
        a.extend(self.engine.to_argv());
        a.into_vec()
    }

    /// The run these options describe.
    pub fn params(&self) -> ChainParams {
        ChainParams {
            stages: self.stages,
            elements: self.elements,
            rate: self.rate,
            warmup: self.warmup,
            snapshot: self.snapshot_at.map(|at| SnapshotParams {
                at,
                pause: self.snapshot_pause,
                post_elements: self.post_snapshot_elements.unwrap_or(if self.rate > 0.0 {
                    (self.rate * (self.snapshot_pause.as_secs_f64() + 0.5)) as u64
                } else {
                    10_000
                }),
            }),
            keyed: self.keyed_window.map(|window| KeyedStage {
                window,
                keys: self.keys.max(1),
            }),
            latency_by_second: self.latency_by_second,
            runtime: RuntimeConfig {
                snapshot_work: self.snapshot_work,
                ..self.engine.runtime(self.granularity)
            },
        }
    }
}

/// Most pass-through stages K: building the graph costs time and threads' stack for every stage.
pub const MAX_STAGES: usize = 1000;
/// Most channel slots the whole chain may preallocate (K + 1 edges, each
/// [`RuntimeConfig::edge_slots`]): 32 Mi slots, about 2.5 GiB.
pub const MAX_CHAIN_SLOTS: u64 = 1 << 25;
/// Longest run a rate may ask for, seconds (100 years): a smaller rate is a typo, and the
/// schedule's nanosecond arithmetic overflows long before.
const MAX_RUN_S: f64 = 100.0 * 365.0 * 86_400.0;

impl ChainParams {
    /// Checks what the runtime cannot: stages, rate and the chain's channel memory.
    ///
    /// # Errors
    /// A message naming the option.
    pub fn validate(&self) -> Result<(), String> {
        if self.stages > MAX_STAGES {
            return Err(format!(
                "--stages {} is more than {MAX_STAGES}",
                self.stages
            ));
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err(format!(
                "--rate must be a number of elements/s, at least 0 (0: as fast as possible), \
                 got {}",
                self.rate
            ));
        }
        if self.rate > 0.0 && self.elements as f64 / self.rate > MAX_RUN_S {
            return Err(format!(
                "--rate {:e} would take more than 100 years for --elements {}",
                self.rate, self.elements
            ));
        }
        self.runtime.validate()?;
        let slots = self
            .runtime
            .edge_slots()
            .saturating_mul(self.stages as u64 + 1);
        if slots > MAX_CHAIN_SLOTS {
            return Err(format!(
                "--stages {} with {} channel slots per edge makes {slots} channel slots in all, \
                 more than {MAX_CHAIN_SLOTS} (each is allocated at start): use fewer stages, \
                 workers or a smaller --channel-capacity",
                self.stages,
                self.runtime.edge_slots()
            ));
        }
        Ok(())
    }
}

/// Latency percentiles, microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_us: Option<f64>,
    /// 90th percentile.
    pub p90_us: Option<f64>,
    /// 95th percentile.
    pub p95_us: Option<f64>,
    /// 99th percentile.
    pub p99_us: Option<f64>,
    /// Largest.
    pub max_us: Option<f64>,
}

impl Percentiles {
    fn of(s: &VertexStats, name: &str) -> Self {
        let q = |q| s.histogram_us(name, q);
        Percentiles {
            count: s.histograms.get(name).map_or(0, |h| h.len()),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p95_us: q(0.95),
            p99_us: q(0.99),
            max_us: q(1.0),
        }
    }
}

/// One snapshot stage's buffering (summed over its instances).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageBuffering {
    /// Stage name.
    pub stage: String,
    /// Pauses taken (one per instance).
    pub snapshots: u64,
    /// Elements that waited in the buffer.
    pub buffered_elements: u64,
    /// Their total time in the buffer, ms.
    pub total_buffering_ms: f64,
    /// Average time in the buffer per buffered element, ms.
    pub avg_buffering_ms: Option<f64>,
    /// 99th percentile of the same, ms.
    pub p99_buffering_ms: Option<f64>,
}

/// What the snapshot stages did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapshotResult {
    /// The boundary (element number).
    pub at: u64,
    /// The pause, ms.
    pub pause_ms: f64,
    /// Per stage, in chain order.
    pub stages: Vec<StageBuffering>,
    /// End-to-end latency of the elements right after the boundary.
    pub post_snapshot_latency: Percentiles,
}

/// What every run of the chain measures, on xorflow or on a peer engine: the fields and names
/// the peers print too (see `docs/peers.md`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainMeasures {
    /// K.
    pub stages: usize,
    /// Worker threads per process.
    pub workers: usize,
    /// Granularity g (a peer without tracking reports 0).
    pub granularity: u64,
    /// "tracker", "markers" or "none" (a peer names its own mechanism).
    pub tracking: String,
    /// Elements emitted.
    pub elements: u64,
    /// Warm-up elements (not measured).
    pub warmup: u64,
    /// Requested rate, elements/s (0: unlimited).
    pub rate: f64,
    /// Rate the sources achieved over the measured elements (their emission span), elements/s.
    pub achieved_rate: Option<f64>,
    /// End-to-end latency of the measured elements (due time at the source to the sink).
    pub element_latency: Percentiles,
    /// Notification latency at the sink, microseconds (None without tracking).
    pub latency_p50_us: Option<f64>,
    /// 95th percentile of the same.
    pub latency_p95_us: Option<f64>,
    /// 99th percentile of the same.
    pub latency_p99_us: Option<f64>,
    /// Notification latency at the sink measured from the substream's last arrival at *any* sink
    /// instance of the process (the trAcker paper's definition), not at the same instance: the latency
    /// fields above minus the skew between partitions. Empty without tracking or probe (and in
    /// results from before it was measured).
    #[serde(default)]
    pub notification_latency_any: Percentiles,
    /// The same measured from the first moment a frontier could pass the substream: the last
    /// arrival of it or of an earlier substream at any instance (a frontier passes a substream
    /// only with all before it). Differs from `notification_latency_any` where substreams arrive
    /// out of order, e.g. the chain under delay; exact with `--latency-sample all`, at most
    /// larger than the truth with sampled substreams (`SlotLog::settle`).
    #[serde(default)]
    pub notification_latency_frontier: Percentiles,
    /// Across processes: how `notification_latency_any` went through the clock alignment (its
    /// largest error bound; `None` in one process, whose stamps share one clock).
    #[serde(default)]
    pub notification_clock: Option<xorflow_runtime::measure::stats::ClockCheck>,
    /// Across processes: the element latency of a sample of the measured elements (1 in 64 or
    /// sparser), each converted through the clock alignment with its error bound; the truth
    /// across hosts, where `element_latency` (the plain difference of two processes' clocks) is
    /// not. `None` in one process.
    #[serde(default)]
    pub element_latency_clock: Option<Percentiles>,
    /// How `element_latency_clock` went through the alignment.
    #[serde(default)]
    pub element_clock: Option<xorflow_runtime::measure::stats::ClockCheck>,
    /// Wall-clock seconds of the run.
    pub elapsed_s: f64,
    /// Elements/s achieved (emitted / elapsed).
    pub elements_per_s: f64,
    /// Elements that reached the sink, warm-up included (None: a peer's, which fails instead
    /// when any is missing; the keyed stage's, whose sink gets window results).
    #[serde(default)]
    pub elements_received: Option<u64>,
    /// End-to-end latency p99 of the measured elements due in each second of the schedule, ms
    /// (0 for a second without any): `--latency-by-second` (xorflow) or a peer's own series;
    /// empty otherwise.
    #[serde(default)]
    pub element_p99_ms_by_second: Vec<f64>,
    /// The measured elements due in each second of the same series.
    #[serde(default)]
    pub element_count_by_second: Vec<u64>,
}

/// Messages and bytes by kind, and the service kinds' sum.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrafficByKind {
    /// Local-acker flushes.
    pub ack: Count,
    /// Transport control (handshakes, credits, keep-alives).
    pub control: Count,
    /// Data batches.
    pub data: Count,
    /// End-of-stream markers.
    pub end_of_stream: Count,
    /// Frontier notifications.
    pub frontier: Count,
    /// Heartbeat flushes.
    pub heartbeat: Count,
    /// Progress markers.
    pub marker: Count,
    /// All service kinds together.
    pub service: Count,
}

impl From<&Traffic> for TrafficByKind {
    fn from(t: &Traffic) -> Self {
        TrafficByKind {
            ack: t.get(MessageKind::Ack),
            control: t.get(MessageKind::Control),
            data: t.get(MessageKind::Data),
            end_of_stream: t.get(MessageKind::EndOfStream),
            frontier: t.get(MessageKind::Frontier),
            heartbeat: t.get(MessageKind::Heartbeat),
            marker: t.get(MessageKind::Marker),
            service: t.service(),
        }
    }
}

fn central() -> String {
    "central".into()
}

/// Results of one chain run (`bench chain --json` prints one; the bench stand reads them back).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainResult {
    /// What every chain run measures (flattened: the same JSON fields as before).
    #[serde(flatten)]
    pub measures: ChainMeasures,
    /// Processes (each with `workers` worker threads, except the dedicated tracker processes).
    pub processes: usize,
    /// Dedicated tracker processes (no workers; they host the tracker shards).
    pub tracker_processes: usize,
    /// Tracker shards.
    pub tracker_shards: usize,
    /// Where the shards ran: central or replicated (`--tracker-layout`; results written before
    /// it existed were central).
    #[serde(default = "central")]
    pub tracker_layout: String,
    /// Local acker flush count (0: unbatched).
    pub ack_flush_count: usize,
    /// Self-cancelling acks per real ack / 2.
    pub ack_multiplier: usize,
    /// Rate the measured elements reached the sink at (their arrival span), elements/s.
    pub sink_rate: Option<f64>,
    /// The sink measured notification latency per slot.
    pub latency_probe: bool,
    /// CPU by operator and by task (in-engine accounting, docs/cpu.md).
    #[serde(default)]
    pub cpu: xorflow_runtime::measure::cpu_report::CpuReport,
    /// Service messages (all kinds but data) per 1000 elements.
    pub service_messages_per_1000: f64,
    /// Messages and bytes by kind.
    pub traffic: TrafficByKind,
    /// Messages and bytes by kind sent by each process, in process order.
    pub traffic_per_process: Vec<TrafficByKind>,
    /// Seconds spent inside the tracker (None without tracking).
    pub tracker_busy_s: Option<f64>,
    /// Ack and heartbeat pieces the tracker shards applied, summed over shards and replicas:
    /// with replicas, every piece once per replica (`--tracker-regions` has fewer).
    #[serde(default)]
    pub tracker_pieces_applied: Option<u64>,
    /// Tracker time per second of run, summed over shards (`tracker_busy_s / elapsed_s`).
    pub tracker_busy_per_s: Option<f64>,
    /// CPU seconds per second of run of the dedicated tracker processes, summed over them
    /// (None without tracker processes). Unlike `tracker_busy_per_s` it includes receiving and
    /// decoding the ack frames, which is most of a remote tracker's work.
    pub tracker_process_cpu_per_s: Option<f64>,
    /// Seconds per second the dedicated tracker processes' threads were runnable but waiting for
    /// a CPU, summed over them: a tracker that lags with this high is starved by the machine, not
    /// short of its own speed.
    pub tracker_process_wait_per_s: Option<f64>,
    /// CPU seconds per second of run of all processes together (multi-process runs only): near
    /// the machine's core count, everything competes for CPU and latency grows from waiting to
    /// be scheduled rather than from any one component's work.
    pub cpu_per_s: Option<f64>,
    /// The snapshot stages' buffering (snapshot runs only).
    pub snapshot: Option<SnapshotResult>,
    /// Checkpoints taken (runs with --checkpoint-interval only).
    #[serde(default)]
    pub checkpoints: Option<CheckpointMeasures>,
}

/// What the checkpoints of a run cost.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CheckpointMeasures {
    /// Checkpoints completed.
    pub completed: u64,
    /// Snapshot files written, bytes in all.
    pub bytes: u64,
    /// Per checkpoint: from its first snapshot report to its manifest, ms (p50, p99, max).
    pub duration_p50_ms: f64,
    pub duration_p99_ms: f64,
    pub duration_max_ms: f64,
    /// Elements held back until their epoch began (the cut), summed over vertices.
    pub buffered_elements: u64,
    /// Their mean time held back, ms.
    #[serde(default)]
    pub buffered_mean_ms: f64,
}

impl CheckpointMeasures {
    fn of(report: &RunReport) -> Option<Self> {
        let c = report.checkpoints.as_ref()?;
        let mut d = c.duration_ms.clone();
        d.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let i = ((d.len() as f64 - 1.0) * p).round() as usize;
            d.get(i).copied().unwrap_or(0.0)
        };
        let sum = |name: &str| report.vertices.iter().map(|v| v.counter(name)).sum::<u64>();
        let buffered = sum(xorflow_runtime::progress::cut::CHECKPOINT_BUFFERED_ELEMENTS);
        let buffered_ns = sum(xorflow_runtime::progress::cut::CHECKPOINT_BUFFERED_NS);
        Some(CheckpointMeasures {
            completed: c.completed,
            bytes: c.bytes,
            duration_p50_ms: q(0.5),
            duration_p99_ms: q(0.99),
            duration_max_ms: q(1.0),
            buffered_elements: buffered,
            buffered_mean_ms: buffered_ns as f64 / buffered.max(1) as f64 / 1e6,
        })
    }
}

struct ChainSource {
    next: u64,
    step: u64,
    remaining: u64,
    emitted: u64,
    /// Elements/s of this instance (0: as fast as possible).
    rate: f64,
    /// When this process's sources started, ns: the first poll of any of them. One schedule
    /// for all, so that element `j` (time `j`) is due at about `start + j / rate` whichever
    /// instance emits it. With a start per instance, the instances' elements of one slot left
    /// up to milliseconds apart (each instance was built at another moment), and a sink that
    /// got one instance's elements waited that long for the other's: the per-instance
    /// notification latency measured the generator, not the engine. Processes start their
    /// sources within the start-up handshake of each other.
    start: Arc<OnceLock<u64>>,
    schedule: Option<Schedule>,
    /// The payload is the element number instead of the due time (the keyed stage keys by it).
    numbered: bool,
}

impl ChainSource {
    /// This instance's schedule, fixed at its first poll (at `now_ns`) to the process's start.
    fn schedule(&mut self, now_ns: u64) -> Schedule {
        let (start, rate) = (&self.start, self.rate);
        *self
            .schedule
            .get_or_insert_with(|| Schedule::new(*start.get_or_init(|| now_ns), rate))
    }
}

impl Source<u64> for ChainSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        if self.remaining == 0 {
            return SourcePoll::Done;
        }
        let schedule = self.schedule(out.now_ns());
        let now = out.now_ns();
        let due = schedule.due_by(now).saturating_sub(self.emitted);
        if due == 0 {
            return SourcePoll::WaitUntil(schedule.due_ns(self.emitted));
        }
        let n = due.min(out.budget() as u64).min(self.remaining);
        for i in 0..n {
            let stamp = if self.numbered {
                self.next
            } else if schedule.unlimited() {
                now
            } else {
                schedule.due_ns(self.emitted + i)
            };
            out.emit(self.next, stamp);
            self.next += self.step;
        }
        self.remaining -= n;
        self.emitted += n;
        out.heartbeat(self.next);
        if self.remaining == 0 {
            SourcePoll::Done
        } else {
            SourcePoll::Ready
        }
    }
}

/// Counts elements per key and window (the keyed stage).
struct CountPerKey;

impl Aggregate<u64> for CountPerKey {
    type Acc = u64;
    type Out = u64;

    fn init(&self) -> u64 {
        0
    }

    fn add(&self, acc: &mut u64, _: &u64) {
        *acc += 1;
    }

    fn finish(&self, acc: u64) -> u64 {
        acc
    }
}

/// Takes the keyed stage's results and keeps nothing (they leave no effect to make exactly
/// once, so they are not staged).
struct Discard;

impl Sink<WindowResult<u64, u64>> for Discard {
    fn write(&mut self, _: Vec<Element<WindowResult<u64, u64>>>) -> Result<(), OperatorError> {
        Ok(())
    }

    fn staging(&self) -> Staging {
        Staging::Direct
    }
}

/// Measures end-to-end latency of the measured elements (payload = due time, ns).
struct LatencySink {
    warmup: u64,
    /// Elements `[lo, hi)` are "right after the snapshot".
    post: (u64, u64),
    latency: hdrhistogram::Histogram<u64>,
    post_latency: hdrhistogram::Histogram<u64>,
    /// Per second of the schedule (`--latency-by-second`).
    by_second: Option<PerSecond>,
    /// The sampled spans of a run of several processes.
    spans: Option<ChainSpans>,
}

/// Which measured elements a sink of a multi-process chain keeps as spans
/// ([`ELEMENT_LATENCY_CLOCK`]), and the source process of each.
#[derive(Clone, Debug)]
struct ChainSpans {
    /// Element `k` is kept when `(k / sources) % every == 0`: whole rounds of the sources, so
    /// every source (and process) is sampled alike, and the same elements on every process.
    every: u64,
    /// Source instances: element `k` comes from instance `k % sources`.
    sources: u64,
    /// Workers per process: source instance `i` runs on global worker `i` (the runtime places
    /// instance `i` on worker `i mod all workers`, `crates/runtime/src/dataflow/mod.rs`), in
    /// process `i / workers`.
    workers: u64,
    log: SpanLog,
}

impl ChainSpans {
    /// For `elements` measured elements from `sources` instances on processes of `workers`:
    /// one in 64 or fewer, so at most half the log's capacity is used.
    fn new(elements: u64, sources: usize, workers: usize) -> Self {
        let cap = SpanLog::CAP as u64 / 2;
        ChainSpans {
            every: elements.div_ceil(cap).next_power_of_two().max(64),
            sources: sources as u64,
            workers: workers.max(1) as u64,
            log: SpanLog::default(),
        }
    }

    #[inline]
    fn record(&mut self, time: u64, due_ns: u64, now_ns: u64) {
        if (time / self.sources).is_multiple_of(self.every) {
            self.log.push((self.source_process(time), due_ns), now_ns);
        }
    }

    /// The process whose source emitted element `time`.
    fn source_process(&self, time: u64) -> usize {
        ((time % self.sources) / self.workers) as usize
    }
}

impl Sink<u64> for LatencySink {
    /// A measurement: nothing outside the run to make exactly once.
    fn staging(&self) -> Staging {
        Staging::Direct
    }

    fn write(&mut self, batch: Vec<Element<u64>>) -> Result<(), OperatorError> {
        let now = xorflow_runtime::measure::clock::now_ns();
        for e in &batch {
            if e.time >= self.warmup {
                let l = now.saturating_sub(e.data).max(1);
                self.latency.saturating_record(l);
                if e.time >= self.post.0 && e.time < self.post.1 {
                    self.post_latency.saturating_record(l);
                }
                if let Some(s) = &mut self.by_second {
                    s.record(e.data, l);
                }
                if let Some(s) = &mut self.spans {
                    s.record(e.time, e.data, now);
                }
            }
        }
        Ok(())
    }

    fn report(&mut self, stats: &mut VertexStats) {
        let _ = stats.histogram_mut(ELEMENT_LATENCY).add(&self.latency);
        let _ = stats
            .histogram_mut(POST_SNAPSHOT_LATENCY)
            .add(&self.post_latency);
        if let Some(s) = &self.by_second {
            s.report(stats, ELEMENT_LATENCY_BY_SECOND);
        }
        if let Some(s) = &mut self.spans {
            stats.span_mut(ELEMENT_LATENCY_CLOCK).append(&mut s.log);
        }
    }
}

/// Runs one chain.
///
/// # Errors
/// Whatever the runtime reports (invalid configuration, failed worker).
pub fn run(p: &ChainParams) -> Result<ChainResult, RunError> {
    p.validate().map_err(RunError::Config)?;
    if p.warmup >= p.elements {
        return Err(RunError::Config(format!(
            "--warmup {} leaves nothing of --elements {} to measure",
            p.warmup, p.elements
        )));
    }
    let mut runtime = p.runtime.clone();
    let g = runtime.granularity;
    let snapshot = p.snapshot.as_ref().map(|s| SnapshotParams {
        at: s.at.div_ceil(g) * g,
        ..s.clone()
    });
    runtime.job_key = format!(
        "chain elements={} rate={} warmup={} snapshot={snapshot:?}",
        p.elements, p.rate, p.warmup
    );
    runtime.warmup_until = p.warmup;
    let df = Dataflow::new(runtime)?;
    let stage_names = build(&df, p, snapshot.as_ref());
    let report = df.run()?;
    Ok(result(p, &report, &stage_names, snapshot.as_ref()))
}

/// Builds the chain into `df`: sources, the stages (snapshot stages when `snapshot` is given)
/// each behind a re-partition, and the latency sink. Returns the stages' names.
fn build(df: &Dataflow, p: &ChainParams, snapshot: Option<&SnapshotParams>) -> Vec<String> {
    let sources = p.runtime.workers * p.runtime.cluster.launch_processes();
    let per_source = p.elements / sources as u64;
    let extra = p.elements % sources as u64;
    let rate = p.rate / sources as f64;
    let numbered = p.keyed.is_some();
    let start = Arc::new(OnceLock::new());
    let source_start = start.clone();
    let mut s = df.source("source", sources, move |k| ChainSource {
        next: k as u64,
        step: sources as u64,
        remaining: per_source + u64::from((k as u64) < extra),
        emitted: 0,
        rate: rate.max(0.0),
        start: source_start.clone(),
        schedule: None,
        numbered,
    });
    let stage_names: Vec<String> = (0..p.stages).map(|i| format!("stage-{i}")).collect();
    for name in &stage_names {
        s = match snapshot {
            None => s.rebalance().map(name, |x| x),
            Some(sp) => s.rebalance().epoch_snapshots(
                name,
                EpochSpec {
                    boundaries: vec![sp.at],
                    pause_ns: sp.pause.as_nanos() as u64,
                },
            ),
        };
    }
    if let Some(k) = p.keyed {
        let keys = k.keys;
        s.tumbling_window("keyed", k.window, move |x: &u64| x % keys, CountPerKey)
            .sink("sink", |_| Discard);
        return stage_names;
    }
    let warmup = p.warmup;
    let post = snapshot.map_or((0, 0), |sp| (sp.at, sp.at.saturating_add(sp.post_elements)));
    let by_second = p.latency_by_second;
    let processes = p.runtime.cluster.launch_processes();
    let spans =
        (processes > 1).then(|| ChainSpans::new(p.elements - p.warmup, sources, p.runtime.workers));
    s.sink("sink", move |_| LatencySink {
        spans: spans.clone(),
        warmup,
        post,
        latency: xorflow_runtime::measure::stats::histogram(),
        post_latency: xorflow_runtime::measure::stats::histogram(),
        by_second: by_second.then(|| PerSecond::new(start.clone())),
    });
    stage_names
}

/// What the snapshot stages `stage_names` of a finished run buffered.
fn snapshot_result(
    report: &RunReport,
    stage_names: &[String],
    sp: &SnapshotParams,
) -> SnapshotResult {
    let sink = report.vertex("sink").expect("sink vertex");
    SnapshotResult {
        at: sp.at,
        pause_ms: sp.pause.as_secs_f64() * 1e3,
        stages: stage_names
            .iter()
            .map(|name| {
                let v = report.vertex(name).expect("stage vertex");
                let buffered = v.counter(BUFFERED_ELEMENTS);
                let total_ns = v.counter(BUFFERED_NS);
                StageBuffering {
                    stage: name.clone(),
                    snapshots: v.counter(SNAPSHOTS),
                    buffered_elements: buffered,
                    total_buffering_ms: total_ns as f64 / 1e6,
                    avg_buffering_ms: (buffered > 0)
                        .then(|| total_ns as f64 / buffered as f64 / 1e6),
                    p99_buffering_ms: v.histogram_us(BUFFERING_HISTOGRAM, 0.99).map(|u| u / 1e3),
                }
            })
            .collect(),
        post_snapshot_latency: Percentiles::of(sink, POST_SNAPSHOT_LATENCY),
    }
}

/// The result of a finished run of `p`.
fn result(
    p: &ChainParams,
    report: &RunReport,
    stage_names: &[String],
    snapshot: Option<&SnapshotParams>,
) -> ChainResult {
    let sink = report.vertex("sink").expect("sink vertex");
    let source = report.vertex("source").expect("source vertex");
    let n = report.source_elements();
    let elapsed_s = report.elapsed.as_secs_f64();
    let per_s = |x: f64| x / elapsed_s.max(1e-9);
    let busy = report.tracker.as_ref().map(|t| t.busy_s);
    let first_tracker_process = report.processes - report.tracker_processes;
    let tracker_sum = |f: fn(&xorflow_runtime::report::ProcessReport) -> f64| {
        (report.tracker_processes > 0).then(|| {
            per_s(
                report
                    .per_process
                    .iter()
                    .filter(|pr| pr.process >= first_tracker_process)
                    .map(f)
                    .sum::<f64>(),
            )
        })
    };
    let service = report.traffic.service().messages;
    let (element_p99_ms_by_second, element_count_by_second) =
        crate::sustainable::series::read(sink, ELEMENT_LATENCY_BY_SECOND);
    ChainResult {
        measures: ChainMeasures {
            stages: p.stages,
            workers: p.runtime.workers,
            granularity: p.runtime.granularity,
            tracking: p.runtime.tracking.name().into(),
            elements: n,
            warmup: p.warmup,
            rate: p.rate,
            achieved_rate: source.measured.rate(),
            element_latency: Percentiles::of(sink, ELEMENT_LATENCY),
            latency_p50_us: sink.latency_us(0.5),
            latency_p95_us: sink.latency_us(0.95),
            latency_p99_us: sink.latency_us(0.99),
            notification_latency_any: Percentiles::of(sink, NOTIFICATION_LATENCY_ANY),
            notification_latency_frontier: Percentiles::of(sink, NOTIFICATION_LATENCY_FRONTIER),
            notification_clock: sink.clock_check(),
            element_latency_clock: (sink.histograms.contains_key(ELEMENT_LATENCY_CLOCK))
                .then(|| Percentiles::of(sink, ELEMENT_LATENCY_CLOCK)),
            element_clock: sink.span_check(ELEMENT_LATENCY_CLOCK),
            elapsed_s,
            elements_per_s: report.elements_per_s(),
            elements_received: p.keyed.is_none().then_some(sink.elements_in),
            element_p99_ms_by_second,
            element_count_by_second,
        },
        processes: report.processes,
        tracker_processes: report.tracker_processes,
        tracker_shards: report.tracker_shards,
        tracker_layout: p.runtime.tracker_layout.name().to_string(),
        ack_flush_count: p.runtime.ack_flush_count,
        ack_multiplier: p.runtime.ack_multiplier,
        sink_rate: sink.measured.rate(),
        latency_probe: p.runtime.latency_probe,
        cpu: xorflow_runtime::measure::cpu_report::CpuReport::of(report),
        service_messages_per_1000: service as f64 * 1000.0 / n.max(1) as f64,
        traffic: (&report.traffic).into(),
        traffic_per_process: report
            .traffic_per_process()
            .iter()
            .map(TrafficByKind::from)
            .collect(),
        tracker_busy_s: busy,
        tracker_pieces_applied: report.tracker.as_ref().map(|t| t.flushes_applied),
        tracker_busy_per_s: busy.map(per_s),
        tracker_process_cpu_per_s: tracker_sum(|pr| pr.cpu_s),
        tracker_process_wait_per_s: tracker_sum(|pr| pr.run_queue_wait_s),
        cpu_per_s: (!report.per_process.is_empty())
            .then(|| per_s(report.per_process.iter().map(|pr| pr.cpu_s).sum::<f64>())),
        snapshot: snapshot.map(|sp| snapshot_result(report, stage_names, sp)),
        checkpoints: CheckpointMeasures::of(report),
    }
}

/// One line of text for a result.
pub fn describe(r: &ChainResult) -> String {
    let m = &r.measures;
    let mut lat = match (m.latency_p50_us, m.latency_p99_us) {
        (Some(a), Some(b)) => format!("notification latency p50 {a:.1} us p99 {b:.1} us"),
        _ => "notification latency n/a".into(),
    };
    let any = &m.notification_latency_any;
    if let (Some(a), Some(b)) = (any.p50_us, any.p99_us) {
        lat += &format!(" (from the last arrival at any instance: p50 {a:.1} us p99 {b:.1} us");
        let f = &m.notification_latency_frontier;
        if let (Some(a), Some(b)) = (f.p50_us, f.p99_us) {
            lat += &format!("; from the last arrival of it or an earlier substream: p50 {a:.1} us p99 {b:.1} us");
        }
        lat += ")";
    }
    if let Some(c) = &m.notification_clock {
        lat += &format!(
            " [clock-aligned across processes: bound <= {:.1} us, {} of {} samples off the \
             same-host truth by more]",
            c.bound_us_max, c.bound_exceeded_same_host, c.converted
        );
    }
    if let (Some(a), Some(b)) = (m.element_latency.p50_us, m.element_latency.p99_us) {
        lat += &format!("; element latency p50 {a:.1} us p99 {b:.1} us");
    }
    if let (Some(l), Some(c)) = (&m.element_latency_clock, &m.element_clock) {
        if let (Some(a), Some(b)) = (l.p50_us, l.p99_us) {
            lat += &format!(
                " (clock-aligned, {} samples: p50 {a:.1} us p99 {b:.1} us, bound <= {:.1} us, {} \
                 off the same-host truth by more)",
                c.converted, c.bound_us_max, c.bound_exceeded_same_host
            );
        }
    }
    if m.rate > 0.0 {
        if let Some(a) = m.achieved_rate {
            lat += &format!("; achieved {a:.0} of {:.0} elements/s", m.rate);
        }
    }
    if let Some(s) = &r.snapshot {
        let buffered: u64 = s.stages.iter().map(|x| x.buffered_elements).sum();
        let total: f64 = s.stages.iter().map(|x| x.total_buffering_ms).sum();
        lat += &format!(
            "; snapshot at {} ({} ms pause): {buffered} elements buffered over all stages, \
             {total:.1} ms in total",
            s.at, s.pause_ms
        );
    }
    format!(
        "chain K={} N={} P={} g={} tracking={}{}: {} elements in {:.3} s = {:.2} M elements/s; {lat}; \
         {:.3} service messages per 1000 elements ({})",
        m.stages,
        r.processes,
        m.workers,
        m.granularity,
        m.tracking,
        if m.tracking == "tracker" {
            format!(
                " shards={}{}{}{}",
                r.tracker_shards,
                if r.tracker_layout == "replicated" {
                    " replicated"
                } else {
                    ""
                },
                if r.tracker_processes > 0 {
                    format!(" in {} tracker processes", r.tracker_processes)
                } else {
                    String::new()
                },
                if r.ack_flush_count == 0 { " unbatched" } else { "" }
            )
        } else {
            String::new()
        },
        m.elements,
        m.elapsed_s,
        m.elements_per_s / 1e6,
        r.service_messages_per_1000,
        traffic_line(&r.traffic)
    )
}

/// `kind messages/bytes` for every service kind with traffic.
fn traffic_line(t: &TrafficByKind) -> String {
    let parts: Vec<String> = [
        ("ack", t.ack),
        ("heartbeat", t.heartbeat),
        ("frontier", t.frontier),
        ("marker", t.marker),
        ("end_of_stream", t.end_of_stream),
        ("control", t.control),
    ]
    .into_iter()
    .filter(|(_, c)| c.messages > 0)
    .map(|(k, c)| format!("{k} {}/{}B", c.messages, c.bytes))
    .collect();
    if parts.is_empty() {
        "no service messages".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn span_samples_take_whole_rounds_of_sources_and_name_each_ones_process() {
        // 4 sources on 2 processes of 2 workers: sources 0, 1 in process 0; 2, 3 in process 1.
        let mut s = super::ChainSpans::new(1_000, 4, 2);
        assert_eq!(s.every, 64);
        let processes: Vec<usize> = (0..8).map(|k| s.source_process(k)).collect();
        assert_eq!(processes, vec![0, 0, 1, 1, 0, 0, 1, 1]);
        for k in 0..1_000 {
            s.record(k, k, k + 10);
        }
        // Rounds 0, 64, 128, 192 (elements 0..4, 256..260, 512..516, 768..772).
        let kept: Vec<(u32, u64)> = s
            .log
            .records
            .iter()
            .map(|r| (r.start_process, r.start_ns))
            .collect();
        assert_eq!(kept.len(), 16);
        assert_eq!(&kept[..4], &[(0, 0), (0, 1), (1, 2), (1, 3)]);
        assert_eq!(kept[4], (0, 256));
        // A long run is sampled more sparsely, so the log keeps half its capacity at most.
        assert_eq!(super::ChainSpans::new(1 << 30, 4, 2).every, 8_192);
    }

    use super::*;

    fn source(k: u64, start: &Arc<OnceLock<u64>>) -> ChainSource {
        ChainSource {
            next: k,
            step: 2,
            remaining: 100,
            emitted: 0,
            rate: 1000.0,
            start: start.clone(),
            schedule: None,
            numbered: false,
        }
    }

    #[test]
    fn the_sources_of_a_process_share_one_schedule() {
        let start = Arc::new(OnceLock::new());
        let (mut a, mut b) = (source(0, &start), source(1, &start));
        // b is first polled 2 ms after a: its elements are still due on a's schedule.
        let (sa, sb) = (a.schedule(1_000), b.schedule(2_001_000));
        assert_eq!(sa.due_ns(0), 1_000);
        assert_eq!(sb.due_ns(0), 1_000, "b's first element is due when a's is");
        assert_eq!(sb.due_ns(3), 1_000 + 3_000_000);
        assert_eq!(
            a.schedule(9_999_999).due_ns(0),
            1_000,
            "fixed at the first poll"
        );
    }
}
