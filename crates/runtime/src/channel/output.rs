//! The sending side of one edge of a vertex instance: partitioning, batching, send tags and
//! backpressure. It takes narrow handles ([`SendCtx`]), not the worker's context.
//!
//! Elements are appended to one open buffer per target instance. A buffer's send tag is registered
//! with the local acker at every *commit* (after each processed input batch, before that batch's
//! receive tag): the tag covers the slot range of the elements buffered so far, and when the range
//! grows the old registration is cancelled (XOR-ed again) and the new one registered. So every
//! element produced from an input batch is covered before the input's receive tag, as docs/design.md,
//! requirement 1 requires, while batches still fill up across many input batches.

use crate::batch::{Batch, Msg};
use crate::channel::handles::SendCtx;
use crate::channel::Channel;
use crate::measure::traffic::MessageKind;
use crate::net::link::RemoteOut;
use std::collections::VecDeque;
use std::sync::Arc;
use xorflow_core::Element;
use xorflow_tracking::range_tag::RangeTag;
use xorflow_tracking::{ComponentId, Slot, Time};

/// A round-robin edge's plan for a batch of `len` elements over `n` targets, the turn at
/// `start`: `(target, run length)` per target in turn, and the turn after the batch. Each target
/// gets what taking turns one element at a time would give it (the first `len % n` targets
/// from `start` one more than the others), in one contiguous run: the sender appends a run to
/// one buffer instead of switching buffers every element (chain K = 10, 1 process x 2
/// workers: 41.4-42.6 -> 48.7-49.8 M elements/s, docs/benchmarks.md).
pub fn round_robin_runs(
    start: usize,
    len: usize,
    n: usize,
) -> (impl Iterator<Item = (usize, usize)>, usize) {
    let (base, extra) = (len / n, len % n);
    let runs = (0..n).map(move |k| ((start + k) % n, base + usize::from(k < extra)));
    (runs, (start + extra) % n)
}

/// How long a sender whose batches are held back (backpressure) parks before it retries, ns.
const HELD_BACK_RETRY_NS: u64 = 1_000_000;

/// How an edge picks the target instance of each element.
pub enum Partitioner<T> {
    /// Same worker.
    Forward,
    /// Target instances in turn: a batch's elements in contiguous runs, each target as many as
    /// taking turns one element at a time would give it ([`round_robin_runs`]).
    RoundRobin {
        /// Next target.
        next: usize,
    },
    /// `hash(element) mod P`; the function must return a well-mixed 64-bit hash.
    Hash(Arc<dyn Fn(&T) -> u64 + Send + Sync>),
}

/// Encodes a channel message into a frame (set where the element type is serializable); returns
/// the message back when the channel has no credit.
pub type RemoteSend<T> = fn(&RemoteOut, Msg<T>) -> Result<u64, Msg<T>>;

/// Which partial batches a flush sends (held-back batches are retried by every flush).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Those open longer than the flush timeout (`--flush-timeout`).
    Due,
    /// The worker found nothing else to do: those that are due; with `--batch-flush-on-idle`
    /// all of them; without it, also those for a vertex on this same worker that fall due
    /// within the timer slack. A park may overshoot by the slack (`--timer-slack`), so holding
    /// such a batch saves no wake-up and costs a park: with a latency budget (slack and flush
    /// timeout of several ms) each stage of a chain on one worker waited about a whole budget,
    /// 11 ms over the YSB's five hops at 2 ms (docs/cpu.md, "Batches for the same worker").
    /// With a slack well under the timeout (`--timer-slack 50us`) they still fill up.
    Idle,
    /// Every one for a vertex on this same worker, and those that are due: after each step of
    /// a pass that follows an idle flush which sent some (`worker/mod.rs`), so that one pass
    /// over the vertices (upstream first) carries them through a chain of stages.
    SameWorker,
    /// All of them (an epoch's output before its snapshot).
    All,
}

