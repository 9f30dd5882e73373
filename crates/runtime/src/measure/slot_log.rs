//! Per-slot records of a sink's instances, to measure notification latency from a substream's
//! last arrival *anywhere* (the trAcker paper, "Notification latency"), across processes with the
//! Cloudprofiler paper's clock alignment (section 3.3; both papers: docs/papers.md).

use super::settled::Settled;
use xorflow_measure::clock::Alignment;
use xorflow_tracking::Slot;

/// One slot as one instance saw it: when its last element arrived and when the instance learnt the
/// slot was complete (ns from [`crate::measure::clock::now_ns`], the process's
/// `CLOCK_MONOTONIC_RAW`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRecord {
    /// The slot.
    pub slot: Slot,
    /// Arrival of the slot's last element at this instance, ns.
    pub last_arrival_ns: u64,
    /// The notification covering the slot, ns.
    pub notified_ns: u64,
    /// The process whose clock the two stamps are on (set by [`SlotLog::tag`] when another
    /// process's records arrive; 0 until then).
    pub process: u32,
}

/// Per-slot records of the instances of one vertex, to measure notification latency as the trAcker
/// paper ("Notification latency") defines it: from the substream's last element arriving *anywhere*
/// (its bench stand received all sink output) to the notification. [`super::probe::ArrivalProbe`]'s
/// own samples start at the last arrival at the same instance, so they also contain the skew
/// between partitions: how much later the slot's last element reached another instance. The
/// difference between the two is data path jitter, not tracking.
///
/// 32 bytes per slot and instance, at most [`SlotLog::CAP`] records per instance (the rest are
/// counted in `dropped`).
#[derive(Clone, Debug, Default)]
pub struct SlotLog {
    /// Records, in slot order per instance.
    pub records: Vec<SlotRecord>,
    /// Records not kept because the log was full.
    pub dropped: u64,
}

impl SlotLog {
    /// Records kept per instance (32 MiB).
    pub const CAP: usize = 1 << 20;

    #[inline]
    pub(crate) fn push(&mut self, r: SlotRecord) {
        if self.records.len() < Self::CAP {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }

    /// Appends another instance's records.
    pub fn append(&mut self, o: &mut SlotLog) {
        self.records.append(&mut o.records);
        self.dropped += o.dropped;
    }

    /// Marks every record as stamped by `process`.
    pub fn tag(&mut self, process: usize) {
        for r in &mut self.records {
            r.process = process as u32;
        }
    }

    /// Most records a process sends to process 0 (24 bytes each, 32 in base64: 8 MiB of its
    /// report); the rest are counted in `dropped`. The first ones are kept, so every process
    /// keeps the same early slots.
    pub const SHIP_CAP: usize = 1 << 18;

    /// The records for another process's report: base64 of `slot, last arrival, notified` as
    /// little-endian u64s, at most [`SlotLog::SHIP_CAP`] records; returns the text and how
    /// many records did not fit. The process goes with the report, not with each record.
    pub fn encode(&self) -> (String, u64) {
        use base64::Engine as _;
        let kept = &self.records[..self.records.len().min(Self::SHIP_CAP)];
        let mut b = Vec::with_capacity(kept.len() * 24);
        for r in kept {
            for x in [r.slot, r.last_arrival_ns, r.notified_ns] {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        let cut = (self.records.len() - kept.len()) as u64;
        (base64::engine::general_purpose::STANDARD.encode(b), cut)
    }

    /// Back from [`SlotLog::encode`]'s text, with `dropped` records not kept (process 0 until
    /// [`SlotLog::tag`]ged).
    ///
    /// # Errors
    /// Text that is not base64 of whole records.
    pub fn decode(text: &str, dropped: u64) -> Result<SlotLog, String> {
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("slot log: {e}"))?;
        if b.len() % 24 != 0 {
            return Err(format!("slot log: {} bytes, not whole records", b.len()));
        }
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let records = b
            .chunks_exact(24)
            .map(|c| SlotRecord {
                slot: word(&c[0..8]),
                last_arrival_ns: word(&c[8..16]),
                notified_ns: word(&c[16..24]),
                process: 0,
            })
            .collect();
        Ok(SlotLog { records, dropped })
    }

    /// Consumes the records of all instances and feeds `sample` once per record: its
    /// notification minus the latest last arrival of the same slot over all instances (`any`),
    /// and minus the latest last arrival of this slot *or an earlier one* (`frontier`). With
    /// `clock` (a run of several processes), the latest arrival is chosen and the durations
    /// measured in process 0's time by the Cloudprofiler paper's four cases
    /// ([`Alignment::monotonic_duration`]), each with its error bound; a record the alignment
    /// cannot convert (a process without a map) keeps the plain difference, `converted` false.
    ///
    /// Why two: a frontier passes slot `s` only once every slot before it is complete too, so
    /// when an earlier slot's last element arrives after `s`'s (on the 10-stage chain under
    /// delay, elements of one slot arrive over 500 ms), `any` counts the wait for that slot.
    /// `frontier` starts from the earliest moment any frontier (trAcker's or a marker's) could
    /// pass `s`. It is exact when every slot is measured (`--latency-sample all`); with sampled
    /// slots it misses unsampled earlier slots and so can only come out larger than the truth.
    pub fn settle(&mut self, clock: Option<&Alignment>, mut sample: impl FnMut(Settled, Settled)) {
        let mut r = std::mem::take(&mut self.records);
        // Stable: records of one slot keep their instance order.
        r.sort_by_key(|x| x.slot);
        let mut prefix: Option<SlotRecord> = None;
        for group in r.chunk_by(|a, b| a.slot == b.slot) {
            let last = *latest(group, clock);
            let before = prefix.filter(|p| arrival(p, clock) > arrival(&last, clock));
            let first_possible = before.unwrap_or(last);
            prefix = Some(first_possible);
            for x in group {
                let end = (x.process as usize, x.notified_ns);
                let start = |r: &SlotRecord| (r.process as usize, r.last_arrival_ns);
                sample(
                    Settled::between(clock, start(&last), end),
                    Settled::between(clock, start(&first_possible), end),
                );
            }
        }
    }
}

/// `x`'s last arrival, in process 0's time with `clock` (ns).
fn arrival(x: &SlotRecord, clock: Option<&Alignment>) -> f64 {
    clock
        .and_then(|a| {
            a.monotonic_stamp(x.process as usize, x.last_arrival_ns)
                .ok()
        })
        .map_or(x.last_arrival_ns as f64, |s| s.ns)
}

/// The record of `group` whose last arrival is latest (in process 0's time with `clock`).
fn latest<'a>(group: &'a [SlotRecord], clock: Option<&Alignment>) -> &'a SlotRecord {
    group
        .iter()
        .max_by(|a, b| arrival(a, clock).total_cmp(&arrival(b, clock)))
        .expect("chunk_by yields non-empty groups")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::probe::ArrivalProbe;

