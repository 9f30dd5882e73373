//! The Cloudprofiler paper's measurement toolkit, used by the runtime and the bench stand:
//!
//! * [`log`]: named event-log channels whose handler (null, ID, buffered, counter, XoY sampling,
//!   downsample, first/last, ReT) is chosen by name at run time, and a reader for their files;
//! * [`clock`]: a cheap per-process clock (the TSC, or `CLOCK_MONOTONIC_RAW`) and the alignment
//!   of two processes' clocks by MinRTT ping-pongs, with the error bound of every converted
//!   duration.
//!
//! The paper and what xorflow takes from it: docs/papers.md, "The Cloudprofiler paper".

pub mod clock;
pub mod log;
