//! Source heartbeats at the tracker (docs/design.md, requirement 3).
//!
//! Every source instance is known up front and starts at time 0 ("registered, nothing promised").
//! A heartbeat `t` promises no future element below `t`; `INF` unregisters the source at end of
//! stream. The bound every frontier is capped by is the minimum over all sources.

use crate::ack::SourceId;
use crate::time::{Time, INF};

/// Latest heartbeat per source instance, and their minimum.
#[derive(Clone, Debug)]
pub struct Heartbeats {
    latest: Vec<Time>,
    min: Time,
}

impl Heartbeats {
    /// `sources` registered source instances, all at time 0. With no sources at all the bound is
    /// `INF` (nothing will ever be emitted).
    pub fn new(sources: usize) -> Self {
        Heartbeats {
            latest: vec![0; sources],
            min: if sources == 0 { INF } else { 0 },
        }
    }

    /// Applies a heartbeat; a lower value than the source's latest is ignored (heartbeats only rise).
    ///
    /// # Errors
    /// An unknown source id (a stranger or a misconfigured job) is an error naming the id.
    pub fn apply(&mut self, source: SourceId, time: Time) -> Result<(), String> {
        let n = self.latest.len();
        let slot = self.latest.get_mut(source as usize).ok_or_else(|| {
            format!("heartbeat from unknown source {source} (job has {n} sources)")
        })?;
        if time > *slot {
            let old = *slot;
            *slot = time;
            if old == self.min {
                self.min = self.latest.iter().copied().min().unwrap_or(INF);
            }
        }
        Ok(())
    }

    /// Minimum heartbeat over all sources (time units).
    pub fn min(&self) -> Time {
        self.min
    }

    /// Latest heartbeat of one source.
    pub fn get(&self, source: SourceId) -> Option<Time> {
        self.latest.get(source as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_over_sources_and_unregistering() {
        let mut h = Heartbeats::new(3);
        assert_eq!(h.min(), 0);
        h.apply(0, 10).unwrap();
        h.apply(1, 20).unwrap();
        assert_eq!(h.min(), 0);
        h.apply(2, 5).unwrap();
        assert_eq!(h.min(), 5);
        h.apply(2, 3).unwrap(); // going back is ignored
        assert_eq!(h.get(2), Some(5));
        h.apply(2, INF).unwrap();
        assert_eq!(h.min(), 10);
        h.apply(0, INF).unwrap();
        h.apply(1, INF).unwrap();
        assert_eq!(h.min(), INF);
    }

    #[test]
    fn unknown_source_is_an_error() {
        let mut h = Heartbeats::new(1);
        let e = h.apply(4, 1).unwrap_err();
        assert!(e.contains("unknown source 4"), "{e}");
    }

    #[test]
    fn no_sources_means_unbounded() {
        assert_eq!(Heartbeats::new(0).min(), INF);
    }
}
