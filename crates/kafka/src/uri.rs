//! `kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?key=value&...]`: where a job reads or writes.

use std::collections::BTreeMap;

/// A parsed Kafka address: the bootstrap servers, one topic, and client settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaUri {
    /// `host:port[,host:port...]` (librdkafka's `bootstrap.servers`).
    pub bootstrap: String,
    /// The topic.
    pub topic: String,
    /// Query parameters, in key order: librdkafka client settings (`security.protocol=ssl`) and
    /// the connector options that the parameter's reader names.
    pub params: BTreeMap<String, String>,
}

impl KafkaUri {
    /// True for text that asks for Kafka (starts with `kafka://`), so a caller can tell a topic
    /// from a file path before parsing.
    pub fn is_kafka(text: &str) -> bool {
        text.starts_with("kafka://")
    }

    /// Parses `text`.
    ///
    /// # Errors
    /// A message quoting `text` and saying what is wrong: another scheme, no host or port, no
    /// topic or one that Kafka would refuse (empty, longer than 249 bytes, characters other than
    /// ASCII letters, digits, `.`, `_`, `-`), a parameter without `=`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!("'{text}' is not a Kafka address kafka://HOST:PORT/TOPIC[?key=value]: {why}")
        };
        let rest = text
            .strip_prefix("kafka://")
            .ok_or_else(|| bad("it does not start with kafka://"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, topic) = rest.split_once('/').ok_or_else(|| bad("no /TOPIC"))?;
        if hosts.is_empty() {
            return Err(bad("no HOST:PORT"));
        }
        for h in hosts.split(',') {
            let (host, port) = h
                .rsplit_once(':')
                .ok_or_else(|| bad(&format!("'{h}' has no :PORT")))?;
            if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(bad(&format!("'{h}' is not HOST:PORT")));
            }
        }
        check_topic(topic).map_err(|e| bad(&e))?;
        let mut params = BTreeMap::new();
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad(&format!("parameter '{kv}' has no '='")))?;
            params.insert(k.to_string(), v.to_string());
        }
        Ok(KafkaUri {
            bootstrap: hosts.to_string(),
            topic: topic.to_string(),
            params,
        })
    }

    /// The same servers and parameters with another topic.
    pub fn with_topic(&self, topic: &str) -> Self {
        KafkaUri {
            topic: topic.to_string(),
            ..self.clone()
        }
    }

    /// Parameter `key` parsed as `T`, if given.
    ///
    /// # Errors
    /// The value does not parse; the message names the key and the address.
    pub fn param<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, String> {
        self.params
            .get(key)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("parameter {key}='{v}' of {self} is not a valid value"))
            })
            .transpose()
    }

    /// The librdkafka settings among the parameters: those with a dot in their key
    /// (`security.protocol`), which is how every librdkafka setting is spelled; the connectors'
    /// own options have none.
    pub fn client_settings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params
            .iter()
            .filter(|(k, _)| k.contains('.'))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl std::fmt::Display for KafkaUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kafka://{}/{}", self.bootstrap, self.topic)
    }
}

/// Kafka's own rule for topic names (`org.apache.kafka.common.internals.Topic.validate`).
///
/// # Errors
/// What is wrong with `topic`.
pub fn check_topic(topic: &str) -> Result<(), String> {
    if topic.is_empty() {
        return Err("the topic is empty".into());
    }
    if topic.len() > 249 {
        return Err(format!(
            "the topic is {} bytes long, at most 249",
            topic.len()
        ));
    }
    if topic == "." || topic == ".." {
        return Err(format!("'{topic}' cannot be a topic"));
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "the topic has '{}'; Kafka allows ASCII letters, digits, '.', '_' and '-'",
            c.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_topic_and_parameters() {
        let u = KafkaUri::parse("kafka://a:1,b:9092/flights?idle-timeout=5s&client.id=x").unwrap();
        assert_eq!(u.bootstrap, "a:1,b:9092");
        assert_eq!(u.topic, "flights");
        assert_eq!(u.params["idle-timeout"], "5s");
        assert_eq!(
            u.client_settings().collect::<Vec<_>>(),
            [("client.id", "x")]
        );
        assert_eq!(u.to_string(), "kafka://a:1,b:9092/flights");
        assert_eq!(u.with_topic("t2").topic, "t2");
    }

    #[test]
    fn refuses_what_kafka_would_with_the_reason() {
        for (text, why) in [
            ("file.csv", "does not start"),
            ("kafka://localhost:9092", "no /TOPIC"),
            ("kafka:///t", "no HOST:PORT"),
            ("kafka://localhost/t", "no :PORT"),
            ("kafka://localhost:0/t", "not HOST:PORT"),
            ("kafka://localhost:99999/t", "not HOST:PORT"),
            ("kafka://h:1/", "topic is empty"),
            ("kafka://h:1/a b", "has ' '"),
            ("kafka://h:1/..", "cannot be a topic"),
            ("kafka://h:1/t?x", "no '='"),
        ] {
            let e = KafkaUri::parse(text).unwrap_err();
            assert!(e.contains(why) && e.contains(text), "{text}: {e}");
        }
        let long = format!("kafka://h:1/{}", "t".repeat(250));
        assert!(KafkaUri::parse(&long).unwrap_err().contains("at most 249"));
    }

    #[test]
    fn a_parameter_that_does_not_parse_is_named() {
        let u = KafkaUri::parse("kafka://h:1/t?partitions=x").unwrap();
        let e = u.param::<u32>("partitions").unwrap_err();
        assert!(e.contains("partitions='x'"), "{e}");
        assert_eq!(u.param::<u32>("absent").unwrap(), None);
    }
}
