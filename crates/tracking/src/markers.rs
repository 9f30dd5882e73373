//! The marker baseline (punctuations; docs/design.md, "trAcker requirements"; the trAcker paper's
//! comparison, docs/papers.md): an operator instance keeps the latest `Marker(t)` of each input
//! channel; the minimum over channels is its aligned marker, its notification, which it forwards to
//! every downstream instance when it rises.

use crate::time::Time;

/// Latest marker per input channel and their minimum.
#[derive(Clone, Debug)]
pub struct MarkerAligner {
    latest: Vec<Time>,
    aligned: Time,
}

impl MarkerAligner {
    /// An aligner over `channels` input channels, all at 0. With no channels it never rises.
    pub fn new(channels: usize) -> Self {
        MarkerAligner {
            latest: vec![0; channels],
            aligned: 0,
        }
    }

    /// Records `Marker(t)` on `channel`; returns the new aligned marker if it rose. Markers on a
    /// channel only rise; a lower one is ignored.
    ///
    /// # Panics
    /// If `channel` is out of range.
    #[inline]
    pub fn observe(&mut self, channel: usize, t: Time) -> Option<Time> {
        let l = &mut self.latest[channel];
        if t <= *l {
            return None;
        }
        let was_min = *l == self.aligned;
        *l = t;
        if !was_min {
            return None;
        }
        let m = self.latest.iter().copied().min().unwrap_or(0);
        (m > self.aligned).then(|| {
            self.aligned = m;
            m
        })
    }

    /// The aligned marker: everything below it has arrived on every channel.
    pub fn aligned(&self) -> Time {
        self.aligned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::INF;

    #[test]
    fn aligns_the_minimum_and_reports_rises_only() {
        let mut a = MarkerAligner::new(3);
        assert_eq!(a.observe(0, 5), None);
        assert_eq!(a.observe(1, 7), None);
        assert_eq!(a.observe(2, 3), Some(3));
        assert_eq!(a.observe(2, 9), Some(5));
        assert_eq!(a.observe(1, 6), None); // lower than channel 1's latest: ignored
        assert_eq!(a.observe(0, INF), Some(7));
        assert_eq!(a.observe(1, INF), Some(9));
        assert_eq!(a.observe(2, INF), Some(INF));
        assert_eq!(a.aligned(), INF);
    }
}
