//! Moving batches between vertex instances: the local bounded queues ([`queue`]), the receiving
//! port ([`input`]) and the sending port with partitioning, batching, range tags and backpressure
//! ([`output`]), and the consumers chained into a producer ([`chained`]). Remote channels keep the same shape (`crate::net::link`).

pub mod chained;
pub mod input;
pub mod output;
pub mod queue;

pub use input::{InLink, InputPort};
pub use output::{EdgeOutput, Flush, OutLink, OutputPort, Partitioner};
pub use queue::{channel, Channel};
