//! The linear map between two processes' clocks from two MinRTT round trips, one before and one
//! after the run (the Cloudprofiler paper, section 3.2, Eq. 4 and 6; docs/papers.md).
//!
//! Each round trip gives a point: the responder's stamp x (its ticks) and the initiator's
//! midpoint y (its ticks), true to within e = half the round trip. With both clocks running at
//! constant rates, the true relation is the line through the two true points, and a responder
//! reading x converts to `y1 + (x - x1) * r` with `r = (y2 - y1) / (x2 - x1)`. Writing
//! `t = (x - x1) / (x2 - x1)`, the converted value is `(1 - t) y1 + t y2`, so its error is at most
//! `|1 - t| e1 + |t| e2`: between the two round trips no more than the larger e (the paper's e),
//! and growing linearly outside them.

use super::sample::RoundTrip;
use serde::{Deserialize, Serialize};

/// Added to every half round trip, ticks: one tick for the granularity of each reading.
pub const READ_SLACK_TICKS: f64 = 1.0;

/// Converts the responder's ticks (x) into the initiator's (y).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearMap {
    /// Responder's stamp of the before round trip, responder ticks.
    pub x1: u64,
    /// Initiator's midpoint of the before round trip, initiator ticks.
    pub y1: f64,
    /// Uncertainty of `y1`, initiator ticks.
    pub e1: f64,
    /// Responder's stamp of the after round trip.
    pub x2: u64,
    /// Initiator's midpoint of the after round trip.
    pub y2: f64,
    /// Uncertainty of `y2`.
    pub e2: f64,
}

/// A converted value and the bound on its error, in the target clock's ticks.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounded {
    /// Best estimate, ticks.
    pub value: f64,
    /// |true - value| is at most this, ticks.
    pub bound: f64,
}

impl LinearMap {
    /// The map from the before and after round trips the initiator ran against the responder.
    ///
    /// # Errors
    /// The responder's stamps do not increase from `before` to `after` (swapped round trips, or
    /// a responder clock that went backwards).
    pub fn new(before: &RoundTrip, after: &RoundTrip) -> Result<LinearMap, String> {
        if after.remote <= before.remote {
            return Err(format!(
                "the after-run round trip's remote stamp ({}) is not later than the before-run \
                 one's ({})",
                after.remote, before.remote
            ));
        }
        Ok(LinearMap {
            x1: before.remote,
            y1: before.midpoint(),
            e1: before.half_rtt() + READ_SLACK_TICKS,
            x2: after.remote,
            y2: after.midpoint(),
            e2: after.half_rtt() + READ_SLACK_TICKS,
        })
    }

    /// Initiator ticks per responder tick (the paper's TSC ratio r).
    pub fn rate(&self) -> f64 {
        (self.y2 - self.y1) / (self.x2 - self.x1) as f64
    }

    /// Bound on the error of [`LinearMap::rate`] (absolute, in the same unit).
    pub fn rate_bound(&self) -> f64 {
        (self.e1 + self.e2) / (self.x2 - self.x1) as f64
    }

    /// Position of `x` along the span: 0 at the before round trip, 1 at the after one.
    fn t(&self, x: u64) -> f64 {
        (x as i128 - self.x1 as i128) as f64 / (self.x2 - self.x1) as f64
    }

    /// Responder reading `x` in initiator ticks, with its bound (Eq. 4 and 6).
    pub fn convert(&self, x: u64) -> Bounded {
        let t = self.t(x);
        Bounded {
            value: self.y1 + (x as i128 - self.x1 as i128) as f64 * self.rate(),
            bound: (1.0 - t).abs() * self.e1 + t.abs() * self.e2,
        }
    }

    /// Initiator reading `y` in responder ticks, with its bound (the same line read backwards;
    /// the bound is the forward one divided by the rate).
    pub fn invert(&self, y: f64) -> Bounded {
        let r = self.rate();
        let x = self.x1 as f64 + (y - self.y1) / r;
        let t = (x - self.x1 as f64) / (self.x2 - self.x1) as f64;
        Bounded {
            value: x,
            bound: ((1.0 - t).abs() * self.e1 + t.abs() * self.e2) / r,
        }
    }

    /// A responder duration of `d` ticks in initiator ticks: `d * r`, bound `|d| * rate bound`
    /// (the Cloudprofiler paper, section 3.3.2: both ends on one non-reference node).
    pub fn scale(&self, d: i64) -> Bounded {
        Bounded {
            value: d as f64 * self.rate(),
            bound: (d as f64).abs() * self.rate_bound(),
        }
    }

    /// Initiator minus responder clock at responder reading `x`, initiator ticks (what an
    /// offset means for clocks with the same tick; with different tick rates it changes fast).
    pub fn offset_at(&self, x: u64) -> f64 {
        self.convert(x).value - x as f64
    }

    /// The larger uncertainty of the two round trips: the bound anywhere between them (the
    /// paper's e), initiator ticks.
    pub fn e(&self) -> f64 {
        self.e1.max(self.e2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Responder clock = 2 * initiator clock + 1000 (exactly); symmetric one-way delays of 5.
    fn map() -> LinearMap {
        let rt = |a: u64| RoundTrip::new(a, 2 * (a + 5) + 1000, a + 10).unwrap();
        LinearMap::new(&rt(100), &rt(10_100)).unwrap()
    }

    #[test]
    fn symmetric_delays_recover_the_line() {
        let m = map();
        assert!((m.rate() - 0.5).abs() < 1e-12);
        // Responder reading 2 * 5105 + 1000 happened at initiator 5105.
        let c = m.convert(2 * 5105 + 1000);
        assert!((c.value - 5105.0).abs() < 1e-9, "{c:?}");
        // Halfway: both uncertainties weigh half: (5 + 1 + 5 + 1) / 2.
        assert!((c.bound - 6.0).abs() < 1e-9);
        let back = m.invert(5105.0);
        assert!((back.value - (2.0 * 5105.0 + 1000.0)).abs() < 1e-6);
        assert!((back.bound - 12.0).abs() < 1e-9);
        // Outside the span the bound grows: at t = 2, |1 - 2| * 6 + 2 * 6.
        let far = m.convert(2 * 20_105 + 1000);
        assert!((far.bound - 18.0).abs() < 1e-9, "{far:?}");
        assert!((m.scale(2000).value - 1000.0).abs() < 1e-9);
        assert!(m.scale(2000).bound < 2000.0 * 12.0 / 20_000.0 + 1e-9);
    }

    #[test]
    fn refuses_swapped_round_trips() {
        let a = RoundTrip::new(0, 500, 10).unwrap();
        let b = RoundTrip::new(100, 400, 110).unwrap();
        assert!(LinearMap::new(&a, &b).unwrap_err().contains("not later"));
    }
}