/// Where a target's batches go.
pub enum OutLink<T> {
    /// A queue to local worker `.0` (local index, to wake it).
    Local(usize, Channel<T>),
    /// A remote channel.
    Remote(RemoteOut, RemoteSend<T>),
}

struct Target<T> {
    /// Tracking component of the receiving instance (the vertex's, or the instance's own:
    /// `xorflow_core::VertexDesc::instance_components`).
    component: ComponentId,
    link: OutLink<T>,
    buf: Vec<Element<T>>,
    tmin: Time,
    tmax: Time,
    opened_ns: u64,
    /// The open buffer's send tag over its slots (`xorflow_tracking::range_tag`).
    range_tag: RangeTag,
    /// Every buffered element was appended without a lineage range (`Batch::exact`).
    exact: bool,
    /// Markers to send after the buffered elements (tracking `markers`).
    markers: Vec<Time>,
    pending: VecDeque<Msg<T>>,
}

/// One outgoing edge of a vertex instance.
pub struct EdgeOutput<T> {
    partitioner: Partitioner<T>,
    targets: Vec<Target<T>>,
    /// Tracking range (time units) of the input the next elements derive from; `None`: each
    /// element's own time (sources). See [`EdgeOutput::set_lineage`].
    lineage: Option<(Time, Time)>,
    /// Checkpoint epoch of the elements pushed now and of every open buffer
    /// ([`EdgeOutput::set_epoch`]).
    epoch: u64,
}

impl<T: Send> EdgeOutput<T> {
    /// An edge into a vertex, one link per receiving instance in partition order (a forward edge
    /// has exactly one), with the tracking component of each.
    ///
    /// # Panics
    /// If `components` and `links` differ in length.
    pub fn new(
        components: Vec<ComponentId>,
        partitioner: Partitioner<T>,
        links: Vec<OutLink<T>>,
    ) -> Self {
        assert_eq!(components.len(), links.len(), "a component per target");
        EdgeOutput {
            partitioner,
            targets: links
                .into_iter()
                .zip(components)
                .map(|(link, component)| Target {
                    component,
                    link,
                    buf: Vec::new(),
                    tmin: 0,
                    tmax: 0,
                    opened_ns: 0,
                    range_tag: RangeTag::new(),
                    exact: true,
                    markers: Vec::new(),
                    pending: VecDeque::new(),
                })
                .collect(),
            lineage: None,
            epoch: 0,
        }
    }

    /// Sets the tracking range (time units) of the elements pushed from now on (`None`: each
    /// element's own time); the output port's `set_lineage` converts slots.
    #[inline]
    pub fn set_lineage(&mut self, range: Option<(Time, Time)>) {
        self.lineage = range;
    }

    /// Components of the receiving vertex's instances, each once.
    pub fn components(&self) -> Vec<ComponentId> {
        let mut c: Vec<ComponentId> = self.targets.iter().map(|t| t.component).collect();
        c.sort_unstable();
        c.dedup();
        c
    }

    #[inline]
    pub fn push(&mut self, el: Element<T>, ctx: &mut SendCtx<'_>) {
        self.push_all(std::iter::once(el), ctx);
    }

