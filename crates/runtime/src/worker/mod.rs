//! The worker loop: runs every vertex instance of one worker until the job is complete.
//!
//! Each iteration reads frontier notifications, steps every vertex in topological order, sends
//! batches whose flush timeout expired, and flushes the local acker on its interval or count.
//! When an iteration finds nothing to do the worker sends its partial batches and flushes its acker
//! at once (so notifications do not wait for a timer at low load), then parks until another worker,
//! the tracker or a rate-controlled source's schedule wakes it.

pub mod ctx;

use crate::measure::stats::VertexStats;
use crate::measure::traffic::Traffic;
use crate::operators::Vertex;
use crate::progress::process_acker::ProcessAcker;
use crate::progress::tracker_agent::Notification;
use crossbeam_channel::Receiver;
use ctx::WorkerCtx;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use xorflow_tracking::Flush;

/// Longest idle park; the loop re-checks abort and timeouts at least this often.
const MAX_PARK: Duration = Duration::from_millis(1);
/// Below this the worker spins instead of parking for a source's schedule. Small on purpose: on a
/// machine with as many cores as workers, a spinning worker takes the core another one needs.
const SPIN_NS: u64 = 2_000;

/// Everything one worker thread owns.
pub(crate) struct Worker {
    pub ctx: WorkerCtx,
    pub vertices: Vec<Box<dyn Vertex>>,
    pub acker: Option<Arc<ProcessAcker>>,
    pub from_tracker: Option<Receiver<Notification>>,
    pub abort: Arc<AtomicBool>,
    /// When this worker last handed its acks to the process acker, ns.
    pub last_handoff_ns: u64,
}

/// What a worker hands back at the end.
pub(crate) struct WorkerResult {
    pub traffic: Traffic,
    pub vertices: Vec<VertexStats>,
}

impl Worker {
    /// Hands the worker's acks to the process acker; `force` makes it flush to the shards now.
    fn flush_acker(&mut self, force: bool) -> Result<(), String> {
        let (Some(tr), Some(pa)) = (&mut self.ctx.tracking, &self.acker) else {
            return Ok(());
        };
        if pa.unbatched() {
            let log = tr.acker.take_log();
            if !log.is_empty() {
                pa.submit_log(&log)?;
            }
        } else {
            let f = if tr.acker.is_empty() {
                Flush::default()
            } else {
                tr.acker.flush()
            };
            pa.submit(&f, self.ctx.now_ns, force)?;
        }
        Ok(())
    }

    fn read_notifications(&mut self) -> Result<(), String> {
        let Some(rx) = &self.from_tracker else {
            return Ok(());
        };
        let ctx = &mut self.ctx;
        while let Ok((shard, ups)) = rx.try_recv() {
            ctx.frontier_seen_ns = crate::measure::clock::now_ns();
            for u in ups {
                if let Some(f) = ctx.combiner.update(shard as usize, u)? {
                    ctx.frontiers[u.component as usize] = f;
                }
            }
        }
        Ok(())
    }

    fn done(&self) -> bool {
        if self.ctx.is_tracking() {
            self.ctx.all_complete()
        } else {
            self.vertices.iter().all(|v| v.ended())
        }
    }

    /// Runs the loop to completion.
    ///
    /// # Errors
    /// The first vertex error, or "aborted" when another thread failed.
    pub fn run(mut self) -> Result<WorkerResult, String> {
        crate::measure::clock::tighten_timer_slack();
        let _ = self.ctx.unparkers.0[self.ctx.local_index].set(std::thread::current());
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Err("aborted because another thread failed".into());
            }
            self.ctx.now_ns = crate::measure::clock::now_ns();
            self.ctx.wake_at_ns = u64::MAX;
            self.read_notifications()?;
            let ctx = &mut self.ctx;
            let mut did = false;
            for v in &mut self.vertices {
                did |= v.step(ctx)?;
            }
            for v in &mut self.vertices {
                did |= v.flush(ctx, false);
            }
            // The thread-local acker goes to the process acker on the same count and interval
            // the process acker flushes on (every iteration when unbatched), not every iteration:
            // the mutex and the second merge are not worth paying per step.
            let due = match (&ctx.tracking, &self.acker) {
                (Some(t), Some(pa)) => {
                    let n = t.acker.pending_updates();
                    n > 0
                        && (pa.unbatched()
                            || n >= pa.flush_count()
                            || ctx.now_ns.saturating_sub(self.last_handoff_ns)
                                >= pa.flush_interval_ns())
                }
                _ => false,
            };
            if due {
                self.last_handoff_ns = ctx.now_ns;
                self.flush_acker(false)?;
            } else if let Some(pa) = &self.acker {
                pa.tick(ctx.now_ns)?;
            }
            if self.done() {
                break;
            }
            if !did {
                let ctx = &mut self.ctx;
                for v in &mut self.vertices {
                    did |= v.flush(ctx, true);
                }
                let idle_policy = self
                    .acker
                    .as_deref()
                    .map(|pa| (pa.flush_on_idle() || pa.unbatched(), pa.flush_interval_ns()));
                match idle_policy {
                    // Going idle: whatever this process has pending goes to the shards now, so
                    // notifications do not wait for the interval at low load.
                    Some((true, _)) => self.flush_acker(true)?,
                    // Batching: hand over, and wake up when the interval is due.
                    Some((false, interval_ns)) => {
                        self.flush_acker(false)?;
                        if self.acker.as_deref().is_some_and(ProcessAcker::has_pending) {
                            self.ctx.wake_at(self.ctx.now_ns + interval_ns);
                        }
                    }
                    None => {}
                }
                if !did {
                    let now = crate::measure::clock::now_ns();
                    let wait = self.ctx.wake_at_ns.saturating_sub(now);
                    if wait < SPIN_NS {
                        std::hint::spin_loop();
                    } else {
                        std::thread::park_timeout(MAX_PARK.min(Duration::from_nanos(wait)));
                    }
                }
            }
        }
        self.flush_acker(true)?;
        let mut vertices = Vec::with_capacity(self.vertices.len());
        for v in &mut self.vertices {
            v.finish()?;
            vertices.push(v.stats());
        }
        Ok(WorkerResult {
            traffic: self.ctx.traffic,
            vertices,
        })
    }
}
