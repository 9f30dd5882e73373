//! A vertex instance's output: every outgoing edge (`channel/output.rs`, each through its
//! channels) and the consumers chained into it ([`chained`]), behind the one port an operator
//! pushes into (as timely's output handles sit above its pushers).

pub mod chained;

use crate::channel::{EdgeOutput, Flush};
use crate::worker::ctx::WorkerCtx;
use chained::ChainedEdge;
use xorflow_core::Element;
use xorflow_tracking::{ComponentId, Slot, Time};

/// All outgoing edges of a vertex instance (a stream consumed by several vertices is copied to
/// each): through channels, and into consumers chained into this instance (`port/chained.rs`).
pub struct OutputPort<T> {
    edges: Vec<EdgeOutput<T>>,
    chained: Vec<ChainedEdge<T>>,
    /// End-of-stream markers have been sent.
    ended: bool,
    /// Elements pushed so far (the vertex's `elements_out`, for operators that do not count
    /// their own: `operators/unary.rs`, `inspect.rs`, `epoch_snapshot.rs`, `chain.rs`).
    pushed: u64,
}

impl<T: Clone + Send> OutputPort<T> {
    /// A port over `edges` (empty: the stream has no consumer, elements are discarded).
    pub fn new(edges: Vec<EdgeOutput<T>>) -> Self {
        Self::with_chained(edges, Vec::new())
    }

    /// A port over `edges` and the chained consumers `chained`.
    pub fn with_chained(edges: Vec<EdgeOutput<T>>, chained: Vec<ChainedEdge<T>>) -> Self {
        OutputPort {
            edges,
            chained,
            ended: false,
            pushed: 0,
        }
    }

    /// Elements pushed into this port so far (whether or not it has consumers).
    #[inline]
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// The first error of a chained consumer, once (the producer's step fails with it).
    pub fn failure(&mut self) -> Option<crate::error::OperatorError> {
        self.chained.iter_mut().find_map(ChainedEdge::failure)
    }

    /// Sets the tracking range of the elements pushed from now on: they derive from input tracked
    /// over slots `[lo, hi]` (an input batch's range), so their batches' tags must cover it.
    ///
    /// Why not the elements' own times: a deferred output (a window's result, event time `b - 1`)
    /// is tracked in its creator's slot, so that with a sharded tracker the whole tree of an element
    /// stays in one shard (docs/design.md, requirement 8, first option; docs/sharding-notes.md). A
    /// range that covers the creator's slot is enough for that and is never early: tracking slots
    /// are at or below the event-time slots of everything derived. `None`: each element's own time
    /// (sources).
    #[inline]
    pub fn set_lineage(&mut self, slots: Option<(Slot, Slot)>, ctx: &WorkerCtx) {
        let g = ctx.granularity;
        let r = slots.map(|(lo, hi)| (g.start(lo), g.start(hi)));
        for e in &mut self.edges {
            e.set_lineage(r);
        }
        for c in &mut self.chained {
            c.lineage = r;
        }
    }

