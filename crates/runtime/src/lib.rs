//! # xorflow-runtime: workers, channels and the dataflow API
//!
//! A [`Dataflow`] is a graph of typed [`Stream`]s built from sources, element-wise operators,
//! re-partitioning, keyed tumbling windows and sinks. [`Dataflow::run`] executes it on P worker
//! threads per process, each running an instance of every vertex. Elements cross instances in
//! batches through bounded channels (backpressure: a vertex whose output channel is full takes no
//! more input), with a flush timeout for half-full batches. Completeness is tracked by trAcker
//! (`xorflow-tracking`), by in-band markers, or not at all (`TrackingMode::None`: windows close at
//! end of stream).
//!
//! The module map (docs/design.md, "Module map"):
//! - [`dataflow`]: the builder API (what a job writes);
//! - [`execute`]: running a built job (placement, transport start, worker threads, outcome);
//! - [`worker`]: the worker loop and what a vertex instance sees of its worker;
//! - [`operators`]: the operator lifecycle and one file per operator kind;
//! - [`batch`], [`channel`]: what crosses channels and the ports at both ends;
//! - [`progress`]: trAcker glue (flush policy, process acker, tracker shards, frontiers);
//! - [`net`]: processes and hosts over TCP;
//! - [`connectors`]: building blocks for getting data out (part files committed per checkpoint);
//! - [`measure`]: clocks, latency probes, counters, traffic;
//! - [`config`], [`args`] (the engine's command-line options, declared once), [`report`], [`wake`].

pub mod args;
pub mod batch;
pub mod channel;
pub mod checkpoint;
pub mod config;
pub mod connectors;
pub mod dataflow;
pub mod error;
pub mod execute;
pub mod job_error;
pub mod job_options;
pub mod measure;
pub mod net;
pub mod operators;
pub mod port;
pub mod progress;
pub mod report;
pub mod wake;
pub mod worker;

pub use config::{RuntimeConfig, TrackingMode, ValueName};
pub use connectors::PartFiles;
pub use dataflow::{Dataflow, Processed, SharedVec, Stream, VecSink, Windowed};
pub use error::{ClusterError, OperatorError};
pub use job_error::JobError;
pub use measure::stats::VertexStats;
pub use measure::traffic::{MessageKind, Traffic};
pub use operators::epoch_snapshot::EpochSpec;
pub use operators::iterate::Iteration;
pub use operators::sink::{Sink, Staging};
pub use operators::source::{Source, SourceOutput, SourcePoll};
pub use report::{RunError, RunReport};
pub use xorflow_core::{
    Aggregate, ComponentId, Element, IntervalJoin, JoinSide, KeyedProcess, ProcessContext,
    SessionWindows, Time, WindowResult, WindowSpec, INF,
};
