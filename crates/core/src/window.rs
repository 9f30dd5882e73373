//! Keyed event-time windows (tumbling and sliding, with allowed lateness) and user aggregate
//! functions.
//!
//! A window is `[end - size, end)`; the windows of a [`WindowSpec`] start at `k * slide` and
//! end at `size + k * slide` (`k = 0, 1, ...`), so an element with time `t` belongs to every window whose end lies in
//! `(t, t + size]`: one when `slide == size` (tumbling), `size / slide` when sliding (hopping)
//! with `slide` dividing `size`. The runtime fires a window when the frontier of its tracking
//! component reaches its end (no element with a smaller time can still arrive) and emits its
//! results with time `end - 1`, so a downstream window sees them in the windows containing
//! `end - 1`.
//!
//! Allowed lateness (Flink's model, `WindowedStream#allowedLateness`): with an event-time
//! extractor ([`WindowSpec::event_time`]) an element can belong to windows that end at or below
//! the time it travels with (a source emits a record behind its own heartbeat at the heartbeat,
//! keeping its event time in the record). Such a window still takes it while `end + lateness`
//! is above that travel time, and emits an updated result for the element's key at once; an
//! element every window of which is past its lateness goes to the late side output.

use crate::Time;
use std::sync::Arc;

/// A user aggregate function over values of type `T` (like Flink's `AggregateFunction`).
pub trait Aggregate<T>: Send + Sync + 'static {
    /// The accumulator kept per (window, key).
    type Acc: Send + 'static;
    /// The result emitted per (window, key).
    type Out: Send + Clone + 'static;
    /// A fresh accumulator for a new (window, key).
    fn init(&self) -> Self::Acc;
    /// Folds one value into the accumulator.
    fn add(&self, acc: &mut Self::Acc, value: &T);
    /// Turns the accumulator into the window's result.
    fn finish(&self, acc: Self::Acc) -> Self::Out;
}

/// The result of one (window, key): emitted with element time `end - 1`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WindowResult<K, O> {
    /// First time of the window (inclusive).
    pub start: Time,
    /// End of the window (exclusive).
    pub end: Time,
    /// The key.
    pub key: K,
    /// The aggregate's result.
    pub value: O,
}

/// Reads an element's event time (time units).
pub type EventTime<T> = Arc<dyn Fn(&T) -> Time + Send + Sync>;

/// Which windows an element belongs to, and how long a fired window still takes late elements.
///
/// Build with [`WindowSpec::tumbling`] or [`WindowSpec::sliding`], then optionally
/// [`WindowSpec::allowed_lateness`] and [`WindowSpec::event_time`].
pub struct WindowSpec<T> {
    size: Time,
    slide: Time,
    lateness: Time,
    event_time: Option<EventTime<T>>,
}

impl<T> Clone for WindowSpec<T> {
    fn clone(&self) -> Self {
        WindowSpec {
            event_time: self.event_time.clone(),
            ..*self
        }
    }
}

impl<T> std::fmt::Debug for WindowSpec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowSpec")
            .field("size", &self.size)
            .field("slide", &self.slide)
            .field("lateness", &self.lateness)
            .field("event_time", &self.event_time.is_some())
            .finish()
    }
}

impl<T> WindowSpec<T> {
    /// Tumbling windows of `size` time units: `[k * size, (k + 1) * size)`.
    ///
    /// # Panics
    /// If `size == 0`.
    pub fn tumbling(size: Time) -> Self {
        Self::sliding(size, size)
    }

    /// Sliding (hopping) windows of `size` time units starting every `slide`: an element is in
    /// `ceil(size / slide)` of them (exactly `size / slide` when `slide` divides `size`).
    ///
    /// # Panics
    /// If `size == 0`, `slide == 0` or `slide > size` (elements between windows would belong
    /// to none).
    pub fn sliding(size: Time, slide: Time) -> Self {
        assert!(size > 0, "window size must be at least 1");
        assert!(
            slide > 0 && slide <= size,
            "window slide must be between 1 and the size ({size}), not {slide}"
        );
        WindowSpec {
            size,
            slide,
            lateness: 0,
            event_time: None,
        }
    }

