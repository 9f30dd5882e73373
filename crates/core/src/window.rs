//! Keyed event-time tumbling windows with user aggregate functions.
//!
//! Window `[a, b)` with `a = floor(t / size) * size` and `b = a + size` collects every element with
//! time `t` in it, per key. The runtime closes it when the frontier of the window's tracking
//! component reaches `b` (no element with time `< b` can still arrive), and emits its results with
//! time `b - 1`, so a downstream window sees them in the window that contains `b - 1`.

use crate::Time;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::hash::Hash;

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

/// Per-window bookkeeping alongside the per-key accumulators.
#[derive(Debug)]
pub struct OpenWindow<K, Acc, M> {
    /// Accumulator per key.
    pub groups: FxHashMap<K, Acc>,
    /// Runtime metadata attached to the window (tracking hold, last arrival time, ...).
    pub meta: M,
}

/// State of one instance of a keyed tumbling window operator: open windows ordered by start.
///
/// `M` is metadata the runtime keeps per window (for trAcker, the tag that holds the output's slot
/// open and the arrival time of the last element, for notification latency).
#[derive(Debug)]
pub struct TumblingWindows<K, Acc, M> {
    size: Time,
    open: BTreeMap<Time, OpenWindow<K, Acc, M>>,
}

impl<K: Hash + Eq, Acc, M> TumblingWindows<K, Acc, M> {
    /// Windows of `size` time units (at least 1).
    ///
    /// # Panics
    /// If `size == 0`.
    pub fn new(size: Time) -> Self {
        assert!(size > 0, "window size must be at least 1");
        TumblingWindows {
            size,
            open: BTreeMap::new(),
        }
    }

    /// Window size, time units.
    pub fn size(&self) -> Time {
        self.size
    }

    /// `[start, end)` of the window that contains `time`.
    #[inline]
    pub fn bounds(&self, time: Time) -> (Time, Time) {
        let start = time - time % self.size;
        (start, start.saturating_add(self.size))
    }

    /// The window containing `time`, created with `meta()` if it is not open yet; the bool tells
    /// whether it was created now (the moment a deferred output must be registered).
    pub fn window_for(
        &mut self,
        time: Time,
        meta: impl FnOnce(Time, Time) -> M,
    ) -> (&mut OpenWindow<K, Acc, M>, bool) {
        let (start, end) = self.bounds(time);
        let mut created = false;
        let w = self.open.entry(start).or_insert_with(|| {
            created = true;
            OpenWindow {
                groups: FxHashMap::default(),
                meta: meta(start, end),
            }
        });
        (w, created)
    }

    /// Removes and returns, in order of start, every window whose end is `<= frontier`:
    /// `(start, end, window)`.
    pub fn take_complete(&mut self, frontier: Time) -> Vec<(Time, Time, OpenWindow<K, Acc, M>)> {
        let mut out = Vec::new();
        while let Some(entry) = self.open.first_entry() {
            let start = *entry.key();
            let end = start.saturating_add(self.size);
            if end > frontier {
                break;
            }
            out.push((start, end, entry.remove()));
        }
        out
    }

    /// End of the earliest open window, if any.
    pub fn first_end(&self) -> Option<Time> {
        self.open.keys().next().map(|s| s.saturating_add(self.size))
    }

    /// Number of open windows.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// True when no window is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_open_once_and_close_in_order_at_the_frontier() {
        let mut w: TumblingWindows<&str, u32, ()> = TumblingWindows::new(10);
        for (t, k) in [(3, "a"), (12, "a"), (5, "b"), (9, "a"), (25, "b")] {
            let (win, created) = w.window_for(t, |_, _| ());
            *win.groups.entry(k).or_insert(0) += 1;
            assert_eq!(created, t == 3 || t == 12 || t == 25);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.first_end(), Some(10));
        assert!(w.take_complete(9).is_empty());
        let done = w.take_complete(20);
        assert_eq!(done.len(), 2);
        assert_eq!((done[0].0, done[0].1), (0, 10));
        assert_eq!(done[0].2.groups[&"a"], 2);
        assert_eq!(done[0].2.groups[&"b"], 1);
        assert_eq!((done[1].0, done[1].1), (10, 20));
        assert_eq!(w.take_complete(u64::MAX).len(), 1);
        assert!(w.is_empty());
    }
}
