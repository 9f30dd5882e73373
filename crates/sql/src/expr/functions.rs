//! Scalar functions (docs/sql.md, "Functions"): their names, argument types, result types and
//! values, as Flink SQL defines them.

use crate::types::{format_timestamp, parse_timestamp, rescale, SqlType, Value};
use chrono::{DateTime, Datelike, Timelike};
use std::sync::Arc;

/// A field of `EXTRACT(field FROM ts)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeField {
    /// YEAR
    Year,
    /// MONTH
    Month,
    /// DAY (of the month)
    Day,
    /// HOUR
    Hour,
    /// MINUTE
    Minute,
    /// SECOND
    Second,
    /// DOW: day of the week, 1 = Sunday (as Flink)
    DayOfWeek,
    /// DOY: day of the year
    DayOfYear,
}

/// A scalar function, its arguments checked at compile time.
#[derive(Clone, Debug)]
pub enum Func {
    /// `MOD(a, b)` on integers.
    Mod,
    /// `ABS(x)`
    Abs,
    /// `FLOOR(x)` of a number
    Floor,
    /// `CEIL(x)` of a number
    Ceil,
    /// `ROUND(x [, digits])`
    Round,
    /// `UPPER(s)`
    Upper,
    /// `LOWER(s)`
    Lower,
    /// `CHAR_LENGTH(s)`, `CHARACTER_LENGTH(s)`
    CharLength,
    /// `CONCAT(s, ...)`: NULL if any argument is
    Concat,
    /// `SUBSTRING(s, from [, len])`, 1-based
    Substring,
    /// `TRIM(s)`
    Trim,
    /// `SPLIT_INDEX(s, sep, index)`: the `index`th (0-based) piece of `s` split at `sep`, NULL if
    /// there is none
    SplitIndex,
    /// `REGEXP_EXTRACT(s, regex [, group])`: the group (default 1... as Flink: 0 is the whole
    /// match) of the first match, NULL if none; the regex compiled once when it is a constant
    RegexpExtract(Option<Arc<regex::Regex>>),
    /// `REGEXP(s, regex)`: whether `s` has a match
    Regexp(Option<Arc<regex::Regex>>),
    /// `DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm')`: Java's date pattern letters (y M d H m s S)
    DateFormat(Arc<str>),
    /// `EXTRACT(field FROM ts)`, `HOUR(ts)`, ...
    Extract(TimeField),
    /// `COALESCE(a, b, ...)`
    Coalesce,
    /// `IF(c, a, b)`
    If,
    /// `COUNT_CHAR(s, c)`: occurrences of the character `c` in `s` (Nexmark q14's UDF, built in)
    CountChar,
    /// `TO_TIMESTAMP(s)`: Flink's timestamp text to TIMESTAMP(3)
    ToTimestamp,
}

impl Func {
    /// The value on `args` (already evaluated). NULL arguments give NULL except where the
    /// function says otherwise (COALESCE, IF).
    pub fn call(&self, a: &[Value]) -> Value {
        let refs: Vec<&Value> = a.iter().collect();
        self.call_on(&refs)
    }