    /// Sends every element of `elements`. The partitioner is matched once per call, not per
    /// element, so a batch's loop is only target choice, append and the full-batch check.
    #[inline]
    pub fn push_all(&mut self, elements: impl Iterator<Item = Element<T>>, ctx: &mut SendCtx<'_>) {
        let EdgeOutput {
            partitioner,
            targets,
            lineage,
            epoch,
        } = self;
        let lineage = *lineage;
        let n = targets.len();
        match partitioner {
            Partitioner::Forward => {
                let mut elements = elements;
                Self::append_run(
                    *epoch,
                    &mut targets[0],
                    &mut elements,
                    usize::MAX,
                    lineage,
                    ctx,
                );
            }
            Partitioner::RoundRobin { .. } if n == 1 => {
                // One target takes every turn: a forward edge.
                let mut elements = elements;
                Self::append_run(
                    *epoch,
                    &mut targets[0],
                    &mut elements,
                    usize::MAX,
                    lineage,
                    ctx,
                );
            }
            Partitioner::RoundRobin { next } => {
                let mut elements = elements;
                let (len, exact) = elements.size_hint();
                if n > 1 && exact == Some(len) && len >= n {
                    // In runs: each target gets a contiguous run of the batch, as many elements
                    // as alternating one by one from `next` would give it (the first `len % n`
                    // targets from `next` one more), and `next` moves on as far. One target's
                    // buffer stays in registers for a run instead of switching every element.
                    let (runs, after) = round_robin_runs(*next, len, n);
                    for (target, run) in runs {
                        Self::append_run(
                            *epoch,
                            &mut targets[target],
                            &mut elements,
                            run,
                            lineage,
                            ctx,
                        );
                    }
                    *next = after;
                }
                // A batch smaller than the targets (or of unknown length): one by one.
                let mut i = *next;
                for el in elements {
                    Self::append(*epoch, &mut targets[i], el, lineage, ctx);
                    i += 1;
                    if i == n {
                        i = 0;
                    }
                }
                *next = i;
            }
            Partitioner::Hash(h) if n.is_power_of_two() => {
                // The same target as `% n`, without a 64-bit division per element (20-90 cycles
                // by CPU, the slow end on older Intel Xeons; a mask is 1). timely's exchange
                // does the same.
                let mask = n as u64 - 1;
                for el in elements {
                    let i = (h(&el.data) & mask) as usize;
                    Self::append(*epoch, &mut targets[i], el, lineage, ctx);
                }
            }
            Partitioner::Hash(h) => {
                for el in elements {
                    let i = (h(&el.data) % n as u64) as usize;
                    Self::append(*epoch, &mut targets[i], el, lineage, ctx);
                }
            }
        }
    }

    /// Sends the elements of `batch`, as [`EdgeOutput::push_all`] would; into a forward edge
    /// with nothing buffered, the vector itself becomes the open buffer (sent at once when
    /// full) instead of being copied into one: a `map` whose output type has its input's
    /// layout then passes its input batch on in place, as timely hands on containers.
    #[inline]
    pub fn push_vec(&mut self, batch: Vec<Element<T>>, ctx: &mut SendCtx<'_>) {
        let size = ctx.batching.batch_size;
        match (&self.partitioner, self.lineage) {
            (Partitioner::Forward, Some((lo, hi))) if !batch.is_empty() && batch.len() <= size => {
                let t = &mut self.targets[0];
                if !t.buf.is_empty() || !t.markers.is_empty() {
                    return self.push_all(batch.into_iter(), ctx);
                }
                t.opened_ns = ctx.now_ns;
                (t.tmin, t.tmax, t.exact) = (lo, hi, false);
                t.buf = batch;
                if t.buf.len() >= size {
                    Self::seal_and_send(self.epoch, t, ctx);
                }
            }
            _ => self.push_all(batch.into_iter(), ctx),
        }
    }

    /// Appends `el` to target `t`'s open buffer, sending the buffer when it is full. The buffer's
    /// tracking range grows by `lineage` (or the element's own time without one).
    #[inline(always)]
    fn append(
        epoch: u64,
        t: &mut Target<T>,
        el: Element<T>,
        lineage: Option<(Time, Time)>,
        ctx: &mut SendCtx<'_>,
    ) {
        let (lo, hi) = lineage.unwrap_or((el.time, el.time));
        if t.buf.is_empty() {
            if t.markers.is_empty() {
                t.opened_ns = ctx.now_ns;
            }
            t.tmin = lo;
            t.tmax = hi;
            t.exact = lineage.is_none();
        } else {
            t.tmin = t.tmin.min(lo);
            t.tmax = t.tmax.max(hi);
            t.exact &= lineage.is_none();
        }
        t.buf.push(el);
        if t.buf.len() >= ctx.batching.batch_size {
            Self::seal_and_send(epoch, t, ctx);
        }
    }

