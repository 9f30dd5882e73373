//! The Kafka sink: a transactional producer, one transaction per completed checkpoint
//! (exactly-once for `read_committed` readers, as Flink's `KafkaSink`).
//!
//! * **When records are written.** The sink operator stages results per checkpoint epoch and
//!   hands them over once the checkpoint covering them is complete (`Staging::PerCheckpoint`,
//!   crates/runtime/src/operators/sink.rs). The sink writes them in one transaction and commits
//!   it at once, so a transaction is open for milliseconds, never across a checkpoint interval.
//!   Without checkpoints each batch is its own transaction.
//! * **Which commits happened.** Every transaction also writes a *commit marker* to the control
//!   topic `<topic>.xorflow-commits` (compacted): key the transactional id, value the
//!   checkpoint. Data and marker commit atomically, so after a failure the marker says exactly
//!   which checkpoint the topic holds the output of ([`Sink::durable_commit`]), and the restored
//!   job skips what it would otherwise write twice: the commit that raced with the failure
//!   (after the checkpoint completed, before the next snapshot recorded it).
//! * **One control partition per instance** ([`control_partition`]). A `read_committed` reader
//!   stops at the first record of a transaction still open, so with one partition for all, a
//!   killed instance's transaction left open (until its replacement fences it) hid the later
//!   markers of the others: a surviving instance restoring then read an older checkpoint as its
//!   last commit and wrote a committed checkpoint's output again (duplicates after kill -9,
//!   `crates/cli/tests/kafka/flights.rs`). In its own partition an instance's only writer is
//!   itself, and it fences its predecessor before it reads.
//! * **Zombies.** A restarted sink calls `init_transactions` with the same transactional id
//!   (`<prefix>-<instance>`), which fences the killed process's producer and aborts the
//!   transaction it left open.
//! * **A fresh run** writes a `reset` marker first, so that markers of an earlier run with the
//!   same id are not taken for its own.

use crate::context::Quiet;
use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use std::marker::PhantomData;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{Element, Sink, Staging};

/// Where an [`Encoder`] puts records: `(key, value)`, an empty key for none, a `None` value for
/// a tombstone (a compacted topic's delete).
pub type Emit<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<(), String> + 'a;

/// Turns a result element into a record's key and value.
pub trait Encoder<T>: Send {
    /// Clears and fills `key` (left empty: no key) and `value` for `element`.
    fn encode(&mut self, element: &Element<T>, key: &mut Vec<u8>, value: &mut Vec<u8>);

    /// The records of `element`, through `emit`: by default the one [`Encoder::encode`] makes.
    /// An encoder that makes none, several or tombstones (upsert-kafka: an UPDATE_BEFORE is
    /// held until the next element shows whether it is followed by its UPDATE_AFTER) overrides
    /// this and [`Encoder::end_batch`]; `key` and `value` are buffers to reuse.
    ///
    /// # Errors
    /// What `emit` returns (the broker refused a record).
    fn encode_records(
        &mut self,
        element: &Element<T>,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
        emit: &mut Emit<'_>,
    ) -> Result<(), String> {
        key.clear();
        value.clear();
        self.encode(element, key, value);
        emit(key, Some(value))
    }

    /// After the last element of a batch: records held back (by default none). A batch's
    /// records are one transaction's, so nothing may stay held after it.
    ///
    /// # Errors
    /// What `emit` returns.
    fn end_batch(&mut self, _emit: &mut Emit<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// The control topic of `topic`'s sinks.
pub fn control_topic(topic: &str) -> String {
    format!("{topic}.xorflow-commits")
}

/// The partition of the control topic that sink instance `instance` writes its commit markers
/// to and reads them from: its own (see the module doc).
pub fn control_partition(instance: usize) -> i32 {
    i32::try_from(instance).expect("fewer than 2^31 sink instances")
}

/// A commit marker's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    /// A fresh run started: nothing of it is committed yet.
    Reset,
    /// The output up to this checkpoint is committed.
    Checkpoint(u64),
    /// The run finished: everything is committed.
    End,
}

impl Marker {
    fn encode(self) -> String {
        match self {
            Marker::Reset => "reset".into(),
            Marker::Checkpoint(c) => format!("checkpoint {c}"),
            Marker::End => "end".into(),
        }
    }

