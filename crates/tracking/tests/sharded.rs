//! Simulation test of the *sharded* trAcker (docs/design.md, requirements 6 and 8;
//! docs/sharding-notes.md) with the real [`LocalAcker`], [`split_flush`], [`Tracker::sharded`] and
//! [`FrontierCombiner`].
//!
//! Claim under test: random ack/heartbeat partitioning, deferred outputs and delivery delays across
//! shards never yield an early global frontier, and every frontier reaches `INF` at the end.
//!
//! # The model (the protocol the runtime implements)
//! A random DAG of 2..=7 vertices, each its own tracking component, numbered topologically. Vertices
//! `0..ns` are fed by sources; the others have 1..=2 upstream vertices of lower number. Some
//! non-source vertices are tumbling windows (so window -> window chains occur); every vertex ships its
//! outputs immediately (one batch per input batch and destination) or through output buffers that
//! stay open across several input batches.
//!
//! N processes each own one [`LocalAcker`], a seeded [`TagSource`], a [`FrontierCombiner`] and one
//! instance of every vertex. S tracker shards are `Tracker::sharded(.., ShardMap::new(S, k))`.
//! A flush is cut into `split_flush(flush, S)` and piece `k` travels to shard `k` over a FIFO queue
//! per (process, shard); each shard's frontier updates travel to each process over a FIFO queue per
//! (shard, process); data batches travel over a FIFO queue per (process, process). Every queue has
//! its own base delay, every message its own jitter (sometimes a large spike, which also delays the
//! messages queued behind it), so deliveries of different queues interleave arbitrarily. A seeded
//! scheduler picks the next action among the enabled ones (virtual time advances one unit a step):
//! a source emits, a batch is delivered and processed, an acker flushes (a timer), a shard applies
//! the next piece of some queue, a shard advances, a process receives a frontier update, an open
//! output buffer is closed (a timeout). Flushes also happen after any logical acker update inside a
//! step: after every update ("unbatched"), on a count trigger, or at random.
//!
//! Elements carry an event time; batches carry a *tracking slot range* `[lo, hi]` (lineage): a
//! source batch the hull of its elements' slots; any other batch the hull of the tracking ranges of
//! the input batches its elements were derived from, except that the outputs of an *exact* input
//! batch (every element tracked at its own event slot) are tracked at their own event slots too
//! (an element-wise vertex keeps its input's time). Send tags are registered before the batch can be
//! received; the receive tag after the batch is processed and after the send tags (or open buffer
//! ranges; a grown range is cancelled and re-registered atomically) of its outputs. Sources register
//! their send tags, then heartbeat their clock (`INF` at the end); heartbeats reach every shard.
//!
//! Windows (item 8): an instance of `[a, b)` opened by an input batch with tracking range `[lo, hi]`
//! XORs a fresh hold `r` into slot `lo` of every downstream component before that batch's receive
//! tag. When the process's *combined* frontier of the window's component reaches `b`, the ready
//! windows emit their results (event time `b - 1`) with tracking range `[lo_w, lo_w]` (hull over the
//! windows emitted together; some cases emit one output per window instead), register the
//! output's send tags, and only then release the holds.
//!
//! # The oracle
//! Ground truth is a multiset of pending *event times* per component: an element is pending at its
//! target component from its creation until its receive tag is registered; a window's deferred output
//! is pending at each downstream component at `b - 1` from the window's opening until it is processed
//! there. Whenever a process's combined frontier of `c` rises to `F`, no event time `< F` may be
//! pending at `c` or upstream of `c`; no element may be created with an event time below a combined
//! frontier any process has seen for its component or anything downstream; sources never emit below
//! their heartbeat. At quiescence every shard is done, every process's combined frontiers are `INF`,
//! and nothing is pending or open.
//!
//! [`Tracker::regressions`] (a tag registered below a frontier the shard already published) must be
//! 0 with one shard. With several shards it is *not* 0 under this protocol, harmlessly: a range that
//! is the hull of several distinct lineage ranges (windows emitted together, an open buffer fed by
//! several inputs) also covers the slots between them, and a shard owning only such gap slots may
//! have passed them already. Safety does not depend on them: every element's lineage slot (at or
//! below its event slot) is held on its own shard along its whole derivation chain. So the test
//! requires 0 regressions unless S > 1 and a merged range was registered, and checks safety anyway.
//!
//! Deliberately broken protocols ([`Protocol`]) must make the oracle fire within a bounded,
//! deterministic seed search, so it is not vacuous. Among them is the OLD single-tracker window
//! protocol (hold at slot `b - 1`, output tracked at its event time), which is correct with one
//! tracker and must be caught with shards.

mod common;
use common::{Graph, Output};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, VecDeque};
use xorflow_tracking::{
    split_flush, ComponentId, Flush, FrontierCombiner, FrontierUpdate, Granularity, LocalAcker,
    ShardMap, Slot, TagSource, Time, Tracker, INF,
};

/// How the simulated runtime behaves. Everything but `Correct` is deliberately broken (or, for
/// `OldEventTime` with one shard, only correct without shards), used to show that the oracle fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Correct,
    /// The OLD single-tracker protocol: ranges from event times (children do not inherit lineage),
    /// window hold at slot(b - 1), window output tracked at its event time b - 1.
    OldEventTime,
    /// Counterexample 1 of docs/sharding-notes.md: hold in the creator's slot, but the output (and
    /// everything after it) tracked by event time.
    HoldAtCreatorOnly,
    /// Counterexample 2 of docs/sharding-notes.md: hold in the creator's slot, output range
    /// stretched to `[lo, slot(b - 1)]`, the output's children tracked by event time.
    StretchedOutput,
    /// Windows register no hold for their deferred output.
    NoWindowHold,
    /// Heartbeats reach shard 0 only (the other pieces lose them).
    HeartbeatToOneShard,
    /// Piece `k` of a flush goes to shard `(k + 1) mod S`.
    AcksToWrongShard,
    /// Heartbeats reach every shard at once, overtaking the ack pieces flushed with or before them.
    HeartbeatsOvertakeAcks,
}

impl Protocol {
    /// Batches derived from an input batch are tracked by their elements' event slots instead of
    /// the input's tracking range.
    fn event_time_lineage(self) -> bool {
        matches!(
            self,
            Protocol::OldEventTime | Protocol::HoldAtCreatorOnly | Protocol::StretchedOutput
        )
    }
}

/// When a process's local acker flushes, besides the timer action of the scheduler.
#[derive(Clone, Copy, Debug)]
enum FlushPolicy {
    /// After every logical update (a range XOR, an atomic re-registration, a heartbeat).
    Unbatched,
    /// After an update when `count` updates are pending, or with chance `percent`.
    Batched { percent: u32, count: usize },
}

