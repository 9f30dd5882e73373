//! The credit window of one remote channel, sized by the receiver to the link it runs over.
//!
//! A fixed window of `--channel-capacity` batches caps a remote channel at capacity batches per
//! round trip: 64 batches per 100 ms is 640 batches/s, less than a YSB stream of 55,000 events/s
//! flushed every millisecond needs (docs/wan.md, "Credits and the bandwidth-delay product").
//! TCP meets the same limit with window scaling and receive-buffer autotuning; this is the
//! same idea at the granularity of batches, driven by evidence the receiver sees, so no RTT has to
//! be measured or configured:
//!
//! - the sender marks the batch that spent its last credit (`Kind::DataLastCredit`);
//! - if since the previous such batch the receiver sat with an empty queue for at least
//!   [`STARVED`] while the sender had run out of credit, the receiver was starving: the window,
//!   not the receiver, limited the channel, and the receiver doubles it (up to `max`) by
//!   returning extra credits at once. The idle time is what tells a long round trip from a
//!   receiver that was merely descheduled: that one finds its queue full when it runs again and
//!   drains it, but is then fed again within a loopback round trip (the first version grew
//!   windows on a loaded machine with no delay at all and added queueing latency there);
//! - if instead more than three quarters of the window were still queued when the marked batch
//!   was taken, the receiver is the bottleneck: a large window would only queue more
//!   (bufferbloat, the latency Flink's buffer debloating removes), so it cuts the window by a
//!   quarter (down to `min`) by keeping back credits it would otherwise return. Growing by
//!   doubling and cutting by quarters past three quarters leaves a band in which a window one
//!   doubling above the receiver's need stays put instead of see-sawing.
//!
//! The invariant the transport relies on: credits held by the sender, credits on their way back
//! and batches on their way or queued never exceed `max`, the receiving queue's size, so a queue
//! never overflows (`transport.rs`, `route`).

use std::time::{Duration, Instant};

/// How long a receiver must wait with an empty queue, between two batches that spent the
/// sender's last credit, to count as starved by the window: longer than a loaded machine's
/// scheduling hiccups, shorter than any wide-area round trip (the smallest average in the wide-area
/// paper's city sets is 10.7 ms).
pub const STARVED: Duration = Duration::from_millis(5);

/// Credit accounting of the receiving end of one remote channel (window sizes in batches).
#[derive(Clone, Debug)]
pub struct CreditWindow {
    window: u32,
    min: u32,
    max: u32,
    /// Batches taken whose credits are not yet returned.
    unreturned: u32,
    /// Credits to keep back (a shrink not yet paid for).
    debt: u32,
    /// The queue ran empty since the last batch marked as the sender's last credit.
    ran_dry: bool,
    /// When the queue last ran empty, while it still is.
    dry_since: Option<Instant>,
    /// The queue stayed empty for [`STARVED`] since the last marked batch.
    starved: bool,
    grown: u32,
    shrunk: u32,
}

impl CreditWindow {
    /// A window of `min` batches that may grow to `max` (`max` < `min` is read as `min`: no
    /// growth).
    pub fn new(min: usize, max: usize) -> Self {
        let min = min.clamp(1, u32::MAX as usize) as u32;
        let max = (max.min(u32::MAX as usize) as u32).max(min);
        CreditWindow {
            window: min,
            min,
            max,
            unreturned: 0,
            debt: 0,
            ran_dry: true,
            dry_since: None,
            starved: false,
            grown: 0,
            shrunk: 0,
        }
    }

