//! What a run reports, and how it fails.

use crate::config::TrackingMode;
use crate::measure::stats::{VertexStats, VertexStatsWire};
use crate::measure::traffic::Traffic;
use crate::progress::tracker_agent::TrackerStats;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use xorflow_core::GraphDesc;

pub use crate::error::RunError;

/// What one process reports to process 0 at the end of a multi-process run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessReport {
    /// Process index.
    pub process: usize,
    /// Its workers' run time, seconds.
    pub elapsed_s: f64,
    /// CPU time of all its threads (workers, transport, tracker shards) over the same span,
    /// seconds. For a dedicated tracker process this is the whole cost of tracking there:
    /// decoding ack frames as well as applying them.
    #[serde(default)]
    pub cpu_s: f64,
    /// Time its threads spent runnable but waiting for a CPU over the same span, seconds
    /// ([`crate::measure::clock::run_queue_wait_ns`]; threads that exited before the report are missing,
    /// so it is complete for tracker processes only).
    #[serde(default)]
    pub run_queue_wait_s: f64,
    /// Messages it sent, by kind.
    pub traffic: Traffic,
    /// Its vertex counters, in vertex order.
    pub vertices: Vec<VertexStatsWire>,
    /// Its tracker shards' statistics.
    pub tracker: Option<TrackerStats>,
    /// Its worker threads' CPU by task (`measure/cpu.rs`).
    #[serde(default)]
    pub workers_cpu: crate::measure::cpu::WorkerCpu,
}

/// Counters, traffic and latency of a finished run. In a multi-process run, process 0's report
/// covers every process; the others' cover themselves.
#[derive(Debug)]
pub struct RunReport {
    /// Wall-clock time from starting the workers to the last one finishing (the slowest process).
    pub elapsed: Duration,
    /// Worker threads per process.
    pub workers: usize,
    /// Processes, dedicated tracker processes included.
    pub processes: usize,
    /// Dedicated tracker processes (the last ones; they run no workers).
    pub tracker_processes: usize,
    /// This process's index.
    pub process: usize,
    /// Tracker shards.
    pub tracker_shards: usize,
    /// Per-process reports (multi-process runs; process 0 has all of them).
    pub per_process: Vec<ProcessReport>,
    /// Tracking mode.
    pub tracking: TrackingMode,
    /// Tracking granularity (time units per slot).
    pub granularity: u64,
    /// Messages and bytes by kind, over all workers, ackers, trackers and transports.
    pub traffic: Traffic,
    /// Per-vertex counters merged over instances, in vertex order.
    pub vertices: Vec<VertexStats>,
    /// Tracker statistics (trAcker only).
    pub tracker: Option<TrackerStats>,
    /// What the checkpoint coordinator did (with a checkpoint directory).
    pub checkpoints: Option<crate::checkpoint::coordinator::CheckpointStats>,
    /// The logical graph that ran.
    pub graph: GraphDesc,
    /// Every process's clock aligned to process 0's by MinRTT ping-pongs before and after the
    /// run (the Cloudprofiler paper, sections 3 and 5, docs/papers.md): per ordered pair of
    /// processes the MinRTTs, offset, rate and error bound, and the conversion of any process's
    /// ticks into process 0's time ([`xorflow_measure::clock::Alignment::to_reference`],
    /// `duration`). Process 0 of a multi-process run only; `None` elsewhere or when the alignment
    /// after the run failed.
    pub clock: Option<xorflow_measure::clock::Alignment>,
    /// CPU of every process the report covers (this one; on process 0 of a multi-process run,
    /// all), by process: its total and its worker threads' by task (the in-engine CPU accounting,
    /// docs/measurement.md; [`crate::measure::cpu_report::CpuReport`] puts it together with the
    /// vertices' CPU).
    pub cpu: Vec<ProcessCpu>,
}

/// One process's CPU over its run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessCpu {
    /// Process index.
    pub process: usize,
    /// CPU time of all its threads over the run, ns (`CLOCK_PROCESS_CPUTIME_ID`).
    pub cpu_ns: u64,
    /// Its worker threads' CPU by task.
    pub workers: crate::measure::cpu::WorkerCpu,
}

impl RunReport {
    /// Counters of the vertex called `name`.
    pub fn vertex(&self, name: &str) -> Option<&VertexStats> {
        self.vertices.iter().find(|v| v.name == name)
    }

    /// Elements emitted by all sources.
    pub fn source_elements(&self) -> u64 {
        self.graph
            .vertices
            .iter()
            .zip(&self.vertices)
            .filter(|(d, _)| d.is_source)
            .map(|(_, s)| s.elements_out)
            .sum()
    }

    /// Source elements per second of wall-clock time.
    pub fn elements_per_s(&self) -> f64 {
        self.source_elements() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Traffic per process, in process order (one entry, the total, for a single process; only
    /// process 0 of a multi-process run has every process's).
    pub fn traffic_per_process(&self) -> Vec<Traffic> {
        if self.per_process.is_empty() {
            vec![self.traffic]
        } else {
            let mut v: Vec<&ProcessReport> = self.per_process.iter().collect();
            v.sort_by_key(|p| p.process);
            v.into_iter().map(|p| p.traffic).collect()
        }
    }

    /// Elements seen below a notified frontier anywhere (must be 0 with trAcker).
    pub fn below_frontier(&self) -> u64 {
        self.vertices.iter().map(|v| v.below_frontier).sum()
    }
}
