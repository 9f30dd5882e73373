//! Logical time, granularity and slots.
//!
//! Every element carries a logical time (u64, set by the source, inherited by derived elements).
//! The granularity `g` splits time into substreams, called slots: `slot = floor(time / g)`.

pub use xorflow_core::{Time, INF};

/// Index of a substream: `floor(time / g)`.
pub type Slot = u64;

/// Tracking granularity `g` (time units per slot, at least 1): the "tracking frequency" of the
/// trAcker paper (docs/papers.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granularity(u64);

impl Granularity {
    /// Creates a granularity of `g` time units per slot.
    ///
    /// # Panics
    /// If `g == 0`.
    pub fn new(g: u64) -> Self {
        assert!(g > 0, "granularity must be at least 1");
        Granularity(g)
    }

    /// Time units per slot.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The slot that contains `time`. `INF` maps to `INF`.
    #[inline]
    pub fn slot(self, time: Time) -> Slot {
        if time == INF {
            INF
        } else {
            time / self.0
        }
    }

    /// Number of slots that lie entirely below `time`: the slot bound a heartbeat "nothing below
    /// `time`" gives. Slot `s` covers `[s*g, (s+1)*g)`, so it is closed by the heartbeat when
    /// `(s+1)*g <= time`. `INF` maps to `INF`.
    #[inline]
    pub fn slots_below(self, time: Time) -> Slot {
        if time == INF {
            INF
        } else {
            time / self.0
        }
    }

    /// The first time of slot `slot`: a frontier in slots converted to time units (saturating; `INF`
    /// stays `INF`). "Frontier `f`" in slots means every time below `f * g` is complete.
    #[inline]
    pub fn start(self, slot: Slot) -> Time {
        slot.saturating_mul(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_mapping() {
        let g = Granularity::new(10);
        assert_eq!(g.slot(0), 0);
        assert_eq!(g.slot(9), 0);
        assert_eq!(g.slot(10), 1);
        assert_eq!(g.slots_below(10), 1); // slot 0 = [0,10) is below 10
        assert_eq!(g.slots_below(19), 1); // slot 1 = [10,20) is not yet closed
        assert_eq!(g.start(3), 30);
        assert_eq!(g.start(INF), INF);
        assert_eq!(g.slot(INF), INF);
    }

    #[test]
    #[should_panic]
    fn zero_granularity_is_rejected() {
        Granularity::new(0);
    }
}
