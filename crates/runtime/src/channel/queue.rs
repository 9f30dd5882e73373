//! The local channel: one bounded lock-free queue per (edge, sender worker, receiver worker).
//!
//! A full queue holds back exactly one producer instance (backpressure) and never blocks a thread
//! (`crossbeam_queue::ArrayQueue`).

use crate::batch::Msg;
use crossbeam_queue::ArrayQueue;
use std::sync::Arc;

/// A bounded single-producer single-consumer queue of messages (capacity in batches).
pub type Channel<T> = Arc<ArrayQueue<Msg<T>>>;

/// A new channel holding at most `capacity` messages.
pub fn channel<T>(capacity: usize) -> Channel<T> {
    Arc::new(ArrayQueue::new(capacity))
}
