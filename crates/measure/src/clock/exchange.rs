//! The ping-pong protocol between two processes, without I/O: the caller moves [`Message`]s over
//! whatever connection it has and this keeps the stamps and the minimum round trip (the
//! Cloudprofiler paper, sections 5.2 and 6.5: "each pair exchanges measurement packets 100 times to
//! select MinRTT"; docs/papers.md).
//!
//! Both sides run it at once on one pair of connections: each sends its pings one at a time
//! (the next when the previous answer is in), answers every ping of the other side at once, and
//! sends [`Message::Done`] after its last answer arrived. The exchange is over for a side once it
//! has sent Done and received the other's: the other has then answered all of its pings and
//! will send no more.

use super::sample::{MinRtt, RoundTrip};
use std::sync::Arc;

/// Pings each side sends per phase by default (the paper's 100).
pub const ROUNDS: u32 = 100;

/// A clock to stamp with, ticks (the process's [`super::now_ordered`], or a simulated one).
pub type TickFn = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What the two sides send each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// Ping number `seq` of the sender.
    Ping {
        /// From 0.
        seq: u32,
    },
    /// The answer to ping `seq`, stamped on the answering side's clock.
    Pong {
        /// The ping answered.
        seq: u32,
        /// Answering side's clock when it answered, ticks (c_j).
        stamp: u64,
    },
    /// The sender's pings are all answered; it sends no more pings.
    Done,
}

/// One side of the exchange with one other process.
pub struct Exchange {
    rounds: u32,
    clock: TickFn,
    /// The ping waiting for its answer and when it left (c_i).
    outstanding: Option<(u32, u64)>,
    next_seq: u32,
    min: MinRtt,
    done_sent: bool,
    peer_done: bool,
}

impl Exchange {
    /// An exchange of `rounds` pings from this side, stamped with `clock`.
    pub fn new(rounds: u32, clock: TickFn) -> Exchange {
        Exchange {
            rounds,
            clock,
            outstanding: None,
            next_seq: 0,
            min: MinRtt::default(),
            done_sent: false,
            peer_done: false,
        }
    }

    /// The first message to send: ping 0 (or Done when `rounds` is 0).
    pub fn start(&mut self) -> Message {
        self.next_ping()
    }

    fn next_ping(&mut self) -> Message {
        if self.next_seq >= self.rounds {
            self.done_sent = true;
            return Message::Done;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let m = Message::Ping { seq };
        // Stamped last, just before the caller sends it.
        self.outstanding = Some((seq, (self.clock)()));
        m
    }

    /// Handles a message from the other side; returns what to send back, if anything. Call it
    /// as soon as the message is read: an answer is stamped on arrival.
    ///
    /// # Errors
    /// A message out of protocol (an answer to no outstanding ping, a ping after Done), naming
    /// it.
    pub fn on_message(&mut self, m: Message) -> Result<Option<Message>, String> {
        match m {
            Message::Pong { seq, stamp } => {
                let arrived = (self.clock)();
                let Some((want, sent)) = self.outstanding.take() else {
                    return Err(format!("clock answer {seq} to no outstanding ping"));
                };
                if seq != want {
                    return Err(format!("clock answer {seq}, expected {want}"));
                }
                self.min.push(RoundTrip::new(sent, stamp, arrived)?);
                Ok(Some(self.next_ping()))
            }
            Message::Ping { seq } => {
                if self.peer_done {
                    return Err(format!("clock ping {seq} after the other side's Done"));
                }
                Ok(Some(Message::Pong {
                    seq,
                    stamp: (self.clock)(),
                }))
            }
            Message::Done => {
                if self.peer_done {
                    return Err("a second clock Done".into());
                }
                self.peer_done = true;
                Ok(None)
            }
        }
    }

    /// True once this side sent Done and the other side's Done arrived.
    pub fn finished(&self) -> bool {
        self.done_sent && self.peer_done
    }

    /// The minimum round trip of this side's pings so far.
    pub fn result(&self) -> MinRtt {
        self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Two sides driven in lock step over two in-memory queues; the clock advances 7 ticks per
    /// reading.
    #[test]
    fn both_sides_finish_with_their_rounds() {
        let t = Arc::new(AtomicU64::new(1000));
        let clock: TickFn = {
            let t = t.clone();
            Arc::new(move || t.fetch_add(7, Ordering::Relaxed))
        };
        let mut a = Exchange::new(5, clock.clone());
        let mut b = Exchange::new(3, clock);
        let mut to_b = vec![a.start()];
        let mut to_a = vec![b.start()];
        let mut steps = 0;
        while !(a.finished() && b.finished()) {
            steps += 1;
            assert!(steps < 100, "no progress");
            for m in std::mem::take(&mut to_b) {
                to_a.extend(b.on_message(m).unwrap());
            }
            for m in std::mem::take(&mut to_a) {
                to_b.extend(a.on_message(m).unwrap());
            }
        }
        assert_eq!(a.result().rounds, 5);
        assert_eq!(b.result().rounds, 3);
        let best = a.result().best.unwrap();
        assert!(best.sent < best.remote && best.remote < best.received);
        assert!(a.on_message(Message::Ping { seq: 9 }).is_err());
        assert!(a.on_message(Message::Pong { seq: 9, stamp: 0 }).is_err());
    }
}