#[derive(Clone, Debug)]
struct Config {
    seed: u64,
    processes: usize,
    shards: usize,
    sources: usize,
    granularity: u64,
    lateness: u64,
    elements_per_source: usize,
    /// Chance (percent) that a source's clock jumps by 10..=40 after a batch instead of 0..=3:
    /// empty slots.
    jump_percent: u32,
    flush: FlushPolicy,
    /// Scale of queue delays (virtual time units; a step is one unit). 0: every message is
    /// deliverable at once and only the scheduler orders deliveries.
    delay: u64,
    /// Windows that become ready together are emitted as one output (their tracking ranges
    /// hulled, as the runtime does); otherwise one output batch per window.
    windows_together: bool,
    protocol: Protocol,
    /// Record a trace of events (for failure reports).
    trace: bool,
}

/// One element: event time and the tracking slot range it was derived under.
#[derive(Clone, Copy, Debug)]
struct Elem {
    ev: Time,
    lin: (Slot, Slot),
}

/// A batch on a data queue, with its tag and the tracking slot range it was registered with.
#[derive(Debug)]
struct Batch {
    vertex: usize,
    elems: Vec<Elem>,
    tag: u64,
    lo: Slot,
    hi: Slot,
}

#[derive(Debug)]
struct OpenBuffer {
    elems: Vec<Elem>,
    tag: u64,
    registered: Option<(Slot, Slot)>,
    inputs_left: u32,
}

#[derive(Debug)]
struct WindowState {
    /// (downstream vertex, hold slot, hold tag (`None` under [`Protocol::NoWindowHold`])).
    holds: Vec<(usize, Slot, Option<u64>)>,
    /// Tracking range of the window's output element.
    out_lin: (Slot, Slot),
}

/// State of one vertex on one process.
#[derive(Debug, Default)]
struct Instance {
    windows: BTreeMap<Time, WindowState>,
    /// Open output buffers by (target vertex, target process).
    buffers: BTreeMap<(usize, usize), OpenBuffer>,
}

struct Process {
    acker: LocalAcker,
    tags: TagSource,
    combiner: FrontierCombiner,
    /// Combined (global) frontiers as this process knows them.
    known: Vec<Time>,
}

struct Source {
    process: usize,
    clock: Time,
    heartbeat: Time,
    left: usize,
    done: bool,
}

/// A FIFO queue whose messages become deliverable at their ready time.
struct Queue<T> {
    items: VecDeque<(u64, T)>,
    /// Base delay of this queue.
    delay: u64,
}

impl<T> Queue<T> {
    fn new(delay: u64) -> Self {
        Queue {
            items: VecDeque::new(),
            delay,
        }
    }

    fn push(&mut self, now: u64, jitter: u64, x: T) {
        // FIFO: never ready before the message in front of it.
        let last = self.items.back().map_or(0, |m| m.0);
        self.items
            .push_back(((now + self.delay + jitter).max(last), x));
    }

    fn ready(&self, now: u64) -> bool {
        self.items.front().is_some_and(|m| m.0 <= now)
    }

    fn pop(&mut self) -> T {
        self.items.pop_front().unwrap().1
    }

    fn head_time(&self) -> Option<u64> {
        self.items.front().map(|m| m.0)
    }
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Source(usize),
    Deliver(usize),
    Flush(usize),
    Apply(usize),
    Advance(usize),
    Frontier(usize),
    Close(usize, usize),
}

#[derive(Debug, Default)]
struct Outcome {
    violations: Vec<String>,
    violation_count: usize,
    /// Combined-frontier rises checked while something was pending at or upstream of the component.
    nontrivial_checks: usize,
    /// Combined-frontier rises seen by processes.
    combined_rises: usize,
    processed: Vec<usize>,
    windows_opened: usize,
    windows_emitted: usize,
    flushes: usize,
    steps: usize,
    quiescent: bool,
    shards_done: bool,
    processes_saw_inf: bool,
    pending_left: usize,
    open_state_left: usize,
    regressions: u64,
    /// Registrations whose range is the hull of two or more distinct lineage ranges (an open
    /// buffer fed by several inputs, windows emitted together).
    merged_ranges: usize,
    shards: usize,
    trace: Vec<String>,
}

struct Sim {
    cfg: Config,
    graph: Graph,
    g: Granularity,
    rng: SmallRng,
    weights: [u32; 7],
    procs: Vec<Process>,
    /// `instances[v][p]`: vertex `v` on process `p`.
    instances: Vec<Vec<Instance>>,
    /// `data[from * N + to]`.
    data: Vec<Queue<Batch>>,
    /// `acks[p * S + k]`: flush pieces of process `p` for shard `k`.
    acks: Vec<Queue<Flush>>,
    /// `fronts[k * N + p]`: frontier updates of shard `k` for process `p`.
    fronts: Vec<Queue<FrontierUpdate>>,
    shards: Vec<Tracker>,
    dirty: Vec<bool>,
    sources: Vec<Source>,
    pending: Vec<BTreeMap<Time, usize>>,
    /// Components upstream of `c`, including `c` (transitive).
    up_closure: Vec<Vec<usize>>,
    /// Components downstream of `c`, including `c` (transitive).
    down_closure: Vec<Vec<usize>>,
    /// Highest combined frontier of each component any process has seen.
    seen: Vec<Time>,
    now: u64,
    out: Outcome,
}

const MAX_STEPS: usize = 1_000_000;
const KEEP_VIOLATIONS: usize = 10;
const KEEP_TRACE: usize = 400;

