//! How a batch travels in a Data frame: its fixed fields as plain little-endian words, then its
//! elements either as *plain* bytes (a payload type of fixed width: `u64`, `i64`, `u32`, `i32`,
//! `f64`) or as postcard (any other type).
//!
//! Layout of the body after the channel header (`frame.rs`), little-endian:
//!
//! ```text
//! tag u64 | lo u64 | hi u64 | epoch u64 | exact u8 | markers u32 | marker u64 x markers | codec u8 | elements
//! codec 1 (plain):    count u32 | (time u64, payload WIDTH bytes) x count
//! codec 0 (postcard): postcard(Vec<Element<T>>)
//! ```
//!
//! Why plain: postcard writes and reads every field as a varint, one byte at a time. On the
//! 2-process chain that was a third of all CPU samples (`docs/distributed.md`). A plain element
//! is two word copies each way. The choice is made by the payload type alone, so both ends
//! always agree; it needs no unsafe code (the batch is matched by `Any` downcasts).

use crate::batch::Batch;
use bytes::{Buf, BufMut};
use std::any::{Any, TypeId};
use xorflow_core::{Data, Element};

/// Elements follow as postcard.
const POSTCARD: u8 = 0;
/// Elements follow as plain fixed-width bytes.
const PLAIN: u8 = 1;

/// A payload written as its little-endian bytes.
trait Plain: Copy + 'static {
    /// Bytes per value.
    const WIDTH: usize;
    /// Writes the value into the first [`Plain::WIDTH`] bytes of `b`.
    fn write(self, b: &mut [u8]);
    /// Reads a value from the first [`Plain::WIDTH`] bytes of `b`.
    fn get(b: &[u8]) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            #[inline]
            fn write(self, b: &mut [u8]) {
                b[..Self::WIDTH].copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b[..Self::WIDTH].try_into().expect("WIDTH bytes"))
            }
        }
    )*};
}
plain!(u64, i64, u32, i32, f64);

/// Calls `$f::<P>` with the first plain type `$t` that is the type `P`, or falls through.
macro_rules! each_plain {
    ($m:ident) => {
        $m!(u64);
        $m!(i64);
        $m!(u32);
        $m!(i32);
        $m!(f64);
    };
}

/// Appends `b`'s body (everything after the channel header) to `out`.
pub fn encode_batch<T: Data>(b: &Batch<T>, out: &mut Vec<u8>) {
    for w in [b.tag, b.lo, b.hi, b.epoch] {
        out.put_u64_le(w);
    }
    out.put_u8(u8::from(b.exact));
    out.put_u32_le(b.markers.len() as u32);
    for &m in &b.markers {
        out.put_u64_le(m);
    }
    let data: &dyn Any = &b.data;
    macro_rules! try_plain {
        ($t:ty) => {
            if let Some(v) = data.downcast_ref::<Vec<Element<$t>>>() {
                out.push(PLAIN);
                put_plain(v, out);
                return;
            }
        };
    }
    each_plain!(try_plain);
    out.push(POSTCARD);
    *out =
        postcard::to_extend(&b.data, std::mem::take(out)).expect("encoding into a Vec cannot fail");
}

fn put_plain<P: Plain>(v: &[Element<P>], out: &mut Vec<u8>) {
    out.put_u32_le(v.len() as u32);
    // Sized once, then filled in place: no capacity check per field.
    let width = 8 + P::WIDTH;
    let start = out.len();
    out.resize(start + v.len() * width, 0);
    for (c, e) in out[start..].chunks_exact_mut(width).zip(v) {
        c[..8].copy_from_slice(&e.time.to_le_bytes());
        e.data.write(&mut c[8..]);
    }
}

/// Decodes a body written by [`encode_batch`].
///
/// # Errors
/// A truncated body, an unknown codec, a plain body for a type without a plain form, or
/// postcard's error (a remote process running different code).
pub fn decode_batch<T: Data>(mut body: &[u8]) -> Result<Batch<T>, String> {
    let short = || "truncated batch".to_string();
    if body.len() < 37 {
        return Err(short());
    }
    let (tag, lo, hi, epoch) = (
        body.get_u64_le(),
        body.get_u64_le(),
        body.get_u64_le(),
        body.get_u64_le(),
    );
    let exact = match body.get_u8() {
        0 => false,
        1 => true,
        x => return Err(format!("bad exact flag {x}")),
    };
    let n = body.get_u32_le() as usize;
    if body.len() < n.saturating_mul(8).saturating_add(1) {
        return Err(short());
    }
    let markers = (0..n).map(|_| body.get_u64_le()).collect();
    let codec = body.get_u8();
    let data = match codec {
        PLAIN => decode_plain::<T>(body)?,
        POSTCARD => postcard::from_bytes(body).map_err(|e| e.to_string())?,
        c => return Err(format!("unknown element codec {c}")),
    };
    Ok(Batch {
        tag,
        lo,
        hi,
        epoch,
        exact,
        markers,
        data,
    })
}

