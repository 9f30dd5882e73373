//! The YSB job over Kafka (docs/ysb.md, "Kafka input"): decoding the events from a topic, and
//! loading an events file into one (`xorflow-lab kafka produce-ysb`).
//!
//! A record's value is one JSON event, as the original generator sends them
//! (yahoo/streaming-benchmarks `data/src/setup/core.clj`: the JSON text, no key); its event time
//! is the event's `event_time` field, whatever the record's timestamp says, so a topic the
//! original's generator filled (timestamps of the producer's clock) reads the same as one
//! [`produce_ysb`] filled. Lateness is per partition ([`xorflow_kafka::Watermark::EventTime`]):
//! a record is late when its event time is more than `--lateness` below the largest event time
//! before it in its partition, as the file job judges a line against the lines before it.
//!
//! [`produce_ysb`]'s layout: the file's valid events, verbatim, round-robin over the partitions
//! in file order (event `i` to partition `i mod P`), no key, each stamped with its event time.
//! Round-robin rather than keyed by `ad_id`: the job counts per campaign after a shuffle, so a
//! key buys it nothing, while round-robin keeps the partitions equal in size and each
//! partition's event times in the file's order (every P-th event), so per-partition lateness
//! drops what the file job drops (up to ties at the lateness bound; the tests compute the
//! oracle per partition). The original's producer sends without a key too.

use crate::campaigns::Campaigns;
use crate::event::{self, EventType};
use crate::YsbSummary;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use xorflow_kafka::admin;
use xorflow_kafka::producer::Loader;
use xorflow_kafka::{
    Decoded, Decoder, InputCounts, InputOptions, KafkaSource, KafkaUri, RecordView, SourceConfig,
    SourceCounters, Watermark,
};
use xorflow_runtime::{Dataflow, RunReport, Stream};

/// The job's input topic: the source its instances share and what they count in this process.
pub struct KafkaFeed {
    source: Arc<SourceConfig>,
    counters: Arc<SourceCounters>,
    unknown_ad_views: Arc<AtomicU64>,
}

impl KafkaFeed {
    /// The topic at `uri`, read by `sources` instances with `lateness_ms` per partition, paced
    /// by the record timestamps at `speed` if given (`produce_ysb` stamps the event times).
    ///
    /// # Errors
    /// The broker does not answer, or the topic does not exist.
    pub fn open(
        uri: &KafkaUri,
        options: &InputOptions,
        sources: usize,
        lateness_ms: u64,
        speed: Option<f64>,
    ) -> Result<Self, String> {
        let watermark = Watermark::EventTime {
            lateness: lateness_ms,
        };
        Ok(KafkaFeed {
            source: Arc::new(options.source(uri, sources, watermark, speed)?),
            counters: Arc::default(),
            unknown_ad_views: Arc::default(),
        })
    }

    /// The topic.
    pub fn uri(&self) -> &KafkaUri {
        &self.source.uri
    }

    /// What identifies the input in the job id.
    pub fn key(&self) -> String {
        format!(
            "kafka={} partitions={}",
            self.source.uri, self.source.partitions
        )
    }

    /// Adds the source vertex (`events`, one instance per `--sources`) to `df`.
    pub fn add_source(&self, df: &Dataflow, table: Arc<Campaigns>) -> Stream<String> {
        let (source, counters) = (self.source.clone(), self.counters.clone());
        let unknown = self.unknown_ad_views.clone();
        df.source("events", source.instances, move |k| {
            let decoder = YsbDecoder::new(table.clone(), unknown.clone());
            KafkaSource::new(source.clone(), k, decoder, counters.clone())
        })
    }

    /// The input's part of the summary: on process 0 every process's counts (the source's
    /// counters in the run report), elsewhere this process's; the events every process emitted
    /// ([`RunReport::source_elements`], on process 0).
    pub fn summary(&self, report: &RunReport) -> YsbSummary {
        let c = InputCounts::of_run(report, "events", self.counters.snapshot());
        let cover = if report.per_process.len() == 1 {
            format!(
                "the records process {}'s sources read (process 0 reports the whole input)",
                report.process
            )
        } else if report.per_process.len() > 1 {
            "the whole input (the examples: process 0's; each process logs its own)".to_string()
        } else {
            "the whole input".to_string()
        };
        YsbSummary {
            lines: c.read,
            malformed: c.malformed,
            late: c.late,
            skipped_records: c.examples,
            unknown_ad_views: self.unknown_ad_views.load(Ordering::Relaxed),
            events: report.source_elements(),
            ..YsbSummary::empty(&cover)
        }
    }
}

/// Decodes a record into the event's JSON text (the dataflow parses it again, as the file job's
/// does: the original job's first stage is the parse) with its `event_time` as event time, ms.
pub struct YsbDecoder {
    table: Arc<Campaigns>,
    unknown_ad_views: Arc<AtomicU64>,
}

