//! Logical time: the one definition every crate uses (the tracker re-exports it).

/// Logical time of an element: event time or sequence number, in the job's own unit (the flights
/// job uses seconds since the Unix epoch, the chain benchmark element sequence numbers).
pub type Time = u64;

/// "Plus infinity" for times, slots and frontiers: nothing will ever arrive; used by sources that
/// unregistered and by frontiers of components that are done (end of stream).
pub const INF: Time = u64::MAX;