fn decode_plain<T: Data>(body: &[u8]) -> Result<Vec<Element<T>>, String> {
    macro_rules! try_plain {
        ($t:ty) => {
            if TypeId::of::<T>() == TypeId::of::<$t>() {
                let mut v = Some(get_plain::<$t>(body)?);
                let v: &mut dyn Any = &mut v;
                return Ok(v
                    .downcast_mut::<Option<Vec<Element<T>>>>()
                    .and_then(Option::take)
                    .expect("T is the plain type matched"));
            }
        };
    }
    each_plain!(try_plain);
    Err(format!(
        "plain elements for {}, which has no plain form",
        std::any::type_name::<T>()
    ))
}

fn get_plain<P: Plain>(mut body: &[u8]) -> Result<Vec<Element<P>>, String> {
    if body.len() < 4 {
        return Err("truncated batch".into());
    }
    let n = body.get_u32_le() as usize;
    let width = 8 + P::WIDTH;
    if body.len() != n.saturating_mul(width) {
        return Err(format!(
            "{} bytes for {n} plain elements of {width} bytes",
            body.len()
        ));
    }
    Ok(body
        .chunks_exact(width)
        .map(|c| Element {
            time: u64::from_le_bytes(c[..8].try_into().expect("8 bytes")),
            data: P::get(&c[8..]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch<T>(data: Vec<Element<T>>) -> Batch<T> {
        Batch {
            tag: 0xdead_beef,
            lo: 3,
            hi: u64::MAX,
            epoch: 7,
            exact: false,
            markers: vec![1, 2, 99],
            data,
        }
    }

    /// The decoded batch's fields and elements, and the codec used.
    #[allow(clippy::type_complexity)]
    fn round_trip<T: Data>(
        b: &Batch<T>,
    ) -> ((u64, u64, u64, u64, bool, Vec<u64>, Vec<Element<T>>), u8) {
        let mut out = Vec::new();
        encode_batch(b, &mut out);
        let codec = out[37 + 8 * b.markers.len()];
        let g = decode_batch::<T>(&out).unwrap();
        (
            (g.tag, g.lo, g.hi, g.epoch, g.exact, g.markers, g.data),
            codec,
        )
    }

    #[test]
    fn plain_and_postcard_batches_round_trip_with_their_fields() {
        let fields = |data| (0xdead_beef, 3, u64::MAX, 7, false, vec![1, 2, 99], data);
        let u: Vec<Element<u64>> = (0..1000)
            .map(|i| Element::new(i * 3, u64::MAX - i))
            .collect();
        assert_eq!(round_trip(&batch(u.clone())), (fields(u), PLAIN));
        let f: Vec<Element<f64>> = vec![Element::new(1, -0.5), Element::new(2, f64::MAX)];
        assert_eq!(round_trip(&batch(f.clone())).0 .6, f);
        let i: Vec<Element<i32>> = vec![Element::new(1, -5)];
        assert_eq!(
            round_trip(&batch(i.clone())),
            (
                (0xdead_beef, 3, u64::MAX, 7, false, vec![1, 2, 99], i),
                PLAIN
            )
        );
        let s: Vec<Element<String>> = vec![Element::new(4, "x".into()), Element::new(5, "".into())];
        let (got, codec) = round_trip(&batch(s.clone()));
        assert_eq!((got.6, codec), (s, POSTCARD));
        let empty: Vec<Element<u64>> = Vec::new();
        assert_eq!(round_trip(&batch(empty)).0 .6, []);
        let exact = Batch {
            exact: true,
            ..batch(vec![Element::new(1, 2u64)])
        };
        assert!(round_trip(&exact).0 .4, "the exact flag travels");
    }

    #[test]
    fn damaged_bodies_are_errors_not_panics() {
        let mut out = Vec::new();
        encode_batch(&batch(vec![Element::new(1, 2u64); 10]), &mut out);
        for cut in 0..out.len() {
            assert!(decode_batch::<u64>(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode_batch::<u64>(&longer).is_err());
        // A plain body read as a type without a plain form, and an unknown codec.
        assert!(decode_batch::<String>(&out)
            .unwrap_err()
            .contains("no plain form"));
        let at = 37 + 8 * 3;
        out[at] = 9;
        assert!(decode_batch::<u64>(&out).unwrap_err().contains("codec 9"));
        out[32] = 2;
        assert!(decode_batch::<u64>(&out)
            .unwrap_err()
            .contains("exact flag 2"));
    }
}
