//! The engine's command-line options, declared once: every program that runs a dataflow (the
//! CLI's jobs and benchmarks) flattens [`EngineArgs`] into its own options and converts it with
//! [`EngineArgs::runtime`]; a program that starts others (the bench stand) builds one and
//! renders it back as arguments with [`EngineArgs::to_argv`].

use crate::net::cluster::{ClusterConfig, Launch};
use crate::net::delay::DelayConfig;
use crate::{RuntimeConfig, TrackingMode};
use clap::{Args, CommandFactory, FromArgMatches, Parser};
use std::fmt::Display;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

pub use crate::config::{MAX_SOURCE_DELAY, MAX_TIMER_SLACK};

/// How often process 0 restarts a job that lost a process, when `--restart-attempts` is not
/// given.
pub const DEFAULT_RESTART_ATTEMPTS: usize = 3;

/// Engine knobs shared by jobs and benchmarks (`--workers`, `--tracking`, `--processes`, ...).
///
/// Each option sits under a help heading (cluster, checkpoints and recovery, monitoring, engine
/// tuning, experiments); the tuning and experiment knobs are left out of the short help
/// (`--help`) and listed by the long one (`--help-all`).
///
/// An enum option hides clap's list of possible values in the help (its doc names them; the
/// variants' docs are the code's); a value outside the enum is refused with the list.
#[derive(Args, Clone, Debug, PartialEq, serde::Serialize)]
pub struct EngineArgs {
    /// Where keyed state lives: memory, or disk (a redb file per operator instance behind a
    /// write-back cache, for state larger than memory; docs/state.md).
    #[arg(
        help_heading = "Checkpoints and recovery",
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub state_backend: xorflow_state::BackendKind,
    /// Folder of the disk state backend's files (default: the system's temporary directory; a
    /// folder per process below it, or per job and checkpoint directory with checkpoints).
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long
    )]
    #[serde(serialize_with = "text::opt_path")]
    pub state_dir: Option<PathBuf>,
    /// With checkpoints and --state-backend disk: a restored instance rebuilds its state from the
    /// checkpoint directory even when its local file holds the restored checkpoint (by default it
    /// rolls the file back to it: local recovery, docs/state.md).
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long
    )]
    pub no_local_recovery: bool,
    /// Cut a checkpoint this often (e.g. 100ms, 1s): sources advance their epoch, and each
    /// stateful instance snapshots when trAcker says the epoch is complete there, or, with
    /// --tracking markers, when the epoch's barriers have arrived on all its inputs (aligned
    /// checkpoints, the baseline: docs/state.md). Off by default; not with --tracking none.
    #[arg(help_heading = "Checkpoints and recovery", long, value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::opt_duration")]
    pub checkpoint_interval: Option<Duration>,
    /// How trAcker's cut keeps a checkpoint epoch apart from the next one at a stateful
    /// instance: buffered (the next epoch's batches wait for the snapshot)
    /// or versioned (they are processed at once and the older state is kept until the snapshot;
    /// fold-left windows and sinks, others buffer). docs/state.md, "The cut".
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub checkpoint_cut: crate::config::CheckpointCut,
    /// Where checkpoints are written: snapshot files, a manifest per checkpoint (default with
    /// --checkpoint-interval: ./checkpoints). A directory holding an earlier run's checkpoints is
    /// refused.
    #[arg(help_heading = "Checkpoints and recovery", long)]
    #[serde(serialize_with = "text::opt_path")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Checkpoints kept (the newest); older ones and files no kept one needs are deleted.
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long,
        default_value_t = 3
    )]
    pub checkpoints_retained: usize,
    /// Continue from the newest usable checkpoint in --checkpoint-dir (after the job's process 0
    /// died): state is restored, sources resume from their recorded positions, and the output is
    /// that of a run without the failure. A corrupt or missing file makes it fall back to an
    /// older checkpoint, and say so. Needs --checkpoint-interval.
    #[arg(help_heading = "Checkpoints and recovery", long)]
    pub resume: bool,
    /// With checkpoints and --processes: when a process dies (kill -9) or goes silent past
    /// --peer-timeout, process 0 starts every process again and the job continues from the last
    /// completed checkpoint, at most this many times (default 3). Needs --checkpoint-interval.
    #[arg(help_heading = "Checkpoints and recovery", long)]
    pub restart_attempts: Option<usize>,
    /// Worker threads per process (1-256; at most 1024 over all processes).
    #[arg(help_heading = "Cluster", long, default_value_t = 2)]
    pub workers: usize,
    /// Processes on this machine (loopback), each with --workers threads; process 0 starts the
    /// others.
    #[arg(
        help_heading = "Cluster",
        long,
        default_value_t = 1,
        conflicts_with = "hostfile"
    )]
    pub processes: usize,
    /// Run on real hosts: one host:port per process; every host runs the same command with its
    /// own --process index and the same --cluster-token (both in --help-all).
    #[arg(help_heading = "Cluster", long, requires = "process")]
    #[serde(serialize_with = "text::opt_path")]
    pub hostfile: Option<PathBuf>,
    /// This process's index in the hostfile (default: $XORFLOW_PROCESS, which a Kubernetes
    /// StatefulSet sets from the pod's ordinal: deploy/k8s/).
    #[arg(
        help_heading = "Cluster",
        hide_short_help = true,
        long,
        requires = "hostfile",
        env = "XORFLOW_PROCESS"
    )]
    pub process: Option<usize>,
    /// Shared secret for a hostfile run (default: $XORFLOW_CLUSTER_TOKEN).
    #[arg(help_heading = "Cluster", hide_short_help = true, long)]
    pub cluster_token: Option<String>,
    /// Another process silent for this long is declared dead and the job fails.
    // The flag keeps its published name; "peer" here meant another process of the job.
    #[arg(help_heading = "Cluster", hide_short_help = true, long = "peer-timeout", value_name = "PEER_TIMEOUT", default_value = "5s",
          value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub process_timeout: Duration,
    /// Start-up bound: how long a process waits for the others at start (local children
    /// reporting their ports, hostfile names resolving, all processes connecting).
    #[arg(help_heading = "Cluster", hide_short_help = true, long, default_value = "30s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub startup_timeout: Duration,
    /// Event logging (docs/measurement.md): rules
    /// `PATTERN=HANDLER`, comma-separated, over the runtime's channels `VERTEX.in` (every element
    /// reaching an instance of VERTEX, id = its time) and `SOURCE.out` (every element a source
    /// emits), e.g. `*.in=xoy:1/64,events.out=xoy:1/64`; a bare HANDLER is the default. Handlers:
    /// null, id, buffered, counter[:PERIOD], xoy:X/Y, downsample:N, first-last. Off by default.
    #[arg(
        help_heading = "Monitoring",
        hide_short_help = true,
        long = "log",
        value_name = "SPEC"
    )]
    pub event_log: Option<String>,
    /// Serve live metrics and a status page on ADDR (HOST:PORT) while the job runs: Prometheus' text
    /// format on `/metrics` (per operator instance: elements in and out, CPU, backpressure,
    /// frontier and its lag; checkpoints, restarts and traffic by kind), the dataflow graph
    /// with live rates on `/` (docs/operations.md). Process `p` of a job listens on the port
    /// plus `p`; process 0's status page shows the whole job.
    #[arg(help_heading = "Monitoring", long, value_name = "ADDR",
          value_parser = crate::config::parse_listen_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Folder of the event-log files (`CHANNEL.pPROCESS.iINSTANCE.xflog`; with several
    /// processes, process 0 also writes the run's clock alignment there as `clock.json`).
    #[arg(
        help_heading = "Monitoring",
        hide_short_help = true,
        long = "log-dir",
        value_name = "DIR",
        default_value = "logs",
        requires = "event_log"
    )]
    #[serde(serialize_with = "text::path")]
    pub event_log_dir: PathBuf,
    /// Completeness tracking: tracker, markers or none.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub tracking: TrackingMode,
    /// Tracker shards: slot s is tracked by shard s mod S (shard k runs in process k mod N, or
    /// in tracker process k mod T with --tracker-processes).
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        default_value_t = 1
    )]
    pub tracker_shards: usize,
    /// Dedicated tracker processes T: processes without workers hosting the shards. Locally they
    /// are started beyond the --processes worker processes; with --hostfile they are its last T
    /// lines.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        default_value_t = 0
    )]
    pub tracker_processes: usize,
    /// Where the shards run: replicated (a replica of every shard in every worker process, fed
    /// by every process's acks: a notification takes one network hop instead of two; the
    /// default without --tracker-processes) or central (each shard in one process, which sends
    /// the frontiers to every process; the default, and the only layout, with
    /// --tracker-processes).
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::opt_value")]
    pub tracker_layout: Option<crate::config::TrackerLayout>,
    /// With the replicated layout, one tracker replica per region instead of one per worker
    /// process: regions separated by '/', processes by ',', each region's replica in its first
    /// process, which notifies the region's others with frontier frames (fewer copies of every
    /// ack across the long links, one short hop inside a region; docs/wan.md, "Tracker replicas
    /// by region"). E.g. 0,5,6/1,2,4,7/3 for the global city set's Europe, America and Tokyo.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long)]
    #[serde(serialize_with = "text::opt_display")]
    pub tracker_regions: Option<crate::config::regions::TrackerRegions>,
    /// Which thread writes frames to other processes: adaptive (a worker writes one
    /// iteration's frames itself, in one writev, when they total 64 KiB or more, and hands
    /// smaller bursts to the network thread; in a process whose only worker reads its
    /// connections, the worker writes everything), sender (the worker always writes) or
    /// network-thread (every frame handed to the network thread). See docs/distributed.md.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub net_writes: crate::net::outbox::NetWrites,
    /// Which thread reads the frames other processes send: worker (each connection is read by
    /// one of the process's workers, which waits on its sockets when idle: one wake-up per
    /// arrival instead of two) or network-thread (it reads every connection and wakes the
    /// worker a frame is for). With an injected delay (--rtt and the like) the network thread
    /// reads. See docs/distributed.md.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub net_reads: crate::net::worker_reads::NetReads,
    /// Max elements per batch (1-1048576).
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        default_value_t = 1024
    )]
    pub batch_size: usize,
    /// Capacity of each channel, in batches (backpressure bound; 1-65536). Every pair of workers
    /// has its own channel per edge, allocated at start: workers² x capacity (workers over all
    /// processes) may be at most 4194304 slots.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        default_value_t = 64
    )]
    pub channel_capacity: usize,
    /// Largest credit window of a channel between processes, in batches (1-65536). A remote
    /// channel starts with --channel-capacity credits; its receiver doubles the window while
    /// the round trip, not the receiver, limits the channel and halves it while batches queue
    /// up (docs/wan.md). Default: 16 x --channel-capacity, as far as workers² x window fits in
    /// 4194304 slots; --max-credit-window equal to --channel-capacity keeps the window fixed.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long)]
    pub max_credit_window: Option<usize>,
    /// Send a partial batch after this long (e.g. 1ms, 200us).
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value = "1ms", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub flush_timeout: Duration,
    /// Local acker flush interval.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value = "1ms", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub ack_flush_interval: Duration,
    /// Local acker flushes after this many updates (0: unbatched, every ack sent at once).
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        default_value_t = 4096
    )]
    pub ack_flush_count: usize,
    /// What a worker going idle does with its acks: true (flush at once what can move a
    /// frontier: a heartbeat passing a slot boundary, or acks of a slot the sources have
    /// passed; the rest waits for the next such flush or --ack-flush-interval), always (flush
    /// everything at once, a flush per idle moment) or false (only --ack-flush-interval and
    /// --ack-flush-count flush: fewest messages). See docs/cpu.md.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub ack_flush_on_idle: crate::config::AckOnIdle,
    /// A worker going idle sends its partial batches at once (true: lowest latency at low load,
    /// a batch per element then; false: they leave when full or --flush-timeout old, fewer
    /// wake-ups and less CPU per element at low load; docs/cpu.md). With false, batches for a
    /// vertex on the same worker still leave at idle if they fall due within --timer-slack.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value_t = true, action = clap::ArgAction::Set)]
    pub batch_flush_on_idle: bool,
    /// Operator chaining: a map, filter or flat_map fed by a forward edge runs inside its
    /// producer's step, with no queue or batch between them, as Flink chains operators (true);
    /// false runs every vertex on its own, to see each one's CPU in the per-vertex accounting
    /// (docs/cpu.md, "Operator chaining").
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value_t = true, action = clap::ArgAction::Set)]
    pub chaining: bool,
    /// Under trAcker, a window or sink fed by an exchange gets a tracking component per
    /// instance: its frontier waits only for what is sent to it, not for the acks of what its
    /// upstream sent elsewhere (across processes: one network hop instead of a round trip;
    /// docs/wan.md). false: one component per vertex, as before.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value_t = true, action = clap::ArgAction::Set)]
    pub instance_frontiers: bool,
    /// How late a worker's timed waits (a source's schedule, flush timeouts) may wake, e.g. 1us
    /// (precise, a timer interrupt per wait) or 50us (Linux's default: one wake-up for several
    /// deadlines, much less CPU at low load; docs/cpu.md).
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value = "1us", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub timer_slack: Duration,
    /// How late a paced source (a rate, a replay's speed, a generator's schedule) may emit an
    /// element when its elements come closer together than this: one wake-up then emits every
    /// element due within it, so batches grow with the load and the CPU follows the data
    /// (docs/cpu.md, "A paced source waits for company"). An element's latency grows by at most
    /// this; notification latency does not. 0s: every element at its due time.
    #[arg(help_heading = "Engine tuning", hide_short_help = true, long, default_value = "1ms", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub source_delay: Duration,
    /// Window contents: fold (one accumulator per window and key) or retain (every element,
    /// folded when the window closes); the same results.
    #[arg(
        help_heading = "Engine tuning",
        hide_short_help = true,
        long,
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::value")]
    pub window_state: xorflow_state::window::WindowForm,
    /// Wide-area delay between every pair of processes, as a round-trip time (e.g. 40ms): each
    /// frame waits half of it on arrival, FIFO per connection (in user space; docs/wan.md). Needs
    /// --processes or --hostfile.
    #[arg(help_heading = "Experiments", hide_short_help = true, long, value_parser = humantime::parse_duration,
          conflicts_with_all = ["rtt_topology", "delay_matrix"])]
    #[serde(serialize_with = "text::opt_duration")]
    pub rtt: Option<Duration>,
    /// City sets of wide-area measurements as delays: process i sits in city i of eu
    /// (Frankfurt, London, Milan, Bratislava, Madrid, Dublin, Amsterdam, Geneva), us (New York, Los
    /// Angeles, Houston, Denver, Washington, Seattle, Sunnyvale, Chicago) or global (Frankfurt, New
    /// York, San Francisco, Tokyo, Seattle, London, Amsterdam, Atlanta); at most 8 processes.
    #[arg(
        help_heading = "Experiments",
        hide_short_help = true,
        long,
        conflicts_with = "delay_matrix",
        hide_possible_values = true
    )]
    #[serde(serialize_with = "text::opt_value")]
    pub rtt_topology: Option<crate::net::delay::Topology>,
    /// Round-trip times per pair of processes from FILE: row i, column j in ms, entries RTT or
    /// RTT+-JITTER, `#` comments; square, symmetric, zero diagonal; a larger matrix serves a
    /// smaller job (docs/wan.md).
    #[arg(
        help_heading = "Experiments",
        hide_short_help = true,
        long,
        value_name = "FILE"
    )]
    #[serde(serialize_with = "text::opt_path")]
    pub delay_matrix: Option<PathBuf>,
    /// Jitter on every delayed pair's round-trip time: a frame's RTT is drawn from [RTT - J,
    /// RTT + J], frames staying in order (a 74-76 ms link: --rtt 75ms --rtt-jitter
    /// 1ms).
    #[arg(help_heading = "Experiments", hide_short_help = true, long, default_value = "0s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "text::duration")]
    pub rtt_jitter: Duration,
    /// Adds 2m self-cancelling random acks per real ack (tracker load (2m+1)x; 1x/5x/9x/17x =
    /// 0/2/4/8).
    #[arg(
        help_heading = "Experiments",
        hide_short_help = true,
        long,
        default_value_t = 0
    )]
    pub ack_multiplier: usize,
    /// Do not measure notification latency per slot at sinks (pure throughput runs).
    #[arg(help_heading = "Experiments", hide_short_help = true, long)]
    pub no_latency_probe: bool,
    /// Which slots the sinks' latency probe measures: X/Y keeps slots with slot mod Y < X (Y a
    /// power of two; the same slots on every instance), `all` every slot. Default: 1 slot in
    /// 256 / granularity, every slot from granularity 256 up.
    #[arg(help_heading = "Experiments", hide_short_help = true, long)]
    #[serde(serialize_with = "text::opt_display")]
    pub latency_sample: Option<crate::config::sampling::Sampling>,
}

