//! Keyed event-time session windows with allowed lateness, as a [`KeyedProcess`].
//!
//! An element at event time `t` opens the session `[t, t + gap)`; sessions of a key that
//! overlap merge, so a session ends `gap` after its last element, and an element exactly `gap`
//! after the last one starts a new session (Flink's `EventTimeSessionWindows` also merges
//! sessions that only touch; here that would make the result depend on the lateness). A session fires when the frontier reaches its end
//! and its result is emitted with time `end - 1`, as a [`WindowResult`] of `[start, end)`.
//!
//! Lateness follows the windows' rule (`window.rs`): a session whose `end + lateness` is at or
//! below an element's travel time no longer takes elements (whether or not its clean-up timer
//! has fired yet, so results do not depend on when the frontier arrives). An element whose own
//! session would already be past that and that reaches no live session goes to the side output.
//! A late element reaching a fired session, or forming one whose end the frontier has passed,
//! emits the session's updated result at once, with the element's time; a session extended
//! past the frontier fires again at its new end.
//!
//! Results are `WindowResult<K, Option<Out>>`, a changelog of sessions: `Some(value)` is a
//! session's result (a later one for the same `(start, end, key)` replaces it), and `None` a
//! tombstone, as Kafka Streams forwards for merged sessions: a late element merged this fired
//! session into another, whose result follows. So the results a run has emitted, applied in
//! order per key, leave exactly its final sessions, however the frontier was timed.
//!
//! Sessions keep their elements (the changelog thesis's retain-all form, docs/papers.md): merging
//! needs no merge of accumulators, and the aggregate folds a session when it fires.

use crate::process::{KeyedProcess, ProcessContext};
use crate::window::EventTime;
use crate::{Aggregate, Data, Time, WindowResult};
use std::sync::Arc;

/// One open session of a key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session<T> {
    /// First element's event time.
    pub start: Time,
    /// Last element's event time plus the gap (exclusive).
    pub end: Time,
    /// Its elements, in arrival order.
    pub elements: Vec<T>,
    /// Its result has been emitted for this `end`.
    pub fired: bool,
}

/// Session windows of `gap` time units folded by an [`Aggregate`].
pub struct SessionWindows<T, A> {
    gap: Time,
    lateness: Time,
    event_time: Option<EventTime<T>>,
    agg: A,
}

impl<T, A> SessionWindows<T, A> {
    /// Sessions closing after `gap` time units without an element (at least 1), folded by
    /// `agg`.
    ///
    /// # Panics
    /// If `gap == 0`.
    pub fn new(gap: Time, agg: A) -> Self {
        assert!(gap > 0, "a session gap must be at least 1");
        SessionWindows {
            gap,
            lateness: 0,
            event_time: None,
            agg,
        }
    }

    /// Fired sessions keep their elements until the stream's time passes `end + lateness`.
    pub fn allowed_lateness(mut self, lateness: Time) -> Self {
        self.lateness = lateness;
        self
    }

    /// Reads the event time from the element (see [`crate::WindowSpec::event_time`]).
    pub fn event_time(mut self, f: impl Fn(&T) -> Time + Send + Sync + 'static) -> Self {
        self.event_time = Some(Arc::new(f));
        self
    }

    /// Still takes elements travelling at `now`.
    fn live(&self, s: &Session<T>, now: Time) -> bool {
        s.end.saturating_add(self.lateness) > now
    }
}

impl<T: Data, A: Aggregate<T>> SessionWindows<T, A> {
    /// The session's result.
    fn result<K: Clone>(&self, key: &K, s: &Session<T>) -> WindowResult<K, Option<A::Out>> {
        let mut acc = self.agg.init();
        for el in &s.elements {
            self.agg.add(&mut acc, el);
        }
        WindowResult {
            start: s.start,
            end: s.end,
            key: key.clone(),
            value: Some(self.agg.finish(acc)),
        }
    }
}

