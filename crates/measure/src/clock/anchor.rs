//! Pairs of readings that tie a process's other clock to its ticks: the runtime stamps its
//! per-slot arrivals and notifications with `CLOCK_MONOTONIC_RAW` nanoseconds
//! (`crates/runtime/src/measure/clock.rs`: cheap, and one number for every process of a host),
//! while the clock alignment works in ticks ([`super::now`]). Two anchors, one taken with each
//! alignment phase (before and after the run), give the linear map from the one to the other;
//! both count the same hardware counter (the kernel's raw clock is the TSC scaled by a fixed
//! factor), so the map's only error is how far apart the readings of each anchor lie.

use super::map::Bounded;
use serde::{Deserialize, Serialize};

/// A reading of the other clock (ns) with the tick reading taken at the same moment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    /// The tick reading: the midpoint of the two readings around `ns`, ticks.
    pub ticks: u64,
    /// The other clock, ns.
    pub ns: u64,
    /// Half the ticks between the two readings around `ns`: how far `ticks` may be from the
    /// moment `ns` was read.
    pub half_width: u64,
}

impl Anchor {
    /// Reads `ticks`, `ns`, `ticks` five times and keeps the narrowest triple.
    pub fn read(ticks: impl Fn() -> u64, ns: impl Fn() -> u64) -> Anchor {
        let mut best = Anchor {
            ticks: 0,
            ns: 0,
            half_width: u64::MAX,
        };
        for _ in 0..5 {
            let a = ticks();
            let m = ns();
            let b = ticks();
            let half = b.wrapping_sub(a).div_ceil(2);
            if half < best.half_width {
                best = Anchor {
                    ticks: a + half,
                    ns: m,
                    half_width: half,
                };
            }
        }
        best
    }
}

/// The map from the other clock's ns to ticks through two anchors.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnchorMap {
    /// The earlier anchor.
    pub first: Anchor,
    /// The later anchor.
    pub second: Anchor,
}

impl AnchorMap {
    /// The map through `first` and `second`.
    ///
    /// # Errors
    /// The second anchor is not later than the first on both clocks.
    pub fn new(first: Anchor, second: Anchor) -> Result<AnchorMap, String> {
        if second.ns <= first.ns || second.ticks <= first.ticks {
            return Err(format!(
                "clock anchors out of order: ({}, {} ns) then ({}, {} ns)",
                first.ticks, first.ns, second.ticks, second.ns
            ));
        }
        Ok(AnchorMap { first, second })
    }

    /// `ns` of the other clock in ticks. The error is at most the anchors' half widths,
    /// interpolated like [`super::map::LinearMap::convert`]'s (so at most the larger of the two
    /// between the anchors), plus one tick of rounding.
    pub fn ticks(&self, ns: u64) -> Bounded {
        let (a, b) = (self.first, self.second);
        let t = (ns as i128 - a.ns as i128) as f64 / (b.ns - a.ns) as f64;
        let span = (b.ticks - a.ticks) as f64;
        Bounded {
            value: a.ticks as f64 + t * span,
            bound: (1.0 - t).abs() * a.half_width as f64 + t.abs() * b.half_width as f64 + 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn keeps_the_narrowest_reading_and_maps_between_anchors() {
        // Ticks at 3 per ns plus 1000; each ticks read costs 5 or 50 ticks.
        let now = Cell::new(0u64);
        let costs = [50u64, 5, 5, 50, 50, 50, 50, 50, 50, 50];
        let i = Cell::new(0usize);
        let ticks = || {
            now.set(now.get() + costs[i.get() % costs.len()]);
            i.set(i.get() + 1);
            1000 + now.get()
        };
        let ns = || now.get() / 3;
        let a = Anchor::read(ticks, ns);
        assert_eq!(a.half_width, 3, "the 5+5 triple: half of 5, rounded up");
        let b = Anchor {
            ticks: a.ticks + 3_000_000,
            ns: a.ns + 1_000_000,
            half_width: 7,
        };
        let m = AnchorMap::new(a, b).unwrap();
        let mid = m.ticks(a.ns + 500_000);
        assert!((mid.value - (a.ticks as f64 + 1_500_000.0)).abs() < 1e-6);
        assert!((mid.bound - (0.5 * 3.0 + 0.5 * 7.0 + 1.0)).abs() < 1e-9);
        // Outside the anchors the bound grows.
        assert!(m.ticks(b.ns + 1_000_000).bound > 7.0 + 1.0);
        assert!(AnchorMap::new(b, a).is_err());
    }

    #[test]
    fn real_clocks_map_within_the_bound() {
        use crate::clock::source::monotonic_raw_ns;
        let a = Anchor::read(crate::clock::now_ordered, monotonic_raw_ns);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mid = Anchor::read(crate::clock::now_ordered, monotonic_raw_ns);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = Anchor::read(crate::clock::now_ordered, monotonic_raw_ns);
        let m = AnchorMap::new(a, b).unwrap();
        let got = m.ticks(mid.ns);
        // The middle anchor's own width adds to the comparison's slack.
        let err = (got.value - mid.ticks as f64).abs();
        assert!(
            err <= got.bound + mid.half_width as f64,
            "error {err} ticks, bound {} + {}",
            got.bound,
            mid.half_width
        );
    }
}
