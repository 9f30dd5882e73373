//! Sources: user code that emits timed elements and heartbeats.

use super::source_pace::Pace;
use super::{Operator, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use xorflow_core::Element;
use xorflow_tracking::{SourceId, Time, INF};

/// Most markers a source instance sends for one heartbeat jump (tracking `markers`): a longer
/// jump sends the last ones only, which promise everything the skipped ones would have.
const MAX_MARKER_STEPS: u64 = 65_536;

/// What a source's [`Source::poll`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Call again as soon as possible.
    Ready,
    /// Nothing to emit before this time (ns on [`crate::measure::clock::now_ns`]'s clock): rate control.
    WaitUntil(u64),
    /// End of stream: the source unregisters (heartbeat `INF`).
    Done,
}

/// A source instance: emits elements with logical times and promises lower bounds on future times
/// (heartbeats, docs/design.md, requirement 3).
pub trait Source<T>: Send {
    /// Emits up to [`SourceOutput::budget`] elements and optionally a heartbeat. Elements must
    /// not have times below the last heartbeat.
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll;

    /// Where the source would resume to emit exactly what it has not emitted yet (a file's next
    /// record, a partition's next offset), in its own terms; recorded in checkpoints. `None`: the
    /// source cannot resume (a checkpoint still completes, a restore replays it from the start).
    fn position(&self) -> Option<String> {
        None
    }

    /// Moves to `position` (one [`Source::position`] gave) before the first poll of a resumed
    /// job: from there on the source emits what it would have emitted after it.
    ///
    /// # Errors
    /// A position the source cannot take, naming it. Default: the source cannot resume.
    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        Err(format!("this source cannot resume (asked to seek to '{position}')").into())
    }

    /// Adds the instance's own measurements (a generator's lag behind its schedule) to its
    /// vertex's statistics at the end of the run ([`VertexStats::count`],
    /// [`VertexStats::histogram_mut`]); merged over instances and processes like a sink's.
    fn report(&mut self, _stats: &mut VertexStats) {}
}

/// The emitting side a source sees during one poll.
pub struct SourceOutput<'a, T> {
    ctx: &'a mut WorkerCtx,
    heartbeat: Option<Time>,
    emitted: usize,
    /// Elements emitted in this poll past the warm-up.
    measured: u64,
    /// Why the source cannot go on ([`SourceOutput::fail`]).
    failure: Option<String>,
    /// Event-log channel `<source>.out` (every element's time), when logging.
    log: Option<&'a mut xorflow_measure::log::Channel>,
    /// The poll's elements, pushed into the port together after the poll: a batch goes
    /// through the edge's partitioning once, in runs (`channel/output.rs`, `append_run`),
    /// instead of one dispatch per element.
    staged: &'a mut Vec<Element<T>>,
}

impl<T: Clone + Send> SourceOutput<'_, T> {
    /// Emits `data` at logical `time`.
    #[inline]
    pub fn emit(&mut self, time: Time, data: T) {
        self.emitted += 1;
        self.measured += u64::from(time >= self.ctx.warmup_until);
        if let Some(ch) = &mut self.log {
            ch.log(time);
        }
        self.staged.push(Element::new(time, data));
    }

    /// Promises that this source emits nothing with time below `time` from now on. Applied after
    /// the poll's elements are committed, so it never overtakes their send tags.
    pub fn heartbeat(&mut self, time: Time) {
        self.heartbeat = Some(self.heartbeat.map_or(time, |h| h.max(time)));
    }

    /// How many elements a poll should emit at most (the batch size).
    pub fn budget(&self) -> usize {
        self.ctx.batching.batch_size
    }

    /// The tracking granularity, time units per slot: frontiers move a slot at a time, so a
    /// waiting source that advances its heartbeat need only wake when it enters a new slot.
    pub fn granularity(&self) -> u64 {
        self.ctx.granularity.get()
    }

    /// The worker's clock, ns ([`crate::measure::clock::now_ns`]).
    pub fn now_ns(&self) -> u64 {
        self.ctx.now_ns
    }

    /// Elements emitted in this poll so far.
    pub fn emitted(&self) -> usize {
        self.emitted
    }

    /// The source cannot go on (its input is gone, a position it must read was deleted): the
    /// run fails with `why` (a message naming the input and what happened) once this poll's
    /// elements are committed. The first failure of a poll is kept.
    pub fn fail(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }
}

enum State {
    Active,
    /// Nothing is due before `due` (ns); the worker polls the instance whenever it runs after
    /// that, and wakes for it at `latest` (`source_pace.rs`).
    Waiting {
        due: u64,
        latest: u64,
    },
    Done,
}

struct Instance<T> {
    id: SourceId,
    source: Box<dyn Source<T>>,
    state: State,
    /// Latest heartbeat (tracking `markers`: the instance's markers derive from it).
    heartbeat: Time,
    /// How late its waits may be served (`source_pace.rs`).
    pace: Pace,
}

