//! A worker's side of the ack path: handing its thread-local acker to the process acker when the
//! [`FlushPolicy`] (`progress/flush_policy.rs`) says so.

use super::flush_policy::{FlushPolicy, IdleFlush};
use super::mode::TrackerState;
use super::process_acker::{ProcessAcker, Urgency};
use std::sync::Arc;
use xorflow_tracking::Flush;

/// The hand-off of one worker to its process's acker.
pub struct Handoff {
    acker: Arc<ProcessAcker>,
    policy: FlushPolicy,
    /// When this worker last handed its acks over, ns.
    last_ns: u64,
}

impl Handoff {
    /// A hand-off to `acker`, starting the interval at `now_ns`.
    pub fn new(acker: Arc<ProcessAcker>, now_ns: u64) -> Self {
        Handoff {
            policy: *acker.policy(),
            acker,
            last_ns: now_ns,
        }
    }

    /// After a loop iteration: hands the acks over when due, else lets the process acker flush
    /// what it holds once its interval has passed.
    ///
    /// # Errors
    /// A shard hosted here rejected a piece (names the offender).
    #[inline]
    pub fn after_iteration(&mut self, tr: &mut TrackerState, now_ns: u64) -> Result<(), String> {
        let since = now_ns.saturating_sub(self.last_ns);
        if self.policy.handoff_due(tr.acker.pending_updates(), since) {
            self.last_ns = now_ns;
            self.hand_over(tr, now_ns, Urgency::Due)
        } else {
            self.acker.tick(now_ns)
        }
    }

    /// The worker ran out of work: hands everything over, flushing to the shards now or (batching
    /// without flush-on-idle) returning when the worker should wake for the interval's flush.
    ///
    /// # Errors
    /// As [`Handoff::after_iteration`].
    pub fn on_idle(&mut self, tr: &mut TrackerState, now_ns: u64) -> Result<Option<u64>, String> {
        match self.policy.idle() {
            // What stays queued (hand-offs that cannot move a frontier) is flushed by the next
            // tick after its interval: the worker wakes for it.
            IdleFlush::Useful => self
                .hand_over(tr, now_ns, Urgency::Idle)
                .map(|()| self.acker.next_tick_ns()),
            IdleFlush::Now => self.hand_over(tr, now_ns, Urgency::Now).map(|()| None),
            IdleFlush::AfterInterval(ns) => {
                self.hand_over(tr, now_ns, Urgency::Due)?;
                Ok(self.acker.has_pending().then_some(now_ns + ns))
            }
        }
    }

    /// Hands everything over and flushes it to the shards (end of the worker's run).
    ///
    /// # Errors
    /// As [`Handoff::after_iteration`].
    pub fn finish(&mut self, tr: &mut TrackerState, now_ns: u64) -> Result<(), String> {
        self.hand_over(tr, now_ns, Urgency::Now)
    }

    /// Gives the process acker this worker's acks, flushing it to the shards as `urgency` asks.
    fn hand_over(
        &self,
        tr: &mut TrackerState,
        now_ns: u64,
        urgency: Urgency,
    ) -> Result<(), String> {
        if self.policy.unbatched() {
            let log = tr.acker.take_log();
            if !log.is_empty() {
                self.acker.submit_log(&log)?;
            }
            return Ok(());
        }
        let f = if tr.acker.is_empty() {
            Flush::default()
        } else {
            tr.acker.flush()
        };
        self.acker.submit(f, now_ns, urgency)
    }
}
