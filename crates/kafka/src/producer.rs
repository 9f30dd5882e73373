//! Loading records into a topic (`xorflow kafka produce-flights`, tests, benchmarks): an
//! idempotent producer that counts what the broker confirmed and fails on what it refused.

use crate::context::Deliveries;
use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use std::time::{Duration, Instant};

/// Queues `rec` on `producer`, serving delivery reports while librdkafka's queue is full, for
/// at most the broker timeout.
///
/// # Errors
/// The record is refused, or the queue stays full.
pub(crate) fn send_waiting<C, K, P>(
    producer: &BaseProducer<C>,
    mut rec: BaseRecord<'_, K, P>,
) -> Result<(), KafkaError>
where
    C: rdkafka::producer::ProducerContext<DeliveryOpaque = ()>,
    K: rdkafka::message::ToBytes + ?Sized,
    P: rdkafka::message::ToBytes + ?Sized,
{
    let start = Instant::now();
    loop {
        match producer.send(rec) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r))
                if start.elapsed() < BROKER_TIMEOUT =>
            {
                producer.poll(Duration::from_millis(5));
                rec = r;
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// A producer writing records to one topic.
pub struct Loader {
    uri: KafkaUri,
    producer: BaseProducer<Deliveries>,
    sent: u64,
}

impl Loader {
    /// A producer for `uri`'s topic.
    ///
    /// # Errors
    /// The client cannot be created (a bad setting in the address).
    pub fn new(uri: &KafkaUri) -> Result<Self, String> {
        let producer = settings::producer(uri, "xorflow-loader")
            .create_with_context(Deliveries::default())
            .map_err(|e| format!("{uri}: cannot create a producer: {e}"))?;
        Ok(Loader {
            uri: uri.clone(),
            producer,
            sent: 0,
        })
    }

    /// Queues one record for `partition` with timestamp `timestamp_ms` (ms since the epoch),
    /// waiting while librdkafka's queue is full.
    ///
    /// # Errors
    /// The record is refused, or the queue stays full for the broker timeout; or an earlier
    /// record failed.
    pub fn send(
        &mut self,
        partition: i32,
        timestamp_ms: i64,
        key: Option<&[u8]>,
        value: &[u8],
    ) -> Result<(), String> {
        let mut rec = BaseRecord::to(&self.uri.topic)
            .partition(partition)
            .timestamp(timestamp_ms)
            .payload(value);
        if let Some(k) = key {
            rec = rec.key(k);
        }
        send_waiting(&self.producer, rec).map_err(|e| format!("{}: cannot send: {e}", self.uri))?;
        self.sent += 1;
        if self.sent.is_multiple_of(4096) {
            self.producer.poll(Duration::ZERO);
            self.check()?;
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        match self.producer.context().failure() {
            Some(e) => Err(format!("{}: the broker refused a record: {e}", self.uri)),
            None => Ok(()),
        }
    }

    /// Waits until every record is delivered; returns how many were.
    ///
    /// # Errors
    /// A record failed, or they were not all delivered within the broker timeout.
    pub fn finish(self) -> Result<u64, String> {
        self.producer
            .flush(BROKER_TIMEOUT)
            .map_err(|e| format!("{}: not every record was delivered: {e}", self.uri))?;
        self.check()?;
        let n = self.producer.context().delivered();
        if n != self.sent {
            return Err(format!(
                "{}: {} of {} records were delivered",
                self.uri, n, self.sent
            ));
        }
        Ok(n)
    }
}
