//! The centralized tracking agent as a thread of the process: applies local-acker flushes in FIFO
//! order per worker and sends `Frontier(c, t)` notifications to every worker.

use crate::traffic::{MessageKind, Traffic};
use crate::worker_ctx::Unparkers;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;
use xorflow_tracking::ack::Heartbeat;
use xorflow_tracking::{AckEntry, Flush, FrontierUpdate, Tracker};

/// A message from a worker's local acker to the tracker.
#[derive(Debug)]
pub enum TrackerMsg {
    /// XOR-merged acks.
    Acks(Vec<AckEntry>),
    /// Source heartbeats.
    Heartbeats(Vec<Heartbeat>),
}

/// What the tracker did during a run.
#[derive(Clone, Debug, Default)]
pub struct TrackerStats {
    /// Notifications sent, ack entries applied, and so on, by kind.
    pub traffic: Traffic,
    /// Flush messages applied.
    pub messages_applied: u64,
    /// Frontier computations.
    pub advances: u64,
    /// Frontiers that would have moved back (must be 0).
    pub regressions: u64,
    /// CPU time of the tracker thread, seconds.
    pub cpu_s: f64,
}

/// Thread CPU time of the calling thread, seconds.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs the tracker until every component is complete, `abort()` turns true, or every worker hung
/// up. Returns its statistics, or an error naming a malformed flush.
pub fn run(
    mut tracker: Tracker,
    rx: Receiver<TrackerMsg>,
    workers: Vec<Sender<Vec<FrontierUpdate>>>,
    unparkers: Arc<Unparkers>,
    abort: impl Fn() -> bool,
) -> Result<TrackerStats, String> {
    let mut stats = TrackerStats::default();
    let cpu0 = thread_cpu_s();
    let apply = |t: &mut Tracker, m: TrackerMsg, stats: &mut TrackerStats| {
        stats.messages_applied += 1;
        match m {
            TrackerMsg::Acks(acks) => t.apply(&Flush {
                acks,
                heartbeats: vec![],
            }),
            TrackerMsg::Heartbeats(heartbeats) => t.apply(&Flush {
                acks: vec![],
                heartbeats,
            }),
        }
    };
    while !tracker.is_done() {
        if abort() {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(m) => apply(&mut tracker, m, &mut stats)?,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        }
        while let Ok(m) = rx.try_recv() {
            apply(&mut tracker, m, &mut stats)?;
        }
        stats.advances += 1;
        let ups = tracker.advance();
        if !ups.is_empty() {
            let bytes = ups.len() as u64 * FrontierUpdate::WIRE_BYTES;
            for (w, tx) in workers.iter().enumerate() {
                // A worker that already finished has dropped its receiver; nothing to tell it.
                if tx.send(ups.clone()).is_ok() {
                    stats.traffic.record(MessageKind::Frontier, bytes);
                    unparkers.unpark(w);
                }
            }
        }
    }
    stats.regressions = tracker.regressions();
    stats.cpu_s = thread_cpu_s() - cpu0;
    Ok(stats)
}
