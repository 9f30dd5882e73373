//! Frames gathered for one connection and written with vectored I/O: each frame goes out as
//! its 4-byte big-endian length (the framing `LengthDelimitedCodec` reads on the other side,
//! `transport.rs`) and its own bytes, without being copied into a write buffer first.
//!
//! Why: with the codec's own writer every ~16 KB data frame was copied into an 8 KiB-bounded
//! buffer and written by its own syscall; gathered, one `writev` carries every frame a worker
//! sent in one iteration (`outbox.rs`, `docs/distributed.md`).

use bytes::{Buf, Bytes};
use std::collections::VecDeque;
use std::io::IoSlice;

/// One frame: its length prefix (of which `head_at` bytes are written) and its bytes.
struct Entry {
    head: [u8; 4],
    head_at: usize,
    body: Bytes,
}

/// Frames waiting to be written, as a [`Buf`] whose chunks are the frames' own bytes.
#[derive(Default)]
pub struct FrameBuf {
    entries: VecDeque<Entry>,
    remaining: usize,
}

impl FrameBuf {
    /// Queues `frame`.
    ///
    /// # Errors
    /// The frame is longer than `max` bytes (the receiver would refuse it).
    pub fn push(&mut self, frame: Bytes, max: usize) -> Result<(), String> {
        if frame.len() > max {
            return Err(format!(
                "a frame of {} bytes is over the limit of {max}",
                frame.len()
            ));
        }
        self.remaining += 4 + frame.len();
        self.entries.push_back(Entry {
            head: (frame.len() as u32).to_be_bytes(),
            head_at: 0,
            body: frame,
        });
        Ok(())
    }

    /// Frames queued (partly written ones included).
    #[cfg(test)]
    pub fn frames(&self) -> usize {
        self.entries.len()
    }
}

impl Buf for FrameBuf {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        match self.entries.front() {
            Some(e) if e.head_at < 4 => &e.head[e.head_at..],
            Some(e) => &e.body,
            None => &[],
        }
    }

    fn advance(&mut self, mut n: usize) {
        assert!(n <= self.remaining, "advance past the end of the frames");
        self.remaining -= n;
        while n > 0 {
            let e = self
                .entries
                .front_mut()
                .expect("remaining bytes are in entries");
            let head = (4 - e.head_at).min(n);
            e.head_at += head;
            n -= head;
            let body = e.body.len().min(n);
            e.body.advance(body);
            n -= body;
            if e.head_at == 4 && e.body.is_empty() {
                self.entries.pop_front();
            }
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut i = 0;
        for e in &self.entries {
            for part in [&e.head[e.head_at..], &e.body[..]] {
                if i == dst.len() {
                    return i;
                }
                if !part.is_empty() {
                    dst[i] = IoSlice::new(part);
                    i += 1;
                }
            }
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use tokio_util::codec::{Decoder, LengthDelimitedCodec};

    /// Written in uneven pieces (as partial writes leave it), the bytes decode to the same
    /// frames with the codec the reader uses.
    #[test]
    fn gathered_frames_decode_as_the_readers_codec_frames_them() {
        let frames: Vec<Bytes> = (0..40)
            .map(|i| Bytes::from(vec![i as u8; i * 37 % 500]))
            .collect();
        let mut buf = FrameBuf::default();
        for f in &frames {
            buf.push(f.clone(), 1 << 20).unwrap();
        }
        assert_eq!(buf.frames(), 40);
        let mut wire = Vec::new();
        let mut step = 1;
        while buf.has_remaining() {
            let mut slices = [IoSlice::new(&[]); 7];
            let n = buf.chunks_vectored(&mut slices);
            assert!(n > 0);
            let avail: usize = slices[..n].iter().map(|s| s.len()).sum();
            let take = step.min(avail);
            let mut left = take;
            for s in &slices[..n] {
                let k = s.len().min(left);
                wire.extend_from_slice(&s[..k]);
                left -= k;
            }
            buf.advance(take);
            step = step * 3 % 1001 + 1;
        }
        assert_eq!(buf.frames(), 0);
        let mut codec = LengthDelimitedCodec::new();
        let mut src = BytesMut::from(&wire[..]);
        let mut got = Vec::new();
        while let Some(f) = codec.decode(&mut src).unwrap() {
            got.push(f.freeze());
        }
        assert_eq!(got, frames);
        assert!(FrameBuf::default()
            .push(Bytes::from(vec![0; 11]), 10)
            .is_err());
    }
}