/// Parses [`EngineArgs`] alone (its defaults, and arguments read back).
#[derive(Parser)]
struct EngineOnly {
    #[command(flatten)]
    engine: EngineArgs,
}

impl Default for EngineArgs {
    /// The defaults the command line declares (parsed, so they cannot drift from it; without
    /// this process's environment, so `$XORFLOW_PROCESS` is no default).
    fn default() -> Self {
        static DEFAULTS: OnceLock<EngineArgs> = OnceLock::new();
        DEFAULTS
            .get_or_init(|| {
                let mut cmd = EngineOnly::command();
                let from_env: Vec<clap::Id> = (cmd.get_arguments())
                    .filter(|a| a.get_env().is_some())
                    .map(|a| a.get_id().clone())
                    .collect();
                for id in from_env {
                    cmd = cmd.mut_arg(id, |a| a.env(None));
                }
                let matches = cmd.get_matches_from(["xorflow"]);
                EngineOnly::from_arg_matches(&matches)
                    .expect("the declared defaults parse")
                    .engine
            })
            .clone()
    }
}

impl Default for RuntimeConfig {
    /// The command line's defaults ([`EngineArgs::default`]) at granularity 1: declared once,
    /// on the options.
    fn default() -> Self {
        EngineArgs::default().runtime(1)
    }
}

