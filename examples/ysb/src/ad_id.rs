//! An ad id as the job carries it between stages: a canonical UUID packed into 128 bits, so
//! the parse stage allocates nothing per event for it and the join hashes two words instead of
//! 36 bytes (docs/cpu.md, "Operator chaining"); any other text as itself.

use serde::{Deserialize, Serialize};

/// An ad id: [`AdId::Uuid`] for a UUID in canonical form (lowercase hex, dashes after digits 8,
/// 12, 16 and 20: what the generator writes), [`AdId::Text`] for anything else, so two ids are
/// equal exactly when their texts are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AdId {
    /// The 32 hex digits of a canonical UUID, most significant first.
    Uuid(u128),
    /// Any other id, as written.
    Text(Box<str>),
}

/// The positions of a canonical UUID's 32 hex digits (dashes at 8, 13, 18 and 23).
const DIGITS: [usize; 32] = {
    let mut p = [0; 32];
    let (mut i, mut at) = (0, 0);
    while i < 32 {
        if at == 8 || at == 13 || at == 18 || at == 23 {
            at += 1;
        }
        p[i] = at;
        i += 1;
        at += 1;
    }
    p
};

/// A lowercase hex digit's value, 0x80 for any other byte.
const HEX: [u8; 256] = {
    let mut t = [0x80; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

impl AdId {
    /// The id of `text`.
    pub fn new(text: &str) -> AdId {
        match uuid(text.as_bytes()) {
            Some(v) => AdId::Uuid(v),
            None => AdId::Text(text.into()),
        }
    }

    /// The id as text (the UUID written back in canonical form).
    pub fn text(&self) -> String {
        match self {
            AdId::Text(t) => t.to_string(),
            AdId::Uuid(v) => {
                let hex = format!("{v:032x}");
                let mut s = String::with_capacity(36);
                for (i, c) in hex.chars().enumerate() {
                    if matches!(i, 8 | 12 | 16 | 20) {
                        s.push('-');
                    }
                    s.push(c);
                }
                s
            }
        }
    }
}

/// The value of a canonical UUID, or `None` if `b` is anything else: a table lookup per digit
/// into two 64-bit halves, every byte checked (a per-byte match with the dash positions cost
/// about 150 ns per event in the YSB's parse stage).
fn uuid(b: &[u8]) -> Option<u128> {
    if b.len() != 36 || b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let (mut hi, mut lo, mut bad) = (0u64, 0u64, 0u8);
    for &p in &DIGITS[..16] {
        let d = HEX[b[p] as usize];
        bad |= d;
        hi = (hi << 4) | u64::from(d);
    }
    for &p in &DIGITS[16..] {
        let d = HEX[b[p] as usize];
        bad |= d;
        lo = (lo << 4) | u64::from(d);
    }
    (bad & 0x80 == 0).then_some((u128::from(hi) << 64) | u128::from(lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn canonical_uuids_pack_and_the_rest_stay_text() {
        let u = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";
        assert_eq!(
            AdId::new(u),
            AdId::Uuid(0x0a1b2c3d_4e5f_6789_abcd_ef0123456789)
        );
        assert_eq!(AdId::new(u).text(), u);
        for other in [
            "0A1B2C3D-4E5F-6789-ABCD-EF0123456789",
            "0a1b2c3d4e5f6789abcdef0123456789",
            "0a1b2c3d-4e5f-6789-abcd-ef012345678",
            "0a1b2c3d-4e5f-6789-abcd-ef01234567890",
            "0a1b2c3d-4e5f-6789-abcd_ef0123456789",
            "0a1b2c3d-4e5f-6789-abcd-ef012345678g",
            "a1",
            "",
        ] {
            assert_eq!(AdId::new(other), AdId::Text(other.into()), "{other}");
            assert_eq!(AdId::new(other).text(), other);
        }
    }

    proptest! {
        /// Equal ids exactly when the texts are equal, and the text survives.
        #[test]
        fn ids_are_equal_exactly_when_texts_are(
            a in "[0-9a-fA-F-]{0,40}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            b in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        ) {
            prop_assert_eq!(AdId::new(&a) == AdId::new(&b), a == b);
            prop_assert_eq!(AdId::new(&a).text(), a.clone());
            prop_assert_eq!(AdId::new(&b).text(), b);
        }
    }
}
