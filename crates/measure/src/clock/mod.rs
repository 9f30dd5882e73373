//! Clock reading and alignment across processes (the Cloudprofiler paper, sections 3, 5 and 6: its
//! reference TSC; docs/papers.md).
//!
//! One concept per file:
//! * [`source`]: this process's tick source ([`now`]: the TSC when it is invariant, else
//!   `CLOCK_MONOTONIC_RAW`) and its calibration ([`ticks_per_ns`]);
//! * [`skew`]: a synthetic per-process offset and rate error, a test option
//!   ([`skew::SKEW_ENV`]);
//! * [`anchor`]: pairs of readings tying the runtime's `CLOCK_MONOTONIC_RAW` ns to the ticks;
//! * [`sample`]: one ping-pong round trip and the minimum-round-trip (MinRTT) choice;
//! * [`exchange`]: the ping-pong protocol between two processes, without I/O;
//! * [`map`]: the linear map between two clocks from the before and after round trips, with the
//!   error bound of every converted value;
//! * [`alignment`]: a run's clocks aligned to process 0, and the four duration cases;
//! * [`ret`]: the return-trip (ReT) baseline.
//!
//! docs/measurement.md ("Clock alignment") gives the method, its limits and the validation.

pub mod alignment;
pub mod anchor;
pub mod exchange;
pub mod map;
pub mod ret;
pub mod sample;
pub mod skew;
pub mod source;

pub use alignment::{Alignment, Case, PairAlignment, PairSamples, ProcessClock, Span, Stamp};
pub use source::{clock, init, kind, now, now_ordered, now_raw, skew, ticks_per_ns, ClockKind};

/// This process's [`ProcessClock`] (kind, calibrated ticks per ns, synthetic skew) as `process`.
/// May wait up to 10 ms the first time (calibration, [`ticks_per_ns`]).
pub fn process_clock(process: usize) -> ProcessClock {
    ProcessClock {
        process,
        kind: kind(),
        ticks_per_ns: ticks_per_ns(),
        skew: skew(),
        monotonic: None,
    }
}
