//! # xorflow-core: the engine's vocabulary
//!
//! Elements and logical time, the graph model (vertices, edges, partitioning, tracking components)
//! and window state. No threads, no sockets: the runtime (`xorflow-runtime`) executes what is
//! described here.

pub mod element;
pub mod graph;
pub mod window;

pub use element::{Data, Element};
pub use graph::{ComponentId, EdgeDesc, GraphDesc, Partitioning, VertexDesc, VertexId};
pub use window::{Aggregate, TumblingWindows, WindowResult};

/// Logical time (u64), re-exported from the tracking crate's definition for convenience:
/// event time or sequence number in the job's own unit.
pub type Time = u64;

/// "Plus infinity" time: nothing will ever arrive (end of stream).
pub const INF: Time = u64::MAX;
