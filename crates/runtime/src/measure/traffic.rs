//! Message accounting by kind: every message a worker or the tracker sends is counted here, in
//! messages and bytes. Counters are per thread (no shared atomics on the hot path) and summed at the
//! end of a run.
//!
//! Bytes are what the message would occupy on the wire with xorflow's encoding (fixed-width fields,
//! a 4-byte header per message), so in-process and cross-process runs report comparable figures.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Kinds of messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A batch of data elements between vertex instances.
    Data,
    /// A local-acker flush of XOR-merged acks to the tracker.
    Ack,
    /// A local-acker flush of source heartbeats to the tracker.
    Heartbeat,
    /// A frontier notification from the tracker to a worker.
    Frontier,
    /// An end-of-stream marker (tracking `none` only; trAcker needs none).
    EndOfStream,
    /// A progress marker `Marker(t)` on one channel (tracking `markers`), counted per marker even
    /// when it travels inside a data batch.
    Marker,
    /// Transport control between processes: handshakes, credits, keep-alives, shutdown.
    Control,
}

impl MessageKind {
    /// Every kind, in report order.
    pub const ALL: [MessageKind; 7] = [
        MessageKind::Data,
        MessageKind::Ack,
        MessageKind::Heartbeat,
        MessageKind::Frontier,
        MessageKind::EndOfStream,
        MessageKind::Marker,
        MessageKind::Control,
    ];

    /// Snake-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Data => "data",
            MessageKind::Ack => "ack",
            MessageKind::Heartbeat => "heartbeat",
            MessageKind::Frontier => "frontier",
            MessageKind::EndOfStream => "end_of_stream",
            MessageKind::Marker => "marker",
            MessageKind::Control => "control",
        }
    }

    /// True for service messages: what progress tracking costs (acks, heartbeats, frontier
    /// notifications, markers, end-of-stream markers). Data and transport control (handshakes,
    /// credits, keep-alives), which every mode pays alike, are not service.
    pub fn is_service(self) -> bool {
        !matches!(self, MessageKind::Data | MessageKind::Control)
    }
}

/// Bytes of a message header (kind + length) in the wire encoding.
pub const HEADER_BYTES: u64 = 4;

/// Messages and bytes of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent, headers included.
    pub bytes: u64,
}

/// Per-kind counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    counts: [Count; 7],
}

impl Traffic {
    /// Counts one message of `kind` with a payload of `payload_bytes`.
    #[inline]
    pub fn record(&mut self, kind: MessageKind, payload_bytes: u64) {
        let c = &mut self.counts[kind as usize];
        c.messages += 1;
        c.bytes += HEADER_BYTES + payload_bytes;
    }

    /// Counts one message of `kind` whose encoded size, headers included, is `bytes` (a frame
    /// that really crossed a process boundary).
    #[inline]
    pub fn record_frame(&mut self, kind: MessageKind, bytes: u64) {
        let c = &mut self.counts[kind as usize];
        c.messages += 1;
        c.bytes += bytes;
    }

    /// Counts `n` messages of `kind` with `bytes` in total.
    #[inline]
    pub fn record_n(&mut self, kind: MessageKind, n: u64, bytes: u64) {
        let c = &mut self.counts[kind as usize];
        c.messages += n;
        c.bytes += bytes;
    }

    /// Counts of one kind.
    pub fn get(&self, kind: MessageKind) -> Count {
        self.counts[kind as usize]
    }

    /// Sum over service kinds (see [`MessageKind::is_service`]).
    pub fn service(&self) -> Count {
        let mut s = Count::default();
        for k in MessageKind::ALL.iter().filter(|k| k.is_service()) {
            s.messages += self.get(*k).messages;
            s.bytes += self.get(*k).bytes;
        }
        s
    }

    /// A JSON object `{kind: {messages, bytes}, ..., service: {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for k in MessageKind::ALL {
            m.insert(k.name().to_string(), count_json(self.get(k)));
        }
        m.insert("service".into(), count_json(self.service()));
        serde_json::Value::Object(m)
    }
}

fn count_json(c: Count) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("messages".into(), c.messages.into());
    m.insert("bytes".into(), c.bytes.into());
    serde_json::Value::Object(m)
}

impl AddAssign for Traffic {
    fn add_assign(&mut self, o: Traffic) {
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            a.messages += b.messages;
            a.bytes += b.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_and_service_total() {
        let mut t = Traffic::default();
        t.record(MessageKind::Data, 100);
        t.record(MessageKind::Ack, 20);
        t.record(MessageKind::Ack, 40);
        t.record(MessageKind::Frontier, 12);
        assert_eq!(
            t.get(MessageKind::Data),
            Count {
                messages: 1,
                bytes: 104
            }
        );
        assert_eq!(
            t.get(MessageKind::Ack),
            Count {
                messages: 2,
                bytes: 68
            }
        );
        assert_eq!(
            t.service(),
            Count {
                messages: 3,
                bytes: 84
            }
        );
        let mut u = Traffic::default();
        u += t;
        u += t;
        assert_eq!(u.get(MessageKind::Ack).messages, 4);
        assert_eq!(u.to_json()["service"]["messages"], 6);
    }
}
