//! A job's input topic (`--input kafka://...`): the options every job that reads one takes
//! (`--kafka-idle-timeout`, `--kafka-follow`), their checks, the source they describe, and what
//! its sources counted, for the job's report. Written once for the flights and YSB jobs so the
//! same option means and reports the same in both (docs/kafka.md).

use crate::source::{SkippedRecord, SourceConfig, SourceCounters, Watermark};
use crate::uri::KafkaUri;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a job waits for the broker's answer about the input topic before it starts.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// How a job reads its input topic.
#[derive(Clone, Debug, PartialEq)]
pub struct InputOptions {
    /// A partition without records for this long stops holding the windows back (Flink's
    /// `withIdleness`): [`SourceConfig::idle_timeout`].
    pub idle_timeout: Duration,
    /// Keep reading at the end of the partitions (default: end there, a bounded job).
    pub follow: bool,
}

impl Default for InputOptions {
    /// 10 s idleness, bounded.
    fn default() -> Self {
        InputOptions {
            idle_timeout: Duration::from_secs(10),
            follow: false,
        }
    }
}

impl InputOptions {
    /// Refuses options that cannot apply: `--kafka-follow` when `input` (the job's input topic)
    /// is `None`, a zero idle timeout.
    ///
    /// # Errors
    /// A message naming the option.
    pub fn check(&self, input: Option<&KafkaUri>) -> Result<(), String> {
        if self.follow && input.is_none() {
            return Err("--kafka-follow needs --input kafka://...".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("--kafka-idle-timeout must be positive".into());
        }
        Ok(())
    }

    /// The source over `uri`'s topic for `instances` source instances: asks the broker for the
    /// topic's partitions first, so a missing topic or an unreachable broker is an input error
    /// before the job starts (within [`METADATA_TIMEOUT`]). `speed` paces the replay by the
    /// record timestamps ([`SourceConfig::speed`]).
    ///
    /// # Errors
    /// The broker does not answer, or the topic does not exist (the message names both).
    pub fn source(
        &self,
        uri: &KafkaUri,
        instances: usize,
        watermark: Watermark,
        speed: Option<f64>,
    ) -> Result<SourceConfig, String> {
        let partitions = crate::admin::partitions(uri, METADATA_TIMEOUT)?;
        Ok(SourceConfig {
            uri: uri.clone(),
            partitions,
            instances,
            watermark,
            idle_timeout: self.idle_timeout,
            bounded: !self.follow,
            speed,
        })
    }
}

/// What a Kafka source's instances counted in this process ([`SourceCounters`]): in a
/// multi-process run each process counts only the records its own instances read.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct InputCounts {
    /// Records read (header records a decoder skips excluded).
    pub read: u64,
    /// Records that did not decode.
    pub malformed: u64,
    /// Records behind their partition's progress (beyond the lateness).
    pub late: u64,
    /// The first malformed or late records, by partition and offset.
    pub examples: Vec<SkippedRecord>,
}

impl InputCounts {
    /// The counts of a finished run whose Kafka source vertex is `vertex`: on process 0 of a
    /// run of several processes, every process's (the source's counters in the run report,
    /// [`crate::source::RECORDS_READ`] and the others); elsewhere `local`'s, this process's.
    /// The examples stay `local`'s: each process logs its own skipped records.
    pub fn of_run(report: &xorflow_runtime::RunReport, vertex: &str, local: InputCounts) -> Self {
        let Some(v) = report
            .vertex(vertex)
            .filter(|_| report.per_process.len() > 1)
        else {
            return local;
        };
        InputCounts {
            read: v.counter(crate::source::RECORDS_READ),
            malformed: v.counter(crate::source::RECORDS_MALFORMED),
            late: v.counter(crate::source::RECORDS_LATE),
            examples: local.examples,
        }
    }
}

impl SourceCounters {
    /// The counts so far.
    pub fn snapshot(&self) -> InputCounts {
        let examples = self
            .examples
            .lock()
            .map(|e| e.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        InputCounts {
            read: self.read.load(Ordering::Relaxed),
            malformed: self.malformed.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            examples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_cannot_apply_are_named() {
        let uri = KafkaUri::parse("kafka://127.0.0.1:1/t").unwrap();
        let follow = InputOptions {
            follow: true,
            ..InputOptions::default()
        };
        assert!(follow.check(Some(&uri)).is_ok());
        let e = follow.check(None).unwrap_err();
        assert_eq!(e, "--kafka-follow needs --input kafka://...");
        let zero = InputOptions {
            idle_timeout: Duration::ZERO,
            ..InputOptions::default()
        };
        assert!(zero.check(Some(&uri)).unwrap_err().contains("idle-timeout"));
        assert!(InputOptions::default().check(None).is_ok());
    }

    #[test]
    fn a_snapshot_holds_the_counters_and_examples() {
        let c = SourceCounters::default();
        c.read.store(7, Ordering::Relaxed);
        c.late.store(1, Ordering::Relaxed);
        c.examples.lock().unwrap().push(SkippedRecord {
            partition: 2,
            offset: 40,
            reason: "late".into(),
        });
        let s = c.snapshot();
        assert_eq!((s.read, s.malformed, s.late), (7, 0, 1));
        assert_eq!(s.examples[0].offset, 40);
    }
}
