//! Stored input replayed at its own event-time pace, as the live feed it was recorded from
//! would have delivered it: the record with event time `t` is due `(t - origin) / speed` after
//! the replay's start. A SQL file table's `'replay.*'` options (docs/sql.md, "Connectors"), and
//! what `xorflow-lab bench nexmark` measures window latency against (docs/peers.md): a window
//! ending at `e` can be complete no sooner than the record at `e` plus the watermark delay is
//! due.
//!
//! Every source of a job shares one [`Pace`], so that all tables and instances replay on one
//! clock: the first instance to poll fixes the start (unless it is given).

use crate::measure::clock::now_ns;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// A replay's clock: when it started, and the event time due at that moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Start {
    /// The start on [`now_ns`]'s clock, ns.
    pub mono_ns: u64,
    /// The start on the wall clock, ms since the Unix epoch.
    pub epoch_ms: f64,
    /// The event time due at the start, ms since the Unix epoch.
    pub origin_ms: i64,
}

/// The event-time pace of a replay, shared by every source instance of a job.
#[derive(Clone, Debug)]
pub struct Pace {
    /// The event time due at the start, ms.
    origin_ms: i64,
    /// Event-time ms per wall-clock ms (1: as recorded; 10: ten times faster).
    speed: f64,
    /// The start on the wall clock, ms since the epoch (`None`: when the first instance polls).
    start_epoch_ms: Option<i64>,
    start: Arc<OnceLock<Start>>,
}

impl Pace {
    /// A replay of event time from `origin_ms` at `speed` event-time ms per wall-clock ms,
    /// starting at `start_epoch_ms` (ms since the epoch) or, when `None`, at the first poll of
    /// any instance sharing it.
    ///
    /// # Panics
    /// If `speed` is not a positive finite number (the connector checks it first).
    pub fn new(origin_ms: i64, speed: f64, start_epoch_ms: Option<i64>) -> Self {
        assert!(speed > 0.0 && speed.is_finite(), "speed {speed}");
        Pace {
            origin_ms,
            speed,
            start_epoch_ms,
            start: Arc::default(),
        }
    }

    /// The replay's clock, fixed by the first caller. `resumed_at`: the newest event time a
    /// resumed source had read (a restart from a checkpoint), which then becomes the origin, so
    /// that the replay goes on from where it stopped instead of waiting out the time before it.
    pub fn start(&self, resumed_at: Option<i64>) -> Start {
        *self.start.get_or_init(|| {
            let (mono, wall) = (now_ns(), epoch_ms());
            let (mono_ns, epoch_ms) = match self.start_epoch_ms {
                Some(s) => {
                    let ahead_ns = (s as f64 - wall) * 1e6;
                    (((mono as f64) + ahead_ns).max(0.0) as u64, s as f64)
                }
                None => (mono, wall),
            };
            Start {
                mono_ns,
                epoch_ms,
                origin_ms: resumed_at.unwrap_or(self.origin_ms),
            }
        })
    }

    /// The replay's clock if it has started.
    pub fn started(&self) -> Option<Start> {
        self.start.get().copied()
    }

    /// When the record with event time `t_ms` is due, ns on [`now_ns`]'s clock.
    pub fn due_ns(&self, start: Start, t_ms: i64) -> u64 {
        let after_ns = (t_ms - start.origin_ms) as f64 * 1e6 / self.speed;
        (start.mono_ns as f64 + after_ns).max(0.0) as u64
    }

    /// The event time due now, ms: every record at or before it has been released.
    pub fn event_now_ms(&self, start: Start) -> i64 {
        let since_ms = (now_ns() as f64 - start.mono_ns as f64) / 1e6;
        start.origin_ms + (since_ms * self.speed) as i64
    }

    /// Event-time ms per wall-clock ms.
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

/// The wall clock, ms since the Unix epoch.
fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_due_at_their_event_time_over_the_speed() {
        let p = Pace::new(1_000, 4.0, None);
        let s = p.start(None);
        assert_eq!(p.start(Some(5)), s, "the first caller fixes the clock");
        assert_eq!(p.due_ns(s, 1_000), s.mono_ns);
        // 400 ms of event time at 4x: 100 ms of wall time.
        assert_eq!(p.due_ns(s, 1_400), s.mono_ns + 100_000_000);
        // Before the origin: due at once (never before the start's clock reading 0).
        assert!(p.due_ns(s, 0) < s.mono_ns);
        let now = p.event_now_ms(s);
        assert!((1_000..1_000 + 4 * 60_000).contains(&now), "{now}");
    }

    #[test]
    fn a_given_start_is_kept_and_a_resumed_origin_replaces_the_configured_one() {
        let wall = epoch_ms() as i64;
        let p = Pace::new(0, 1.0, Some(wall + 5_000));
        let s = p.start(Some(77));
        assert_eq!(s.epoch_ms, (wall + 5_000) as f64);
        assert_eq!(s.origin_ms, 77);
        let ahead = s.mono_ns as i128 - now_ns() as i128;
        assert!((4_000_000_000..=5_000_000_000).contains(&ahead), "{ahead}");
        assert_eq!(p.started(), Some(s));
        // Nothing is due before the start.
        assert!(p.event_now_ms(s) < 77);
    }
}
