//! SQL types and values: what a row's fields hold as the dataflow carries them.

use chrono::{DateTime, NaiveDateTime};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A column's SQL type (docs/sql.md, "Types").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// BOOLEAN.
    Boolean,
    /// INT (32 bits in Flink; held as 64 bits here, checked on CAST).
    Int,
    /// BIGINT.
    Bigint,
    /// DOUBLE (and FLOAT).
    Double,
    /// DECIMAL(precision, scale): exact, held as a scaled 128-bit integer.
    Decimal(u8, u8),
    /// VARCHAR / STRING.
    Varchar,
    /// TIMESTAMP(3): milliseconds since the epoch, without a time zone (read as UTC).
    Timestamp,
    /// An INTERVAL literal's type (day-time intervals, in ms).
    Interval,
    /// The type of a bare NULL literal.
    Null,
}

impl SqlType {
    /// INT, BIGINT, DOUBLE or DECIMAL.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            SqlType::Int | SqlType::Bigint | SqlType::Double | SqlType::Decimal(..)
        )
    }

    /// INT or BIGINT.
    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int | SqlType::Bigint)
    }

    /// Whether a value of `self` can be compared with one of `other`.
    pub fn comparable(self, other: SqlType) -> bool {
        self == other
            || self == SqlType::Null
            || other == SqlType::Null
            || (self.is_numeric() && other.is_numeric())
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Boolean => write!(f, "BOOLEAN"),
            SqlType::Int => write!(f, "INT"),
            SqlType::Bigint => write!(f, "BIGINT"),
            SqlType::Double => write!(f, "DOUBLE"),
            SqlType::Decimal(p, s) => write!(f, "DECIMAL({p}, {s})"),
            SqlType::Varchar => write!(f, "VARCHAR"),
            SqlType::Timestamp => write!(f, "TIMESTAMP(3)"),
            SqlType::Interval => write!(f, "INTERVAL"),
            SqlType::Null => write!(f, "NULL"),
        }
    }
}

/// One field's value. Equality and hashing are by value (doubles by their bits, with `-0.0`
/// equal to `0.0` and every NaN equal), so values can key groups and joins.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT and BIGINT.
    Int(i64),
    /// DOUBLE.
    Double(f64),
    /// DECIMAL: `unscaled / 10^scale` ([`Value::decimal`] makes one).
    Decimal(D128, u8),
    /// VARCHAR.
    Str(Arc<str>),
    /// TIMESTAMP(3): ms since the epoch, UTC.
    Timestamp(i64),
    /// An interval, ms.
    Interval(i64),
}

/// A DECIMAL's unscaled value, kept at 4-byte alignment: an `i128` field would align the whole
/// [`Value`] to 16 bytes and make it 32 bytes long; so it is 24, and rows, grouping keys and the
/// state that holds them are a quarter smaller (Nexmark q7's join keeps every bid). Serialized
/// as the `i128` it holds.
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub struct D128(i128);

impl D128 {
    /// The unscaled value.
    #[inline]
    pub fn get(self) -> i128 {
        self.0
    }
}

impl std::fmt::Debug for D128 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl Serialize for D128 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de> Deserialize<'de> for D128 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        i128::deserialize(d).map(D128)
    }
}

/// A row: its fields in the order of its schema.
pub type Row = Vec<Value>;

impl Value {
    /// A VARCHAR value.
    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }

    /// A DECIMAL: `unscaled / 10^scale`.
    pub fn decimal(unscaled: i128, scale: u8) -> Value {
        Value::Decimal(D128(unscaled), scale)
    }

    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a double (numbers only).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Double(d) => Some(*d),
            Value::Decimal(u, s) => Some(u.get() as f64 / 10f64.powi(*s as i32)),
            _ => None,
        }
    }

    /// The value as an integer (INT, BIGINT, TIMESTAMP and INTERVAL ms).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Timestamp(i) | Value::Interval(i) => Some(*i),
            _ => None,
        }
    }

    /// A DECIMAL's unscaled value at `scale` (integers and decimals only; rounds half away from
    /// zero when the scale shrinks).
    pub fn decimal_at(&self, scale: u8) -> Option<i128> {
        let (u, s) = match self {
            Value::Int(i) => (*i as i128, 0),
            Value::Decimal(u, s) => (u.get(), *s),
            _ => return None,
        };
        Some(rescale(u, s, scale))
    }

    /// Text as Flink prints it: timestamps `yyyy-MM-dd HH:mm:ss.SSS`, decimals with their scale,
    /// doubles as the shortest text that reads back the same.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) => format_double(*d),
            Value::Decimal(u, s) => format_decimal(u.get(), *s),
            Value::Str(s) => s.to_string(),
            Value::Timestamp(ms) => format_timestamp(*ms),
            Value::Interval(ms) => format!("{ms} ms"),
        }
    }

    /// The value as JSON: numbers as numbers, timestamps as Flink's JSON text, NULL as null.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Double(d) => serde_json::Number::from_f64(*d).map_or(J::Null, J::Number),
            Value::Decimal(..) => {
                // The exact digits: a JSON number parsed from the decimal's text.
                serde_json::from_str(&self.to_text()).unwrap_or(J::Null)
            }
            Value::Str(s) => J::String(s.to_string()),
            Value::Timestamp(ms) => J::String(format_timestamp(*ms)),
            Value::Interval(ms) => J::from(*ms),
        }
    }

    /// Rank of the value's kind in the total order (NULL first).
    fn kind_rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Double(_) | Value::Decimal(..) => 2,
            Value::Str(_) => 3,
            Value::Timestamp(_) => 4,
            Value::Interval(_) => 5,
        }
    }
}

