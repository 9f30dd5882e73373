//! The worker loop: runs every vertex instance of one worker until the job is complete.
//!
//! Each iteration reads frontier notifications, steps every vertex in topological order, sends
//! batches whose flush timeout expired, and flushes the local acker on its interval or count.
//! When an iteration finds nothing to do the worker sends its partial batches and flushes its acker
//! at once (so notifications do not wait for a timer at low load; `--batch-flush-on-idle false`
//! and `--ack-flush-on-idle false` leave both to their timeouts instead), then parks until another worker,
//! the tracker or a rate-controlled source's schedule wakes it.

pub mod ctx;

use crate::channel::Flush;
use crate::measure::cpu::{Task, WorkerClock, WorkerCpu, CPU_NS};
use crate::measure::stats::VertexStats;
use crate::measure::traffic::Traffic;
use crate::net::worker_reads::WorkerSockets;
use crate::operators::Vertex;
use crate::progress::frontier_inbox::FrontierInbox;
use crate::progress::handoff::Handoff;
use crate::wake::Wake;
use ctx::WorkerCtx;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Longest idle park. An idle worker is woken by what gives it work (a batch, a frontier, a
/// credit: their senders unpark it) or at the earliest deadline it registered
/// (`WorkerCtx::wake_at`: a source's schedule, a partial batch's flush timeout, a held-back
/// batch's retry, queued acks' flush, the next checkpoint epoch, the live metrics' next
/// sample), so this only bounds how late it sees another thread's abort. It was 1 ms: 1,000
/// wake-ups a second per idle worker, each a context switch of tens of us on this VM
/// (issue 51: an idle engine should cost next to nothing).
const MAX_PARK: Duration = Duration::from_millis(50);
/// Below this the worker spins instead of parking for a source's schedule. Small on purpose: on a
/// machine with as many cores as workers, a spinning worker takes the core another one needs.
const SPIN_NS: u64 = 2_000;

/// Why a worker's loop ended without finishing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkerError {
    /// One of its vertex instances failed, saying what failed.
    #[error(transparent)]
    Vertex(#[from] crate::error::OperatorError),
    /// trAcker's glue failed: its acks could not be handed to the process acker
    /// (`progress/handoff.rs`), or a frontier notification could not be read
    /// (`progress/frontiers.rs`).
    #[error("{0}")]
    Progress(String),
    /// A connection it reads (`--net-reads worker`, `net/worker_reads.rs`) failed.
    #[error("{0}")]
    Net(String),
    /// Another thread failed and raised the abort flag; this worker did not fail itself.
    #[error("aborted because another thread failed")]
    Aborted,
}

/// Everything one worker thread owns.
pub(crate) struct Worker {
    pub ctx: WorkerCtx,
    pub vertices: Vec<Box<dyn Vertex>>,
    /// The hand-off of this worker's acks to its process acker (trAcker only).
    pub handoff: Option<Handoff>,
    /// Frontier notifications from the tracker shards (trAcker only).
    pub inbox: Option<std::sync::Arc<FrontierInbox>>,
    pub abort: Arc<AtomicBool>,
    /// Where this thread's CPU goes (`measure/cpu.rs`); started when the loop starts.
    pub cpu: WorkerClock,
    /// Live metrics (`--metrics-addr`): this worker's handles.
    pub live: Option<crate::measure::live::WorkerLive>,
    /// The connections this worker reads (`--net-reads worker`, `net/worker_reads.rs`): it
    /// polls them while busy and waits on them when idle.
    pub sockets: Option<WorkerSockets>,
    /// The next pass sends batches for this worker's own vertices after each step
    /// (`Flush::SameWorker`): set by an idle flush that sent some.
    pub pass_on: bool,
}

/// What a worker hands back at the end.
pub(crate) struct WorkerResult {
    pub traffic: Traffic,
    pub vertices: Vec<VertexStats>,
    /// The thread's CPU by task (per vertex: each vertex's [`CPU_NS`] counter).
    pub cpu: WorkerCpu,
}

impl Worker {
    fn done(&self) -> bool {
        if self.ctx.is_tracking() {
            self.ctx.frontiers.all_complete()
        } else {
            self.vertices.iter().all(|v| v.ended())
        }
    }

    /// One pass over every vertex: read notifications, step, flush expired batches, hand acks on
    /// when due. Returns whether any vertex did work.
    fn iteration(&mut self) -> Result<bool, WorkerError> {
        self.ctx.now_ns = crate::measure::clock::now_ns();
        self.ctx.wake_at_ns = u64::MAX;
        if let Some(inbox) = &self.inbox {
            self.ctx
                .frontiers
                .read(inbox)
                .map_err(WorkerError::Progress)?;
        }
        let cpu = &mut self.cpu;
        cpu.begin_iteration();
        cpu.task(Task::Frontiers);
        let ctx = &mut self.ctx;
        let mut did = false;
        // After an idle flush that sent batches to this worker's own vertices, what each step
        // sends them leaves at once (`Flush::SameWorker`): the vertices after it in this pass
        // read it, so the pass carries the batches down a chain of stages.
        let pass_on = std::mem::take(&mut self.pass_on);
        for (i, v) in self.vertices.iter_mut().enumerate() {
            did |= v.step(ctx)?;
            if pass_on {
                // Counted as work: a batch sent up the order (a cycle) is read next pass.
                did |= v.flush(ctx, Flush::SameWorker);
            }
            cpu.vertex(i);
        }
        for v in &mut self.vertices {
            did |= v.flush(ctx, Flush::Due);
        }
        cpu.task(Task::Flush);
        if let (Some(h), Some(tr)) = (&mut self.handoff, ctx.progress.tracker()) {
            h.after_iteration(tr, ctx.now_ns)
                .map_err(WorkerError::Progress)?;
        }
        cpu.task(Task::Acks);
        crate::net::outbox::flush_queued();
        if let Some(s) = self.sockets.as_mut().filter(|s| s.due(ctx.now_ns)) {
            s.wait(Duration::ZERO).map_err(WorkerError::Net)?;
            s.read();
        }
        cpu.task(Task::Network);
        cpu.end_iteration();
        if self.live.as_ref().is_some_and(|l| l.due(self.ctx.now_ns)) {
            self.publish();
        }
        if let Some(l) = &self.live {
            self.ctx.wake_at(l.next_due_ns());
        }
        Ok(did)
    }

    /// Publishes the live metrics (`measure/live/`): every vertex's totals, the CPU estimate so
    /// far, the sources' progress and the traffic.
    fn publish(&mut self) {
        let Some(live) = &mut self.live else {
            return;
        };
        let ctx = &self.ctx;
        let counts: Vec<_> = self.vertices.iter().map(|v| v.live_counts(ctx)).collect();
        // How far the input has got here: the most advanced source vertex's lowest running
        // instance heartbeat (what the frontier lag is measured against).
        let newest = (self.vertices.iter().zip(&counts))
            .filter(|(v, _)| v.is_source())
            .filter_map(|(_, c)| c.frontier)
            .filter(|&f| f != xorflow_tracking::INF)
            .max()
            .unwrap_or(0);
        // The estimate so far (the clock keeps running; `finish` only reads it).
        let (cpu_ns, tasks) = self.cpu.finish();
        live.publish(ctx.now_ns, &counts, (&cpu_ns, &tasks), newest, &ctx.traffic);
    }

    /// Nothing to do: send partial batches and hand acks on at once (so notifications do not
    /// wait for a timer at low load); if that did nothing either, spin or park until woken.
    fn idle(&mut self) -> Result<(), WorkerError> {
        let cpu = &mut self.cpu;
        let ctx = &mut self.ctx;
        let mut did = false;
        for v in &mut self.vertices {
            did |= v.flush(ctx, Flush::Idle);
        }
        // Only without idle flushes: with them every partial batch just left.
        self.pass_on = did && !ctx.batching.flush_on_idle;
        cpu.task(Task::Flush);
        if let (Some(h), Some(tr)) = (&mut self.handoff, ctx.progress.tracker()) {
            if let Some(at) = h.on_idle(tr, ctx.now_ns).map_err(WorkerError::Progress)? {
                ctx.wake_at(at);
            }
        }
        cpu.task(Task::Acks);
        crate::net::outbox::flush_queued();
        cpu.task(Task::Network);
        if !did {
            let now = crate::measure::clock::now_ns();
            let wait = ctx.wake_at_ns.saturating_sub(now);
            if wait < SPIN_NS {
                std::hint::spin_loop();
                cpu.task(Task::Idle);
            } else {
                let d = MAX_PARK.min(Duration::from_nanos(wait));
                match &mut self.sockets {
                    Some(s) => {
                        cpu.park(|| s.wait(d)).map_err(WorkerError::Net)?;
                        s.read();
                        cpu.task(Task::Network);
                    }
                    None => cpu.park(|| std::thread::park_timeout(d)),
                }
            }
        }
        Ok(())
    }

    /// Runs the loop to completion: open every vertex, iterate until done, hand over the last
    /// acks, close every vertex.
    ///
    /// # Errors
    /// The first vertex error ([`WorkerError::Vertex`]) or hand-off error, or [`WorkerError::Aborted`] when
    /// another thread failed.
    pub fn run(mut self) -> Result<WorkerResult, WorkerError> {
        crate::measure::clock::set_timer_slack(self.ctx.batching.timer_slack_ns);
        let wake = match &self.sockets {
            Some(s) => Wake::Poll(s.parker()),
            None => Wake::Thread(std::thread::current()),
        };
        let _ = self.ctx.unparkers.0[self.ctx.local_index].set(wake);
        for v in &mut self.vertices {
            v.open(&mut self.ctx)?;
        }
        self.cpu.start();
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Err(WorkerError::Aborted);
            }
            let did = self.iteration()?;
            if self.done() {
                break;
            }
            if !did {
                self.idle()?;
            }
        }
        if let (Some(h), Some(tr)) = (&mut self.handoff, self.ctx.progress.tracker()) {
            h.finish(tr, self.ctx.now_ns)
                .map_err(WorkerError::Progress)?;
        }
        self.ctx.now_ns = crate::measure::clock::now_ns();
        self.publish();
        let (vertex_cpu, cpu) = self.cpu.finish();
        let mut vertices = Vec::with_capacity(self.vertices.len());
        for (v, ns) in self.vertices.iter_mut().zip(vertex_cpu) {
            v.close()?;
            let mut s = v.stats();
            s.count(CPU_NS, ns);
            vertices.push(s);
        }
        crate::net::outbox::flush_queued();
        Ok(WorkerResult {
            traffic: self.ctx.traffic,
            vertices,
            cpu,
        })
    }
}
