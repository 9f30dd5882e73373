//! `xorflow run file` at its edges: outputs that commit together or not at all, bad rows that
//! are rows (invalid UTF-8, a byte-order mark, a missing value field), values that are not
//! numbers, a run that reads no row, messages that quote at most 200 bytes of a file, and the
//! small option fixes. Each test names what it catches; on f681eac every one of them failed.
//!
//! Small files written to temporary directories; each run ends within seconds.

use crate::common::bin;
use crate::common::procs::{kill9, wait_output};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `xorflow run file ARGS`, run to its end.
fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(["run", "file"])
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Sensor readings in `dir`: `rows` rows, one per second, sensors a and b, the last one late.
fn sensors(dir: &Path, rows: usize) -> PathBuf {
    let p = dir.join("sensors.csv");
    let mut text = String::from("ts,sensor,temp\n");
    for i in 0..rows {
        let sensor = if i % 2 == 0 { "a" } else { "b" };
        text.push_str(&format!("{},{sensor},{}\n", 60 + i, 20 + i % 5));
    }
    text.push_str("1,a,99\n");
    std::fs::write(&p, text).unwrap();
    p
}

/// The options of a 1 minute tumbling window per sensor over `input`.
fn job<'a>(input: &'a Path, output: &'a Path) -> Vec<String> {
    [
        "--input",
        input.to_str().unwrap(),
        "--time-field",
        "ts",
        "--key",
        "sensor",
        "--window",
        "tumbling:1m",
        "--aggregate",
        "count,mean:temp",
        "--output",
        output.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Files `keep.csv` and `keep_late.csv` holding "OLD ..." in `dir`: a previous run's outputs.
fn previous(dir: &Path) -> (PathBuf, PathBuf) {
    let (out, late) = (dir.join("keep.csv"), dir.join("keep_late.csv"));
    std::fs::write(&out, "OLD results\n").unwrap();
    std::fs::write(&late, "OLD late rows\n").unwrap();
    (out, late)
}

fn assert_unchanged(files: &[&Path], label: &str) {
    for f in files {
        let text = std::fs::read(f).unwrap();
        assert!(
            text.starts_with(b"OLD "),
            "{label}: {} changed: {:?}",
            f.display(),
            String::from_utf8_lossy(&text[..text.len().min(80)])
        );
    }
}

/// Catches (item 1): a run that failed on one output (its late output a directory, a device
/// that is full, a path under a regular file) having replaced another output already, and a
/// run killed (kill -9) mid-way leaving a partial file at a final path.
#[test]
fn a_failed_run_leaves_every_previous_output_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path(), 200);
    let (out, late) = previous(dir.path());
    std::fs::create_dir(dir.path().join("outdir")).unwrap();
    let under_a_file = dir.path().join("keep.csv").join("late.csv");
    let failing_late: [(&str, &str); 3] = [
        ("directory", "outdir"),
        ("/dev/full", "/dev/full"),
        ("not a folder", under_a_file.to_str().unwrap()),
    ];
    for (label, late_path) in failing_late {
        let late_path = match late_path.starts_with('/') {
            true => PathBuf::from(late_path),
            false => dir.path().join(late_path),
        };
        let mut a = job(&input, &out);
        a.extend(["--late-output".into(), late_path.display().to_string()]);
        let o = run(&strs(&a));
        assert_eq!(o.status.code(), Some(2), "{label}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("late output"),
            "{label}: {}",
            stderr(&o)
        );
        assert_unchanged(&[&out, &late], label);
    }
    // The result's own failure leaves the late output alone too.
    let mut a = job(&input, &dir.path().join("outdir"));
    a.extend(["--late-output".into(), late.display().to_string()]);
    let o = run(&strs(&a));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_unchanged(&[&out, &late], "output a directory");
    // kill -9 at a few moments of a paced run (200 rows at 400/s: half a second).
    for after_ms in [50, 200, 350] {
        let mut a = job(&input, &out);
        a.extend(["--late-output".into(), late.display().to_string()]);
        a.extend(["--rate".into(), "400".into()]);
        let child = Command::new(bin())
            .args(["run", "file"])
            .args(&a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        kill9(child.id());
        let _ = wait_output(child, Duration::from_secs(10));
        assert_unchanged(&[&out, &late], &format!("killed after {after_ms} ms"));
    }
    // And a run that succeeds replaces both.
    let mut a = job(&input, &out);
    a.extend(["--late-output".into(), late.display().to_string()]);
    let o = run(&strs(&a));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("window_start,"), "{text}");
    let text = std::fs::read_to_string(&late).unwrap();
    assert!(text.starts_with("line,event_time,sensor\n"), "{text}");
}

/// Catches (item 2): an output that cannot be written found only after the whole (paced) run.
#[test]
fn outputs_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path(), 3000);
    let outdir = dir.path().join("outdir");
    std::fs::create_dir(&outdir).unwrap();
    let mut a = job(&input, &outdir);
    a.extend(["--rate".into(), "1000".into()]);
    let t0 = Instant::now();
    let o = run(&strs(&a));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("it is a directory"), "{}", stderr(&o));
    // The run would take 3 s.
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
}

/// Catches (item 3): the late output written in the result's format whatever its own name.
#[test]
fn each_output_follows_its_own_extension() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path(), 20);
    let (out, late) = (
        dir.path().join("s2.parquet"),
        dir.path().join("s2_late.csv"),
    );
    let mut a = job(&input, &out);
    a.extend(["--late-output".into(), late.display().to_string()]);
    let o = run(&strs(&a));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&out).unwrap().starts_with(b"PAR1"));
    let text = std::fs::read_to_string(&late).unwrap();
    assert_eq!(text, "line,event_time,sensor\n22,1,a\n");
}

