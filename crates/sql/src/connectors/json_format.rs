//! `'format' = 'json'`: one JSON object per record (a line of a file, a Kafka record's value),
//! its fields read by column name straight into typed values.
//!
//! One pass of serde_json over the text with a visitor of our own: a key is looked up among the
//! table's columns and its value becomes the column's type at once, with no intermediate map of
//! the object, no `String` per field, and nothing built for a key the job does not read (the
//! columns `Plan::needed_columns` leaves out, and keys the table does not declare). As in
//! Flink's JSON format: a missing field or `null` is NULL; a number or a string of digits reads
//! as a number column; a string column takes a number, a boolean or a nested value as its JSON
//! text.

use crate::schema::Schema;
use crate::types::{Row, SqlType, Value};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

/// How a table's JSON records become rows.
#[derive(Clone, Debug)]
pub struct JsonFormat {
    /// (name, type) of every column, in schema order.
    columns: Vec<(String, SqlType)>,
    /// Which columns are read; the others stay NULL (column pruning).
    keep: Vec<bool>,
    /// The event-time column, whose value must not be NULL.
    rowtime: Option<usize>,
}

impl JsonFormat {
    /// The format of `schema`'s rows, reading the columns `keep` marks (all: `None`), with event
    /// time from column `rowtime`.
    pub fn new(schema: &Schema, rowtime: Option<usize>, keep: Option<Vec<bool>>) -> Self {
        let columns: Vec<_> = (schema.fields.iter())
            .map(|f| (f.name.clone(), f.ty))
            .collect();
        let mut keep = keep.unwrap_or_else(|| vec![true; columns.len()]);
        // The event time is always read: a row without one is malformed.
        if let Some(c) = rowtime {
            keep[c] = true;
        }
        JsonFormat {
            columns,
            keep,
            rowtime,
        }
    }

    /// One record: its event time (the rowtime column's ms; 0 without one) and its row.
    ///
    /// # Errors
    /// Why the record is malformed: not JSON, not a JSON object, a field that is not of its
    /// column's type (naming the column and quoting the value), or no event time.
    pub fn decode(&self, bytes: &[u8]) -> Result<(i64, Row), String> {
        let bad = RefCell::new(None);
        // The line checked as UTF-8 once, in one pass, instead of each string field on its own
        // (serde_json's slice reader checks every string it reads).
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("not UTF-8 (at byte {} of the line)", e.valid_up_to() + 1))?;
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = de::Deserializer::deserialize_any(
            &mut de,
            RowVisitor {
                format: self,
                bad: &bad,
            },
        )
        .and_then(|row| de.end().map(|()| row));
        let row = match parsed {
            Ok(row) => row,
            Err(e) => {
                return Err(match bad.into_inner() {
                    Some(why) => why,
                    None if e.is_data() => "not a JSON object".into(),
                    None => format!("not JSON: {e}"),
                })
            }
        };
        let t = match self.rowtime {
            Some(c) => match row[c] {
                Value::Timestamp(ms) => ms,
                _ => {
                    return Err(format!(
                        "column {}: no event time (NULL)",
                        self.columns[c].0
                    ))
                }
            },
            None => 0,
        };
        Ok((t, row))
    }

    fn column(&self, key: &str) -> Option<usize> {
        self.columns.iter().position(|(name, _)| name == key)
    }
}

/// A whole record: a JSON object.
struct RowVisitor<'f> {
    format: &'f JsonFormat,
    /// Why a field was refused (a serde error would append a position to it).
    bad: &'f RefCell<Option<String>>,
}

impl<'de> Visitor<'de> for RowVisitor<'_> {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let f = self.format;
        // Room for two more values: a computed grouping key or a shared call
        // (`crate::exec`) is appended without moving the row.
        let mut row = Vec::with_capacity(f.columns.len() + 2);
        row.resize(f.columns.len(), Value::Null);
        // Records of one producer list their keys in one order: the column after the last
        // one found is tried first, so a key is usually one comparison, not a scan.
        let mut next = 0;
        while let Some(Key(key)) = map.next_key()? {
            let c = match f.columns.get(next) {
                Some((name, _)) if *name == key => Some(next),
                _ => f.column(&key),
            };
            next = c.map_or(0, |c| c + 1);
            match c.filter(|&c| f.keep[c]) {
                Some(c) => {
                    let (name, ty) = &f.columns[c];
                    row[c] = map.next_value_seed(FieldSeed {
                        name,
                        ty: *ty,
                        bad: self.bad,
                    })?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(row)
    }
}

/// An object key, borrowed from the text unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One field's value as a value of its column's type.
struct FieldSeed<'f> {
    name: &'f str,
    ty: SqlType,
    bad: &'f RefCell<Option<String>>,
}