    /// Accounts for one batch taken from the queue: `last_credit` if the sender marked it as
    /// spending its last credit, `queued` the batches still queued behind it, `clock` the time
    /// now (read only when the queue runs empty or was empty). Returns the credits to send back
    /// now (0: none yet).
    pub fn taken(&mut self, last_credit: bool, queued: usize, clock: impl Fn() -> Instant) -> u32 {
        self.unreturned += 1;
        if let Some(since) = self.dry_since.take() {
            self.starved |= clock().saturating_duration_since(since) >= STARVED;
        }
        let mut now = false;
        if last_credit {
            if self.starved && self.window < self.max {
                // Credits kept back from an earlier shrink are forgiven first, so what is in
                // circulation (window + debt) never exceeds `max`.
                let extra = self.window.min(self.max - self.window);
                let forgiven = self.debt.min(extra);
                self.window += extra;
                self.debt -= forgiven;
                self.unreturned += extra - forgiven;
                self.grown += 1;
                now = true;
            } else if !self.ran_dry && queued as u32 > self.window / 4 * 3 && self.window > self.min
            {
                // A quarter, past three quarters queued: a window that grew one doubling past
                // what the receiver's rate needs keeps a standing queue under that and stays.
                let cut = (self.window / 4).max(1).min(self.window - self.min);
                self.window -= cut;
                self.debt += cut;
                self.shrunk += 1;
            }
            self.ran_dry = false;
            self.starved = false;
        }
        if queued == 0 {
            self.ran_dry = true;
            self.dry_since = Some(clock());
        }
        // Return in quarters of the window, or at once when the queue is empty: an idle
        // receiver holding credits back would stall a sender for nothing.
        if now || queued == 0 || self.unreturned >= (self.window / 4).max(1) {
            let pay = self.debt.min(self.unreturned);
            self.debt -= pay;
            let n = self.unreturned - pay;
            self.unreturned = 0;
            return n;
        }
        0
    }

