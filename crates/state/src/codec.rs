//! Byte layout of keys and values in a backend and in snapshots.
//!
//! A stored key is `[table: u8][key group: u16 BE][postcard(key)]`, and for list elements
//! `... [seq: u64 BE]` after it. postcard's encodings are self-delimiting, so no key's encoding is
//! a proper prefix of another's: a prefix scan over `[table][group][postcard(key)]` finds exactly
//! that key's list elements. The group sits right after the table id so a restore can keep only the
//! groups an instance owns by looking at two bytes.

use crate::error::StateError;
use crate::key_group::KeyGroup;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Bytes before the key's own encoding: table id and key group.
pub(crate) const HEADER: usize = 3;

/// Appends postcard's encoding of `v` to `out`.
pub(crate) fn encode_into<T: Serialize>(
    table: &str,
    v: &T,
    out: &mut Vec<u8>,
) -> Result<(), StateError> {
    let bytes = postcard::to_allocvec(v).map_err(|e| StateError::Codec {
        table: table.into(),
        detail: format!("cannot encode: {e}"),
    })?;
    out.extend_from_slice(&bytes);
    Ok(())
}

/// postcard's encoding of `v`.
pub(crate) fn encode<T: Serialize>(table: &str, v: &T) -> Result<Vec<u8>, StateError> {
    let mut out = Vec::new();
    encode_into(table, v, &mut out)?;
    Ok(out)
}

/// Decodes a value of `table`.
pub(crate) fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StateError> {
    postcard::from_bytes(bytes).map_err(|e| StateError::Codec {
        table: table.into(),
        detail: format!("cannot decode {} bytes: {e}", bytes.len()),
    })
}

/// The stored key of `key` in table `id`, group `group`.
pub(crate) fn key_bytes<K: Serialize>(
    table: &str,
    id: u8,
    group: KeyGroup,
    key: &K,
) -> Result<Vec<u8>, StateError> {
    let mut out = Vec::with_capacity(16);
    out.push(id);
    out.extend_from_slice(&group.to_be_bytes());
    encode_into(table, key, &mut out)?;
    Ok(out)
}

/// Decodes a stored key of `table` back into its group and key (list elements: pass the bytes
/// without the trailing sequence number).
pub(crate) fn decode_key<K: DeserializeOwned>(
    table: &str,
    bytes: &[u8],
) -> Result<(KeyGroup, K), StateError> {
    if bytes.len() < HEADER {
        return Err(StateError::Codec {
            table: table.into(),
            detail: format!(
                "stored key of {} bytes is shorter than its header",
                bytes.len()
            ),
        });
    }
    let group = u16::from_be_bytes([bytes[1], bytes[2]]);
    Ok((group, decode(table, &bytes[HEADER..])?))
}

/// The key group of a stored key (`None` if it is too short to hold one).
pub(crate) fn group_of(bytes: &[u8]) -> Option<KeyGroup> {
    (bytes.len() >= HEADER).then(|| u16::from_be_bytes([bytes[1], bytes[2]]))
}