impl FieldSeed<'_> {
    /// `text` as the column's type ([`super::filesystem::parse_field`]'s rules), or the refusal.
    fn text<E: de::Error>(&self, text: &str) -> Result<Value, E> {
        match super::filesystem::parse_field(text, self.ty) {
            Some(v) => Ok(v),
            None => Err(self.refuse(text)),
        }
    }

    fn refuse<E: de::Error>(&self, text: &str) -> E {
        let quoted = xorflow_runtime::connectors::rows::quote(text);
        let why = format!("column {}: '{quoted}' is not a {}", self.name, self.ty);
        *self.bad.borrow_mut() = Some(why.clone());
        E::custom(why)
    }

    /// A nested value: its JSON text for a string column, refused otherwise.
    fn nested<E: de::Error>(&self, v: serde_json::Value) -> Result<Value, E> {
        match self.ty {
            SqlType::Varchar => Ok(Value::str(&v.to_string())),
            _ => Err(self.refuse(&v.to_string())),
        }
    }
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {}", self.ty)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        match self.ty {
            SqlType::Boolean => Ok(Value::Bool(b)),
            _ => self.text(if b { "true" } else { "false" }),
        }
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        match self.ty {
            SqlType::Int | SqlType::Bigint => Ok(Value::Int(n)),
            SqlType::Double => Ok(Value::Double(n as f64)),
            _ => self.text(&n.to_string()),
        }
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        match (self.ty, i64::try_from(n)) {
            (SqlType::Int | SqlType::Bigint, Ok(n)) => Ok(Value::Int(n)),
            (SqlType::Double, _) => Ok(Value::Double(n as f64)),
            _ => self.text(&n.to_string()),
        }
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
        match self.ty {
            SqlType::Double => Ok(Value::Double(x)),
            // The number's shortest text, as serde_json writes it: a DECIMAL reads its digits.
            _ => match serde_json::Number::from_f64(x) {
                Some(n) => self.text(&n.to_string()),
                None => Err(self.refuse(&x.to_string())),
            },
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Value, E> {
        self.text(s)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.text(s)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        let v = de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.nested(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        let v = de::Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.nested(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Field;

    fn format(cols: &[(&str, SqlType)], rowtime: Option<usize>) -> JsonFormat {
        let schema = Schema::new(cols.iter().map(|(n, t)| Field::new(n, *t)).collect());
        JsonFormat::new(&schema, rowtime, None)
    }

    #[test]
    fn fields_are_read_by_name_into_their_types_and_the_rest_is_skipped() {
        let f = format(
            &[
                ("id", SqlType::Bigint),
                ("name", SqlType::Varchar),
                ("price", SqlType::Decimal(10, 2)),
                ("ok", SqlType::Boolean),
                ("ts", SqlType::Timestamp),
                ("x", SqlType::Double),
            ],
            Some(4),
        );
        let (t, row) = f
            .decode(br#"{"zzz": {"a": [1, 2]}, "ts": "2015-07-15 00:00:01.000", "id": "12", "name": "a\"b", "price": 1.5, "ok": true, "x": 3}"#)
            .unwrap();
        assert_eq!(t, 1_436_918_401_000);
        assert_eq!(
            row,
            vec![
                Value::Int(12),
                Value::str("a\"b"),
                Value::decimal(150, 2),
                Value::Bool(true),
                Value::Timestamp(t),
                Value::Double(3.0),
            ]
        );
        // Missing and null fields are NULL; a nested value is a string column's JSON text.
        let (_, row) = f
            .decode(br#"{"ts": "2015-07-15 00:00:01.000", "name": {"k": 1}, "id": null}"#)
            .unwrap();
        assert_eq!(row[0], Value::Null);
        assert_eq!(row[1], Value::str(r#"{"k":1}"#));
    }

    #[test]
    fn a_bad_record_says_what_is_wrong_with_it() {
        let f = format(
            &[("id", SqlType::Bigint), ("ts", SqlType::Timestamp)],
            Some(1),
        );
        let cases: [(&[u8], &str); 6] = [
            (b"[1, 2]", "not a JSON object"),
            (b"{\"id\": 1", "not JSON: EOF while parsing an object"),
            (b"{\"id\": 1} x", "not JSON: trailing characters"),
            (
                br#"{"id": "x1", "ts": "2015-07-15 00:00:01"}"#,
                "column id: 'x1' is not a BIGINT",
            ),
            (
                br#"{"id": 1, "ts": [1]}"#,
                "column ts: '[1]' is not a TIMESTAMP(3)",
            ),
            (br#"{"id": 1}"#, "column ts: no event time (NULL)"),
        ];
        for (text, want) in cases {
            let got = f.decode(text).unwrap_err();
            assert!(
                got.starts_with(want),
                "{}: {got}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn pruned_columns_are_not_read() {
        let schema = Schema::new(vec![
            Field::new("a", SqlType::Bigint),
            Field::new("b", SqlType::Bigint),
        ]);
        let f = JsonFormat::new(&schema, None, Some(vec![true, false]));
        // `b` is not read, so its bad value does not make the record malformed.
        let (_, row) = f.decode(br#"{"a": 1, "b": "not a number"}"#).unwrap();
        assert_eq!(row, vec![Value::Int(1), Value::Null]);
    }
}
