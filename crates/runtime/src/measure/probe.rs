//! Notification-latency measurement at the vertices that consume frontiers.

use crate::config::sampling::Sampling;
use crate::measure::slot_log::{SlotLog, SlotRecord};
use xorflow_tracking::Slot;

/// Arrival times per slot at a vertex instance, to measure notification latency: the time from the
/// instance receiving the last element of a slot to the notification that the slot is complete.
///
/// Open slots (between the notified frontier and the newest arrival) live in a power-of-two ring
/// indexed by `slot mod len`, 8 bytes per open slot, i.e. proportional to the elements in flight at
/// granularity 1. Entries are zeroed as notifications consume them, so recording is a compare and a
/// store. A slot more than 2^24 ahead of the frontier goes to an ordered map instead, so one
/// far-future element cannot make the ring huge.
#[derive(Debug, Default)]
pub struct ArrivalProbe {
    /// First slot not yet notified complete.
    base: Slot,
    /// One past the highest slot recorded in the ring.
    top: Slot,
    ring: Vec<u64>,
    far: std::collections::BTreeMap<Slot, u64>,
    /// Elements that arrived for a slot the vertex had already been told was complete. Must be 0
    /// with trAcker; counted rather than ignored so a violation shows in reports.
    pub below_frontier: u64,
    /// Per-slot records for [`SlotLog::settle`], kept when set (sinks with the latency probe on).
    pub log: Option<SlotLog>,
    /// Which slots are measured (all by default).
    pub sampling: Sampling,
}

const SPAN: u64 = 1 << 24;

/// Records a completed slot in `log`, if one is kept.
#[inline]
fn log_slot(log: &mut Option<SlotLog>, slot: Slot, last_arrival_ns: u64, notified_ns: u64) {
    if let Some(log) = log {
        log.push(SlotRecord {
            slot,
            last_arrival_ns,
            notified_ns,
            process: 0,
        });
    }
}

impl ArrivalProbe {
    /// Records that an element of `slot` arrived at `now` (ns from [`crate::measure::clock::now_ns`]).
    #[inline(always)]
    pub fn record(&mut self, slot: Slot, now: u64) {
        // Below `base` the subtraction wraps to a huge offset and takes the slow path.
        let off = slot.wrapping_sub(self.base);
        if off < self.ring.len() as u64 {
            let mask = self.ring.len() - 1;
            self.ring[slot as usize & mask] = now.max(1);
            self.top = self.top.max(slot + 1);
        } else {
            self.record_slow(slot, now);
        }
    }

    #[cold]
    fn record_slow(&mut self, slot: Slot, now: u64) {
        if slot < self.base {
            self.below_frontier += 1;
            return;
        }
        let off = slot - self.base;
        if off >= SPAN {
            self.far.insert(slot, now.max(1));
            return;
        }
        let len = (off as usize + 1).next_power_of_two().max(1024);
        let mut ring = vec![0u64; len];
        if !self.ring.is_empty() {
            let old = self.ring.len() - 1;
            for s in self.base..self.top {
                ring[s as usize & (len - 1)] = self.ring[s as usize & old];
            }
        }
        self.ring = ring;
        self.record(slot, now);
    }

    /// Records the arrival at `now` of elements with the given times (one batch), `g` time units
    /// per slot. The per-element path is a subtraction, a compare and a store.
    #[inline]
    pub fn record_batch(
        &mut self,
        times: impl Iterator<Item = u64>,
        g: xorflow_tracking::Granularity,
        now: u64,
    ) {
        let now = now.max(1);
        let mut top = self.top;
        let sampling = self.sampling;
        if g.get() == 1 {
            for t in times.filter(|&t| sampling.keeps(t)) {
                let off = t.wrapping_sub(self.base);
                if off < self.ring.len() as u64 {
                    let mask = self.ring.len() - 1;
                    self.ring[t as usize & mask] = now;
                    top = top.max(t + 1);
                } else {
                    self.top = top;
                    self.record_slow(t, now);
                    top = self.top;
                }
            }
            self.top = top;
        } else {
            // Divide only when a time leaves the current slot.
            let (mut lo, mut hi) = (1u64, 0u64);
            for t in times {
                if t < lo || t >= hi {
                    let s = g.slot(t);
                    lo = g.start(s);
                    hi = g.start(s.saturating_add(1));
                    if sampling.keeps(s) {
                        self.record(s, now);
                    }
                }
            }
        }
    }

