//! The delay router's writer for one destination host: every delayed packet bound for it, from
//! every source, written to its device once due (`router.rs`).
//!
//! One writer per destination instead of one per ordered pair: at 8 hosts and 100 ms a sleeping
//! thread per pair woke once per packet and cost the router 14-17 us per delayed packet against
//! 7-8 us per packet written straight through, 0.9 of this machine's 2 cores (docs/wan.md,
//! "8 processes, repeated"). Here the packets of all sources wait in one min-heap by due time;
//! the writer sleeps until the earliest is due, not listening meanwhile, and on waking writes
//! everything due by then. That is safe because no packet arriving during the sleep can be due
//! before it ends: the sleep is at most the destination's smallest one-way delay, and a
//! [`super::DelayLine`] never makes a packet due sooner than its arrival plus that.

use super::router::{lateness_histogram, RouterCounters, Timed, POLL};
use super::tun::TunDevice;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A queued packet: due time, then arrival order (which keeps each pair FIFO: a pair's due
/// times never decrease, and its packets arrive in order).
struct Queued {
    due: Instant,
    seq: u64,
    packet: Vec<u8>,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// The packets waiting for one destination, earliest due first (module doc).
struct DueQueue {
    heap: BinaryHeap<Reverse<Queued>>,
    seq: u64,
    limit: usize,
    min_delay: Duration,
}

impl DueQueue {
    /// A queue of at most `limit` packets whose sources' delays are at least `min_delay`.
    fn new(limit: usize, min_delay: Duration) -> Self {
        DueQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            limit,
            // A floor, so a pair whose jitter reaches its delay does not make the writer spin.
            min_delay: min_delay.max(Duration::from_micros(50)),
        }
    }

    /// Queues `packet`; false (and not queued) when `limit` packets wait.
    fn push(&mut self, (due, packet): Timed) -> bool {
        if self.heap.len() >= self.limit {
            return false;
        }
        self.seq += 1;
        self.heap.push(Reverse(Queued {
            due,
            seq: self.seq,
            packet,
        }));
        true
    }

    /// The earliest packet due by `now`, with its due time.
    fn pop_due(&mut self, now: Instant) -> Option<(Instant, Vec<u8>)> {
        if self.heap.peek()?.0.due > now {
            return None;
        }
        self.heap.pop().map(|Reverse(q)| (q.due, q.packet))
    }

    /// When to look again, sleeping from `now` without listening (`None`: nothing waits): the
    /// earliest due time, but no later than `now` + the smallest delay, before which nothing
    /// arriving meanwhile can be due.
    fn wake(&self, now: Instant) -> Option<Instant> {
        (self.heap.peek()).map(|q| q.0.due.min(now + self.min_delay))
    }
}

/// Writes the delayed packets `rx` brings to `to` once due, until `stop`. `min_delay` is the
/// smallest one-way delay any source's packets to this destination can have (base minus
/// jitter over its delayed pairs); `limit` bounds the packets waiting (beyond it they are
/// dropped and counted, as a router's queue drops).
pub(super) fn write_loop(
    rx: Receiver<Timed>,
    mut to: TunDevice,
    min_delay: Duration,
    limit: usize,
    stop: &AtomicBool,
    c: &RouterCounters,
) {
    // Wake when due, not up to Linux's default 50 us later.
    crate::measure::clock::set_timer_slack(1_000);
    let mut late = lateness_histogram();
    let mut q = DueQueue::new(limit, min_delay);
    let queue = |q: &mut DueQueue, t: Timed| {
        if !q.push(t) {
            c.queue_drops.fetch_add(1, Ordering::Relaxed);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        if q.heap.is_empty() {
            match rx.recv_timeout(POLL) {
                Ok(t) => queue(&mut q, t),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        while let Ok(t) = rx.try_recv() {
            queue(&mut q, t);
        }
        let now = Instant::now();
        while let Some((due, packet)) = q.pop_due(now) {
            super::router::deliver(&mut to, &packet, c);
            let ns = Instant::now().saturating_duration_since(due).as_nanos() as u64;
            late.saturating_record(ns.max(1_000));
        }
        if let Some(wake) = q.wake(now) {
            std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        }
    }
    if let Ok(mut h) = c.late_ns.lock() {
        let _ = h.add(&late);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_by_due_time_each_source_in_order() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut q = DueQueue::new(4, Duration::from_millis(10));
        // Source A 30 ms away, source B 10 ms away, arriving interleaved; A's two packets share
        // a due time (jitter clamps to the previous one) and must keep their order.
        assert!(q.push((ms(30), b"a1".to_vec())));
        assert!(q.push((ms(30), b"a2".to_vec())));
        assert!(q.push((ms(12), b"b1".to_vec())));
        assert!(q.push((ms(13), b"b2".to_vec())));
        assert!(!q.push((ms(40), b"a3".to_vec())), "over the limit: dropped");
        // Sleeping from t0: no later than the smallest delay, nor than the earliest due.
        assert_eq!(q.wake(t0), Some(ms(10)));
        assert_eq!(q.wake(ms(5)), Some(ms(12)));
        assert_eq!(q.pop_due(ms(11)), None);
        let order: Vec<Vec<u8>> = std::iter::from_fn(|| q.pop_due(ms(30)).map(|p| p.1)).collect();
        assert_eq!(
            order,
            [
                b"b1".to_vec(),
                b"b2".to_vec(),
                b"a1".to_vec(),
                b"a2".to_vec()
            ]
        );
        assert_eq!(q.wake(ms(30)), None);
        // A zero smallest delay still sleeps a little instead of spinning.
        let mut z = DueQueue::new(4, Duration::ZERO);
        assert!(z.push((ms(30), vec![])));
        assert_eq!(z.wake(t0), Some(t0 + Duration::from_micros(50)));
    }
}
