//! The receiving side of a vertex instance: its input channels, local or remote, polled in turn.
//!
//! Between processes a channel is a credit-controlled stream of frames ([`crate::net::link`]);
//! the port decodes them, so a vertex sees the same [`Msg`]s either way.

use super::queue::Channel;
use crate::batch::Msg;
use crate::measure::traffic::MessageKind;
use crate::measure::traffic::Traffic;
use crate::net::link::RemoteIn;
use xorflow_tracking::MarkerAligner;

/// Decodes a frame of a remote channel (set where the element type is known to be serializable).
pub type Decoder<T> = fn(&[u8]) -> Result<Msg<T>, String>;

/// One input channel of a port.
pub enum InLink<T> {
    /// From a worker of this process.
    Local(Channel<T>),
    /// From a worker of another process.
    Remote(RemoteIn, Decoder<T>),
}

/// The receiving side of one vertex instance: the channels of all its input edges, polled in turn.
pub struct InputPort<T> {
    queues: Vec<InLink<T>>,
    next: usize,
    ends: usize,
    /// Index of the channel the last message came from.
    last: usize,
    /// Marker alignment over the channels (tracking `markers`).
    pub aligner: MarkerAligner,
    /// Checkpoint barriers with tracking `markers`: the highest epoch each channel has delivered
    /// a batch of (`INF` once it ended), and their minimum, the instance's epoch frontier
    /// (`progress/cut.rs`).
    pub epochs: MarkerAligner,
}

impl<T> InputPort<T> {
    /// A port reading local `queues`.
    pub fn new(queues: Vec<Channel<T>>) -> Self {
        Self::with_links(queues.into_iter().map(InLink::Local).collect())
    }

    /// A port reading `links`.
    pub fn with_links(queues: Vec<InLink<T>>) -> Self {
        InputPort {
            aligner: MarkerAligner::new(queues.len()),
            epochs: MarkerAligner::new(queues.len()),
            queues,
            next: 0,
            ends: 0,
            last: 0,
        }
    }

    /// The next message of any input channel, round-robin over channels so none starves (credit
    /// frames a remote channel sends back are counted in `traffic`).
    ///
    /// # Panics
    /// If a remote frame cannot be decoded: the remote process passed the handshake, so it runs different
    /// code; the worker fails with the reason.
    #[inline]
    pub fn pop(&mut self, traffic: &mut Traffic) -> Option<Msg<T>> {
        let n = self.queues.len();
        for i in 0..n {
            let q = (self.next + i) % n;
            let m = match &mut self.queues[q] {
                InLink::Local(c) => c.pop(),
                InLink::Remote(r, decode) => r.pop().map(|(f, credit)| {
                    if let Some(bytes) = credit {
                        traffic.record_frame(MessageKind::Control, bytes);
                    }
                    decode(&f).unwrap_or_else(|e| panic!("{e}"))
                }),
            };
            if let Some(m) = m {
                self.next = (q + 1) % n;
                self.last = q;
                if matches!(m, Msg::End) {
                    self.ends += 1;
                }
                return Some(m);
            }
        }
        None
    }

    /// One port reading the channels of both (a vertex with two input edges).
    pub fn merge(mut self, other: InputPort<T>) -> InputPort<T> {
        self.queues.extend(other.queues);
        InputPort::with_links(self.queues)
    }

    /// Index (in `0..senders()`) of the channel the last popped message came from.
    pub fn last_channel(&self) -> usize {
        self.last
    }

    /// True once every sender instance has sent its end-of-stream marker.
    pub fn all_ended(&self) -> bool {
        self.ends >= self.queues.len()
    }

    /// Batches queued on its local channels now, and their capacity (remote channels are
    /// left out: their queues are the network's).
    pub fn fill(&self) -> (usize, usize) {
        let mut f = (0, 0);
        for q in &self.queues {
            if let InLink::Local(c) = q {
                let (n, cap) = c.fill();
                f = (f.0 + n, f.1 + cap);
            }
        }
        f
    }

    /// Number of channels (sender instances) feeding this port.
    pub fn senders(&self) -> usize {
        self.queues.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::channel::queue::channel;
    use xorflow_core::Element;

    #[test]
    fn input_port_round_robins_and_counts_ends() {
        let a = channel::<u32>(4);
        let b = channel::<u32>(4);
        let mk = |t| {
            Msg::Data(Batch {
                tag: 0,
                lo: t,
                hi: t,
                epoch: 0,
                exact: true,
                markers: vec![],
                data: vec![Element::new(t, 0)],
            })
        };
        a.push(mk(1)).unwrap();
        a.push(mk(2)).unwrap();
        b.push(mk(3)).unwrap();
        b.push(Msg::End).unwrap();
        let mut p = InputPort::new(vec![a.clone(), b.clone()]);
        let mut traffic = Traffic::default();
        let mut seen = vec![];
        while let Some(m) = p.pop(&mut traffic) {
            match m {
                Msg::Data(b) => seen.push(b.lo),
                Msg::End => seen.push(99),
            }
        }
        assert_eq!(seen, vec![1, 3, 2, 99]);
        assert!(!p.all_ended());
        a.push(Msg::End).unwrap();
        p.pop(&mut traffic);
        assert!(p.all_ended());
    }
}
