//! The delay line of one connection: when each arriving frame may be routed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Due times for the frames arriving on one connection: arrival + one-way delay (drawn
/// uniformly from [base - jitter, base + jitter], never below 0), and never before the previous
/// frame's, so frames leave in the order they came (FIFO, as TCP delivers; jitter shifts whole
/// stretches of the stream instead of reordering it).
#[derive(Debug)]
pub struct DelayLine {
    base: Duration,
    jitter: Duration,
    last: Option<Instant>,
    rng: SmallRng,
}

impl DelayLine {
    /// A line with one-way delay `base` +- `jitter`; `None` when both are zero (the connection
    /// then routes frames as they arrive, with no task in between). `seed` makes the jitter
    /// reproducible per connection.
    pub fn new(base: Duration, jitter: Duration, seed: u64) -> Option<Self> {
        Self::least(base, jitter).map(|_| DelayLine {
            base,
            jitter,
            last: None,
            rng: SmallRng::seed_from_u64(seed),
        })
    }

    /// The smallest delay a line with `base` +- `jitter` draws (`base - jitter`, floored at 0);
    /// `None` when [`DelayLine::new`] makes no line for them.
    pub fn least(base: Duration, jitter: Duration) -> Option<Duration> {
        (base > Duration::ZERO || jitter > Duration::ZERO).then(|| base.saturating_sub(jitter))
    }

    /// The one-way delay without jitter.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// When a frame that arrived at `arrived` may be routed.
    pub fn due(&mut self, arrived: Instant) -> Instant {
        let delay = if self.jitter.is_zero() {
            self.base
        } else {
            let j = self.jitter.as_nanos() as i128;
            let off = self.rng.random_range(-j..=j);
            Duration::from_nanos((self.base.as_nanos() as i128 + off).max(0) as u64)
        };
        let due = (arrived + delay).max(self.last.unwrap_or(arrived));
        self.last = Some(due);
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_delay_makes_no_line() {
        assert!(DelayLine::new(Duration::ZERO, Duration::ZERO, 1).is_none());
        assert!(DelayLine::new(Duration::ZERO, Duration::from_millis(1), 1).is_some());
        let ms = Duration::from_millis;
        assert_eq!(DelayLine::least(ms(0), ms(0)), None);
        assert_eq!(DelayLine::least(ms(0), ms(1)), Some(ms(0)));
        assert_eq!(DelayLine::least(ms(37), ms(1)), Some(ms(36)));
    }

    #[test]
    fn a_fixed_delay_shifts_every_frame_by_it() {
        let d = Duration::from_millis(20);
        let mut l = DelayLine::new(d, Duration::ZERO, 1).unwrap();
        let t0 = Instant::now();
        for k in 0..10 {
            let at = t0 + Duration::from_micros(k * 300);
            assert_eq!(l.due(at), at + d);
        }
        assert_eq!(l.base(), d);
    }

    #[test]
    fn jitter_stays_in_its_range_keeps_fifo_and_spreads() {
        let (base, jit) = (Duration::from_millis(37), Duration::from_micros(500));
        let mut l = DelayLine::new(base, jit, 7).unwrap();
        let t0 = Instant::now();
        let (mut prev, mut lo, mut hi) = (t0, Duration::MAX, Duration::ZERO);
        for k in 0..10_000u64 {
            // Frames 1 ms apart: jitter (+-0.5 ms) can never reorder them, so each delay is
            // exactly the drawn one and must lie in the range.
            let at = t0 + Duration::from_millis(k);
            let due = l.due(at);
            assert!(due >= prev, "frame {k} would overtake the one before it");
            prev = due;
            let delay = due - at;
            lo = lo.min(delay);
            hi = hi.max(delay);
            assert!(delay >= base - jit && delay <= base + jit, "{delay:?}");
        }
        assert!(lo < base - jit / 2 && hi > base + jit / 2, "{lo:?} {hi:?}");
        // Frames arriving together never reorder, even when a later draw is smaller.
        let mut l = DelayLine::new(base, jit, 9).unwrap();
        let mut prev = t0;
        for _ in 0..1000 {
            let due = l.due(t0);
            assert!(due >= prev);
            prev = due;
        }
    }
}
