//! Key groups: every key hashes into one of a fixed number of groups, and each worker instance
//! owns a contiguous range of them. State is stored and snapshotted per key group, so when the
//! number of instances changes, whole groups move (Flink's key groups, "max parallelism").

/// A key group, `0..KeyGroups::count()`.
pub type KeyGroup = u16;

/// The key groups of a job: how many, and which instance owns which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGroups {
    count: u16,
}

impl KeyGroups {
    /// The default number of key groups (Flink's default max parallelism is 128 as well).
    pub const DEFAULT: KeyGroups = KeyGroups { count: 128 };

    /// `count` key groups.
    ///
    /// # Errors
    /// `count` is 0.
    pub fn new(count: u16) -> Result<Self, String> {
        if count == 0 {
            return Err("the number of key groups must be at least 1".into());
        }
        Ok(KeyGroups { count })
    }

    /// How many groups there are.
    pub fn count(self) -> u16 {
        self.count
    }

    /// The group of a key whose well-mixed 64-bit hash is `hash` (the upper bits pick it, so a
    /// hash whose low bits pick the instance does not bias the groups).
    #[inline]
    pub fn of_hash(self, hash: u64) -> KeyGroup {
        ((u128::from(hash) * u128::from(self.count)) >> 64) as KeyGroup
    }

    /// The instance (of `instances`) that owns `group`: groups are split into contiguous ranges.
    #[inline]
    pub fn owner(self, group: KeyGroup, instances: usize) -> usize {
        group as usize * instances / self.count as usize
    }

    /// The groups `instance` (of `instances`) owns, a contiguous range.
    pub fn owned(self, instance: usize, instances: usize) -> std::ops::Range<KeyGroup> {
        let n = self.count as usize;
        let start = (instance * n).div_ceil(instances);
        let end = ((instance + 1) * n).div_ceil(instances);
        start as KeyGroup..end.min(n) as KeyGroup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_ranges_partition_the_groups_and_agree_with_owner() {
        for count in [1u16, 7, 128, 1000] {
            let kg = KeyGroups::new(count).unwrap();
            for instances in [1usize, 2, 3, 5, 128] {
                let mut next = 0;
                for i in 0..instances {
                    let r = kg.owned(i, instances);
                    assert_eq!(r.start, next, "contiguous");
                    for g in r.clone() {
                        assert_eq!(
                            kg.owner(g, instances),
                            i,
                            "count {count} instances {instances}"
                        );
                    }
                    next = r.end;
                }
                assert_eq!(next, count);
            }
        }
    }

    #[test]
    fn hashes_spread_over_every_group() {
        let kg = KeyGroups::DEFAULT;
        let mut seen = vec![0u32; 128];
        for i in 0..100_000u64 {
            seen[kg.of_hash(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (600..=960).contains(&n)), "{seen:?}");
        assert_eq!(kg.of_hash(u64::MAX), 127);
        assert!(KeyGroups::new(0).is_err());
    }
}
