//! Runtime configuration: workers, batching, backpressure and tracking knobs.

use std::time::Duration;

/// How completeness is tracked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackingMode {
    /// trAcker: XOR tags, local ackers and a centralized tracker (DESIGN.md section 2).
    Tracker,
    /// In-band markers (punctuations): sources send `Marker(t)` on every output channel each time
    /// their heartbeat passes a multiple of the granularity; every instance aligns the minimum
    /// over its input channels and forwards it to all downstream instances (DESIGN.md section 2,
    /// the baseline of seed 000). Rejected for cyclic graphs.
    Markers,
    /// No tracking: windows close only at end of stream (to measure tracking overhead).
    None,
}

impl TrackingMode {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            TrackingMode::Tracker => "tracker",
            TrackingMode::Markers => "markers",
            TrackingMode::None => "none",
        }
    }
}

impl std::str::FromStr for TrackingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tracker" => Ok(TrackingMode::Tracker),
            "markers" => Ok(TrackingMode::Markers),
            "none" => Ok(TrackingMode::None),
            other => Err(format!(
                "unknown tracking mode '{other}' (expected 'tracker', 'markers' or 'none')"
            )),
        }
    }
}

/// Configuration of one run. `Default` gives the values the CLI uses.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Worker threads P (each runs an instance of every vertex). At least 1.
    pub workers: usize,
    /// Elements per batch before it is sent (max batch size).
    pub batch_size: usize,
    /// Capacity of each channel between two vertex instances, in batches (backpressure bound).
    pub channel_capacity: usize,
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
    /// A worker going idle flushes its process's acker at once (lowest notification latency at
    /// low load, but up to a message per element then); `false`: only the interval and the count
    /// trigger flushes (FlameStream's batching, fewest messages).
    pub ack_flush_on_idle: bool,
    /// Self-cancelling random acks added per real ack: 2 × this (seed 000's scalability load;
    /// 1x/5x/9x/17x = 0/2/4/8).
    pub ack_multiplier: usize,
    /// Tracker shards S: slot `s` is tracked by shard `s mod S`.
    pub tracker_shards: usize,
    /// Processes and how they find each other.
    pub cluster: crate::net::cluster::ClusterConfig,
    /// The job's own parameters that every process must agree on (window sizes, input, ...):
    /// hashed into the job id the handshake compares, with the graph and the runtime knobs.
    pub job_key: String,
    /// Sinks record every slot's last arrival to measure notification latency (a compare and a
    /// store per element; windows measure per window and always do). Off for pure throughput runs.
    pub latency_probe: bool,
    /// Warm-up: elements with a smaller time (time units) are processed like any other but left
    /// out of measurements (notification latency at sinks, the measured spans of sources and
    /// sinks). 0: everything is measured.
    pub warmup_until: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            workers: 2,
            batch_size: 1024,
            channel_capacity: 64,
            flush_timeout: Duration::from_millis(1),
            tracking: TrackingMode::Tracker,
            granularity: 1,
            ack_flush_interval: Duration::from_millis(1),
            ack_flush_count: 4096,
            ack_flush_on_idle: true,
            ack_multiplier: 0,
            tracker_shards: 1,
            cluster: crate::net::cluster::ClusterConfig::default(),
            job_key: String::new(),
            latency_probe: true,
            warmup_until: 0,
        }
    }
}

impl RuntimeConfig {
    /// Checks the configuration.
    ///
    /// # Errors
    /// A message naming the first invalid field.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 {
            return Err("workers must be at least 1".into());
        }
        if self.workers > 1024 {
            return Err(format!("workers = {} is more than 1024", self.workers));
        }
        if self.batch_size == 0 {
            return Err("batch size must be at least 1".into());
        }
        if self.channel_capacity == 0 {
            return Err("channel capacity must be at least 1 batch".into());
        }
        if self.granularity == 0 {
            return Err("granularity must be at least 1".into());
        }
        if self.tracker_shards == 0 || self.tracker_shards > 1024 {
            return Err(format!(
                "tracker shards must be between 1 and 1024, got {}",
                self.tracker_shards
            ));
        }
        if self.ack_multiplier > 1000 {
            return Err(format!(
                "ack multiplier {} is more than 1000",
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
        if tp > self.tracker_shards {
            return Err(format!(
                "--tracker-processes {tp} is more than --tracker-shards {}: a tracker process \
                 would host no shard",
                self.tracker_shards
            ));
        }
        self.cluster.validate()?;
        Ok(())
    }
}