    /// [`Func::call`] on borrowed arguments: a column or a literal argument is read where it
    /// is, not cloned (a string's `Arc` count is one atomic add and one subtract per read, and a
    /// literal's count is shared by every worker: Nexmark q22's three `SPLIT_INDEX(url, '/', n)`
    /// per row).
    pub fn call_on(&self, a: &[&Value]) -> Value {
        match self {
            Func::Coalesce => {
                return a
                    .iter()
                    .find(|v| !v.is_null())
                    .map_or(Value::Null, |v| (*v).clone())
            }
            Func::If => {
                return match a[0] {
                    Value::Bool(true) => a[1].clone(),
                    _ => a[2].clone(),
                }
            }
            _ => {}
        }
        if a.iter().any(|v| v.is_null()) {
            return Value::Null;
        }
        // Borrowed, not an `Arc` clone: no atomic count per argument read.
        let s = |i: usize| match &a[i] {
            Value::Str(s) => std::borrow::Cow::Borrowed(&**s),
            v => std::borrow::Cow::Owned(v.to_text()),
        };
        match self {
            Func::Mod => match (a[0].as_i64(), a[1].as_i64()) {
                (Some(x), Some(y)) => x.checked_rem(y).map_or(Value::Null, Value::Int),
                _ => Value::Null,
            },
            Func::Abs => match &a[0] {
                Value::Int(i) => Value::Int(i.abs()),
                Value::Double(d) => Value::Double(d.abs()),
                Value::Decimal(u, s) => Value::decimal(u.get().abs(), *s),
                _ => Value::Null,
            },
            Func::Floor | Func::Ceil => match &a[0] {
                Value::Int(i) => Value::Int(*i),
                Value::Double(d) => Value::Double(match self {
                    Func::Floor => d.floor(),
                    _ => d.ceil(),
                }),
                Value::Decimal(u, s) => {
                    let (u, d) = (u.get(), 10i128.pow(*s as u32));
                    let q = u.div_euclid(d);
                    let up = matches!(self, Func::Ceil) && u.rem_euclid(d) != 0;
                    Value::decimal(q + up as i128, 0)
                }
                _ => Value::Null,
            },
            Func::Round => {
                let digits = a.get(1).and_then(|v| v.as_i64()).unwrap_or(0);
                match &a[0] {
                    Value::Int(i) => Value::Int(*i),
                    Value::Double(d) => {
                        let m = 10f64.powi(digits as i32);
                        Value::Double((d * m).round() / m)
                    }
                    Value::Decimal(u, s) => {
                        let to = digits.clamp(0, *s as i64) as u8;
                        Value::decimal(rescale(u.get(), *s, to), to)
                    }
                    _ => Value::Null,
                }
            }
            // Text already in the case asked for is the value itself (no new string).
            Func::Upper if is_str_where(a[0], |b| b.is_ascii() && !b.is_ascii_lowercase()) => {
                a[0].clone()
            }
            Func::Lower if is_str_where(a[0], |b| b.is_ascii() && !b.is_ascii_uppercase()) => {
                a[0].clone()
            }
            Func::Upper => Value::str(&s(0).to_uppercase()),
            Func::Lower => Value::str(&s(0).to_lowercase()),
            Func::CharLength => Value::Int(s(0).chars().count() as i64),
            Func::Concat => Value::str(&(0..a.len()).map(|i| s(i).to_string()).collect::<String>()),
            Func::Trim => Value::str(s(0).trim()),
            Func::Substring => {
                let text = s(0);
                let from = a[1].as_i64().unwrap_or(1).max(1) as usize - 1;
                let chars = text.chars().skip(from);
                let out: String = match a.get(2).and_then(|v| v.as_i64()) {
                    Some(n) => chars.take(n.max(0) as usize).collect(),
                    None => chars.collect(),
                };
                Value::str(&out)
            }
            Func::SplitIndex => {
                let (text, sep) = (s(0), s(1));
                let Some(i) = a[2].as_i64().filter(|i| *i >= 0) else {
                    return Value::Null;
                };
                if sep.is_empty() {
                    return Value::Null;
                }
                // A one-character separator (q22's '/') is found with memchr, not a substring
                // searcher.
                let mut one = sep.chars();
                let piece = match (one.next(), one.next()) {
                    (Some(c), None) => text.split(c).nth(i as usize),
                    _ => text.split(&*sep).nth(i as usize),
                };
                piece.map_or(Value::Null, Value::str)
            }
            Func::RegexpExtract(re) => {
                let owned;
                let re = match re {
                    Some(r) => r.as_ref(),
                    None => match regex::Regex::new(&s(1)) {
                        Ok(r) => {
                            owned = r;
                            &owned
                        }
                        Err(_) => return Value::Null,
                    },
                };
                let group = a.get(2).and_then(|v| v.as_i64()).unwrap_or(1).max(0) as usize;
                re.captures(&s(0))
                    .and_then(|c| c.get(group))
                    .map_or(Value::Null, |m| Value::str(m.as_str()))
            }
            Func::Regexp(re) => {
                let found = match re {
                    Some(r) => r.is_match(&s(0)),
                    None => regex::Regex::new(&s(1)).is_ok_and(|r| r.is_match(&s(0))),
                };
                Value::Bool(found)
            }
            Func::DateFormat(pattern) => match &a[0] {
                Value::Timestamp(ms) => Value::str(&date_format(*ms, pattern)),
                Value::Str(t) => parse_timestamp(t)
                    .map_or(Value::Null, |ms| Value::str(&date_format(ms, pattern))),
                _ => Value::Null,
            },
            Func::Extract(field) => match &a[0] {
                Value::Timestamp(ms) => extract(*ms, *field),
                _ => Value::Null,
            },
            Func::CountChar => {
                let c = s(1).chars().next();
                Value::Int(c.map_or(0, |c| s(0).chars().filter(|x| *x == c).count()) as i64)
            }
            Func::ToTimestamp => parse_timestamp(&s(0)).map_or(Value::Null, Value::Timestamp),
            Func::Coalesce | Func::If => unreachable!("handled above"),
        }
    }
}