impl Sim {
    fn new(cfg: Config, graph: Graph) -> Self {
        let n = graph.len();
        let (np, ns) = (cfg.processes, cfg.shards);
        let g = Granularity::new(cfg.granularity);
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let weights = std::array::from_fn(|_| rng.random_range(1..=10));
        let procs = (0..np)
            .map(|p| Process {
                acker: LocalAcker::new(g),
                tags: TagSource::seeded(
                    cfg.seed ^ (p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ),
                combiner: FrontierCombiner::new(n, ns),
                known: vec![0; n],
            })
            .collect();
        let sources = (0..cfg.sources)
            .map(|_| Source {
                process: rng.random_range(0..np),
                clock: rng.random_range(0..10),
                heartbeat: 0,
                left: cfg.elements_per_source,
                done: false,
            })
            .collect();
        // Heavy-tailed: some queues are much slower than the others.
        let mut queue_delay = || match rng.random_range(0..4) {
            0 => 0,
            1 => rng.random_range(0..=8 * cfg.delay),
            _ => rng.random_range(0..=cfg.delay),
        };
        let data = (0..np * np).map(|_| Queue::new(queue_delay())).collect();
        let acks = (0..np * ns).map(|_| Queue::new(queue_delay())).collect();
        let fronts = (0..ns * np).map(|_| Queue::new(queue_delay())).collect();
        let mut up_closure: Vec<Vec<usize>> = Vec::with_capacity(n);
        for v in 0..n {
            let mut cl = vec![v];
            for &u in &graph.upstream[v] {
                cl.extend(up_closure[u].iter().copied());
            }
            cl.sort_unstable();
            cl.dedup();
            up_closure.push(cl);
        }
        let mut down_closure = vec![Vec::new(); n];
        for (v, ups) in up_closure.iter().enumerate() {
            for &u in ups {
                down_closure[u].push(v);
            }
        }
        let shards = (0..ns)
            .map(|k| {
                Tracker::sharded(
                    g,
                    graph.topology(),
                    cfg.sources,
                    ShardMap::new(ns as u64, k as u64),
                )
            })
            .collect();
        Sim {
            instances: (0..n)
                .map(|_| (0..np).map(|_| Instance::default()).collect())
                .collect(),
            data,
            acks,
            fronts,
            shards,
            dirty: vec![false; ns],
            procs,
            sources,
            pending: vec![BTreeMap::new(); n],
            up_closure,
            down_closure,
            seen: vec![0; n],
            now: 0,
            out: Outcome {
                processed: vec![0; n],
                shards: ns,
                ..Outcome::default()
            },
            weights,
            rng,
            g,
            graph,
            cfg,
        }
    }

    fn trace(&mut self, f: impl FnOnce() -> String) {
        if self.cfg.trace {
            let line = format!("[{:>6}] {}", self.now, f());
            self.out.trace.push(line);
        }
    }

    fn violation(&mut self, msg: String) {
        self.trace(|| format!("VIOLATION: {msg}"));
        self.out.violation_count += 1;
        if self.out.violations.len() < KEEP_VIOLATIONS {
            self.out.violations.push(msg);
        }
    }

    // ---- ground truth ----

    /// An element (or a deferred output) with event time `t` starts being pending at component `c`.
    fn create(&mut self, c: usize, t: Time) {
        for i in 0..self.down_closure[c].len() {
            let d = self.down_closure[c][i];
            if self.seen[d] > t {
                let f = self.seen[d];
                self.violation(format!(
                    "event time {t} created at component {c} after a process saw combined \
                     Frontier({d}, {f})"
                ));
            }
        }
        *self.pending[c].entry(t).or_insert(0) += 1;
    }

    fn finish(&mut self, c: usize, t: Time) {
        let e = self.pending[c]
            .get_mut(&t)
            .expect("model bug: finishing an element that is not pending");
        *e -= 1;
        if *e == 0 {
            self.pending[c].remove(&t);
        }
    }

    // ---- process side ----

    fn tag(&mut self, p: usize) -> u64 {
        self.procs[p].tags.next_tag()
    }

    fn jitter(&mut self) -> u64 {
        let d = self.cfg.delay;
        if d == 0 {
            0
        } else if self.rng.random_ratio(1, 4) {
            self.rng.random_range(0..=20 * d + 50)
        } else {
            self.rng.random_range(0..=d / 2)
        }
    }

    /// XOR `x` into slots `[lo, hi]` of component `c` at process `p`'s acker: one logical update.
    fn xor(&mut self, p: usize, c: usize, lo: Slot, hi: Slot, x: u64) {
        self.procs[p].acker.xor_slots(c as ComponentId, lo, hi, x);
        self.after_update(p);
    }

    /// A point after a complete logical update, where the acker may flush.
    fn after_update(&mut self, p: usize) {
        let go = match self.cfg.flush {
            FlushPolicy::Unbatched => true,
            FlushPolicy::Batched { percent, count } => {
                self.procs[p].acker.pending_updates() >= count
                    || self.rng.random_ratio(percent, 100)
            }
        };
        if go {
            self.flush(p);
        }
    }

    fn flush(&mut self, p: usize) {
        let f = self.procs[p].acker.flush();
        if f.is_empty() {
            return;
        }
        self.out.flushes += 1;
        let s = self.cfg.shards;
        let mut pieces = split_flush(&f, s as u64);
        assert_eq!(pieces.len(), s);
        match self.cfg.protocol {
            Protocol::HeartbeatToOneShard => {
                for piece in pieces.iter_mut().skip(1) {
                    piece.heartbeats.clear();
                }
            }
            Protocol::HeartbeatsOvertakeAcks => {
                let hb = Flush {
                    acks: Vec::new(),
                    heartbeats: f.heartbeats.clone(),
                };
                if !hb.is_empty() {
                    for (k, piece) in pieces.iter_mut().enumerate() {
                        piece.heartbeats.clear();
                        self.shards[k].apply(&hb).expect("well-formed heartbeats");
                        self.dirty[k] = true;
                    }
                }
            }
            _ => {}
        }
        for (k, piece) in pieces.into_iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            let dest = if self.cfg.protocol == Protocol::AcksToWrongShard {
                (k + 1) % s
            } else {
                k
            };
            self.trace(|| {
                format!(
                    "p{p} flush piece -> shard {dest}: acks {:?} hb {:?}",
                    piece
                        .acks
                        .iter()
                        .map(|a| (a.component, a.slot, a.xor & 0xffff))
                        .collect::<Vec<_>>(),
                    piece
                        .heartbeats
                        .iter()
                        .map(|h| (h.source, h.time))
                        .collect::<Vec<_>>()
                )
            });
            let j = self.jitter();
            self.acks[p * s + dest].push(self.now, j, piece);
        }
    }

    fn random_process(&mut self) -> usize {
        self.rng.random_range(0..self.cfg.processes)
    }

    fn send(&mut self, from: usize, to: usize, batch: Batch) {
        let j = self.jitter();
        let n = self.cfg.processes;
        self.data[from * n + to].push(self.now, j, batch);
    }

    fn hull(elems: &[Elem]) -> (Slot, Slot) {
        let lo = elems.iter().map(|e| e.lin.0).min().unwrap();
        let hi = elems.iter().map(|e| e.lin.1).max().unwrap();
        (lo, hi)
    }

    /// Counts a registration over the hull of several distinct lineage ranges.
    fn count_merge(&mut self, elems: &[Elem]) {
        if elems.iter().any(|e| e.lin != elems[0].lin) {
            self.out.merged_ranges += 1;
        }
    }