    /// The current window, batches.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// How often the window grew and shrank.
    pub fn resizes(&self) -> (u32, u32) {
        (self.grown, self.shrunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// Simulated time: one step is a millisecond.
    fn at(t0: Instant, step: u64) -> Instant {
        t0 + Duration::from_millis(step)
    }

    /// A sender with `credits`, a link of `delay` steps each way and the receiver's queue,
    /// simulated step by step. Returns (peak of what was outstanding, batches delivered).
    struct Sim {
        w: CreditWindow,
        credits: u32,
        to_receiver: VecDeque<(u64, bool)>,
        to_sender: VecDeque<(u64, u32)>,
        queue: VecDeque<bool>,
        delivered: u64,
        peak: u32,
        max: u32,
        t0: Instant,
    }

    impl Sim {
        fn new(min: usize, max: usize) -> Self {
            Sim {
                w: CreditWindow::new(min, max),
                credits: min as u32,
                to_receiver: VecDeque::new(),
                to_sender: VecDeque::new(),
                queue: VecDeque::new(),
                delivered: 0,
                peak: 0,
                max: max.max(min) as u32,
                t0: Instant::now(),
            }
        }

        /// One step (a millisecond): the sender sends up to `send` batches, the link delivers
        /// what is due after `delay` steps, the receiver takes up to `take` batches.
        fn step(&mut self, t: u64, delay: u64, send: u32, take: u32) {
            while self.to_sender.front().is_some_and(|(at, _)| *at <= t) {
                self.credits += self.to_sender.pop_front().unwrap().1;
            }
            for _ in 0..send {
                if self.credits == 0 {
                    break;
                }
                self.credits -= 1;
                self.to_receiver.push_back((t + delay, self.credits == 0));
            }
            while self.to_receiver.front().is_some_and(|(at, _)| *at <= t) {
                let last = self.to_receiver.pop_front().unwrap().1;
                self.queue.push_back(last);
                assert!(self.queue.len() as u32 <= self.max, "queue overflowed");
            }
            for _ in 0..take {
                let Some(last) = self.queue.pop_front() else {
                    break;
                };
                self.delivered += 1;
                let (t0, len) = (self.t0, self.queue.len());
                let n = self.w.taken(last, len, || at(t0, t));
                if n > 0 {
                    self.to_sender.push_back((t + delay, n));
                }
            }
            let back: u32 = self.to_sender.iter().map(|(_, n)| n).sum();
            let outstanding =
                self.credits + back + self.to_receiver.len() as u32 + self.queue.len() as u32;
            self.peak = self.peak.max(outstanding);
        }
    }

    #[test]
    fn a_window_smaller_than_the_round_trip_grows_until_the_link_is_full() {
        // 4 batches of credit, 50 steps each way, a sender with 10 batches per step.
        let mut s = Sim::new(4, 1024);
        for t in 0..3000 {
            s.step(t, 50, 10, 100);
        }
        assert_eq!(s.w.window(), 1024, "{:?}", s.w);
        // Over the last 1000 steps the full window moves once per 100-step round trip.
        let before = s.delivered;
        for t in 3000..4000 {
            s.step(t, 50, 10, 100);
        }
        assert!(s.delivered - before >= 9 * 1000, "{}", s.delivered - before);
    }

    #[test]
    fn without_growth_the_channel_moves_one_window_per_round_trip() {
        let mut s = Sim::new(4, 4);
        for t in 0..1000 {
            s.step(t, 50, 10, 100);
        }
        assert_eq!(s.w.window(), 4);
        assert!(s.delivered <= 4 * 10 + 4, "{}", s.delivered);
    }

    #[test]
    fn a_slow_receiver_shrinks_a_grown_window_back() {
        let mut s = Sim::new(4, 256);
        for t in 0..2000 {
            s.step(t, 20, 10, 100);
        }
        assert_eq!(s.w.window(), 256);
        // The link gets short and the receiver takes one batch every tenth step: the round
        // trip holds less than one batch of its rate, the queue fills, and the window falls
        // back to where it started.
        for t in 2000..12000 {
            s.step(t, 1, 10, u32::from(t % 10 == 0));
        }
        assert!(s.w.window() <= 8, "{:?}", s.w);
        assert!(s.queue.len() <= 8, "{} queued", s.queue.len());
    }

    #[test]
    fn a_receiver_slower_than_the_sender_keeps_the_window_of_its_own_rate() {
        // 40-step round trip, the receiver takes a batch every other step: 20 batches cover
        // the round trip at its rate. The window settles within a doubling of that, and the
        // receiver is never starved by it.
        let mut s = Sim::new(4, 1024);
        for t in 0..20000 {
            s.step(t, 20, 10, (t % 2) as u32);
        }
        assert!((16..=64).contains(&s.w.window()), "{:?}", s.w);
        let before = s.delivered;
        for t in 20000..22000 {
            s.step(t, 20, 10, (t % 2) as u32);
        }
        assert!(
            s.delivered - before >= 990,
            "{} {:?}",
            s.delivered - before,
            s.w
        );
    }

    #[test]
    fn a_fast_link_never_grows_the_window() {
        let mut s = Sim::new(64, 1024);
        for t in 0..5000 {
            s.step(t, 0, 3, 100);
        }
        assert_eq!(s.w.window(), 64);
        assert_eq!(s.w.resizes(), (0, 0));
    }

    #[test]
    fn a_receiver_that_stalls_on_a_fast_link_keeps_its_window() {
        // No delay; the receiver runs one step in four (descheduled on a loaded machine) and
        // then drains everything: the sender runs out of credit and the queue runs empty every
        // time, but the receiver never waits 5 ms for data, so the window is not what limits.
        let mut s = Sim::new(8, 1024);
        for t in 0..5000 {
            s.step(t, 0, 10, if t % 4 == 3 { 100 } else { 0 });
        }
        assert_eq!(s.w.window(), 8, "{:?}", s.w);
    }

    proptest! {
        /// Whatever the sender, link and receiver do, what is outstanding never exceeds the
        /// largest window (so the receiving queue never overflows), the window stays within its
        /// bounds, and every batch sent is delivered once the sender stops.
        #[test]
        fn outstanding_never_exceeds_the_largest_window(
            min in 1usize..16,
            extra in 0usize..64,
            delay in 0u64..30,
            phases in proptest::collection::vec((0u32..8, 0u32..8), 1..6),
        ) {
            let mut s = Sim::new(min, min + extra);
            let mut t = 0;
            for (send, take) in phases {
                for _ in 0..200 {
                    s.step(t, delay, send, take);
                    t += 1;
                }
            }
            prop_assert!(s.peak <= (min + extra) as u32);
            prop_assert!((min as u32..=(min + extra) as u32).contains(&s.w.window()));
            for _ in 0..(4 * delay + 10) {
                s.step(t, delay, 0, 1000);
                t += 1;
            }
            let back: u32 = s.to_sender.iter().map(|(_, n)| n).sum();
            prop_assert!(s.queue.is_empty() && s.to_receiver.is_empty() && back == 0);
            // Every credit is with the sender again, but those still to be kept back.
            prop_assert_eq!(s.credits, s.w.window() + s.w.debt);
        }
    }
}
