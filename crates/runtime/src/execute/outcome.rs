//! The end of a run: the root cause when it failed, and the merged report when it succeeded
//! (this process's workers, its tracker shards and acker, then, on process 0, every other
//! process's report as the transport delivered it).

use super::threads::ThreadsRun;
use crate::error::ClusterError;
use crate::measure::stats::VertexStats;
use crate::measure::traffic::Traffic;
use crate::net::transport::{Failure, TransportHandle};
use crate::progress::process_acker::ProcessAcker;
use crate::progress::tracker_agent::{TrackerAgent, TrackerStats};
use crate::report::{ProcessReport, RunError};
use crate::worker::WorkerResult;
use std::sync::Arc;
use std::time::Duration;
use xorflow_core::GraphDesc;

/// The root cause of a failed run, if it failed: a real error before the "aborted" echoes of
/// other workers, and a dead remote process (the transport's failure) before the local echoes it caused.
///
/// # Errors
/// That root cause.
pub(crate) fn rank_errors(
    results: Vec<Result<WorkerResult, RunError>>,
    failure: &Failure,
) -> Result<Vec<WorkerResult>, RunError> {
    let mut first_err: Option<RunError> = None;
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(x) => ok.push(x),
            Err(e) => {
                if first_err
                    .as_ref()
                    .is_none_or(|f| f.is_echo() && !e.is_echo())
                {
                    first_err = Some(e);
                }
            }
        }
    }
    if first_err.as_ref().is_none_or(RunError::is_echo) {
        if let Some(m) = failure.message.lock().expect("failure lock").clone() {
            first_err = Some(RunError::Cluster(ClusterError::Lost(m)));
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(ok),
    }
}

/// This process's merged statistics.
pub(crate) struct Merged {
    pub vertices: Vec<VertexStats>,
    pub traffic: Traffic,
    pub tracker: Option<TrackerStats>,
    /// The clock alignment process 0's transport made (`net/clock_phase.rs`).
    pub clock: Option<xorflow_measure::clock::Alignment>,
    /// This process's worker threads' CPU by task.
    pub workers_cpu: crate::measure::cpu::WorkerCpu,
}

/// Merges this process's workers' statistics per vertex, with its shards' and acker's traffic.
/// Slot and span logs stay unsettled until every process's are in ([`settle`]).
pub(crate) fn merge_local(
    graph: &GraphDesc,
    mut ok: Vec<WorkerResult>,
    agents: &[Option<Arc<TrackerAgent>>],
    acker: Option<&ProcessAcker>,
) -> Merged {
    let mut vertices: Vec<VertexStats> = graph
        .vertices
        .iter()
        .map(|v| VertexStats::new(&v.name))
        .collect();
    let mut traffic = Traffic::default();
    let mut workers_cpu = crate::measure::cpu::WorkerCpu::default();
    for r in &mut ok {
        traffic += r.traffic;
        workers_cpu.add(&r.cpu);
        for (i, s) in r.vertices.iter_mut().enumerate() {
            // Moved, not copied: up to 24 MiB per instance.
            vertices[i].take_logs(s, None);
            vertices[i].merge(s);
        }
    }
    let mut tracker: Option<TrackerStats> = None;
    for a in agents.iter().flatten() {
        tracker
            .get_or_insert_with(TrackerStats::default)
            .merge(&a.stats());
    }
    if let Some(t) = &tracker {
        traffic += t.traffic;
    }
    if let Some(a) = acker {
        traffic += a.traffic();
        if let Some(t) = &mut tracker {
            t.deferred_handoffs += a.deferred_handoffs();
        }
    }
    Merged {
        vertices,
        traffic,
        tracker,
        clock: None,
        workers_cpu,
    }
}

/// Turns the slot and span logs gathered so far into their histograms, e.g. each sink's
/// notification latency from the last arrival anywhere (on process 0 after [`gather`]: every
/// process's; elsewhere: this one's).
pub(crate) fn settle(m: &mut Merged) {
    for v in &mut m.vertices {
        v.settle_logs(m.clock.as_ref());
    }
}

