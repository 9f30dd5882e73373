//! Reading the events file (`kafka-json.txt`, one JSON event per line) for the catch-up mode:
//! every line is checked once here, so a malformed one is counted and reported with its line
//! number instead of vanishing inside the dataflow, and every valid one gets its event time and
//! the heartbeat its source sends after it.
//!
//! Lateness (`--lateness L`, ms) is a property of each line in file order: a line whose event
//! time is below the largest event time before it minus L is late; it is counted and never
//! enters the dataflow. After emitting a line, a source heartbeats that running maximum minus L:
//! no later line of the file, hence of the source's share, lies below it.

use crate::campaigns::Campaigns;
use crate::event::{self, EventType};
use std::path::Path;

/// How many malformed lines are kept as examples.
pub const EXAMPLES: usize = 10;

/// A line to emit.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its event time, ms since the epoch.
    pub time: u64,
    /// What its source heartbeats after emitting it, ms.
    pub heartbeat: u64,
    /// The JSON line as read (parsed again in the dataflow, as the original job does).
    pub line: Box<str>,
}

/// A skipped line.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Malformed {
    /// 1-based line number.
    pub line: u64,
    /// What is wrong with it.
    pub reason: String,
}

/// The file, checked.
#[derive(Debug, Default)]
pub struct Events {
    /// Valid lines that are not late, in file order.
    pub records: Vec<Record>,
    /// Lines read (without a trailing empty line).
    pub lines: u64,
    /// Lines skipped as malformed, and the first [`EXAMPLES`] of them.
    pub malformed: u64,
    /// See `malformed`.
    pub malformed_examples: Vec<Malformed>,
    /// Valid lines skipped as late.
    pub late: u64,
    /// Views (on time) whose ad is not in the campaign table: the join drops them.
    pub unknown_ad_views: u64,
}

/// Reads and checks `path` (see the module docs).
///
/// # Errors
/// The file cannot be read.
pub fn read(path: &Path, lateness_ms: u64, campaigns: &Campaigns) -> Result<Events, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read --input '{}': {e}", path.display()))?;
    Ok(check(&bytes, lateness_ms, campaigns))
}

/// Checks the file's bytes (see the module docs).
pub fn check(bytes: &[u8], lateness_ms: u64, campaigns: &Campaigns) -> Events {
    let mut ev = Events::default();
    let mut max = None::<u64>;
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() {
        return ev;
    }
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        ev.lines += 1;
        let parsed = std::str::from_utf8(raw)
            .map_err(|e| format!("not UTF-8: {e}"))
            .and_then(|line| event::parse_ref(line).map(|e| (line, e)));
        let (line, e) = match parsed {
            Ok(p) => p,
            Err(reason) => {
                ev.malformed += 1;
                if ev.malformed_examples.len() < EXAMPLES {
                    ev.malformed_examples.push(Malformed {
                        line: i as u64 + 1,
                        reason,
                    });
                }
                continue;
            }
        };
        if max.is_some_and(|m| e.event_time.saturating_add(lateness_ms) < m) {
            ev.late += 1;
            continue;
        }
        let m = max.map_or(e.event_time, |m| m.max(e.event_time));
        max = Some(m);
        if e.event_type == EventType::View && campaigns.of(&e.ad_id).is_none() {
            ev.unknown_ad_views += 1;
        }
        ev.records.push(Record {
            time: e.event_time,
            heartbeat: m.saturating_sub(lateness_ms),
            line: line.into(),
        });
    }
    ev
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::event::Event;

    /// An event line of `kind` for `ad` at `t` (the other fields fixed).
    pub(crate) fn line(ad: &str, t: u64, kind: EventType) -> String {
        Event {
            user_id: "u",
            page_id: "p",
            ad_id: ad,
            ad_type: "mail",
            event_type: kind,
            event_time: t,
            ip_address: "1.2.3.4",
        }
        .to_json()
    }

    #[test]
    fn counts_malformed_and_late_lines_and_heartbeats_the_running_maximum() {
        let c = Campaigns::parse("{ \"a\": \"c\"}\n").unwrap();
        let text = [
            line("a", 1000, EventType::View),
            "garbage".into(),
            line("a", 1200, EventType::Click),
            line("a", 1100, EventType::View), // 100 behind the maximum: on time with L = 100
            line("a", 1099, EventType::View), // 101 behind: late
            line("zz", 1300, EventType::View), // unknown ad
            String::new(),                    // an empty line inside the file is malformed
        ]
        .join("\n");
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"\n\xff\xfe\n");
        let ev = check(&bytes, 100, &c);
        assert_eq!(
            (ev.lines, ev.malformed, ev.late, ev.unknown_ad_views),
            (8, 3, 1, 1)
        );
        let lines: Vec<u64> = ev.malformed_examples.iter().map(|m| m.line).collect();
        assert_eq!(lines, [2, 7, 8]);
        assert!(ev.malformed_examples[2].reason.contains("UTF-8"));
        let times: Vec<(u64, u64)> = ev.records.iter().map(|r| (r.time, r.heartbeat)).collect();
        assert_eq!(
            times,
            [(1000, 900), (1200, 1100), (1100, 1100), (1300, 1200)]
        );
        // Invariant: no record lies below a heartbeat sent before it.
        let mut hb = 0;
        for r in &ev.records {
            assert!(r.time >= hb);
            hb = r.heartbeat;
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = read(Path::new("/nonexistent/k.txt"), 0, &Campaigns::default()).unwrap_err();
        assert!(e.contains("--input '/nonexistent/k.txt'"), "{e}");
    }
}