    /// Ships outputs `(target vertex, target process, element)` of vertex `v` on process `p`:
    /// registers the send tags (immediate) or the open buffers' ranges, all before the caller's
    /// receive tag or hold release.
    fn emit(&mut self, p: usize, v: usize, outputs: Vec<(usize, usize, Elem)>) {
        match self.graph.output[v] {
            Output::Immediate => {
                let mut groups: BTreeMap<(usize, usize), Vec<Elem>> = BTreeMap::new();
                for (d, tp, e) in outputs {
                    groups.entry((d, tp)).or_default().push(e);
                }
                for ((d, tp), elems) in groups {
                    let (lo, hi) = Self::hull(&elems);
                    self.count_merge(&elems);
                    let tag = self.tag(p);
                    self.trace(|| {
                        format!(
                            "p{p} v{v} send -> v{d}@p{tp} ev {:?} range [{lo}, {hi}] tag {:04x}",
                            elems.iter().map(|e| e.ev).collect::<Vec<_>>(),
                            tag & 0xffff
                        )
                    });
                    self.xor(p, d, lo, hi, tag);
                    self.send(
                        p,
                        tp,
                        Batch {
                            vertex: d,
                            elems,
                            tag,
                            lo,
                            hi,
                        },
                    );
                }
            }
            Output::Open { max_inputs } => {
                let mut touched = Vec::new();
                for (d, tp, e) in outputs {
                    if !self.instances[v][p].buffers.contains_key(&(d, tp)) {
                        let buf = OpenBuffer {
                            elems: Vec::new(),
                            tag: self.tag(p),
                            registered: None,
                            inputs_left: self.rng.random_range(1..=max_inputs),
                        };
                        self.instances[v][p].buffers.insert((d, tp), buf);
                    }
                    let buf = self.instances[v][p].buffers.get_mut(&(d, tp)).unwrap();
                    buf.elems.push(e);
                    if !touched.contains(&(d, tp)) {
                        touched.push((d, tp));
                    }
                }
                for key in touched {
                    self.reregister(p, v, key);
                }
            }
        }
    }

    /// Registers an open buffer's current range, cancelling the previous registration of the same
    /// tag in the same flush (no flush point between them: one logical update).
    fn reregister(&mut self, p: usize, v: usize, key: (usize, usize)) {
        let buf = self.instances[v][p].buffers.get_mut(&key).unwrap();
        let (lo, hi) = Self::hull(&buf.elems);
        if buf.registered == Some((lo, hi)) {
            return;
        }
        let old = buf.registered.replace((lo, hi));
        let tag = buf.tag;
        if buf.elems.iter().any(|e| e.lin != buf.elems[0].lin) {
            self.out.merged_ranges += 1;
        }
        self.trace(|| {
            format!(
                "p{p} v{v} buffer -> v{}@p{} range {old:?} -> [{lo}, {hi}] tag {:04x}",
                key.0,
                key.1,
                tag & 0xffff
            )
        });
        let c = key.0 as ComponentId;
        if let Some((ol, oh)) = old {
            self.procs[p].acker.xor_slots(c, ol, oh, tag);
        }
        self.procs[p].acker.xor_slots(c, lo, hi, tag);
        self.after_update(p);
    }

    /// Sends an open buffer with the range it last registered.
    fn close_buffer(&mut self, p: usize, v: usize, key: (usize, usize)) {
        let buf = self.instances[v][p].buffers.remove(&key).unwrap();
        let (lo, hi) = buf
            .registered
            .expect("an open buffer is registered before it is sent");
        debug_assert_eq!((lo, hi), Self::hull(&buf.elems));
        self.send(
            p,
            key.1,
            Batch {
                vertex: key.0,
                elems: buf.elems,
                tag: buf.tag,
                lo,
                hi,
            },
        );
    }

    /// An element of event time `ev` of an input batch with tracking range starting at `batch_lo`
    /// reaches window vertex `v` (size `w`) on process `p`.
    fn window_element(&mut self, p: usize, v: usize, w: u64, ev: Time, batch_lo: Slot) {
        let a = ev / w * w;
        let b = a + w;
        if self.instances[v][p].windows.contains_key(&a) {
            return;
        }
        self.out.windows_opened += 1;
        let sb = self.g.slot(b - 1);
        let (hold_slot, out_lin) = match self.cfg.protocol {
            Protocol::OldEventTime => (sb, (sb, sb)),
            Protocol::HoldAtCreatorOnly => (batch_lo, (sb, sb)),
            Protocol::StretchedOutput => (batch_lo, (batch_lo, sb)),
            _ => (batch_lo, (batch_lo, batch_lo)),
        };
        // The holds stand for the window's future output; they are registered before the receive
        // tag of the batch that opened the window.
        let mut holds = Vec::new();
        for i in 0..self.graph.downstream[v].len() {
            let d = self.graph.downstream[v][i];
            self.create(d, b - 1);
            if self.cfg.protocol == Protocol::NoWindowHold {
                holds.push((d, hold_slot, None));
            } else {
                let r = self.tag(p);
                self.trace(|| {
                    format!(
                        "p{p} v{v} open [{a}, {b}) hold v{d} slot {hold_slot} tag {:04x}",
                        r & 0xffff
                    )
                });
                self.xor(p, d, hold_slot, hold_slot, r);
                holds.push((d, hold_slot, Some(r)));
            }
        }
        self.instances[v][p]
            .windows
            .insert(a, WindowState { holds, out_lin });
    }

    /// Emits every window of vertex `v` on process `p` that the process's combined frontier of `v`
    /// has passed, together (one hull), then releases their holds.
    fn check_windows(&mut self, p: usize, v: usize) {
        let Some(w) = self.graph.window[v] else {
            return;
        };
        let f = self.procs[p].known[v];
        let ready: Vec<Time> = self.instances[v][p]
            .windows
            .keys()
            .take_while(|&&a| a + w <= f)
            .copied()
            .collect();
        if ready.is_empty() {
            return;
        }
        let mut outputs = Vec::new();
        let mut releases = Vec::new();
        for a in ready {
            if !self.cfg.windows_together && !outputs.is_empty() {
                let outs = std::mem::take(&mut outputs);
                self.emit(p, v, outs);
            }
            let st = self.instances[v][p].windows.remove(&a).unwrap();
            self.trace(|| format!("p{p} v{v} emit [{a}, {}) at combined {f}", a + w));
            for &(d, hs, r) in &st.holds {
                // The deferred output already counts as pending at (d, b - 1); the real output
                // takes over that entry.
                let tp = self.random_process();
                outputs.push((
                    d,
                    tp,
                    Elem {
                        ev: a + w - 1,
                        lin: st.out_lin,
                    },
                ));
                if let Some(r) = r {
                    releases.push((d, hs, r));
                }
            }
            self.out.windows_emitted += 1;
        }
        self.emit(p, v, outputs);
        for (d, hs, r) in releases {
            self.trace(|| {
                format!(
                    "p{p} v{v} release hold v{d} slot {hs} tag {:04x}",
                    r & 0xffff
                )
            });
            self.xor(p, d, hs, hs, r);
        }
    }

