//! Which idle flushes can move a frontier (`--ack-flush-on-idle`, `progress/flush_policy.rs`).
//!
//! Flushing on every idle moment gives the lowest notification latency, but at 100,000 events/s
//! with two workers it sent 250,000 flushes a second to the tracker, each a frontier computation,
//! while a frontier can move only when a source passes a slot boundary (`xorflow-lab bench cpu`, docs/cpu.md).
//! A slot completes only once the minimum heartbeat over all sources has passed it
//! (`xorflow_tracking::Tracker`), so an idle flush can move a frontier only if it carries
//! - a heartbeat that passes a slot boundary its source had not passed in this process's
//!   flushes, or an epoch heartbeat (checkpoints), or
//! - a difference at a slot below every data heartbeat this process has flushed: the minimum
//!   over the sources seen here is an upper bound on the minimum over all sources, and a
//!   difference at slot `k` changes slots `k` and above only.
//!
//! Any other idle flush is merged into the process acker and waits. It leaves with the next useful
//! flush, since whatever later makes it useful (a heartbeat passing its slot) is a flush of this
//! process, or with the interval's (`--ack-flush-interval`), whichever comes first. The tracker
//! sees the same differences in the same order, merged; only fewer frontier computations.
//! A process that has flushed no heartbeat (it runs no source) has no bound and flushes on every
//! idle moment, as before.

use xorflow_tracking::{Flush, Granularity, LocalAcker, Slot, INF};

/// The heartbeats this process has flushed, as slot bounds, and the test above.
#[derive(Debug)]
pub struct IdleGate {
    granularity: Granularity,
    /// Heartbeat ids below this are data sources; the others are checkpoint epochs'.
    sources: usize,
    /// Per data source: the slot bound of its last heartbeat flushed from here, if any.
    bound: Vec<Option<Slot>>,
    /// The minimum of `bound` over the sources seen (`INF`: none seen).
    min_bound: Slot,
}

impl IdleGate {
    /// A gate for slots of `granularity` and a job of `sources` data sources.
    pub fn new(granularity: Granularity, sources: usize) -> Self {
        IdleGate {
            granularity,
            sources,
            bound: vec![None; sources],
            min_bound: INF,
        }
    }

    /// Whether flushing `pending` now can complete a slot (module doc).
    pub fn useful(&self, pending: &LocalAcker) -> bool {
        pending.lowest_slot() < self.min_bound
            || pending.heartbeats().iter().any(|h| {
                let s = h.source as usize;
                s >= self.sources
                    || self.bound[s].is_none_or(|b| self.granularity.slots_below(h.time) > b)
            })
    }

    /// The minimum slot bound over the data sources this process has flushed heartbeats of
    /// (`INF`: none): a difference below it may complete a slot.
    pub fn bound(&self) -> Slot {
        self.min_bound
    }

    /// Records the heartbeats of a flush that was sent.
    pub fn flushed(&mut self, f: &Flush) {
        let mut moved = false;
        for h in &f.heartbeats {
            if let Some(b) = self.bound.get_mut(h.source as usize) {
                let s = self.granularity.slots_below(h.time);
                if b.is_none_or(|b| s > b) {
                    *b = Some(s);
                    moved = true;
                }
            }
        }
        if moved {
            self.min_bound = self.bound.iter().flatten().copied().min().unwrap_or(INF);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_boundary_crossings_and_acks_below_the_bound_are_useful() {
        let g = Granularity::new(10);
        let mut gate = IdleGate::new(g, 2);
        let mut a = LocalAcker::new(g);
        a.xor_times(0, 5, 5, 7);
        assert!(gate.useful(&a), "no heartbeat seen: no bound, flush");
        a.heartbeat(0, 12);
        assert!(gate.useful(&a));
        gate.flushed(&a.flush());
        // Source 0 is at slot bound 1: slots 0 and below can complete.
        a.xor_times(0, 15, 15, 9);
        assert!(!gate.useful(&a), "slot 1 is still open at source 0");
        a.heartbeat(0, 19);
        assert!(!gate.useful(&a), "same slot bound: nothing new");
        a.heartbeat(0, 20);
        assert!(gate.useful(&a), "source 0 passed slot 1");
        gate.flushed(&a.flush());
        a.xor_times(0, 15, 15, 9);
        assert!(gate.useful(&a), "an ack in a slot the sources passed");
        let _ = a.flush();
        a.heartbeat(1, 5);
        assert!(gate.useful(&a), "source 1's first heartbeat");
        gate.flushed(&a.flush());
        a.xor_times(0, 15, 15, 9);
        assert!(!gate.useful(&a), "source 1 holds the minimum at slot 0");
        let _ = a.flush();
        a.heartbeat(2, 3);
        assert!(gate.useful(&a), "an epoch heartbeat always goes");
    }

    #[test]
    fn a_heartbeat_to_inf_is_useful() {
        let g = Granularity::new(1);
        let mut gate = IdleGate::new(g, 1);
        let mut a = LocalAcker::new(g);
        a.heartbeat(0, 100);
        gate.flushed(&a.flush());
        a.heartbeat(0, INF);
        assert!(gate.useful(&a));
    }
}
