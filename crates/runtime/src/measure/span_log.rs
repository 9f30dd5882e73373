//! Sampled spans whose two ends may lie in different processes, such as an element's due time at
//! its source and its arrival at a sink: kept as raw stamps during the run, shipped to process 0
//! with the process's report, and converted there through the run's clock alignment (the
//! Cloudprofiler paper, section 3.3, docs/papers.md) once the alignment after the run exists.
//! Operators sample (its XoY handler, section 5.1: the same ids on every process) so the log stays
//! small; [`SpanLog::CAP`] bounds it.

use super::settled::Settled;
use xorflow_measure::clock::Alignment;

/// One span: its start on `start_process`'s clock and its end on `end_process`'s (ns from
/// [`crate::measure::clock::now_ns`], each process's `CLOCK_MONOTONIC_RAW`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanRecord {
    /// The process whose clock `start_ns` is on.
    pub start_process: u32,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// The process whose clock `end_ns` is on: the one that recorded it, set by [`SpanLog::tag`]
    /// when its records reach process 0 (0 until then).
    pub end_process: u32,
}

/// The spans of one measure of one vertex (all instances of a process, then of the run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanLog {
    /// Records, in the order they were kept.
    pub records: Vec<SpanRecord>,
    /// Records not kept because the log was full.
    pub dropped: u64,
}

/// Bytes of one encoded record: start process (u32), start and end (u64), little-endian.
const RECORD_BYTES: usize = 20;

impl SpanLog {
    /// Records kept per process and measure (24 bytes each: 6 MiB; 27 in base64 when shipped).
    pub const CAP: usize = 1 << 18;

    /// Keeps the span from `start = (process, ns)` to `end_ns` on this process's clock (counted
    /// in `dropped` once the log holds [`SpanLog::CAP`]).
    #[inline]
    pub fn push(&mut self, start: (usize, u64), end_ns: u64) {
        if self.records.len() < Self::CAP {
            self.records.push(SpanRecord {
                start_process: start.0 as u32,
                start_ns: start.1,
                end_ns,
                end_process: 0,
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Appends another log's records (another instance's, or another process's once tagged),
    /// up to [`SpanLog::CAP`].
    pub fn append(&mut self, o: &mut SpanLog) {
        let room = Self::CAP.saturating_sub(self.records.len());
        let take = o.records.len().min(room);
        self.dropped += o.dropped + (o.records.len() - take) as u64;
        self.records.extend(o.records.drain(..take));
        o.records.clear();
        o.dropped = 0;
    }

    /// Marks every record's end as stamped by `process`.
    pub fn tag(&mut self, process: usize) {
        for r in &mut self.records {
            r.end_process = process as u32;
        }
    }

    /// The records as base64 text for another process's report (the end process goes with the
    /// report, not with each record).
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        let mut b = Vec::with_capacity(self.records.len() * RECORD_BYTES);
        for r in &self.records {
            b.extend_from_slice(&r.start_process.to_le_bytes());
            b.extend_from_slice(&r.start_ns.to_le_bytes());
            b.extend_from_slice(&r.end_ns.to_le_bytes());
        }
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    /// Back from [`SpanLog::encode`]'s text, with `dropped` records not kept.
    ///
    /// # Errors
    /// Text that is not base64 of whole records, or more than [`SpanLog::CAP`] of them.
    pub fn decode(text: &str, dropped: u64) -> Result<SpanLog, String> {
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("span log: {e}"))?;
        if b.len() % RECORD_BYTES != 0 || b.len() / RECORD_BYTES > Self::CAP {
            return Err(format!(
                "span log: {} bytes, not at most {} whole records",
                b.len(),
                Self::CAP
            ));
        }
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let records = b
            .chunks_exact(RECORD_BYTES)
            .map(|c| SpanRecord {
                start_process: u32::from_le_bytes(c[0..4].try_into().expect("4 bytes")),
                start_ns: word(&c[4..12]),
                end_ns: word(&c[12..20]),
                end_process: 0,
            })
            .collect();
        Ok(SpanLog { records, dropped })
    }

    /// Consumes the records and feeds `sample` once per record ([`Settled::between`]: through
    /// `clock` when the run has one).
    pub fn settle(&mut self, clock: Option<&Alignment>, mut sample: impl FnMut(Settled)) {
        for r in std::mem::take(&mut self.records) {
            let start = (r.start_process as usize, r.start_ns);
            let end = (r.end_process as usize, r.end_ns);
            sample(Settled::between(clock, start, end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_the_text_and_a_damaged_text_is_refused() {
        let mut log = SpanLog::default();
        log.push((3, 1_000), 2_500);
        log.push((0, u64::MAX - 1), 7);
        let back = SpanLog::decode(&log.encode(), 4).unwrap();
        assert_eq!((back.records, back.dropped), (log.records.clone(), 4));
        assert!(SpanLog::decode("not base64!", 0).is_err());
        assert!(SpanLog::decode("AAAA", 0).is_err(), "3 bytes are no record");
    }

    #[test]
    fn the_log_counts_what_it_cannot_keep_and_appending_respects_the_cap() {
        let mut a = SpanLog::default();
        for i in 0..SpanLog::CAP as u64 + 2 {
            a.push((0, i), i + 1);
        }
        assert_eq!((a.records.len(), a.dropped), (SpanLog::CAP, 2));
        let mut b = SpanLog::default();
        b.push((1, 0), 1);
        b.dropped = 5;
        a.append(&mut b);
        assert_eq!((a.records.len(), a.dropped), (SpanLog::CAP, 8));
        assert_eq!((b.records.len(), b.dropped), (0, 0));
    }

    #[test]
    fn settling_without_an_alignment_gives_the_plain_differences_on_the_tagged_ends() {
        let mut log = SpanLog::default();
        log.push((1, 100), 350);
        log.push((0, 500), 400);
        log.tag(2);
        assert!(log.records.iter().all(|r| r.end_process == 2));
        let mut got = vec![];
        log.settle(None, |s| got.push((s.ns, s.raw_ns)));
        assert_eq!(got, vec![(250, 250), (0, -100)]);
        assert!(log.records.is_empty());
    }
}
