//! The tracker (docs/design.md, requirement 5): per-component slot tables, heartbeats, upstream bounds
//! and the frontier computation.
//!
//! Slot `s` of component `c` is complete when its XOR is zero, it lies below the minimum heartbeat
//! over all sources, and every upstream component has completed it. The frontier of `c` is its first
//! incomplete slot; it is reported in time units (`slot * g`): `Frontier(c, t)` means every element
//! with time `< t` has been fully processed by `c` and every component upstream of `c`.

use crate::ack::{ComponentId, Flush};
use crate::diff_map::DiffMap;
use crate::epochs::{EpochDomain, EpochHeartbeats};
use crate::heartbeats::Heartbeats;
use crate::shard::ShardMap;
use crate::time::{Granularity, Slot, Time, INF};
use crate::topology::Topology;

/// A frontier notification: every element with time `< frontier` (time units) is fully processed
/// by `component` and everything upstream of it. `frontier == INF`: the component is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontierUpdate {
    /// The component whose frontier advanced.
    pub component: ComponentId,
    /// New frontier, time units.
    pub frontier: Time,
}

impl FrontierUpdate {
    /// Bytes of one notification on the wire (component u32 + time u64).
    pub const WIRE_BYTES: u64 = 4 + 8;
}

/// The centralized tracking agent's state. Apply flushes in the FIFO order of each acker, then call
/// [`Tracker::advance`] to learn which frontiers moved.
#[derive(Debug)]
pub struct Tracker {
    granularity: Granularity,
    /// The slots this tracker owns (all of them unless it is a shard).
    shard: ShardMap,
    topology: Topology,
    tables: Vec<DiffMap>,
    heartbeats: Heartbeats,
    /// Checkpoint epochs, tracked in components `C..2C` (`epochs.rs`), if the job checkpoints.
    epochs: Option<EpochHeartbeats>,
    /// Last reported frontier per component, local slots.
    frontiers: Vec<Slot>,
    /// Times a computed frontier came out below the reported one (a tag registered below a
    /// published frontier); see [`Tracker::regressions`].
    regressions: u64,
    /// Epoch frontiers computed below the reported one (see [`Tracker::epoch_regressions`]).
    epoch_regressions: u64,
    /// The shard's starting frontiers have been reported (see [`Tracker::advance`]).
    announced: bool,
}

impl Tracker {
    /// A tracker for `topology` with `sources` source instances (all registered at time 0).
    pub fn new(granularity: Granularity, topology: Topology, sources: usize) -> Self {
        Self::sharded(granularity, topology, sources, ShardMap::SINGLE)
    }

    /// Shard `shard` of a sharded tracker (docs/design.md, requirement 6): it receives the flush pieces
    /// of [`crate::split_flush`] (local slot keys) and every heartbeat, and reports frontiers in
    /// global time units, meaning "every slot this shard owns below the frontier is complete".
    pub fn sharded(
        granularity: Granularity,
        topology: Topology,
        sources: usize,
        shard: ShardMap,
    ) -> Self {
        let n = topology.len();
        Tracker {
            granularity,
            shard,
            topology,
            tables: vec![DiffMap::new(); n],
            heartbeats: Heartbeats::new(sources),
            epochs: None,
            frontiers: vec![0; n],
            regressions: 0,
            epoch_regressions: 0,
            announced: false,
        }
    }

    /// Also tracks checkpoint epochs (`epochs.rs`): components `C..2C` are the epoch components,
    /// heartbeat ids from `S` on are epoch heartbeats. Their frontiers are reported in epochs.
    ///
    /// # Panics
    /// If `domain` does not describe this tracker's components and sources.
    pub fn with_epochs(mut self, domain: EpochDomain) -> Self {
        let n = self.topology.len();
        assert_eq!(domain.components, n, "epoch domain of {n} components");
        assert!(domain.emitters.iter().all(|&c| (c as usize) < n));
        self.tables = vec![DiffMap::new(); 2 * n];
        self.frontiers = vec![0; 2 * n];
        self.epochs = Some(EpochHeartbeats::new(domain));
        self
    }

