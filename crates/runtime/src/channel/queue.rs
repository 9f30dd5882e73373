//! The local channel: one bounded lock-free queue per (edge, sender worker, receiver worker).
//!
//! A full queue holds back exactly one producer instance (backpressure) and never blocks a thread
//! (`crossbeam_queue::ArrayQueue`). The queue's slots are allocated by the first message sent, not
//! when the dataflow is wired: an all-to-all edge has P^2 channels, and with many workers most of
//! those behind a key-partitioned edge never carry anything, so memory grows with the channels
//! used, not with P^2 x capacity.

use crate::batch::Msg;
use crossbeam_queue::ArrayQueue;
use std::sync::{Arc, OnceLock};

/// A bounded queue of messages between two workers of one process (capacity in batches).
pub struct LocalQueue<T> {
    capacity: usize,
    /// Boxed: an `ArrayQueue` is ~400 bytes even when empty (its head and tail are cache-padded),
    /// too much for each of P^2 channels per edge.
    slots: OnceLock<Box<ArrayQueue<Msg<T>>>>,
}

impl<T> LocalQueue<T> {
    /// Appends `m`, or hands it back when the queue is full.
    #[inline]
    pub fn push(&self, m: Msg<T>) -> Result<(), Msg<T>> {
        self.slots
            .get_or_init(|| Box::new(ArrayQueue::new(self.capacity)))
            .push(m)
    }

    /// Takes the oldest message, if any.
    #[inline]
    pub fn pop(&self) -> Option<Msg<T>> {
        self.slots.get()?.pop()
    }

    /// Messages queued now, and the capacity (for the live queue-fill metric: two atomic loads).
    pub fn fill(&self) -> (usize, usize) {
        (self.slots.get().map_or(0, |q| q.len()), self.capacity)
    }

    /// True once a message was ever sent (the slots are allocated).
    pub fn is_allocated(&self) -> bool {
        self.slots.get().is_some()
    }
}

/// A channel as both ends hold it.
pub type Channel<T> = Arc<LocalQueue<T>>;

/// A new channel holding at most `capacity` messages (at least 1).
pub fn channel<T>(capacity: usize) -> Channel<T> {
    Arc::new(LocalQueue {
        capacity: capacity.max(1),
        slots: OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_with_the_first_message_and_the_bound_holds() {
        let c = channel::<u8>(2);
        assert!(!c.is_allocated());
        assert!(c.pop().is_none());
        assert!(
            !c.is_allocated(),
            "polling an unused channel allocates nothing"
        );
        assert!(c.push(Msg::End).is_ok());
        assert!(c.is_allocated());
        assert!(c.push(Msg::End).is_ok());
        assert!(c.push(Msg::End).is_err(), "capacity 2 holds two messages");
        assert!(matches!(c.pop(), Some(Msg::End)));
    }
}
