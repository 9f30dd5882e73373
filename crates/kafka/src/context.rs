//! What librdkafka reports on its own (`error` callbacks): each distinct error once as a
//! warning, repeats at debug level, and the end of a partition not at all (it is a normal
//! event, which the connectors handle as such). Errors that end a run reach the connectors as
//! results and are reported there.

use rdkafka::client::ClientContext;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;
use rdkafka::producer::ProducerContext;
use std::collections::HashSet;
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
