//! JSON file tables read while the job runs (`crates/sql/src/connectors/file_source.rs`): bad
//! lines skipped, counted and named by line; a file cut into blocks read by every instance of
//! two processes; a run killed with kill -9 resuming each instance at its block and offset. The
//! oracle is a plain batch computation over the same lines.

use crate::common::procs::{kill9, live_child, wait_first_checkpoint, wait_output};
use crate::oracle::{assert_same_rows, read_csv};
use assert_cmd::cargo::CommandCargoExt;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub(crate) fn table(path: &Path, extra: &str) -> String {
    format!(
        "CREATE TABLE t (k BIGINT, v BIGINT, ts TIMESTAMP(3), \
         WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'json'{extra});",
        path.display()
    )
}

pub(crate) const PER_WINDOW: &str = "SELECT k, window_start, count(*), sum(v) \
     FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) \
     GROUP BY k, window_start, window_end";

fn xorflow(sql: &str, out: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", sql, "--output"])
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

/// `n` lines: row `i` has key `i % 7`, value `i`, event time 2024-01-01 00:00:00 plus `i` ms;
/// every `bad_every`-th line (from line `bad_every`) is not JSON. Returns the oracle's rows of
/// [`PER_WINDOW`] and the number of bad lines.
pub(crate) fn write_rows(path: &Path, n: u64, bad_every: u64) -> (Vec<Vec<String>>, u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut windows: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    let mut bad = 0;
    for i in 0..n {
        if (i + 1) % bad_every == 0 {
            writeln!(f, "{{\"k\": {}, broken", i % 7).unwrap();
            bad += 1;
            continue;
        }
        let (s, ms) = (i / 1000, i % 1000);
        writeln!(
            f,
            "{{\"k\": {}, \"v\": {i}, \"ts\": \"2024-01-01 00:{:02}:{:02}.{ms:03}\"}}",
            i % 7,
            s / 60,
            s % 60
        )
        .unwrap();
        let w = windows.entry((i % 7, s)).or_default();
        w.0 += 1;
        w.1 += i;
    }
    f.flush().unwrap();
    let rows = (windows.into_iter())
        .map(|((k, s), (c, v))| {
            let start = format!("2024-01-01 00:{:02}:{:02}.000", s / 60, s % 60);
            vec![k.to_string(), start, c.to_string(), v.to_string()]
        })
        .collect();
    (rows, bad)
}

#[test]
fn malformed_lines_are_skipped_counted_and_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    let mut lines: Vec<Vec<u8>> = [
        r#"{"k": 1, "v": 10, "ts": "2024-01-01 00:00:00.000"}"#,
        r#"{"k": 2, "v": 20, "ts": "2024-01-01 00:00:01.000"}"#,
        "not json",
        "   ",
        r#"{"k": "x", "v": 1, "ts": "2024-01-01 00:00:02.000"}"#,
        r#"{"k": 3, "v": 30, "ts": null}"#,
        "",
        r#"{"k": 4, "v": 40, "ts": "2024-01-01 00:00:03.000"}"#,
    ]
    .iter()
    .map(|l| l.as_bytes().to_vec())
    .collect();
    lines.insert(6, b"{\"k\": 5, \"v\": \"\xff\"}".to_vec());
    std::fs::write(&input, lines.join(&b"\r\n"[..])).unwrap();
    let out = dir.path().join("out.csv");
    let o = xorflow(
        &format!("{} SELECT k, v FROM t", table(&input, "")),
        &out,
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let want: Vec<Vec<String>> = [["1", "10"], ["2", "20"], ["4", "40"]]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_same_rows("good rows", &read_csv(&out, true), &want);
    for part in [
        "table t: 4 malformed rows skipped (line 3: not JSON",
        "line 5: column k: ",
        "line 6: column ts: no event time (NULL); ...)",
        "read 7 rows of t",
    ] {
        assert!(stderr.contains(part), "no '{part}' in: {stderr}");
    }
}

#[test]
fn a_file_in_blocks_read_by_two_processes_gives_the_batch_result() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    // About 2.9 MB: 45 blocks of 64 KiB, dealt to 4 instances.
    let (want, bad) = write_rows(&input, 50_000, 4_999);
    let out = dir.path().join("out.csv");
    let sql = format!("{} {PER_WINDOW}", table(&input, ""));
    let o = xorflow(&sql, &out, &["--processes", "2", "--workers", "2"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_same_rows("two processes", &read_csv(&out, true), &want);
    assert!(
        stderr.contains(&format!("{bad} malformed rows skipped")),
        "{stderr}"
    );
    assert!(stderr.contains("read 50000 rows of t"), "{stderr}");
}

#[test]
fn a_file_table_killed_mid_run_resumes_at_each_instances_block_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    let (want, _) = write_rows(&input, 40_000, 1_000_000);
    let out = dir.path().join("out.csv");
    let checkpoints = dir.path().join("checkpoints");
    // 8,000 rows per second: a 5 s run.
    let sql = format!(
        "{} {PER_WINDOW}",
        table(&input, ", 'rows-per-second' = '8000'")
    );
    let child = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", &sql, "--processes", "2"])
        .args(["--checkpoint-interval", "200ms", "--restart-attempts", "3"])
        .arg("--checkpoint-dir")
        .arg(&checkpoints)
        .arg("--output")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_first_checkpoint(&checkpoints);
    std::thread::sleep(Duration::from_millis(1500));
    kill9(live_child(child.id(), 1, &[]));
    assert!(!out.exists(), "a result before the run finished");
    let o = wait_output(child, Duration::from_secs(120));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("resumed from checkpoint"),
        "the run did not say it restarted: {stdout} {stderr}"
    );
    assert_same_rows("after kill -9", &read_csv(&out, true), &want);
}