impl Default for ClusterConfig {
    /// The command line's defaults, as [`RuntimeConfig::default`] has them.
    fn default() -> Self {
        RuntimeConfig::default().cluster
    }
}

impl EngineArgs {
    /// The runtime configuration these options ask for, at tracking granularity `granularity`
    /// (a job's own unit, so the job converts it).
    pub fn runtime(&self, granularity: u64) -> RuntimeConfig {
        let launch = match (&self.hostfile, self.process) {
            (Some(h), Some(p)) => Launch::Hosts {
                hostfile: h.clone(),
                process: p,
            },
            _ if self.processes + self.tracker_processes > 1 => Launch::Local {
                processes: self.processes,
            },
            _ => Launch::Single,
        };
        RuntimeConfig {
            workers: self.workers,
            batch_size: self.batch_size,
            channel_capacity: self.channel_capacity,
            max_credit_window: self.max_credit_window,
            flush_timeout: self.flush_timeout,
            tracking: self.tracking,
            granularity,
            ack_flush_interval: self.ack_flush_interval,
            ack_flush_count: self.ack_flush_count,
            ack_flush_on_idle: self.ack_flush_on_idle,
            batch_flush_on_idle: self.batch_flush_on_idle,
            chaining: self.chaining,
            instance_frontiers: self.instance_frontiers,
            timer_slack: self.timer_slack,
            source_delay: self.source_delay,
            ack_multiplier: self.ack_multiplier,
            tracker_shards: self.tracker_shards,
            tracker_layout: self
                .tracker_layout
                .unwrap_or(if self.tracker_processes > 0 {
                    crate::config::TrackerLayout::Central
                } else {
                    crate::config::TrackerLayout::Replicated
                }),
            tracker_regions: self.tracker_regions.clone(),
            latency_probe: !self.no_latency_probe,
            latency_sample: self.latency_sample,
            metrics_addr: self.metrics_addr,
            event_log: self.event_log.as_deref().and_then(|s| {
                // validate() reports a bad spec; a config built without it logs nothing.
                xorflow_measure::log::LogConfig::parse(s)
                    .ok()
                    .map(|c| c.with_dir(&self.event_log_dir))
            }),
            cluster: ClusterConfig {
                launch,
                token: self.cluster_token.clone(),
                peer_timeout: self.process_timeout,
                startup_timeout: self.startup_timeout,
                tracker_processes: self.tracker_processes,
                net_writes: self.net_writes,
                net_reads: self.net_reads,
                delay: self.delay(),
                // Not options: the transport's own settings.
                max_frame_bytes: crate::net::cluster::MAX_FRAME_BYTES,
                child_env: Vec::new(),
                clock_rounds: crate::net::clock_phase::ROUNDS,
                clock: None,
            },
            job_key: String::new(),
            time_per_second: None,
            warmup_until: 0,
            snapshot_work: None,
            state: xorflow_state::StateConfig {
                backend: self.state_backend,
                dir: self
                    .state_dir
                    .clone()
                    .unwrap_or_else(|| xorflow_state::StateConfig::default().dir),
                ..xorflow_state::StateConfig::default()
            },
            window_state: self.window_state,
            local_recovery: !self.no_local_recovery,
            leave_state_to_exit: false,
            checkpoint_cut: self.checkpoint_cut,
            checkpoint_interval: self.checkpoint_interval,
            checkpoint_dir: self.checkpoint_interval.map(|_| {
                self.checkpoint_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("checkpoints"))
            }),
            checkpoints_retained: self.checkpoints_retained,
            resume: self.resume,
            restart_attempts: self.restart_attempts.unwrap_or(DEFAULT_RESTART_ATTEMPTS),
        }
    }

    /// The delay options as the transport takes them.
    pub fn delay(&self) -> DelayConfig {
        DelayConfig::of_options(
            self.rtt,
            self.rtt_topology,
            self.delay_matrix.as_deref(),
            self.rtt_jitter,
        )
    }

    /// Checks the options: what only the command line has (the rules of options that
    /// [`EngineArgs::runtime`] does not carry over as they are), then the runtime configuration
    /// they make ([`RuntimeConfig::validate`], at granularity 1: a job checks its own
    /// granularity). Each rule lives in one of the two.
    ///
    /// # Errors
    /// A message naming the option.
    pub fn validate(&self) -> Result<(), String> {
        // `runtime()` launches a single process for 0 processes and no tracker processes.
        if self.processes == 0 {
            return Err("--processes must be at least 1".into());
        }
        // `runtime()` leaves a spec that does not parse out.
        if let Some(spec) = &self.event_log {
            xorflow_measure::log::LogConfig::parse(spec).map_err(|e| format!("--log: {e}"))?;
        }
        // A guard against a mistyped unit, for the command line only (`MAX_TIMER_SLACK`).
        if self.timer_slack > MAX_TIMER_SLACK {
            return Err(format!(
                "--timer-slack {} is over {}: a worker's schedule and flush timeouts would \
                 wake that late",
                humantime::format_duration(self.timer_slack),
                humantime::format_duration(MAX_TIMER_SLACK)
            ));
        }
        if self.source_delay > MAX_SOURCE_DELAY {
            return Err(format!(
                "--source-delay {} is over {}: a paced source's elements would leave that late",
                humantime::format_duration(self.source_delay),
                humantime::format_duration(MAX_SOURCE_DELAY)
            ));
        }
        // `runtime()` keeps the directory only with an interval; a restart continues from a
        // checkpoint: settings that would do nothing are refused, not ignored.
        if self.checkpoint_interval.is_none() {
            if self.checkpoint_dir.is_some() {
                return Err(
                    "--checkpoint-dir needs --checkpoint-interval (how often to cut one)".into(),
                );
            }
            if let Some(n) = self.restart_attempts {
                return Err(format!(
                    "--restart-attempts {n} needs --checkpoint-interval: a restarted job \
                     continues from its last checkpoint"
                ));
            }
        }

        self.runtime(1).validate()
    }

    /// The arguments that give these options back when parsed: one flag per option that differs
    /// from its default, in declaration order. Generic over the options: each field renders as
    /// it serializes (durations in humantime, enums by their clap names), under the long flag
    /// of the clap argument of the same id; a `true` switch renders bare.
    pub fn to_argv(&self) -> Vec<String> {
        let ours = self.fields();
        let defaults = EngineArgs::default().fields();
        let mut argv = Vec::new();
        for arg in EngineOnly::command().get_arguments() {
            let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else {
                continue;
            };
            let value = ours.get(id).unwrap_or(&serde_json::Value::Null);
            if defaults.get(id) == Some(value) {
                continue;
            }
            match (arg.get_action(), value) {
                (clap::ArgAction::SetTrue, serde_json::Value::Bool(true)) => {
                    argv.push(format!("--{long}"));
                }
                (clap::ArgAction::SetTrue, _) | (_, serde_json::Value::Null) => {}
                (_, serde_json::Value::String(s)) => argv.extend([format!("--{long}"), s.clone()]),
                (_, v) => argv.extend([format!("--{long}"), v.to_string()]),
            }
        }
        argv
    }

    /// Every option by its clap id (the field's name), as [`EngineArgs::to_argv`] renders it.
    fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            other => unreachable!("engine options serialize as a map: {other:?}"),
        }
    }
}

