//! Runtime configuration: workers, batching, backpressure and tracking knobs.

pub mod cluster;
pub mod delay;
pub mod regions;
pub mod sampling;

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The command-line name of a value of any option enum (`clap::ValueEnum`): the one way reports,
/// messages and rendered arguments name such a value (`--tracking markers`, `--ack-flush-on-idle
/// false`), so the name is declared once, on the enum.
pub trait ValueName {
    /// The name clap parses (`tracker`, `network-thread`, `true`).
    fn name(&self) -> &'static str;
}

impl<T: clap::ValueEnum> ValueName for T {
    fn name(&self) -> &'static str {
        // clap hands the name out borrowed; each distinct name is kept once, for good (a few
        // dozen bytes over all option enums).
        static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
        let Some(v) = self.to_possible_value() else {
            return "";
        };
        let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&n) = names.get(v.get_name()) {
            return n;
        }
        let n: &'static str = Box::leak(v.get_name().to_owned().into_boxed_str());
        names.insert(n);
        n
    }
}

/// The value of option enum `T` named `s`, outside clap (a list in an option, a job file):
/// `unknown WHAT 's' (expected one of: ...)` listing the names clap knows.
///
/// # Errors
/// `s` names no value.
pub fn parse_value<T: clap::ValueEnum>(what: &str, s: &str) -> Result<T, String> {
    T::from_str(s, false).map_err(|_| {
        let names: Vec<&str> = T::value_variants().iter().map(ValueName::name).collect();
        format!(
            "unknown {what} '{s}' (expected one of: {})",
            names.join(", ")
        )
    })
}

/// A listening address given as `HOST:PORT`, a name (`localhost:9464`) or an IP address
/// (`0.0.0.0:9464`, `[::1]:9464`): the first address the name resolves to.
///
/// # Errors
/// No port, or a name that does not resolve, saying which.
pub fn parse_listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    if s.rsplit_once(':')
        .is_none_or(|(_, port)| port.parse::<u16>().is_err())
    {
        return Err(format!(
            "'{s}': expected HOST:PORT, e.g. 127.0.0.1:9464 or localhost:9464"
        ));
    }
    match s.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(format!("'{s}' resolves to no address")),
        Err(e) => Err(format!("cannot resolve '{s}': {e}")),
    }
}

/// How completeness is tracked (`--tracking`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TrackingMode {
    /// trAcker: XOR tags, local ackers and a centralized tracker (docs/design.md, "trAcker
    /// requirements" 1-6).
    #[default]
    Tracker,
    /// In-band markers (punctuations): sources send `Marker(t)` on every output channel each time
    /// their heartbeat passes a multiple of the granularity; every instance aligns the minimum
    /// over its input channels and forwards it to all downstream instances (docs/design.md,
    /// "Markers": the baseline trAcker is measured against). Rejected for cyclic graphs.
    Markers,
    /// No tracking: windows close only at end of stream (to measure tracking overhead).
    None,
}

/// What a worker going idle does with its acks (`--ack-flush-on-idle`; `progress/flush_policy.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AckOnIdle {
    /// `true`: hand them over and flush at once whatever can move a frontier
    /// (`progress/idle_gate.rs`); the rest waits in the process acker for the next such flush
    /// or the interval. The tracker sees the same acks, in fewer flushes.
    #[default]
    #[value(name = "true")]
    Useful,
    /// `always`: hand them over and flush the process acker at once, every time: a flush per
    /// idle moment. Where parking costs more than a flush (this 2-core VM), the flushing keeps
    /// workers awake for the next element (docs/cpu.md, "Idle flushes that can move a frontier").
    #[value(name = "always")]
    Always,
    /// `false`: hand them over; only `--ack-flush-interval` and `--ack-flush-count` flush
    /// (FlameStream's batching, fewest messages).
    #[value(name = "false")]
    Never,
}

/// Where the tracker shards run and how frontiers reach the workers (`--tracker-layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TrackerLayout {
    /// Each shard runs in one process (`execute/placement.rs`); every process acker sends that
    /// shard its pieces, and the shard sends the frontiers that moved to every worker process.
    /// A notification for a worker in another process takes two network hops (its sink's ack
    /// there, the frontier back). The layout of dedicated tracker processes.
    Central,
    /// Every worker process runs a replica of every shard; each process acker sends its pieces
    /// to all of them, and a replica notifies only its own process's workers. A notification
    /// takes one network hop (like timely's progress broadcast), at the price of each process
    /// applying every process's acks: tracker work grows with the number of processes, so
    /// with many processes sharded central layouts spread it better. Not with
    /// `--tracker-processes`; the default without them (`args.rs`).
    #[default]
    Replicated,
}

