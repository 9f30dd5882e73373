//! Changelog state in Kafka (the changelog thesis, Samza, docs/papers.md;
//! `--state-changelog kafka://HOST:PORT/PREFIX`): vertex `v`'s stores write to the compacted topic
//! `PREFIX-v`, instance `i` to partition `i` (crates/state/src/backend/changelog.rs says what is
//! mirrored and when).
//!
//! The topic is created with `cleanup.policy=compact` and the compaction settings the user gives
//! (`--changelog-config min.cleanable.dirty.ratio=0.01`, ...); an existing topic is used as it
//! is, if it has a partition per instance. Records go through an idempotent producer (retries
//! neither duplicate nor reorder them); a checkpoint waits for their delivery and records the
//! offset after the last one.

use crate::context::{Deliveries, Quiet};
use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use std::time::{Duration, Instant};
use xorflow_state::backend::changelog::{Changelog, ChangelogStats, LogRange, ReplayFn};
use xorflow_state::backend::{ChangelogFactory, Write};
use xorflow_state::StateError;

/// The topic settings that shape compaction, which reports show (section 4.5 of the changelog
/// thesis).
pub const COMPACTION_SETTINGS: [&str; 6] = [
    "cleanup.policy",
    "min.cleanable.dirty.ratio",
    "segment.ms",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "retention.ms",
];

/// Opens the changelog partitions of a job's stores.
#[derive(Debug)]
pub struct KafkaChangelogs {
    uri: KafkaUri,
    partitions: usize,
    configs: Vec<(String, String)>,
}

impl KafkaChangelogs {
    /// Changelogs under `uri` (its topic is the prefix), `partitions` per vertex (the job's
    /// instances per stateful vertex: its total workers), created with topic settings
    /// `configs` on top of `cleanup.policy=compact`.
    pub fn new(uri: KafkaUri, partitions: usize, configs: Vec<(String, String)>) -> Self {
        KafkaChangelogs {
            uri,
            partitions,
            configs,
        }
    }

    /// The changelog topic of vertex `vertex`.
    pub fn topic(&self, vertex: &str) -> String {
        let safe: String = vertex
            .chars()
            .map(|c| match c {
                c if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' => c,
                _ => '_',
            })
            .collect();
        format!("{}-{safe}", self.uri.topic)
    }

    /// The topic settings a changelog topic is created with.
    pub fn topic_configs(&self) -> Vec<(&str, &str)> {
        let mut c = vec![("cleanup.policy", "compact")];
        for (k, v) in &self.configs {
            c.retain(|(x, _)| x != k);
            c.push((k, v));
        }
        c
    }
}

fn err(uri: &KafkaUri, what: impl std::fmt::Display) -> StateError {
    StateError::Other(format!("changelog {uri}: {what}"))
}

impl ChangelogFactory for KafkaChangelogs {
    fn open(&self, vertex: &str, instance: usize) -> Result<Box<dyn Changelog>, StateError> {
        let uri = self.uri.with_topic(&self.topic(vertex));
        crate::admin::create_topic(&uri, self.partitions, &self.topic_configs())
            .map_err(StateError::Other)?;
        let have = crate::admin::partitions(&uri, BROKER_TIMEOUT).map_err(StateError::Other)?;
        if have <= instance {
            return Err(err(
                &uri,
                format!(
                    "the topic has {have} partitions and instance {instance} needs its own: \
                     delete it or choose another prefix"
                ),
            ));
        }
        Ok(Box::new(KafkaChangelog::new(uri, instance as i32)?))
    }
}

/// One store's partition.
struct KafkaChangelog {
    uri: KafkaUri,
    partition: i32,
    producer: BaseProducer<Deliveries>,
    consumer: BaseConsumer<Quiet>,
    /// Appended since the last flush.
    pending: u64,
    /// The offset after this store's last delivered record (the partition's end at open).
    end: i64,
    stats: ChangelogStats,
}

