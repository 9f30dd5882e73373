//! A fast path for reading one YSB event line: a single scan that accepts only the plainest
//! form of the JSON object ([`crate::event::EventRef`]'s seven fields, each once, each a string
//! without escapes) and hands every other line to serde_json.
//!
//! Why: serde_json's scan of a line was the largest task of the YSB at 100,000 events/s with a
//! latency budget (docs/cpu.md, "A latency budget"), and other JSON libraries were not faster on
//! this small object (docs/cpu.md, "A faster JSON library does not help here"). The line the
//! generator writes is always in the plain form, so nearly every line takes this path.
//!
//! What a malformed line is does not change: [`scan`] returns `None` for anything it does not
//! fully recognise (an escape, an unknown or repeated field, a non-string value, a control
//! character, trailing text), and [`crate::event::parse_ref`] then asks serde_json, whose answer
//! (the event or its error message) is the one a caller gets. Where `scan` returns an event,
//! serde_json returns the same one (`tests` below check this against serde_json on generated and
//! mutated lines).

use crate::event::{EventRef, EventType};
use std::borrow::Cow;

/// The index of field `key` in [`EventRef`]'s order.
#[inline]
fn field(key: &str) -> Option<usize> {
    Some(match key {
        "user_id" => 0,
        "page_id" => 1,
        "ad_id" => 2,
        "ad_type" => 3,
        "event_type" => 4,
        "event_time" => 5,
        "ip_address" => 6,
        _ => return None,
    })
}

/// Reads `line` if it is the plain form of an event (see the module docs), else `None`.
pub fn scan(line: &str) -> Option<EventRef<'_>> {
    let b = line.as_bytes();
    let mut at = skip_ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut values: [Option<&str>; 7] = [None; 7];
    loop {
        at = skip_ws(b, at + 1);
        let (key, next) = string(line, at)?;
        let field = field(key)?;
        at = skip_ws(b, next);
        if b.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(b, at + 1);
        let (value, next) = string(line, at)?;
        if values[field].replace(value).is_some() {
            return None; // serde_json names the repeated field
        }
        at = skip_ws(b, next);
        match b.get(at) {
            Some(b',') => continue,
            Some(b'}') => break,
            _ => return None,
        }
    }
    if skip_ws(b, at + 1) != b.len() {
        return None;
    }
    let [Some(user_id), Some(page_id), Some(ad_id), Some(ad_type), Some(kind), Some(time), Some(ip_address)] =
        values
    else {
        return None;
    };
    let event_type = EventType::ALL.into_iter().find(|t| t.name() == kind)?;
    Some(EventRef {
        user_id: Cow::Borrowed(user_id),
        page_id: Cow::Borrowed(page_id),
        ad_id: Cow::Borrowed(ad_id),
        ad_type: Cow::Borrowed(ad_type),
        event_type,
        // As serde's visitor reads it (`event.rs`, `millis`): the same function, the same
        // acceptance.
        event_time: time.parse().ok()?,
        ip_address: Cow::Borrowed(ip_address),
    })
}

/// The first position at or after `at` that is not JSON whitespace (serde_json's four).
#[inline]
fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(at) {
        at += 1;
    }
    at
}

/// The string starting with the quote at `at`, and the position after its closing quote; `None`
/// if there is no quote there, or the string has an escape or a control character (the slow
/// path's to judge) or no end.
#[inline]
fn string(line: &str, at: usize) -> Option<(&str, usize)> {
    let b = line.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let end = start + special(&b[start..])?;
    // Quotes are ASCII, so both ends are on character boundaries.
    (b[end] == b'"').then(|| (&line[start..end], end + 1))
}

/// Eight copies of byte `x`.
const fn splat(x: u8) -> u64 {
    u64::from_ne_bytes([x; 8])
}

