//! Elements: a payload with a logical time.

use crate::Time;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A data element: `data` with logical `time` (set by the source, inherited by every element derived
/// from it, e.g. by `map` or `flat_map`). 8 bytes of time plus the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Element<T> {
    /// Logical time (job's unit: the flights job uses seconds since the Unix epoch).
    pub time: Time,
    /// Payload.
    pub data: T,
}

impl<T> Element<T> {
    /// An element with the given time and payload.
    #[inline]
    pub fn new(time: Time, data: T) -> Self {
        Element { time, data }
    }
}

/// What a stream can carry: cloneable (a stream feeding several vertices is copied), sendable
/// between worker threads, and serializable with serde, because elements crossing a process
/// boundary are encoded (only there). Implemented for every such type.
pub trait Data: Clone + Send + Serialize + DeserializeOwned + 'static {}

impl<T: Clone + Send + Serialize + DeserializeOwned + 'static> Data for T {}
