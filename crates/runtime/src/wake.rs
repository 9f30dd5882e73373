//! Waking worker threads that parked while idle: senders, the tracker and the network thread call
//! [`Unparkers::unpark`] after handing a worker something to do. A worker parks either as a
//! thread (`std::thread::park_timeout`) or, when it reads its own connections
//! (`--net-reads worker`, `net/worker_reads.rs`), in `epoll` on its sockets and an eventfd
//! ([`PollParker`]). A leaf module, so the network (`net/`) and progress tracking (`progress/`)
//! need nothing else of the worker.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;

/// How one worker is woken.
pub enum Wake {
    /// It parks as a thread.
    Thread(Thread),
    /// It parks in `epoll` (`net/worker_reads.rs`).
    Poll(Arc<PollParker>),
}

/// Handles to wake worker threads parked while idle. Filled as the threads start.
#[derive(Default)]
pub struct Unparkers(pub Vec<OnceLock<Wake>>);

impl Unparkers {
    /// Room for `n` workers.
    pub fn new(n: usize) -> Self {
        Unparkers((0..n).map(|_| OnceLock::new()).collect())
    }

    /// Wakes worker `w` if it is parked (cheap when it is not: an atomic swap, no system call).
    #[inline]
    pub fn unpark(&self, w: usize) {
        match self.0[w].get() {
            Some(Wake::Thread(t)) => t.unpark(),
            Some(Wake::Poll(p)) => p.unpark(),
            None => {}
        }
    }
}

/// Nothing pending, the owner is not waiting.
const EMPTY: u8 = 0;
/// The owner waits in `epoll` (or is about to): an unpark must write the eventfd.
const PARKED: u8 = 1;
/// Woken while not waiting: the next wait returns at once.
const NOTIFIED: u8 = 2;

/// The wake-up of a worker that waits in `epoll` on its own sockets: the protocol of
/// `std::thread::park` (a token; an unpark before the park makes the park return at once) over an
/// eventfd the worker's `epoll` watches, written only when the worker is waiting.
pub struct PollParker {
    state: AtomicU8,
    fd: crate::net::epoll::EventFd,
}

impl PollParker {
    /// A parker with a new eventfd (add [`PollParker::fd`] to the worker's `epoll`).
    ///
    /// # Errors
    /// The eventfd cannot be created.
    pub fn new() -> std::io::Result<Self> {
        Ok(PollParker {
            state: AtomicU8::new(EMPTY),
            fd: crate::net::epoll::EventFd::new()?,
        })
    }

    /// The eventfd (readable after an unpark that found the owner waiting).
    pub fn fd(&self) -> &crate::net::epoll::EventFd {
        &self.fd
    }

    /// Wakes the owner: writes the eventfd if it is waiting, else leaves the token.
    #[inline]
    pub fn unpark(&self) {
        if self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            self.fd.wake();
        }
    }

    /// Called by the owner before it waits: false when a token was left (it must not block),
    /// which this consumes.
    #[inline]
    pub fn begin_wait(&self) -> bool {
        let parked =
            self.state
                .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire);
        if parked.is_err() {
            self.state.store(EMPTY, Ordering::Release);
        }
        parked.is_ok()
    }

    /// Called by the owner after it waited (woken or not).
    #[inline]
    pub fn end_wait(&self) {
        self.state.store(EMPTY, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `std::thread::park`'s token: an unpark before the wait makes the next wait not block
    /// (and writes nothing), an unpark during a wait writes the eventfd.
    #[test]
    fn a_poll_parker_keeps_one_token_and_writes_only_to_a_waiter() {
        let mut ep = crate::net::epoll::Epoll::new().unwrap();
        let p = Arc::new(PollParker::new().unwrap());
        ep.add(p.fd().raw(), 1, false).unwrap();
        p.unpark();
        p.unpark();
        assert!(!p.begin_wait(), "the token left by the unparks");
        assert_eq!(
            ep.wait(std::time::Duration::ZERO).unwrap().count(),
            0,
            "no write"
        );
        assert!(p.begin_wait(), "one token only");
        let q = p.clone();
        let t = std::thread::spawn(move || q.unpark());
        let woke: Vec<u64> = ep
            .wait(std::time::Duration::from_secs(10))
            .unwrap()
            .collect();
        p.end_wait();
        t.join().unwrap();
        assert_eq!(woke, [1]);
    }
}
