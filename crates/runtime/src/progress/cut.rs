//! The checkpoint cut at a stateful vertex instance (docs/state.md, "The cut").
//!
//! trAcker tracks checkpoint epochs beside event time (`crates/tracking/src/epochs.rs`). A
//! stateful instance processes only batches of its current epoch `cur` and earlier: a batch of a
//! later epoch waits here with its receive tag withheld (the trAcker paper's snapshot operator,
//! docs/papers.md, with epochs instead of event-time boundaries). So the instance's epoch frontier
//! can pass `cur` only once every batch of `cur` is processed here and upstream, and when it rises
//! to `f` the state holds exactly the epochs below `f`: the instance snapshots it as checkpoint
//! `f - 1` (covering the epochs `cur..f` it skipped too, in which it received nothing), moves to
//! `f` and releases what waited.
//!
//! With `--tracking markers` the same cut is Flink's aligned checkpoint, the baseline: the epoch
//! of every batch is its barrier (an operator sends a marker-only batch of its new epoch on every
//! channel when it moves on, `operators/driver.rs`), an instance's epoch frontier is the lowest
//! epoch its input channels have delivered (`channel/input.rs`, `epochs`), and *every* instance
//! with input holds the batches of later epochs, markers included, until its frontier passes:
//! a channel that delivered the next barrier is blocked (here: held in memory) while the others
//! catch up.

use crate::batch::Batch;
use std::collections::VecDeque;
use xorflow_tracking::INF;

/// Counter: snapshots an instance took at epoch boundaries.
pub const CHECKPOINT_SNAPSHOTS: &str = "checkpoint_snapshots";
/// Counter: elements that waited for their epoch.
pub const CHECKPOINT_BUFFERED_ELEMENTS: &str = "checkpoint_buffered_elements";
/// Counter: total time elements waited for their epoch, ns (summed over elements).
pub const CHECKPOINT_BUFFERED_NS: &str = "checkpoint_buffered_ns";
/// Counter: instances restored by rolling their local store back (local recovery).
pub const RESTORED_LOCALLY: &str = "checkpoint_restored_locally";
/// Counter: instances restored from the checkpoint store (their chain of snapshot files).
pub const RESTORED_FROM_STORE: &str = "checkpoint_restored_from_store";
/// Counter: time spent taking snapshots (state deltas, not file writes), ns.
pub const CHECKPOINT_SNAPSHOT_NS: &str = "checkpoint_snapshot_ns";

/// The epochs a snapshot covers: the state is the same after each of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Covered {
    /// First epoch covered.
    pub from: u64,
    /// Last epoch covered (the checkpoint number the snapshot is filed under).
    pub to: u64,
}

/// The cut of one stateful instance.
pub struct EpochCut<T> {
    /// The epoch being processed: the instance's epoch frontier as last seen.
    cur: u64,
    /// Epochs past `cur` processed at once: 0 (buffered cut), or 1 (versioned cut: the
    /// operator keeps the older version of what the next epoch changes).
    ahead: u64,
    /// Versioned cut: a batch of epoch `cur + 1` has been processed since the last rise.
    versioning: bool,
    /// Batches of later epochs, in arrival order, with their arrival times (ns) and the input
    /// channels they came on.
    waiting: VecDeque<(Batch<T>, u64, usize)>,
}

impl<T> Default for EpochCut<T> {
    fn default() -> Self {
        EpochCut {
            cur: 0,
            ahead: 0,
            versioning: false,
            waiting: VecDeque::new(),
        }
    }
}

impl<T> EpochCut<T> {
    /// The cut of an instance that starts in epoch `epoch` (a resumed job: the first epoch after
    /// its checkpoint).
    pub fn starting_at(epoch: u64) -> Self {
        EpochCut {
            cur: epoch,
            ..Self::default()
        }
    }

    /// The versioned cut: batches of the epoch after the current one are admitted too.
    pub fn versioned(mut self) -> Self {
        self.ahead = 1;
        self
    }

    /// True if a batch of `epoch` may be processed now.
    #[inline]
    pub fn admits(&self, epoch: u64) -> bool {
        epoch <= self.cur.saturating_add(self.ahead)
    }

