//! The unit that crosses channels, locally and between processes: a batch of elements with its
//! trAcker tag, or an end-of-stream marker. A leaf module: the local queues (`channel/`) and the
//! network (`net/link.rs`) both carry it, neither depends on the other for it.

use xorflow_core::Element;
use xorflow_tracking::{Slot, Time};

/// A batch of elements with its trAcker tag: the sender XOR-ed `tag` into every slot of
/// `[lo, hi]` of the receiving vertex's component; the receiver does the same once the whole batch is
/// processed. Without tracking, `tag == 0`.
#[derive(Debug)]
pub struct Batch<T> {
    /// Random tag (0 without tracking).
    pub tag: u64,
    /// First slot of the tag's range.
    pub lo: Slot,
    /// Last slot of the tag's range (inclusive).
    pub hi: Slot,
    /// Checkpoint epoch of every element (0 without checkpoints): with checkpoints the tag is
    /// also XOR-ed into slot `epoch` of the receiver's epoch component
    /// (`crates/tracking/src/epochs.rs`), and a batch never mixes epochs.
    pub epoch: u64,
    /// Every element is tracked at its own time's slot: the sender registered the tag over the
    /// elements' own slots, not over a lineage range that an operator set (a window's hold slot,
    /// an input batch's range: `port/mod.rs`, `OutputPort::set_lineage`). An element-wise
    /// operator can then track its outputs by their own times too (`operators/unary.rs`), so
    /// ranges do not widen from stage to stage.
    pub exact: bool,
    /// Markers (tracking `markers` only) that follow the elements, in order: `Marker(t)` promises
    /// that nothing below `t` follows on this channel. Empty otherwise.
    pub markers: Vec<Time>,
    /// The elements.
    pub data: Vec<Element<T>>,
}

#[cfg(test)]
impl<T> Batch<T> {
    /// A batch of `data` without tracking (no tag, no epoch, no markers), for tests.
    pub(crate) fn untracked(data: Vec<Element<T>>) -> Self {
        Batch {
            tag: 0,
            lo: 0,
            hi: 0,
            epoch: 0,
            exact: true,
            markers: Vec::new(),
            data,
        }
    }
}

/// What a channel carries.
#[derive(Debug)]
pub enum Msg<T> {
    /// A batch of elements.
    Data(Batch<T>),
    /// End of stream from one sender instance (tracking `none` only).
    End,
}
