//! A steady rate for a source that replays stored input as a live feed would deliver it
//! ([`super::replay::Replay::paced`], a SQL file table's `'rows-per-second'`).

use crate::measure::clock::now_ns;

/// At most `per_second` records per second, counted from the first [`Rate::allowed`] (so a
/// resumed source paces from its first poll).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rate {
    /// Records per second (`None`: as fast as the run takes them).
    per_second: Option<f64>,
    /// When pacing started (ns on [`now_ns`]'s clock) and how many records it has emitted since.
    from: Option<(u64, u64)>,
}

impl Rate {
    /// `per_second` records per second; `0.0` (or less): unpaced.
    pub fn new(per_second: f64) -> Self {
        Rate {
            per_second: (per_second > 0.0).then_some(per_second),
            from: None,
        }
    }

    /// How many of `budget` records the rate allows now, or `Err`: none before this time (ns
    /// on [`now_ns`]'s clock).
    pub fn allowed(&mut self, budget: usize) -> Result<usize, u64> {
        let Some(rate) = self.per_second else {
            return Ok(budget);
        };
        let now = now_ns();
        let (start, emitted) = *self.from.get_or_insert((now, 0));
        let due = ((now - start) as f64 * rate / 1e9) as u64 + 1;
        match due.saturating_sub(emitted) {
            0 => Err(start + (emitted as f64 * 1e9 / rate) as u64),
            n => Ok(budget.min(n as usize)),
        }
    }

    /// Counts one record emitted.
    #[inline]
    pub fn emitted(&mut self) {
        if let Some((_, n)) = &mut self.from {
            *n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_allows_what_it_has_made_due() {
        let mut r = Rate::new(1000.0);
        // At the first call one record is due; the next is due 1 ms after pacing started.
        assert_eq!(r.allowed(64), Ok(1));
        r.emitted();
        let (start, _) = r.from.unwrap();
        match r.allowed(64) {
            Err(at) => assert_eq!(at, start + 1_000_000),
            Ok(n) => assert!(now_ns() >= start + 1_000_000 && n >= 1),
        }
        assert_eq!(Rate::new(0.0).allowed(64), Ok(64));
    }
}
