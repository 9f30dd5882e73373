//! What librdkafka reports on its own (`error` callbacks): each distinct error once as a
//! warning, repeats at debug level, and the end of a partition not at all (it is a normal
//! event, which the connectors handle as such). Errors that end a run reach the connectors as
//! results and are reported there.

use rdkafka::client::ClientContext;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::ProducerContext;
use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// The connectors' client context.
#[derive(Default)]
pub struct Quiet {
    seen: Mutex<HashSet<String>>,
}

impl Quiet {
    /// Logs `error` as [`Quiet`]'s doc says.
    pub fn report(&self, error: &KafkaError, reason: &str) {
        if matches!(error, KafkaError::PartitionEOF(_))
            || error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::PartitionEOF)
        {
            return;
        }
        let text = format!("{error}: {reason}");
        let first = self.seen.lock().is_ok_and(|mut s| s.insert(text.clone()));
        if first {
            tracing::warn!("kafka: {text}");
        } else {
            tracing::debug!("kafka: {text}");
        }
    }
}

impl ClientContext for Quiet {
    fn error(&self, error: KafkaError, reason: &str) {
        self.report(&error, reason);
    }
}

impl ConsumerContext for Quiet {}

impl ProducerContext for Quiet {
    type DeliveryOpaque = ();
    /// Failed deliveries of a transactional producer fail its commit; nothing to do here.
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

/// A plain producer's context: [`Quiet`], and what the broker confirmed: how many records, the
/// largest offset, and the first failure.
pub struct Deliveries {
    delivered: AtomicU64,
    max_offset: AtomicI64,
    failure: Mutex<Option<String>>,
    quiet: Quiet,
}

impl Default for Deliveries {
    fn default() -> Self {
        Deliveries {
            delivered: AtomicU64::new(0),
            max_offset: AtomicI64::new(-1),
            failure: Mutex::new(None),
            quiet: Quiet::default(),
        }
    }
}

impl Deliveries {
    /// Records delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// The largest offset delivered (-1: none yet).
    pub fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Relaxed)
    }

    /// The first delivery failure, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl ClientContext for Deliveries {
    fn error(&self, error: KafkaError, reason: &str) {
        self.quiet.report(&error, reason);
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, r: &DeliveryResult<'_>, _: ()) {
        match r {
            Ok(m) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                self.max_offset.fetch_max(m.offset(), Ordering::Relaxed);
            }
            Err((e, _)) => {
                let mut f = self
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                f.get_or_insert_with(|| e.to_string());
            }
        }
    }
}
