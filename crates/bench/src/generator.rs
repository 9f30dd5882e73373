//! Rate control for generators: an absolute schedule, so errors never accumulate.

/// Emission schedule of one source instance: element `i` is due at `start + i * period`.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    start_ns: u64,
    period_ns: f64,
}

impl Schedule {
    /// A schedule of `rate` elements/s starting at `start_ns`; `rate <= 0` means as fast as possible.
    pub fn new(start_ns: u64, rate: f64) -> Self {
        Schedule {
            start_ns,
            period_ns: if rate > 0.0 { 1e9 / rate } else { 0.0 },
        }
    }

    /// True when the schedule has no rate limit.
    pub fn unlimited(&self) -> bool {
        self.period_ns == 0.0
    }

    /// When element `i` is due, ns.
    #[inline]
    pub fn due_ns(&self, i: u64) -> u64 {
        self.start_ns + (i as f64 * self.period_ns) as u64
    }

    /// How many elements are due by `now_ns` (elements `0..n`).
    #[inline]
    pub fn due_by(&self, now_ns: u64) -> u64 {
        if self.unlimited() {
            u64::MAX
        } else if now_ns < self.start_ns {
            0
        } else {
            ((now_ns - self.start_ns) as f64 / self.period_ns) as u64 + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_schedule_does_not_drift() {
        let s = Schedule::new(1_000, 3.0); // period 333_333_333.3 ns
        assert_eq!(s.due_ns(0), 1_000);
        assert_eq!(s.due_ns(3), 1_000 + 1_000_000_000);
        assert_eq!(s.due_by(999), 0);
        assert_eq!(s.due_by(1_000), 1);
        assert_eq!(s.due_by(1_000 + 1_000_000_000), 4);
        assert!(Schedule::new(0, 0.0).unlimited());
    }
}