    fn process(&mut self, p: usize, batch: Batch) {
        let v = batch.vertex;
        self.trace(|| {
            format!(
                "p{p} v{v} process ev {:?} range [{}, {}] tag {:04x}",
                batch.elems.iter().map(|e| e.ev).collect::<Vec<_>>(),
                batch.lo,
                batch.hi,
                batch.tag & 0xffff
            )
        });
        // A batch whose every element is tracked at its own event slot ("exact", as from a
        // source) lets an element-wise vertex track its outputs at their own (equal) slots, so
        // ranges do not widen stage by stage (crates/runtime/src/operators/unary.rs).
        let g = self.g;
        let exact = batch
            .elems
            .iter()
            .all(|e| e.lin == (g.slot(e.ev), g.slot(e.ev)));
        let mut outputs = Vec::new();
        for e in &batch.elems {
            self.out.processed[v] += 1;
            match self.graph.window[v] {
                Some(w) => self.window_element(p, v, w, e.ev, batch.lo),
                None => {
                    let n_down = self.graph.downstream[v].len();
                    if n_down == 0 {
                        continue;
                    }
                    let lin = if self.cfg.protocol.event_time_lineage() || exact {
                        (self.g.slot(e.ev), self.g.slot(e.ev))
                    } else {
                        (batch.lo, batch.hi)
                    };
                    for _ in 0..self.rng.random_range(0..=2) {
                        let d = self.graph.downstream[v][self.rng.random_range(0..n_down)];
                        let tp = self.random_process();
                        self.create(d, e.ev);
                        outputs.push((d, tp, Elem { ev: e.ev, lin }));
                    }
                }
            }
        }
        self.emit(p, v, outputs);
        // The receive tag, after every send tag (and open buffer range) of the outputs.
        self.xor(p, v, batch.lo, batch.hi, batch.tag);
        for e in &batch.elems {
            self.finish(v, e.ev);
        }
        if let Output::Open { .. } = self.graph.output[v] {
            let keys: Vec<_> = self.instances[v][p].buffers.keys().copied().collect();
            for key in keys {
                let buf = self.instances[v][p].buffers.get_mut(&key).unwrap();
                buf.inputs_left -= 1;
                if buf.inputs_left == 0 {
                    self.close_buffer(p, v, key);
                }
            }
        }
        // Only a broken protocol can open a window the process already knows is complete.
        self.check_windows(p, v);
    }

    fn source_step(&mut self, s: usize) {
        let p = self.sources[s].process;
        let n = self.rng.random_range(1..=4).min(self.sources[s].left);
        let v =
            self.graph.source_vertices[self.rng.random_range(0..self.graph.source_vertices.len())];
        let tp = self.random_process();
        let clock = self.sources[s].clock;
        let evs: Vec<Time> = (0..n)
            .map(|_| clock + self.rng.random_range(0..=self.cfg.lateness))
            .collect();
        for &t in &evs {
            if t < self.sources[s].heartbeat {
                let h = self.sources[s].heartbeat;
                self.violation(format!("source {s} emitted {t} below its heartbeat {h}"));
            }
            self.create(v, t);
        }
        let lo = self.g.slot(*evs.iter().min().unwrap());
        let hi = self.g.slot(*evs.iter().max().unwrap());
        let elems: Vec<Elem> = evs
            .iter()
            .map(|&ev| Elem {
                ev,
                lin: (self.g.slot(ev), self.g.slot(ev)),
            })
            .collect();
        let tag = self.tag(p);
        self.trace(|| {
            format!(
                "p{p} source {s} send -> v{v}@p{tp} ev {evs:?} range [{lo}, {hi}] tag {:04x}",
                tag & 0xffff
            )
        });
        self.xor(p, v, lo, hi, tag);
        self.send(
            p,
            tp,
            Batch {
                vertex: v,
                elems,
                tag,
                lo,
                hi,
            },
        );
        self.sources[s].left -= n;
        // Small steps keep slots dense; occasional jumps leave empty slots between elements.
        let step = if self.rng.random_ratio(self.cfg.jump_percent, 100) {
            self.rng.random_range(10..=40)
        } else {
            self.rng.random_range(0..=3)
        };
        self.sources[s].clock += step;
        let hb = if self.sources[s].left == 0 {
            self.sources[s].done = true;
            INF
        } else if self.rng.random_bool(0.5) {
            // Every future event time is >= the (non-decreasing) clock.
            self.sources[s].clock
        } else {
            return;
        };
        self.sources[s].heartbeat = hb;
        self.trace(|| format!("p{p} source {s} heartbeat {hb}"));
        self.procs[p].acker.heartbeat(s as u32, hb);
        self.after_update(p);
    }

    // ---- tracker side ----

    fn apply(&mut self, i: usize) {
        let s = self.cfg.shards;
        let (p, k) = (i / s, i % s);
        let f = self.acks[i].pop();
        self.trace(|| {
            format!(
                "shard {k} applies piece of p{p} ({} acks, hb {:?})",
                f.acks.len(),
                f.heartbeats
                    .iter()
                    .map(|h| (h.source, h.time))
                    .collect::<Vec<_>>()
            )
        });
        self.shards[k].apply(&f).expect("well-formed piece");
        self.dirty[k] = true;
    }

    fn advance(&mut self, k: usize) {
        self.dirty[k] = false;
        let before = self.shards[k].regressions();
        let ups = self.shards[k].advance();
        let after = self.shards[k].regressions();
        if after > before {
            self.trace(|| format!("shard {k} REGRESSION (+{})", after - before));
        }
        for u in ups {
            self.trace(|| {
                format!(
                    "shard {k} advances Frontier({}, {})",
                    u.component, u.frontier
                )
            });
            for p in 0..self.cfg.processes {
                let j = self.jitter();
                self.fronts[k * self.cfg.processes + p].push(self.now, j, u);
            }
        }
    }

    fn deliver_frontier(&mut self, i: usize) {
        let n = self.cfg.processes;
        let (k, p) = (i / n, i % n);
        let u = self.fronts[i].pop();
        let risen = self.procs[p]
            .combiner
            .update(k, u)
            .expect("known shard and component");
        if let Some(f) = risen {
            self.on_combined(p, u.component as usize, f);
        }
    }

    /// Process `p`'s combined frontier of `c` rose to `f`: the oracle, then the window operators.
    fn on_combined(&mut self, p: usize, c: usize, f: Time) {
        self.trace(|| format!("p{p} combined Frontier({c}, {f})"));
        self.out.combined_rises += 1;
        assert!(f > self.procs[p].known[c], "combined frontier moved back");
        self.procs[p].known[c] = f;
        let mut nontrivial = false;
        for i in 0..self.up_closure[c].len() {
            let cu = self.up_closure[c][i];
            if let Some((&min, _)) = self.pending[cu].first_key_value() {
                nontrivial = true;
                if min < f {
                    self.violation(format!(
                        "process {p} combined Frontier({c}, {f}) while event time {min} is \
                         pending at component {cu}"
                    ));
                }
            }
        }
        if nontrivial {
            self.out.nontrivial_checks += 1;
        }
        self.seen[c] = self.seen[c].max(f);
        self.check_windows(p, c);
    }