/// Largest `--timer-slack` the command line accepts (flush timeouts are 1 ms by default): a
/// guard against a mistyped unit, checked by `EngineArgs::validate`. The runtime itself takes any
/// slack (tests use 400 ms to see a latency budget's effect: `tests/engine/dataflow.rs`).
pub const MAX_TIMER_SLACK: Duration = Duration::from_millis(10);
/// Largest `--source-delay` the command line takes (a guard against a mistyped unit, as
/// [`MAX_TIMER_SLACK`]): a paced source's element leaves at most this late.
pub const MAX_SOURCE_DELAY: Duration = Duration::from_secs(1);
/// Most worker threads per process: far more than the cores of any machine this runs on.
pub const MAX_WORKERS: usize = 256;
/// Most worker threads over all processes of a job.
pub const MAX_TOTAL_WORKERS: usize = 1024;
/// Largest channel capacity, batches.
pub const MAX_CHANNEL_CAPACITY: usize = 1 << 16;
/// Largest batch, elements.
pub const MAX_BATCH_SIZE: usize = 1 << 20;
/// Most channel slots one edge may preallocate. Every (sender, receiver) pair of worker threads
/// of an edge has its own queue of `channel_capacity` slots, allocated and initialised at start
/// (about 80 bytes each for a batch), so an edge costs total workers² × capacity slots: the
/// bound, 4 Mi slots (about 320 MiB), admits 256 workers at the default capacity of 64 but not the
/// tens of gigabytes a typo in `--workers` or `--channel-capacity` used to allocate.
pub const MAX_EDGE_SLOTS: u64 = 1 << 22;

