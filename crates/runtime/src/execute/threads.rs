//! Worker threads: one per local worker, each running `worker/mod.rs`'s loop; a panic in user
//! code becomes an error naming the worker, and any failure raises the abort flag so the other
//! workers stop.

use crate::error::{ClusterError, RunError};
use crate::worker::{Worker, WorkerError, WorkerResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the threads of a process did, and what it cost.
pub(crate) struct ThreadsRun {
    /// Per worker, in local order.
    pub results: Vec<Result<WorkerResult, RunError>>,
    pub elapsed: Duration,
    /// Process CPU time over the run, ns.
    pub cpu_ns: u64,
    /// Time the process's threads waited for a CPU over the run, ns.
    pub run_queue_wait_ns: u64,
}

/// Runs every worker on its own thread until all are done.
pub(crate) fn run(workers: Vec<Worker>, abort: &Arc<AtomicBool>) -> ThreadsRun {
    let start = Instant::now();
    let cpu_start_ns = crate::measure::clock::process_cpu_ns();
    let wait_start_ns = crate::measure::clock::run_queue_wait_ns();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                let w = worker.ctx.index;
                let abort = abort.clone();
                std::thread::Builder::new()
                    .name(format!("xorflow-worker-{w}"))
                    .spawn_scoped(s, move || run_one(worker, w, &abort))
                    .expect("spawn worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread result"))
            .collect()
    });
    ThreadsRun {
        results,
        elapsed: start.elapsed(),
        cpu_ns: crate::measure::clock::process_cpu_ns() - cpu_start_ns,
        run_queue_wait_ns: crate::measure::clock::run_queue_wait_ns().saturating_sub(wait_start_ns),
    }
}

/// One worker's thread body: its result, a vertex error or a caught panic, naming worker `w`.
fn run_one(worker: Worker, w: usize, abort: &AtomicBool) -> Result<WorkerResult, RunError> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
    let r = match r {
        Ok(Ok(x)) => Ok(x),
        Ok(Err(WorkerError::Vertex(error))) => Err(RunError::Vertex { worker: w, error }),
        Ok(Err(WorkerError::Progress(m))) => Err(RunError::Tracker(format!("worker {w}: {m}"))),
        Ok(Err(WorkerError::Net(m))) => Err(RunError::Cluster(ClusterError::Lost(format!(
            "worker {w}: {m}"
        )))),
        Ok(Err(WorkerError::Aborted)) => Err(RunError::Aborted { worker: w }),
        Err(p) => Err(RunError::Panic {
            worker: w,
            message: panic_message(p),
        }),
    };
    if r.is_err() {
        abort.store(true, Ordering::Relaxed);
    }
    r
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