    fn decode(v: &[u8]) -> Option<Self> {
        match std::str::from_utf8(v).ok()? {
            "reset" => Some(Marker::Reset),
            "end" => Some(Marker::End),
            s => s
                .strip_prefix("checkpoint ")?
                .parse()
                .ok()
                .map(Marker::Checkpoint),
        }
    }
}

/// A sink instance writing to `uri`'s topic.
pub struct KafkaSink<T, E> {
    uri: KafkaUri,
    control: String,
    /// Its partition of `control` ([`control_partition`]).
    partition: i32,
    transactional_id: String,
    encoder: E,
    producer: Option<BaseProducer<Quiet>>,
    in_transaction: bool,
    /// Without checkpoints: every batch commits on its own.
    commit_each_write: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Records written.
    written: u64,
    _t: PhantomData<fn(T)>,
}

impl<T, E: Encoder<T>> KafkaSink<T, E> {
    /// Instance `instance` of a sink writing `uri`'s topic with `encoder`. Its transactional id
    /// is `<prefix>-<instance>`, the prefix from the address's `transactional-id-prefix`
    /// parameter, by default `xorflow-<topic>`: two jobs writing one topic at once need
    /// different prefixes (each would fence the other).
    pub fn new(uri: KafkaUri, instance: usize, encoder: E) -> Self {
        let prefix = uri
            .params
            .get("transactional-id-prefix")
            .cloned()
            .unwrap_or_else(|| format!("xorflow-{}", uri.topic));
        KafkaSink {
            control: control_topic(&uri.topic),
            partition: control_partition(instance),
            transactional_id: format!("{prefix}-{instance}"),
            uri,
            encoder,
            producer: None,
            in_transaction: false,
            commit_each_write: true,
            key: Vec::new(),
            value: Vec::new(),
            written: 0,
            _t: PhantomData,
        }
    }

    /// The producer, initialized for transactions (fencing an earlier one with the same id).
    fn producer(&mut self) -> Result<&BaseProducer<Quiet>, String> {
        if self.producer.is_none() {
            let client = format!("xorflow-sink-{}", self.transactional_id);
            let p: BaseProducer<Quiet> =
                settings::transactional_producer(&self.uri, &client, &self.transactional_id)
                    .create_with_context(Quiet::default())
                    .map_err(|e| format!("{}: cannot create a producer: {e}", self.uri))?;
            p.init_transactions(BROKER_TIMEOUT).map_err(|e| {
                format!(
                    "{}: cannot start transactions as '{}': {e}",
                    self.uri, self.transactional_id
                )
            })?;
            self.producer = Some(p);
        }
        Ok(self.producer.as_ref().expect("just created"))
    }

