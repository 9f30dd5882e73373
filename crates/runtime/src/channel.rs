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
}