impl KafkaChangelog {
    fn new(uri: KafkaUri, partition: i32) -> Result<Self, StateError> {
        let client = format!("xorflow-changelog-{}-{partition}", uri.topic);
        let producer: BaseProducer<Deliveries> = settings::producer(&uri, &client)
            .set("linger.ms", "5")
            .create_with_context(Deliveries::default())
            .map_err(|e| err(&uri, format!("cannot create a producer: {e}")))?;
        let consumer: BaseConsumer<Quiet> = settings::consumer(&uri, &client)
            // Replays read whole partitions: large fetches.
            .set("max.partition.fetch.bytes", (16 << 20).to_string())
            .set("fetch.wait.max.ms", "10")
            .create_with_context(Quiet::default())
            .map_err(|e| err(&uri, format!("cannot create a consumer: {e}")))?;
        let mut log = KafkaChangelog {
            uri,
            partition,
            producer,
            consumer,
            pending: 0,
            end: 0,
            stats: ChangelogStats::default(),
        };
        log.end = log.end()?;
        Ok(log)
    }

    fn check(&self) -> Result<(), StateError> {
        match self.producer.context().failure() {
            Some(e) => Err(err(&self.uri, format!("a record was not delivered: {e}"))),
            None => Ok(()),
        }
    }
}

impl Changelog for KafkaChangelog {
    fn append(&mut self, batch: &[Write]) -> Result<(), StateError> {
        let topic = self.uri.topic.clone();
        for (k, v) in batch {
            let mut rec = BaseRecord::<[u8], [u8]>::to(&topic)
                .partition(self.partition)
                .key(k.as_slice());
            if let Some(v) = v {
                rec = rec.payload(v.as_slice());
            }
            crate::producer::send_waiting(&self.producer, rec)
                .map_err(|e| err(&self.uri, format!("cannot append: {e}")))?;
            self.stats.records += 1;
            self.stats.bytes += (k.len() + v.as_ref().map_or(0, Vec::len)) as u64;
        }
        self.pending += batch.len() as u64;
        self.producer.poll(Duration::ZERO);
        Ok(())
    }

    fn flush(&mut self) -> Result<i64, StateError> {
        if self.pending > 0 {
            self.producer
                .flush(BROKER_TIMEOUT)
                .map_err(|e| err(&self.uri, format!("records not delivered: {e}")))?;
            self.check()?;
            let max = self.producer.context().max_offset();
            self.end = self.end.max(max + 1);
            self.pending = 0;
        }
        Ok(self.end)
    }

    /// The partition's high watermark, asked again while leadership moves (within
    /// [`BROKER_TIMEOUT`]).
    fn end(&mut self) -> Result<i64, StateError> {
        let t0 = Instant::now();
        loop {
            match self
                .consumer
                .fetch_watermarks(&self.uri.topic, self.partition, BROKER_TIMEOUT)
            {
                Ok((_, high)) => return Ok(high),
                Err(e) if crate::admin::is_transient(&e) && t0.elapsed() < BROKER_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    return Err(err(
                        &self.uri,
                        format!("cannot read the partition's end: {e}"),
                    ))
                }
            }
        }
    }

    fn replay(&mut self, range: LogRange, f: &mut ReplayFn<'_>) -> Result<u64, StateError> {
        if range.start >= range.end {
            return Ok(0);
        }
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.uri.topic, self.partition, Offset::Offset(range.start))
            .map_err(|e| err(&self.uri, e))?;
        self.consumer.assign(&tpl).map_err(|e| err(&self.uri, e))?;
        let (mut n, mut last) = (0u64, Instant::now());
        loop {
            match self.consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) if m.offset() >= range.end => break,
                Some(Ok(m)) => {
                    f(m.key().unwrap_or_default(), m.payload())?;
                    n += 1;
                    last = Instant::now();
                }
                Some(Err(KafkaError::PartitionEOF(_))) => break,
                Some(Err(e)) => return Err(err(&self.uri, format!("replay: {e}"))),
                None if last.elapsed() > BROKER_TIMEOUT => {
                    return Err(err(
                        &self.uri,
                        format!("replay stalled for {} s", BROKER_TIMEOUT.as_secs()),
                    ))
                }
                None => {}
            }
        }
        self.consumer.unassign().map_err(|e| err(&self.uri, e))?;
        self.stats.replayed += n;
        Ok(n)
    }

    fn stats(&self) -> ChangelogStats {
        self.stats
    }
}
