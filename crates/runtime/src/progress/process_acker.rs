//! The local acker of a process (docs/design.md, requirement 4) and the routing of its flushes to the
//! tracker shards.
//!
//! Workers keep a thread-local [`LocalAcker`] on the hot path and hand its content to the process
//! acker (`progress/handoff.rs`); when it flushes to the shards is decided by [`FlushPolicy`]
//! (`progress/flush_policy.rs`). The flush is split by shard ([`split_flush`]) and each piece goes
//! to its shard over that shard's FIFO path (inline for a shard hosted here, a frame on the
//! connection to each other host). All of it happens under the mutex, so pieces leave in the order
//! they were made.
//!
//! No worker waits for that mutex. A hand-off is queued, then the worker *tries* the mutex: if
//! another worker holds it, that one merges the queued hand-off (and honours its urgency) before
//! it lets go, so the worker goes on at once (a combining lock). A worker going idle whose acks
//! cannot complete a slot yet (`progress/idle_gate.rs`) only queues them; [`ProcessAcker::tick`]
//! or the next flush merges them.
//!
//! Unbatched (`--ack-flush-count 0`): every ack and heartbeat is sent at once as its own message,
//! in program order; a range ack goes to each shard owning one of its slots.
//!
//! `--ack-multiplier m` puts 2m self-cancelling random acks (m random tags, each twice, on the same
//! component and slot) in front of every real ack: the tracker's load grows (2m+1)-fold while its
//! results stay the same (the trAcker paper's scalability experiment, docs/papers.md).

use super::flush_policy::FlushPolicy;
use super::idle_gate::IdleGate;
use crate::measure::traffic::{MessageKind, Traffic};
use crate::net::frame::{self, Kind};
use crate::net::link::RemoteTx;
use crate::progress::tracker_agent::{ack_bytes, heartbeat_bytes, TrackerAgent};
use crossbeam_queue::SegQueue;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use xorflow_tracking::ack::Heartbeat;
use xorflow_tracking::{split_flush, AckEntry, AckEvent, Flush, Granularity, LocalAcker, ShardMap};

/// Where a shard's pieces go: its replica in this process, if any, and the connections to the
/// processes running the others (one process in total with the central layout, every worker
/// process with the replicated one: `config/mod.rs`, `TrackerLayout`).
pub struct ShardRoute {
    /// The shard (or its replica) hosted here.
    pub local: Option<Arc<TrackerAgent>>,
    /// The processes hosting it elsewhere.
    pub remotes: Vec<RemoteTx>,
}

/// Queued hand-offs at which a worker going idle merges them (if the mutex is free) although
/// they cannot complete a slot: merging a long queue at once would land on the worker that
/// brings the next useful flush, at the end of a slot, when notifications are waited for
/// (`xorflow-lab bench chain`, 1 process, per-instance notification p99: docs/cpu.md).
const MERGE_AT: usize = 32;

/// How soon a hand-off wants the process acker flushed to the shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Urgency {
    /// When the count or interval says so.
    Due = 0,
    /// The worker is going idle: now, if the flush can move a frontier (`progress/idle_gate.rs`).
    Idle = 1,
    /// Now (the worker's run ends).
    Now = 2,
}

struct Inner {
    acker: LocalAcker,
    gate: IdleGate,
    last_flush_ns: u64,
    rng: SmallRng,
    traffic: Traffic,
}

/// The process-level acker and its routes to the shards.
pub struct ProcessAcker {
    shards: Vec<ShardRoute>,
    policy: FlushPolicy,
    /// Self-cancelling acks per real ack: 2 × this.
    multiplier: usize,
    inner: Mutex<Inner>,
    pending: AtomicBool,
    /// Hand-offs waiting for whoever holds `inner` (see the module doc).
    queued: SegQueue<Flush>,
    /// The highest [`Urgency`] of the hand-offs queued since the last merge.
    urgency_queued: AtomicU8,
    /// Hand-offs left to another worker because the mutex was held.
    deferred: AtomicU64,
    /// The idle gate's bound (`IdleGate::min_bound`), for workers to test their own hand-off
    /// without the mutex.
    gate_bound: AtomicU64,
    /// When the last flush to the shards left, ns (a copy of `Inner::last_flush_ns` for
    /// [`ProcessAcker::tick`]).
    last_flush_ns: AtomicU64,
}

