//! File tables replayed at their event-time pace (`'replay.*'`:
//! crates/runtime/src/connectors/pace.rs, crates/sql/src/connectors/file_source.rs): the rows and
//! results are the unpaced run's (the batch oracle's), each window's rows come out when its
//! input has come due, not at the end, and bad replay options are refused before the run.

use crate::file_input::{table, write_rows, PER_WINDOW};
use crate::oracle::assert_same_rows;
use assert_cmd::cargo::CommandCargoExt;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

/// Runs `sql` on two workers, each stdout line with the wall time it arrived at (ms since the
/// epoch), and the replay's start as `xorflow sql` reported it.
fn run_stamped(sql: &str) -> (Vec<(f64, String)>, f64) {
    let mut child = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", sql, "--workers", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        lines.push((epoch_ms(), line.unwrap()));
    }
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let start: f64 = (stderr.lines())
        .find_map(|l| l.strip_prefix("replay: started at "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no replay start reported: {stderr}"));
    (lines, start)
}

/// The arrival of the last line whose column `col` is `value`.
fn last_arrival(lines: &[(f64, String)], col: usize, value: &str) -> f64 {
    (lines.iter())
        .filter(|(_, l)| l.split(',').nth(col) == Some(value))
        .map(|(at, _)| *at)
        .fold(f64::MIN, f64::max)
}

/// 6,000 rows 1 ms apart (6 s of event time, 2024-01-01 00:00:00 on) replayed as recorded, on
/// two workers: the file's ~1.2 s blocks alternate between the instances, so each waits for its
/// next block while the other reads; its watermark must follow the replay's clock meanwhile, or
/// windows ending inside the other's block wait up to a block (0.4 to 0.8 s here, before
/// 2026-12-07). A window `[s, s + 1 s)` with the table's 1 s delay is due 2 s + s after the start.
#[test]
fn a_replay_emits_each_window_when_its_input_is_due_with_the_batch_result() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    let (want, _) = write_rows(&input, 6_000, u64::MAX);
    let sql = format!(
        "{} {PER_WINDOW}",
        table(&input, ", 'replay.origin' = '2024-01-01 00:00:00'")
    );
    let (lines, start) = run_stamped(&sql);
    let rows: Vec<Vec<String>> = (lines.iter().skip(1))
        .map(|(_, l)| l.split(',').map(String::from).collect())
        .collect();
    assert_same_rows("replayed", &rows, &want);
    // Windows [0, 1 s) to [3 s, 4 s): the last two close at the end of the input.
    for s in 0..4u64 {
        let last = last_arrival(&lines, 1, &format!("2024-01-01 00:00:{s:02}.000"));
        let due = start + (s as f64 + 2.0) * 1e3;
        assert!(
            last >= due - 20.0,
            "window {s}: out {:.0} ms before its input was due",
            due - last
        );
        assert!(
            last - due < 400.0,
            "window {s}: out {:.0} ms after its input was due",
            last - due
        );
    }
    let end = lines.last().map_or(0.0, |l| l.0);
    assert!(
        end - start >= 5_500.0,
        "6 s of events replayed in {:.0} ms",
        end - start
    );
}

/// A cascade over hopping windows (Nexmark q5's `MaxBids`: the largest count per window, over
/// the counts per key and window): HOP 3 s every 1 s, then the max per window. Its window ending
/// at `e` comes out when the hopping windows ending at `e` do, not when those opened before `e`
/// have closed too: with each window holding its downstream in the slot of the row that opened
/// it, it came `size - slide` (2 s) late (crates/runtime/src/operators/deferred.rs,
/// `window_hold_slot`). The maxima equal the batch computation's.
#[test]
fn a_cascade_over_hopping_windows_comes_out_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    write_rows(&input, 6_000, u64::MAX);
    let sql = format!(
        "{} SELECT max(n), window_end FROM (SELECT k, count(*) AS n, window_start, window_end \
         FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) \
         GROUP BY k, window_start, window_end) GROUP BY window_start, window_end",
        table(&input, ", 'replay.origin' = '2024-01-01 00:00:00'")
    );
    let (lines, start) = run_stamped(&sql);
    // Rows i = 0..6000 at i ms, key i % 7: window [e - 3 s, e) holds rows max(0, e - 3000) ..
    // min(e, 6000); its largest key count is the ceiling of their number over 7.
    for e in 1..=8u64 {
        let (lo, hi) = ((e * 1000).saturating_sub(3000), (e * 1000).min(6000));
        let max = (hi - lo).div_ceil(7);
        let end = format!("2024-01-01 00:00:{e:02}.000");
        let got: Vec<&String> = (lines.iter().map(|(_, l)| l))
            .filter(|l| l.ends_with(&end))
            .collect();
        assert_eq!(got, vec![&format!("{max},{end}")], "window ending at {e} s");
        // Due when the row at e + 1 s (the delay) is: before the input's end for e <= 4.
        if e <= 4 {
            let late = last_arrival(&lines, 1, &end) - (start + (e as f64 + 1.0) * 1e3);
            assert!(
                late < 1000.0,
                "window ending at {e} s: out {late:.0} ms after due"
            );
        }
    }
}

#[test]
fn bad_replay_options_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    write_rows(&input, 10, u64::MAX);
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "k,v,ts\n1,2,2024-01-01 00:00:00\n").unwrap();
    let origin = ", 'replay.origin' = '2024-01-01 00:00:00'";
    let cases = [
        (
            table(&input, ", 'replay.speed' = '2'"),
            "'replay.speed' needs 'replay.origin'",
        ),
        (
            table(&input, ", 'replay.origin' = 'noon'"),
            "'replay.origin' = 'noon' is not a timestamp",
        ),
        (
            table(&input, &format!("{origin}, 'replay.speed' = '0'")),
            "'replay.speed' = '0' is not a positive number",
        ),
        (
            table(&input, &format!("{origin}, 'replay.start-ms' = 'now'")),
            "'replay.start-ms' = 'now' is not ms since the epoch",
        ),
        (
            table(&input, &format!("{origin}, 'rows-per-second' = '10'")),
            "'rows-per-second' and 'replay.origin' pace the same rows",
        ),
        (
            table(&csv, origin).replace("'json'", "'csv'"),
            "a replay needs 'format' = 'json'",
        ),
        (
            format!(
                "CREATE TABLE t (k BIGINT, v BIGINT, ts TIMESTAMP(3)) WITH ('connector' = \
                 'filesystem', 'path' = '{}', 'format' = 'json'{origin});",
                input.display()
            ),
            "a replay needs the table's event time",
        ),
        (
            format!(
                "{} {}",
                table(&input, origin),
                table(&input, &format!("{origin}, 'replay.speed' = '3'"))
                    .replace("TABLE t ", "TABLE u ")
            ),
            "the tables of a job replay on one clock",
        ),
    ];
    for (ddl, why) in cases {
        let query = match ddl.contains("TABLE u ") {
            true => "SELECT t.k FROM t JOIN u ON t.k = u.k",
            false => "SELECT k FROM t",
        };
        let o = Command::cargo_bin("xorflow")
            .unwrap()
            .args(["sql", "--execute", &format!("{ddl} {query}")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{why}: {stderr}");
        assert!(stderr.contains(why), "expected {why:?}: {stderr}");
    }
}
