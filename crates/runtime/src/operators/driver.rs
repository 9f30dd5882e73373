//! The one vertex implementation: runs any [`Operator`] and writes the shared tail once.
//!
//! A step: back-pressure check, `tick`, `produce` (sources), up to [`BATCHES_PER_STEP`] input
//! batches (each processed, then its receive tag registered: docs/design.md, "Open output
//! buffers"), marker alignment, the frontier notification, `tick` again, marker forwarding and,
//! without tracking, end of stream.
//!
//! Markers (tracking `markers`): a vertex that does not act on its frontier forwards every rise of
//! its aligned marker at once (its outputs for the input before the marker are already pushed);
//! a notified vertex forwards once per step, after [`Operator::on_frontier`] and capped by
//! [`Operator::marker_cap`], so a marker never overtakes results it covers.

use super::{Operator, OperatorState, Outputs, Receipt, Vertex, BATCHES_PER_STEP};
use crate::batch::Msg;
use crate::channel::{Flush, InputPort};
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::progress::cut::{
    Covered, EpochCut, CHECKPOINT_BUFFERED_ELEMENTS, CHECKPOINT_BUFFERED_NS, CHECKPOINT_SNAPSHOTS,
    CHECKPOINT_SNAPSHOT_NS, RESTORED_FROM_STORE, RESTORED_LOCALLY,
};
use crate::progress::frontiers::InBand;
use crate::worker::ctx::WorkerCtx;
use xorflow_state::checkpoint::{Chain, FileRef};
use xorflow_tracking::{ComponentId, Time, INF};

/// A vertex instance running operator `Op`.
pub struct OperatorVertex<Op: Operator> {
    op: Op,
    component: ComponentId,
    /// `None` for sources.
    input: Option<InputPort<Op::In>>,
    out: Op::Out,
    /// The vertex acts on its frontier (windows, sinks, snapshots).
    notified: bool,
    /// The frontier last handed to [`Operator::on_frontier`].
    frontier: Time,
    /// The last marker forwarded (tracking `markers`).
    forwarded: Time,
    stats: VertexStats,
    /// Stateful operators with checkpoint epochs (every instance with input, with markers): the
    /// epoch frontier last acted on.
    epoch: u64,
    /// Stateful operators with checkpoints (every instance with input, with markers): batches
    /// of later epochs wait here.
    cut: Option<EpochCut<Op::In>>,
    /// The instance's snapshot chain, by size (when the next snapshot must be full).
    chain: Chain,
    /// The instance's name in checkpoints: `<vertex>/<worker>`.
    reporter: String,
    /// Event-log channel `<vertex>.in`: every input element's time ([`WorkerCtx::open_log`]).
    log_in: Option<xorflow_measure::log::Channel>,
    /// Time the outputs were full and the instance could not go on, ns (backpressure), and
    /// since when they are full now (0: they are not).
    blocked: (u64, u64),
}

/// Longest chain of snapshot files before a full snapshot (`xorflow_state::checkpoint::Chain`).
const MAX_CHAIN: usize = 16;
/// Counter: time the instance's outputs were full and it waited, ns (backpressure).
pub const BACKPRESSURE_NS: &str = "backpressure_ns";
/// The same for append-only state (`Operator::append_only`): its increments never re-state a
/// key, so only the manifest's length bounds the chain; a full snapshot every 256 checkpoints
/// costs the staged output once per 256.
const MAX_APPEND_ONLY_CHAIN: usize = 256;

impl<Op: Operator> OperatorVertex<Op> {
    /// An instance of vertex `name` in `component` reading `input` (`None` for a source) and
    /// writing `out`; `notified`: it acts on its frontier ([`Operator::on_frontier`]).
    pub fn new(
        name: &str,
        component: ComponentId,
        op: Op,
        input: Option<InputPort<Op::In>>,
        out: Op::Out,
        notified: bool,
    ) -> Self {
        let append_only = op.append_only();
        OperatorVertex {
            op,
            component,
            input,
            out,
            notified,
            frontier: 0,
            forwarded: 0,
            stats: VertexStats::new(name),
            epoch: 0,
            cut: None,
            chain: if append_only {
                Chain::append_only(MAX_APPEND_ONLY_CHAIN)
            } else {
                Chain::new(MAX_CHAIN)
            },
            reporter: name.to_string(),
            log_in: None,
            blocked: (0, 0),
        }
    }

