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
    /// Slots from `base` the ring covers (0 while it is empty).
    span: u64,
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
/// Elements read together by [`ArrivalProbe::record_batch`] before it looks at any one of them.
const CHUNK: usize = 16;

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
    /// `slot` must be one [`ArrivalProbe::sampling`] keeps: the ring holds the kept slots only,
    /// at their [`Sampling::index`], so at 1 slot in 256 it is 256 times smaller than a ring of
    /// every slot and seldom grows.
    #[inline(always)]
    pub fn record(&mut self, slot: Slot, now: u64) {
        debug_assert!(self.sampling.keeps(slot));
        // Below `base` the subtraction wraps to a huge offset and takes the slow path.
        let off = slot.wrapping_sub(self.base);
        if off < self.span {
            let mask = self.ring.len() - 1;
            self.ring[self.sampling.index(slot) as usize & mask] = now.max(1);
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
        // Enough entries that `off + 1` slots from `base` fit (`Sampling::span_of`).
        let (x, y) = self.sampling.ratio();
        let len = (x * ((off + 1).div_ceil(y) + 1))
            .next_power_of_two()
            .max(1024) as usize;
        let mut ring = vec![0u64; len];
        if !self.ring.is_empty() {
            let (old, sampling) = (self.ring.len() - 1, self.sampling);
            sampling.for_each(self.base, self.top, |s| {
                let i = sampling.index(s) as usize;
                ring[i & (len - 1)] = self.ring[i & old];
            });
        }
        self.ring = ring;
        self.span = self.sampling.span_of(len as u64);
        self.record(slot, now);
    }

    /// Records the arrival at `now` of a batch's elements, `g` time units per slot, leaving out
    /// those with a time below `warm` (the warm-up; 0: none). At g = 1 (a slot per time) the
    /// batch is read in chunks of [`CHUNK`] elements, and a chunk is read element by element only
    /// when one of its times is a measured slot: with the default sampling (1 slot in 256) that
    /// is a mask, a subtraction and an OR per element, which the compiler vectorizes
    /// ([`Sampling::kept_bit`]), instead of a branch per element (issue 51: the probe within 2 % of the chain's CPU).
    #[inline]
    pub fn record_batch<T>(
        &mut self,
        data: &[xorflow_core::Element<T>],
        warm: u64,
        g: xorflow_tracking::Granularity,
        now: u64,
    ) {
        let now = now.max(1);
        let sampling = self.sampling;
        if g.get() == 1 {
            let chunks = data.chunks_exact(CHUNK);
            let rest = chunks.remainder();
            for chunk in chunks {
                // A fixed length: the fold compiles to straight vector code, no loop checks.
                let chunk: &[_; CHUNK] = chunk.try_into().expect("chunks_exact");
                let hit = chunk
                    .iter()
                    .fold(0u64, |hit, e| hit | sampling.kept_bit(e.time));
                if hit >> 63 != 0 {
                    self.record_kept(chunk, warm, now);
                }
            }
            self.record_kept(rest, warm, now);
        } else {
            // Divide only when a time leaves the current slot.
            let (mut lo, mut hi) = (1u64, 0u64);
            for t in data.iter().map(|e| e.time).filter(|&t| t >= warm) {
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

    /// Records the elements of `data` in measured slots (g = 1) and not below `warm`.
    #[inline]
    fn record_kept<T>(&mut self, data: &[xorflow_core::Element<T>], warm: u64, now: u64) {
        for e in data {
            let t = e.time;
            if self.sampling.keeps(t) && t >= warm {
                self.record(t, now);
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
            let (ring, log, sampling) = (&mut self.ring, &mut self.log, self.sampling);
            sampling.for_each(self.base, frontier.min(self.top), |s| {
                let v = std::mem::take(&mut ring[sampling.index(s) as usize & mask]);
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
    use proptest::prelude::*;

    proptest! {
        /// Against a map of every kept slot's last arrival: whatever the sampling, the order of
        /// arrivals and how far ahead of the frontier they land (the ring grows, far slots wait
        /// in the map), each completed kept slot is sampled once, with its last arrival.
        #[test]
        fn the_probe_samples_what_a_map_of_last_arrivals_says(
            y_log in 0u32..9, x_frac in 0.0f64..1.0,
            ops in proptest::collection::vec((0u64..5_000, 0u64..3, any::<bool>()), 1..300),
        ) {
            let y = 1u64 << y_log;
            let x = ((x_frac * y as f64) as u64).clamp(1, y);
            let sampling = Sampling::new(x, y).unwrap();
            let mut p = ArrivalProbe { sampling, ..ArrivalProbe::default() };
            let mut model = std::collections::BTreeMap::new();
            let (mut frontier, mut now) = (0u64, 1u64);
            for (ahead, far, complete) in ops {
                now += 1;
                if complete {
                    let f = frontier + ahead / 8;
                    let mut got = vec![];
                    p.complete(f, now, |ns, n| got.extend(std::iter::repeat_n(ns, n as usize)));
                    let mut want: Vec<u64> = model.range(..f).map(|(_, &v)| now - v).collect();
                    model.retain(|&s, _| s >= f);
                    got.sort_unstable();
                    want.sort_unstable();
                    prop_assert_eq!(got, want);
                    frontier = frontier.max(f);
                } else {
                    let slot = frontier + ahead + far * SPAN / 2 * (far & 1);
                    if sampling.keeps(slot) {
                        p.record(slot, now);
                        model.insert(slot, now);
                    }
                }
            }
            prop_assert_eq!(p.below_frontier, 0);
        }
    }

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
        let batch: Vec<_> = (0..10).map(|t| xorflow_core::Element::new(t, ())).collect();
        p.record_batch(&batch, 0, g, 100);
        let mut samples = vec![];
        p.complete(10, 130, |x, n| samples.push((x, n)));
        // Slots 0, 4 and 8 of ten, one batch: one run of three samples.
        assert_eq!(samples, [(30, 3)]);
    }
}
