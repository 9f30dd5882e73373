//! # xorflow-core: the engine's vocabulary
//!
//! Elements and logical time, the graph model (vertices, edges, partitioning, tracking components)
//! and window state. No threads, no sockets: the runtime (`xorflow-runtime`) executes what is
//! described here.

pub mod element;
pub mod graph;
pub mod interval_join;
pub mod process;
pub mod session;
pub mod time;
pub mod window;

pub use element::{Data, Element};
pub use graph::{ComponentId, EdgeDesc, GraphDesc, Partitioning, VertexDesc, VertexId};
pub use interval_join::{IntervalJoin, JoinSide};
pub use process::{KeyedProcess, ProcessContext};
pub use session::{Session, SessionWindows};
pub use time::{Time, INF};
pub use window::{Aggregate, EventTime, WindowResult, WindowSpec};