    /// Waits until the producer's own metadata has this instance's control partition with a
    /// leader: just after another instance grew the topic, the broker may still answer with the
    /// old partition count, and a marker sent then fails delivery ("unknown partition"), which
    /// fails the transaction (seen in CI with six instances growing one topic).
    fn await_partition(&self) -> Result<(), String> {
        let p = self.producer.as_ref().expect("created");
        let t0 = std::time::Instant::now();
        loop {
            let md = p
                .client()
                .fetch_metadata(Some(&self.control), BROKER_TIMEOUT)
                .map_err(|e| format!("{}: no metadata for '{}': {e}", self.uri, self.control))?;
            let ready = (md.topics().iter().find(|t| t.name() == self.control))
                .and_then(|t| t.partitions().iter().find(|q| q.id() == self.partition))
                .is_some_and(|q| q.error().is_none() && q.leader() >= 0);
            if ready {
                return Ok(());
            }
            if t0.elapsed() > BROKER_TIMEOUT {
                return Err(format!(
                    "{}: partition {} of '{}' has no leader after {} s",
                    self.uri,
                    self.partition,
                    self.control,
                    BROKER_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn begin(&mut self) -> Result<(), String> {
        if !self.in_transaction {
            let uri = self.uri.clone();
            self.producer()?
                .begin_transaction()
                .map_err(|e| format!("{uri}: cannot begin a transaction: {e}"))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    /// Sends one record (to `partition`, or the one the partitioner picks), waiting while
    /// librdkafka's queue is full.
    fn send(
        &self,
        topic: &str,
        partition: Option<i32>,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), String> {
        let p = self.producer.as_ref().expect("in a transaction");
        send_record(p, &self.uri, topic, partition, key, Some(value))
    }

    /// Writes `marker` and commits the open transaction (opening one if none is).
    fn commit_with(&mut self, marker: Marker) -> Result<(), String> {
        self.begin()?;
        let (control, id) = (self.control.clone(), self.transactional_id.clone());
        let partition = Some(self.partition);
        self.send(
            &control,
            partition,
            id.as_bytes(),
            marker.encode().as_bytes(),
        )?;
        let uri = &self.uri;
        self.producer
            .as_ref()
            .expect("in a transaction")
            .commit_transaction(BROKER_TIMEOUT)
            .map_err(|e| format!("{uri}: cannot commit ({}): {e}", marker.encode()))?;
        self.in_transaction = false;
        Ok(())
    }

    /// The last marker of this sink's transactional id in its partition of the control topic
    /// (committed ones only), read to its end: call after [`KafkaSink::producer`] fenced this
    /// id's predecessor, so that no transaction is open there.
    fn last_marker(&self) -> Result<Option<Marker>, String> {
        let uri = self.uri.with_topic(&self.control);
        let id = self.transactional_id.as_bytes();
        Ok(crate::dump::read_partitions(&uri, &[self.partition])?
            .iter()
            .filter(|r| r.key.as_deref() == Some(id))
            .filter_map(|r| Marker::decode(&r.value))
            .next_back())
    }
}

/// Sends one record (`value` None: a tombstone) to `partition`, or the one the partitioner picks
/// (by the key's hash when there is one), waiting while librdkafka's queue is full.
fn send_record<C>(
    p: &BaseProducer<C>,
    uri: &KafkaUri,
    topic: &str,
    partition: Option<i32>,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), String>
where
    C: rdkafka::producer::ProducerContext<DeliveryOpaque = ()>,
{
    let mut rec = BaseRecord::<[u8], [u8]>::to(topic);
    if let Some(v) = value {
        rec = rec.payload(v);
    }
    if !key.is_empty() {
        rec = rec.key(key);
    }
    if let Some(partition) = partition {
        rec = rec.partition(partition);
    }
    crate::producer::send_waiting(p, rec)
        .map_err(|e| format!("{uri}: cannot send to '{topic}': {e}"))
}

impl<T: Send, E: Encoder<T>> Sink<T> for KafkaSink<T, E> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        self.begin()?;
        let (mut key, mut value) = (
            std::mem::take(&mut self.key),
            std::mem::take(&mut self.value),
        );
        let (uri, producer) = (&self.uri, self.producer.as_ref().expect("in a transaction"));
        let topic = &uri.topic;
        let mut emit = |k: &[u8], v: Option<&[u8]>| send_record(producer, uri, topic, None, k, v);
        for e in &batch {
            self.encoder
                .encode_records(e, &mut key, &mut value, &mut emit)?;
        }
        self.encoder.end_batch(&mut emit)?;
        self.written += batch.len() as u64;
        (self.key, self.value) = (key, value);
        if self.commit_each_write {
            let uri = &self.uri;
            self.producer
                .as_ref()
                .expect("in a transaction")
                .commit_transaction(BROKER_TIMEOUT)
                .map_err(|e| format!("{uri}: cannot commit: {e}"))?;
            self.in_transaction = false;
        }
        Ok(())
    }

    fn open(&mut self, checkpointed: bool) -> Result<(), OperatorError> {
        self.commit_each_write = !checkpointed;
        let control = self.uri.with_topic(&self.control);
        let partitions = self.partition as usize + 1;
        crate::admin::ensure_partitions(&control, partitions, &[("cleanup.policy", "compact")])?;
        self.producer()?;
        self.await_partition()?;
        Ok(())
    }

    fn staging(&self) -> Staging {
        Staging::PerCheckpoint
    }

    fn commit(&mut self, checkpoint: u64) -> Result<(), OperatorError> {
        Ok(self.commit_with(Marker::Checkpoint(checkpoint))?)
    }

    /// Aborts what this instance has open (the killed process's transaction was aborted when
    /// the producer was initialized). Writes no marker, even for `None` (a snapshot taken
    /// before this instance's first commit): the marker of a commit made after that snapshot
    /// must stay the last one, or [`Sink::durable_commit`] would not see it and the restored
    /// run would write that checkpoint's output again (duplicates after kill -9 when the run
    /// restored checkpoint 1, `crates/cli/tests/kafka/flights.rs`).
    fn rollback(&mut self, _committed: Option<u64>) -> Result<(), OperatorError> {
        if self.in_transaction {
            let uri = self.uri.clone();
            self.producer()?
                .abort_transaction(BROKER_TIMEOUT)
                .map_err(|e| format!("{uri}: cannot abort a transaction: {e}"))?;
            self.in_transaction = false;
        }
        Ok(())
    }

    /// A run that restores nothing marks its start (a `reset` marker): markers of an earlier
    /// run with the same transactional id are not its own.
    fn fresh_start(&mut self) -> Result<(), OperatorError> {
        self.rollback(None)?;
        Ok(self.commit_with(Marker::Reset)?)
    }

    fn durable_commit(&mut self) -> Result<Option<u64>, OperatorError> {
        self.producer()?;
        Ok(match self.last_marker()? {
            None | Some(Marker::Reset) => None,
            Some(Marker::Checkpoint(c)) => Some(c),
            Some(Marker::End) => Some(u64::MAX),
        })
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        if self.in_transaction {
            self.commit_with(Marker::End)?;
        }
        Ok(())
    }

    fn report(&mut self, stats: &mut xorflow_runtime::VertexStats) {
        stats.count("kafka_records_written", self.written);
    }
}
