//! A tracker shard hosted by a process (docs/design.md, requirements 5 and 6).
//!
//! The tracker runs *inline*: whoever brings a flush piece (a worker flushing this process's acker,
//! or the network thread with another process's piece) applies it to the shard's [`Tracker`] under a
//! mutex, advances it and sends the frontiers that moved to every worker: to this process's workers
//! through their inboxes, to other processes in one Frontier frame each. This keeps each process's
//! pieces in FIFO order (they are applied in the order they were made), needs no thread of its own
//! competing for cores, and saves a thread wake-up per notification.
//!
//! A notification goes out for components some vertex acts on (windows, sinks) and, for termination,
//! for every component reaching `INF`; a pass-through vertex's frontier is not worth a wake-up.

use super::frontier_inbox::FrontierInbox;
use crate::measure::traffic::{MessageKind, Traffic};
use crate::net::frame;
use crate::net::link::RemoteTx;
use crate::wake::Unparkers;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use xorflow_tracking::ack::Heartbeat;
use xorflow_tracking::{AckEntry, Flush, FrontierUpdate, Tracker, INF};

/// What a tracker shard did during a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrackerStats {
    /// Notifications sent, by kind (acks and heartbeats are counted by the sending ackers).
    pub traffic: Traffic,
    /// Flush pieces applied.
    pub flushes_applied: u64,
    /// Ack entries applied (difference points, multiplier load included).
    pub acks_applied: u64,
    /// Frontier computations.
    pub advances: u64,
    /// Frontiers that would have moved back (must be 0 with one shard; see
    /// `xorflow_tracking::Tracker::regressions`).
    pub regressions: u64,
    /// Epoch frontiers that would have moved back (must be 0 with any number of shards).
    pub epoch_regressions: u64,
    /// Time spent inside the tracker (applying pieces, computing frontiers, sending
    /// notifications), seconds of wall-clock time on the threads that called it. Nothing inside
    /// blocks, so this is CPU time; it is read with the monotonic clock (~25 ns) because a thread
    /// CPU clock read is a ~0.5 us system call here, and this runs on every piece.
    pub busy_s: f64,
    /// Largest number of non-zero differences the tables held at once.
    pub peak_table_entries: usize,
    /// Hand-offs a worker left to another worker of its process because the process acker's
    /// mutex was held (`progress/process_acker.rs`), summed over the processes hosting a shard.
    /// Kept with the
    /// tracker's statistics: it is how often tracking's hand-offs met.
    #[serde(default)]
    pub deferred_handoffs: u64,
}

impl TrackerStats {
    /// Adds another shard's statistics (busy time and peaks add up: shards run in parallel).
    pub fn merge(&mut self, o: &TrackerStats) {
        self.traffic += o.traffic;
        self.flushes_applied += o.flushes_applied;
        self.acks_applied += o.acks_applied;
        self.advances += o.advances;
        self.regressions += o.regressions;
        self.epoch_regressions += o.epoch_regressions;
        self.busy_s += o.busy_s;
        self.peak_table_entries += o.peak_table_entries;
        self.deferred_handoffs += o.deferred_handoffs;
    }
}

struct Inner {
    tracker: Tracker,
    stats: TrackerStats,
}

/// One tracker shard and the workers it notifies.
pub struct TrackerAgent {
    shard: u32,
    inner: Mutex<Inner>,
    /// `interest[c]`: some vertex acts on component `c`'s frontier.
    interest: Vec<bool>,
    workers: Vec<Arc<FrontierInbox>>,
    unparkers: Arc<Unparkers>,
    remote: Vec<RemoteTx>,
}

impl TrackerAgent {
    /// Shard `shard` around `tracker`, notifying this process's `workers` (waking them through
    /// `unparkers`) and the processes behind `remote` of the components flagged in `interest`, and
    /// of every component reaching `INF`.
    pub fn new(
        shard: u32,
        tracker: Tracker,
        interest: Vec<bool>,
        workers: Vec<Arc<FrontierInbox>>,
        unparkers: Arc<Unparkers>,
        remote: Vec<RemoteTx>,
    ) -> Self {
        TrackerAgent {
            shard,
            interest,
            inner: Mutex::new(Inner {
                tracker,
                stats: TrackerStats::default(),
            }),
            workers,
            unparkers,
            remote,
        }
    }

    /// Applies one flush piece, advances the frontiers and notifies every worker of the ones that
    /// moved (see the module doc).
    ///
    /// # Errors
    /// A malformed piece (unknown component or source), naming it.
    pub fn deliver(&self, piece: &Flush) -> Result<(), String> {
        let mut g = self.inner.lock().map_err(|_| "tracker mutex poisoned")?;
        let t0 = crate::measure::clock::now_ns();
        let inner = &mut *g;
        inner.stats.flushes_applied += 1;
        inner.stats.acks_applied += piece.acks.len() as u64;
        inner.tracker.apply(piece)?;
        inner.stats.advances += 1;
        let ups = inner.tracker.advance();
        inner.stats.peak_table_entries = inner
            .stats
            .peak_table_entries
            .max(inner.tracker.table_entries());
        let wanted: Vec<FrontierUpdate> = ups
            .into_iter()
            .filter(|u| u.frontier == INF || self.interest[u.component as usize])
            .collect();
        if !wanted.is_empty() {
            let bytes = wanted.len() as u64 * FrontierUpdate::WIRE_BYTES;
            for (w, inbox) in self.workers.iter().enumerate() {
                // Only an offer into an empty inbox is a message (frontier_inbox.rs); others
                // join the unread updates of a worker already due to read them.
                if inbox.offer(self.shard, &wanted) {
                    inner.stats.traffic.record(MessageKind::Frontier, bytes);
                    self.unparkers.unpark(w);
                }
            }
            if !self.remote.is_empty() {
                let f = frame::frontier(self.shard, &wanted);
                for p in &self.remote {
                    inner
                        .stats
                        .traffic
                        .record_frame(MessageKind::Frontier, f.len() as u64 + 4);
                    p.send(f.clone());
                }
            }
        }
        inner.stats.busy_s += (crate::measure::clock::now_ns() - t0) as f64 * 1e-9;
        Ok(())
    }

    /// True once every component's frontier is `INF` on this shard: all sources have ended and
    /// everything they sent is acknowledged, so no more pieces will change it.
    pub fn is_done(&self) -> bool {
        self.inner
            .lock()
            .expect("tracker mutex poisoned")
            .tracker
            .is_done()
    }

    /// Statistics so far.
    pub fn stats(&self) -> TrackerStats {
        let g = self.inner.lock().expect("tracker mutex poisoned");
        let mut s = g.stats.clone();
        s.regressions = g.tracker.regressions();
        s.epoch_regressions = g.tracker.epoch_regressions();
        s
    }
}

/// Bytes a flush's acks occupy on the wire (fixed-width encoding, header included).
pub fn ack_bytes(acks: &[AckEntry]) -> u64 {
    acks.len() as u64 * AckEntry::WIRE_BYTES
}

/// Bytes a flush's heartbeats occupy on the wire.
pub fn heartbeat_bytes(hbs: &[Heartbeat]) -> u64 {
    hbs.len() as u64 * Heartbeat::WIRE_BYTES
}
