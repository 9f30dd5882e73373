//! The worker loop: runs every vertex instance of one worker until the job is complete.
//!
//! Each iteration reads frontier notifications, steps every vertex in topological order, sends
//! batches whose flush timeout expired, and flushes the local acker on its interval or count.
//! When an iteration finds nothing to do the worker sends its partial batches and flushes its acker
//! at once (so notifications do not wait for a timer at low load), then parks until another worker,
//! the tracker or a rate-controlled source's schedule wakes it.

use crate::operators::Vertex;
use crate::stats::VertexStats;
use crate::tracker_agent::{ack_bytes, heartbeat_bytes, TrackerAgent};
use crate::traffic::{MessageKind, Traffic};
use crate::worker_ctx::WorkerCtx;
use crossbeam_channel::Receiver;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use xorflow_tracking::FrontierUpdate;

/// Longest idle park; the loop re-checks abort and timeouts at least this often.
const MAX_PARK: Duration = Duration::from_millis(1);
/// Below this the worker spins instead of parking for a source's schedule. Small on purpose: on a
/// machine with as many cores as workers, a spinning worker takes the core another one needs.
const SPIN_NS: u64 = 2_000;

/// Everything one worker thread owns.
pub(crate) struct Worker {
    pub ctx: WorkerCtx,
    pub vertices: Vec<Box<dyn Vertex>>,
    pub tracker: Option<Arc<TrackerAgent>>,
    pub from_tracker: Option<Receiver<Vec<FrontierUpdate>>>,
    pub ack_flush_interval_ns: u64,
    pub ack_flush_count: usize,
    pub abort: Arc<AtomicBool>,
}

/// What a worker hands back at the end.
pub(crate) struct WorkerResult {
    pub traffic: Traffic,
    pub vertices: Vec<VertexStats>,
}

impl Worker {
    fn flush_acker(&mut self) -> Result<(), String> {
        let (Some(tr), Some(agent)) = (&mut self.ctx.tracking, &self.tracker) else {
            return Ok(());
        };
        if tr.acker.is_empty() {
            return Ok(());
        }
        let f = tr.acker.flush();
        let ctx = &mut self.ctx;
        if !f.acks.is_empty() {
            ctx.traffic.record(MessageKind::Ack, ack_bytes(&f.acks));
        }
        if !f.heartbeats.is_empty() {
            ctx.traffic
                .record(MessageKind::Heartbeat, heartbeat_bytes(&f.heartbeats));
        }
        let ups = agent.deliver(ctx.index, &f)?;
        Self::apply_frontiers(ctx, ups);
        Ok(())
    }

    fn apply_frontiers(ctx: &mut WorkerCtx, ups: Vec<FrontierUpdate>) {
        if ups.is_empty() {
            return;
        }
        ctx.frontier_seen_ns = crate::clock::now_ns();
        for u in ups {
            let f = &mut ctx.frontiers[u.component as usize];
            *f = (*f).max(u.frontier);
        }
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
        crate::clock::tighten_timer_slack();
        let _ = self.ctx.unparkers.0[self.ctx.index].set(std::thread::current());
        let mut last_ack_flush = crate::clock::now_ns();
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Err("aborted because another thread failed".into());
            }
            let ctx = &mut self.ctx;
            ctx.now_ns = crate::clock::now_ns();
            ctx.wake_at_ns = u64::MAX;
            if let Some(rx) = &self.from_tracker {
                while let Ok(ups) = rx.try_recv() {
                    Self::apply_frontiers(ctx, ups);
                }
            }
            let mut did = false;
            for v in &mut self.vertices {
                did |= v.step(ctx)?;
            }
            for v in &mut self.vertices {
                did |= v.flush(ctx, false);
            }
            if let Some(tr) = &ctx.tracking {
                let n = tr.acker.pending_updates();
                if n > 0
                    && (n >= self.ack_flush_count
                        || ctx.now_ns - last_ack_flush >= self.ack_flush_interval_ns)
                {
                    self.flush_acker()?;
                    last_ack_flush = self.ctx.now_ns;
                }
            }
            if self.done() {
                break;
            }
            if !did {
                let ctx = &mut self.ctx;
                for v in &mut self.vertices {
                    did |= v.flush(ctx, true);
                }
                if self
                    .ctx
                    .tracking
                    .as_ref()
                    .is_some_and(|t| !t.acker.is_empty())
                {
                    self.flush_acker()?;
                    last_ack_flush = self.ctx.now_ns;
                    did = true;
                }
                if !did {
                    let now = crate::clock::now_ns();
                    let wait = self.ctx.wake_at_ns.saturating_sub(now);
                    if wait < SPIN_NS {
                        std::hint::spin_loop();
                    } else {
                        std::thread::park_timeout(MAX_PARK.min(Duration::from_nanos(wait)));
                    }
                }
            }
        }
        self.flush_acker()?;
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
