//! What a snapshot holds: the changes of an operator instance's tables since its previous
//! snapshot, as backend-level records. A full snapshot is the same records from an empty state.
//!
//! Encoding, per record: `op: u8`, `key length: u32 LE`, key, and for puts `value length: u32 LE`,
//! value. The checkpoint layer (`checkpoint/`) frames whole deltas with a checksum; decoding here
//! still refuses truncated input instead of reading past it.

/// One change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// `key` holds `value`.
    Put {
        /// Stored key (`codec.rs`: table id, key group, encoded key).
        key: Vec<u8>,
        /// Encoded value.
        value: Vec<u8>,
    },
    /// `key` holds nothing.
    Delete {
        /// Stored key.
        key: Vec<u8>,
    },
    /// No key starting with `prefix` holds anything (a list cleared).
    DeletePrefix {
        /// Stored key prefix.
        prefix: Vec<u8>,
    },
}

impl Record {
    /// The table id this record belongs to (the first byte of its key).
    pub fn table(&self) -> Option<u8> {
        self.key().first().copied()
    }

    /// The stored key or prefix.
    pub fn key(&self) -> &[u8] {
        match self {
            Record::Put { key, .. } | Record::Delete { key } => key,
            Record::DeletePrefix { prefix } => prefix,
        }
    }

    /// Encoded size, bytes.
    pub fn encoded_len(&self) -> usize {
        1 + 4
            + self.key().len()
            + match self {
                Record::Put { value, .. } => 4 + value.len(),
                _ => 0,
            }
    }
}

/// The changes of one operator instance since its previous snapshot (or all of its state, for a
/// full snapshot), in the order they must be applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// The records.
    pub records: Vec<Record>,
    /// True when the records are the whole state (a restore may start from this delta alone).
    pub full: bool,
}

const PUT: u8 = 1;
const DELETE: u8 = 2;
const DELETE_PREFIX: u8 = 3;

impl Delta {
    /// An empty delta; `full`: it will hold the whole state.
    pub fn new(full: bool) -> Self {
        Delta {
            records: Vec::new(),
            full,
        }
    }

    /// Appends the encoding of every record to `out`; returns the bytes added.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        out.reserve(self.records.iter().map(Record::encoded_len).sum());
        for r in &self.records {
            let (op, key, value) = match r {
                Record::Put { key, value } => (PUT, key, Some(value)),
                Record::Delete { key } => (DELETE, key, None),
                Record::DeletePrefix { prefix } => (DELETE_PREFIX, prefix, None),
            };
            out.push(op);
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
            if let Some(v) = value {
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            }
        }
        out.len() - before
    }

    /// Decodes records from `bytes` (all of it).
    ///
    /// # Errors
    /// A description of what is malformed and at which offset.
    pub fn decode(bytes: &[u8], full: bool) -> Result<Self, String> {
        let mut records = Vec::new();
        let mut at = 0usize;
        let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
            let s = bytes
                .get(*at..*at + n)
                .ok_or_else(|| format!("truncated at byte {at} (needs {n} more)"))?;
            *at += n;
            Ok(s)
        };
        let len = |at: &mut usize| -> Result<usize, String> {
            let b = take(at, 4)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        while at < bytes.len() {
            let op_at = at;
            let op = take(&mut at, 1)?[0];
            let n = len(&mut at)?;
            let key = take(&mut at, n)?.to_vec();
            records.push(match op {
                PUT => {
                    let n = len(&mut at)?;
                    let value = take(&mut at, n)?.to_vec();
                    Record::Put { key, value }
                }
                DELETE => Record::Delete { key },
                DELETE_PREFIX => Record::DeletePrefix { prefix: key },
                other => return Err(format!("unknown record type {other} at byte {op_at}")),
            });
        }
        Ok(Delta { records, full })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_truncation_is_an_error() {
        let d = Delta {
            records: vec![
                Record::Put {
                    key: vec![1, 0, 3, 9],
                    value: vec![7; 300],
                },
                Record::Delete { key: vec![2] },
                Record::DeletePrefix { prefix: vec![] },
            ],
            full: false,
        };
        let mut bytes = Vec::new();
        let n = d.encode_into(&mut bytes);
        assert_eq!(n, bytes.len());
        assert_eq!(n, d.records.iter().map(Record::encoded_len).sum::<usize>());
        assert_eq!(Delta::decode(&bytes, false).unwrap(), d);
        for cut in 1..bytes.len() {
            let r = Delta::decode(&bytes[..cut], false);
            assert!(
                r.is_err() || cut == 313 || cut == 319,
                "cut at {cut}: {r:?}"
            );
        }
        let mut bad = bytes.clone();
        bad[0] = 9;
        assert!(Delta::decode(&bad, false)
            .unwrap_err()
            .contains("unknown record type 9"));
    }
}
