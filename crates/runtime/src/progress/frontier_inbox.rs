//! A worker's frontier inbox: the latest frontier per (shard, component) that the worker has not
//! read yet, not a queue of every update.
//!
//! Why: a queue held one message per advance of a shard, so a frontier that moved several times
//! while its worker was busy (or parked) cost a message, and a wake-up, each time; issue 51 counted
//! 845,688 frontier messages for 336,776 rows in a 2-process flights run. Here an update of a
//! (shard, component) the worker has not read replaces the unread one, and only an offer into an
//! empty inbox is a message: it is the one that must wake the worker. A shard's updates still
//! reach the worker in order: the latest of each (shard, component) is what
//! `xorflow_tracking::FrontierCombiner` would have ended with after the whole queue.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use xorflow_tracking::FrontierUpdate;

/// The unread frontiers of one worker (see the module doc). Shared by the tracker shards
/// notifying the worker (`tracker_agent.rs`), the transport delivering other processes' frontier
/// frames (`inlets.rs`), and the worker reading it (`frontiers.rs`).
#[derive(Debug, Default)]
pub struct FrontierInbox {
    /// Unread updates, at most one per (shard, component), in the order first offered.
    unread: Mutex<Vec<(u32, FrontierUpdate)>>,
    /// `unread` is not empty: read first, so an empty inbox costs its worker one atomic load
    /// per iteration and no lock.
    pending: AtomicBool,
}

impl FrontierInbox {
    /// An empty inbox.
    pub fn new() -> Self {
        FrontierInbox::default()
    }

    /// Offers shard `shard`'s updates `ups`; each replaces an unread update of the same shard and
    /// component. Returns true when the inbox held nothing unread: this is a new message, and
    /// the caller wakes the worker; false when the updates joined unread ones (the worker is
    /// already due to read them).
    pub fn offer(&self, shard: u32, ups: &[FrontierUpdate]) -> bool {
        let mut unread = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        let was_empty = unread.is_empty();
        for u in ups {
            let same =
                |(s, x): &&mut (u32, FrontierUpdate)| *s == shard && x.component == u.component;
            match unread.iter_mut().find(same) {
                Some(e) => e.1 = *u,
                None => unread.push((shard, *u)),
            }
        }
        if !unread.is_empty() {
            self.pending.store(true, Ordering::Release);
        }
        was_empty && !unread.is_empty()
    }

    /// Moves every unread update into `out` (appended, in the order first offered); false when
    /// there was none.
    pub fn take(&self, out: &mut Vec<(u32, FrontierUpdate)>) -> bool {
        if !self.pending.load(Ordering::Acquire) {
            return false;
        }
        let mut unread = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.store(false, Ordering::Relaxed);
        out.append(&mut unread);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(component: u32, frontier: u64) -> FrontierUpdate {
        FrontierUpdate {
            component,
            frontier,
        }
    }

    #[test]
    fn unread_updates_of_a_shard_and_component_are_replaced_and_one_message_counts() {
        let inbox = FrontierInbox::new();
        let mut out = Vec::new();
        assert!(!inbox.take(&mut out), "empty");
        assert!(
            inbox.offer(0, &[up(1, 5), up(2, 3)]),
            "the first offer is a message"
        );
        assert!(!inbox.offer(0, &[up(1, 7)]), "joins the unread one");
        assert!(!inbox.offer(1, &[up(1, 4)]), "another shard's, kept apart");
        assert!(!inbox.offer(0, &[]));
        assert!(inbox.take(&mut out));
        assert_eq!(out, vec![(0, up(1, 7)), (0, up(2, 3)), (1, up(1, 4))]);
        out.clear();
        assert!(!inbox.take(&mut out) && out.is_empty(), "read once");
        assert!(!inbox.offer(2, &[]), "nothing offered is no message");
        assert!(inbox.offer(0, &[up(1, 9)]), "after a read, a message again");
    }

    #[test]
    fn a_reader_racing_writers_ends_with_each_writers_last_update() {
        let inbox = std::sync::Arc::new(FrontierInbox::new());
        let writers: Vec<_> = (0..2u32)
            .map(|shard| {
                let inbox = inbox.clone();
                std::thread::spawn(move || {
                    for f in 1..=20_000u64 {
                        inbox.offer(shard, &[up(0, f)]);
                    }
                })
            })
            .collect();
        let mut last = [0u64; 2];
        let mut out = Vec::new();
        let mut read = |last: &mut [u64; 2]| {
            out.clear();
            inbox.take(&mut out);
            for (s, u) in &out {
                assert!(u.frontier > last[*s as usize], "in order per shard");
                last[*s as usize] = u.frontier;
            }
        };
        while writers.iter().any(|w| !w.is_finished()) {
            read(&mut last);
        }
        for w in writers {
            w.join().unwrap();
        }
        read(&mut last);
        assert_eq!(last, [20_000, 20_000]);
    }
}