    /// Sets the checkpoint epoch of the elements pushed from now on (the input batch's, or a
    /// source's current epoch); open buffers of an earlier epoch are sent first. A no-op without
    /// checkpoint epochs.
    #[inline]
    pub fn set_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        if ctx.epochs.is_none() {
            return;
        }
        for e in &mut self.edges {
            e.set_epoch(epoch, &mut ctx.sending());
        }
        for c in &mut self.chained {
            c.set_epoch(epoch, ctx);
        }
    }

    /// Components of the vertices this port feeds (of their instances, where each has its own;
    /// a chained consumer's own, whose frontier its downstream components follow).
    pub fn components(&self) -> impl Iterator<Item = ComponentId> + '_ {
        (self.edges.iter().flat_map(|e| e.components()))
            .chain(self.chained.iter().map(ChainedEdge::component))
    }

    /// Sends one element (batched). The element's send tag is registered at the next
    /// [`OutputPort::commit`] or when its batch fills up, whichever comes first.
    #[inline]
    pub fn push(&mut self, el: Element<T>, ctx: &mut WorkerCtx) {
        self.pushed += 1;
        match (self.edges.len(), self.chained.len()) {
            (0, 0) => {}
            (1, 0) => self.edges[0].push(el, &mut ctx.sending()),
            (0, 1) => self.chained[0].push_all(std::iter::once(el), ctx),
            (n, 0) => {
                let mut s = ctx.sending();
                for e in &mut self.edges[..n - 1] {
                    e.push(el.clone(), &mut s);
                }
                self.edges[n - 1].push(el, &mut s);
            }
            (_, c) => {
                let mut s = ctx.sending();
                for e in &mut self.edges {
                    e.push(el.clone(), &mut s);
                }
                for ch in &mut self.chained[..c - 1] {
                    ch.push_all(std::iter::once(el.clone()), ctx);
                }
                self.chained[c - 1].push_all(std::iter::once(el), ctx);
            }
        }
    }

    /// Sends every element of `elements` (batched, like [`OutputPort::push`]); cheaper per element
    /// than repeated `push` because partitioning is dispatched once.
    #[inline]
    pub fn push_all(&mut self, elements: impl Iterator<Item = Element<T>>, ctx: &mut WorkerCtx) {
        let (len, exact) = elements.size_hint();
        if exact == Some(len) && self.chained.is_empty() && self.edges.len() == 1 {
            // Counted up front: the edge's runs move the elements with `Vec::extend`, which an
            // `inspect` in between would slow to one check per element.
            self.pushed += len as u64;
            self.edges[0].push_all(elements, &mut ctx.sending());
            return;
        }
        let pushed = &mut self.pushed;
        let mut counted = |_: &Element<T>| *pushed += 1;
        match (self.edges.len(), self.chained.len()) {
            (0, 0) => elements.for_each(|el| counted(&el)),
            (1, 0) => self.edges[0].push_all(elements.inspect(counted), &mut ctx.sending()),
            (0, 1) => self.chained[0].push_all(elements.inspect(counted), ctx),
            _ => {
                for el in elements {
                    self.push(el, ctx);
                }
            }
        }
    }

    /// Sends the elements of `batch` (batched, like [`OutputPort::push_all`]); into a single
    /// forward edge the vector itself is passed on when nothing is buffered
    /// ([`EdgeOutput::push_vec`]).
    #[inline]
    pub fn push_vec(&mut self, batch: Vec<Element<T>>, ctx: &mut WorkerCtx) {
        if self.chained.is_empty() && self.edges.len() == 1 {
            self.pushed += batch.len() as u64;
            self.edges[0].push_vec(batch, &mut ctx.sending());
        } else {
            self.push_all(batch.into_iter(), ctx);
        }
    }

    /// Registers send tags for everything buffered so far, and hands what chained consumers
    /// were given to them, which commit theirs. Call after each processed input batch, before
    /// registering that batch's receive tag.
    #[inline]
    pub fn commit(&mut self, ctx: &mut WorkerCtx) {
        let mut s = ctx.sending();
        for e in &mut self.edges {
            e.commit(&mut s);
        }
        for c in &mut self.chained {
            c.hand_over(ctx);
        }
    }

    /// Sends the partial batches `which` says and retries batches held back by full channels.
    /// Returns whether anything was sent.
    pub fn flush(&mut self, ctx: &mut WorkerCtx, which: Flush) -> bool {
        let mut sent = false;
        let mut s = ctx.sending();
        for e in &mut self.edges {
            sent |= e.flush(&mut s, which);
        }
        for c in &mut self.chained {
            sent |= c.flush(ctx, which);
        }
        sent
    }

    /// Sends `Marker(time)` to every instance of every consumer (tracking `markers`: a broadcast
    /// per edge, docs/design.md, "trAcker requirements"), after the elements buffered so far. `Marker(INF)` ends the
    /// stream.
    pub fn marker(&mut self, time: Time, ctx: &mut WorkerCtx) {
        let mut s = ctx.sending();
        for e in &mut self.edges {
            e.marker(time, &mut s);
        }
        for c in &mut self.chained {
            c.marker(time, ctx);
        }
        if time == xorflow_tracking::INF {
            self.ended = true;
        }
    }

    /// Tracking `none`: once `input_ended` holds, sends all buffered elements and an end-of-stream
    /// marker on every channel, once. Returns whether it sent them now. (trAcker needs no markers:
    /// the frontier reaching `INF` ends the run.)
    pub fn end_when(&mut self, input_ended: bool, ctx: &mut WorkerCtx) -> bool {
        if self.ended || !ctx.progress.ends_in_band() || !input_ended {
            return false;
        }
        let mut s = ctx.sending();
        for e in &mut self.edges {
            e.end(&mut s);
        }
        for c in &mut self.chained {
            c.end(ctx);
        }
        self.ended = true;
        true
    }

    /// True once the end-of-stream markers (or `Marker(INF)`) are sent and delivered into the
    /// channels.
    pub fn ended(&self) -> bool {
        self.ended && self.is_idle() && self.chained.iter().all(ChainedEdge::ended)
    }

    /// True while some batch waits for room in a full channel: the vertex must not take more input.
    #[inline]
    pub fn blocked(&self) -> bool {
        self.edges.iter().any(EdgeOutput::blocked) || self.chained.iter().any(ChainedEdge::blocked)
    }

    /// True when nothing is buffered or waiting (in chained consumers' outputs either).
    pub fn is_idle(&self) -> bool {
        !self.edges.iter().any(|e| e.blocked() || e.has_buffered())
            && self.chained.iter().all(ChainedEdge::is_idle)
    }
}
