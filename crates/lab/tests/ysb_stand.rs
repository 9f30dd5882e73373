//! The YSB on the bench stand without the JVM peers (CI has no Flink or Storm build):
//! `bench peers --workload ysb` and `bench sustainable` write their folders, with counts checked
//! against the oracle and a verdict per step.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::lab;
use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(lab())
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .output()
        .expect("run xorflow")
}

/// The one results folder under `root` whose name starts with `prefix`.
fn folder(root: &Path, prefix: &str) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn peers_ysb_without_the_jvm_writes_a_report_with_checked_counts() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let r = run(&[
        "bench",
        "peers",
        "--workload",
        "ysb",
        "--no-flink",
        "--no-storm",
        "--rate",
        "3000",
        "--duration",
        "3s",
        "--reps",
        "2",
        "--out",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let dir = folder(out.path(), "ysb-peers-");
    let raw = std::fs::read_to_string(dir.join("raw.jsonl")).unwrap();
    assert_eq!(raw.lines().count(), 2, "{raw}");
    for l in raw.lines() {
        let j: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(j["counts_match_oracle"], true, "{j}");
        assert_eq!(j["events_emitted"], 9000, "{j}");
    }
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    // The xorflow row's events/s: the schedule's rate, within what a loaded machine's clock
    // reads of the emission span (it was 2996 once, with builds running).
    let rate: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("| xorflow | "))
        .and_then(|rest| rest.split(" |").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no xorflow row with events/s: {report}"));
    assert!((2900.0..3100.0).contains(&rate), "{rate}: {report}");
}

#[test]
fn sustainable_judges_every_step() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let r = run(&[
        "bench",
        "sustainable",
        "--workload",
        "ysb",
        "--no-flink",
        "--no-storm",
        "--rate",
        "2000,4000",
        "--duration",
        "3s",
        "--out",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let dir = folder(out.path(), "ysb-sustainable-");
    let curve = std::fs::read_to_string(dir.join("curve.csv")).unwrap();
    let rows: Vec<&str> = curve.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{curve}");
    assert!(
        rows.iter()
            .all(|r| r.starts_with("xorflow,") && r.ends_with(",true")),
        "{curve}"
    );
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    assert!(report.contains("| xorflow | 4000 |"), "{report}");
    let bad = run(&["bench", "sustainable", "--rate", "4000,2000", "--out", o]);
    assert_eq!(bad.status.code(), Some(2));
}
