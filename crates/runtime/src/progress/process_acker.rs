//! The local acker of a process (docs/design.md, requirement 4) and the routing of its flushes to the
//! tracker shards.
//!
//! Workers keep a thread-local [`LocalAcker`] on the hot path and hand its content to the process
//! acker (a short mutex merge, `progress/handoff.rs`); when it flushes to the shards is decided by
//! [`FlushPolicy`] (`progress/flush_policy.rs`). The flush is split by shard ([`split_flush`]) and each piece goes to its shard
//! over that shard's FIFO path (inline for a shard hosted here, a frame on the connection to each
//! other host). All of it happens under the mutex, so pieces leave in the order they were made.
//!
//! Unbatched (`--ack-flush-count 0`): every ack and heartbeat is sent at once as its own message,
//! in program order; a range ack goes to each shard owning one of its slots.
//!
//! `--ack-multiplier m` puts 2m self-cancelling random acks (m random tags, each twice, on the same
//! component and slot) in front of every real ack: the tracker's load grows (2m+1)-fold while its
//! results stay the same (seed 000's scalability experiment).

use super::flush_policy::FlushPolicy;
use crate::measure::traffic::{MessageKind, Traffic};
use crate::net::frame::{self, Kind};
use crate::net::link::RemoteTx;
use crate::progress::tracker_agent::{ack_bytes, heartbeat_bytes, TrackerAgent};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use xorflow_tracking::ack::Heartbeat;
use xorflow_tracking::{split_flush, AckEntry, AckEvent, Flush, Granularity, LocalAcker, ShardMap};

/// Where a shard's pieces go: its replica in this process, if any, and the connections to the
/// processes running the others (one process in total with the central layout, every worker
/// process with the replicated one: `config.rs`, `TrackerLayout`).
pub struct ShardRoute {
    /// The shard (or its replica) hosted here.
    pub local: Option<Arc<TrackerAgent>>,
    /// The processes hosting it elsewhere.
    pub remotes: Vec<RemoteTx>,
}

struct Inner {
    acker: LocalAcker,
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
}

impl ProcessAcker {
    /// An acker flushing to `shards` (index = shard) by `policy`, adding `2 × multiplier`
    /// self-cancelling acks per real one.
    pub fn new(
        granularity: Granularity,
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
                last_flush_ns: crate::measure::clock::now_ns(),
                rng: SmallRng::from_os_rng(),
                traffic: Traffic::default(),
            }),
            pending: AtomicBool::new(false),
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

    /// Merges a worker's flush; flushes to the shards if `force` (the worker is going idle) or the
    /// count or interval is reached.
    ///
    /// # Errors
    /// A shard hosted here rejected a piece (names the offender).
    pub fn submit(&self, f: &Flush, now_ns: u64, force: bool) -> Result<(), String> {
        let mut g = self.inner.lock().map_err(|_| "acker mutex poisoned")?;
        if !f.is_empty() {
            g.acker.merge(f);
        }
        let since = now_ns.saturating_sub(g.last_flush_ns);
        if self
            .policy
            .flush_due(g.acker.pending_updates(), since, force)
            && !g.acker.is_empty()
        {
            self.send_merged(&mut g, now_ns)?;
        }
        self.pending.store(!g.acker.is_empty(), Ordering::Release);
        Ok(())
    }

    /// Flushes if the interval has passed and something is pending (called from worker loops).
    ///
    /// # Errors
    /// As [`ProcessAcker::submit`].
    #[inline]
    pub fn tick(&self, now_ns: u64) -> Result<(), String> {
        if !self.pending.load(Ordering::Acquire) {
            return Ok(());
        }
        self.submit(&Flush::default(), now_ns, false)
    }

    fn send_merged(&self, g: &mut Inner, now_ns: u64) -> Result<(), String> {
        g.last_flush_ns = now_ns;
        let f = g.acker.flush();
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