/// `u / 10^from` at scale `to`, rounding half away from zero.
pub fn rescale(u: i128, from: u8, to: u8) -> i128 {
    match to.cmp(&from) {
        Ordering::Equal => u,
        Ordering::Greater => u * 10i128.pow((to - from) as u32),
        Ordering::Less => {
            let d = 10i128.pow((from - to) as u32);
            let (q, r) = (u / d, u % d);
            if r.abs() * 2 >= d {
                q + u.signum()
            } else {
                q
            }
        }
    }
}

/// A decimal's text with exactly `scale` fraction digits.
pub fn format_decimal(u: i128, scale: u8) -> String {
    if scale == 0 {
        return u.to_string();
    }
    let d = 10i128.pow(scale as u32);
    let sign = if u < 0 { "-" } else { "" };
    let (i, f) = (u.abs() / d, u.abs() % d);
    format!("{sign}{i}.{f:0width$}", width = scale as usize)
}

/// A double's text: integral values keep a `.0` (as Java prints them).
pub fn format_double(d: f64) -> String {
    if d.is_finite() && d == d.trunc() && d.abs() < 1e16 {
        format!("{d:.1}")
    } else {
        format!("{d}")
    }
}

/// Flink's SQL timestamp text, `yyyy-MM-dd HH:mm:ss.SSS`, of `ms` since the epoch (UTC).
pub fn format_timestamp(ms: i64) -> String {
    match DateTime::from_timestamp_millis(ms) {
        Some(t) => t.naive_utc().format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
        None => format!("{ms}"),
    }
}

/// Reads Flink's SQL timestamp text (`yyyy-MM-dd HH:mm:ss[.fraction]`, or with a `T`, or an
/// ISO-8601 instant ending in `Z`) as ms since the epoch, UTC.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Some(ms) = parse_timestamp_fast(t.as_bytes()) {
        return Some(ms);
    }
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
            return Some(n.and_utc().timestamp_millis());
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return d
            .and_hms_opt(0, 0, 0)
            .map(|n| n.and_utc().timestamp_millis());
    }
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.timestamp_millis())
}

/// `yyyy-MM-dd HH:mm:ss` or `yyyy-MM-dd HH:mm:ss.SSS` (a space or a `T` between), the form
/// every Flink JSON timestamp has, read digit by digit: chrono's `parse_from_str` reads its
/// format string on every call, which was an eighth of a Nexmark q0 over files. `None`: any
/// other form (or an impossible date), left to chrono.
fn parse_timestamp_fast(b: &[u8]) -> Option<i64> {
    if !(b.len() == 19 || (b.len() == 23 && b[19] == b'.')) {
        return None;
    }
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0, 4)? as i32, num(5, 7)?, num(8, 10)?)?;
    let ms = if b.len() == 23 { num(20, 23)? } else { 0 };
    let time = chrono::NaiveTime::from_hms_milli_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, ms)?;
    Some(date.and_time(time).and_utc().timestamp_millis())
}

fn canonical_bits(d: f64) -> u64 {
    if d.is_nan() {
        f64::NAN.to_bits()
    } else if d == 0.0 {
        0
    } else {
        d.to_bits()
    }
}

