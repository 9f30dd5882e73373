//! Measurement: clocks ([`clock`]), notification-latency probes ([`probe`]), per-vertex counters
//! and histograms ([`stats`]) and traffic by message kind ([`traffic`]).

pub mod clock;
pub mod probe;
pub mod stats;
pub mod traffic;
