//! The window operator's side of the versioned cut (docs/state.md, "Versioned state"): while
//! it processes batches of the epoch after the one it has yet to snapshot, what that epoch does
//! to the open windows' holds and to how far the instance has fired is kept apart, so the
//! snapshot states the older epoch. The contents keep their own versions
//! (`xorflow_state::window`, `version.rs`).
//!
//! A window the later epoch fires stays open in the older version (with its hold: a restore
//! from that checkpoint registers the hold again and fires the window again, in the later
//! epoch). Its results are emitted in the later epoch, so a restore from the older checkpoint
//! discards them with the sink's staged rows of that epoch.

use std::collections::BTreeMap;
use xorflow_tracking::Time;

/// What the later epoch changed, as of the older one.
#[derive(Debug)]
pub(crate) struct WindowVersion {
    /// The later epoch: what the instance emits meanwhile belongs to it.
    pub epoch: u64,
    /// Per window the later epoch opened or fired: its (hold tag, hold slot) in the older
    /// version, or `None` if it was not open then.
    older: BTreeMap<Time, Option<(u64, u64)>>,
    /// How far the instance had fired in the older version.
    pub fired_below: Time,
}

impl WindowVersion {
    /// A version starting now, for the later epoch `epoch`, with the instance fired below
    /// `fired_below`.
    pub fn new(epoch: u64, fired_below: Time) -> Self {
        WindowVersion {
            epoch,
            older: BTreeMap::new(),
            fired_below,
        }
    }

    /// The later epoch opened window `end`.
    pub fn opened_later(&mut self, end: Time) {
        self.older.entry(end).or_insert(None);
    }

    /// The older epoch touched window `end`, which exists now: it is open in both versions.
    pub fn touched_older(&mut self, end: Time) {
        if self.older.get(&end) == Some(&None) {
            self.older.remove(&end);
        }
    }

    /// The later epoch fired window `end`, which held `hold` in slot `slot`.
    pub fn fired_later(&mut self, end: Time, hold: u64, slot: u64) {
        self.older.entry(end).or_insert(Some((hold, slot)));
    }

    /// The open windows' (end, hold tag, hold slot) in the older version, given the live ones.
    pub fn older_holds(
        &self,
        live: impl Iterator<Item = (Time, u64, u64)>,
    ) -> Vec<(Time, u64, u64)> {
        let mut out: BTreeMap<Time, (u64, u64)> = live
            .filter(|(end, _, _)| !self.older.contains_key(end))
            .map(|(end, h, s)| (end, (h, s)))
            .collect();
        for (&end, v) in &self.older {
            if let Some(hs) = v {
                out.insert(end, *hs);
            }
        }
        out.into_iter().map(|(end, (h, s))| (end, h, s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_version_keeps_fired_windows_and_drops_later_ones() {
        let mut v = WindowVersion::new(5, 100);
        v.opened_later(300);
        v.opened_later(400);
        v.touched_older(400);
        v.fired_later(200, 7, 2);
        v.opened_later(250);
        v.fired_later(250, 9, 3);
        let live = [(300, 1, 1), (400, 2, 1), (500, 3, 1)];
        // 200 fired (older: open), 250 opened and fired later (older: absent), 300 opened
        // later (absent), 400 opened later but touched by the older epoch (open), 500 as is.
        assert_eq!(
            v.older_holds(live.into_iter()),
            vec![(200, 7, 2), (400, 2, 1), (500, 3, 1)]
        );
    }
}
