//! Frames the wire format carries without interpreting them: ack pieces for tracker shards,
//! frontiers from them, checkpoint messages. Their users (`progress/inlets.rs`,
//! `checkpoint/mod.rs`) register a receiver per kind; the transport hands every such frame to
//! it and knows nothing of what it holds.

use super::frame::Kind;
use bytes::{BufMut, Bytes};
use std::sync::Arc;

/// The receiver of one kind of payload frame.
pub trait Inlet: Send + Sync {
    /// Takes one frame of the kind it was registered for (the whole frame, kind byte first).
    ///
    /// # Errors
    /// A frame it cannot decode or deliver, naming what is wrong (the connection fails with it).
    fn take(&self, frame: &[u8]) -> Result<(), String>;
}

/// The receivers registered for payload kinds, one per kind.
#[derive(Clone, Default)]
pub struct Inlets(Vec<(Kind, Arc<dyn Inlet>)>);

impl Inlets {
    /// Registers `inlet` for frames of `kind` (a later registration of the same kind replaces it).
    pub fn register(&mut self, kind: Kind, inlet: Arc<dyn Inlet>) {
        self.0.retain(|(k, _)| *k != kind);
        self.0.push((kind, inlet));
    }

    /// Hands `frame` of `kind` to its receiver.
    ///
    /// # Errors
    /// No receiver is registered for `kind` (a peer sent what this process does not take), or
    /// the receiver's error.
    pub fn deliver(&self, kind: Kind, frame: &[u8]) -> Result<(), String> {
        let (_, inlet) = (self.0.iter().find(|(k, _)| *k == kind))
            .ok_or_else(|| format!("a {kind:?} frame reached a process that takes none"))?;
        inlet.take(frame)
    }
}

/// A payload frame of `kind`: the kind byte, then `body` postcard-encoded.
pub fn encode<B: serde::Serialize>(kind: Kind, body: &B) -> Bytes {
    let mut v = Vec::with_capacity(128);
    v.put_u8(kind as u8);
    postcard::to_extend(body, v)
        .expect("encoding into a Vec cannot fail")
        .into()
}

/// The body of a frame made by [`encode`].
///
/// # Errors
/// An empty or undecodable frame, naming its kind.
pub fn decode<B: serde::de::DeserializeOwned>(frame: &[u8]) -> Result<B, String> {
    let (k, body) = frame.split_first().ok_or("empty frame")?;
    postcard::from_bytes(body).map_err(|e| format!("bad frame of kind {k}: {e}"))
}
