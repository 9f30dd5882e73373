//! A run: consecutive elements of one key's list, the unit a [`crate::ListTable`] stores in its
//! backend, its snapshots and its changelog.
//!
//! Key `[key prefix][seq of the run's first element: u64 BE]`, value postcard's encoding of the
//! elements as a sequence (`varint(n)` then each element), so a run decodes as a `Vec<V>` and its
//! length is read from its first bytes without decoding the elements. A run holds at most about
//! [`RUN_BYTES`] of elements.
//!
//! Why runs and not one record per element (the changelog thesis's retain-all layout,
//! docs/papers.md): a restore replays the changelog record by record, and per-element records made
//! it as slow as the broker delivers millions of tiny records
//! (`bench/results/changelog/REPORT.md`); a run costs one record per list per flush instead.

use crate::codec;
use crate::error::StateError;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encoded elements per run, at most about (bytes): far below Kafka's default record limit of
/// 1 MB (`message.max.bytes`) so a run always fits a changelog record, and large enough that a
/// list's flush is a handful of records.
pub(crate) const RUN_BYTES: usize = 64 << 10;

/// The stored key of the run of `prefix`'s list starting at element `seq`.
pub(crate) fn run_key(prefix: &[u8], seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 8);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Splits a stored run key into the list's prefix and the run's first sequence number (`None`:
/// too short to be a run key).
pub(crate) fn split_key(key: &[u8]) -> Option<(&[u8], u64)> {
    if key.len() < codec::HEADER + 8 {
        return None;
    }
    let (prefix, seq) = key.split_at(key.len() - 8);
    Some((prefix, u64::from_be_bytes(seq.try_into().ok()?)))
}

/// Encodes `elements`, the first of which is element `first` of `prefix`'s list, as runs of at
/// most about [`RUN_BYTES`]; calls `emit(key, value)` for each, in order.
///
/// # Errors
/// An element does not encode (table `table` named), or `emit`'s error.
pub(crate) fn encode_runs<V: Serialize>(
    table: &str,
    prefix: &[u8],
    first: u64,
    elements: impl IntoIterator<Item = V>,
    emit: &mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StateError>,
) -> Result<(), StateError> {
    let (mut body, mut n, mut start) = (Vec::new(), 0u64, first);
    for v in elements {
        codec::encode_into(table, &v, &mut body)?;
        n += 1;
        if body.len() >= RUN_BYTES {
            emit(run_key(prefix, start), with_len(table, n, &body)?)?;
            (start, n) = (start + n, 0);
            body.clear();
        }
    }
    if n > 0 {
        emit(run_key(prefix, start), with_len(table, n, &body)?)?;
    }
    Ok(())
}

/// `varint(n)` (postcard's sequence length) followed by `body`.
fn with_len(table: &str, n: u64, body: &[u8]) -> Result<Vec<u8>, StateError> {
    let len = usize::try_from(n).map_err(|_| StateError::Codec {
        table: table.into(),
        detail: format!("a run of {n} elements"),
    })?;
    let mut out = Vec::with_capacity(body.len() + 10);
    codec::encode_into(table, &len, &mut out)?;
    out.extend_from_slice(body);
    Ok(out)
}

/// The elements of a stored run.
///
/// # Errors
/// The value does not decode as a sequence of `V`.
pub(crate) fn decode_run<V: DeserializeOwned>(
    table: &str,
    value: &[u8],
) -> Result<Vec<V>, StateError> {
    codec::decode(table, value)
}

/// How many elements a stored run holds, from its first bytes only.
///
/// # Errors
/// The value does not start with a length.
pub(crate) fn run_len(table: &str, value: &[u8]) -> Result<u64, StateError> {
    postcard::take_from_bytes::<usize>(value)
        .map(|(n, _)| n as u64)
        .map_err(|e| StateError::Codec {
            table: table.into(),
            detail: format!("a list run of {} bytes has no length: {e}", value.len()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(elements: &[String]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        encode_runs("t", &[1, 0, 0, 7], 5, elements.iter(), &mut |k, v| {
            out.push((k, v));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn runs_split_by_size_decode_in_order_and_tell_their_length() {
        // 3,000 elements of 100 bytes: about 300 KB, so several runs.
        let elements: Vec<String> = (0..3000).map(|i| format!("{i:0>100}")).collect();
        let rs = runs(&elements);
        assert!(rs.len() >= 4, "{} runs", rs.len());
        let mut next = 5;
        let mut all = Vec::new();
        for (k, v) in &rs {
            let (prefix, seq) = split_key(k).unwrap();
            assert_eq!((prefix, seq), (&[1u8, 0, 0, 7][..], next));
            assert!(v.len() <= RUN_BYTES + 200, "{} bytes", v.len());
            let got: Vec<String> = decode_run("t", v).unwrap();
            assert_eq!(run_len("t", v).unwrap(), got.len() as u64);
            next += got.len() as u64;
            all.extend(got);
        }
        assert_eq!(all, elements);
    }

    #[test]
    fn no_elements_no_run_and_bad_values_are_errors() {
        assert!(runs(&[]).is_empty());
        assert!(split_key(&[1, 2, 3]).is_none());
        assert!(run_len("t", &[]).is_err());
        // A length of 2 with one element's bytes.
        let one = runs(&["x".into()]).remove(0).1;
        let mut bad = one.clone();
        bad[0] = 2;
        assert!(decode_run::<String>("t", &bad).is_err());
    }
}