/// How [`EngineArgs`] fields that are not plain numbers, strings or booleans serialize: as the
/// text their flag takes.
mod text {
    use crate::config::ValueName;
    use serde::Serializer;
    use std::fmt::Display;
    use std::path::Path;
    use std::time::Duration;

    pub fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*d))
    }

    pub fn opt_duration<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => duration(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn value<T: clap::ValueEnum, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.name())
    }

    pub fn opt_value<T: clap::ValueEnum, S: Serializer>(
        v: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => value(v, s),
            None => s.serialize_none(),
        }
    }

    pub fn opt_display<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn path<P: AsRef<Path>, S: Serializer>(p: &P, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&p.as_ref().display())
    }

    pub fn opt_path<S: Serializer>(
        p: &Option<std::path::PathBuf>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => path(p, s),
            None => s.serialize_none(),
        }
    }
}

/// Builds an argument list flag by flag, for the programs that flatten [`EngineArgs`] into
/// options of their own ([`EngineArgs::to_argv`] renders the engine's).
#[derive(Debug, Default)]
pub struct Argv(Vec<String>);

impl Argv {
    /// `--name value` unless `value` is the default.
    pub fn value<T: Display + PartialEq>(&mut self, name: &str, value: T, default: T) {
        if value != default {
            self.push(name, value);
        }
    }