impl YsbDecoder {
    /// A decoder counting, in `unknown_ad_views`, the views whose ad `table` lacks (the join
    /// drops them; counted per record decoded, so a restart from a checkpoint counts the records
    /// it reads again).
    pub fn new(table: Arc<Campaigns>, unknown_ad_views: Arc<AtomicU64>) -> Self {
        YsbDecoder {
            table,
            unknown_ad_views,
        }
    }
}

impl Decoder<String> for YsbDecoder {
    fn decode(&mut self, r: &RecordView<'_>) -> Decoded<String> {
        let line = match std::str::from_utf8(r.payload) {
            Ok(l) => l,
            Err(e) => return Decoded::Malformed(format!("not UTF-8: {e}")),
        };
        match event::parse_ref(line) {
            Ok(e) => {
                if e.event_type == EventType::View && self.table.of(&e.ad_id).is_none() {
                    self.unknown_ad_views.fetch_add(1, Ordering::Relaxed);
                }
                Decoded::Element(e.event_time, line.to_string())
            }
            Err(why) => Decoded::Malformed(why),
        }
    }
}

/// What [`produce_ysb`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Produced {
    /// Events written.
    pub events: u64,
    /// Malformed lines of the file, not written.
    pub malformed: u64,
    /// The first malformed lines: (1-based line number, why).
    pub malformed_examples: Vec<(u64, String)>,
    /// The topic's partitions.
    pub partitions: usize,
    /// Whether the topic was created (false: it existed, and the events were appended).
    pub created: bool,
}

/// Loads `input` (an events file, `kafka-json.txt`) into `uri`'s topic with `partitions`
/// partitions, in the module doc's layout. Malformed lines are counted and left out, as the file
/// job skips them; late ones are written (the job decides lateness).
///
/// # Errors
/// The input cannot be read; the broker is unreachable; the topic exists with another partition
/// count; a record is refused.
pub fn produce_ysb(input: &Path, uri: &KafkaUri, partitions: usize) -> Result<Produced, String> {
    // No lateness here: every valid line is written, in file order.
    let events = crate::input::read(input, u64::MAX, &Campaigns::default())?;
    // Events carry the times they were generated for: time-based retention (7 days by default)
    // would delete an older file's events at the broker's next check.
    let created = admin::topic_for_loading(uri, partitions, &[("retention.ms", "-1")])?
        == admin::Created::Created;
    let mut loader = Loader::new(uri)?;
    for (i, r) in events.records.iter().enumerate() {
        let p = (i % partitions) as i32;
        let ts = i64::try_from(r.time).unwrap_or(i64::MAX);
        loader.send(p, ts, None, r.line.as_bytes())?;
    }
    loader.finish()?;
    Ok(Produced {
        events: events.records.len() as u64,
        malformed: events.malformed,
        malformed_examples: (events.malformed_examples.into_iter())
            .map(|m| (m.line, m.reason))
            .collect(),
        partitions,
        created,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: &[u8]) -> RecordView<'_> {
        RecordView {
            partition: 1,
            offset: 9,
            timestamp_ms: Some(5),
            key: None,
            payload,
        }
    }

    #[test]
    fn event_time_comes_from_the_event_and_bad_records_say_why() {
        let table = Arc::new(Campaigns::parse("{ \"a\": \"c\"}\n").unwrap());
        let unknown = Arc::new(AtomicU64::new(0));
        let mut d = YsbDecoder::new(table, unknown.clone());
        let line = |ad: &str, kind| crate::input::tests::line(ad, 1_700_000_000_123, kind);
        let view = line("a", EventType::View);
        assert_eq!(
            d.decode(&record(view.as_bytes())),
            Decoded::Element(1_700_000_000_123, view.clone())
        );
        assert_eq!(unknown.load(Ordering::Relaxed), 0);
        // A view of an unknown ad still decodes (the join drops it), and is counted.
        let stranger = line("zz", EventType::View);
        assert!(matches!(
            d.decode(&record(stranger.as_bytes())),
            Decoded::Element(..)
        ));
        let click = line("zz", EventType::Click);
        assert!(matches!(
            d.decode(&record(click.as_bytes())),
            Decoded::Element(..)
        ));
        assert_eq!(unknown.load(Ordering::Relaxed), 1);
        for (bad, why) in [
            (&b"not json"[..], "expected"),
            (b"", "EOF"),
            (b"\xff\xfe", "not UTF-8"),
            (br#"{"user_id": "u"}"#, "missing field"),
        ] {
            match d.decode(&record(bad)) {
                Decoded::Malformed(m) => assert!(m.contains(why), "{bad:?}: {m}"),
                other => panic!("{bad:?} decoded to {other:?}"),
            }
        }
    }
}