/// This process's report, for process 0 and the run report.
pub(crate) fn process_report(me: usize, run: &ThreadsRun, m: &Merged) -> ProcessReport {
    ProcessReport {
        process: me,
        elapsed_s: run.elapsed.as_secs_f64(),
        cpu_s: run.cpu_ns as f64 * 1e-9,
        run_queue_wait_s: run.run_queue_wait_ns as f64 * 1e-9,
        traffic: m.traffic,
        // Process 0 keeps its own slot and span logs; the others ship theirs for it to settle.
        vertices: m.vertices.iter().map(|v| v.to_wire(me != 0)).collect(),
        tracker: m.tracker.clone(),
        workers_cpu: m.workers_cpu,
    }
}

/// Ends the transport: sends this process's report to process 0 (or, on process 0, collects
/// everyone's) and merges what arrived into `m`. Returns the per-process reports and the longest
/// elapsed time.
///
/// # Errors
/// A remote process failed before its Done, or sent an unreadable report.
pub(crate) fn gather(
    transport: TransportHandle,
    mut local: ProcessReport,
    m: &mut Merged,
    mut elapsed: Duration,
) -> Result<(Vec<ProcessReport>, Duration), RunError> {
    let me = local.process;
    let payload = if me == 0 {
        Vec::new()
    } else {
        serde_json::to_vec(&local).expect("report serializes")
    };
    let outcome = transport.finish(payload).map_err(RunError::Cluster)?;
    local.traffic += outcome.traffic;
    m.traffic += outcome.traffic;
    m.clock = outcome.clock;
    let mut per_process = vec![local];
    if me != 0 {
        return Ok((per_process, elapsed));
    }
    for (j, r) in outcome.reports.into_iter().enumerate() {
        let Some(r) = r else { continue };
        let pr: ProcessReport = serde_json::from_slice(&r).map_err(|e| {
            let why = format!("process {j} sent an unreadable report: {e}");
            RunError::Cluster(ClusterError::Lost(why))
        })?;
        m.traffic += pr.traffic;
        for (v, w) in m.vertices.iter_mut().zip(&pr.vertices) {
            let mut s = VertexStats::from_wire(w);
            v.take_logs(&mut s, Some(pr.process));
            v.merge(&s);
        }
        if let Some(ts) = &pr.tracker {
            m.tracker
                .get_or_insert_with(TrackerStats::default)
                .merge(ts);
        }
        elapsed = elapsed.max(Duration::from_secs_f64(pr.elapsed_s));
        per_process.push(pr);
    }
    Ok((per_process, elapsed))
}

/// The CPU of the processes a report covers: every process's report on process 0 of a
/// multi-process run, else this one's.
pub(crate) fn process_cpu(
    me: usize,
    run: &ThreadsRun,
    m: &Merged,
    per_process: &[ProcessReport],
) -> Vec<crate::report::ProcessCpu> {
    if per_process.is_empty() {
        return vec![crate::report::ProcessCpu {
            process: me,
            cpu_ns: run.cpu_ns,
            workers: m.workers_cpu,
        }];
    }
    (per_process.iter())
        .map(|pr| crate::report::ProcessCpu {
            process: pr.process,
            cpu_ns: (pr.cpu_s * 1e9).round() as u64,
            workers: pr.workers_cpu,
        })
        .collect()
}

/// Waits for (or with `kill`, kills) the children of a local launch; names the first that failed.
pub(crate) fn reap(children: &mut Vec<std::process::Child>, kill: bool) -> Option<String> {
    let mut err = None;
    for (i, c) in children.iter_mut().enumerate() {
        if kill {
            let _ = c.kill();
        }
        match c.wait() {
            Ok(st) if !st.success() && !kill => {
                err.get_or_insert(format!("process {} exited with {st}", i + 1));
            }
            _ => {}
        }
    }
    children.clear();
    err
}
