//! The in-job generator's schedule and its pre-serialized events: the contract every engine of
//! `xorflow-lab bench ysb` and `xorflow-lab bench peers --workload ysb` follows (`peers/ysb-contract.md`),
//! so the set of emitted events is known in advance and an oracle can recount it.
//!
//! Event `k` (`0 <= k < rate * duration`) is due `k * 1e9 / rate` ns (integer division) after
//! `start_ms`; its bytes are template line `k mod N` with `event_time` set to the due time in
//! whole ms. The Cloudprofiler paper's ingestion (sections 4.3 and 4.4, docs/papers.md): events
//! serialized before the run, an absolute schedule so errors never accumulate.

use crate::event;

/// When each event is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Events per second, over all source instances.
    pub rate: u64,
    /// Seconds of generation.
    pub duration_s: u64,
    /// Due time of event 0, ms since the epoch.
    pub start_ms: u64,
}

impl Schedule {
    /// Events in the run: `rate * duration_s`.
    pub fn events(&self) -> u64 {
        self.rate * self.duration_s
    }

    /// When event `k` is due after the start, ns.
    #[inline]
    pub fn offset_ns(&self, k: u64) -> u64 {
        (u128::from(k) * 1_000_000_000 / u128::from(self.rate.max(1))) as u64
    }

    /// Event `k`'s event time, ms since the epoch.
    #[inline]
    pub fn event_ms(&self, k: u64) -> u64 {
        self.start_ms + self.offset_ns(k) / 1_000_000
    }

    /// The end of generation, ms since the epoch (exclusive).
    pub fn end_ms(&self) -> u64 {
        self.start_ms + self.duration_s * 1000
    }

    /// Whether the window `[start, start + window_ms)` lies inside the generation: only those
    /// windows count for latency (the first and last may be partial).
    pub fn covers(&self, window_start_ms: u64, window_ms: u64) -> bool {
        window_start_ms >= self.start_ms && window_start_ms + window_ms <= self.end_ms()
    }
}

/// Width of `event_time`'s value: ms since the epoch, 13 digits until the year 2286.
pub const TIME_DIGITS: usize = 13;

/// Pre-serialized events: the template lines and where each one's `event_time` digits are.
#[derive(Debug, Default)]
pub struct Templates {
    lines: Vec<Box<str>>,
    time_at: Vec<u32>,
}

impl Templates {
    /// Parses the template file's text (`what` names it in errors): every line must be a valid
    /// event (`event.rs`) whose `event_time` is a 13-digit string; empty lines are skipped.
    ///
    /// # Errors
    /// The first bad line, by 1-based number; a file without events.
    pub fn parse(text: &str, what: &str) -> Result<Self, String> {
        let mut t = Templates::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: String| format!("{what} line {}: {why}", i + 1);
            event::parse(line).map_err(bad)?;
            let at = time_offset(line).ok_or_else(|| {
                bad(format!(
                    "event_time is not a {TIME_DIGITS}-digit string (the template's time is replaced by the schedule's)"
                ))
            })?;
            t.lines.push(line.into());
            t.time_at.push(at as u32);
        }
        if t.lines.is_empty() {
            return Err(format!("{what} holds no events"));
        }
        Ok(t)
    }

    /// Number of templates (N).
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are none (never, after [`Templates::parse`]).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Template `k mod N` as is.
    pub fn template(&self, k: u64) -> &str {
        &self.lines[(k % self.lines.len() as u64) as usize]
    }

    /// Event `k`'s line: template `k mod N` with `event_time` set to `event_ms` (13 digits).
    #[inline]
    pub fn line(&self, k: u64, event_ms: u64) -> String {
        let i = (k % self.lines.len() as u64) as usize;
        let mut bytes = self.lines[i].as_bytes().to_vec();
        let at = self.time_at[i] as usize;
        let mut v = event_ms;
        for b in bytes[at..at + TIME_DIGITS].iter_mut().rev() {
            *b = b'0' + (v % 10) as u8;
            v /= 10;
        }
        // SAFETY: only ASCII digits replaced ASCII digits in a valid UTF-8 line.
        unsafe { String::from_utf8_unchecked(bytes) }
    }
}

/// Byte offset of the digits of `"event_time": "<13 digits>"` in `line`.
fn time_offset(line: &str) -> Option<usize> {
    let key = line.find("\"event_time\"")? + "\"event_time\"".len();
    let rest = &line[key..];
    let colon = rest.find(':')?;
    let quote = rest[colon..].find('"')? + colon + 1;
    let at = key + quote;
    let digits = line.get(at..at + TIME_DIGITS)?;
    let closed = line.as_bytes().get(at + TIME_DIGITS) == Some(&b'"');
    (digits.bytes().all(|b| b.is_ascii_digit()) && closed).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"user_id": "u", "page_id": "p", "ad_id": "a", "ad_type": "mail", "event_type": "view", "event_time": "1700000000000", "ip_address": "1.2.3.4"}"#;

    #[test]
    fn the_schedule_is_integer_exact() {
        let s = Schedule {
            rate: 3,
            duration_s: 2,
            start_ms: 1_000,
        };
        assert_eq!(s.events(), 6);
        assert_eq!(
            (0..6).map(|k| s.event_ms(k)).collect::<Vec<_>>(),
            [1000, 1333, 1666, 2000, 2333, 2666]
        );
        assert!(s.covers(1000, 2000) && !s.covers(1000, 2001) && !s.covers(999, 10));
    }

    #[test]
    fn a_line_gets_the_schedules_time_and_stays_a_valid_event() {
        let t = Templates::parse(&format!("{LINE}\n\n{LINE}\n"), "t").unwrap();
        assert_eq!(t.len(), 2);
        let l = t.line(5, 1_795_000_000_123);
        assert_eq!(event::parse(&l).unwrap().event_time, 1_795_000_000_123);
        assert_eq!(l.len(), LINE.len());
    }

    #[test]
    fn bad_templates_are_named_by_line() {
        let short = LINE.replace("1700000000000", "17");
        let e = Templates::parse(&format!("{LINE}\n{short}\n"), "--events 'x'").unwrap_err();
        assert!(e.starts_with("--events 'x' line 2: event_time"), "{e}");
        let e = Templates::parse("{}\n", "f").unwrap_err();
        assert!(e.starts_with("f line 1: "), "{e}");
        assert!(Templates::parse("\n", "f")
            .unwrap_err()
            .contains("no events"));
    }
}
