//! Waking worker threads that parked while idle: senders, the tracker and the network thread call
//! [`Unparkers::unpark`] after handing a worker something to do. A leaf module, so the network
//! (`net/`) and progress tracking (`progress/`) need nothing else of the worker.

use std::sync::OnceLock;
use std::thread::Thread;

/// Handles to wake worker threads parked while idle. Filled as the threads start.
#[derive(Default)]
pub struct Unparkers(pub Vec<OnceLock<Thread>>);

impl Unparkers {
    /// Room for `n` workers.
    pub fn new(n: usize) -> Self {
        Unparkers((0..n).map(|_| OnceLock::new()).collect())
    }

    /// Wakes worker `w` if it is parked (cheap when it is not).
    #[inline]
    pub fn unpark(&self, w: usize) {
        if let Some(t) = self.0[w].get() {
            t.unpark();
        }
    }
}
