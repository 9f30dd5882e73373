//! `xorflow-lab bench sustainable --workload chain` on xorflow alone (no peers are built): a tiny
//! ladder of two 3 s steps, one an easy rate and one no engine reaches, with the verdicts and
//! the files they leave; and the options it refuses.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::lab;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `xorflow-lab bench sustainable --out <out> <args>`.
fn sustainable(out: &Path, args: &[&str]) -> Output {
    Command::new(lab())
        .args(["bench", "sustainable", "--out"])
        .arg(out)
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .output()
        .expect("run xorflow")
}

#[test]
fn a_tiny_ladder_passes_the_easy_step_and_stops_the_impossible_one() {
    let out = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let r = sustainable(
        out.path(),
        &[
            "--workload",
            "chain",
            "--no-timely",
            "--no-flink",
            "--no-storm",
            "--stages",
            "2",
            "--rate",
            "20000,1000000000",
            "--duration",
            "3s",
        ],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // 3 s of schedule and 3 s + 5 s of grace before the second step is stopped.
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    // The one thing in `out`: the results folder.
    let dir = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        dir.to_string_lossy().contains("/chain-sustainable-"),
        "{dir:?}"
    );

    let raw = std::fs::read_to_string(dir.join("raw.jsonl")).unwrap();
    let lines: Vec<Value> = raw
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{raw}");
    let easy = &lines[0];
    assert_eq!(
        (&easy["engine"], &easy["rate"], &easy["sustainable"]),
        (&"xorflow".into(), &20000.into(), &true.into()),
        "{easy}"
    );
    assert_eq!(easy["elements"], 60000, "{easy}");
    assert_eq!(easy["elements_received"], 60000, "{easy}");
    // One entry per second of schedule; the first second is warm-up (not measured).
    let counts: Vec<u64> = easy["element_count_by_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(counts, [0, 20000, 20000], "{easy}");
    assert_eq!(
        easy["element_p99_ms_by_second"].as_array().unwrap().len(),
        3
    );
    let hard = &lines[1];
    assert_eq!(hard["sustainable"], false, "{hard}");
    let why = hard["why"].as_str().unwrap();
    assert!(
        why.contains("not every element received within the step"),
        "{why}"
    );

    let curve = std::fs::read_to_string(dir.join("curve.csv")).unwrap();
    let rows: Vec<&str> = curve.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{curve}");
    assert!(rows[0].starts_with("xorflow,20000,") && rows[0].ends_with(",latency series,true"));
    assert!(rows[1].starts_with("xorflow,1000000000,") && rows[1].ends_with(",false"));

    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    for part in [
        "Command: `xorflow-lab bench sustainable --out ",
        "| xorflow | 20000 | 1000000000: run failed: not every element received",
        "| 1.00 |",
        "| xorflow | 20000 |",
    ] {
        assert!(report.contains(part), "{part} in {report}");
    }
}

#[test]
fn options_of_the_other_workload_and_bad_steps_are_refused() {
    let out = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["--workload", "chain", "--ysb-workers", "4"],
            "--ysb-workers not with --workload chain",
        ),
        (
            vec!["--workload", "ysb", "--granularity", "10", "--no-timely"],
            "--granularity, --no-timely not with --workload ysb",
        ),
        (
            vec!["--workload", "chain", "--duration", "2s"],
            "--duration must be at least 3s",
        ),
        (
            vec!["--workload", "chain", "--rate", "5000,1000"],
            "ascending",
        ),
        (
            vec!["--workload", "chain", "--granularity", "0"],
            "--granularity must be at least 1",
        ),
    ] {
        let r = sustainable(out.path(), &args);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
