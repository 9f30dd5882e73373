//! The return-trip (ReT) baseline (the Cloudprofiler paper, sections 2.2 and 6.4; docs/papers.md):
//! the end event is sent back to the process where the start event happened and stamped there on
//! arrival, so both stamps come from one clock. The measured duration is too long by the return
//! transit, whose bound is the round trip of the ReT acknowledgement (the end side sends the ReTACK
//! and measures how long the start side takes to answer it), taken during the run, under load.

use serde::{Deserialize, Serialize};

/// One ReT measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReturnTrip {
    /// Start event, start side's clock, ticks.
    pub start: u64,
    /// The ReTACK's arrival back at the start side, start side's clock, ticks.
    pub returned: u64,
    /// Round trip of the ReTACK as the end side measured it, end side's ticks.
    pub ack_rtt: u64,
}

/// A ReT duration: the true duration lies in `[ns - bound_ns, ns]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetSpan {
    /// `returned - start`, ns of the start side.
    pub ns: f64,
    /// The ReTACK round trip, ns of the end side: how much `ns` may overstate the duration.
    pub bound_ns: f64,
}

impl ReturnTrip {
    /// The ReT duration, given the start and end sides' ticks per ns.
    pub fn span(&self, start_ticks_per_ns: f64, end_ticks_per_ns: f64) -> RetSpan {
        RetSpan {
            ns: self.returned.saturating_sub(self.start) as f64 / start_ticks_per_ns,
            bound_ns: self.ack_rtt as f64 / end_ticks_per_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_is_in_each_sides_ns() {
        let r = ReturnTrip {
            start: 1000,
            returned: 5000,
            ack_rtt: 600,
        };
        let s = r.span(2.0, 3.0);
        assert_eq!((s.ns, s.bound_ns), (2000.0, 200.0));
    }
}
