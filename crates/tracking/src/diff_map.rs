//! The XOR difference map: one tag over a whole slot range in two point updates.
//!
//! A component's per-slot XORs `acc[s]` are stored as differences `d[k]` with
//! `acc[s] = d[0] ^ d[1] ^ ... ^ d[s]`. XOR-ing `x` into every slot of `[lo, hi]` is then
//! `d[lo] ^= x; d[hi + 1] ^= x`. Zero differences are removed, so the map is empty exactly when
//! every slot's XOR is zero, and its first key is the first slot whose XOR is non-zero:
//! every slot below the first key has `acc = 0`, and `acc[first] = d[first] != 0`.
//! That first key is the table's frontier, found in O(log n).

use crate::time::{Slot, INF};
use std::collections::BTreeMap;

/// An ordered XOR difference map over slots (the tracker's per-component table).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffMap {
    diffs: BTreeMap<Slot, u64>,
}

impl DiffMap {
    /// An empty map: every slot complete.
    pub fn new() -> Self {
        Self::default()
    }

    /// XOR `x` into the difference at `key`, removing it when it becomes zero.
    #[inline]
    pub fn xor_point(&mut self, key: Slot, x: u64) {
        use std::collections::btree_map::Entry;
        if x == 0 {
            return;
        }
        match self.diffs.entry(key) {
            Entry::Vacant(v) => {
                v.insert(x);
            }
            Entry::Occupied(mut o) => {
                let nv = *o.get() ^ x;
                if nv == 0 {
                    o.remove();
                } else {
                    *o.get_mut() = nv;
                }
            }
        }
    }

    /// XOR `x` into every slot of `[lo, hi]` (inclusive). A range that reaches `INF` needs no upper
    /// difference: nothing lies above it.
    pub fn xor_range(&mut self, lo: Slot, hi: Slot, x: u64) {
        debug_assert!(lo <= hi);
        self.xor_point(lo, x);
        if hi < INF - 1 {
            self.xor_point(hi + 1, x);
        }
    }

    /// The first slot whose XOR is non-zero, or `INF` when all are zero.
    #[inline]
    pub fn first_open(&self) -> Slot {
        self.diffs.keys().next().copied().unwrap_or(INF)
    }

    /// The XOR of slot `s` (prefix XOR of the differences up to `s`); O(n), for tests and debugging.
    pub fn slot_xor(&self, s: Slot) -> u64 {
        self.diffs.range(..=s).fold(0, |a, (_, v)| a ^ v)
    }

    /// Number of stored (non-zero) differences.
    pub fn len(&self) -> usize {
        self.diffs.len()
    }

    /// True when every slot's XOR is zero.
    pub fn is_empty(&self) -> bool {
        self.diffs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_xor_cancels_and_frontier_is_first_key() {
        let mut m = DiffMap::new();
        assert_eq!(m.first_open(), INF);
        m.xor_range(5, 9, 0xabc);
        assert_eq!(m.first_open(), 5);
        assert_eq!(m.slot_xor(4), 0);
        assert_eq!(m.slot_xor(5), 0xabc);
        assert_eq!(m.slot_xor(9), 0xabc);
        assert_eq!(m.slot_xor(10), 0);
        m.xor_range(7, 12, 0x11);
        assert_eq!(m.slot_xor(8), 0xabc ^ 0x11);
        m.xor_range(5, 9, 0xabc);
        assert_eq!(m.first_open(), 7);
        m.xor_range(7, 12, 0x11);
        assert!(m.is_empty());
    }

    #[test]
    fn overlapping_ranges_with_same_tag_cancel_only_when_both_sides_match() {
        let mut m = DiffMap::new();
        m.xor_range(0, 3, 7);
        m.xor_range(0, 4, 7); // a different range with the same tag does not cancel slot 4
        assert_eq!(m.first_open(), 4);
        assert_eq!(m.slot_xor(4), 7);
        assert_eq!(m.slot_xor(5), 0);
    }

    #[test]
    fn range_to_infinity() {
        let mut m = DiffMap::new();
        m.xor_range(3, INF, 9);
        assert_eq!(m.first_open(), 3);
        m.xor_range(3, INF, 9);
        assert!(m.is_empty());
    }
}
