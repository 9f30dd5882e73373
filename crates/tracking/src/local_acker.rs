//! The local acker (docs/design.md, requirement 4): XOR-merges a worker's acks per (component, slot)
//! and keeps the latest heartbeat per source until the runtime flushes it to the tracker.
//!
//! Merging is what makes tracking cheap: a batch sent and received on the same worker between two
//! flushes cancels here and never reaches the tracker. The runtime must deliver flushes to the
//! tracker over a FIFO channel and apply them in order, acks before heartbeats (see [`Flush`]).
//!
//! One acker per worker thread is a valid refinement of "one per process": the tracker's view is the
//! union of per-worker prefixes of events, and a zero slot below every heartbeat still implies that
//! every element of the slot is done (a source's sends precede its heartbeat in its own prefix; a
//! receive tag follows the send tags of the element's children in the receiver's prefix).

use crate::ack::{AckEntry, ComponentId, Flush, Heartbeat, SourceId};
use crate::time::{Granularity, Slot, Time, INF};
use rustc_hash::FxHashMap;

/// One ack or heartbeat in program order (an unbatched acker's log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckEvent {
    /// XOR `xor` into slots `[lo, hi]` of `component`.
    Range {
        /// Component.
        component: ComponentId,
        /// First slot.
        lo: Slot,
        /// Last slot (inclusive).
        hi: Slot,
        /// The tag.
        xor: u64,
    },
    /// A source heartbeat.
    Heartbeat(Heartbeat),
}

/// Per-worker XOR-merging buffer of acks and heartbeats.
#[derive(Debug)]
pub struct LocalAcker {
    granularity: Granularity,
    /// Unbatched mode: keep every ack and heartbeat in program order instead of merging, so each
    /// can be sent as its own message (FIFO order is then the only guarantee, as in FlameStream's
    /// unbatched mode).
    log: Option<Vec<AckEvent>>,
    diffs: FxHashMap<(ComponentId, Slot), u64>,
    heartbeats: Vec<Heartbeat>,
    /// Updates (point XORs and heartbeats) registered since the last flush, merged or not: the
    /// count trigger of `--ack-flush-count`.
    updates: usize,
    /// The lowest slot key XORed since the last flush (`INF`: none); never raised when a
    /// difference cancels, so it may be lower than the lowest key held.
    lowest: Slot,
}

impl LocalAcker {
    /// An empty acker for slots of the given granularity.
    pub fn new(granularity: Granularity) -> Self {
        LocalAcker {
            granularity,
            log: None,
            diffs: FxHashMap::default(),
            heartbeats: Vec::new(),
            updates: 0,
            lowest: INF,
        }
    }

    /// An acker that keeps acks and heartbeats unmerged, in program order ([`LocalAcker::take_log`]).
    pub fn unbatched(granularity: Granularity) -> Self {
        LocalAcker {
            log: Some(Vec::new()),
            ..Self::new(granularity)
        }
    }