fn extract(ms: i64, field: TimeField) -> Value {
    let Some(t) = DateTime::from_timestamp_millis(ms) else {
        return Value::Null;
    };
    let v = match field {
        TimeField::Year => t.year() as i64,
        TimeField::Month => t.month() as i64,
        TimeField::Day => t.day() as i64,
        TimeField::Hour => t.hour() as i64,
        TimeField::Minute => t.minute() as i64,
        TimeField::Second => t.second() as i64,
        TimeField::DayOfWeek => t.weekday().number_from_sunday() as i64,
        TimeField::DayOfYear => t.ordinal() as i64,
    };
    Value::Int(v)
}

/// `DATE_FORMAT`'s Java pattern (`yyyy-MM-dd HH:mm:ss.SSS`, letters y M d H m s S, text in
/// single quotes) applied to `ms` (UTC).
pub fn date_format(ms: i64, pattern: &str) -> String {
    let Some(t) = DateTime::from_timestamp_millis(ms) else {
        return format_timestamp(ms);
    };
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            // Quoted text, up to the next quote.
            out.extend(chars.by_ref().take_while(|&d| d != '\''));
            continue;
        }
        let mut n = 1;
        while chars.next_if_eq(&c).is_some() {
            n += 1;
        }
        match c {
            'y' if n == 2 => push_number(&mut out, t.year() as i64 % 100, 2),
            'y' => push_number(&mut out, t.year() as i64, n),
            'M' => push_number(&mut out, t.month() as i64, n),
            'd' => push_number(&mut out, t.day() as i64, n),
            'H' => push_number(&mut out, t.hour() as i64, n),
            'm' => push_number(&mut out, t.minute() as i64, n),
            's' => push_number(&mut out, t.second() as i64, n),
            'S' => {
                // The fraction's first n digits (zeros past the milliseconds).
                let milli = t.timestamp_subsec_millis();
                let digits = [milli / 100, milli / 10 % 10, milli % 10];
                out.extend(
                    (0..n).map(|k| char::from(b'0' + digits.get(k).map_or(0, |&d| d as u8))),
                );
            }
            _ => out.extend(std::iter::repeat_n(c, n)),
        }
    }
    out
}

