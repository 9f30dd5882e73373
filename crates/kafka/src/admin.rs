//! Topic administration: how many partitions a topic has, creating topics with the settings
//! the user gives, reading a topic's settings back.

use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::admin::{
    AdminClient, AdminOptions, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use std::time::Duration;

/// `uri`'s topic's partition count.
///
/// # Errors
/// The brokers do not answer within `timeout` ("cannot reach Kafka at ..."), the topic does not
/// exist, or it has no partitions.
pub fn partitions(uri: &KafkaUri, timeout: Duration) -> Result<usize, String> {
    let c: BaseConsumer<crate::context::Quiet> = settings::admin(uri)
        .create_with_context(crate::context::Quiet::default())
        .map_err(|e| format!("{uri}: cannot create a Kafka client: {e}"))?;
    let md = c
        .fetch_metadata(Some(&uri.topic), timeout)
        .map_err(|e| unreachable(uri, timeout, &e.to_string()))?;
    let t = md
        .topics()
        .iter()
        .find(|t| t.name() == uri.topic)
        .ok_or_else(|| format!("{uri}: the broker sent no metadata for the topic"))?;
    match t.error() {
        Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => {
            Err(format!("{uri}: topic '{}' does not exist", uri.topic))
        }
        Some(e) => Err(format!("{uri}: {}", RDKafkaErrorCode::from(e))),
        None if t.partitions().is_empty() => Err(format!("{uri}: the topic has no partitions")),
        None => Ok(t.partitions().len()),
    }
}

fn unreachable(uri: &KafkaUri, timeout: Duration, e: &str) -> String {
    format!(
        "cannot reach Kafka at {} within {} s ({e}): is a broker running there? \
         (scripts/kafka.sh start)",
        uri.bootstrap,
        timeout.as_secs()
    )
}

/// Runs an admin future on a throwaway current-thread runtime (rdkafka's admin API is async;
/// the callers are plain threads).
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start a runtime for Kafka's admin client: {e}"))?;
    Ok(rt.block_on(f))
}

fn admin_client(uri: &KafkaUri) -> Result<AdminClient<DefaultClientContext>, String> {
    settings::admin(uri)
        .create()
        .map_err(|e| format!("{uri}: cannot create a Kafka admin client: {e}"))
}

/// What [`create_topic`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// The topic is new.
    Created,
    /// It existed already (and was left as it was).
    Existed,
}

/// Creates `uri`'s topic with `partitions` partitions, replication factor 1 (this project's
/// brokers are single nodes; a cluster's default replication is set on the broker) and the topic
/// settings `configs` (`cleanup.policy=compact`, ...). An existing topic is left alone. Returns
/// once every partition has a leader: the broker answers CreateTopics before its metadata
/// names the leaders, and a request in that gap fails with `NotLeaderForPartition`.
///
/// # Errors
/// The broker is unreachable or refuses (a setting it does not know, more partitions than it
/// allows), naming the topic and the broker's reason; partitions without a leader after
/// [`BROKER_TIMEOUT`].
pub fn create_topic(
    uri: &KafkaUri,
    partitions: usize,
    configs: &[(&str, &str)],
) -> Result<Created, String> {
    let admin = admin_client(uri)?;
    let n =
        i32::try_from(partitions).map_err(|_| format!("{partitions} partitions is too many"))?;
    let mut t = NewTopic::new(&uri.topic, n, TopicReplication::Fixed(1));
    for (k, v) in configs {
        t = t.set(k, v);
    }
    let opts = AdminOptions::new().operation_timeout(Some(BROKER_TIMEOUT));
    let r = block_on(admin.create_topics([&t], &opts))?
        .map_err(|e| unreachable(uri, BROKER_TIMEOUT, &e.to_string()))?;
    let created = match r.into_iter().next() {
        Some(Ok(_)) => Created::Created,
        Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => Created::Existed,
        Some(Err((_, code))) => {
            return Err(format!(
                "{uri}: the broker refused to create the topic: {code}"
            ))
        }
        None => {
            return Err(format!(
                "{uri}: the broker did not answer the topic's creation"
            ))
        }
    };
    wait_for_leaders(uri, BROKER_TIMEOUT)?;
    Ok(created)
}

/// Makes `uri`'s topic (created as [`create_topic`] does, with `configs`) have at least
/// `partitions` partitions, adding partitions to an existing topic with fewer. Callers may race
/// to grow one topic to different sizes (a sink's instances: `sink.rs`): the broker refuses a
/// request for no more partitions than the topic has by then, and its metadata may show the
/// old count for a moment after a grow, so a refusal is followed by reading the count again
/// (and asking again while it is short) until the broker timeout. Returns once every partition
/// has a leader.
///
/// # Errors
/// As [`create_topic`]; the topic still has fewer partitions after [`BROKER_TIMEOUT`], with the
/// broker's last reason.
pub fn ensure_partitions(
    uri: &KafkaUri,
    partitions: usize,
    configs: &[(&str, &str)],
) -> Result<(), String> {
    if create_topic(uri, partitions, configs)? == Created::Created {
        return Ok(());
    }
    let admin = admin_client(uri)?;
    let t0 = std::time::Instant::now();
    loop {
        if self::partitions(uri, BROKER_TIMEOUT)? >= partitions {
            return wait_for_leaders(uri, BROKER_TIMEOUT);
        }
        let grow = NewPartitions::new(&uri.topic, partitions);
        let opts = AdminOptions::new().operation_timeout(Some(BROKER_TIMEOUT));
        let r = block_on(admin.create_partitions([&grow], &opts))?
            .map_err(|e| unreachable(uri, BROKER_TIMEOUT, &e.to_string()))?;
        match r.into_iter().next() {
            Some(Err((_, code))) if t0.elapsed() >= BROKER_TIMEOUT => {
                return Err(format!(
                    "{uri}: the broker refused to grow the topic to {partitions} partitions: \
                     {code}"
                ));
            }
            // Refused: another caller grew it meanwhile (read the count again), or to fewer.
            Some(Err(_)) => std::thread::sleep(Duration::from_millis(50)),
            _ => return wait_for_leaders(uri, BROKER_TIMEOUT),
        }
    }
}

