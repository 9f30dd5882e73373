//! Runtime configuration: workers, batching, backpressure and tracking knobs.

use std::time::Duration;

/// How completeness is tracked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackingMode {
    /// trAcker: XOR tags, local ackers and a centralized tracker (DESIGN.md section 2).
    Tracker,
    /// No tracking: windows close only at end of stream (to measure tracking overhead).
    None,
}

impl std::str::FromStr for TrackingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tracker" => Ok(TrackingMode::Tracker),
            "none" => Ok(TrackingMode::None),
            other => Err(format!(
                "unknown tracking mode '{other}' (expected 'tracker' or 'none')"
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
    /// The local acker flushes after this many updates (0: after every operator step).
    pub ack_flush_count: usize,
    /// Sinks record every slot's last arrival to measure notification latency (a compare and a
    /// store per element; windows measure per window and always do). Off for pure throughput runs.
    pub latency_probe: bool,
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
            latency_probe: true,
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
        Ok(())
    }
}