/// `v` in decimal, zero-padded to `width` characters (a sign counted in them), as
/// `format!("{v:0width$}")` writes it, without formatting machinery: DATE_FORMAT runs per row.
fn push_number(out: &mut String, v: i64, width: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut u = v.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    let len = digits.len() - at + usize::from(v < 0);
    if v < 0 {
        out.push('-');
    }
    out.extend(std::iter::repeat_n('0', width.saturating_sub(len)));
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Whether `v` is a VARCHAR whose every byte passes `test`.
fn is_str_where(v: &Value, test: impl Fn(u8) -> bool) -> bool {
    matches!(v, Value::Str(t) if t.bytes().all(test))
}

/// `CAST(v AS ty)`: NULL where the value cannot be read as `ty` (Flink fails the job there;
/// docs/sql.md, "Differences from Flink SQL").
pub fn cast(v: Value, ty: SqlType) -> Value {
    if v.is_null() {
        return v;
    }
    match ty {
        SqlType::Bigint | SqlType::Int => match &v {
            Value::Int(_) => v,
            Value::Double(d) if d.is_finite() => Value::Int(d.trunc() as i64),
            Value::Decimal(u, s) => Value::Int((u.get() / 10i128.pow(*s as u32)) as i64),
            Value::Str(t) => t.trim().parse().map_or(Value::Null, Value::Int),
            Value::Bool(b) => Value::Int(*b as i64),
            Value::Timestamp(ms) => Value::Int(ms.div_euclid(1000)),
            _ => Value::Null,
        },
        SqlType::Double => match &v {
            Value::Str(t) => t.trim().parse().map_or(Value::Null, Value::Double),
            _ => v.as_f64().map_or(Value::Null, Value::Double),
        },
        SqlType::Decimal(_, s) => match &v {
            Value::Int(_) | Value::Decimal(..) => v
                .decimal_at(s)
                .map_or(Value::Null, |u| Value::decimal(u, s)),
            Value::Double(d) => Value::decimal((d * 10f64.powi(s as i32)).round() as i128, s),
            Value::Str(t) => {
                parse_decimal(t.trim(), s).map_or(Value::Null, |u| Value::decimal(u, s))
            }
            _ => Value::Null,
        },
        SqlType::Varchar => match &v {
            Value::Str(_) => v,
            _ => Value::str(&v.to_text()),
        },
        SqlType::Boolean => match &v {
            Value::Bool(_) => v,
            Value::Str(t) if t.eq_ignore_ascii_case("true") => Value::Bool(true),
            Value::Str(t) if t.eq_ignore_ascii_case("false") => Value::Bool(false),
            Value::Int(i) => Value::Bool(*i != 0),
            _ => Value::Null,
        },
        SqlType::Timestamp => match &v {
            Value::Timestamp(_) => v,
            Value::Str(t) => parse_timestamp(t).map_or(Value::Null, Value::Timestamp),
            _ => Value::Null,
        },
        SqlType::Interval | SqlType::Null => v,
    }
}

/// A decimal's text (`-12.345`) at `scale`.
pub fn parse_decimal(text: &str, scale: u8) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !(int.chars().all(|c| c.is_ascii_digit()) && frac.chars().all(|c| c.is_ascii_digit())) {
        return None;
    }
    let text = format!("{int}{frac}");
    let u: i128 = if text.is_empty() {
        0
    } else {
        text.parse().ok()?
    };
    let u = rescale(u, frac.len().min(38) as u8, scale);
    Some(if neg { -u } else { u })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_index_and_regexp_extract_follow_flink() {
        let v = |s: &str| Value::str(s);
        let si = Func::SplitIndex.call(&[v("a/b/c"), v("/"), Value::Int(1)]);
        assert_eq!(si, v("b"));
        assert!(Func::SplitIndex
            .call(&[v("a/b"), v("/"), Value::Int(5)])
            .is_null());
        // A longer separator, and a one-character one that is not ASCII.
        let long = Func::SplitIndex.call(&[v("a::b::c"), v("::"), Value::Int(2)]);
        assert_eq!(long, v("c"));
        let wide = Func::SplitIndex.call(&[v("aéb"), v("é"), Value::Int(1)]);
        assert_eq!(wide, v("b"));
        // Case functions: text already in the case, text to change, and a number as text.
        assert_eq!(Func::Lower.call(&[v("apple")]), v("apple"));
        assert_eq!(Func::Lower.call(&[v("ApPlÉ")]), v("applé"));
        assert_eq!(Func::Upper.call(&[v("APPLE")]), v("APPLE"));
        assert_eq!(Func::Upper.call(&[Value::Int(12)]), v("12"));
        assert_eq!(Func::Lower.call(&[Value::Int(12)]), v("12"));
        let re = Func::RegexpExtract(None);
        let got = re.call(&[
            v("channel_id=123&x"),
            v("(&|^)channel_id=([^&]*)"),
            Value::Int(2),
        ]);
        assert_eq!(got, v("123"));
        assert!(re
            .call(&[v("nothing"), v("x=(\\d+)"), Value::Int(1)])
            .is_null());
    }

    #[test]
    fn date_format_reads_java_patterns() {
        let ms = parse_timestamp("2015-07-15 09:05:03.042").unwrap();
        assert_eq!(date_format(ms, "yyyy-MM-dd"), "2015-07-15");
        assert_eq!(date_format(ms, "HH:mm"), "09:05");
        assert_eq!(
            date_format(ms, "yyyy-MM-dd HH:mm:ss.SSS"),
            "2015-07-15 09:05:03.042"
        );
        assert_eq!(extract(ms, TimeField::Hour), Value::Int(9));
        assert_eq!(date_format(ms, "yy 'at' H, S SSSSS"), "15 at 9, 0 04200");
    }

    proptest::proptest! {
        /// The digits DATE_FORMAT writes are those of Rust's zero-padded formatting, and a
        /// whole timestamp pattern gives chrono's text for it.
        #[test]
        fn date_format_numbers_are_formats(v in proptest::num::i64::ANY, width in 0usize..25,
                                           ms in -10_000_000_000_000i64..10_000_000_000_000) {
            let mut out = String::new();
            push_number(&mut out, v, width);
            proptest::prop_assert_eq!(out, format!("{v:0width$}"));
            let t = DateTime::from_timestamp_millis(ms).unwrap();
            proptest::prop_assert_eq!(
                date_format(ms, "yyyy-MM-dd HH:mm:ss.SSS"),
                t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
            );
        }
    }

    #[test]
    fn casts_that_cannot_read_give_null() {
        assert_eq!(cast(Value::str(" 42 "), SqlType::Bigint), Value::Int(42));
        assert!(cast(Value::str("4x"), SqlType::Bigint).is_null());
        assert_eq!(
            cast(Value::str("1.25"), SqlType::Decimal(10, 1)),
            Value::decimal(13, 1)
        );
        assert_eq!(parse_decimal("-0.5", 2), Some(-50));
        assert_eq!(parse_decimal("abc", 2), None);
    }
}
