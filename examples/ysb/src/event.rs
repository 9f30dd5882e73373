//! One YSB event: the JSON object the original generator writes per line
//! (yahoo/streaming-benchmarks, `data/src/setup/core.clj`, `make-kafka-event-at`), e.g.
//!
//! ```text
//! {"user_id": "<uuid>", "page_id": "<uuid>", "ad_id": "<uuid>", "ad_type": "banner", "event_type": "view", "event_time": "1700000000000", "ip_address": "1.2.3.4"}
//! ```
//!
//! `event_time` is milliseconds since the Unix epoch, written as a string.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The ad types the original generator draws from, uniformly.
pub const AD_TYPES: [&str; 5] = ["banner", "modal", "sponsored-search", "mail", "mobile"];

/// What a user did with an ad.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// The only type the job counts.
    View,
    /// Clicked the ad.
    Click,
    /// Bought.
    Purchase,
}

impl EventType {
    /// All types, in the order the original generator lists them (it draws uniformly).
    pub const ALL: [EventType; 3] = [EventType::View, EventType::Click, EventType::Purchase];

    /// The name in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            EventType::View => "view",
            EventType::Click => "click",
            EventType::Purchase => "purchase",
        }
    }
}

/// One event. `S` is the string type of the text fields (`String`; `&str` to write one without
/// copying). Every field is required (the original's Flink job deserializes all seven); unknown
/// fields are refused so a file of another format is not read as one of skipped lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event<S = String> {
    /// A UUID.
    pub user_id: S,
    /// A UUID.
    pub page_id: S,
    /// A UUID, a key of the ad -> campaign table.
    pub ad_id: S,
    /// One of [`AD_TYPES`] (not checked: the job never reads it).
    pub ad_type: S,
    /// view, click or purchase.
    pub event_type: EventType,
    /// Milliseconds since the epoch (a string in the JSON, as the original writes it).
    #[serde(with = "millis")]
    pub event_time: u64,
    /// An IPv4 address as text (not checked).
    pub ip_address: S,
}

/// `event_time` as the original writes it: decimal milliseconds in a string.
mod millis {
    use serde::{de, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_str(Millis)
    }

    struct Millis;

    impl de::Visitor<'_> for Millis {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("milliseconds since the epoch in a string")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
            s.parse()
                .map_err(|_| E::custom(format!("event_time '{s}' is not milliseconds")))
        }
    }
}

/// One event read from its line without copying its text: the same seven required fields,
/// checked as [`parse`] checks them, each text field borrowed from the line (copied only where
/// the JSON escapes a character). The job's parse stage, the input reader and the Kafka decoder
/// read every event through this: the four text fields the job never reads cost no allocation
/// (docs/cpu.md, "The parse stage").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRef<'a> {
    /// A UUID.
    #[serde(borrow)]
    pub user_id: Cow<'a, str>,
    /// A UUID.
    #[serde(borrow)]
    pub page_id: Cow<'a, str>,
    /// A UUID, a key of the ad -> campaign table.
    #[serde(borrow)]
    pub ad_id: Cow<'a, str>,
    /// One of [`AD_TYPES`] (not checked).
    #[serde(borrow)]
    pub ad_type: Cow<'a, str>,
    /// view, click or purchase.
    pub event_type: EventType,
    /// Milliseconds since the epoch.
    #[serde(with = "millis")]
    pub event_time: u64,
    /// An IPv4 address as text (not checked).
    #[serde(borrow)]
    pub ip_address: Cow<'a, str>,
}

impl EventRef<'_> {
    /// The event with its own copies of the text.
    pub fn into_owned(self) -> Event {
        Event {
            user_id: self.user_id.into_owned(),
            page_id: self.page_id.into_owned(),
            ad_id: self.ad_id.into_owned(),
            ad_type: self.ad_type.into_owned(),
            event_type: self.event_type,
            event_time: self.event_time,
            ip_address: self.ip_address.into_owned(),
        }
    }
}

