//! Keyed interval join of two streams (Flink's `KeyedStream#intervalJoin`), as a
//! [`KeyedProcess`] over their union.
//!
//! A left element at time `a` and a right element at time `b` of the same key join when
//! `a + lower <= b <= a + upper` (bounds in time units, either may be negative). Each element
//! waits in its key's buffer for partners still to come, and is dropped by a timer once the
//! frontier has passed every time a partner could have (`a + upper` for a left element,
//! `b - lower` for a right one). A pair is emitted once, when its second element arrives, with
//! that element's time.

use crate::process::{KeyedProcess, ProcessContext};
use crate::{Data, Time};

/// An element of either input of a join.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JoinSide<L, R> {
    /// From the left input.
    Left(L),
    /// From the right input.
    Right(R),
}

/// One key's elements waiting for partners: (time, element).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct JoinBuffers<L, R> {
    /// Left elements.
    pub left: Vec<(Time, L)>,
    /// Right elements.
    pub right: Vec<(Time, R)>,
}

/// The interval join's function: `join(left, right)` per matching pair.
pub struct IntervalJoin<F> {
    lower: i64,
    upper: i64,
    join: F,
}

impl<F> IntervalJoin<F> {
    /// Joins pairs with `left + lower <= right <= left + upper`.
    ///
    /// # Panics
    /// If `lower > upper`.
    pub fn new(lower: i64, upper: i64, join: F) -> Self {
        assert!(lower <= upper, "interval join bounds {lower} > {upper}");
        IntervalJoin { lower, upper, join }
    }

    /// `t + d`, clamped to the time axis.
    fn shift(t: Time, d: i64) -> Time {
        (t as i128 + d as i128).clamp(0, Time::MAX as i128) as Time
    }

    /// `a + lower <= b <= a + upper`.
    fn matches(&self, a: Time, b: Time) -> bool {
        let d = b as i128 - a as i128;
        self.lower as i128 <= d && d <= self.upper as i128
    }
}

impl<K, L, R, O, F> KeyedProcess<K, JoinSide<L, R>> for IntervalJoin<F>
where
    L: Data,
    R: Data,
    O: Data,
    F: Fn(&L, &R) -> O + Send + Sync + 'static,
{
    type State = JoinBuffers<L, R>;
    type Out = O;
    type Side = ();
    /// A pair is emitted when its second element arrives; timers only drop elements.
    const CLEANUP_TIMERS: bool = true;

    fn on_element(
        &self,
        _key: &K,
        state: &mut Option<JoinBuffers<L, R>>,
        element: JoinSide<L, R>,
        ctx: &mut ProcessContext<'_, O, ()>,
    ) {
        let now = ctx.time();
        let b = state.get_or_insert_with(|| JoinBuffers {
            left: Vec::new(),
            right: Vec::new(),
        });
        match element {
            JoinSide::Left(l) => {
                for (_, r) in b.right.iter().filter(|(t, _)| self.matches(now, *t)) {
                    ctx.emit((self.join)(&l, r));
                }
                b.left.push((now, l));
                // No right partner below now + upper + 1 can still come once the frontier is there.
                ctx.set_timer(Self::shift(now, self.upper).saturating_add(1));
            }
            JoinSide::Right(r) => {
                for (_, l) in b.left.iter().filter(|(t, _)| self.matches(*t, now)) {
                    ctx.emit((self.join)(l, &r));
                }
                b.right.push((now, r));
                ctx.set_timer(Self::shift(now, -self.lower).saturating_add(1));
            }
        }
    }

    /// Drops the elements no partner can reach any more.
    fn on_timer(
        &self,
        _key: &K,
        state: &mut Option<JoinBuffers<L, R>>,
        ctx: &mut ProcessContext<'_, O, ()>,
    ) {
        let Some(b) = state else {
            return;
        };
        let now = ctx.time();
        b.left.retain(|(t, _)| Self::shift(*t, self.upper) >= now);
        b.right.retain(|(t, _)| Self::shift(*t, -self.lower) >= now);
        if b.left.is_empty() && b.right.is_empty() {
            *state = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Join = IntervalJoin<fn(&u32, &u32) -> (u32, u32)>;
    type Buffers = Option<JoinBuffers<u32, u32>>;

    /// Feeds `el` at `time`; returns the pairs emitted and the timers set.
    fn feed(
        j: &Join,
        st: &mut Buffers,
        time: Time,
        el: JoinSide<u32, u32>,
    ) -> (Vec<(u32, u32)>, Vec<Time>) {
        let (mut out, mut side, mut timers) = (Vec::new(), Vec::new(), Vec::new());
        let mut ctx = ProcessContext::new(time, 0, &mut out, &mut side, &mut timers);
        j.on_element(&0u8, st, el, &mut ctx);
        (out, timers)
    }

    fn fire(j: &Join, st: &mut Buffers, time: Time) {
        let (mut out, mut side, mut timers) = (Vec::new(), Vec::new(), Vec::new());
        let mut ctx = ProcessContext::new(time, time, &mut out, &mut side, &mut timers);
        KeyedProcess::<u8, JoinSide<u32, u32>>::on_timer(j, &0u8, st, &mut ctx);
        assert!(out.is_empty() && timers.is_empty());
    }

    #[test]
    fn partners_at_the_interval_bounds_join_until_the_frontier_passes_them() {
        let j: Join = IntervalJoin::new(-2, 5, |a, b| (*a, *b));
        let mut st = None;
        // Left at 10 waits for rights in [8, 15]: dropped once the frontier passes 15.
        assert_eq!(feed(&j, &mut st, 10, JoinSide::Left(1)), (vec![], vec![16]));
        fire(&j, &mut st, 15);
        assert_eq!(feed(&j, &mut st, 15, JoinSide::Right(2)).0, vec![(1, 2)]);
        // Right at 15 waits for lefts in [10, 17]: its timer is 18.
        assert_eq!(
            feed(&j, &mut st, 17, JoinSide::Left(3)),
            (vec![(3, 2)], vec![23])
        );
        fire(&j, &mut st, 16);
        // The left at 10 is gone; a right at 16 meets only the left at 17 (16 >= 17 - 2).
        assert_eq!(feed(&j, &mut st, 16, JoinSide::Right(4)).0, vec![(3, 4)]);
        fire(&j, &mut st, 18);
        fire(&j, &mut st, 19);
        fire(&j, &mut st, 23);
        assert!(st.is_none(), "everything dropped: {st:?}");
    }
}