/// Compares two numbers exactly where both are integers or decimals.
fn cmp_numbers(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Double(_), _) | (_, Value::Double(_)) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
        _ => {
            let s = match (a, b) {
                (Value::Decimal(_, s), Value::Decimal(_, t)) => (*s).max(*t),
                (Value::Decimal(_, s), _) | (_, Value::Decimal(_, s)) => *s,
                _ => 0,
            };
            a.decimal_at(s).cmp(&b.decimal_at(s))
        }
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_kind = self.kind_rank().cmp(&other.kind_rank());
        if by_kind != Ordering::Equal {
            return by_kind;
        }
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b))
            | (Value::Interval(a), Value::Interval(b)) => a.cmp(b),
            (Value::Null, Value::Null) => Ordering::Equal,
            _ => cmp_numbers(self, other),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Hash for Value {
    /// Equal values hash alike: numbers of any kind that are integral hash as that integer.
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.kind_rank().hash(h);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(h),
            Value::Int(i) => i.hash(h),
            Value::Double(d) if d.fract() == 0.0 && d.abs() < 9e15 => (*d as i64).hash(h),
            Value::Double(d) => canonical_bits(*d).hash(h),
            Value::Decimal(u, s) => {
                let (u, d) = (u.get(), 10i128.pow(*s as u32));
                if u % d == 0 {
                    ((u / d) as i64).hash(h)
                } else {
                    canonical_bits(self.as_f64().unwrap_or(0.0)).hash(h)
                }
            }
            Value::Str(s) => s.hash(h),
            Value::Timestamp(t) | Value::Interval(t) => t.hash(h),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Catches: a variant that makes every value, row and key longer (an `i128` field aligns
    /// the enum to 16 bytes: 32 per value).
    #[test]
    fn a_value_takes_24_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        let d = Value::decimal(-(1i128 << 100), 7);
        let back: Value = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert!(matches!(back, Value::Decimal(u, 7) if u.get() == -(1i128 << 100)));
    }

    use proptest::prelude::*;

    proptest! {
        /// The digit-by-digit reading agrees with chrono's on every timestamp of Flink's form.
        #[test]
        fn the_fast_timestamp_reading_agrees_with_chrono(
            ms in -62_000_000_000_000i64..250_000_000_000_000, millis in any::<bool>(), t in any::<bool>(),
        ) {
            let d = chrono::DateTime::from_timestamp_millis(ms).unwrap().naive_utc();
            let f = match (millis, t) {
                (true, false) => "%Y-%m-%d %H:%M:%S%.3f",
                (true, true) => "%Y-%m-%dT%H:%M:%S%.3f",
                (false, _) => "%Y-%m-%d %H:%M:%S",
            };
            let text = d.format(f).to_string();
            let chrono_ms = chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M:%S%.f")
                .or_else(|_| chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f"))
                .map(|n| n.and_utc().timestamp_millis())
                .ok();
            prop_assert_eq!(parse_timestamp_fast(text.as_bytes()), chrono_ms, "{}", text);
        }
    }

    #[test]
    fn impossible_dates_and_other_forms_are_left_to_chrono() {
        for bad in [
            "2015-02-30 00:00:00",
            "2015-07-15 24:00:00",
            "2015-07-15 00:00:00.1",
            "x015-07-15 00:00:00",
            "2015-07-15 00:00",
        ] {
            assert_eq!(parse_timestamp_fast(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(
            parse_timestamp("2015-07-15 00:00:00.1"),
            Some(1_436_918_400_100)
        );
        assert_eq!(parse_timestamp("2015-07-15 00:00"), Some(1_436_918_400_000));
    }

    use super::*;

    #[test]
    fn timestamps_read_back_as_flink_writes_them() {
        let ms = parse_timestamp("2015-07-15 00:00:01.123").unwrap();
        assert_eq!(format_timestamp(ms), "2015-07-15 00:00:01.123");
        assert_eq!(parse_timestamp("2015-07-15T00:00:01.123Z"), Some(ms));
        assert_eq!(parse_timestamp("2015-07-15 00:00:01"), Some(ms - 123));
        assert_eq!(parse_timestamp("15.7.2015"), None);
    }

    #[test]
    fn decimals_print_their_scale_and_round_half_away_from_zero() {
        assert_eq!(format_decimal(908000, 3), "908.000");
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(rescale(1235, 3, 2), 124);
        assert_eq!(rescale(-1235, 3, 2), -124);
        assert_eq!(rescale(12, 0, 2), 1200);
    }

    #[test]
    fn equal_numbers_of_different_kinds_are_equal_and_hash_alike() {
        use std::collections::hash_map::DefaultHasher;
        let h = |v: &Value| {
            let mut s = DefaultHasher::new();
            v.hash(&mut s);
            s.finish()
        };
        let (a, b, c) = (Value::Int(3), Value::Double(3.0), Value::decimal(300, 2));
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(h(&a), h(&b));
        assert_eq!(h(&a), h(&c));
        assert!(Value::Null < Value::Int(i64::MIN));
        assert!(Value::decimal(15, 1) < Value::Int(2));
    }
}