/// What the job reads of an event: its ad, type and time (the parse stage's output).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parsed {
    /// A UUID, a key of the ad -> campaign table.
    pub ad_id: crate::ad_id::AdId,
    /// view, click or purchase.
    pub event_type: EventType,
    /// Milliseconds since the epoch.
    pub event_time: u64,
}

/// Reads one line without copying its text.
///
/// # Errors
/// What is wrong with the line, as serde_json says it (a missing or unknown field, a bad type,
/// an event time that is not a whole number of milliseconds).
pub fn parse_ref(line: &str) -> Result<EventRef<'_>, String> {
    // The plain form in one scan; anything else, and every error, is serde_json's
    // (`event_scan.rs`).
    match crate::event_scan::scan(line) {
        Some(e) => Ok(e),
        None => serde_json::from_str(line).map_err(|e| e.to_string()),
    }
}

/// Parses one line into an [`Event`] with its own text.
///
/// # Errors
/// As [`parse_ref`].
pub fn parse(line: &str) -> Result<Event, String> {
    parse_ref(line).map(EventRef::into_owned)
}

impl<S: std::fmt::Display> Event<S> {
    /// The line as the original generator writes it (its field order and separators).
    pub fn to_json(&self) -> String {
        format!(
            "{{\"user_id\": \"{}\", \"page_id\": \"{}\", \"ad_id\": \"{}\", \"ad_type\": \"{}\", \
             \"event_type\": \"{}\", \"event_time\": \"{}\", \"ip_address\": \"{}\"}}",
            self.user_id,
            self.page_id,
            self.ad_id,
            self.ad_type,
            self.event_type.name(),
            self.event_time,
            self.ip_address
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "{\"user_id\": \"u\", \"page_id\": \"p\", \"ad_id\": \"a\", \"ad_type\": \
                        \"mail\", \"event_type\": \"click\", \"event_time\": \"1700000000123\", \
                        \"ip_address\": \"1.2.3.4\"}";

    #[test]
    fn parses_the_original_format_and_writes_it_back() {
        let e = parse(LINE).unwrap();
        assert_eq!(e.ad_id, "a");
        assert_eq!(e.event_type, EventType::Click);
        assert_eq!(e.event_time, 1_700_000_000_123);
        assert_eq!(e.to_json(), LINE);
    }

    /// Events cross processes in postcard, which must keep the event time.
    #[test]
    fn survives_the_wire_encoding() {
        let e = parse(LINE).unwrap();
        let bytes = postcard::to_allocvec(&e).unwrap();
        assert_eq!(postcard::from_bytes::<Event>(&bytes).unwrap(), e);
    }

    /// The borrowed read takes what the owned one takes, escapes included, and copies nothing
    /// else.
    #[test]
    fn the_borrowed_read_borrows_and_agrees_with_the_owned_one() {
        let r = parse_ref(LINE).unwrap();
        assert!(matches!(r.ad_id, Cow::Borrowed("a")) && matches!(r.ip_address, Cow::Borrowed(_)));
        let escaped = LINE.replace("\"u\"", "\"\\u0075\\\"x\"");
        let r = parse_ref(&escaped).unwrap();
        assert!(matches!(&r.user_id, Cow::Owned(u) if u == "u\"x"));
        assert_eq!(r.into_owned(), parse(&escaped).unwrap());
    }

    #[test]
    fn refuses_bad_lines_with_a_reason() {
        for (line, why) in [
            ("", "EOF"),
            ("{\"ad_id\": \"a\"}", "missing field"),
            (&LINE.replace("click", "hover"), "unknown variant"),
            (&LINE.replace("1700000000123", "17e11"), "not milliseconds"),
            (
                &LINE.replace("\"1700000000123\"", "1700000000123"),
                "invalid type",
            ),
            (&LINE.replace("\"ip_address\"", "\"ip\""), "unknown field"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(why), "{line}: {e}");
        }
    }
}
