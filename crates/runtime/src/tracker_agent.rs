//! The centralized tracking agent of one process.
//!
//! In one process the tracker runs *inline*: a worker that flushes its local acker applies the flush
//! to the shared [`Tracker`] under a mutex, advances it, learns its own new frontiers at once and
//! sends `Frontier(c, t)` to every other worker. This keeps the FIFO order per worker (a worker's
//! flushes are applied in its program order), needs no extra thread competing for cores, and saves a
//! thread wake-up on every notification. (A tracker in its own process comes with the network
//! transport.)
//!
//! A notification goes to the workers whose vertices act on that component's frontier (windows,
//! sinks) and, for termination, to every worker once a frontier reaches `INF`; a pass-through
//! vertex's frontier is not worth a wake-up. Every worker runs the same vertices, so in practice a
//! consumed component's notifications reach every worker.

use crate::traffic::{MessageKind, Traffic};
use crate::worker_ctx::Unparkers;
use crossbeam_channel::Sender;
use std::sync::{Arc, Mutex};
use xorflow_tracking::ack::Heartbeat;
use xorflow_tracking::{AckEntry, Flush, FrontierUpdate, Tracker, INF};

/// What the tracker did during a run.
#[derive(Clone, Debug, Default)]
pub struct TrackerStats {
    /// Notifications sent, by kind (acks and heartbeats are counted by the sending workers).
    pub traffic: Traffic,
    /// Flushes applied.
    pub flushes_applied: u64,
    /// Frontier computations.
    pub advances: u64,
    /// Frontiers that would have moved back (must be 0).
    pub regressions: u64,
    /// Time spent inside the tracker (applying flushes, computing frontiers, sending
    /// notifications), seconds of wall-clock time on the workers that called it. Nothing inside
    /// blocks, so this is CPU time; it is read with the monotonic clock (~25 ns) because a thread
    /// CPU clock read is a ~0.5 us system call here, and this runs on every flush.
    pub busy_s: f64,
    /// Largest number of non-zero differences the tracker's tables held at once.
    pub peak_table_entries: usize,
}

struct Inner {
    tracker: Tracker,
    stats: TrackerStats,
}

/// The tracker shared by the workers of a process.
pub struct TrackerAgent {
    inner: Mutex<Inner>,
    /// `interest[c]`: some vertex acts on component `c`'s frontier.
    interest: Vec<bool>,
    workers: Vec<Sender<Vec<FrontierUpdate>>>,
    unparkers: Arc<Unparkers>,
}

impl TrackerAgent {
    /// An agent around `tracker` notifying `workers[w]` (and waking them through `unparkers`) of
    /// the components flagged in `interest`, and of every component reaching `INF`.
    pub fn new(
        tracker: Tracker,
        interest: Vec<bool>,
        workers: Vec<Sender<Vec<FrontierUpdate>>>,
        unparkers: Arc<Unparkers>,
    ) -> Self {
        TrackerAgent {
            interest,
            inner: Mutex::new(Inner {
                tracker,
                stats: TrackerStats::default(),
            }),
            workers,
            unparkers,
        }
    }

    /// Applies worker `from`'s flush, advances the frontiers, notifies the other workers of the
    /// ones that moved (see the module doc) and returns all of them for `from` itself.
    ///
    /// # Errors
    /// A malformed flush (unknown component or source), naming it.
    pub fn deliver(&self, from: usize, flush: &Flush) -> Result<Vec<FrontierUpdate>, String> {
        let mut g = self.inner.lock().map_err(|_| "tracker mutex poisoned")?;
        let t0 = crate::clock::now_ns();
        let inner = &mut *g;
        inner.stats.flushes_applied += 1;
        inner.tracker.apply(flush)?;
        inner.stats.advances += 1;
        let ups = inner.tracker.advance();
        inner.stats.peak_table_entries = inner
            .stats
            .peak_table_entries
            .max(inner.tracker.table_entries());
        let wanted: Vec<FrontierUpdate> = ups
            .iter()
            .filter(|u| u.frontier == INF || self.interest[u.component as usize])
            .copied()
            .collect();
        if !wanted.is_empty() {
            let bytes = wanted.len() as u64 * FrontierUpdate::WIRE_BYTES;
            for (w, tx) in self.workers.iter().enumerate() {
                inner.stats.traffic.record(MessageKind::Frontier, bytes);
                // A worker that already finished has dropped its receiver; nothing to tell it.
                if w != from && tx.send(wanted.clone()).is_ok() {
                    self.unparkers.unpark(w);
                }
            }
        }
        inner.stats.busy_s += (crate::clock::now_ns() - t0) as f64 * 1e-9;
        Ok(ups)
    }

    /// Statistics so far.
    pub fn stats(&self) -> TrackerStats {
        let g = self.inner.lock().expect("tracker mutex poisoned");
        let mut s = g.stats.clone();
        s.regressions = g.tracker.regressions();
        s
    }
}

/// Bytes a flush's acks occupy on the wire.
pub fn ack_bytes(acks: &[AckEntry]) -> u64 {
    acks.len() as u64 * AckEntry::WIRE_BYTES
}

/// Bytes a flush's heartbeats occupy on the wire.
pub fn heartbeat_bytes(hbs: &[Heartbeat]) -> u64 {
    hbs.len() as u64 * Heartbeat::WIRE_BYTES
}