/// A topic to load records into: creates `uri`'s topic with `partitions` partitions and the
/// settings `configs` ([`create_topic`]), or takes an existing one that has as many partitions
/// (the loaders' `--partitions`).
///
/// # Errors
/// As [`create_topic`]; `partitions` is 0; the topic exists with another partition count.
pub fn topic_for_loading(
    uri: &KafkaUri,
    partitions: usize,
    configs: &[(&str, &str)],
) -> Result<Created, String> {
    if partitions == 0 {
        return Err("--partitions must be at least 1".into());
    }
    let created = create_topic(uri, partitions, configs)?;
    let have = self::partitions(uri, BROKER_TIMEOUT)?;
    if have != partitions {
        return Err(format!(
            "{uri}: the topic exists with {have} partitions, and --partitions asks for \
             {partitions}: choose another topic or --partitions {have}"
        ));
    }
    Ok(created)
}

/// Waits until the metadata of `uri`'s topic names a leader for every partition.
///
/// # Errors
/// Still a partition without a leader (or no metadata) after `timeout`, naming the last reason.
pub fn wait_for_leaders(uri: &KafkaUri, timeout: Duration) -> Result<(), String> {
    let c: BaseConsumer<crate::context::Quiet> = settings::admin(uri)
        .create_with_context(crate::context::Quiet::default())
        .map_err(|e| format!("{uri}: cannot create a Kafka client: {e}"))?;
    let t0 = std::time::Instant::now();
    loop {
        let why = match c.fetch_metadata(Some(&uri.topic), timeout) {
            Err(e) => e.to_string(),
            Ok(md) => match md.topics().iter().find(|t| t.name() == uri.topic) {
                None => "no metadata for the topic".to_string(),
                Some(t) if t.error().is_some() => {
                    RDKafkaErrorCode::from(t.error().unwrap()).to_string()
                }
                Some(t) if t.partitions().is_empty() => "no partitions yet".to_string(),
                Some(t) => match t
                    .partitions()
                    .iter()
                    .find(|p| p.error().is_some() || p.leader() < 0)
                {
                    None => return Ok(()),
                    Some(p) => format!("partition {} has no leader", p.id()),
                },
            },
        };
        if t0.elapsed() >= timeout {
            return Err(format!(
                "{uri}: the topic is not ready after {} s: {why}",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `e` is one of the errors Kafka's protocol marks retriable because leadership or
/// metadata is moving (a new topic, a broker restart): worth asking again after a pause.
pub fn is_transient(e: &rdkafka::error::KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::NotLeaderForPartition
                | RDKafkaErrorCode::LeaderNotAvailable
                | RDKafkaErrorCode::UnknownTopicOrPartition
                | RDKafkaErrorCode::RequestTimedOut
                | RDKafkaErrorCode::NotEnoughReplicas
                | RDKafkaErrorCode::BrokerNotAvailable
        )
    )
}

/// The topic's settings as the broker holds them (name -> value), for reports.
///
/// # Errors
/// The broker is unreachable or does not know the topic.
pub fn topic_configs(uri: &KafkaUri) -> Result<Vec<(String, String)>, String> {
    let admin = admin_client(uri)?;
    let opts = AdminOptions::new().request_timeout(Some(BROKER_TIMEOUT));
    let r = block_on(admin.describe_configs([&ResourceSpecifier::Topic(&uri.topic)], &opts))?
        .map_err(|e| unreachable(uri, BROKER_TIMEOUT, &e.to_string()))?;
    let res = r
        .into_iter()
        .next()
        .ok_or_else(|| format!("{uri}: no answer for the topic's settings"))?
        .map_err(|e| format!("{uri}: cannot read the topic's settings: {e}"))?;
    Ok(res
        .entries
        .into_iter()
        .filter_map(|e| e.value.map(|v| (e.name, v)))
        .collect())
}

/// Deletes `uri`'s topic (tests and benchmarks start from an empty one). A missing topic is not
/// an error.
///
/// # Errors
/// The broker is unreachable or refuses.
pub fn delete_topic(uri: &KafkaUri) -> Result<(), String> {
    let admin = admin_client(uri)?;
    let opts = AdminOptions::new().operation_timeout(Some(BROKER_TIMEOUT));
    let r = block_on(admin.delete_topics(&[&uri.topic], &opts))?
        .map_err(|e| unreachable(uri, BROKER_TIMEOUT, &e.to_string()))?;
    match r.into_iter().next() {
        Some(Err((_, code))) if code != RDKafkaErrorCode::UnknownTopicOrPartition => {
            Err(format!("{uri}: cannot delete the topic: {code}"))
        }
        _ => Ok(()),
    }
}
