//! Wide-area delay injected in user space (the wide-area paper's experiments, docs/papers.md; this
//! kernel has no netem): every frame a process receives from another is held back by that pair's
//! one-way delay (half its round-trip time, with optional jitter) before it is routed, FIFO per
//! connection and without holding up other connections (`transport.rs`, `read_loop`). Data,
//! credits, acks, frontiers, markers, keep-alives and the end protocol are all delayed; the
//! handshake and the clock alignment before and after the run are not (docs/wan.md says why and
//! what else a user-space delay leaves out).
//!
//! Where the delays come from ([`DelaySpec`]): `--rtt 40ms` (every pair), `--rtt-topology
//! eu|us|global` (the wide-area paper's city sets, [`topology`]) or `--delay-matrix FILE`
//! ([`matrix`]); `--rtt-jitter` spreads each frame's delay.

pub mod line;
pub mod proxy;
pub mod router;
pub mod tun;
mod writer;

pub use crate::config::delay::{
    matrix, topology, DelayConfig, DelayMatrix, DelaySpec, Topology, MAX_RTT,
};
pub use line::DelayLine;
