//! The send tag of an open output buffer, registered over the slot range of the elements it
//! holds so far (range tags: this crate's docs, "Range tags").
//!
//! A buffer stays open across many input batches, and every element derived from an input batch
//! must be covered by a registered send tag before that batch's receive tag (docs/design.md,
//! "trAcker requirements", requirement 1). So the buffer's tag is registered at every commit,
//! over the range `[lo, hi]` of its elements' slots; when the range has grown since, the new range
//! is registered under a *fresh* tag before the old registration is cancelled. Each half of that
//! pair leaves every slot the buffer occupies non-zero at the tracker, so the pair stays safe when
//! acks travel one at a time (`--ack-flush-count 0`); after both halves exactly the fresh tag
//! covers exactly the new range, which the receiver cancels by XOR-ing the batch's tag over the
//! same range once it has processed it.

use crate::tag::TagSource;
use crate::time::Slot;

/// The registration of one open buffer's send tag: none, or a tag over a slot range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeTag {
    /// The tag registered last (what the sealed batch carries), 0 before the first.
    tag: u64,
    /// The slot range it is registered over; `None` while nothing is (a new buffer).
    registered: Option<(Slot, Slot)>,
}

impl RangeTag {
    /// Nothing registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tag registered last: the one the buffer's batch carries when it is sealed.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// The range registered, if any.
    pub fn registered(&self) -> Option<(Slot, Slot)> {
        self.registered
    }

    /// Covers `range` (`lo <= hi`): nothing when it is the range already registered; else
    /// registers a fresh tag from `tags` over it and then cancels the old registration, calling
    /// `xor(lo, hi, tag)` for each half in that order (the caller XORs `tag` into every slot of
    /// `[lo, hi]` of the receiving component, and of the epoch component with checkpoints).
    pub fn register(
        &mut self,
        range: (Slot, Slot),
        tags: &mut TagSource,
        mut xor: impl FnMut(Slot, Slot, u64),
    ) {
        debug_assert!(range.0 <= range.1, "an empty range {range:?}");
        match self.registered {
            Some(r) if r == range => return,
            Some((lo, hi)) => {
                let fresh = tags.next_tag();
                xor(range.0, range.1, fresh);
                xor(lo, hi, self.tag);
                self.tag = fresh;
            }
            None => {
                self.tag = tags.next_tag();
                xor(range.0, range.1, self.tag);
            }
        }
        self.registered = Some(range);
    }

    /// The buffer was sealed and sent with [`RangeTag::tag`] over the range registered: the next
    /// buffer starts with nothing registered.
    pub fn sealed(&mut self) {
        self.registered = None;
    }
}