/// A JSON-lines file in `dir` from raw bytes.
fn jsonl(dir: &Path, bytes: &[u8]) -> PathBuf {
    let p = dir.join("readings.jsonl");
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Catches (item 4): one invalid UTF-8 byte in a JSON-lines file ending the run without a line
/// number, and a byte-order mark costing the file its first row; (item 12) a JSON row without
/// the aggregated field vanishing from `count`, and `--format json` refused.
#[test]
fn bad_bytes_a_byte_order_mark_and_a_missing_value_in_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"\xEF\xBB\xBF{\"ts\":60,\"sensor\":\"a\",\"temp\":20}\n".to_vec();
    bytes.extend_from_slice(b"{\"ts\":61,\"sensor\":\"a\xFF\",\"temp\":21}\n");
    bytes.extend_from_slice(b"{\"ts\":62,\"sensor\":\"a\"}\n");
    bytes.extend_from_slice(b"{\"ts\":63,\"sensor\":\"a\",\"temp\":22}\n");
    let input = jsonl(dir.path(), &bytes);
    let out = dir.path().join("out.csv");
    let mut a = job(&input, &out);
    a.extend(["--format".into(), "json".into()]);
    let o = run(&strs(&a));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("line 2: not UTF-8"), "{err}");
    assert!(err.contains("3 rows (1 malformed"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    // Rows 1, 3 and 4: counted 3, the mean over the two with a temperature.
    assert_eq!(
        text,
        "window_start,window_end,sensor,count,mean_temp\n60,120,a,3,21\n"
    );
}

/// Catches (item 5): NaN and infinities making a window's sum, mean and maximum blank (or NaN)
/// without a word; text values dropped without one either.
#[test]
fn values_that_are_not_finite_numbers_are_left_out_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    std::fs::write(
        &input,
        "ts,sensor,temp\n60,a,NaN\n61,a,20\n62,a,inf\n63,a,5\n64,a,warm\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let mut a = job(&input, &out);
    let aggregate = a.len() - 3;
    a[aggregate] = "count,sum:temp,mean:temp,max:temp".into();
    let o = run(&strs(&a));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        "window_start,window_end,sensor,count,sum_temp,mean_temp,max_temp\n60,120,a,5,25,12.5,20\n"
    );
    assert!(
        err.contains("3 values of 'temp' left out of its aggregates: 1 not numbers, 2 not finite"),
        "{err}"
    );
}

/// Catches (item 10): a run in which every row is malformed exiting 0 with an empty result.
#[test]
fn a_run_that_reads_no_row_exits_2_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path(), 3);
    let out = dir.path().join("out.csv");
    let mut a = job(&input, &out);
    a.extend(["--time-format".into(), "%Y-%m-%d".into()]);
    let o = run(&strs(&a));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no row of"), "{err}");
    assert!(err.contains("all 4 are malformed (line 2: "), "{err}");
    assert!(!out.exists());
}

/// Catches (item 9): a 2 MB header line quoted whole in the message about a missing column.
#[test]
fn messages_quote_at_most_200_bytes_of_user_data() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("wide.csv");
    std::fs::write(&input, format!("{}\n1\n", "x".repeat(2_000_000))).unwrap();
    let out = dir.path().join("out.csv");
    let o = run(&strs(&job(&input, &out)));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}", &err[..err.len().min(500)]);
    assert!(err.len() < 1000, "{} bytes of stderr", err.len());
    assert!(err.contains("has no column 'ts'"), "{err}");
}

/// Catches (item 12): `--sources 0` silently becoming 1, and the spaces of `--key "a, b"` kept
/// in the field names (no such column).
#[test]
fn sources_0_is_refused_and_key_names_are_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rooms.csv");
    std::fs::write(&input, "ts,sensor,room,temp\n60,a,r1,20\n61,a,r1,22\n").unwrap();
    let out = dir.path().join("out.csv");
    let mut a = job(&input, &out);
    a.extend(["--sources".into(), "0".into()]);
    let o = run(&strs(&a));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--sources"), "{}", stderr(&o));
    let mut a = job(&input, &out);
    a[5] = "sensor, room".into();
    let o = run(&strs(&a));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        "window_start,window_end,sensor,room,count,mean_temp\n60,120,a,r1,2,21\n"
    );
}

/// Catches (item 12): a gzip-compressed input refused ("cannot tell the format") or read as
/// text.
#[test]
fn a_gzip_compressed_input_is_read() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(sensors(dir.path(), 20)).unwrap();
    let input = dir.path().join("sensors.csv.gz");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&plain).unwrap();
    std::fs::write(&input, z.finish().unwrap()).unwrap();
    let (from_gz, from_csv) = (dir.path().join("gz.csv"), dir.path().join("csv.csv"));
    let o = run(&strs(&job(&input, &from_gz)));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&strs(&job(&dir.path().join("sensors.csv"), &from_csv)));
    assert!(o.status.success(), "{}", stderr(&o));
    let got = std::fs::read_to_string(&from_gz).unwrap();
    assert_eq!(got, std::fs::read_to_string(&from_csv).unwrap());
    assert!(got.lines().count() > 1, "{got}");
}

/// Catches (item 12): a folder refused as input.
#[test]
fn a_folder_is_read_as_its_files_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("in");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("1.csv"), "ts,sensor,temp\n60,a,20\n").unwrap();
    std::fs::write(
        folder.join("2.jsonl"),
        "{\"ts\":61,\"sensor\":\"a\",\"temp\":22}\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let o = run(&strs(&job(&folder, &out)));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        "window_start,window_end,sensor,count,mean_temp\n60,120,a,2,21\n"
    );
}