impl ProcessAcker {
    /// An acker of a job with `sources` data sources flushing to `shards` (index = shard) by
    /// `policy`, adding `2 × multiplier` self-cancelling acks per real one.
    pub fn new(
        granularity: Granularity,
        sources: usize,
        shards: Vec<ShardRoute>,
        policy: FlushPolicy,
        multiplier: usize,
    ) -> Self {
        ProcessAcker {
            shards,
            policy,
            multiplier,
            inner: Mutex::new(Inner {
                acker: LocalAcker::new(granularity),
                gate: IdleGate::new(granularity, sources),
                last_flush_ns: crate::measure::clock::now_ns(),
                rng: SmallRng::from_os_rng(),
                traffic: Traffic::default(),
            }),
            pending: AtomicBool::new(false),
            queued: SegQueue::new(),
            urgency_queued: AtomicU8::new(Urgency::Due as u8),
            deferred: AtomicU64::new(0),
            gate_bound: AtomicU64::new(xorflow_tracking::INF),
            last_flush_ns: AtomicU64::new(crate::measure::clock::now_ns()),
        }
    }

    /// The flush policy (shared with the workers' hand-off).
    pub fn policy(&self) -> &FlushPolicy {
        &self.policy
    }

    /// True while merged updates wait for the next flush.
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Merges a worker's flush; flushes to the shards as `urgency` asks or when the count or
    /// interval is reached. Never waits for another worker: if the mutex is held, its holder
    /// merges `f` (and honours `urgency`) before letting go (module doc).
    ///
    /// # Errors
    /// A shard hosted here rejected a piece (names the offender).
    pub fn submit(&self, mut f: Flush, now_ns: u64, urgency: Urgency) -> Result<(), String> {
        if urgency == Urgency::Idle {
            match self.queue_if_useless(f) {
                Some(rest) => f = rest,
                None => return Ok(()),
            }
        }
        if !f.is_empty() {
            self.queued.push(f);
        }
        if urgency != Urgency::Due {
            self.urgency_queued
                .fetch_max(urgency as u8, Ordering::AcqRel);
        }
        loop {
            // Pairs with the fence after the unlock below: either this thread gets the mutex, or
            // its holder sees what was queued once it has let go (no hand-off is stranded).
            fence(Ordering::SeqCst);
            let mut g = match self.inner.try_lock() {
                Ok(g) => g,
                Err(TryLockError::WouldBlock) => {
                    self.deferred.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(TryLockError::Poisoned(_)) => return Err("acker mutex poisoned".into()),
            };
            let r = self.merge_queued(&mut g, now_ns);
            drop(g);
            r?;
            fence(Ordering::SeqCst);
            if self.queued.is_empty()
                && self.urgency_queued.load(Ordering::Acquire) == Urgency::Due as u8
            {
                return Ok(());
            }
        }
    }

    /// A worker going idle whose hand-off `f` cannot complete a slot (no heartbeat, every
    /// difference at or above the slots the sources have passed: [`IdleGate`]) queues it without
    /// the mutex, for `tick` or the next flush to merge, and returns `None`. Otherwise it returns
    /// what the caller still has to submit: `f` itself if it may be useful, or nothing if it was
    /// queued but the bound moved meanwhile (a flush in between may have missed it, so the caller
    /// takes the mutex to judge the queue again) or the queue holds [`MERGE_AT`] hand-offs.
    fn queue_if_useless(&self, f: Flush) -> Option<Flush> {
        if f.is_empty() {
            return None;
        }
        let bound = self.gate_bound.load(Ordering::Acquire);
        if !f.heartbeats.is_empty() || f.acks.iter().any(|a| a.slot < bound) {
            return Some(f);
        }
        self.queued.push(f);
        self.pending.store(true, Ordering::Release);
        self.urgency_queued
            .fetch_max(Urgency::Idle as u8, Ordering::AcqRel);
        // Pairs with the fence after the holder's unlock in `submit`: either the holder sees
        // this hand-off queued, or this thread sees the bound it raised.
        fence(Ordering::SeqCst);
        if self.gate_bound.load(Ordering::Acquire) == bound && self.queued.len() < MERGE_AT {
            None
        } else {
            Some(Flush::default())
        }
    }

    /// Under the mutex: merges every queued hand-off and flushes if due.
    fn merge_queued(&self, g: &mut Inner, now_ns: u64) -> Result<(), String> {
        let urgency = self
            .urgency_queued
            .swap(Urgency::Due as u8, Ordering::AcqRel);
        while let Some(f) = self.queued.pop() {
            g.acker.merge(&f);
        }
        let since = now_ns.saturating_sub(g.last_flush_ns);
        // Flushing on idle, whatever can move a frontier leaves now, whoever brought it: a busy
        // source's heartbeat handed over on the interval must not wait for the next one.
        let now = urgency == Urgency::Now as u8
            || (self.policy.flush_useful() && g.gate.useful(&g.acker));
        let r = if self.policy.flush_due(g.acker.pending_updates(), since, now)
            && !g.acker.is_empty()
        {
            self.send_merged(g, now_ns)
        } else {
            Ok(())
        };
        self.pending.store(!g.acker.is_empty(), Ordering::Release);
        r
    }

    /// Flushes if the interval has passed and something is pending (called from worker loops).
    ///
    /// # Errors
    /// As [`ProcessAcker::submit`].
    #[inline]
    pub fn tick(&self, now_ns: u64) -> Result<(), String> {
        if !self.pending.load(Ordering::Acquire)
            || now_ns.saturating_sub(self.last_flush_ns.load(Ordering::Relaxed))
                < self.policy.interval_ns
        {
            return Ok(());
        }
        self.submit(Flush::default(), now_ns, Urgency::Due)
    }

    /// When [`ProcessAcker::tick`] would flush what is pending (the interval after the last
    /// flush), ns; `None` when nothing is pending. A worker going idle with hand-offs queued
    /// wakes then: nothing else would (`worker/mod.rs`).
    pub fn next_tick_ns(&self) -> Option<u64> {
        self.pending.load(Ordering::Acquire).then(|| {
            (self.last_flush_ns.load(Ordering::Relaxed)).saturating_add(self.policy.interval_ns)
        })
    }

    /// Hand-offs a worker left to another because the mutex was held (module doc).
    pub fn deferred_handoffs(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }

    fn send_merged(&self, g: &mut Inner, now_ns: u64) -> Result<(), String> {
        g.last_flush_ns = now_ns;
        self.last_flush_ns.store(now_ns, Ordering::Relaxed);
        let f = g.acker.flush();
        g.gate.flushed(&f);
        self.gate_bound.store(g.gate.bound(), Ordering::Release);
        let pieces = split_flush(&f, self.shards.len() as u64);
        let mut err = None;
        for (k, mut piece) in pieces.into_iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            self.add_noise(g, &mut piece.acks);
            if !piece.acks.is_empty() {
                g.traffic.record(MessageKind::Ack, ack_bytes(&piece.acks));
            }
            if !piece.heartbeats.is_empty() {
                g.traffic
                    .record(MessageKind::Heartbeat, heartbeat_bytes(&piece.heartbeats));
            }
            if let Err(e) = self.route(k, &piece) {
                err.get_or_insert(e);
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Sends a worker's unbatched log: every event on its own, in order.
    ///
    /// # Errors
    /// As [`ProcessAcker::submit`].
    pub fn submit_log(&self, log: &[AckEvent]) -> Result<(), String> {
        let mut g = self.inner.lock().map_err(|_| "acker mutex poisoned")?;
        let s = self.shards.len() as u64;
        let mut err = None;
        for ev in log {
            match *ev {
                AckEvent::Range {
                    component,
                    lo,
                    hi,
                    xor,
                } => {
                    for k in 0..s {
                        let Some((a, b)) = ShardMap::new(s, k).local_range(lo, hi) else {
                            continue;
                        };
                        let mut acks = Vec::with_capacity(2);
                        acks.push(AckEntry {
                            component,
                            slot: a,
                            xor,
                        });
                        if b < xorflow_tracking::INF - 1 {
                            acks.push(AckEntry {
                                component,
                                slot: b + 1,
                                xor,
                            });
                        }
                        self.add_noise(&mut g, &mut acks);
                        g.traffic.record(MessageKind::Ack, ack_bytes(&acks));
                        let piece = Flush {
                            acks,
                            heartbeats: Vec::new(),
                        };
                        if let Err(e) = self.route(k as usize, &piece) {
                            err.get_or_insert(e);
                        }
                    }
                }
                AckEvent::Heartbeat(h) => {
                    for k in 0..self.shards.len() {
                        g.traffic
                            .record(MessageKind::Heartbeat, Heartbeat::WIRE_BYTES);
                        let piece = Flush {
                            acks: Vec::new(),
                            heartbeats: vec![h],
                        };
                        if let Err(e) = self.route(k, &piece) {
                            err.get_or_insert(e);
                        }
                    }
                }
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Puts 2m self-cancelling random acks in front of each real one.
    fn add_noise(&self, g: &mut Inner, acks: &mut Vec<AckEntry>) {
        let m = self.multiplier;
        if m == 0 || acks.is_empty() {
            return;
        }
        let real = std::mem::take(acks);
        acks.reserve(real.len() * (2 * m + 1));
        for e in real {
            for _ in 0..m {
                let x: u64 = g.rng.random();
                let noise = AckEntry { xor: x, ..e };
                acks.push(noise);
                acks.push(noise);
            }
            acks.push(e);
        }
    }

    /// Sends a piece to every replica of shard `shard`: the remote ones first (the frame is
    /// encoded once), so the network carries it while this thread applies it here.
    fn route(&self, shard: usize, piece: &Flush) -> Result<(), String> {
        let r = &self.shards[shard];
        if !r.remotes.is_empty() {
            let f = frame::shard_frame(Kind::Acks, shard as u32, piece);
            for remote in &r.remotes {
                remote.send(f.clone());
            }
        }
        match &r.local {
            Some(agent) => agent.deliver(piece),
            None => Ok(()),
        }
    }

    /// Acks and heartbeats sent so far.
    pub fn traffic(&self) -> Traffic {
        self.inner.lock().map(|g| g.traffic).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::frontier_inbox::FrontierInbox;
    use crate::wake::Unparkers;
    use xorflow_tracking::{Topology, Tracker, INF};

    /// A process acker flushing on idle what can move a frontier (never on count or interval) to
    /// one inline tracker shard over a single component and `sources` sources, which notifies
    /// `inboxes`.
    fn acker_and_tracker(
        g: Granularity,
        sources: usize,
        inboxes: Vec<Arc<FrontierInbox>>,
    ) -> (Arc<ProcessAcker>, Arc<TrackerAgent>) {
        let unparkers = Arc::new(Unparkers::new(inboxes.len()));
        let agent = Arc::new(TrackerAgent::new(
            0,
            Tracker::new(g, Topology::chain(1), sources),
            vec![true],
            inboxes,
            unparkers,
            Vec::new(),
        ));
        let policy = FlushPolicy {
            interval_ns: u64::MAX,
            count: usize::MAX,
            on_idle: crate::config::AckOnIdle::Useful,
        };
        let route = ShardRoute {
            local: Some(agent.clone()),
            remotes: Vec::new(),
        };
        let acker = ProcessAcker::new(g, sources, vec![route], policy, 0);
        (Arc::new(acker), agent)
    }

    /// Workers hand their acks over concurrently, each tag in one hand-off and its cancelling twin
    /// in another, some forcing a flush, none waiting for the mutex. Once they are done, every
    /// hand-off must have reached the tracker: its frontier is INF only if no hand-off was left in
    /// the queue (a deferred hand-off nobody merged leaves a slot's XOR non-zero or a source's
    /// last heartbeat missing).
    #[test]
    fn no_hand_off_is_stranded_when_workers_meet() {
        const WORKERS: usize = 4;
        const TAGS: u64 = 300;
        const ROUNDS: u64 = 200;
        let mut deferred = 0;
        for round in 0..ROUNDS {
            let g = Granularity::new(1);
            let (acker, agent) = acker_and_tracker(g, WORKERS, Vec::new());
            // The last hand-offs meet on purpose: the ones most likely to be stranded.
            let last = std::sync::Barrier::new(WORKERS);
            std::thread::scope(|s| {
                for w in 0..WORKERS {
                    let acker = acker.clone();
                    let last = &last;
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(round * 100 + w as u64);
                        for i in 0..TAGS {
                            let x: u64 = rng.random::<u64>() | 1;
                            for half in 0..2 {
                                let mut local = LocalAcker::new(g);
                                local.xor_slots(0, i, i, x);
                                let urgency = match (half, rng.random_range(0..3)) {
                                    (1, 0) => Urgency::Now,
                                    (1, 1) => Urgency::Idle,
                                    _ => Urgency::Due,
                                };
                                acker.submit(local.flush(), i, urgency).unwrap();
                            }
                        }
                        let mut local = LocalAcker::new(g);
                        local.heartbeat(w as u32, INF);
                        last.wait();
                        acker.submit(local.flush(), TAGS, Urgency::Now).unwrap();
                    });
                }
            });
            assert!(agent.is_done(), "round {round}: a hand-off was stranded");
            deferred += acker.deferred_handoffs();
        }
        // Not asserted: whether workers meet is up to the scheduler.
        eprintln!("deferred hand-offs: {deferred} in {ROUNDS} rounds");
    }

    /// An idle hand-off that cannot complete a slot waits; the next one that can takes it along.
    #[test]
    fn idle_hand_offs_wait_until_they_can_complete_a_slot() {
        let g = Granularity::new(10);
        let rx = Arc::new(FrontierInbox::new());
        let (acker, agent) = acker_and_tracker(g, 1, vec![rx.clone()]);
        let hand_off = |edit: &dyn Fn(&mut LocalAcker)| {
            let mut a = LocalAcker::new(g);
            edit(&mut a);
            acker.submit(a.flush(), 0, Urgency::Idle).unwrap();
        };
        let frontier = || {
            let mut read = Vec::new();
            rx.take(&mut read);
            read.pop().map(|(_, u)| u)
        };
        let flushes = || agent.stats().flushes_applied;
        hand_off(&|a| a.xor_slots(0, 5, 5, 0xa));
        hand_off(&|a| a.heartbeat(0, 100));
        assert_eq!(flushes(), 2, "no bound yet, then a first heartbeat");
        assert_eq!(frontier().map(|u| u.frontier), Some(50));
        hand_off(&|a| a.xor_slots(0, 12, 12, 0xb));
        assert_eq!(flushes(), 2, "slot 12 is open at the only source: it waits");
        hand_off(&|a| a.heartbeat(0, 105));
        assert_eq!(
            flushes(),
            2,
            "a heartbeat that passes no new slot waits too"
        );
        hand_off(&|a| a.xor_slots(0, 5, 5, 0xa));
        assert_eq!(
            flushes(),
            3,
            "slot 5 lies below the bound: flushed, with what waited"
        );
        assert_eq!(frontier().map(|u| u.frontier), Some(100));
    }
}