    /// Processes one input batch: the operator, then (unless it keeps it) its receive tag.
    #[inline]
    fn process(
        op: &mut Op,
        component: ComponentId,
        b: crate::batch::Batch<Op::In>,
        out: &mut Op::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
        log: &mut Option<xorflow_measure::log::Channel>,
    ) -> Result<(), OperatorError> {
        let (lo, hi, epoch, tag) = (b.lo, b.hi, b.epoch, b.tag);
        if let Some(ch) = log {
            for e in &b.data {
                ch.log(e.time);
            }
        }
        stats.elements_in += b.data.len() as u64;
        stats.batches_in += 1;
        // What the batch produces belongs to its epoch (a no-op without epochs).
        out.set_epoch(epoch, ctx);
        if let Receipt::Done = op.on_batch(b, out, ctx, stats)? {
            ctx.ack_received(component, lo, hi, epoch, tag);
        }
        Ok(())
    }

    /// The instance's epoch frontier: trAcker's for its component, or with markers the lowest
    /// epoch all its input channels have delivered, stepped one held epoch at a time (the
    /// batches of an epoch are processed before the snapshot of the next one); `None` when it
    /// does not take part in the cut.
    fn epoch_frontier(&self, ctx: &WorkerCtx) -> Option<u64> {
        if ctx.progress.markers_in_band() {
            let cut = self.cut.as_ref()?;
            let aligned = self.input.as_ref()?.epochs.aligned();
            Some(aligned.min(cut.lowest_waiting().unwrap_or(INF)))
        } else if Op::STATEFUL {
            ctx.epoch_frontier(self.component)
        } else {
            None
        }
    }

    /// When the instance's epoch frontier has risen: snapshots a stateful instance (with a
    /// checkpointer), moves the operator to the new epoch, with markers sends the epoch's
    /// barrier on, and processes the batches that waited for it (`progress/cut.rs`). Returns
    /// whether it did anything.
    fn advance_epoch(&mut self, ctx: &mut WorkerCtx) -> Result<bool, OperatorError> {
        let Some(f) = self.epoch_frontier(ctx) else {
            return Ok(false);
        };
        if f <= self.epoch {
            return Ok(false);
        }
        if let Some(cut) = &mut self.cut {
            let versioning = cut.versioning();
            if let Some(covered) = cut.rise(f) {
                if Op::STATEFUL && versioning {
                    // Batches of epoch `from + 1` were processed: the state after `from` is the
                    // older version, and only from `from + 1` on is it the live one.
                    let first = Covered {
                        from: covered.from,
                        to: covered.from,
                    };
                    self.snapshot_to(first, true, ctx)?;
                    if covered.to > covered.from {
                        let rest = Covered {
                            from: covered.from + 1,
                            to: covered.to,
                        };
                        self.snapshot_to(rest, false, ctx)?;
                    }
                } else if Op::STATEFUL {
                    self.snapshot_to(covered, false, ctx)?;
                }
            }
        }
        self.epoch = f;
        self.op.on_epoch(f, ctx);
        if ctx.progress.markers_in_band() && f != INF {
            // The barrier: a marker-only batch of the new epoch on every channel (the marker is
            // the last one forwarded, which the receivers' time alignment ignores).
            self.out.set_epoch(f, ctx);
            self.out.marker(self.forwarded, ctx);
        }
        ctx.now_ns = crate::measure::clock::now_ns();
        while let Some((mut b, waited, ch)) = self.cut.as_mut().and_then(|c| c.release(ctx.now_ns))
        {
            self.stats
                .count(CHECKPOINT_BUFFERED_NS, waited * b.data.len() as u64);
            let markers = std::mem::take(&mut b.markers);
            let has_data = !b.data.is_empty();
            if has_data && self.cut.as_mut().is_some_and(|c| c.starts_version(b.epoch)) {
                self.op.begin_version(b.epoch, ctx)?;
            }
            if has_data {
                Self::process(
                    &mut self.op,
                    self.component,
                    b,
                    &mut self.out,
                    ctx,
                    &mut self.stats,
                    &mut self.log_in,
                )?;
            }
            if let Some(input) = &mut self.input {
                let (notified, forwarded) = (self.notified, &mut self.forwarded);
                Self::observe_markers(input, &mut self.out, notified, forwarded, ch, markers, ctx);
            }
        }
        Ok(true)
    }

