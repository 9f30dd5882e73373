//! How far apart the processes' generators ran the one schedule, measured through the run's
//! clock alignment (the Cloudprofiler paper, section 3.3; docs/papers.md).
//!
//! Every process runs its generators on the schedule's epoch-ms grid read on its *own* wall
//! clock ([`super::generator::mono_of_epoch_ms`]), and every YSB latency (window, updated,
//! pre-window: `super::latency`) is a process's wall clock minus an event time on that grid. So
//! a latency measured in process `q` of an event generated in process `p` is off by the
//! difference between the two processes' schedules. On one host that difference is 0 (one wall
//! clock); across hosts it is what their wall clocks disagree by (NTP: up to ms). This module
//! measures it: each process reports where its schedule starts on its `CLOCK_MONOTONIC_RAW`,
//! and process 0 converts each into its own time with the alignment's error bound. The YSB
//! latencies of a multi-process run are exact to within [`ScheduleSpread::spread_us`] plus
//! [`ScheduleSpread::bound_us_max`].

use serde::{Deserialize, Serialize};
use xorflow_runtime::{RunReport, VertexStats};

/// Counter (per process): the sum over its generator instances of its schedule's start on its
/// `CLOCK_MONOTONIC_RAW`, ns; every instance of a process holds the same start, so divided by
/// [`SCHEDULE_INSTANCES`] it is the start. Summed over processes it means nothing.
pub const SCHEDULE_START_NS: &str = "schedule_start_mono_ns_sum";
/// Counter (per process): generator instances that reported [`SCHEDULE_START_NS`].
pub const SCHEDULE_INSTANCES: &str = "schedule_start_instances";

/// The generators' schedules across processes, in process 0's time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSpread {
    /// Processes compared with process 0.
    pub processes: usize,
    /// The latest schedule minus the earliest (process 0's included), us: the most a YSB
    /// latency of this run can be off by, beyond the bound.
    pub spread_us: f64,
    /// The largest error bound of a process's offset from process 0's schedule, us.
    pub bound_us_max: f64,
    /// Converted offsets that differ from the plain difference of the two starts by more than
    /// their bound. Processes of one host share one raw clock, so there the plain difference is
    /// the truth and this must stay 0; across hosts it is no check.
    pub bound_exceeded_same_host: u64,
}

/// Records an instance's schedule start (`start_ns` on `CLOCK_MONOTONIC_RAW`) into its stats.
pub fn record(stats: &mut VertexStats, start_ns: u64) {
    stats.count(SCHEDULE_START_NS, start_ns);
    stats.count(SCHEDULE_INSTANCES, 1);
}

/// The spread of a finished multi-process run whose generator vertex is `vertex` (process 0);
/// `None` in one process, without an alignment, or when a process reported no schedule.
pub fn spread(report: &RunReport, vertex: &str) -> Option<ScheduleSpread> {
    let clock = report.clock.as_ref()?;
    let index = report
        .graph
        .vertices
        .iter()
        .position(|v| v.name == vertex)?;
    let mut starts = Vec::new();
    for pr in &report.per_process {
        let s = VertexStats::from_wire(pr.vertices.get(index)?);
        if let Some(start) = s
            .counter(SCHEDULE_START_NS)
            .checked_div(s.counter(SCHEDULE_INSTANCES))
        {
            starts.push((pr.process, start));
        }
    }
    let zero = starts.iter().find(|s| s.0 == 0)?.1;
    let (mut lo, mut hi) = (0f64, 0f64);
    let mut out = ScheduleSpread::default();
    for &(p, start) in starts.iter().filter(|s| s.0 != 0) {
        let span = clock.monotonic_duration((0, zero), (p, start)).ok()?;
        (lo, hi) = (lo.min(span.ns), hi.max(span.ns));
        out.processes += 1;
        out.bound_us_max = out.bound_us_max.max(span.bound_ns / 1e3);
        // The plain difference is the truth on one host: one wall clock, one raw clock.
        let truth = start as f64 - zero as f64;
        out.bound_exceeded_same_host += u64::from((span.ns - truth).abs() > span.bound_ns);
    }
    out.spread_us = (hi - lo) / 1e3;
    Some(out)
}