/// The first byte of `b` that ends a plain string: a quote, a backslash or a control character
/// (below 0x20). Sixteen bytes at a time with SSE2 (every x86-64 has it), then eight at a time
/// (SWAR): a byte-at-a-time loop made the scan barely faster than serde_json, and SWAR alone
/// left it at 186 ns per line against serde_json's 318 (`benches/parse.rs`).
#[inline]
fn special(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    {
        let mut chunks = b.chunks_exact(16);
        for c in chunks.by_ref() {
            let hit = sse2_hits(c.try_into().expect("16 bytes"));
            if hit != 0 {
                return Some(at + hit.trailing_zeros() as usize);
            }
            at += 16;
        }
    }
    let mut chunks = b[at..].chunks_exact(8);
    for c in chunks.by_ref() {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        // Per byte, its high bit set when the byte is below n (`hasless`); a false positive can
        // only sit above a true one, and only the lowest is read.
        let below = |x: u64, n: u8| x.wrapping_sub(splat(n)) & !x & splat(0x80);
        let hit = below(w ^ splat(b'"'), 1) | below(w ^ splat(b'\\'), 1) | below(w, 0x20);
        if hit != 0 {
            return Some(at + (hit.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    (tail
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20))
    .map(|i| at + i)
}

/// Bit i set when byte i of `c` is a quote, a backslash or below 0x20.
#[cfg(target_arch = "x86_64")]
#[inline]
fn sse2_hits(c: &[u8; 16]) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86-64, and the load is unaligned from 16 readable bytes.
    unsafe {
        let v = _mm_loadu_si128(c.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned v <= 0x1f exactly when max(v, 0x1f) == 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), control)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, AD_TYPES};
    use proptest::prelude::*;

    /// serde_json's reading of `line`, owned, or its error message.
    fn serde(line: &str) -> Result<Event, String> {
        serde_json::from_str::<EventRef>(line)
            .map(EventRef::into_owned)
            .map_err(|e| e.to_string())
    }

    fn line(ad: &str, kind: EventType, ms: u64) -> String {
        Event {
            user_id: "7b1f0c8e-41a5-4b4e-9b1e-0d6f2b1a9c33",
            page_id: "c2d6a1f4-5e2b-4c8f-a7d1-3b9e0f6a2d14",
            ad_id: ad,
            ad_type: AD_TYPES[2],
            event_type: kind,
            event_time: ms,
            ip_address: "1.2.3.4",
        }
        .to_json()
    }

    #[test]
    fn reads_the_generators_lines_as_serde_json_does() {
        for kind in EventType::ALL {
            let l = line("a-1", kind, 1_700_000_000_123);
            let fast = scan(&l).expect("the generator's form is the plain one");
            assert!(matches!(fast.ad_id, Cow::Borrowed("a-1")));
            assert_eq!(Ok(fast.into_owned()), serde(&l));
        }
    }

    /// Each of these is left to serde_json, which accepts some (escapes, other orders) and
    /// refuses the others with its own message.
    #[test]
    fn leaves_every_other_form_to_serde_json() {
        let l = line("a", EventType::View, 17);
        for other in [
            l.replace("\"a\"", "\"\\u0061\""),         // an escape in a value
            l.replace("\"ad_id\"", "\"\\u0061d_id\""), // an escape in a key
            l.replace("\"view\"", "\"hover\""),        // an unknown type
            l.replace("\"17\"", "17"),                 // a number, not a string
            l.replace("\"17\"", "\"1e3\""),            // not whole ms
            l.replace("\"ip_address\"", "\"ip\""),     // an unknown field
            l.replace(", \"ip_address\": \"1.2.3.4\"", ""), // a missing field
            l.replace("}", ", \"ad_id\": \"b\"}"),     // a repeated field
            l.replace("\"a\"", "\"a\tb\""),            // a control character
            format!("{l} x"),                          // trailing text
            l.replace("}", ""),                        // no end
            l.replace("\"view\"", "{\"view\": null}"), // a variant as a map
            String::new(),
        ] {
            assert!(scan(&other).is_none(), "{other}");
        }
    }

    fn mutated() -> impl Strategy<Value = String> {
        let kinds = prop::sample::select(EventType::ALL.to_vec());
        let edits = prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                0..4u8,
                prop::sample::select(&b" \t\n\"\\{}:,+0-ax\x01\xc3"[..]),
            ),
            0..3,
        );
        (kinds, any::<u64>(), edits).prop_map(|(kind, ms, edits)| {
            let mut b = line("ad", kind, ms).into_bytes();
            for (i, op, c) in edits {
                let at = i.index(b.len() + 1);
                match op {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 if at < b.len() => b[at] = c,
                    _ => b.insert(at, c),
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The eight-at-a-time search finds what a byte loop finds, wherever it lies (non-ASCII
        /// bytes included, which must not look like control characters).
        #[test]
        fn special_finds_the_first_end_byte(
            b in prop::collection::vec(prop::sample::select(&b"ab\"\\\x00\x1f\x20\x7f\x80\xa2\xdc\xff"[..]), 0..80)
        ) {
            let slow = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            prop_assert_eq!(special(&b), slow);
        }

        /// Wherever the scan reads an event, serde_json reads the same one; and the job's
        /// reading (scan, else serde_json) agrees with serde_json alone on every line, event or
        /// error message.
        #[test]
        fn never_disagrees_with_serde_json(l in mutated()) {
            if let Some(e) = scan(&l) {
                prop_assert_eq!(Ok(e.into_owned()), serde(&l));
            }
            let job = crate::event::parse(&l);
            prop_assert_eq!(job, serde(&l));
        }
    }
}
