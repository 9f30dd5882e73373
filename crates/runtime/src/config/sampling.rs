//! `--latency-sample`: which slots the notification-latency probe measures
//! (`measure/probe.rs`). An option type, so it lives in the base layer (docs/design.md, "Layers").

use xorflow_tracking::Slot;

/// Which slots the probe measures: XoY sampling over slot numbers (the Cloudprofiler paper, section
/// 5.1: keep an id when `id mod y < x`), so every instance of every process samples the same slots
/// and the latency from the last arrival anywhere ([`SlotLog::settle`]) still lines up. `y` is a
/// power of two (the test is a mask and a compare per element).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    x: u64,
    mask: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::ALL
    }
}

impl Sampling {
    /// Every slot.
    pub const ALL: Sampling = Sampling { x: 1, mask: 0 };

    /// Slots per second the automatic choice aims to keep at granularity 1, as a divisor: one
    /// slot in 256 (at 20 M elements/s still 78,000 samples/s). One in 64 cost 4.7 % of the
    /// chain's throughput at g = 1, one in 256 0.9 % (bench/results/chain-probe-sampling-256.txt):
    /// each kept slot costs a cache miss in the ring and one in the notification's walk.
    const AUTO_Y: u64 = 256;

    /// `x` of every `y` slots.
    ///
    /// # Errors
    /// `y` not a power of two, or `x` not in `1..=y`.
    pub fn new(x: u64, y: u64) -> Result<Self, String> {
        if !y.is_power_of_two() || x == 0 || x > y {
            return Err(format!(
                "latency sampling {x}/{y}: Y must be a power of two and X between 1 and Y"
            ));
        }
        Ok(Sampling { x, mask: y - 1 })
    }

    /// The default for granularity `g` (time units per slot): 1 slot in `256 / g` (rounded up to
    /// a power of two), every slot from g = 256 up. Measuring then costs the same per element at
    /// any granularity, and coarse slots, which are few, are all measured.
    pub fn auto(g: u64) -> Self {
        let y = (Self::AUTO_Y / g.max(1)).max(1).next_power_of_two();
        Sampling { x: 1, mask: y - 1 }
    }

    /// Whether `slot` is measured.
    #[inline(always)]
    pub fn keeps(&self, slot: Slot) -> bool {
        slot & self.mask < self.x
    }

    /// A word whose top bit is set exactly when `slot` is measured: `(slot mod Y) - X`, which
    /// wraps below zero for the kept slots (both are below 2^63). OR-ed over many slots it says
    /// whether any is kept with no branch per slot, which vectorizes on any x86-64.
    #[inline(always)]
    pub fn kept_bit(&self, slot: Slot) -> u64 {
        (slot & self.mask).wrapping_sub(self.x)
    }

    /// The position of a kept `slot` among the kept slots (`(slot / Y) * X + slot mod Y`):
    /// consecutive kept slots have consecutive indices, so a ring of the kept slots alone
    /// (`measure/probe.rs`) needs Y / X times fewer entries than one of every slot.
    #[inline(always)]
    pub fn index(&self, slot: Slot) -> u64 {
        (slot >> (self.mask + 1).trailing_zeros()) * self.x + (slot & self.mask)
    }

    /// The most slots in a row of which at most `kept` are kept: `(kept / X - 1) * Y`, at least
    /// `kept / X` (0 below X).
    pub fn span_of(&self, kept: u64) -> u64 {
        let y = self.mask + 1;
        ((kept / self.x).saturating_sub(1) * y).max(kept / self.x)
    }

    /// (x, y).
    pub fn ratio(&self) -> (u64, u64) {
        (self.x, self.mask + 1)
    }

    /// Calls `f` for every kept slot in `lo..hi`, in order.
    #[inline]
    pub(crate) fn for_each(&self, lo: Slot, hi: Slot, mut f: impl FnMut(Slot)) {
        let y = self.mask + 1;
        let mut block = lo & !self.mask;
        while block < hi {
            for s in block.max(lo)..(block + self.x).min(hi) {
                f(s);
            }
            block += y;
        }
    }
}

impl std::fmt::Display for Sampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (x, y) = self.ratio();
        write!(f, "{x}/{y}")
    }
}

impl std::str::FromStr for Sampling {
    type Err = String;
    /// `X/Y`, e.g. `1/64`; `all` for every slot.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "all" {
            return Ok(Sampling::ALL);
        }
        let bad = || format!("latency sampling '{s}': expected X/Y (e.g. 1/64) or all");
        let (x, y) = s.split_once('/').ok_or_else(bad)?;
        let n = |v: &str| v.trim().parse::<u64>().map_err(|_| bad());
        Sampling::new(n(x)?, n(y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The branch-free test the probe ORs over a chunk agrees with `keeps` on every slot.
        #[test]
        fn the_kept_bit_is_set_exactly_for_the_kept_slots(
            y_log in 0u32..20, x_frac in 0.0f64..1.0, slot in any::<u64>(),
        ) {
            let y = 1u64 << y_log;
            let x = ((x_frac * y as f64) as u64).clamp(1, y);
            let s = Sampling::new(x, y).unwrap();
            prop_assert_eq!(s.kept_bit(slot) >> 63 == 1, s.keeps(slot));
        }

        /// Kept slots have increasing, gap-free indices, and a span of `span_of(n)` slots from
        /// anywhere holds at most `n` kept ones.
        #[test]
        fn kept_slots_are_indexed_in_a_row_and_a_span_holds_what_it_says(
            y_log in 0u32..10, x_frac in 0.0f64..1.0, from in 0u64..1_000_000, n in 1u64..5_000,
        ) {
            let y = 1u64 << y_log;
            let x = ((x_frac * y as f64) as u64).clamp(1, y);
            let s = Sampling::new(x, y).unwrap();
            let kept: Vec<u64> = (from..from + 4 * y + 8).filter(|&t| s.keeps(t)).collect();
            for w in kept.windows(2) {
                prop_assert_eq!(s.index(w[1]), s.index(w[0]) + 1);
            }
            let span = s.span_of(n);
            prop_assert!((from..from + span).filter(|&t| s.keeps(t)).count() as u64 <= n);
        }
    }
}
