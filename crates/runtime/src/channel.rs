//! Batches and the bounded channels that carry them between vertex instances.
//!
//! Every (edge, sender worker, receiver worker) pair has its own bounded lock-free queue
//! (`crossbeam_queue::ArrayQueue`), so a full queue holds back exactly one producer instance
//! (backpressure) and never blocks a thread.

use crossbeam_queue::ArrayQueue;
use std::sync::Arc;
use xorflow_core::Element;
use xorflow_tracking::Slot;

/// A batch of elements with its trAcker tag: the sender XOR-ed `tag` into every slot of
/// `[lo, hi]` of the receiving vertex's component; the receiver does the same once the whole batch is
/// processed. Without tracking, `tag == 0`.
#[derive(Debug)]
pub struct Batch<T> {
    /// Random tag (0 without tracking).
    pub tag: u64,
    /// First slot of the tag's range.
    pub lo: Slot,
    /// Last slot of the tag's range (inclusive).
    pub hi: Slot,
    /// The elements.
    pub data: Vec<Element<T>>,
}

/// What a channel carries.
#[derive(Debug)]
pub enum Msg<T> {
    /// A batch of elements.
    Data(Batch<T>),
    /// End of stream from one sender instance (tracking `none` only).
    End,
}

/// A bounded single-producer single-consumer queue of messages (capacity in batches).
pub type Channel<T> = Arc<ArrayQueue<Msg<T>>>;

/// A new channel holding at most `capacity` messages.
pub fn channel<T>(capacity: usize) -> Channel<T> {
    Arc::new(ArrayQueue::new(capacity))
}

/// The receiving side of one vertex instance: the channels of all its input edges, polled in turn.
pub struct InputPort<T> {
    queues: Vec<Channel<T>>,
    next: usize,
    ends: usize,
}

impl<T> InputPort<T> {
    /// A port reading `queues`.
    pub fn new(queues: Vec<Channel<T>>) -> Self {
        InputPort {
            queues,
            next: 0,
            ends: 0,
        }
    }

    /// The next message of any input channel, round-robin over channels so none starves.
    #[inline]
    pub fn pop(&mut self) -> Option<Msg<T>> {
        let n = self.queues.len();
        for i in 0..n {
            let q = (self.next + i) % n;
            if let Some(m) = self.queues[q].pop() {
                self.next = (q + 1) % n;
                if matches!(m, Msg::End) {
                    self.ends += 1;
                }
                return Some(m);
            }
        }
        None
    }

    /// True once every sender instance has sent its end-of-stream marker.
    pub fn all_ended(&self) -> bool {
        self.ends >= self.queues.len()
    }

    /// Number of channels (sender instances) feeding this port.
    pub fn senders(&self) -> usize {
        self.queues.len()
    }
}

/// Arrival times per slot at a vertex instance, to measure notification latency: the time from the
/// instance receiving the last element of a slot to the notification that the slot is complete.
///
/// Open slots live in a vector indexed by `slot - base` (8 bytes per slot between the notified
/// frontier and the newest arrival, i.e. proportional to the elements in flight at granularity 1);
/// only a slot more than 2^24 ahead falls back to an ordered map, so one far-future element cannot
/// make the vector huge. Cost per element: a compare and a store.
#[derive(Debug, Default)]
pub struct ArrivalProbe {
    /// Slot of `open[head]`.
    base: Slot,
    head: usize,
    open: Vec<u64>,
    far: std::collections::BTreeMap<Slot, u64>,
    /// Elements that arrived for a slot the vertex had already been told was complete. Must be 0
    /// with trAcker; counted rather than ignored so a violation shows in reports.
    pub below_frontier: u64,
}

const SPAN: u64 = 1 << 24;

impl ArrivalProbe {
    /// Records that an element of `slot` arrived at `now` (ns from [`now_ns`]).
    #[inline]
    pub fn record(&mut self, slot: Slot, now: u64) {
        if slot < self.base {
            self.below_frontier += 1;
            return;
        }
        let off = slot - self.base;
        if off < SPAN {
            let idx = self.head + off as usize;
            if idx >= self.open.len() {
                self.open.resize(idx + 1, 0);
            }
            self.open[idx] = now.max(1);
        } else {
            self.far.insert(slot, now.max(1));
        }
    }

    /// Records the arrival at `now` of elements with the given times (one batch), `g` time units
    /// per slot.
    #[inline]
    pub fn record_batch(
        &mut self,
        times: impl Iterator<Item = u64>,
        g: xorflow_tracking::Granularity,
        now: u64,
    ) {
        if g.get() == 1 {
            for t in times {
                self.record(t, now);
            }
        } else {
            let mut last = u64::MAX;
            for t in times {
                let s = g.slot(t);
                if s != last {
                    self.record(s, now);
                    last = s;
                }
            }
        }
    }

    /// The slots below `frontier` are complete, as learnt at `seen_ns`: feeds one latency sample
    /// (ns) per slot that received elements to `sample`.
    pub fn complete(&mut self, frontier: Slot, seen_ns: u64, mut sample: impl FnMut(u64)) {
        if frontier <= self.base {
            return;
        }
        let open = (self.open.len() - self.head) as u64;
        let n = (frontier - self.base).min(open) as usize;
        for &v in &self.open[self.head..self.head + n] {
            if v != 0 {
                sample(seen_ns.saturating_sub(v));
            }
        }
        self.head += n;
        self.base = frontier;
        if self.head == self.open.len() {
            self.open.clear();
            self.head = 0;
        } else if self.head > 4096 && self.head * 2 > self.open.len() {
            self.open.drain(..self.head);
            self.head = 0;
        }
        while let Some(e) = self.far.first_entry() {
            if *e.key() >= frontier {
                break;
            }
            sample(seen_ns.saturating_sub(e.remove()));
        }
        // Far entries that now fall inside the span move into the vector.
        while let Some(e) = self.far.first_entry() {
            if *e.key() - self.base >= SPAN {
                break;
            }
            let (s, v) = e.remove_entry();
            self.record(s, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_port_round_robins_and_counts_ends() {
        let a = channel::<u32>(4);
        let b = channel::<u32>(4);
        let mk = |t| {
            Msg::Data(Batch {
                tag: 0,
                lo: t,
                hi: t,
                data: vec![Element::new(t, 0)],
            })
        };
        a.push(mk(1)).unwrap();
        a.push(mk(2)).unwrap();
        b.push(mk(3)).unwrap();
        b.push(Msg::End).unwrap();
        let mut p = InputPort::new(vec![a.clone(), b.clone()]);
        let mut seen = vec![];
        while let Some(m) = p.pop() {
            match m {
                Msg::Data(b) => seen.push(b.lo),
                Msg::End => seen.push(99),
            }
        }
        assert_eq!(seen, vec![1, 3, 2, 99]);
        assert!(!p.all_ended());
        a.push(Msg::End).unwrap();
        p.pop();
        assert!(p.all_ended());
    }

    #[test]
    fn probe_samples_once_per_slot_with_the_last_arrival() {
        let mut p = ArrivalProbe::default();
        p.record(0, 100);
        p.record(0, 150); // later arrival in the same slot wins
        p.record(2, 160);
        p.record(SPAN + 5, 170); // far slot
        let mut s = vec![];
        p.complete(2, 200, |x| s.push(x));
        assert_eq!(s, vec![50]);
        s.clear();
        p.complete(SPAN + 6, 300, |x| s.push(x));
        assert_eq!(s, vec![140, 130]);
        p.record(1, 400);
        assert_eq!(p.below_frontier, 1);
    }
}
