//! # The Yahoo Streaming Benchmark (YSB) on xorflow
//!
//! The benchmark of yahoo/streaming-benchmarks (2015), used by the Cloudprofiler, CPU-efficiency
//! and wide-area papers (docs/papers.md): ad events as JSON lines; the job keeps the views, joins
//! each ad to its campaign and counts views per campaign in 10 s tumbling event-time windows.
//!
//! - [`event`]: the event format ([`event_scan`]: its fast path); [`campaigns`]: the ad ->
//!   campaign table, keyed by [`ad_id`];
//! - [`generate`]: the original's generator (`xorflow-lab ysb generate`);
//! - [`input`]: reading and checking the events file, lateness;
//! - [`kafka`]: the events from a Kafka topic, and loading a file into one;
//! - [`job`]: the dataflow (`xorflow-lab run ysb`);
//! - [`redis_sink`]: the windows written to Redis in the original's layout (`--redis`);
//! - [`oracle`]: the same counts without the engine;
//! - [`bench`]: the generator inside the job at a fixed rate, measured (`xorflow-lab bench ysb`).

pub mod ad_id;
pub mod bench;
pub mod campaigns;
pub mod event;
pub mod event_scan;
pub mod generate;
pub mod input;
pub mod job;
pub mod kafka;
pub mod oracle;
pub mod redis_sink;

pub use job::{run, YsbConfig, YsbError, YsbSummary};

/// The window: 10 s of event time, as the original's `time-divisor`, ms.
pub const WINDOW_MS: u64 = 10_000;