impl<K, T, A> KeyedProcess<K, T> for SessionWindows<T, A>
where
    K: Data,
    T: Data + Sync,
    A: Aggregate<T>,
    A::Out: Data,
{
    type State = Vec<Session<T>>;
    type Out = WindowResult<K, Option<A::Out>>;
    type Side = T;

    fn on_element(
        &self,
        key: &K,
        state: &mut Option<Vec<Session<T>>>,
        element: T,
        ctx: &mut ProcessContext<'_, Self::Out, T>,
    ) {
        let now = ctx.time();
        let t = self.event_time.as_ref().map_or(now, |f| f(&element));
        let (mut start, mut end) = (t, t.saturating_add(self.gap));
        let sessions = state.get_or_insert_with(Vec::new);
        // Live sessions overlapping the growing range, to a fixed point.
        let mut merged = vec![false; sessions.len()];
        let mut grew = true;
        while grew {
            grew = false;
            for (i, s) in sessions.iter().enumerate() {
                if !merged[i] && self.live(s, now) && s.start < end && start < s.end {
                    (start, end, merged[i], grew) =
                        (start.min(s.start), end.max(s.end), true, true);
                }
            }
        }
        if end.saturating_add(self.lateness) <= now {
            ctx.side(element);
            if sessions.is_empty() {
                *state = None;
            }
            return;
        }
        let mut elements = Vec::new();
        let mut i = 0;
        sessions.retain_mut(|s| {
            let m = merged[i];
            i += 1;
            if m {
                elements.append(&mut s.elements);
                // A fired session merged into a larger one: its result is withdrawn (the same
                // range is simply updated by the merged result below).
                if s.fired && (s.start, s.end) != (start, end) {
                    ctx.emit(WindowResult {
                        start: s.start,
                        end: s.end,
                        key: key.clone(),
                        value: None,
                    });
                }
            }
            !m
        });
        elements.push(element);
        let mut s = Session {
            start,
            end,
            elements,
            fired: false,
        };
        if end <= ctx.frontier() {
            // Its firing time has passed: the (updated) result now, then only the clean-up.
            ctx.emit(self.result(key, &s));
            s.fired = true;
            ctx.set_timer(end.saturating_add(self.lateness));
        } else {
            ctx.set_timer(end);
        }
        let at = sessions.partition_point(|o| o.start < s.start);
        sessions.insert(at, s);
    }

    fn on_timer(
        &self,
        key: &K,
        state: &mut Option<Vec<Session<T>>>,
        ctx: &mut ProcessContext<'_, Self::Out, T>,
    ) {
        let Some(sessions) = state else {
            return;
        };
        let now = ctx.time();
        for s in sessions.iter_mut().filter(|s| !s.fired && s.end <= now) {
            ctx.emit(self.result(key, s));
            s.fired = true;
            if self.lateness > 0 {
                ctx.set_timer(s.end.saturating_add(self.lateness));
            }
        }
        sessions.retain(|s| !s.fired || self.live(s, now));
        if sessions.is_empty() {
            *state = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count;
    impl Aggregate<u64> for Count {
        type Acc = u64;
        type Out = u64;
        fn init(&self) -> u64 {
            0
        }
        fn add(&self, acc: &mut u64, _: &u64) {
            *acc += 1;
        }
        fn finish(&self, acc: u64) -> u64 {
            acc
        }
    }

    type Sessions = SessionWindows<u64, Count>;
    type Out = Vec<WindowResult<u8, Option<u64>>>;

    /// Drives one key: `(now, frontier, Some(event time))` elements or `(now, frontier, None)`
    /// timers; returns what was emitted, sent aside and the timers set.
    fn drive(f: &Sessions, steps: &[(Time, Time, Option<u64>)]) -> (Out, Vec<u64>, Vec<Time>) {
        let (mut out, mut side, mut timers) = (Vec::new(), Vec::new(), Vec::new());
        let mut state = None;
        for &(now, frontier, el) in steps {
            let mut ctx = ProcessContext::new(now, frontier, &mut out, &mut side, &mut timers);
            match el {
                Some(t) => f.on_element(&0u8, &mut state, t, &mut ctx),
                None => f.on_timer(&0u8, &mut state, &mut ctx),
            }
        }
        (out, side, timers)
    }

    fn res(start: Time, end: Time, value: u64) -> WindowResult<u8, Option<u64>> {
        WindowResult {
            start,
            end,
            key: 0,
            value: Some(value),
        }
    }

    fn tombstone(start: Time, end: Time) -> WindowResult<u8, Option<u64>> {
        WindowResult {
            start,
            end,
            key: 0,
            value: None,
        }
    }

    #[test]
    fn overlapping_sessions_merge_and_fire_at_their_end() {
        let f = Sessions::new(10, Count)
            .allowed_lateness(1)
            .event_time(|t| *t);
        // [0, 10), [9, 19) and [18, 28) overlap; 38 only touches [28, 38): a new session; the
        // timers at 10 and 19 are stale; each firing sets a clean-up 1 later.
        let steps = [
            (0, 0, Some(0)),
            (9, 0, Some(9)),
            (18, 0, Some(18)),
            (38, 0, Some(38)),
            (10, 10, None),
            (19, 19, None),
            (28, 28, None),
            (29, 29, None),
            (48, 48, None),
        ];
        let (out, side, timers) = drive(&f, &steps);
        assert_eq!(out, vec![res(0, 28, 3), res(38, 48, 1)]);
        assert!(side.is_empty());
        assert_eq!(timers, vec![10, 19, 28, 48, 29, 49]);
    }

    #[test]
    fn late_elements_update_fired_sessions_until_the_lateness_passes() {
        let f = Sessions::new(10, Count)
            .allowed_lateness(20)
            .event_time(|t| *t);
        let steps = [
            (0, 0, Some(0)),
            (10, 10, None),    // fires [0, 10), clean-up at 30
            (15, 12, Some(5)), // late, within lateness: [0, 15) fired at once (15 > 12: no)
            (40, 40, Some(3)), // [3, 13) + 20 <= 40: past the lateness of everything
        ];
        let (out, side, timers) = drive(&f, &steps);
        // [0, 10) was merged into [0, 15), which fires at 15: withdrawn now.
        assert_eq!(out, vec![res(0, 10, 1), tombstone(0, 10)]);
        assert_eq!(side, vec![3]);
        // The merged session [0, 15) is past the frontier 12: it fires again at 15 (set for
        // just after the element's time, 15).
        assert_eq!(timers, vec![10, 30, 16]);
        let steps = [
            (0, 0, Some(0)),
            (10, 10, None),
            (22, 20, Some(4)), // merged [0, 14) ends below the frontier 20: updated now
            (23, 20, Some(2)), // inside [0, 14): the same session, updated
        ];
        let (out, _, timers) = drive(&f, &steps);
        let want = vec![
            res(0, 10, 1),
            tombstone(0, 10),
            res(0, 14, 2),
            res(0, 14, 3),
        ];
        assert_eq!(out, want);
        assert_eq!(timers, vec![10, 30, 34, 34]);
    }

    #[test]
    fn without_lateness_fired_sessions_are_gone() {
        let f = Sessions::new(10, Count).event_time(|t| *t);
        let steps = [(0, 0, Some(0)), (10, 10, None), (12, 12, Some(9))];
        let (out, side, _) = drive(&f, &steps);
        assert_eq!(out, vec![res(0, 10, 1)]);
        // [9, 19) is live on its own: not late.
        assert!(side.is_empty());
        let steps = [(0, 0, Some(0)), (10, 10, None), (20, 20, Some(9))];
        assert_eq!(drive(&f, &steps).1, vec![9]);
    }
}