/// The source operator on one worker: the source instances hosted here.
pub struct Sources<T> {
    instances: Vec<Instance<T>>,
    /// Last marker sent (tracking `markers`).
    marker: Time,
    /// The checkpoint epoch of what the instances emit now (all instances of a worker share
    /// their output port, so they advance together).
    epoch: u64,
    /// When the next epoch starts, ns (`None` before the first step).
    next_epoch_ns: Option<u64>,
    /// Event-log channel `<source>.out` ([`Operator::take_event_log`]).
    log: Option<xorflow_measure::log::Channel>,
    /// A poll's elements before they are pushed ([`SourceOutput`]'s `staged`), kept for its
    /// capacity.
    staged: Vec<Element<T>>,
}

impl<T: Clone + Send> Sources<T> {
    /// An operator hosting `instances` (global source id, source).
    pub fn new(instances: Vec<(SourceId, Box<dyn Source<T>>)>) -> Self {
        Sources {
            instances: instances
                .into_iter()
                .map(|(id, source)| Instance {
                    id,
                    source,
                    state: State::Active,
                    heartbeat: 0,
                    pace: Pace::default(),
                })
                .collect(),
            marker: 0,
            epoch: 0,
            next_epoch_ns: None,
            log: None,
            staged: Vec::new(),
        }
    }

    /// The checkpoint epoch the instances emit in now.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Moves to the next checkpoint epoch when its time has come (every
    /// [`crate::worker::ctx::EpochCtx::interval_ns`] from the first step): sends the open buffers
    /// of the old epoch, then heartbeats the new epoch for every live instance (trAcker) or sends
    /// its barrier on every channel (markers). Returns whether it advanced.
    fn advance_epoch(&mut self, out: &mut OutputPort<T>, ctx: &mut WorkerCtx) -> bool {
        let Some(ep) = ctx.epochs else {
            return false;
        };
        let due = *self
            .next_epoch_ns
            .get_or_insert(ctx.now_ns.saturating_add(ep.interval_ns));
        if ctx.now_ns < due {
            ctx.wake_at(due);
            return false;
        }
        // Epochs passed while the worker was busy elsewhere are skipped: nothing was emitted in
        // them, and one boundary is as good a cut as several.
        let passed = (ctx.now_ns - due) / ep.interval_ns + 1;
        self.epoch += passed;
        let next = due.saturating_add(passed * ep.interval_ns);
        self.next_epoch_ns = Some(next);
        ctx.wake_at(next);
        out.set_epoch(self.epoch, ctx);
        if ctx.progress.markers_in_band() && self.marker != INF {
            // The epoch's barrier on every channel (aligned checkpoints: `progress/cut.rs`);
            // the repeated marker is ignored by the receivers' time alignment.
            out.marker(self.marker, ctx);
        }
        let covered = crate::progress::cut::Covered {
            from: self.epoch - passed,
            to: self.epoch - 1,
        };
        for inst in self
            .instances
            .iter()
            .filter(|i| !matches!(i.state, State::Done))
        {
            if let Some(c) = &ctx.checkpointer {
                let pos = inst.source.position().unwrap_or_default();
                c.position(format!("source/{}", inst.id), covered, pos);
            }
            ctx.progress.heartbeat(ep.source_id(inst.id), self.epoch);
        }
        true
    }

    /// Polls one instance if it is due; returns whether it did anything.
    fn poll(
        inst: &mut Instance<T>,
        epoch: u64,
        out: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
        log: &mut Option<xorflow_measure::log::Channel>,
        staged: &mut Vec<Element<T>>,
    ) -> Result<bool, OperatorError> {
        match inst.state {
            State::Done => return Ok(false),
            State::Waiting { due, latest } if due > ctx.now_ns => {
                ctx.wake_at(latest);
                return Ok(false);
            }
            _ => {}
        }
        let mut so = SourceOutput {
            ctx,
            heartbeat: None,
            emitted: 0,
            measured: 0,
            failure: None,
            log: log.as_mut(),
            staged,
        };
        let poll = inst.source.poll(&mut so);
        let (emitted, measured, mut heartbeat) = (so.emitted, so.measured, so.heartbeat);
        let failure = so.failure.take();
        if !staged.is_empty() {
            out.push_all(staged.drain(..), ctx);
        }
        if let Some(why) = failure {
            out.commit(ctx);
            return Err(format!("source instance {}: {why}", inst.id).into());
        }
        stats.elements_out += emitted as u64;
        inst.pace.emitted(emitted);
        stats.measured.record(measured, ctx.now_ns);
        let mut did = emitted > 0;
        out.commit(ctx);
        match poll {
            SourcePoll::Ready => inst.state = State::Active,
            SourcePoll::WaitUntil(due) => {
                let latest = inst.pace.wait(due, ctx.batching.source_delay_ns);
                inst.state = State::Waiting { due, latest };
                ctx.wake_at(latest);
            }
            SourcePoll::Done => {
                inst.state = State::Done;
                heartbeat = Some(INF);
                did = true;
                if let Some(ep) = ctx.epochs {
                    ctx.progress.heartbeat(ep.source_id(inst.id), INF);
                }
                // An ended source covers every later epoch: it never holds a checkpoint back.
                if let Some(c) = &ctx.checkpointer {
                    let pos = inst.source.position().unwrap_or_default();
                    let covered = crate::progress::cut::Covered {
                        from: epoch,
                        to: INF - 1,
                    };
                    c.position(format!("source/{}", inst.id), covered, pos);
                }
            }
        }
        if let Some(h) = heartbeat {
            inst.heartbeat = inst.heartbeat.max(h);
            ctx.progress.heartbeat(inst.id, h);
        }
        Ok(did)
    }