/// Configuration of one run. `Default` gives the values the CLI uses (it is built from the
/// command line's defaults, `args.rs`).
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Worker threads P (each runs an instance of every vertex). At least 1.
    pub workers: usize,
    /// Elements per batch before it is sent (max batch size).
    pub batch_size: usize,
    /// Capacity of each channel between two vertex instances, in batches (backpressure bound).
    pub channel_capacity: usize,
    /// Largest credit window of a channel between processes, in batches (`--max-credit-window`;
    /// `None`: [`RuntimeConfig::max_credit_window`] picks one). A remote channel starts with
    /// `channel_capacity` credits and its receiver grows the window towards the link's
    /// bandwidth-delay product (`net/credit.rs`).
    pub max_credit_window: Option<usize>,
    /// A non-empty batch is sent after this long even if not full (flush timeout).
    pub flush_timeout: Duration,
    /// Completeness tracking.
    pub tracking: TrackingMode,
    /// Tracking granularity g: time units per slot (substream).
    pub granularity: u64,
    /// The local acker flushes at least this often while it holds updates.
    pub ack_flush_interval: Duration,
    /// The local acker flushes after this many updates (0: unbatched, every ack is sent at once
    /// as its own message).
    pub ack_flush_count: usize,
    /// What a worker going idle does with its acks: flush what can move a frontier at once
    /// (the default), flush everything at once, or leave them to the interval and the count.
    pub ack_flush_on_idle: AckOnIdle,
    /// A worker going idle sends its partial batches at once (lowest latency at low load, but a
    /// batch and a wake-up of its receiver per element then); `false`: a partial batch leaves
    /// only when it is full or `flush_timeout` old, as Flink's buffer timeout: fewer, fuller
    /// batches and less CPU per element at low load, at up to the timeout's latency per
    /// exchange (docs/cpu.md, "Batching at low load"). With `false`, a batch for a vertex on the
    /// same worker also leaves when the worker goes idle if it falls due within `timer_slack`:
    /// a park would overshoot that far, so holding it saves no wake-up (`channel::Flush::Idle`).
    pub batch_flush_on_idle: bool,
    /// Operator chaining: an element-wise vertex (`map`, `filter`, `flat_map`) fed by a forward
    /// edge runs inside its producer's step, with no queue or batch tag between them (Flink's
    /// operator chaining; `port/chained.rs`). Its CPU is then its producer's in the per-vertex
    /// accounting; `false` runs every vertex on its own (docs/cpu.md, "Operator chaining").
    pub chaining: bool,
    /// Under trAcker, a window or sink fed by an exchange gets a tracking component per
    /// instance, so each instance's frontier waits only for what is sent to it (one network
    /// hop across processes instead of a round trip; docs/wan.md, "Instance frontiers").
    pub instance_frontiers: bool,
    /// How late a worker's timed waits may wake (`--timer-slack`; docs/cpu.md): 1 us for
    /// precise schedules and flush timeouts, Linux's 50 us for fewer timer wake-ups.
    pub timer_slack: Duration,
    /// How late a paced source may be polled when its elements come closer together than this
    /// (`--source-delay`; `operators/source_pace.rs`): one wake-up then emits about rate x delay
    /// elements instead of one, and element latency grows by at most this. Zero: every element
    /// at its due time.
    pub source_delay: Duration,
    /// Self-cancelling random acks added per real ack: 2 × this (the tracker load of the
    /// scalability experiment, docs/bench-stand.md: 1x/5x/9x/17x = 0/2/4/8).
    pub ack_multiplier: usize,
    /// Tracker shards S: slot `s` is tracked by shard `s mod S`.
    pub tracker_shards: usize,
    /// Where the shards run: one process each, or replicated in every worker process.
    pub tracker_layout: TrackerLayout,
    /// With the replicated layout: one replica per region instead of one per worker process
    /// (`--tracker-regions`; `None`: every worker process hosts one). The first process of a
    /// region hosts its replica and notifies the region's other processes with frontier
    /// frames (`regions.rs`).
    pub tracker_regions: Option<regions::TrackerRegions>,
    /// Processes and how they find each other.
    pub cluster: cluster::ClusterConfig,
    /// The job's own parameters that every process must agree on (window sizes, input, ...):
    /// hashed into the job id the handshake compares, with the graph and the runtime knobs.
    pub job_key: String,
    /// Event-time units per second (1: seconds, 1000: milliseconds), for showing times as times
    /// and lags in seconds on the status page (`measure/live/`); `None`: unknown, shown as
    /// numbers. Set by the job, which knows what its times are.
    pub time_per_second: Option<u64>,
    /// Sinks record every slot's last arrival to measure notification latency (a compare and a
    /// store per element; windows measure per window and always do). Off for pure throughput runs.
    pub latency_probe: bool,
    /// Which slots the probe measures (`None`: [`sampling::Sampling::auto`] for
    /// the granularity).
    pub latency_sample: Option<sampling::Sampling>,
    /// Event logging on the runtime's channels (`VERTEX.in`, `SOURCE.out`; the Cloudprofiler
    /// paper's handlers, `crates/measure/src/log`); `None`: off, nothing is checked per batch.
    pub event_log: Option<xorflow_measure::log::LogConfig>,
    /// Serve live metrics (Prometheus, `/metrics`) and the status page (`/`) here
    /// (`measure/live/`); `None`: off.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Warm-up: elements with a smaller time (time units) are processed like any other but left
    /// out of measurements (notification latency at sinks, the measured spans of sources and
    /// sinks). 0: everything is measured.
    pub warmup_until: u64,
    /// Benchmarks only: every stateful instance's snapshot also takes this long on its worker
    /// thread (a synchronous snapshot phase of a larger state, on top of the real one: `bench
    /// alignment`). `None` in jobs.
    pub snapshot_work: Option<Duration>,
    /// Where keyed state lives (memory or disk) and the disk cache's policy (docs/state.md).
    pub state: xorflow_state::StateConfig,
    /// The form windows keep their contents in: fold-left or retain-all (the changelog thesis).
    pub window_state: xorflow_state::window::WindowForm,
    /// Checkpoint epochs: sources advance their epoch this often, and trAcker tracks epochs
    /// beside event time (`crates/tracking/src/epochs.rs`), or batches carry them as barriers
    /// (tracking `markers`: `progress/cut.rs`). `None`: no epochs.
    pub checkpoint_interval: Option<Duration>,
    /// Where checkpoints are written (with a checkpoint interval); `None`: epochs are tracked,
    /// nothing is written.
    pub checkpoint_dir: Option<std::path::PathBuf>,
    /// Checkpoints kept (the newest ones); older ones are deleted.
    pub checkpoints_retained: usize,
    /// Continue from the newest usable checkpoint in `checkpoint_dir` (`crate::checkpoint`).
    pub resume: bool,
    /// Restarts from the last checkpoint after a lost process (`execute/restart.rs`).
    pub restart_attempts: usize,
    /// How trAcker's checkpoints cut a stateful instance's input (`--checkpoint-cut`).
    pub checkpoint_cut: CheckpointCut,
    /// On-disk stores of a checkpointed job keep a savepoint per checkpoint and a restore rolls
    /// them back to it when it can (`xorflow_state::local`); false: always from the checkpoint
    /// store.
    pub local_recovery: bool,
    /// The process ends when the run does (the command line sets this): stateful operators
    /// leave their in-memory state (keyed values, timers, window contents) to the operating
    /// system at the end instead of freeing it value by value, as clang's `-disable-free` leaves
    /// a compiler's memory to the exit. Freeing q18's 400,000 keys' rows, and the allocator
    /// collecting the freed pages as the worker threads ended, took a fifth of its CPU
    /// (docs/cpu.md, "State left to the exit"). On-disk stores are still removed. `false` (the
    /// default: a library, the tests and the lab run many jobs in one process) frees it all.
    pub leave_state_to_exit: bool,
}