    /// Appends the next `run` elements of `elements` (all that are left if fewer) to target
    /// `t`, as [`EdgeOutput::append`] one by one would. The elements are moved with
    /// `Vec::extend`, in stretches that end where a buffer fills up, and the buffer's range is
    /// widened once per stretch: by the lineage range, or without one (a source's own elements)
    /// by the stretch's lowest and highest time, found in a separate pass over the moved
    /// elements. No per-element range or fill check in the move (a forward hop or a round-robin
    /// run, `map` between them, cost 10.5 ns per element against timely's 6.9:
    /// docs/benchmarks.md, "The hot path next to timely's").
    #[inline(always)]
    fn append_run(
        epoch: u64,
        t: &mut Target<T>,
        elements: &mut impl Iterator<Item = Element<T>>,
        mut run: usize,
        lineage: Option<(Time, Time)>,
        ctx: &mut SendCtx<'_>,
    ) {
        let size = ctx.batching.batch_size;
        while run > 0 {
            // A buffer is sent as soon as it holds `size` elements: there is room for one more.
            let stretch = size.saturating_sub(t.buf.len()).max(1).min(run);
            let before = t.buf.len();
            t.buf.extend((&mut *elements).take(stretch));
            let added = t.buf.len() - before;
            if added == 0 {
                return;
            }
            let (lo, hi) = lineage.unwrap_or_else(|| {
                (t.buf[before..].iter()).fold((Time::MAX, 0), |(lo, hi), e| {
                    (lo.min(e.time), hi.max(e.time))
                })
            });
            if before == 0 {
                if t.markers.is_empty() {
                    t.opened_ns = ctx.now_ns;
                }
                (t.tmin, t.tmax, t.exact) = (lo, hi, lineage.is_none());
            } else {
                (t.tmin, t.tmax) = (t.tmin.min(lo), t.tmax.max(hi));
                t.exact &= lineage.is_none();
            }
            if t.buf.len() >= size {
                Self::seal_and_send(epoch, t, ctx);
            }
            if added < stretch {
                return;
            }
            run -= stretch;
        }
    }

    /// Registers the send tag of target `t`'s open buffer over its current slot range, as the
    /// tracking mode does it (`progress/mode.rs`; under trAcker a grown range under a fresh tag
    /// before the old registration is cancelled: `xorflow_tracking::range_tag`, property test
    /// `crates/tracking/tests/range_tag.rs`). A buffer holds one checkpoint epoch
    /// ([`EdgeOutput::set_epoch`] sends it before the epoch changes).
    #[inline]
    fn register(epoch: u64, t: &mut Target<T>, ctx: &mut SendCtx<'_>) -> (Slot, Slot) {
        let g = ctx.granularity;
        let range = (g.slot(t.tmin), g.slot(t.tmax));
        ctx.progress
            .register_send(&mut t.range_tag, t.component, range, epoch);
        range
    }

    fn seal_and_send(epoch: u64, t: &mut Target<T>, ctx: &mut SendCtx<'_>) {
        let has_data = !t.buf.is_empty();
        let (lo, hi) = if has_data {
            Self::register(epoch, t, ctx)
        } else {
            (0, 0)
        };
        // The next buffer starts at twice this batch's size: full batches under load, no 16 KB
        // allocation (and glibc trimming) per tiny batch at low rates.
        let next_cap = (t.buf.len() * 2).max(16).min(ctx.batching.batch_size);
        let data = if has_data {
            std::mem::replace(&mut t.buf, Vec::with_capacity(next_cap))
        } else {
            Vec::new()
        };
        let batch = Batch {
            tag: if has_data && ctx.progress.tracked() {
                t.range_tag.tag()
            } else {
                0
            },
            lo,
            hi,
            epoch,
            exact: t.exact,
            markers: std::mem::take(&mut t.markers),
            data,
        };
        t.range_tag.sealed();
        if !batch.markers.is_empty() {
            let n = batch.markers.len() as u64;
            ctx.traffic.record_n(
                MessageKind::Marker,
                n,
                n * (crate::measure::traffic::HEADER_BYTES + 8),
            );
        }
        if has_data && matches!(t.link, OutLink::Local(..)) {
            ctx.count(
                MessageKind::Data,
                24 + (batch.data.len() * std::mem::size_of::<Element<T>>()) as u64,
            );
        }
        Self::send(t, Msg::Data(batch), ctx);
    }

