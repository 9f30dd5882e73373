//! The sharded tracker's slot partitioning (docs/design.md, requirement 6): shard `k` of `S` owns the
//! slots `s` with `s mod S == k`, numbered locally as `l = s div S`.
//!
//! A flush holds XOR *difference points* (a range tag `[lo, hi]` is a point at `lo` and one at
//! `hi + 1`; a slot's XOR is the XOR of all points at or below it). Restricted to one shard's slots,
//! the same prefix sums come from mapping every global point `p` to the local point
//! `ceil((p - k) / S)`: local slot `l` then sums exactly the points `p <= l * S + k`. A point pair
//! that spans none of shard `k`'s slots maps to one local key twice and cancels, so a one-slot range
//! reaches one shard only, and a wide range at most two points per shard ([`split_flush`]).
//!
//! Heartbeats go to every shard unchanged (time units). Each shard runs an ordinary
//! [`crate::Tracker`] over its local slots; its frontier "first incomplete local slot `l`" means
//! every owned global slot below `l * S + k` is complete, so the global frontier a worker may act on
//! is the minimum over shards of the latest reported frontiers ([`crate::FrontierCombiner`]).

use crate::ack::{AckEntry, ComponentId, Flush};
use crate::time::{Slot, INF};
use rustc_hash::FxHashMap;

/// Which slots a tracker owns: `count` shards, this is shard `index`. `ShardMap::SINGLE` owns all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardMap {
    /// Number of shards S (at least 1).
    pub count: u64,
    /// This shard's index k in `0..S`.
    pub index: u64,
}

impl ShardMap {
    /// One tracker owning every slot.
    pub const SINGLE: ShardMap = ShardMap { count: 1, index: 0 };

    /// Shard `index` of `count`.
    ///
    /// # Panics
    /// If `count == 0` or `index >= count`.
    pub fn new(count: u64, index: u64) -> Self {
        assert!(count > 0 && index < count, "shard {index} of {count}");
        ShardMap { count, index }
    }

    /// The owner of global slot `s`.
    #[inline]
    pub fn owner(count: u64, s: Slot) -> u64 {
        s % count
    }

    /// The local key of global difference point `p` (`INF` stays `INF`): the first local slot whose
    /// global slot is at or above `p`.
    #[inline]
    pub fn local_point(self, p: Slot) -> Slot {
        if p == INF {
            INF
        } else if p <= self.index {
            0
        } else {
            (p - self.index).div_ceil(self.count)
        }
    }

    /// A global slot bound "every slot below `b`" as a local bound: the number of owned slots below
    /// `b`. Same formula as [`ShardMap::local_point`].
    #[inline]
    pub fn local_bound(self, b: Slot) -> Slot {
        self.local_point(b)
    }

    /// The local slots this shard owns within global slots `[lo, hi]`, if any.
    #[inline]
    pub fn local_range(self, lo: Slot, hi: Slot) -> Option<(Slot, Slot)> {
        let a = self.local_point(lo);
        let b = if hi >= INF - 1 {
            INF
        } else {
            self.local_point(hi + 1)
        };
        (b > a).then(|| (a, b - 1))
    }

    /// The global slot of local slot `l` (`INF` stays `INF`).
    #[inline]
    pub fn global(self, l: Slot) -> Slot {
        if l == INF {
            INF
        } else {
            l.saturating_mul(self.count).saturating_add(self.index)
        }
    }
}

/// Splits a flush of global difference points into one flush per shard (index = shard), in local
/// keys, XOR-merged per key with zero entries dropped; every shard gets all heartbeats. Order within a
/// flush does not matter (XOR commutes); the pieces must travel to their shards in the order the
/// flushes were made (FIFO per acker and shard).
pub fn split_flush(flush: &Flush, shards: u64) -> Vec<Flush> {
    if shards == 1 {
        return vec![flush.clone()];
    }
    let mut maps: Vec<FxHashMap<(ComponentId, Slot), u64>> =
        vec![FxHashMap::default(); shards as usize];
    for e in &flush.acks {
        for (k, m) in maps.iter_mut().enumerate() {
            let key = ShardMap::new(shards, k as u64).local_point(e.slot);
            let v = m.entry((e.component, key)).or_insert(0);
            *v ^= e.xor;
        }
    }
    maps.into_iter()
        .map(|m| {
            let mut acks: Vec<AckEntry> = m
                .into_iter()
                .filter(|&(_, x)| x != 0)
                .map(|((component, slot), xor)| AckEntry {
                    component,
                    slot,
                    xor,
                })
                .collect();
            acks.sort_unstable_by_key(|a| (a.component, a.slot));
            Flush {
                acks,
                heartbeats: flush.heartbeats.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff_map::DiffMap;
    use proptest::prelude::*;

    #[test]
    fn local_points_and_bounds() {
        let m = ShardMap::new(3, 1); // owns 1, 4, 7, ...
        assert_eq!(m.local_point(0), 0);
        assert_eq!(m.local_point(1), 0);
        assert_eq!(m.local_point(2), 1);
        assert_eq!(m.local_point(4), 1);
        assert_eq!(m.local_point(5), 2);
        assert_eq!(m.global(2), 7);
        assert_eq!(m.local_bound(INF), INF);
        assert_eq!(m.global(INF), INF);
        // Slots below 5 owned by shard 1: 1 and 4.
        assert_eq!(m.local_bound(5), 2);
        assert_eq!(ShardMap::SINGLE.local_point(17), 17);
        assert_eq!(m.local_range(2, 3), None);
        assert_eq!(m.local_range(1, 7), Some((0, 2)));
        assert_eq!(m.local_range(5, 9), Some((2, 2)));
    }

    #[test]
    fn one_slot_range_reaches_only_its_owner() {
        let mut f = Flush::default();
        f.acks.push(AckEntry {
            component: 0,
            slot: 7,
            xor: 9,
        });
        f.acks.push(AckEntry {
            component: 0,
            slot: 8,
            xor: 9,
        });
        let parts = split_flush(&f, 3);
        assert!(parts[0].acks.is_empty());
        assert_eq!(parts[1].acks.len(), 2); // 7 mod 3 == 1
        assert!(parts[2].acks.is_empty());
    }

    proptest! {
        /// Every shard's local table equals the global table restricted to its slots.
        #[test]
        fn split_tables_equal_global_table_restricted(
            ranges in proptest::collection::vec((0u64..60, 0u64..20, 1u64..u64::MAX), 0..20),
            shards in 1u64..5,
        ) {
            let mut global = DiffMap::new();
            let mut f = Flush::default();
            for &(lo, len, x) in &ranges {
                global.xor_range(lo, lo + len, x);
                f.acks.push(AckEntry { component: 0, slot: lo, xor: x });
                f.acks.push(AckEntry { component: 0, slot: lo + len + 1, xor: x });
            }
            for (k, part) in split_flush(&f, shards).iter().enumerate() {
                let m = ShardMap::new(shards, k as u64);
                let mut local = DiffMap::new();
                for e in &part.acks {
                    local.xor_point(e.slot, e.xor);
                }
                for l in 0..100 / shards {
                    prop_assert_eq!(local.slot_xor(l), global.slot_xor(m.global(l)));
                }
            }
        }
    }
}