    // ---- scheduler ----

    fn enabled(&self) -> Vec<(u32, Vec<Action>)> {
        let (n, s, now) = (self.cfg.processes, self.cfg.shards, self.now);
        let mut kinds: Vec<(u32, Vec<Action>)> = vec![
            (
                self.weights[0],
                (0..self.sources.len())
                    .filter(|&i| !self.sources[i].done)
                    .map(Action::Source)
                    .collect(),
            ),
            (
                self.weights[1],
                (0..n * n)
                    .filter(|&i| self.data[i].ready(now))
                    .map(Action::Deliver)
                    .collect(),
            ),
            (
                self.weights[2],
                (0..n)
                    .filter(|&p| !self.procs[p].acker.is_empty())
                    .map(Action::Flush)
                    .collect(),
            ),
            (
                self.weights[3],
                (0..n * s)
                    .filter(|&i| self.acks[i].ready(now))
                    .map(Action::Apply)
                    .collect(),
            ),
            (
                self.weights[4],
                (0..s)
                    .filter(|&k| self.dirty[k])
                    .map(Action::Advance)
                    .collect(),
            ),
            (
                self.weights[5],
                (0..s * n)
                    .filter(|&i| self.fronts[i].ready(now))
                    .map(Action::Frontier)
                    .collect(),
            ),
            (self.weights[6], {
                let mut v = Vec::new();
                for (vx, insts) in self.instances.iter().enumerate() {
                    for (p, inst) in insts.iter().enumerate() {
                        if !inst.buffers.is_empty() {
                            v.push(Action::Close(vx, p));
                        }
                    }
                }
                v
            }),
        ];
        kinds.retain(|(_, a)| !a.is_empty());
        kinds
    }

    /// The earliest time a queued message becomes deliverable.
    fn next_ready(&self) -> Option<u64> {
        let data = self.data.iter().filter_map(Queue::head_time);
        let acks = self.acks.iter().filter_map(Queue::head_time);
        let fronts = self.fronts.iter().filter_map(Queue::head_time);
        data.chain(acks).chain(fronts).min()
    }

    fn step(&mut self, a: Action) {
        match a {
            Action::Source(s) => self.source_step(s),
            Action::Deliver(i) => {
                let b = self.data[i].pop();
                self.process(i % self.cfg.processes, b);
            }
            Action::Flush(p) => self.flush(p),
            Action::Apply(i) => self.apply(i),
            Action::Advance(k) => self.advance(k),
            Action::Frontier(i) => self.deliver_frontier(i),
            Action::Close(v, p) => {
                let keys: Vec<_> = self.instances[v][p].buffers.keys().copied().collect();
                let key = keys[self.rng.random_range(0..keys.len())];
                self.close_buffer(p, v, key);
            }
        }
    }

    /// Runs random steps until nothing is enabled or queued (quiescence) or the step bound.
    fn run(mut self) -> Outcome {
        loop {
            let kinds = self.enabled();
            if kinds.is_empty() {
                match self.next_ready() {
                    Some(t) => {
                        debug_assert!(t > self.now);
                        self.now = t;
                        continue;
                    }
                    None => {
                        self.out.quiescent = true;
                        break;
                    }
                }
            }
            if self.out.steps >= MAX_STEPS {
                break;
            }
            self.out.steps += 1;
            self.now += 1;
            let total: u32 = kinds.iter().map(|(w, _)| w).sum();
            let mut pick = self.rng.random_range(0..total);
            let mut chosen = None;
            for (w, actions) in &kinds {
                if pick < *w {
                    chosen = Some(actions[self.rng.random_range(0..actions.len())]);
                    break;
                }
                pick -= w;
            }
            self.step(chosen.unwrap());
        }
        self.out.shards_done = self.shards.iter().all(Tracker::is_done);
        self.out.pending_left = self.pending.iter().flat_map(|m| m.values()).sum();
        self.out.regressions = self.shards.iter().map(Tracker::regressions).sum();
        self.out.processes_saw_inf = self.procs.iter().all(|p| p.known.iter().all(|&f| f == INF));
        self.out.open_state_left = self
            .instances
            .iter()
            .flatten()
            .map(|i| i.windows.len() + i.buffers.len())
            .sum();
        if self.out.trace.len() > KEEP_TRACE {
            let cut = self.out.trace.len() - KEEP_TRACE;
            self.out.trace.drain(..cut);
        }
        self.out
    }
}

fn simulate(cfg: Config, graph: Graph) -> Outcome {
    Sim::new(cfg, graph).run()
}

/// Safety and liveness of a correct run.
fn check_correct(o: &Outcome) -> Result<(), String> {
    if o.violation_count > 0 {
        return Err(format!(
            "{} safety violations, first: {:#?}",
            o.violation_count, o.violations
        ));
    }
    if !o.quiescent {
        return Err(format!("no quiescence after {} steps", o.steps));
    }
    if !o.shards_done || !o.processes_saw_inf {
        return Err(format!(
            "liveness: not done at quiescence: shards done {}, processes saw INF {}",
            o.shards_done, o.processes_saw_inf
        ));
    }
    if o.pending_left != 0 || o.open_state_left != 0 {
        return Err(format!(
            "left over at quiescence: {} pending, {} open windows/buffers",
            o.pending_left, o.open_state_left
        ));
    }
    // A regression is a tag registered below a shard's published frontier. With one tracker that
    // never happens. With shards it does, harmlessly, when a registered range is the hull of
    // several lineage ranges: the slots between them are owned by shards that nothing holds, which
    // may have passed them already; the lineage slots themselves are held on their own shards.
    if o.regressions != 0 && !(o.shards > 1 && o.merged_ranges > 0) {
        return Err(format!(
            "{} shard regressions without merged ranges",
            o.regressions
        ));
    }
    Ok(())
}

/// Re-runs a failed case with tracing and formats a reproduction report.
fn report(cfg: &Config, graph: &Graph, err: &str) -> String {
    let o = simulate(
        Config {
            trace: true,
            ..cfg.clone()
        },
        graph.clone(),
    );
    format!(
        "{err}\nconfig: {cfg:?}\ngraph: {graph:?}\nlast {} trace lines:\n{}",
        o.trace.len(),
        o.trace.join("\n")
    )
}

