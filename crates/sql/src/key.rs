//! Grouping keys: the values of a `GROUP BY`, a `PARTITION BY` or a join's equality, built
//! once per element for the exchange and once more in the keyed operator, and cloned into
//! every window an element falls in (a `HOP` of 10 s sliding by 2 s: five). Keys of up to two
//! values (an auction id; a window's bounds) are held inline, so building, hashing and cloning
//! them allocates nothing; longer ones share one allocation. Before this, a `Vec<Value>` per
//! key made a third of Nexmark q5's time malloc and free (docs/sql.md, "Nexmark").

use crate::expr::Scalar;
use crate::types::{Row, Value};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Index;
use std::sync::Arc;

/// The values of one key, in the order of the key's expressions. Hashes, compares and
/// serializes as the slice of its values (so a checkpoint holds a sequence of values).
#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    /// Up to two values; the first `.0` count.
    Inline(u8, [Value; 2]),
    /// Three or more.
    Shared(Arc<[Value]>),
}

impl Key {
    /// The key of `row` under the expressions `keys`.
    #[inline]
    pub fn of(keys: &[Scalar], row: &Row) -> Key {
        Key(match keys {
            [] => Repr::Inline(0, [Value::Null, Value::Null]),
            [a] => Repr::Inline(1, [a.eval(row), Value::Null]),
            [a, b] => Repr::Inline(2, [a.eval(row), b.eval(row)]),
            _ => Repr::Shared(keys.iter().map(|k| k.eval(row)).collect()),
        })
    }

    /// A key of `values`.
    pub fn from_values(mut values: Vec<Value>) -> Key {
        let n = values.len();
        if n > 2 {
            return Key(Repr::Shared(values.into()));
        }
        let b = if n == 2 { values.pop() } else { None };
        let a = values.pop();
        Key(Repr::Inline(
            n as u8,
            [a.unwrap_or(Value::Null), b.unwrap_or(Value::Null)],
        ))
    }

    /// Its values.
    #[inline]
    pub fn values(&self) -> &[Value] {
        match &self.0 {
            Repr::Inline(n, v) => &v[..*n as usize],
            Repr::Shared(v) => v,
        }
    }
}

impl Index<usize> for Key {
    type Output = Value;

    fn index(&self, i: usize) -> &Value {
        &self.values()[i]
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.values() == other.values()
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.values().hash(h);
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.values()).finish()
    }
}

impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.values().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Value>::deserialize(d).map(Key::from_values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(k: &Key) -> u64 {
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(k)
    }

    /// Inline and shared keys of the same values are one key: equal, hashed alike, and what
    /// a `Vec<Value>` of them hashes to; each round-trips through serde.
    #[test]
    fn a_key_is_its_values_however_held() {
        for n in 0..5 {
            let values: Vec<Value> = (0..n).map(|i| Value::Int(i * 7)).collect();
            let k = Key::from_values(values.clone());
            assert_eq!(k.values(), &values[..]);
            let shared = Key(Repr::Shared(values.clone().into()));
            assert_eq!(k, shared);
            assert_eq!(hash(&k), hash(&shared));
            let v = std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(&values[..]);
            assert_eq!(hash(&k), v, "{n} values");
            let json = serde_json::to_string(&k).unwrap();
            let back: Key = serde_json::from_str(&json).unwrap();
            assert_eq!(back, k);
            for (i, x) in values.iter().enumerate() {
                assert_eq!(&k[i], x);
            }
        }
        let one = Key::from_values(vec![Value::Int(1)]);
        assert_ne!(one, Key::from_values(vec![Value::Int(1), Value::Null]));
        assert_ne!(one, Key::from_values(vec![]));
    }
}