    /// Takes the unbatched log (empty for a merging acker).
    pub fn take_log(&mut self) -> Vec<AckEvent> {
        self.updates = 0;
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The granularity slots are computed with.
    pub fn granularity(&self) -> Granularity {
        self.granularity
    }

    /// XOR tag `x` into every slot of component `c` that holds a time of `[lo, hi]` (time units,
    /// inclusive). Sender and receiver of a batch call this with identical arguments.
    #[inline]
    pub fn xor_times(&mut self, c: ComponentId, lo: Time, hi: Time, x: u64) {
        let g = self.granularity;
        self.xor_slots(c, g.slot(lo), g.slot(hi), x);
    }

    /// XOR tag `x` into every slot of `[lo, hi]` (slots, inclusive) of component `c`.
    #[inline]
    pub fn xor_slots(&mut self, c: ComponentId, lo: Slot, hi: Slot, x: u64) {
        debug_assert!(lo <= hi, "empty slot range {lo}..={hi}");
        if let Some(log) = &mut self.log {
            self.updates += 1;
            log.push(AckEvent::Range {
                component: c,
                lo,
                hi,
                xor: x,
            });
            return;
        }
        self.xor_point(c, lo, x);
        if hi < INF - 1 {
            self.xor_point(c, hi + 1, x);
        }
    }

    #[inline]
    fn xor_point(&mut self, c: ComponentId, key: Slot, x: u64) {
        self.updates += 1;
        self.lowest = self.lowest.min(key);
        let e = self.diffs.entry((c, key)).or_insert(0);
        *e ^= x;
        if *e == 0 {
            self.diffs.remove(&(c, key));
        }
    }

    /// Records that source `source` will emit nothing below `time` (time units). Keeps the maximum.
    pub fn heartbeat(&mut self, source: SourceId, time: Time) {
        self.updates += 1;
        if let Some(log) = &mut self.log {
            log.push(AckEvent::Heartbeat(Heartbeat { source, time }));
            return;
        }
        match self.heartbeats.iter_mut().find(|h| h.source == source) {
            Some(h) => h.time = h.time.max(time),
            None => self.heartbeats.push(Heartbeat { source, time }),
        }
    }

    /// XOR-merges another acker's flush into this one (a process-level acker collecting its
    /// workers' flushes, docs/design.md, requirement 4).
    pub fn merge(&mut self, f: &Flush) {
        for e in &f.acks {
            self.xor_point(e.component, e.slot, e.xor);
        }
        for h in &f.heartbeats {
            self.heartbeat(h.source, h.time);
        }
    }

    /// Updates registered since the last flush (before merging).
    pub fn pending_updates(&self) -> usize {
        self.updates
    }

    /// A lower bound on the slot keys held (`INF`: none since the last flush). A difference at key
    /// `k` changes slots `k` and above only, so a flush whose bound lies at or above every slot
    /// the sources have passed cannot complete a slot (`progress/idle_gate.rs` in the runtime).
    pub fn lowest_slot(&self) -> Slot {
        self.lowest
    }

    /// The heartbeats held, one per source.
    pub fn heartbeats(&self) -> &[Heartbeat] {
        &self.heartbeats
    }

    /// True when a flush would carry nothing.
    pub fn is_empty(&self) -> bool {
        self.diffs.is_empty()
            && self.heartbeats.is_empty()
            && self.log.as_ref().is_none_or(Vec::is_empty)
    }

    /// Takes everything merged since the last flush. Heartbeats are converted to slot bounds by the
    /// tracker, not here, so a flush stays in time units.
    pub fn flush(&mut self) -> Flush {
        self.updates = 0;
        self.lowest = INF;
        let acks = self
            .diffs
            .drain()
            .map(|((component, slot), xor)| AckEntry {
                component,
                slot,
                xor,
            })
            .collect();
        Flush {
            acks,
            heartbeats: std::mem::take(&mut self.heartbeats),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_and_receive_on_one_worker_cancel_before_the_tracker() {
        let mut a = LocalAcker::new(Granularity::new(10));
        a.xor_times(1, 5, 37, 0xfeed); // send: slots 0..=3
        assert!(!a.is_empty());
        a.xor_times(1, 5, 37, 0xfeed); // receive of the same batch
        assert!(a.is_empty());
        assert_eq!(a.pending_updates(), 4);
        let f = a.flush();
        assert!(f.is_empty());
        assert_eq!(a.pending_updates(), 0);
    }

    #[test]
    fn merges_by_component_and_slot() {
        let mut a = LocalAcker::new(Granularity::new(1));
        a.xor_slots(0, 3, 3, 0b01);
        a.xor_slots(0, 3, 3, 0b10); // same keys (3 and 4): merged
        a.xor_slots(1, 3, 3, 0b01); // other component: separate
        let mut f = a.flush();
        f.acks.sort_by_key(|e| (e.component, e.slot));
        assert_eq!(
            f.acks,
            vec![
                AckEntry {
                    component: 0,
                    slot: 3,
                    xor: 0b11
                },
                AckEntry {
                    component: 0,
                    slot: 4,
                    xor: 0b11
                },
                AckEntry {
                    component: 1,
                    slot: 3,
                    xor: 0b01
                },
                AckEntry {
                    component: 1,
                    slot: 4,
                    xor: 0b01
                },
            ]
        );
        assert!(a.flush().is_empty());
    }

    #[test]
    fn heartbeats_keep_the_maximum_per_source() {
        let mut a = LocalAcker::new(Granularity::new(1));
        a.heartbeat(0, 10);
        a.heartbeat(1, 3);
        a.heartbeat(0, 7); // older bound: ignored
        a.heartbeat(1, INF); // unregister
        let f = a.flush();
        assert_eq!(
            f.heartbeats,
            vec![
                Heartbeat {
                    source: 0,
                    time: 10
                },
                Heartbeat {
                    source: 1,
                    time: INF
                }
            ]
        );
        assert!(f.acks.is_empty());
    }
}
