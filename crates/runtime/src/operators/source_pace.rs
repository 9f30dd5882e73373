//! When a paced source instance is polled again: at its next element's due time, or up to the
//! source delay later when its elements come faster than that, so that one wake-up emits several.
//!
//! A source that says [`super::source::SourcePoll::WaitUntil`]`(t)` has nothing due before `t`.
//! Waking the worker at `t` exactly costs a wake-up per element at a paced source (a timer
//! interrupt, a context switch, a partial batch and an ack message per hop: docs/cpu.md, "A paced
//! chain at low load"), which dominated the CPU of the YSB job at 100,000 events/s. A pace lets
//! the worker park until `t + delay` instead, and polls the source as soon as the worker runs
//! after `t` (woken by anything else, or by that deadline), so the batch a wake-up carries grows
//! with the load: about `rate x delay` elements. It defers only a source whose elements are
//! closer together than the delay (the mean gap since its previous wait), so a slow source's
//! element, the only one in its wake-up, still leaves at its due time.
//!
//! Notification latency, measured from a slot's last arrival (`measure/probe.rs`), does not
//! move: a source heartbeats its next element's time when it waits, so a slot is complete once
//! its last element is emitted, deferred or not. Element latency grows by at most the delay.

/// The pace of one source instance: its elements' mean gap, from the waits it returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// The due time of the previous wait, ns (`None` before the first).
    last_wait_ns: Option<u64>,
    /// Elements emitted since the previous wait.
    emitted: u64,
    /// Mean time between the instance's elements, ns, as of its last wait (`None`: unknown).
    gap_ns: Option<u64>,
}

impl Pace {
    /// Counts `n` elements the instance emitted in a poll.
    #[inline]
    pub fn emitted(&mut self, n: usize) {
        self.emitted += n as u64;
    }

    /// The instance waits until `due_ns` (nothing of it is due before): returns the latest time
    /// the worker must poll it, `due_ns` plus `delay_ns` when its elements came closer together
    /// than `delay_ns` since its previous wait, else `due_ns`. `delay_ns` 0 is every element at
    /// its due time.
    pub fn wait(&mut self, due_ns: u64, delay_ns: u64) -> u64 {
        if let Some(last) = self.last_wait_ns {
            // Elements since the previous wait over the time between the two due times: a
            // source that emitted nothing in between (an idle poll) has a gap of that whole time.
            self.gap_ns = Some(due_ns.saturating_sub(last) / self.emitted.max(1));
        }
        self.last_wait_ns = Some(due_ns);
        self.emitted = 0;
        match self.gap_ns {
            Some(gap) if gap < delay_ns => due_ns.saturating_add(delay_ns),
            _ => due_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_fast_source_is_deferred_by_the_delay_and_a_slow_one_is_not() {
        // 100,000 elements/s: one per 10 us, each poll emitting one.
        let mut fast = Pace::default();
        assert_eq!(fast.wait(0, MS), 0, "no gap known before the first wait");
        fast.emitted(1);
        assert_eq!(fast.wait(10_000, MS), 10_000 + MS);
        // Deferred: the next poll emits a millisecond's worth, and the gap stays 10 us.
        fast.emitted(100);
        assert_eq!(fast.wait(10_000 + MS + 10_000, MS), 20_000 + 2 * MS);
        // 100 elements/s: one per 10 ms, never deferred.
        let mut slow = Pace::default();
        for k in 0..5u64 {
            assert_eq!(slow.wait(k * 10 * MS, MS), k * 10 * MS);
            slow.emitted(1);
        }
    }

    #[test]
    fn no_delay_is_every_element_at_its_due_time_and_a_rate_drop_ends_the_deferral() {
        let mut p = Pace::default();
        for k in 0..5u64 {
            assert_eq!(p.wait(k * 1_000, 0), k * 1_000);
            p.emitted(1);
        }
        let mut p = Pace::default();
        p.wait(0, MS);
        p.emitted(50);
        assert_eq!(p.wait(MS, MS), 2 * MS, "50 elements in 1 ms: deferred");
        // Then nothing for a second (an idle poll): the next wait is at its due time.
        assert_eq!(p.wait(MS + 1_000 * MS, MS), MS + 1_000 * MS);
    }

    proptest! {
        /// A wait is never before the due time, and never later than the delay after it.
        #[test]
        fn a_wait_lies_between_the_due_time_and_the_delay_after_it(
            steps in proptest::collection::vec((0u64..10 * MS, 0usize..200), 1..50),
            delay in 0u64..5 * MS,
        ) {
            let mut p = Pace::default();
            let mut due = 0u64;
            for (gap, n) in steps {
                due += gap;
                let at = p.wait(due, delay);
                prop_assert!(at >= due && at - due <= delay);
                p.emitted(n);
            }
        }
    }
}