    /// Pushes `msg` into the link, or queues it behind earlier held-back messages.
    fn send(t: &mut Target<T>, msg: Msg<T>, ctx: &mut SendCtx<'_>) {
        if t.pending.is_empty() {
            if let Err(msg) = Self::push_link(&t.link, msg, ctx) {
                t.pending.push_back(msg);
            }
        } else {
            t.pending.push_back(msg);
        }
    }

    /// One attempt to hand `msg` to the link: a local queue with room (waking its worker) or a
    /// remote channel with credit (counting the frame).
    #[inline]
    fn push_link(link: &OutLink<T>, msg: Msg<T>, ctx: &mut SendCtx<'_>) -> Result<(), Msg<T>> {
        match link {
            OutLink::Local(w, q) => {
                q.push(msg)?;
                if *w != ctx.local_index {
                    ctx.unparkers.unpark(*w);
                }
                Ok(())
            }
            OutLink::Remote(r, send) => {
                let is_data = matches!(&msg, Msg::Data(b) if !b.data.is_empty());
                let bytes = send(r, msg)?;
                if is_data {
                    ctx.traffic.record_frame(MessageKind::Data, bytes);
                }
                Ok(())
            }
        }
    }

    pub fn commit(&mut self, ctx: &mut SendCtx<'_>) {
        for t in &mut self.targets {
            if !t.buf.is_empty() {
                Self::register(self.epoch, t, ctx);
            }
        }
    }

    /// Elements pushed from now on belong to checkpoint epoch `epoch`: open buffers of another
    /// epoch are sent first (a batch never mixes epochs).
    pub fn set_epoch(&mut self, epoch: u64, ctx: &mut SendCtx<'_>) {
        if epoch == self.epoch {
            return;
        }
        for t in &mut self.targets {
            if !t.buf.is_empty() {
                Self::seal_and_send(self.epoch, t, ctx);
            }
        }
        self.epoch = epoch;
    }

    pub fn flush(&mut self, ctx: &mut SendCtx<'_>, which: Flush) -> bool {
        let mut sent = false;
        for t in &mut self.targets {
            sent |= Self::retry(t, ctx);
            if !t.pending.is_empty() {
                // A full local queue: its receiver does not wake the sender when it makes room,
                // so the sender retries this often (a remote channel's credit wakes it too).
                ctx.wake_at(ctx.now_ns.saturating_add(HELD_BACK_RETRY_NS));
            }
            if t.buf.is_empty() && t.markers.is_empty() {
                continue;
            }
            let due = t.opened_ns.saturating_add(ctx.batching.flush_timeout_ns);
            let same_worker = matches!(t.link, OutLink::Local(w, _) if w == ctx.local_index);
            let force = match which {
                Flush::Due => false,
                Flush::SameWorker => same_worker,
                Flush::Idle => {
                    ctx.batching.flush_on_idle
                        || (same_worker
                            && due <= ctx.now_ns.saturating_add(ctx.batching.timer_slack_ns))
                }
                Flush::All => true,
            };
            if force || ctx.now_ns >= due {
                Self::seal_and_send(self.epoch, t, ctx);
                sent = true;
            } else {
                // A worker that parks must wake when the batch is due, not when more arrives.
                ctx.wake_at(due);
            }
        }
        sent
    }

