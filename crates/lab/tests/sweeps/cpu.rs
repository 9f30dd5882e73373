//! `xorflow-lab bench cpu` end to end (the CPU-efficiency paper's experiments, docs/cpu.md): a real sweep of the
//! tracking experiment profiles xorflow's YSB with trAcker and with markers, and the tables
//! say what the profiles measured; bad options exit 2 without a results folder. The sweep
//! skips (with a note) where perf is missing or not permitted.

use crate::common::perf::{perf_works, refused, text, xorflow};
use crate::common::results::{results_dir, rows};

#[test]
fn tracking_sweep_profiles_tracker_and_markers_and_reports_what_it_measured() {
    if !perf_works() {
        return;
    }
    let out = tempfile::tempdir().expect("tempdir");
    let o = xorflow(&[
        "bench",
        "cpu",
        "--experiments",
        "tracking",
        "--granularities",
        "1000",
        // The two that must differ: the other two variants cost CI a minute and test nothing
        // the plan's unit tests do not (crates/bench/src/cpu/plan.rs).
        "--tracking-variants",
        "markers,tracker",
        "--no-flink",
        "--no-storm",
        "--rate",
        "20000",
        "--duration",
        "20s",
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = results_dir(out.path(), "cpu-");
    let runs = rows(&dir.join("runs.csv"));
    assert_eq!(
        runs.len(),
        2,
        "trAcker and markers at one granularity, in that order"
    );
    for r in &runs {
        assert_eq!(r["events_emitted"], "400000", "{r:?}");
        assert_eq!(r["counts_match_oracle"], "true", "{r:?}");
        let ns: f64 = r["steady_ns_per_event"].parse().expect("ns/event");
        assert!(ns > 0.0, "{r:?}");
    }
    assert_eq!(runs[0]["label"], "tracker g=1000ms");
    assert_eq!(runs[1]["label"], "markers g=1000ms");
    // Per run: shares sum to 1, and the tracking tasks are where the mode says.
    let tasks = rows(&dir.join("tasks.csv"));
    let tracking_ns = |label: &str, names: &[&str]| -> f64 {
        let mine: Vec<_> = tasks.iter().filter(|t| t["label"] == label).collect();
        let share: f64 = mine
            .iter()
            .map(|t| t["share"].parse::<f64>().unwrap())
            .sum();
        assert!((share - 1.0).abs() < 1e-3, "{label}: shares sum to {share}");
        (mine.iter())
            .filter(|t| names.contains(&t["task"].as_str()))
            .map(|t| t["ns_per_event"].parse::<f64>().unwrap())
            .sum()
    };
    let tracker = tracking_ns("tracker g=1000ms", &["tracker", "acker"]);
    let markers_run = tracking_ns("markers g=1000ms", &["tracker", "acker"]);
    assert!(
        tracker > 3.0 * markers_run,
        "trAcker's tracker + acker CPU ({tracker} ns/event) must stand out against a run \
         without trAcker ({markers_run} ns/event)"
    );
    // Each run's own profile folder is complete (no .partial left behind).
    for r in &runs {
        let p = dir.join("runs").join(&r["id"]).join("profile");
        assert!(p.join("summary.csv").is_file(), "{}", p.display());
        assert!(p.join("report.html").is_file());
    }
    let report = std::fs::read_to_string(dir.join("REPORT.md")).expect("REPORT.md");
    assert!(report.contains("## trAcker's own share"), "{report}");
    assert!(report.contains("| tracker g=1000ms |"), "{report}");
    assert!(
        report.contains("runs: 2 finished") && report.contains(", 0 failed"),
        "{report}"
    );
}

#[test]
fn bad_options_exit_2_naming_them_and_write_nothing() {
    let out = tempfile::tempdir().expect("tempdir");
    let root = out.path().to_str().expect("utf-8");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--experiments", "latency"],
            "unknown experiment 'latency'",
        ),
        (&["--duration", "10s"], "at least 20s"),
        (&["--duration", "20500ms"], "whole seconds"),
        (&["--campaigns", "0"], "at least 1"),
    ];
    for (args, want) in cases {
        let mut a = vec!["bench", "cpu", "--out", root];
        a.extend_from_slice(args);
        refused(&a, want);
    }
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