    /// Aligns the time markers that came on channel `ch`; a vertex that is not notified
    /// forwards a risen aligned marker at once (a notified one in [`Self::notify`]). With
    /// markers and checkpoints, a channel's `Marker(INF)` also ends its epochs.
    fn observe_markers(
        input: &mut InputPort<Op::In>,
        out: &mut Op::Out,
        notified: bool,
        forwarded: &mut Time,
        ch: usize,
        markers: Vec<Time>,
        ctx: &mut WorkerCtx,
    ) {
        for m in markers {
            if m == INF {
                input.epochs.observe(ch, INF);
            }
            let Some(a) = input.aligner.observe(ch, m) else {
                continue;
            };
            if notified {
                ctx.frontiers.seen_ns = crate::measure::clock::now_ns();
            } else {
                out.marker(a, ctx);
                *forwarded = a;
            }
        }
    }

    /// The cut of a stateful instance starting in epoch `epoch`: versioned if the job asks for
    /// it and the operator keeps versions, else buffered.
    fn new_cut(&self, epoch: u64, ctx: &WorkerCtx) -> EpochCut<Op::In> {
        let cut = EpochCut::starting_at(epoch);
        match ctx.versioned_cut && Op::STATEFUL && self.op.versioned() {
            true => cut.versioned(),
            false => cut,
        }
    }

    /// Takes the snapshot covering `covered` and hands it to the checkpointer; `older`: it
    /// states an older version than the live state (versioned cut), which a local savepoint
    /// could not hold, so none is taken.
    fn snapshot_to(
        &mut self,
        covered: Covered,
        older: bool,
        ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        let t0 = crate::measure::clock::now_ns();
        let full = self.chain.next_is_full();
        let state = self.op.snapshot(covered.to, full)?;
        let OperatorState::Delta(delta) = state else {
            return Ok(());
        };
        if let Some(d) = (ctx.config.snapshot_work).filter(|_| !delta.records.is_empty()) {
            // Benchmarks: the synchronous phase of a larger state's snapshot.
            std::thread::sleep(d);
        }
        // The chain decides by encoded size; the file itself is written by the coordinator.
        let bytes = delta.records.iter().map(|r| r.encoded_len()).sum::<usize>() as u64;
        self.chain.push(FileRef {
            name: String::new(),
            bytes,
            full,
        });
        self.stats.count(CHECKPOINT_SNAPSHOTS, 1);
        if let Some(c) = &ctx.checkpointer {
            c.state(self.reporter.clone(), covered, delta, self.op.holds());
            // After the hand-over: the file is written while the store syncs its savepoint.
            if !older {
                self.op
                    .savepoint(covered.from..=covered.to, c.committed())?;
            }
        }
        self.stats
            .count(CHECKPOINT_SNAPSHOT_NS, crate::measure::clock::now_ns() - t0);
        Ok(())
    }

    /// Resumes from checkpoint `r`: a stateful instance restores its chain and starts in the
    /// epoch after the checkpoint (its first snapshot is a full one: the chain starts anew);
    /// then the operator's own [`Operator::on_resume`].
    fn resume(
        &mut self,
        r: &crate::checkpoint::Resume,
        ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        if self.cut.is_some() {
            if Op::STATEFUL {
                if self.op.restore_local()? {
                    self.stats.count(RESTORED_LOCALLY, 1);
                } else {
                    let chain = r.chain(&self.reporter)?;
                    self.op.restore(&chain)?;
                    self.stats.count(RESTORED_FROM_STORE, 1);
                }
            }
            let first = r.first_epoch();
            self.cut = Some(self.new_cut(first, ctx));
            self.epoch = first;
            self.op.on_epoch(first, ctx);
        }
        self.op.on_resume(r, ctx)
    }

