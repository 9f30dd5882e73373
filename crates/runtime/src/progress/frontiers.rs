//! What a worker knows of progress, and the one notification API operators use.
//!
//! Under trAcker, tracker shards offer frontier updates to every worker's inbox
//! (`frontier_inbox.rs`: the latest unread per shard and component); the worker combines
//! the latest per-shard frontiers (their minimum, `xorflow_tracking::FrontierCombiner`) into one
//! frontier per component. With markers the frontier of a vertex instance is the marker aligned
//! over its input channels; without tracking it is `INF` once every input channel has ended.
//! [`Frontiers::notified`] gives an operator its frontier whichever of the three the run uses, so
//! no operator matches on the tracking mode (operators/mod.rs, `Operator::on_frontier`).

use super::frontier_inbox::FrontierInbox;
use crate::config::TrackingMode;
use xorflow_tracking::{ComponentId, FrontierCombiner, FrontierUpdate, Time, INF};

/// What a vertex instance's own input channels say about progress (markers and end of stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InBand {
    /// The marker aligned over the input channels (tracking `markers`), time units.
    pub aligned: Time,
    /// Every input channel has delivered its end-of-stream message (tracking `none`).
    pub ended: bool,
}

/// A worker's view of every component's frontier.
pub struct Frontiers {
    mode: TrackingMode,
    combiner: FrontierCombiner,
    /// Latest combined frontier per component, time units (trAcker).
    by_component: Vec<Time>,
    /// When (ns, `measure/clock.rs`) the latest notification was learned: the end point of
    /// notification latency.
    pub seen_ns: u64,
    /// What the last read took from the inbox (kept for its allocation).
    read: Vec<(u32, FrontierUpdate)>,
}

impl Frontiers {
    /// Frontiers of `components` components tracked by `shards` shards, all starting at 0.
    pub fn new(mode: TrackingMode, components: usize, shards: usize) -> Self {
        Frontiers {
            mode,
            combiner: FrontierCombiner::new(components, shards.max(1)),
            by_component: vec![0; components],
            seen_ns: 0,
            read: Vec::new(),
        }
    }

    /// Reads every update waiting in `inbox` (trAcker), stamping [`Frontiers::seen_ns`].
    ///
    /// # Errors
    /// An update naming an unknown component or shard.
    pub fn read(&mut self, inbox: &FrontierInbox) -> Result<(), String> {
        self.read.clear();
        if !inbox.take(&mut self.read) {
            return Ok(());
        }
        self.seen_ns = crate::measure::clock::now_ns();
        for &(shard, u) in &self.read {
            if let Some(f) = self.combiner.update(shard as usize, u)? {
                self.by_component[u.component as usize] = f;
            }
        }
        Ok(())
    }

    /// trAcker's frontier of component `c` as known here (time units): every element with a
    /// smaller time is done at `c` and upstream. Stays 0 without trAcker.
    #[inline]
    pub fn of(&self, c: ComponentId) -> Time {
        self.by_component[c as usize]
    }

    /// True when every component's frontier is `INF` (trAcker says the job is complete).
    pub fn all_complete(&self) -> bool {
        self.by_component.iter().all(|&f| f == INF)
    }

    /// The notification API: the frontier of a vertex instance in component `c` whose inputs
    /// report `in_band`, whatever the tracking mode: trAcker's component frontier, the aligned
    /// marker, or (no tracking) `INF` once the input has ended and 0 before. Every element with a
    /// smaller time has reached the instance.
    #[inline]
    pub fn notified(&self, c: ComponentId, in_band: InBand) -> Time {
        match self.mode {
            TrackingMode::Tracker => self.of(c),
            TrackingMode::Markers => in_band.aligned,
            TrackingMode::None if in_band.ended => INF,
            TrackingMode::None => 0,
        }
    }

    /// True when frontiers rise while the stream runs (trAcker, markers); false when the only
    /// notification is the end of the stream (no tracking).
    pub fn live(&self) -> bool {
        self.mode != TrackingMode::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: InBand = InBand {
        aligned: 7,
        ended: false,
    };
    const ENDED: InBand = InBand {
        aligned: 7,
        ended: true,
    };

    #[test]
    fn notified_follows_the_mode() {
        let rx = FrontierInbox::new();
        let mut f = Frontiers::new(TrackingMode::Tracker, 2, 2);
        rx.offer(
            0,
            &[FrontierUpdate {
                component: 1,
                frontier: 5,
            }],
        );
        f.read(&rx).unwrap();
        assert_eq!(
            f.notified(1, OPEN),
            0,
            "one shard of two reported: the minimum is 0"
        );
        rx.offer(
            1,
            &[FrontierUpdate {
                component: 1,
                frontier: 9,
            }],
        );
        f.read(&rx).unwrap();
        assert_eq!(
            f.notified(1, OPEN),
            5,
            "the minimum over shards, not the markers"
        );
        assert!(f.seen_ns > 0 && f.live() && !f.all_complete());
        let m = Frontiers::new(TrackingMode::Markers, 2, 1);
        assert_eq!(m.notified(1, OPEN), 7);
        let n = Frontiers::new(TrackingMode::None, 2, 1);
        assert_eq!((n.notified(1, OPEN), n.notified(1, ENDED)), (0, INF));
        assert!(!n.live());
    }

    #[test]
    fn unknown_component_is_an_error() {
        let rx = FrontierInbox::new();
        let mut f = Frontiers::new(TrackingMode::Tracker, 1, 1);
        rx.offer(
            0,
            &[FrontierUpdate {
                component: 3,
                frontier: 1,
            }],
        );
        assert!(f.read(&rx).unwrap_err().contains("unknown component 3"));
    }
}
