//! One ping-pong between two processes, and the choice of the best of many (the Cloudprofiler
//! paper, sections 3.1 and 5.2, "MinRTT"; docs/papers.md): process A stamps `sent` (c_i) and sends
//! a ping, B stamps `remote` (c_j) on its own clock and answers, A stamps `received` (c_k). B's
//! reading happened while A's clock was between c_i and c_k, so it corresponds to A's
//! (c_i + c_k) / 2 give or take (c_k - c_i) / 2. The round trip with the smallest c_k - c_i gives
//! the tightest bound.

use serde::{Deserialize, Serialize};

/// One round trip: two stamps on the initiator's clock and one on the responder's, ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundTrip {
    /// Initiator's clock when the ping left (c_i).
    pub sent: u64,
    /// Responder's clock when it answered (c_j), on the responder's clock.
    pub remote: u64,
    /// Initiator's clock when the answer arrived (c_k).
    pub received: u64,
}

impl RoundTrip {
    /// A round trip, checked.
    ///
    /// # Errors
    /// `received` before `sent` (the initiator's clock went backwards, or the stamps are
    /// swapped).
    pub fn new(sent: u64, remote: u64, received: u64) -> Result<RoundTrip, String> {
        if received < sent {
            return Err(format!(
                "round trip received at {received} before it was sent at {sent} (ticks)"
            ));
        }
        Ok(RoundTrip {
            sent,
            remote,
            received,
        })
    }

    /// c_k - c_i, initiator ticks.
    pub fn rtt(&self) -> u64 {
        self.received.saturating_sub(self.sent)
    }

    /// The initiator's clock at the responder's stamp, best estimate: (c_i + c_k) / 2, ticks.
    pub fn midpoint(&self) -> f64 {
        self.sent as f64 + self.rtt() as f64 / 2.0
    }

    /// Half the round trip: how far the responder's stamp can be from [`RoundTrip::midpoint`],
    /// initiator ticks.
    pub fn half_rtt(&self) -> f64 {
        self.rtt() as f64 / 2.0
    }
}

/// The minimum-round-trip selection over a series of round trips.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinRtt {
    /// The round trip with the smallest RTT so far (the first of equals).
    pub best: Option<RoundTrip>,
    /// Round trips seen.
    pub rounds: u32,
}

impl MinRtt {
    /// Takes one more round trip into account.
    pub fn push(&mut self, r: RoundTrip) {
        self.rounds += 1;
        if self.best.is_none_or(|b| r.rtt() < b.rtt()) {
            self.best = Some(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_minimum_round_trip() {
        let mut m = MinRtt::default();
        for (i, rtt) in [50u64, 20, 30, 20].iter().enumerate() {
            let s = 1000 * i as u64;
            m.push(RoundTrip::new(s, 7, s + rtt).unwrap());
        }
        let b = m.best.unwrap();
        assert_eq!((b.sent, b.rtt(), m.rounds), (1000, 20, 4));
        assert_eq!(b.midpoint(), 1010.0);
        assert_eq!(b.half_rtt(), 10.0);
        assert!(RoundTrip::new(10, 0, 9).is_err());
    }
}