    fn retry(t: &mut Target<T>, ctx: &mut SendCtx<'_>) -> bool {
        let mut sent = false;
        while let Some(m) = t.pending.pop_front() {
            match Self::push_link(&t.link, m, ctx) {
                Ok(()) => sent = true,
                Err(m) => {
                    t.pending.push_front(m);
                    break;
                }
            }
        }
        sent
    }

    /// Queues `Marker(time)` on every target after what is buffered (tracking `markers`). It
    /// rides in the next batch and is subject to the flush timeout like elements.
    pub fn marker(&mut self, time: Time, ctx: &mut SendCtx<'_>) {
        for t in &mut self.targets {
            if t.buf.is_empty() && t.markers.is_empty() {
                t.opened_ns = ctx.now_ns;
            }
            t.markers.push(time);
        }
    }

    pub fn end(&mut self, ctx: &mut SendCtx<'_>) {
        for t in &mut self.targets {
            if !t.buf.is_empty() {
                Self::seal_and_send(self.epoch, t, ctx);
            }
            ctx.count(MessageKind::EndOfStream, 0);
            Self::send(t, Msg::End, ctx);
        }
    }

    pub fn blocked(&self) -> bool {
        self.targets.iter().any(|t| !t.pending.is_empty())
    }

    pub fn has_buffered(&self) -> bool {
        self.targets
            .iter()
            .any(|t| !t.buf.is_empty() || !t.markers.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::{round_robin_runs, EdgeOutput, Flush, OutLink, Partitioner};
    use crate::batch::Msg;
    use crate::channel::handles::{Batching, SendCtx};
    use crate::channel::queue::{channel, Channel};
    use crate::measure::traffic::Traffic;
    use crate::progress::mode::NoProgress;
    use crate::wake::Unparkers;
    use proptest::prelude::*;
    use xorflow_core::Element;
    use xorflow_tracking::Granularity;

    /// One call into an edge: `(how, elements, lineage)`; `how` 0 `push` one by one, 1
    /// `push_all`, 2 `push_vec`.
    type Call = (u8, Vec<u64>, Option<(u64, u64)>);

    /// What each target of an edge into `n` instances with `partitioner` receives for `calls`
    /// (batches of at most `size` elements): per target, its batches as (elements, lo, hi).
    fn received(
        n: usize,
        partitioner: Partitioner<u64>,
        size: usize,
        calls: &[Call],
    ) -> Vec<Vec<(Vec<u64>, u64, u64)>> {
        let chans: Vec<Channel<u64>> = (0..n).map(|_| channel(1 << 16)).collect();
        let links = chans.iter().map(|c| OutLink::Local(0, c.clone())).collect();
        let mut edge = EdgeOutput::new((0..n as u32).collect(), partitioner, links);
        let batching = Batching {
            batch_size: size,
            flush_timeout_ns: u64::MAX,
            flush_on_idle: true,
            timer_slack_ns: 0,
            source_delay_ns: 0,
        };
        let (mut progress, mut traffic, unparkers) =
            (NoProgress, Traffic::default(), Unparkers::new(1));
        let mut wake = u64::MAX;
        let mut ctx = SendCtx {
            now_ns: 0,
            batching: &batching,
            granularity: Granularity::new(1),
            progress: &mut progress,
            traffic: &mut traffic,
            unparkers: &unparkers,
            local_index: 0,
            wake_at_ns: &mut wake,
        };
        for (how, data, lineage) in calls {
            edge.set_lineage(*lineage);
            let els = data.iter().map(|&d| Element::new(d, d));
            match how {
                0 => els.for_each(|e| edge.push(e, &mut ctx)),
                1 => edge.push_all(els, &mut ctx),
                _ => edge.push_vec(els.collect(), &mut ctx),
            }
        }
        edge.flush(&mut ctx, Flush::All);
        let take = |c: &Channel<u64>| {
            std::iter::from_fn(|| c.pop())
                .filter_map(|m| match m {
                    Msg::Data(b) => Some((b.data.iter().map(|e| e.data).collect(), b.lo, b.hi)),
                    Msg::End => None,
                })
                .collect()
        };
        chans.iter().map(take).collect()
    }

    fn calls() -> impl Strategy<Value = Vec<Call>> {
        let lineage =
            proptest::option::of((0u64..50, 0u64..50).prop_map(|(a, b)| (a.min(b), a.max(b))));
        let call = (0u8..3, proptest::collection::vec(0u64..100, 0..40), lineage);
        proptest::collection::vec(call, 1..12)
    }

    proptest! {
        /// A forward or round-robin edge sends the batches a plain model of it gives: elements
        /// pushed one by one take turns, a call's elements (`push_all`, `push_vec`) as many as
        /// the targets or more go in runs ([`round_robin_runs`]); each target's elements leave
        /// in order, in batches of `size` (the last one at the flush), each batch's slot range
        /// the span of its elements' lineage ranges (their own times without one). So the runs
        /// (`append_run`) and the whole vectors (`push_vec`) are only faster ways to append.
        #[test]
        fn runs_send_the_batches_of_one_at_a_time_appends(
            n in 1usize..4,
            forward in any::<bool>(),
            size in 1usize..9,
            calls in calls(),
        ) {
            let n = if forward { 1 } else { n };
            let part = if forward {
                Partitioner::Forward
            } else {
                Partitioner::RoundRobin { next: 0 }
            };
            // The model: each target's (element, lo, hi) in order.
            let mut seqs: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); n];
            let mut turn = 0;
            for (how, data, lineage) in &calls {
                let item = |d: u64| {
                    let (lo, hi) = lineage.unwrap_or((d, d));
                    (d, lo, hi)
                };
                if *how != 0 && data.len() >= n && n > 1 {
                    let (runs, after) = round_robin_runs(turn, data.len(), n);
                    let mut it = data.iter();
                    for (target, run) in runs {
                        seqs[target].extend(it.by_ref().take(run).map(|&d| item(d)));
                    }
                    turn = after;
                } else {
                    for &d in data {
                        seqs[turn].push(item(d));
                        turn = (turn + 1) % n;
                    }
                }
            }
            let want: Vec<Vec<(Vec<u64>, u64, u64)>> = seqs
                .iter()
                .map(|s| {
                    s.chunks(size)
                        .map(|c| {
                            let lo = c.iter().map(|x| x.1).min().unwrap();
                            let hi = c.iter().map(|x| x.2).max().unwrap();
                            (c.iter().map(|x| x.0).collect(), lo, hi)
                        })
                        .collect()
                })
                .collect();
            prop_assert_eq!(received(n, part, size, &calls), want);
        }

        /// Runs give every target exactly the elements, and leave the same turn, that taking
        /// turns one element at a time does, over any sequence of batches.
        #[test]
        fn runs_count_as_one_at_a_time(
            n in 1usize..9,
            batches in proptest::collection::vec(0usize..200, 1..20),
            start in 0usize..9,
        ) {
            let start = start % n;
            let (mut by_runs, mut by_turns) = (vec![0usize; n], vec![0usize; n]);
            let (mut turn_runs, mut turn_one) = (start, start);
            for &len in &batches {
                let (runs, after) = round_robin_runs(turn_runs, len, n);
                let mut total = 0;
                for (t, run) in runs {
                    by_runs[t] += run;
                    total += run;
                }
                prop_assert_eq!(total, len);
                turn_runs = after;
                for _ in 0..len {
                    by_turns[turn_one] += 1;
                    turn_one = (turn_one + 1) % n;
                }
                prop_assert_eq!(&by_runs, &by_turns);
                prop_assert_eq!(turn_runs, turn_one);
            }
        }
    }
}
