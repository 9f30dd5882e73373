//! Moving batches between vertex instances: the local bounded queues ([`queue`]), the receiving
//! port ([`input`]), and the sending side of an edge with partitioning, batching, send tags and
//! backpressure ([`output`]), which takes narrow handles from its worker ([`handles`]). Remote
//! channels keep the same shape (`crate::net::link`). The port an operator pushes into, over all
//! its edges and chained consumers, is one layer up (`port/`).

pub mod handles;
pub mod input;
pub mod output;
pub mod queue;

pub use handles::{Batching, SendCtx};
pub use input::{InLink, InputPort};
pub use output::{EdgeOutput, Flush, OutLink, Partitioner};
pub use queue::{channel, Channel};