    /// Tracking `markers`: this instance's channels carry all its hosted sources, so its marker
    /// is their minimum heartbeat. One marker per granularity step passed (the paper's baseline),
    /// at most [`MAX_MARKER_STEPS`] per poll; end of stream sends `Marker(INF)`.
    fn send_markers(&mut self, out: &mut OutputPort<T>, ctx: &mut WorkerCtx) -> bool {
        let min = self
            .instances
            .iter()
            .map(|i| i.heartbeat)
            .min()
            .unwrap_or(INF);
        let g = ctx.granularity;
        if min == INF {
            if self.marker == INF {
                return false;
            }
            self.marker = INF;
            out.marker(INF, ctx);
            return true;
        }
        let target = g.slots_below(min);
        let mut s = g.slots_below(self.marker);
        if target <= s {
            return false;
        }
        s = s.max(target.saturating_sub(MAX_MARKER_STEPS));
        while s < target {
            s += 1;
            out.marker(g.start(s), ctx);
        }
        self.marker = g.start(target);
        true
    }
}

impl<T: Clone + Send + 'static> Operator for Sources<T> {
    fn heartbeat(&self) -> Option<Time> {
        if self.instances.is_empty() {
            return None;
        }
        let running = self
            .instances
            .iter()
            .filter(|i| !matches!(i.state, State::Done));
        Some(running.map(|i| i.heartbeat).min().unwrap_or(INF))
    }

    fn hosted_instances(&self) -> usize {
        self.instances.len()
    }

    type In = ();
    type Out = OutputPort<T>;

    /// Sources have no input channels: the driver never calls this.
    fn on_batch(
        &mut self,
        _b: Batch<()>,
        _out: &mut OutputPort<T>,
        _ctx: &mut WorkerCtx,
        _stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        Err("a source has no input".into())
    }

    fn produce(
        &mut self,
        out: &mut OutputPort<T>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<bool, OperatorError> {
        let mut did = self.advance_epoch(out, ctx);
        // A resumed job starts past epoch 0 (`on_resume`); cheap when unchanged.
        out.set_epoch(self.epoch, ctx);
        for inst in &mut self.instances {
            if out.blocked() {
                break;
            }
            did |= Self::poll(
                inst,
                self.epoch,
                out,
                ctx,
                stats,
                &mut self.log,
                &mut self.staged,
            )?;
        }
        if ctx.progress.markers_in_band() {
            did |= self.send_markers(out, ctx);
        }
        Ok(did)
    }

    fn exhausted(&self) -> bool {
        self.instances
            .iter()
            .all(|i| matches!(i.state, State::Done))
    }

    /// Seeks every instance to its position in the checkpoint and starts in the epoch after it
    /// (heartbeated at once, so the epoch frontiers need not wait for the first interval).
    fn on_resume(
        &mut self,
        resume: &crate::checkpoint::Resume,
        ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        self.epoch = resume.first_epoch();
        for inst in &mut self.instances {
            let pos = resume.position(inst.id)?;
            inst.source
                .seek(pos)
                .map_err(|e| format!("source instance {}: {e}", inst.id))?;
            if let Some(ep) = ctx.epochs {
                ctx.progress.heartbeat(ep.source_id(inst.id), self.epoch);
            }
        }
        Ok(())
    }

    fn report(&mut self, stats: &mut VertexStats) {
        for inst in &mut self.instances {
            inst.source.report(stats);
        }
    }

    fn take_event_log(&mut self, channel: xorflow_measure::log::Channel) {
        self.log = Some(channel);
    }

    fn close(&mut self) -> Result<(), OperatorError> {
        match self.log.take() {
            Some(ch) => Ok(ch.close()?),
            None => Ok(()),
        }
    }
}