fn config(seed: u64, processes: usize, shards: usize, g: u64, protocol: Protocol) -> Config {
    Config {
        seed,
        processes,
        shards,
        sources: 2,
        granularity: g,
        lateness: 4,
        elements_per_source: 60,
        jump_percent: 10,
        flush: FlushPolicy::Batched {
            percent: 30,
            count: 8,
        },
        delay: 20,
        windows_together: true,
        protocol,
        trace: false,
    }
}

fn flush_policy(mode: u8, percent: u32, count: usize) -> FlushPolicy {
    if mode == 0 {
        FlushPolicy::Unbatched
    } else {
        FlushPolicy::Batched { percent, count }
    }
}

proptest! {
    // 512 cases by default (about a millisecond each); PROPTEST_CASES overrides it for longer hunts.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn sharded_global_frontiers_are_never_early_and_reach_inf(
        seed in any::<u64>(),
        vertices in 2usize..=7,
        processes in 1usize..=4,
        shards in 1usize..=4,
        sources in 1usize..=3,
        // Fine granularity makes deferred outputs cross shards more often.
        granularity in prop_oneof![1u64..=2, 1u64..=6],
        lateness in 0u64..=8,
        elements_per_source in 10usize..=250,
        jump_percent in 0u32..=50,
        flush_mode in 0u8..4,
        flush_percent in 0u32..=50,
        flush_count in 1usize..=24,
        delay in prop_oneof![Just(0u64), 1u64..=10, 10u64..=80],
        windows_separately in proptest::bool::weighted(0.25),
    ) {
        // The graph comes from its own stream so that shrinking the other parameters keeps it.
        let graph =
            Graph::random(vertices, &mut SmallRng::seed_from_u64(seed ^ 0xD1B5_4A32_D192_ED03), (1, 2));
        let cfg = Config {
            seed,
            processes,
            shards,
            sources,
            granularity,
            lateness,
            elements_per_source,
            jump_percent,
            flush: flush_policy(flush_mode, flush_percent, flush_count),
            delay,
            windows_together: !windows_separately,
            protocol: Protocol::Correct,
            trace: false,
        };
        let o = simulate(cfg.clone(), graph.clone());
        if let Err(e) = check_correct(&o) {
            return Err(TestCaseError::fail(report(&cfg, &graph, &e)));
        }
    }
}

/// A case drawn like the property test's, from one seed (for the deterministic coverage test).
fn random_case(seed: u64) -> (Config, Graph) {
    let mut r = SmallRng::seed_from_u64(seed.wrapping_mul(0xA076_1D64_78BD_642F));
    let graph = Graph::random(r.random_range(2..=7), &mut r, (1, 2));
    let cfg = Config {
        seed,
        processes: r.random_range(1..=4),
        shards: r.random_range(1..=4),
        sources: r.random_range(1..=3),
        granularity: if r.random_bool(0.5) {
            r.random_range(1..=2)
        } else {
            r.random_range(1..=6)
        },
        lateness: r.random_range(0..=8),
        elements_per_source: r.random_range(10..=250),
        jump_percent: r.random_range(0..=50),
        flush: flush_policy(
            r.random_range(0..4),
            r.random_range(0..=50),
            r.random_range(1..=24),
        ),
        delay: match r.random_range(0..3) {
            0 => 0,
            1 => r.random_range(1..=10),
            _ => r.random_range(10..=80),
        },
        windows_together: r.random_ratio(3, 4),
        protocol: Protocol::Correct,
        trace: false,
    };
    (cfg, graph)
}

/// The case distribution of the property test really exercises shard races: on the same cases,
/// the correct protocol passes while the OLD single-tracker window protocol (correct with one
/// tracker) is caught in a good share of the sharded cases with windows.
#[test]
fn random_cases_expose_shard_races() {
    let (mut sharded_window_cases, mut old_caught) = (0, 0);
    let (mut nontrivial, mut emitted, mut rises, mut merged, mut regressions) = (0, 0, 0, 0, 0);
    const CASES: u64 = 300;
    for seed in 0..CASES {
        let (cfg, graph) = random_case(seed);
        let o = simulate(cfg.clone(), graph.clone());
        if let Err(e) = check_correct(&o) {
            panic!("{}", report(&cfg, &graph, &e));
        }
        nontrivial += o.nontrivial_checks;
        emitted += o.windows_emitted;
        rises += o.combined_rises;
        merged += o.merged_ranges;
        regressions += o.regressions;
        let old = simulate(
            Config {
                protocol: Protocol::OldEventTime,
                ..cfg.clone()
            },
            graph.clone(),
        );
        if cfg.shards == 1 {
            if let Err(e) = check_correct(&old) {
                panic!("old protocol, one shard: {}", report(&cfg, &graph, &e));
            }
        } else if o.windows_emitted > 0
            && graph
                .downstream
                .iter()
                .enumerate()
                .any(|(v, d)| graph.window[v].is_some() && !d.is_empty())
        {
            sharded_window_cases += 1;
            old_caught += usize::from(old.violation_count > 0);
        }
    }
    eprintln!(
        "{CASES} random cases: {rises} combined rises, {nontrivial} checked against pending \
         elements, {emitted} windows emitted, {merged} merged ranges, {regressions} harmless \
         regressions; OLD protocol caught in {old_caught} of {sharded_window_cases} sharded cases \
         with deferred outputs"
    );
    assert!(nontrivial > 1000 && emitted > 1000);
    assert!(
        old_caught * 10 >= sharded_window_cases && sharded_window_cases >= 20,
        "old protocol caught in only {old_caught} of {sharded_window_cases} cases"
    );
}

/// Window -> window chains on several processes and shards: `0 -> 1 (w=3) -> 2 (w=7) -> 3 (w=5,
/// sink)` and `2 -> 4` (pass-through sink), with open output buffers on the first window, for
/// every flush policy and both instant and delayed queues.
#[test]
fn window_chains_on_several_shards() {
    let graph = Graph::new(
        vec![vec![], vec![0], vec![1], vec![2], vec![2]],
        vec![0],
        vec![None, Some(3), Some(7), Some(5), None],
        vec![
            Output::Immediate,
            Output::Open { max_inputs: 3 },
            Output::Immediate,
            Output::Immediate,
            Output::Immediate,
        ],
    );
    assert!(graph.has_window_chain());
    let mut nontrivial = 0;
    for seed in 0..16u64 {
        for (processes, shards, g) in [(2, 2, 1), (3, 3, 2), (4, 4, 1), (2, 4, 5), (3, 2, 3)] {
            for (flush, delay) in [
                (FlushPolicy::Unbatched, 0),
                (FlushPolicy::Unbatched, 30),
                (
                    FlushPolicy::Batched {
                        percent: 10,
                        count: 16,
                    },
                    60,
                ),
            ] {
                let cfg = Config {
                    flush,
                    delay,
                    ..config(seed, processes, shards, g, Protocol::Correct)
                };
                let o = simulate(cfg.clone(), graph.clone());
                if let Err(e) = check_correct(&o) {
                    panic!("{}", report(&cfg, &graph, &e));
                }
                // The deferred outputs really flowed to the end of the chain.
                assert!(o.windows_emitted > 0 && o.processed[3] > 0 && o.processed[4] > 0);
                nontrivial += o.nontrivial_checks;
            }
        }
    }
    assert!(nontrivial > 0, "the oracle never saw anything pending");
}

