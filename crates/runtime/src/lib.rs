//! # xorflow-runtime: workers, channels and the dataflow API
//!
//! A [`Dataflow`] is a graph of typed [`Stream`]s built from sources, element-wise operators,
//! re-partitioning, keyed tumbling windows and sinks. [`Dataflow::run`] executes it on P worker
//! threads, each running an instance of every vertex. Elements cross instances in batches through
//! bounded channels (backpressure: a vertex whose output channel is full takes no more input), with a
//! flush timeout for half-full batches. Completeness is tracked by trAcker (a tracker thread plus a
//! local acker per worker, see `xorflow-tracking`) or not at all (`TrackingMode::None`: windows
//! close at end of stream).

pub mod args;
pub mod channel;
pub mod clock;
pub mod config;
pub mod dataflow;
pub mod net;
pub mod operators;
pub mod port;
pub mod probe;
pub mod process_acker;
pub mod report;
pub mod stats;
pub mod tracker_agent;
pub mod traffic;
mod worker;
pub mod worker_ctx;

pub use config::{RuntimeConfig, TrackingMode};
pub use dataflow::{Dataflow, SharedVec, Stream, VecSink};
pub use operators::epoch_snapshot::EpochSpec;
pub use operators::iterate::Iteration;
pub use operators::sink::Sink;
pub use operators::source::{Source, SourceOutput, SourcePoll};
pub use report::{RunError, RunReport};
pub use stats::VertexStats;
pub use traffic::{MessageKind, Traffic};
pub use xorflow_core::{Aggregate, Element, WindowResult};