/// Sessions are keyed processes with timers (crates/runtime/src/operators/process.rs): a run
/// killed mid-way restores their state and timers from the checkpoint. 30,000 rows, key `i %
/// 7`, 1 ms apart, with a 3 s jump every 5,000 rows: per key, one 2 s session per stretch.
#[test]
fn sessions_killed_mid_run_resume_their_state_and_timers() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
    let mut sessions: BTreeMap<(u64, u64), (u64, u64, u64)> = BTreeMap::new();
    for i in 0..30_000u64 {
        let ms = i + (i / 5_000) * 3_000;
        let text = format!(
            "2024-01-01 {:02}:{:02}:{:02}.{:03}",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        );
        writeln!(f, "{{\"k\": {}, \"v\": {i}, \"ts\": \"{text}\"}}", i % 7).unwrap();
        let s = sessions.entry((i % 7, i / 5_000)).or_insert((ms, ms, 0));
        s.1 = ms;
        s.2 += 1;
    }
    f.flush().unwrap();
    let at = |ms: u64| {
        format!(
            "2024-01-01 {:02}:{:02}:{:02}.{:03}",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        )
    };
    let want: Vec<Vec<String>> = (sessions.into_iter())
        .map(|((k, _), (first, last, n))| {
            vec![k.to_string(), at(first), at(last + 2_000), n.to_string()]
        })
        .collect();
    let out = dir.path().join("out.csv");
    let checkpoints = dir.path().join("checkpoints");
    // 6,000 rows per second: a 5 s run.
    let sql = format!(
        "{} SELECT k, window_start, window_end, count(*) FROM TABLE(SESSION(TABLE t PARTITION BY k, \
         DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end",
        table(&input, ", 'rows-per-second' = '6000'")
    );
    let child = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", &sql, "--processes", "2"])
        .args(["--checkpoint-interval", "200ms", "--restart-attempts", "3"])
        .arg("--checkpoint-dir")
        .arg(&checkpoints)
        .arg("--output")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_first_checkpoint(&checkpoints);
    std::thread::sleep(Duration::from_millis(1500));
    kill9(live_child(child.id(), 1, &[]));
    let o = wait_output(child, Duration::from_secs(120));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("resumed from checkpoint"),
        "the run did not say it restarted: {stdout} {stderr}"
    );
    assert_same_rows("sessions after kill -9", &read_csv(&out, true), &want);
}

#[test]
fn a_bad_rate_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    write_rows(&input, 10, 1_000);
    let sql = format!(
        "{} SELECT k FROM t",
        table(&input, ", 'rows-per-second' = 'fast'")
    );
    let o = xorflow(&sql, &dir.path().join("out.csv"), &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'rows-per-second' = 'fast' is not a positive number"),
        "{stderr}"
    );
}
