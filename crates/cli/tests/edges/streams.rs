//! Streams where users expect streams (item 12): `--input -` reads standard input as it
//! arrives, and `--output -` prints each window's rows as the window closes, not at the end;
//! what a stream cannot do (a second process, a restart that reads it again) is refused.

use crate::common::bin;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The options of a 1 minute tumbling window per sensor: count and mean temperature.
const JOB: [&str; 8] = [
    "--time-field",
    "ts",
    "--key",
    "sensor",
    "--window",
    "tumbling:1m",
    "--aggregate",
    "count,mean:temp",
];

/// Rows of minute `m` (times 60m .. 60m+59): sensors a and b, temperatures 20-24.
fn minute(m: u64) -> String {
    (0..6)
        .map(|i| {
            let s = if i % 2 == 0 { "a" } else { "b" };
            format!("{},{s},{}\n", 60 * m + 10 * i, 20 + (m + i) % 5)
        })
        .collect()
}

/// What a plain computation of the job gives for minutes `ms` (the oracle): per minute and
/// sensor, the row count and mean temperature, sorted by window and sensor, with the header.
fn oracle(ms: &[u64]) -> String {
    let mut out = String::from("window_start,window_end,sensor,count,mean_temp\n");
    for &m in ms {
        for s in ["a", "b"] {
            let temps: Vec<u64> = (0..6)
                .filter(|i| (i % 2 == 0) == (s == "a"))
                .map(|i| 20 + (m + i) % 5)
                .collect();
            let mean = temps.iter().sum::<u64>() as f64 / temps.len() as f64;
            let mean = match mean.fract() == 0.0 {
                true => format!("{}", mean as i64),
                false => format!("{mean}"),
            };
            let (start, end) = (60 * m, 60 * m + 60);
            out.push_str(&format!("{start},{end},{s},{},{mean}\n", temps.len()));
        }
    }
    out
}

/// Catches: `--input -` refused, and `--output -` creating a file named `-` (f681eac), or
/// printing only at the end. Minute 1's rows print while standard input is still open, once a
/// row of minute 2 has arrived; the whole output is the oracle's, and no file `-` appears.
#[test]
fn standard_input_is_read_as_it_arrives_and_each_window_prints_as_it_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin())
        .current_dir(dir.path())
        .args(["run", "file", "--input", "-", "--output", "-"])
        .args(JOB)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap());
        }
    });
    write!(stdin, "ts,sensor,temp\n{}{}", minute(1), minute(2)).unwrap();
    stdin.flush().unwrap();
    // Minute 1 closed (a row of minute 2 is past its end): its header and two rows arrive
    // while standard input is open.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut early = Vec::new();
    while early.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => early.push(l),
            Err(_) => {
                let _ = child.kill();
                panic!("minute 1's rows did not print while the input was open: {early:?}");
            }
        }
    }
    let want = oracle(&[1, 2, 3]);
    let want_lines: Vec<&str> = want.lines().collect();
    assert_eq!(early, want_lines[..3], "minute 1, as it closed");
    write!(stdin, "{}", minute(3)).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let all: Vec<String> = early.into_iter().chain(lines.try_iter()).collect();
    assert_eq!(all.join("\n") + "\n", want);
    assert!(err.contains("18 rows (0 malformed"), "{err}");
    assert!(!dir.path().join("-").exists(), "a file named '-'");
}

/// A stream given to a run as a whole: JSON lines with a malformed row, through --format json,
/// into a result file: the same rows as the oracle, the bad row counted and named.
#[test]
fn standard_input_into_a_file_counts_and_names_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let mut text = String::new();
    for line in minute(1).lines() {
        let f: Vec<&str> = line.split(',').collect();
        text.push_str(&format!(
            "{{\"ts\":{},\"sensor\":\"{}\",\"temp\":{}}}\n",
            f[0], f[1], f[2]
        ));
    }
    text.push_str("not json\n");
    let mut child = Command::new(bin())
        .args([
            "run", "file", "--input", "-", "--format", "json", "--output",
        ])
        .arg(&out)
        .args(JOB)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), oracle(&[1]));
    assert!(
        err.contains("skipped standard input line 7: not JSON"),
        "{err}"
    );
}

/// Catches: a closed standard output (`| head -1`) failing the run with "worker 0: cannot write
/// standard output: Broken pipe" and exit 1. It ends by SIGPIPE without a message, as `cat`
/// does (README's 128 + N).
#[test]
fn a_closed_standard_output_ends_the_run_by_sigpipe_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(bin())
        .args(["run", "file", "--input", "-", "--output", "-"])
        .args(JOB)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = std::thread::spawn(move || {
        let _ = stdin.write_all(b"ts,sensor,temp\n");
        // Minutes 1.. until the job is gone (a write then fails).
        for m in 1.. {
            if stdin.write_all(minute(m).as_bytes()).is_err() {
                break;
            }
        }
    });
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first, "window_start,window_end,sensor,count,mean_temp\n");
    drop(out);
    let o = child.wait_with_output().unwrap();
    feed.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {err}",
        o.status
    );
    assert!(!err.contains("error"), "{err}");
}

/// What a stream cannot do is refused before anything runs (exit 2), naming the option; an
/// empty standard input exits 2 saying so.
#[test]
fn what_a_stream_cannot_do_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let ck = ck.to_str().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, format!("ts,sensor,temp\n{}", minute(1))).unwrap();
    let file = file.to_str().unwrap();
    let out = dir.path().join("out.csv");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["--input", "-", "--output", out, "--processes", "2"],
            "one process",
        ),
        (
            &["--input", "-", "--output", out, "--sources", "2"],
            "one source",
        ),
        (&["--input", "-", "--output", out, "--rate", "10"], "--rate"),
        (
            &[
                "--input",
                "-",
                "--output",
                out,
                "--checkpoint-interval",
                "1s",
                "--checkpoint-dir",
                ck,
            ],
            "checkpoints need a file input",
        ),
        (
            &["--input", file, "--output", "-", "--allowed-lateness", "1m"],
            "--allowed-lateness",
        ),
        (
            &[
                "--input",
                file,
                "--output",
                "-",
                "--output-format",
                "parquet",
            ],
            "not Parquet",
        ),
        (
            &["--input", file, "--output", out, "--late-output", "-"],
            "--late-output -",
        ),
    ];
    for (args, says) in cases {
        let o = Command::new(bin())
            .args(["run", "file"])
            .args(args)
            .args(JOB)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert!(!Path::new(out).exists());
    let o = Command::new(bin())
        .args(["run", "file", "--input", "-", "--output", out])
        .args(JOB)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("standard input"), "{err}");
}
