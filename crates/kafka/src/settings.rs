//! The librdkafka settings the connectors set, each with why (docs/kafka.md, "Client settings").
//! Settings given in the address (`kafka://h:p/t?security.protocol=ssl`) are applied last and
//! override these.

use crate::uri::KafkaUri;
use rdkafka::ClientConfig;
use std::time::Duration;

/// How long a transaction may stay open before the broker aborts it, ms. Must not exceed the
/// broker's `transaction.max.timeout.ms` (15 min by default): Flink's 1 h default makes its
/// users' producers fail against a stock broker. xorflow's sink opens a transaction only when a
/// checkpoint is complete and commits it at once (`sink.rs`), so a minute is ample; it is also
/// how long a transaction left open by a killed process blocks `read_committed` readers of its
/// partitions at the longest (a restarted sink fences and aborts it at once).
pub const TRANSACTION_TIMEOUT_MS: u64 = 60_000;

/// How long admin and transaction calls wait for the broker before failing, and how long a
/// source keeps polling while every call fails before it gives up on the broker.
pub const BROKER_TIMEOUT: Duration = Duration::from_secs(30);

/// The settings every client shares: where the brokers are and who is asking.
fn base(uri: &KafkaUri, client_id: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &uri.bootstrap)
        .set("client.id", client_id)
        // Errors only: librdkafka warns of every retry it makes on its own (a coordinator still
        // loading, a broker restarting); what fails for good reaches the connectors as errors.
        .set_log_level(rdkafka::config::RDKafkaLogLevel::Error);
    c
}

/// Applies the address's own librdkafka settings (they win over ours).
fn finish(mut c: ClientConfig, uri: &KafkaUri) -> ClientConfig {
    for (k, v) in uri.client_settings() {
        c.set(k, v);
    }
    c
}

/// A source instance's consumer: assigned partitions, positions from xorflow's checkpoints.
pub fn consumer(uri: &KafkaUri, client_id: &str) -> ClientConfig {
    let mut c = base(uri, client_id);
    // Positions live in xorflow's checkpoints, not in the consumer group: nothing is committed
    // to Kafka, and the group id only satisfies librdkafka (no group is joined, `assign`).
    c.set("group.id", format!("xorflow-{}", uri.topic))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        // Only committed transactions: a topic written by xorflow's own sink (or Flink's) is
        // read without the records of aborted ones.
        .set("isolation.level", "read_committed")
        // A checkpointed offset the broker has deleted (retention) is an error, not a silent
        // jump to the start or the end of the partition.
        .set("auto.offset.reset", "error")
        // Bounded reads end a partition at its end.
        .set("enable.partition.eof", "true")
        // A fetch returns after at most 100 ms without data (librdkafka's 500 ms would add up
        // to half a second to a live feed's latency).
        .set("fetch.wait.max.ms", "100")
        // librdkafka stops fetching a partition once 100,000 records wait in its queue and
        // then backs off for a full second (`fetch.queue.backoff.ms`, 1000 by default): a
        // backlog of small records (a topic read from its start, a changelog replayed) was
        // read in one-second steps. Prefetch more, and look again after 10 ms.
        .set("queued.min.messages", "1000000")
        .set("fetch.queue.backoff.ms", "10");
    finish(c, uri)
}

/// The sink's transactional producer with id `transactional_id`.
pub fn transactional_producer(
    uri: &KafkaUri,
    client_id: &str,
    transactional_id: &str,
) -> ClientConfig {
    let mut c = base(uri, client_id);
    c.set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS.to_string())
        // librdkafka refuses a delivery timeout longer than the transaction's.
        .set(
            "message.timeout.ms",
            (TRANSACTION_TIMEOUT_MS - 5_000).to_string(),
        )
        // Batches of a commit go out together: a commit is one burst of records.
        .set("linger.ms", "5");
    finish(c, uri)
}

/// A plain producer (loading a topic): idempotent, so retries neither duplicate nor reorder
/// records within a partition.
pub fn producer(uri: &KafkaUri, client_id: &str) -> ClientConfig {
    let mut c = base(uri, client_id);
    c.set("enable.idempotence", "true")
        .set("linger.ms", "20")
        .set("message.timeout.ms", "60000");
    finish(c, uri)
}

/// An admin client or a short-lived metadata reader.
pub fn admin(uri: &KafkaUri) -> ClientConfig {
    finish(base(uri, "xorflow-admin"), uri)
}