    /// Two instances of a sink; slot 0's last element reaches instance b 70 ns after instance a's.
    /// Per instance, a waited 100 and b 30; from the last arrival anywhere both waited 30 and 50.
    #[test]
    fn slot_log_measures_from_the_last_arrival_at_any_instance() {
        let (mut a, mut b) = (ArrivalProbe::default(), ArrivalProbe::default());
        a.log = Some(SlotLog::default());
        b.log = Some(SlotLog::default());
        a.record(0, 1000);
        b.record(0, 1070);
        a.record(1, 1100); // slot 1 only at a
        let (mut sa, mut sb) = (vec![], vec![]);
        a.complete(2, 1100, |x, _| sa.push(x));
        b.complete(2, 1120, |x, _| sb.push(x));
        assert_eq!(sa, vec![100, 0]);
        assert_eq!(sb, vec![50]);
        let mut log = a.log.take().unwrap();
        log.append(b.log.as_mut().unwrap());
        let mut any = vec![];
        let mut frontier = vec![];
        log.settle(None, |x, f| {
            any.push(x.ns);
            frontier.push(f.ns);
        });
        // Slot 0: a notified at 1100, b at 1120, last arrival anywhere 1070. Slot 1: a only,
        // arrived at 1100, notified at 1100; slot 0's last arrival is earlier, so the same.
        assert_eq!(any, vec![30, 50, 0]);
        assert_eq!(frontier, vec![30, 50, 0]);
        assert!(log.records.is_empty());
    }

    /// Slot 0's last element reaches instance a at 2000, after slot 1's last one reached b at
    /// 1500; a frontier passes slot 1 only with slot 0, so both are notified at 2100. From slot
    /// 1's own last arrival that is 600 ns; from the first moment a frontier could pass it, 100.
    #[test]
    fn frontier_measure_starts_at_the_last_arrival_of_any_earlier_slot() {
        let rec = |slot, last_arrival_ns, process| SlotRecord {
            slot,
            last_arrival_ns,
            notified_ns: 2100,
            process,
        };
        let mut log = SlotLog {
            records: vec![
                rec(1, 1500, 1),
                rec(0, 2000, 0),
                rec(0, 1200, 1),
                rec(2, 2050, 0),
            ],
            dropped: 0,
        };
        let mut got = vec![];
        log.settle(None, |any, frontier| got.push((any.ns, frontier.ns)));
        // Slot 0 (a, then b), slot 1, slot 2 (its own arrival is the latest again).
        assert_eq!(got, vec![(100, 100), (100, 100), (600, 100), (50, 50)]);
    }

    #[test]
    fn slot_log_counts_what_it_cannot_keep() {
        let mut log = SlotLog::default();
        for slot in 0..SlotLog::CAP as u64 + 3 {
            log.push(SlotRecord {
                slot,
                last_arrival_ns: 1,
                notified_ns: 2,
                process: 0,
            });
        }
        assert_eq!((log.records.len(), log.dropped), (SlotLog::CAP, 3));
    }
}