    /// The slots below `frontier` are complete, as learnt at `seen_ns`: feeds one latency sample
    /// (ns) per slot that received elements to `sample(ns, count)`, runs of equal samples (slots
    /// that arrived in one batch) coalesced into one call.
    pub fn complete(&mut self, frontier: Slot, seen_ns: u64, mut sample: impl FnMut(u64, u64)) {
        if frontier <= self.base {
            return;
        }
        let (mut run_v, mut run_n) = (0u64, 0u64);
        if !self.ring.is_empty() {
            let mask = self.ring.len() - 1;
            let (ring, log) = (&mut self.ring, &mut self.log);
            self.sampling
                .for_each(self.base, frontier.min(self.top), |s| {
                    let v = std::mem::take(&mut ring[s as usize & mask]);
                    if v != 0 {
                        log_slot(log, s, v, seen_ns);
                        if v != run_v && run_n > 0 {
                            sample(seen_ns.saturating_sub(run_v), run_n);
                            run_n = 0;
                        }
                        run_v = v;
                        run_n += 1;
                    }
                });
        }
        if run_n > 0 {
            sample(seen_ns.saturating_sub(run_v), run_n);
        }
        self.base = frontier;
        self.top = self.top.max(frontier);
        while let Some(e) = self.far.first_entry() {
            if *e.key() >= frontier {
                break;
            }
            let (slot, v) = e.remove_entry();
            log_slot(&mut self.log, slot, v, seen_ns);
            sample(seen_ns.saturating_sub(v), 1);
        }
        // Far entries that now fall inside the span move into the ring.
        while let Some(e) = self.far.first_entry() {
            if *e.key() - self.base >= SPAN {
                break;
            }
            let (s, v) = e.remove_entry();
            self.record(s, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_samples_once_per_slot_with_the_last_arrival() {
        let mut p = ArrivalProbe::default();
        p.record(0, 100);
        p.record(0, 150); // later arrival in the same slot wins
        p.record(2, 160);
        p.record(SPAN + 5, 170); // far slot
        let mut s = vec![];
        p.complete(2, 200, |x, n| s.push((x, n)));
        assert_eq!(s, vec![(50, 1)]);
        s.clear();
        p.complete(SPAN + 6, 300, |x, n| s.push((x, n)));
        assert_eq!(s, vec![(140, 1), (130, 1)]);
        // Slots that arrived together are one run.
        for slot in SPAN + 6..SPAN + 16 {
            p.record(slot, 1000);
        }
        s.clear();
        p.complete(SPAN + 16, 1500, |x, n| s.push((x, n)));
        assert_eq!(s, vec![(500, 10)]);
        p.record(1, 400);
        assert_eq!(p.below_frontier, 1);
    }

    #[test]
    fn sampling_keeps_x_of_every_y_slots_and_the_probe_measures_only_those() {
        let s: Sampling = "2/8".parse().unwrap();
        let kept: Vec<u64> = (0..20).filter(|&t| s.keeps(t)).collect();
        assert_eq!(kept, [0, 1, 8, 9, 16, 17]);
        let mut seen = vec![];
        s.for_each(1, 17, |t| seen.push(t));
        assert_eq!(seen, [1, 8, 9, 16]);
        for bad in ["3/6", "0/4", "5/4", "x", "1/"] {
            assert!(bad.parse::<Sampling>().is_err(), "{bad}");
        }
        assert_eq!(Sampling::auto(1).ratio(), (1, 256));
        assert_eq!(Sampling::auto(3).ratio(), (1, 128));
        assert_eq!(Sampling::auto(256).ratio(), (1, 1));
        assert_eq!(Sampling::auto(1000).ratio(), (1, 1));
        let mut p = ArrivalProbe {
            sampling: "1/4".parse().unwrap(),
            ..ArrivalProbe::default()
        };
        let g = xorflow_tracking::Granularity::new(1);
        p.record_batch(0..10, g, 100);
        let mut samples = vec![];
        p.complete(10, 130, |x, n| samples.push((x, n)));
        // Slots 0, 4 and 8 of ten, one batch: one run of three samples.
        assert_eq!(samples, [(30, 3)]);
    }
}