impl RuntimeConfig {
    /// Checks the configuration.
    ///
    /// # Errors
    /// A message naming the first invalid field.
    pub fn validate(&self) -> Result<(), String> {
        if self.granularity == 0 {
            return Err("granularity must be at least 1".into());
        }
        if self.tracker_shards == 0 || self.tracker_shards > 1024 {
            return Err(format!(
                "--tracker-shards must be between 1 and 1024, got {}",
                self.tracker_shards
            ));
        }
        if self.ack_multiplier > 1000 {
            return Err(format!(
                "--ack-multiplier {} is more than 1000",
                self.ack_multiplier
            ));
        }
        let tp = self.cluster.tracker_processes;
        if tp > 0 && self.tracking != TrackingMode::Tracker {
            return Err(format!(
                "--tracker-processes {tp} needs --tracking tracker (got '{}')",
                self.tracking.name()
            ));
        }
        if tp > 0 && self.tracker_layout == TrackerLayout::Replicated {
            return Err(format!(
                "--tracker-processes {tp} cannot go with --tracker-layout replicated: replicas \
                 run in the worker processes"
            ));
        }
        if tp > self.tracker_shards {
            return Err(format!(
                "--tracker-processes {tp} is more than --tracker-shards {}: a tracker process \
                 would host no shard",
                self.tracker_shards
            ));
        }
        self.cluster.validate()?;
        // After the cluster: the regions are checked against the hostfile's process count.
        self.validate_regions()?;
        self.validate_checkpoints()?;
        self.validate_sizes()
    }

    /// `--tracker-regions`: with trAcker's replicated layout, covering the worker processes.
    fn validate_regions(&self) -> Result<(), String> {
        let Some(r) = &self.tracker_regions else {
            return Ok(());
        };
        if self.tracker_layout != TrackerLayout::Replicated
            || self.tracking != TrackingMode::Tracker
        {
            return Err(format!(
                "--tracker-regions {r} needs --tracking tracker with the replicated layout (got \
                 --tracking {} --tracker-layout {})",
                self.tracking.name(),
                self.tracker_layout.name()
            ));
        }
        r.check(self.cluster.launch_processes())
    }

    /// Checkpoints need trAcker (the cut is its epoch frontier) and, for now, one process.
    fn validate_checkpoints(&self) -> Result<(), String> {
        if self.resume && (self.checkpoint_interval.is_none() || self.checkpoint_dir.is_none()) {
            return Err(
                "--resume needs --checkpoint-interval (and the --checkpoint-dir of the run to \
                 continue)"
                    .into(),
            );
        }
        if self.checkpoint_interval.is_none() {
            if self.state.changelog.is_some() {
                return Err("--state-changelog needs --checkpoint-interval and \
                            --checkpoint-dir: checkpoints record the changelog's ranges"
                    .into());
            }
            return Ok(());
        }
        if self.checkpoint_interval.is_some_and(|i| i.is_zero()) {
            return Err("--checkpoint-interval must be more than 0 (e.g. 1s)".into());
        }
        if self.tracking == TrackingMode::None {
            return Err(
                "--checkpoint-interval needs --tracking tracker (trAcker's epoch frontiers cut \
                 the checkpoints) or markers (aligned barriers); got 'none'"
                    .into(),
            );
        }
        if self.checkpoints_retained == 0 {
            return Err("--checkpoints-retained must be at least 1".into());
        }
        self.validate_changelog()
    }

    /// Changelog state mirrors the on-disk store's writes, and a checkpoint records the live
    /// store's range of the changelog, which cannot state an older version.
    fn validate_changelog(&self) -> Result<(), String> {
        if self.state.changelog.is_none() {
            return Ok(());
        }
        if self.state.backend != xorflow_state::BackendKind::Disk {
            return Err(
                "--state-changelog mirrors the on-disk store's writes: it needs \
                        --state-backend disk"
                    .into(),
            );
        }
        if self.checkpoint_cut == CheckpointCut::Versioned {
            return Err(
                "--state-changelog records the live store's range of the changelog, \
                        which cannot state the older version a versioned cut snapshots: use \
                        --checkpoint-cut buffered"
                    .into(),
            );
        }
        Ok(())
    }