    /// `--name value` when there is a value.
    pub fn option<T: Display>(&mut self, name: &str, value: Option<T>) {
        if let Some(v) = value {
            self.push(name, v);
        }
    }

    /// `--name <humantime>` unless `value` is the default (`1s 500ms`: one argument).
    pub fn duration(&mut self, name: &str, value: Duration, default: Duration) {
        if value != default {
            self.push(name, humantime::format_duration(value));
        }
    }

    /// `--name` when `on` (a flag without a value).
    pub fn switch(&mut self, name: &str, on: bool) {
        if on {
            self.0.push(format!("--{name}"));
        }
    }

    /// Appends arguments built elsewhere (a flattened struct's).
    pub fn extend(&mut self, args: Vec<String>) {
        self.0.extend(args);
    }

    /// The arguments.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }

    fn push(&mut self, name: &str, value: impl Display) {
        self.0.push(format!("--{name}"));
        self.0.push(value.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::delay::DelaySpec;
    use proptest::prelude::*;

    fn parse(argv: &[String]) -> Result<EngineArgs, clap::Error> {
        EngineOnly::try_parse_from(std::iter::once("xorflow".to_string()).chain(argv.to_vec()))
            .map(|o| o.engine)
    }

    #[test]
    fn defaults_render_as_no_arguments_and_match_the_runtime_defaults() {
        let d = EngineArgs::default();
        assert!(d.to_argv().is_empty());
        assert_eq!(
            format!("{:?}", d.runtime(1)),
            format!("{:?}", RuntimeConfig::default())
        );
    }

    #[test]
    fn the_flag_names_are_the_published_ones() {
        let e = parse(&[
            "--peer-timeout".into(),
            "2s".into(),
            "--ack-flush-on-idle".into(),
            "false".into(),
            "--no-latency-probe".into(),
        ])
        .unwrap();
        assert_eq!(e.process_timeout, Duration::from_secs(2));
        assert!(e.ack_flush_on_idle == crate::config::AckOnIdle::Never && e.no_latency_probe);
        let c = e.runtime(7);
        assert_eq!(c.cluster.peer_timeout, Duration::from_secs(2));
        assert!(!c.latency_probe);
        assert_eq!(c.granularity, 7);
    }

    #[test]
    fn tracker_layout_defaults_to_replicated_unless_tracker_processes_host_the_shards() {
        use crate::config::TrackerLayout::{Central, Replicated};
        let layout = |tracker_processes, tracker_layout| {
            EngineArgs {
                processes: 2,
                tracker_processes,
                tracker_shards: 2,
                tracker_layout,
                ..EngineArgs::default()
            }
            .runtime(1)
        };
        assert_eq!(layout(0, None).tracker_layout, Replicated);
        assert_eq!(layout(1, None).tracker_layout, Central);
        assert_eq!(layout(0, Some(Central)).tracker_layout, Central);
        let both = layout(1, Some(Replicated));
        assert!(both
            .validate()
            .unwrap_err()
            .contains("cannot go with --tracker-layout replicated"));
        assert!(layout(1, None).validate().is_ok());
    }

    #[test]
    fn delay_options_parse_conflict_and_need_processes() {
        let args = |a: &[&str]| parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let e = args(&["--processes", "2", "--rtt", "40ms", "--rtt-jitter", "1ms"]).unwrap();
        let c = e.runtime(1).cluster;
        assert_eq!(c.delay.spec, DelaySpec::Mesh(Duration::from_millis(40)));
        assert_eq!(c.delay.jitter, Duration::from_millis(1));
        assert!(c.validate().is_ok() && e.validate().is_ok());
        let t = args(&["--processes", "4", "--rtt-topology", "global"]).unwrap();
        let m = t.runtime(1).cluster.delay.resolve(4).unwrap().unwrap();
        assert_eq!(m.rtt_ms(0, 3), 221.8);
        assert!(args(&["--rtt", "40ms", "--rtt-topology", "eu"]).is_err());
        assert!(args(&["--rtt", "40ms", "--delay-matrix", "m.txt"]).is_err());
        assert!(args(&["--rtt-topology", "asia"]).is_err());
        let single = args(&["--rtt", "40ms"]).unwrap().runtime(1).cluster;
        assert!(single.validate().unwrap_err().contains("between processes"));
        let lone_jitter = args(&["--processes", "2", "--rtt-jitter", "1ms"]).unwrap();
        assert!(lone_jitter
            .validate()
            .unwrap_err()
            .contains("--rtt-jitter needs"));
        let nine = args(&["--processes", "9", "--rtt-topology", "eu"]).unwrap();
        let err = nine.runtime(1).cluster.validate().unwrap_err();
        assert!(err.contains("8 cities"), "{err}");
        let missing = args(&["--processes", "2", "--delay-matrix", "/nonexistent/m.txt"]).unwrap();
        let err = missing.runtime(1).cluster.validate().unwrap_err();
        assert!(err.contains("/nonexistent/m.txt"), "{err}");
    }

    #[test]
    fn a_runtime_rule_answers_the_options_with_its_one_message() {
        let workers = EngineArgs {
            workers: 0,
            ..EngineArgs::default()
        };
        let e = workers.validate().unwrap_err();
        assert_eq!(e, workers.runtime(1).validate().unwrap_err());
        assert!(e.starts_with("--workers 0 is not between 1 and 256"), "{e}");
        // The slack bound guards the command line only: the runtime takes any slack.
        let slack = EngineArgs {
            timer_slack: Duration::from_millis(11),
            ..EngineArgs::default()
        };
        let e = slack.validate().unwrap_err();
        assert!(e.starts_with("--timer-slack 11ms is over 10ms"), "{e}");
        assert!(slack.runtime(1).validate().is_ok());
        let resume = EngineArgs {
            resume: true,
            ..EngineArgs::default()
        };
        let e = resume.validate().unwrap_err();
        assert_eq!(e, resume.runtime(1).validate().unwrap_err());
        assert!(e.starts_with("--resume needs --checkpoint-interval"), "{e}");
    }

    #[test]
    fn processes_choose_the_launch() {
        let local = EngineArgs {
            processes: 3,
            ..EngineArgs::default()
        };
        assert_eq!(
            local.runtime(1).cluster.launch,
            Launch::Local { processes: 3 }
        );
        let tracker_only = EngineArgs {
            tracker_processes: 1,
            ..EngineArgs::default()
        };
        assert_eq!(
            tracker_only.runtime(1).cluster.launch,
            Launch::Local { processes: 1 }
        );
        assert!(EngineArgs {
            processes: 0,
            ..EngineArgs::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn every_option_renders_under_its_own_flag() {
        let fields = EngineArgs::default().fields();
        let cmd = EngineOnly::command();
        let ids: std::collections::BTreeSet<&str> = (cmd.get_arguments())
            .filter(|a| a.get_long().is_some())
            .map(|a| a.get_id().as_str())
            .collect();
        let keys: std::collections::BTreeSet<&str> = fields.keys().map(String::as_str).collect();
        assert_eq!(keys, ids, "every field is a clap argument of the same id");
    }

    /// Texts an option's value may be written as. The strategy gives each option one of these
    /// (or one of its possible values) and keeps it when the arguments still parse, so a new
    /// option needs no edit here; one of a new syntax is covered once a sample of it is added.
    const SAMPLES: &[&str] = &[
        "0",
        "1",
        "2",
        "3",
        "7",
        "64",
        "300",
        "1500",
        "100000",
        "0s",
        "1ms",
        "250us",
        "3s",
        "1s 500ms 3ns",
        "2m",
        "a/b.txt",
        "logs2",
        "0,1/2",
        "0,5,6/1,7/2,4/3",
        "1/4",
        "1/1",
        "all",
        "x.in=id",
        "*.in=xoy:1/64,y.out=id",
        "127.0.0.1:9000",
        "secret_1",
    ];

    /// Arguments from `choices` (per option, in declaration order: none, or which candidate).
    fn argv_of(choices: &[Option<usize>]) -> Vec<String> {
        let cmd = EngineOnly::command();
        let defaults = EngineArgs::default().fields();
        let mut argv: Vec<String> = Vec::new();
        // Options kept although another one they require is missing (--hostfile before
        // --process): dropped at the end, last first, if the arguments still do not parse.
        let mut pending = Vec::new();
        for (arg, choice) in cmd.get_arguments().zip(choices) {
            let (Some(long), Some(c)) = (arg.get_long(), choice) else {
                continue;
            };
            let mut tried = argv.clone();
            tried.push(format!("--{long}"));
            if !matches!(arg.get_action(), clap::ArgAction::SetTrue) {
                let mut candidates: Vec<String> = (arg.get_possible_values().iter())
                    .map(|v| v.get_name().to_string())
                    .collect();
                if candidates.is_empty() {
                    candidates = SAMPLES.iter().map(|s| s.to_string()).collect();
                }
                tried.push(candidates[c % candidates.len()].clone());
            }
            match parse(&tried) {
                // An option at its default is left out, as to_argv leaves it out: present, it
                // can make clap accept what it refuses without it (--process needs --hostfile,
                // unless --processes, which conflicts with it, is given, even as 1).
                Ok(e)
                    if e.fields().get(arg.get_id().as_str())
                        == defaults.get(arg.get_id().as_str()) => {}
                Ok(_) => argv = tried,
                Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {
                    pending.push(argv.len());
                    argv = tried;
                }
                Err(_) => {}
            }
        }
        while parse(&argv).is_err() {
            let at = pending.pop().expect("only options kept pending fail");
            let flag_and_value = if argv.get(at + 1).is_some_and(|a| !a.starts_with("--")) {
                2
            } else {
                1
            };
            argv.drain(at..at + flag_and_value);
        }
        argv
    }

    fn engine_args() -> impl Strategy<Value = EngineArgs> {
        let options = EngineOnly::command().get_arguments().count();
        proptest::collection::vec(proptest::option::weighted(0.3, 0usize..64), options)
            .prop_map(|choices| parse(&argv_of(&choices)).expect("kept arguments parse"))
    }

    proptest! {
        #[test]
        fn rendered_arguments_parse_back_to_the_same_options(e in engine_args()) {
            let argv = e.to_argv();
            prop_assert_eq!(parse(&argv).map_err(|x| x.to_string()), Ok(e), "argv {:?}", argv);
        }
    }
}
