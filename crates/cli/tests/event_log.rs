//! Event logging through the binary (`--log SPEC --log-dir DIR`, then `xorflow log hops`):
//! every element the chain's source emits is logged at the source and at each vertex it
//! reaches, so the hop source -> sink pairs up exactly the elements the sampling keeps; a run of
//! two processes writes its clock alignment next to the logs and the durations carry bounds;
//! bad specs and missing channels exit 2 naming what is wrong.

mod common;
use std::path::Path;
use std::process::{Command, Output};

const ELEMENTS: u64 = 200_000;

fn xorflow(args: &[&str]) -> Output {
    Command::new(common::exe_for(args))
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .output()
        .expect("xorflow runs")
}

fn chain(dir: &Path, spec: &str, processes: &str) -> Output {
    let n = ELEMENTS.to_string();
    xorflow(&[
        "bench",
        "chain",
        "--elements",
        &n,
        "--stages",
        "2",
        "--processes",
        processes,
        "--workers",
        "1",
        "--log",
        spec,
        "--log-dir",
        dir.to_str().unwrap(),
    ])
}

fn hops(dir: &Path, from: &str, to: &str) -> (Output, serde_json::Value) {
    let out = xorflow(&[
        "log",
        "hops",
        "--dir",
        dir.to_str().unwrap(),
        "--from",
        from,
        "--to",
        to,
        "--json",
    ]);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, v)
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn one_process_logs_every_element_once_at_each_end() {
    let dir = tempfile::tempdir().unwrap();
    ok(&chain(dir.path(), "source.out=id,sink.in=buffered", "1"));
    // Only the two channels asked for have files.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["sink.in.p0.i0.xflog", "source.out.p0.i0.xflog"]);
    let (o, v) = hops(dir.path(), "source.out", "sink.in");
    ok(&o);
    assert_eq!(v["count"], ELEMENTS, "{v}");
    assert_eq!(v["unmatched_from"], 0);
    assert_eq!(v["unmatched_to"], 0);
    assert_eq!(v["duplicates"], 0);
    assert_eq!(v["clock_aligned"], false);
    assert!(v["min_ns"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["max_error_ns"], 0.0);
}

#[test]
fn two_processes_convert_through_the_clock_alignment() {
    let dir = tempfile::tempdir().unwrap();
    let run = chain(dir.path(), "*=xoy:3/8", "2");
    ok(&run);
    assert!(dir.path().join("clock.json").exists());
    // The sink's notification latency from the last arrival anywhere went through the same
    // alignment: every sample converted, none off the same-host truth by more than its bound.
    let text = String::from_utf8_lossy(&run.stdout);
    let aligned = text
        .split("[clock-aligned across processes: bound <= ")
        .nth(1)
        .unwrap_or_else(|| panic!("no clock-aligned figures in: {text}"));
    assert!(aligned.contains(" us, 0 of "), "{text}");
    assert!(!aligned.contains(" 0 of 0 samples"), "{text}");
    let (o, v) = hops(dir.path(), "source.out", "sink.in");
    ok(&o);
    // Times k with k mod 8 < 3 (both sources: k mod 2 is the source): the same ids at both ends.
    assert_eq!(v["count"], ELEMENTS / 8 * 3, "{v}");
    assert_eq!(v["unmatched_from"], 0);
    assert_eq!(v["clock_aligned"], true);
    // Some hops cross processes (round-robin stages): their bound is positive and, on
    // loopback, well under a millisecond.
    let e = v["max_error_ns"].as_f64().unwrap();
    assert!(e > 0.0 && e < 1e6, "{v}");
    // On one host the truth is the shared raw clock: no duration is below -bound.
    assert!(v["min_ns"].as_f64().unwrap() > -e, "{v}");
}

#[test]
fn bad_specs_and_channels_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let o = chain(dir.path(), "sink.in=bogus", "1");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--log") && err.contains("bogus"), "{err}");
    ok(&chain(dir.path(), "sink.in=id", "1"));
    let (o, _) = hops(dir.path(), "source.out", "sink.in");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("'source.out'"));
    let (o, _) = hops(&dir.path().join("missing"), "a", "b");
    assert_eq!(o.status.code(), Some(2));
}