    /// Worker threads over all processes (dedicated tracker processes run none).
    pub fn total_workers(&self) -> usize {
        self.workers.saturating_mul(self.cluster.launch_processes())
    }

    /// Channel slots one edge preallocates over the job: total workers² × capacity.
    pub fn edge_slots(&self) -> u64 {
        let w = self.total_workers() as u64;
        w.saturating_mul(w)
            .saturating_mul(self.channel_capacity as u64)
    }

    /// The largest credit window of a remote channel, batches: `--max-credit-window`, or 16 x
    /// the channel capacity (1024 batches at the default 64: the window a 100 ms round trip at
    /// 55,000 events/s needs, docs/wan.md) as far as the job's remote queues, allocated at start
    /// at this size, fit in [`MAX_EDGE_SLOTS`] per edge. Never below the capacity.
    pub fn max_credit_window(&self) -> usize {
        let w = (self.total_workers() as u64).max(1);
        let fit = (MAX_EDGE_SLOTS / w.saturating_mul(w)) as usize;
        self.max_credit_window
            .unwrap_or_else(|| self.channel_capacity.saturating_mul(16).min(fit))
            .max(self.channel_capacity)
    }

    /// The sizes that cost memory: each within its bound, and together within
    /// [`MAX_EDGE_SLOTS`], so a run never starts by allocating more than the machine has.
    fn validate_sizes(&self) -> Result<(), String> {
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(format!(
                "--workers {} is not between 1 and {MAX_WORKERS} (worker threads per process)",
                self.workers
            ));
        }
        if !(1..=MAX_BATCH_SIZE).contains(&self.batch_size) {
            return Err(format!(
                "--batch-size {}: the batch size must be between 1 and {MAX_BATCH_SIZE} elements",
                self.batch_size
            ));
        }
        if !(1..=MAX_CHANNEL_CAPACITY).contains(&self.channel_capacity) {
            return Err(format!(
                "--channel-capacity {}: the channel capacity must be between 1 and \
                 {MAX_CHANNEL_CAPACITY} batches",
                self.channel_capacity
            ));
        }
        let total = self.total_workers();
        if total > MAX_TOTAL_WORKERS {
            return Err(format!(
                "--workers {} in {} worker processes makes {total} workers in all, more than \
                 {MAX_TOTAL_WORKERS}",
                self.workers,
                self.cluster.launch_processes()
            ));
        }
        let w = total as u64;
        if let Some(m) = self.max_credit_window {
            if !(1..=MAX_CHANNEL_CAPACITY).contains(&m) {
                return Err(format!(
                    "--max-credit-window {m}: the window must be between 1 and \
                     {MAX_CHANNEL_CAPACITY} batches"
                ));
            }
            if w * w * m as u64 > MAX_EDGE_SLOTS {
                return Err(format!(
                    "{total} workers in all and --max-credit-window {m} make {total} x {total} \
                     x {m} = {} remote channel slots per edge, more than {MAX_EDGE_SLOTS} (each \
                     is allocated at start): use a smaller window",
                    w * w * m as u64
                ));
            }
        }
        if self.edge_slots() > MAX_EDGE_SLOTS {
            return Err(format!(
                "{total} workers in all and --channel-capacity {} make {total} x {total} x {} = \
                 {} channel slots per edge, more than {MAX_EDGE_SLOTS} (each is allocated at \
                 start): use fewer workers or a smaller capacity",
                self.channel_capacity,
                self.channel_capacity,
                self.edge_slots()
            ));
        }
        Ok(())
    }
}

/// How a stateful instance keeps a checkpoint epoch's state apart from the next epoch's input
/// while trAcker has not yet said the epoch is complete there (docs/state.md, "The cut").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckpointCut {
    /// The trAcker paper's cut: batches of the next epoch wait, unprocessed, until the snapshot.
    #[default]
    Buffered,
    /// Versioned state: batches of the next epoch are processed at once; the instance keeps the
    /// older version of what they change until the snapshot (fold-left windows and sinks; an
    /// operator that keeps no versions buffers).
    Versioned,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: `--metrics-addr localhost:9464` refused (an IP address only), and a bad
    /// address accepted.
    #[test]
    fn listen_addresses_take_names_and_ip_addresses() {
        assert_eq!(parse_listen_addr("0.0.0.0:9464").unwrap().port(), 9464);
        let local = parse_listen_addr("localhost:9464").unwrap();
        assert!(local.ip().is_loopback() && local.port() == 9464, "{local}");
        assert!(parse_listen_addr("localhost")
            .unwrap_err()
            .contains("HOST:PORT"));
        assert!(parse_listen_addr("localhost:x")
            .unwrap_err()
            .contains("HOST:PORT"));
    }
}
