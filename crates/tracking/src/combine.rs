//! Combining per-shard frontiers at a worker (docs/design.md, requirement 6).
//!
//! Each shard reports, per component, the frontier over the slots it owns. The global frontier a
//! worker may act on is the minimum over shards of the latest report of each; it starts at 0 and,
//! since each shard's reports only rise, never moves back.

use crate::ack::ComponentId;
use crate::time::Time;
use crate::tracker::FrontierUpdate;

/// Latest frontier per (component, shard) and their minimum per component.
#[derive(Clone, Debug)]
pub struct FrontierCombiner {
    /// `latest[c][k]`: shard `k`'s latest frontier of component `c`, time units.
    latest: Vec<Vec<Time>>,
    combined: Vec<Time>,
}

impl FrontierCombiner {
    /// A combiner for `components` components tracked by `shards` shards (at least 1).
    pub fn new(components: usize, shards: usize) -> Self {
        assert!(shards > 0, "at least one tracker shard");
        FrontierCombiner {
            latest: vec![vec![0; shards]; components],
            combined: vec![0; components],
        }
    }

    /// Applies shard `shard`'s report that `u.component`'s frontier is `u.frontier`. Returns the
    /// component's new global frontier if it rose.
    ///
    /// # Errors
    /// An unknown component or shard, naming it.
    pub fn update(&mut self, shard: usize, u: FrontierUpdate) -> Result<Option<Time>, String> {
        let n = self.latest.len();
        let row = self.latest.get_mut(u.component as usize).ok_or_else(|| {
            format!(
                "frontier for unknown component {} (job has {n})",
                u.component
            )
        })?;
        let s = row.len();
        let f = row
            .get_mut(shard)
            .ok_or_else(|| format!("frontier from unknown tracker shard {shard} (job has {s})"))?;
        *f = (*f).max(u.frontier);
        let min = row.iter().copied().min().unwrap_or(0);
        let c = &mut self.combined[u.component as usize];
        if min > *c {
            *c = min;
            Ok(Some(min))
        } else {
            Ok(None)
        }
    }

    /// The global frontier of `c`, time units.
    pub fn frontier(&self, c: ComponentId) -> Time {
        self.combined[c as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(component: ComponentId, frontier: Time) -> FrontierUpdate {
        FrontierUpdate {
            component,
            frontier,
        }
    }

    #[test]
    fn minimum_of_latest_per_shard() {
        let mut c = FrontierCombiner::new(2, 2);
        assert_eq!(c.update(0, up(1, 50)).unwrap(), None); // shard 1 still at 0
        assert_eq!(c.update(1, up(1, 30)).unwrap(), Some(30));
        assert_eq!(c.update(1, up(1, 90)).unwrap(), Some(50));
        assert_eq!(c.update(1, up(1, 10)).unwrap(), None); // stale report ignored
        assert_eq!(c.frontier(1), 50);
        assert_eq!(c.frontier(0), 0);
        assert!(c.update(2, up(0, 1)).is_err());
        assert!(c.update(0, up(7, 1)).is_err());
    }
}