    /// What the input channels say about progress (a source's "input" has ended from the start).
    fn in_band(&self) -> InBand {
        match &self.input {
            Some(i) => InBand {
                aligned: i.aligner.aligned(),
                ended: i.all_ended(),
            },
            None => InBand {
                aligned: 0,
                ended: true,
            },
        }
    }

    /// Pops and processes up to [`BATCHES_PER_STEP`] input messages while the outputs take more.
    /// Returns whether any message was processed.
    fn drain(&mut self, ctx: &mut WorkerCtx) -> Result<bool, OperatorError> {
        let OperatorVertex {
            op,
            component,
            input,
            out,
            notified,
            forwarded,
            stats,
            cut,
            log_in,
            ..
        } = self;
        let Some(input) = input else {
            return Ok(false);
        };
        let barriers = ctx.progress.markers_in_band() && cut.is_some();
        let mut n = 0;
        while n < BATCHES_PER_STEP && (Op::DRAINS_WHEN_BLOCKED || !out.blocked()) {
            match input.pop(&mut ctx.traffic) {
                Some(Msg::Data(mut b)) => {
                    let ch = input.last_channel();
                    n += 1;
                    if barriers {
                        // Aligned checkpoints: the batch's epoch is its channel's barrier, and
                        // a batch of a later epoch waits whole, markers included (the channel
                        // is blocked until the others deliver that barrier too).
                        input.epochs.observe(ch, b.epoch);
                        if let Some(c) = cut.as_mut().filter(|c| !c.admits(b.epoch)) {
                            stats.count(CHECKPOINT_BUFFERED_ELEMENTS, b.data.len() as u64);
                            c.wait(b, crate::measure::clock::now_ns(), ch);
                            continue;
                        }
                    }
                    let markers = std::mem::take(&mut b.markers);
                    if !b.data.is_empty() {
                        ctx.now_ns = crate::measure::clock::now_ns();
                        match cut {
                            Some(c) if !c.admits(b.epoch) => {
                                stats.count(CHECKPOINT_BUFFERED_ELEMENTS, b.data.len() as u64);
                                c.wait(b, ctx.now_ns, ch);
                            }
                            Some(c) => {
                                if c.starts_version(b.epoch) {
                                    op.begin_version(b.epoch, ctx)?;
                                }
                                Self::process(op, *component, b, out, ctx, stats, log_in)?;
                            }
                            None => Self::process(op, *component, b, out, ctx, stats, log_in)?,
                        }
                    }
                    Self::observe_markers(input, out, *notified, forwarded, ch, markers, ctx);
                }
                Some(Msg::End) => n += 1,
                None => break,
            }
        }
        Ok(n > 0)
    }

    /// Hands a risen frontier to the operator and forwards a notified vertex's marker.
    fn notify(&mut self, ctx: &mut WorkerCtx) -> Result<bool, OperatorError> {
        // The epoch first: results emitted on this frontier belong to the new epoch.
        let mut did = self.advance_epoch(ctx)?;
        let in_band = self.in_band();
        let f = ctx.frontier(self.component, in_band);
        if self.notified && f > self.frontier {
            self.op
                .on_frontier(f, &mut self.out, ctx, &mut self.stats)?;
            self.frontier = f;
            did = true;
        }
        did |= self.op.tick(f, &mut self.out, ctx, &mut self.stats);
        if self.notified {
            let fwd = in_band.aligned.min(self.op.marker_cap());
            if fwd > self.forwarded {
                self.out.marker(fwd, ctx);
                self.forwarded = fwd;
                did = true;
            }
        }
        Ok(did)
    }
}

