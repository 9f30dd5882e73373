//! Ack entries and flushes: what a local acker sends to the tracker.

use crate::time::{Slot, Time};
use serde::{Deserialize, Serialize};

pub use xorflow_core::ComponentId;

/// Index of a source instance (each has its own heartbeats).
pub type SourceId = u32;

/// One XOR update of a component's difference map: `diff[component][slot] ^= xor`.
///
/// A range tag `x` over slots `[lo, hi]` is the two entries `(lo, x)` and `(hi + 1, x)`
/// (see [`crate::diff_map`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckEntry {
    /// Component whose table the entry updates.
    pub component: ComponentId,
    /// Difference-map key (a slot).
    pub slot: Slot,
    /// Value XOR-ed into the key.
    pub xor: u64,
}

impl AckEntry {
    /// Bytes of one entry on the wire (component u32 + slot u64 + xor u64).
    pub const WIRE_BYTES: u64 = 4 + 8 + 8;
}

/// A heartbeat: source `source` will emit nothing with time below `time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Source instance.
    pub source: SourceId,
    /// Lower bound on the times of the source's future elements (time units; `INF` = unregistered).
    pub time: Time,
}

impl Heartbeat {
    /// Bytes of one heartbeat on the wire (source u32 + time u64).
    pub const WIRE_BYTES: u64 = 4 + 8;
}

/// What one local-acker flush carries to the tracker, in the order it must be applied:
/// first the XOR-merged acks, then the heartbeats (a source's send tags never overtake its heartbeat).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flush {
    /// XOR-merged ack entries (no zero entries, no duplicate keys).
    pub acks: Vec<AckEntry>,
    /// The latest heartbeat of every source that heartbeated since the last flush.
    pub heartbeats: Vec<Heartbeat>,
}

impl Flush {
    /// True when the flush carries nothing.
    pub fn is_empty(&self) -> bool {
        self.acks.is_empty() && self.heartbeats.is_empty()
    }
}