/// Random graphs always contain windows in a good share of cases, and window chains in some: the
/// property test is not vacuous about deferred outputs.
#[test]
fn random_graphs_cover_windows_and_chains() {
    let (mut with_window, mut with_chain) = (0, 0);
    for seed in 0..200u64 {
        let graph = Graph::random(
            2 + (seed % 6) as usize,
            &mut SmallRng::seed_from_u64(seed ^ 0xD1B5_4A32_D192_ED03),
            (1, 2),
        );
        with_window += usize::from(graph.window.iter().any(Option::is_some));
        with_chain += usize::from(graph.has_window_chain());
    }
    assert!(
        with_window >= 100,
        "{with_window} of 200 graphs have a window"
    );
    assert!(
        with_chain >= 20,
        "{with_chain} of 200 graphs have a window chain"
    );
}

/// What a broken protocol must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// An early frontier (or an element created below a seen frontier).
    Safety,
    /// Some frontier never reaches `INF`.
    Liveness,
}

/// Runs `protocol` on `graph` with `make(seed)` for seeds `0..limit` and returns the first seed
/// whose run fails the expected way, with its first error. The correct protocol must pass on the
/// first seeds of the same configuration family.
fn find_violation(
    graph: &Graph,
    make: impl Fn(u64) -> Config,
    protocol: Protocol,
    expect: Expect,
    limit: u64,
) -> Option<(u64, String)> {
    for seed in 0..16 {
        let cfg = Config {
            protocol: Protocol::Correct,
            ..make(seed)
        };
        if let Err(e) = check_correct(&simulate(cfg.clone(), graph.clone())) {
            panic!("correct protocol failed: {}", report(&cfg, graph, &e));
        }
    }
    (0..limit).find_map(|seed| {
        let cfg = Config {
            protocol,
            ..make(seed)
        };
        let o = simulate(cfg, graph.clone());
        match expect {
            Expect::Safety => (o.violation_count > 0).then(|| (seed, o.violations[0].clone())),
            Expect::Liveness => check_correct(&o)
                .err()
                .filter(|e| e.starts_with("liveness"))
                .map(|e| (seed, e)),
        }
    })
}

fn assert_caught(
    graph: &Graph,
    make: impl Fn(u64) -> Config,
    protocol: Protocol,
    expect: Expect,
    limit: u64,
) {
    match find_violation(graph, make, protocol, expect, limit) {
        Some((seed, e)) => eprintln!("{protocol:?} caught at seed {seed}: {e}"),
        None => panic!("{protocol:?} was never caught in {limit} seeds: the oracle is vacuous"),
    }
}

/// Source -> window (w = 4) -> pass-through -> sink, plus a window -> window chain.
fn window_graph() -> Graph {
    Graph::new(
        vec![vec![], vec![0], vec![1], vec![2], vec![1]],
        vec![0],
        vec![None, Some(4), None, None, Some(3)],
        vec![Output::Immediate; 5],
    )
}

/// The OLD single-tracker window protocol (hold at slot b - 1, output tracked at its event time):
/// clean with one shard on the same schedules, caught with two or more shards.
#[test]
fn oracle_catches_old_event_time_protocol_with_shards() {
    let graph = window_graph();
    let make = |shards: usize| {
        move |seed| Config {
            flush: FlushPolicy::Unbatched,
            delay: 40,
            ..config(seed, 3, shards, 1, Protocol::OldEventTime)
        }
    };
    for seed in 0..64 {
        let cfg = make(1)(seed);
        if let Err(e) = check_correct(&simulate(cfg.clone(), graph.clone())) {
            panic!(
                "the old protocol should be correct with one tracker: {}",
                report(&cfg, &graph, &e)
            );
        }
    }
    for shards in [2, 3, 4] {
        assert_caught(
            &graph,
            make(shards),
            Protocol::OldEventTime,
            Expect::Safety,
            400,
        );
    }
}

/// The two counterexamples of docs/sharding-notes.md, section 2.
#[test]
fn oracle_catches_hold_in_creator_slot_without_lineage() {
    let graph = window_graph();
    let make = |seed| Config {
        flush: FlushPolicy::Unbatched,
        delay: 40,
        ..config(seed, 3, 2, 1, Protocol::Correct)
    };
    assert_caught(
        &graph,
        make,
        Protocol::HoldAtCreatorOnly,
        Expect::Safety,
        400,
    );
    assert_caught(&graph, make, Protocol::StretchedOutput, Expect::Safety, 400);
}

#[test]
fn oracle_catches_missing_window_hold() {
    let graph = window_graph();
    for shards in [1, 3] {
        let make = move |seed| Config {
            flush: FlushPolicy::Unbatched,
            ..config(seed, 2, shards, 1, Protocol::Correct)
        };
        assert_caught(&graph, make, Protocol::NoWindowHold, Expect::Safety, 400);
    }
}

/// A heartbeat that reaches one shard only leaves the other shards' frontiers at their last
/// heartbeat forever: missing heartbeats are conservative, so this is caught by liveness.
#[test]
fn oracle_catches_heartbeat_to_one_shard() {
    let graph = window_graph();
    let make = |seed| config(seed, 2, 2, 1, Protocol::Correct);
    assert_caught(
        &graph,
        make,
        Protocol::HeartbeatToOneShard,
        Expect::Liveness,
        50,
    );
}

#[test]
fn oracle_catches_ack_pieces_sent_to_the_wrong_shard() {
    let graph = Graph::new(
        vec![vec![], vec![0], vec![1]],
        vec![0],
        vec![None; 3],
        vec![Output::Immediate; 3],
    );
    let make = |seed| config(seed, 2, 2, 1, Protocol::Correct);
    assert_caught(
        &graph,
        make,
        Protocol::AcksToWrongShard,
        Expect::Safety,
        200,
    );
}

/// Heartbeats must travel on the FIFO queues with the acks: a source's send tags never overtake
/// its heartbeat (docs/design.md, requirement 4).
#[test]
fn oracle_catches_heartbeats_overtaking_ack_pieces() {
    let graph = window_graph();
    let make = |seed| Config {
        delay: 40,
        ..config(seed, 2, 2, 1, Protocol::Correct)
    };
    assert_caught(
        &graph,
        make,
        Protocol::HeartbeatsOvertakeAcks,
        Expect::Safety,
        200,
    );
}