impl<Op: Operator> Vertex for OperatorVertex<Op> {
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        // With markers every instance with input aligns barriers; with trAcker only stateful
        // ones wait (the others' batches are ordered by trAcker's epoch slots).
        let aligns = Op::STATEFUL || (ctx.progress.markers_in_band() && self.input.is_some());
        if aligns && ctx.epochs.is_some() && ctx.checkpointer.is_some() {
            self.cut = Some(self.new_cut(0, ctx));
            self.reporter = format!("{}/{}", self.stats.name, ctx.index);
        }
        if self.input.is_some() {
            self.log_in = ctx.open_log(&format!("{}.in", self.stats.name))?;
        } else if let Some(ch) = ctx.open_log(&format!("{}.out", self.stats.name))? {
            self.op.take_event_log(ch);
        }
        self.op.open(ctx)?;
        if let Some(r) = ctx.resume.clone() {
            self.resume(&r, ctx)?;
        }
        Ok(())
    }

    fn step(&mut self, ctx: &mut WorkerCtx) -> Result<bool, OperatorError> {
        let mut did = false;
        if self.out.blocked() {
            let sent = self.out.flush(ctx, Flush::Due);
            if !sent && !Op::DRAINS_WHEN_BLOCKED {
                if self.blocked.1 == 0 {
                    self.blocked.1 = ctx.now_ns.max(1);
                }
                return Ok(false);
            }
            did |= sent;
        }
        if self.blocked.1 != 0 {
            self.blocked.0 += ctx.now_ns.saturating_sub(self.blocked.1);
            self.blocked.1 = 0;
        }
        let f = ctx.frontier(self.component, self.in_band());
        did |= self.op.tick(f, &mut self.out, ctx, &mut self.stats);
        did |= self.op.produce(&mut self.out, ctx, &mut self.stats)?;
        did |= self.drain(ctx)?;
        did |= self.notify(ctx)?;
        let ended = self.in_band().ended && self.op.exhausted();
        did |= self.out.end_when(ended, ctx);
        match self.out.failure() {
            Some(e) => Err(e),
            None => Ok(did),
        }
    }

    fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        self.out.flush(ctx, which)
    }

    fn ended(&self) -> bool {
        let input_closed = self
            .input
            .as_ref()
            .is_none_or(|i| i.all_ended() || i.aligner.aligned() == INF);
        self.out.ended() && input_closed
    }

    fn snapshot(&mut self, epoch: u64, full: bool) -> Result<OperatorState, OperatorError> {
        self.op.snapshot(epoch, full)
    }

    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError> {
        self.op.restore(chain)
    }

    fn close(&mut self) -> Result<(), OperatorError> {
        if let Some(ch) = self.log_in.take() {
            ch.close().map_err(|e| format!("event log: {e}"))?;
        }
        self.op.close()
    }

    fn stats(&mut self) -> VertexStats {
        let mut s = self.stats.clone();
        self.op.report(&mut s);
        s.count(BACKPRESSURE_NS, self.blocked.0);
        s
    }

    fn live_counts(&self, ctx: &WorkerCtx) -> crate::measure::live::InstanceCounts {
        let ongoing = match self.blocked.1 {
            0 => 0,
            since => ctx.now_ns.saturating_sub(since),
        };
        // A frontier where one means something: a source's heartbeat, a notified vertex's
        // (window, sink) frontier; an element-wise vertex acts on none, and the frontier table
        // of a component nobody here is notified of is not kept up to date.
        let (frontier, instances) = match (self.is_source(), self.notified) {
            (true, _) => (self.op.heartbeat(), self.op.hosted_instances()),
            (false, true) => (Some(ctx.frontier(self.component, self.in_band())), 1),
            (false, false) => (None, 1),
        };
        let (queued, capacity) = self.input.as_ref().map_or((0, 0), |i| i.fill());
        crate::measure::live::InstanceCounts {
            elements_in: self.stats.elements_in,
            elements_out: self.stats.elements_out,
            blocked_ns: self.blocked.0 + ongoing,
            frontier,
            instances: instances as u32,
            queue_fill: if capacity == 0 {
                0.0
            } else {
                queued as f64 / capacity as f64
            },
        }
    }

    fn is_source(&self) -> bool {
        self.input.is_none()
    }

    fn notified_component(&self) -> Option<ComponentId> {
        self.notified.then_some(self.component)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::channel::channel;
    use crate::config::{RuntimeConfig, TrackingMode};
    use crate::wake::Unparkers;
    use std::sync::{Arc, Mutex};
    use xorflow_core::Element;

    /// Records every lifecycle call.
    struct Recorder(Arc<Mutex<Vec<String>>>);

    impl Operator for Recorder {
        type In = u64;
        type Out = ();
        fn open(&mut self, _: &mut WorkerCtx) -> Result<(), OperatorError> {
            self.0.lock().unwrap().push("open".into());
            Ok(())
        }
        fn on_batch(
            &mut self,
            b: Batch<u64>,
            _: &mut (),
            _: &mut WorkerCtx,
            _: &mut VertexStats,
        ) -> Result<Receipt, OperatorError> {
            self.0
                .lock()
                .unwrap()
                .push(format!("batch {}", b.data.len()));
            Ok(Receipt::Done)
        }
        fn on_frontier(
            &mut self,
            f: Time,
            _: &mut (),
            _: &mut WorkerCtx,
            _: &mut VertexStats,
        ) -> Result<(), OperatorError> {
            let f = if f == INF {
                "INF".into()
            } else {
                f.to_string()
            };
            self.0.lock().unwrap().push(format!("frontier {f}"));
            Ok(())
        }
        fn close(&mut self) -> Result<(), OperatorError> {
            self.0.lock().unwrap().push("close".into());
            Ok(())
        }
    }

    fn batch(n: u64) -> Msg<u64> {
        Msg::Data(Batch::untracked(
            (0..n).map(|t| Element::new(t, t)).collect(),
        ))
    }

    #[test]
    fn lifecycle_runs_in_order_and_notifies_end_of_input_once() {
        let config = RuntimeConfig {
            tracking: TrackingMode::None,
            ..RuntimeConfig::default()
        };
        let mut ctx = WorkerCtx::new(0, 0, 1, &config, 1, 1, Arc::new(Unparkers::new(1)));
        let log = Arc::new(Mutex::new(Vec::new()));
        let ch = channel(8);
        let input = InputPort::new(vec![ch.clone()]);
        let op = Recorder(log.clone());
        let mut v = OperatorVertex::new("rec", 0, op, Some(input), (), true);
        v.open(&mut ctx).unwrap();
        ch.push(batch(3)).unwrap();
        ch.push(batch(2)).unwrap();
        assert!(v.step(&mut ctx).unwrap());
        assert!(!v.ended(), "the input has not ended");
        ch.push(Msg::End).unwrap();
        v.step(&mut ctx).unwrap();
        v.step(&mut ctx).unwrap();
        assert!(v.ended());
        v.close().unwrap();
        let got = log.lock().unwrap().clone();
        let want = ["open", "batch 3", "batch 2", "frontier INF", "close"];
        assert_eq!(got, want);
        let s = v.stats();
        assert_eq!((s.elements_in, s.batches_in), (5, 2));
    }

    #[test]
    fn operators_are_stateless_until_they_say_otherwise() {
        let ch = channel::<u64>(1);
        let op = Recorder(Arc::default());
        let mut v = OperatorVertex::new("rec", 0, op, Some(InputPort::new(vec![ch])), (), false);
        assert_eq!(v.snapshot(7, true).unwrap(), OperatorState::Stateless);
        v.restore(&[]).unwrap();
        let mut d = xorflow_state::delta::Delta::new(true);
        d.records
            .push(xorflow_state::delta::Record::Delete { key: vec![1] });
        let e = v.restore(&[d]).unwrap_err();
        assert!(e.to_string().contains("cannot restore 1 records"), "{e}");
        assert_eq!(v.notified_component(), None);
    }
}
