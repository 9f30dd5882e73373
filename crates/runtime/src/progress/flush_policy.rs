//! When acks move on: the one place that decides when a worker hands its thread-local acks to the
//! process acker and when the process acker flushes to the tracker shards (docs/design.md,
//! "Flushing"; the trAcker paper's experiments batch acks the same way, docs/papers.md).
//!
//! Three knobs: `--ack-flush-interval` (flush at least this often while updates are pending),
//! `--ack-flush-count` (flush after this many updates; 0 means unbatched: every ack leaves at once
//! as its own message, in program order) and `--ack-flush-on-idle` (a worker that runs out of work
//! flushes at once what can move a frontier, `progress/idle_gate.rs`, or everything with
//! `always`, so notifications never wait for the interval at low load).

use crate::config::{AckOnIdle, RuntimeConfig};
use xorflow_tracking::{Granularity, LocalAcker};

/// What a worker that ran out of work does with its acks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleFlush {
    /// Hand them over and flush the process acker to the shards now if that can move a
    /// frontier (`progress/idle_gate.rs`).
    Useful,
    /// Hand them over and flush the process acker to the shards now.
    Now,
    /// Hand them over; the process acker flushes when the interval is due, so the worker asks
    /// to be woken this many ns later if anything is still pending.
    AfterInterval(u64),
}

/// The flush policy of a run, shared by every worker and the process acker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushPolicy {
    /// Flush at least this often while updates are pending, ns.
    pub interval_ns: u64,
    /// Flush after this many pending updates; 0: unbatched.
    pub count: usize,
    /// What a worker going idle does.
    pub on_idle: AckOnIdle,
}

impl FlushPolicy {
    /// The policy `config` asks for.
    pub fn of(config: &RuntimeConfig) -> Self {
        FlushPolicy {
            interval_ns: config.ack_flush_interval.as_nanos().min(u64::MAX as u128) as u64,
            count: config.ack_flush_count,
            on_idle: config.ack_flush_on_idle,
        }
    }

    /// True when every ack is sent on its own (`--ack-flush-count 0`): acks are kept as a log in
    /// program order instead of being XOR-merged.
    pub fn unbatched(&self) -> bool {
        self.count == 0
    }

    /// A worker's thread-local acker for this policy: merging, or a log when unbatched.
    pub fn local_acker(&self, g: Granularity) -> LocalAcker {
        if self.unbatched() {
            LocalAcker::unbatched(g)
        } else {
            LocalAcker::new(g)
        }
    }

    /// Whether a worker holding `pending` updates, `since_ns` after its last hand-off, hands them
    /// to the process acker now. Not every loop iteration: the mutex and the second merge are not
    /// worth paying per step, so the worker hands over on the count and interval the process
    /// acker flushes on (every iteration when unbatched).
    #[inline]
    pub fn handoff_due(&self, pending: usize, since_ns: u64) -> bool {
        pending > 0 && (pending >= self.count || since_ns >= self.interval_ns)
    }

    /// Whether the process acker holding `pending` updates, `since_ns` after its last flush,
    /// flushes to the shards now; `force` is a worker going idle under [`IdleFlush::Now`].
    #[inline]
    pub fn flush_due(&self, pending: usize, since_ns: u64, force: bool) -> bool {
        force || pending >= self.count || since_ns >= self.interval_ns
    }

    /// What a worker going idle does (unbatched acks never wait).
    pub fn idle(&self) -> IdleFlush {
        match self.on_idle {
            _ if self.unbatched() => IdleFlush::Now,
            AckOnIdle::Useful => IdleFlush::Useful,
            AckOnIdle::Always => IdleFlush::Now,
            AckOnIdle::Never => IdleFlush::AfterInterval(self.interval_ns),
        }
    }

    /// Whether a hand-off that can move a frontier is flushed at once, whatever its urgency.
    pub fn flush_useful(&self) -> bool {
        self.on_idle == AckOnIdle::Useful && !self.unbatched()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn policy(count: usize, on_idle: AckOnIdle) -> FlushPolicy {
        FlushPolicy::of(&RuntimeConfig {
            ack_flush_count: count,
            ack_flush_interval: Duration::from_micros(1000),
            ack_flush_on_idle: on_idle,
            ..RuntimeConfig::default()
        })
    }

    #[test]
    fn batched_hands_over_on_count_or_interval_only() {
        let p = policy(4096, AckOnIdle::Always);
        assert!(!p.unbatched());
        assert!(
            !p.handoff_due(0, 10_000_000),
            "nothing pending, nothing to hand over"
        );
        assert!(!p.handoff_due(4095, 999_999));
        assert!(p.handoff_due(4096, 0));
        assert!(p.handoff_due(1, 1_000_000));
        assert!(!p.flush_due(1, 10, false));
        assert!(p.flush_due(1, 10, true));
        assert_eq!(p.idle(), IdleFlush::Now);
        assert_eq!(
            policy(4096, AckOnIdle::Never).idle(),
            IdleFlush::AfterInterval(1_000_000)
        );
        assert_eq!(policy(4096, AckOnIdle::Useful).idle(), IdleFlush::Useful);
        assert!(policy(4096, AckOnIdle::Useful).flush_useful());
        assert!(!policy(4096, AckOnIdle::Always).flush_useful());
    }

    #[test]
    fn count_zero_is_unbatched_everywhere() {
        let p = policy(0, AckOnIdle::Never);
        assert!(p.unbatched());
        assert!(p.handoff_due(1, 0), "every ack leaves at once");
        assert!(p.flush_due(0, 0, false));
        assert_eq!(
            p.idle(),
            IdleFlush::Now,
            "unbatched acks never wait for the interval"
        );
        assert!(p.local_acker(Granularity::new(1)).is_empty());
    }
}