    /// Fired windows keep their contents until the stream's time passes `end + lateness`, and
    /// take elements that arrive late until then (each emits an updated result for its key).
    pub fn allowed_lateness(mut self, lateness: Time) -> Self {
        self.lateness = lateness;
        self
    }

    /// Assigns elements to windows by `f(element)` instead of the time they travel with (which
    /// must not be below it: a source emits a late record at its current heartbeat). Needed for
    /// anything to be late.
    pub fn event_time(mut self, f: impl Fn(&T) -> Time + Send + Sync + 'static) -> Self {
        self.event_time = Some(Arc::new(f));
        self
    }

    /// Window length, time units.
    pub fn size(&self) -> Time {
        self.size
    }

    /// Distance between window starts, time units (the size when tumbling).
    pub fn slide(&self) -> Time {
        self.slide
    }

    /// Allowed lateness, time units.
    pub fn lateness(&self) -> Time {
        self.lateness
    }

    /// The event-time extractor, if any.
    pub fn event_time_fn(&self) -> Option<&EventTime<T>> {
        self.event_time.as_ref()
    }

    /// The ends of the windows holding time `t`, ascending: `(first, count)`, the others
    /// `slide` apart. Ends saturate at [`Time::MAX`] (a window there never fires before the
    /// end of the stream).
    #[inline]
    pub fn ends(&self, t: Time) -> (Time, u64) {
        if self.slide == self.size {
            return ((t - t % self.size).saturating_add(self.size), 1);
        }
        // Ends are congruent to size modulo slide; the first is the least such end above t.
        let (r, s) = (self.size % self.slide, self.slide);
        let above = t.saturating_add(1);
        // Windows start at 0 or later: the first end is at least the size.
        let first = above.saturating_add((r + s - above % s) % s).max(self.size);
        let last = t.saturating_add(self.size);
        let count = if first > last {
            0
        } else {
            (last - first) / s + 1
        };
        (first, count)
    }

    /// Start of the window ending at `end`.
    #[inline]
    pub fn start(&self, end: Time) -> Time {
        end.saturating_sub(self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The windows holding `t` by definition: every end `size + k * slide` in `(t, t + size]`.
    fn brute(size: Time, slide: Time, t: Time) -> Vec<Time> {
        (0..=(t + size) / slide + 1)
            .map(|k| size + k * slide)
            .filter(|&e| e > t && e <= t + size)
            .collect()
    }

    #[test]
    fn ends_are_every_window_holding_the_time() {
        for (size, slide) in [(10, 10), (10, 5), (10, 3), (3, 1), (7, 7), (12, 4), (5, 2)] {
            let spec: WindowSpec<()> = WindowSpec::sliding(size, slide);
            for t in 0..60 {
                let (first, n) = spec.ends(t);
                let got: Vec<Time> = (0..n).map(|i| first + i * slide).collect();
                assert_eq!(
                    got,
                    brute(size, slide, t),
                    "size {size} slide {slide} t {t}"
                );
            }
        }
    }

    #[test]
    fn tumbling_has_one_window_and_huge_times_saturate() {
        let spec: WindowSpec<()> = WindowSpec::tumbling(10);
        assert_eq!(spec.ends(0), (10, 1));
        assert_eq!(spec.ends(19), (20, 1));
        assert_eq!(spec.start(20), 10);
        let s: WindowSpec<()> = WindowSpec::sliding(10, 3);
        let (first, _) = s.ends(Time::MAX - 1);
        assert!(first >= Time::MAX - 3);
        // No window starts before 0: time 1 is in [0, 10) only.
        assert_eq!(s.ends(1), (10, 1));
    }

    #[test]
    #[should_panic(expected = "slide must be between 1 and the size")]
    fn a_slide_longer_than_the_window_is_refused() {
        let _: WindowSpec<()> = WindowSpec::sliding(5, 6);
    }
}
