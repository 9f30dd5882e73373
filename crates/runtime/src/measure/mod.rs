//! Measurement: clocks ([`clock`]), CPU by vertex and runtime task ([`cpu`]), notification-latency probes ([`probe`]) and their per-slot
//! records ([`slot_log`]), sampled spans across processes ([`span_log`]) and how both settle
//! through the clock alignment ([`settled`]), per-vertex counters and histograms ([`stats`]),
//! traffic by message kind ([`traffic`]), and live metrics with the status page ([`live`]).

pub mod clock;
pub mod cpu;
pub mod cpu_report;
pub mod live;
pub mod per_second;
pub mod probe;
pub mod settled;
pub mod slot_log;
pub mod span_log;
pub mod stats;
pub mod traffic;