    /// Versioned cut: true for the first admitted batch of the next epoch since the last rise
    /// (the operator starts keeping the older version before it processes it).
    #[inline]
    pub fn starts_version(&mut self, epoch: u64) -> bool {
        if epoch > self.cur && !self.versioning {
            self.versioning = true;
            return true;
        }
        false
    }

    /// Keeps a batch of a later epoch, from input channel `channel`, until its epoch comes.
    pub fn wait(&mut self, b: Batch<T>, now_ns: u64, channel: usize) {
        self.waiting.push_back((b, now_ns, channel));
    }

    /// Versioned cut: a batch of the next epoch has been processed since the last rise (the
    /// operator keeps an older version).
    pub fn versioning(&self) -> bool {
        self.versioning
    }

    /// The lowest epoch of a waiting batch.
    pub fn lowest_waiting(&self) -> Option<u64> {
        self.waiting.iter().map(|(b, _, _)| b.epoch).min()
    }

    /// Batches waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The epoch frontier rose to `f`: returns the epochs the snapshot to take now covers
    /// (`None` if `f` is no rise, or the end of the stream: nothing to snapshot), and moves on.
    pub fn rise(&mut self, f: u64) -> Option<Covered> {
        if f <= self.cur {
            return None;
        }
        let covered = Covered {
            from: self.cur,
            to: f - 1,
        };
        self.cur = f;
        self.versioning = false;
        (f != INF).then_some(covered)
    }

    /// The next waiting batch of an epoch now admitted, with how long it waited (ns) and its
    /// input channel.
    pub fn release(&mut self, now_ns: u64) -> Option<(Batch<T>, u64, usize)> {
        let i = self
            .waiting
            .iter()
            .position(|(b, _, _)| b.epoch <= self.cur.saturating_add(self.ahead))?;
        let (b, at, ch) = self.waiting.remove(i).expect("position is in range");
        Some((b, now_ns.saturating_sub(at), ch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(epoch: u64) -> Batch<u64> {
        Batch {
            tag: epoch,
            lo: 0,
            hi: 0,
            epoch,
            exact: true,
            markers: vec![],
            data: vec![],
        }
    }

    #[test]
    fn later_epochs_wait_and_leave_in_order_once_admitted() {
        let mut c = EpochCut::default();
        assert!(c.admits(0) && !c.admits(1));
        c.wait(batch(2), 10, 0);
        c.wait(batch(1), 20, 1);
        c.wait(batch(1), 30, 0);
        assert_eq!(c.lowest_waiting(), Some(1));
        assert_eq!(c.release(40).map(|(b, _, _)| b.tag), None);
        assert_eq!(c.rise(0), None);
        assert_eq!(c.rise(1), Some(Covered { from: 0, to: 0 }));
        let (b, waited, ch) = c.release(50).unwrap();
        assert_eq!((b.tag, waited, ch), (1, 30, 1));
        assert_eq!(c.release(50).unwrap().0.tag, 1);
        assert!(c.release(50).is_none(), "epoch 2 still waits");
        assert_eq!(c.rise(4), Some(Covered { from: 1, to: 3 }));
        assert_eq!(c.release(60).unwrap().0.tag, 2);
        assert_eq!(c.rise(INF), None, "the end needs no snapshot");
        assert!(c.admits(u64::MAX - 1));
    }

    #[test]
    fn the_versioned_cut_admits_one_epoch_ahead_and_says_when_a_version_starts() {
        let mut c = EpochCut::starting_at(3).versioned();
        assert!(c.admits(4) && !c.admits(5));
        assert!(!c.starts_version(3), "the current epoch needs no version");
        assert!(c.starts_version(4));
        assert!(!c.starts_version(4), "once per epoch");
        c.wait(batch(5), 0, 0);
        assert!(c.release(1).is_none(), "two epochs ahead waits");
        assert_eq!(c.rise(4), Some(Covered { from: 3, to: 3 }));
        assert_eq!(c.release(2).unwrap().0.tag, 5, "one ahead of the new epoch");
        assert!(c.starts_version(5));
        c.wait(batch(9), 3, 0);
        assert_eq!(c.rise(INF), None);
        assert_eq!(c.release(4).unwrap().0.tag, 9, "the end admits everything");
    }
}