    /// Applies one flush: acks first, then heartbeats.
    ///
    /// # Errors
    /// An ack for an unknown component or a heartbeat from an unknown source; the rest of the flush
    /// is still applied, and the error names the first offender.
    pub fn apply(&mut self, flush: &Flush) -> Result<(), String> {
        let mut err = None;
        for e in &flush.acks {
            match self.tables.get_mut(e.component as usize) {
                Some(t) => t.xor_point(e.slot, e.xor),
                None => {
                    err.get_or_insert_with(|| {
                        format!(
                            "ack for unknown component {} (job has {})",
                            e.component,
                            self.frontiers.len()
                        )
                    });
                }
            }
        }
        for h in &flush.heartbeats {
            let epoch = match &mut self.epochs {
                Some(ep) => ep.apply(h.source, h.time),
                None => Ok(false),
            };
            let r = match epoch {
                Ok(true) => Ok(()),
                Ok(false) => self.heartbeats.apply(h.source, h.time),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                err.get_or_insert(e);
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Recomputes every component's frontier (in topological order) and returns those that advanced,
    /// in time units. Frontiers never move back: a lower computed value is counted in
    /// [`Tracker::regressions`] and not reported.
    pub fn advance(&mut self) -> Vec<FrontierUpdate> {
        let mut out = self.announce();
        let hb = self
            .shard
            .local_bound(self.granularity.slots_below(self.heartbeats.min()));
        for c in 0..self.topology.len() {
            let mut f = self.tables[c].first_open().min(hb);
            for &u in self.topology.upstream(c as ComponentId) {
                f = f.min(self.frontiers[u as usize]);
            }
            let old = self.frontiers[c];
            if f > old {
                self.frontiers[c] = f;
                out.push(FrontierUpdate {
                    component: c as ComponentId,
                    frontier: self.granularity.start(self.shard.global(f)),
                });
            } else if f < old {
                self.regressions += 1;
            }
        }
        self.advance_epochs(&mut out);
        out
    }

    /// Shard `k > 0` starts at local slot 0, which already means "every owned slot below global
    /// slot `k` is complete" (it owns none): reported once, so a worker's minimum over shards is
    /// not held at 0 until this shard's first own slot completes.
    fn announce(&mut self) -> Vec<FrontierUpdate> {
        if self.announced || self.shard.index == 0 {
            return Vec::new();
        }
        self.announced = true;
        let n = self.topology.len();
        let g = self.shard.global(0);
        (0..self.frontiers.len())
            .filter(|&c| self.frontiers[c] == 0)
            .map(|c| FrontierUpdate {
                component: c as ComponentId,
                frontier: if c < n { self.granularity.start(g) } else { g },
            })
            .collect()
    }

    /// The epoch components' frontiers: like the event-time ones, with epochs for slots (no
    /// granularity), capped by the sources' epoch heartbeats and, downstream of each emitting
    /// component, by its emitters' heartbeats.
    fn advance_epochs(&mut self, out: &mut Vec<FrontierUpdate>) {
        let Some(ep) = &self.epochs else {
            return;
        };
        let n = self.topology.len();
        let hb = self.shard.local_bound(ep.sources_min());
        for c in 0..n {
            let mut f = self.tables[n + c].first_open().min(hb);
            for &u in self.topology.upstream(c as ComponentId) {
                let emit = self.shard.local_bound(ep.emit_cap(u));
                f = f.min(self.frontiers[n + u as usize]).min(emit);
            }
            let old = self.frontiers[n + c];
            if f > old {
                self.frontiers[n + c] = f;
                out.push(FrontierUpdate {
                    component: (n + c) as ComponentId,
                    frontier: self.shard.global(f),
                });
            } else if f < old {
                self.epoch_regressions += 1;
            }
        }
    }

    /// Current frontier of `c`, time units (an epoch component's: epochs).
    pub fn frontier(&self, c: ComponentId) -> Time {
        let g = self.shard.global(self.frontiers[c as usize]);
        if (c as usize) < self.topology.len() {
            self.granularity.start(g)
        } else {
            g
        }
    }

    /// True when every component's frontier is `INF`: all sources unregistered, nothing in flight.
    pub fn is_done(&self) -> bool {
        self.frontiers.iter().all(|&f| f == INF)
    }

    /// Number of components.
    pub fn components(&self) -> usize {
        self.frontiers.len()
    }

    /// Stored non-zero differences over all tables (the tracker's memory, in entries).
    pub fn table_entries(&self) -> usize {
        self.tables.iter().map(DiffMap::len).sum()
    }

    /// Times a frontier would have moved backwards: a tag registered in a slot below a frontier
    /// already published. With one tracker this is a runtime bug and must stay 0. With shards a
    /// batch whose tracking range merges several lineage ranges (windows emitted together, an open
    /// buffer fed by several inputs) also covers the slots *between* them, and a shard owning only
    /// such slots may have passed them already: harmless, since every element of the batch stays
    /// held in its own lineage slot's shard (crates/tracking/tests/sharded.rs shows both).
    pub fn regressions(&self) -> u64 {
        self.regressions
    }

    /// Times an epoch frontier would have moved backwards. Unlike event-time ranges, a batch's
    /// epoch is one slot and never a merge of lineages, so this must stay 0 with any number of
    /// shards: a runtime bug otherwise.
    pub fn epoch_regressions(&self) -> u64 {
        self.epoch_regressions
    }

    /// Minimum heartbeat over sources, time units.
    pub fn min_heartbeat(&self) -> Time {
        self.heartbeats.min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::{AckEntry, Heartbeat};
    use crate::local_acker::LocalAcker;

    fn flush_of(a: &mut LocalAcker) -> Flush {
        a.flush()
    }

    #[test]
    fn frontier_waits_for_heartbeat_then_for_tags() {
        let g = Granularity::new(10);
        let mut t = Tracker::new(g, Topology::chain(2), 1);
        let mut a = LocalAcker::new(g);
        assert!(t.advance().is_empty()); // nothing promised yet

        // Source sends a batch with times 3..=14 into component 0 and heartbeats 20.
        a.xor_times(0, 3, 14, 0x1234);
        a.heartbeat(0, 20);
        t.apply(&flush_of(&mut a)).unwrap();
        // Slot 0 holds an unmatched tag: frontier of 0 stays at slot 0, component 1 is capped by 0.
        assert!(t.advance().is_empty());

        // Component 0 processes it and forwards it to component 1 (tag 0x99, times 3..=14).
        a.xor_times(1, 3, 14, 0x99);
        a.xor_times(0, 3, 14, 0x1234);
        t.apply(&flush_of(&mut a)).unwrap();
        let ups = t.advance();
        assert_eq!(
            ups,
            vec![FrontierUpdate {
                component: 0,
                frontier: 20
            }]
        );
        assert_eq!(t.frontier(1), 0);

        // Component 1 done with it.
        a.xor_times(1, 3, 14, 0x99);
        t.apply(&flush_of(&mut a)).unwrap();
        assert_eq!(
            t.advance(),
            vec![FrontierUpdate {
                component: 1,
                frontier: 20
            }]
        );

        // Unregister: both reach INF.
        a.heartbeat(0, INF);
        t.apply(&flush_of(&mut a)).unwrap();
        assert_eq!(t.advance().len(), 2);
        assert!(t.is_done());
        assert_eq!(t.regressions(), 0);
    }

    #[test]
    fn downstream_is_capped_by_upstream_and_reported_in_order() {
        let g = Granularity::new(1);
        let mut t = Tracker::new(
            g,
            Topology::new(vec![vec![], vec![0], vec![0, 1]]).unwrap(),
            2,
        );
        // A hold on component 2 at slot 7 (a deferred output), sources at 100 and 50.
        let f = Flush {
            acks: vec![
                AckEntry {
                    component: 2,
                    slot: 7,
                    xor: 5,
                },
                AckEntry {
                    component: 2,
                    slot: 8,
                    xor: 5,
                },
            ],
            heartbeats: vec![
                Heartbeat {
                    source: 0,
                    time: 100,
                },
                Heartbeat {
                    source: 1,
                    time: 50,
                },
            ],
        };
        t.apply(&f).unwrap();
        let ups = t.advance();
        assert_eq!(
            ups,
            vec![
                FrontierUpdate {
                    component: 0,
                    frontier: 50
                },
                FrontierUpdate {
                    component: 1,
                    frontier: 50
                },
                FrontierUpdate {
                    component: 2,
                    frontier: 7
                },
            ]
        );
    }

    #[test]
    fn unknown_component_and_source_are_errors_but_the_rest_applies() {
        let g = Granularity::new(1);
        let mut t = Tracker::new(g, Topology::chain(1), 1);
        let f = Flush {
            acks: vec![AckEntry {
                component: 9,
                slot: 0,
                xor: 1,
            }],
            heartbeats: vec![Heartbeat { source: 0, time: 5 }],
        };
        let e = t.apply(&f).unwrap_err();
        assert!(e.contains("unknown component 9"), "{e}");
        assert_eq!(
            t.advance(),
            vec![FrontierUpdate {
                component: 0,
                frontier: 5
            }]
        );
        let f = Flush {
            acks: vec![],
            heartbeats: vec![Heartbeat { source: 3, time: 5 }],
        };
        assert!(t.apply(&f).unwrap_err().contains("unknown source 3"));
    }

    #[test]
    fn a_tag_below_a_published_frontier_is_counted_as_a_regression() {
        let g = Granularity::new(1);
        let mut t = Tracker::new(g, Topology::chain(1), 1);
        t.apply(&Flush {
            acks: vec![],
            heartbeats: vec![Heartbeat {
                source: 0,
                time: 10,
            }],
        })
        .unwrap();
        t.advance();
        t.apply(&Flush {
            acks: vec![AckEntry {
                component: 0,
                slot: 3,
                xor: 1,
            }],
            heartbeats: vec![],
        })
        .unwrap();
        assert!(t.advance().is_empty());
        assert_eq!(t.regressions(), 1);
        assert_eq!(t.frontier(0), 10);
    }
}
