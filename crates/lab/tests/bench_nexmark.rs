//! `xorflow-lab bench nexmark` end to end on 20,000 events: xorflow over the files and with the
//! in-process generator (what CI runs), a query xorflow refuses reported and passed over, and
//! (with `XORFLOW_FLINK_TESTS=1`, as it builds peers/flink-sql with Maven) Flink SQL beside it.

#[path = "../../cli/tests/common/mod.rs"]
mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the bench on 20,000 events into `out` with `args` after the common ones; returns
/// results.json and summary.txt.
fn bench(out: &Path, nexmark_dir: &Path, args: &[&str], timeout_s: u64) -> (Value, String) {
    let run = Command::new(common::lab())
        .args(["bench", "nexmark", "--events", "20000", "--rounds", "1"])
        .arg("--out")
        .arg(out)
        .arg("--nexmark-dir")
        .arg(nexmark_dir)
        .arg("--peers-dir")
        .arg(repo().join("peers"))
        .args(args)
        .env("XORFLOW_BIN", common::bin())
        .timeout(Duration::from_secs(timeout_s))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "bench nexmark failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    assert_eq!(stdout, summary, "the table printed is summary.txt");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json");
    assert!(
        !out.join("data").exists(),
        "the generated events are deleted"
    );
    (results, summary)
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// The checks both tests make of xorflow's rows: positive rates, the bids counted for queries on
/// bid alone, q0's rows out equal to its rows in.
fn check_xorflow(results: &Value, queries: &[&str]) {
    let kinds = &results["kind_events"];
    let total: f64 = ["person", "auction", "bid"]
        .iter()
        .map(|k| num(kinds, k))
        .sum();
    assert_eq!(total, 20000.0, "{kinds}");
    let bids = num(kinds, "bid");
    let rows = results["queries"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["query"].as_str().unwrap()).collect();
    assert_eq!(names, queries);
    for q in rows.iter().filter(|r| r["xorflow_status"] == "ok") {
        for sys in ["xorflow", "xorflow_gen"] {
            let m = &q[sys];
            assert_eq!(num(m, "events"), bids, "{sys} of {q}");
            assert!(num(m, "events_per_s") > 0.0, "{sys} of {q}");
            assert!(num(m, "events_per_cpu_s") > 0.0, "{sys} of {q}");
        }
    }
    for r in results["runs"].as_array().unwrap() {
        if r["query"] == "q0" && r["status"] == "ok" && r["system"] != "flink" {
            assert_eq!(num(r, "rows_written"), bids, "q0 passes every bid: {r}");
        }
    }
    assert!(results["cpu_model"].as_str().is_some_and(|s| !s.is_empty()));
}

/// The latency runs of q7 (3 s at 20,000 events/s, event time 10x: 30 s, so the windows ending
/// at 10 s and 20 s are measured and the last one, closed by the end of the input, is not):
/// each system's medians, its stamped output kept, the summary's table.
fn check_latency(results: &Value, summary: &str, out: &Path, systems: &[&str]) {
    let replay = &results["latency_replay"];
    assert_eq!(num(replay, "speed"), 10.0, "{replay}");
    assert_eq!(num(replay, "delay_ms"), 4000.0, "{replay}");
    let q7 = &results["latency_queries"][0];
    assert_eq!(q7["query"], "q7", "{q7}");
    for sys in systems {
        let m = &q7[sys];
        assert_eq!(num(m, "windows"), 2.0, "{sys}: {q7}");
        let (p50, p99) = (num(m, "p50_ms"), num(m, "p99_ms"));
        // Not before the input was due, and well within the 1 s between windows.
        assert!((-5.0..1000.0).contains(&p50) && p50 <= p99, "{sys}: {q7}");
        let stamped =
            std::fs::read_to_string(out.join(format!("runs/latency-r1-q7-{sys}.out"))).unwrap();
        assert!(
            stamped.lines().any(|l| l.contains("\t") && l.contains("[")),
            "{stamped}"
        );
    }
    assert!(summary.contains("Flink/xorflow p99"), "{summary}");
    assert!(
        !out.join("data-latency").exists(),
        "the latency events are deleted"
    );
}

#[test]
fn xorflow_alone_reports_rates_and_passes_over_a_refused_query() {
    let tmp = tempfile::tempdir().unwrap();
    // The repository's q0 and q2, and a q99 that xorflow refuses before running.
    let nexmark = tmp.path().join("nexmark");
    std::fs::create_dir_all(nexmark.join("queries")).unwrap();
    let examples = repo().join("examples/nexmark");
    for f in [
        "ddl_files.sql",
        "ddl_gen.sql",
        "queries/q0.sql",
        "queries/q2.sql",
        "latency/q7.sql",
    ] {
        std::fs::create_dir_all(nexmark.join(f).parent().unwrap()).unwrap();
        std::fs::copy(examples.join(f), nexmark.join(f)).unwrap();
    }
    std::fs::write(
        nexmark.join("queries/q99.sql"),
        "CREATE TABLE nexmark_q99 (a BIGINT) WITH ('connector' = 'blackhole');\n\
         INSERT INTO nexmark_q99 SELECT no_such_function(auction) FROM bid;\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let args = [
        "--no-flink",
        "--checkpoint-interval",
        "1ms",
        "--latency-queries",
        "q7",
        "--latency-duration",
        "3s",
    ];
    let (results, summary) = bench(&out, &nexmark, &args, 300);
    check_latency(&results, &summary, &out, &["xorflow"]);
    check_xorflow(&results, &["q0", "q2", "q99"]);
    // Checkpoints as asked, each run's in a folder of its own, deleted after it.
    assert_eq!(results["checkpoint_interval_ms"], 1, "{results}");
    assert!(summary.contains("checkpoints: every 1ms"), "{summary}");
    let err = std::fs::read_to_string(out.join("runs/r1-q0-xorflow.err")).unwrap();
    assert!(
        err.contains("checkpoints: "),
        "q0 ran with checkpoints: {err}"
    );
    let left: Vec<_> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".checkpoints"))
        .collect();
    assert!(left.is_empty(), "checkpoint folders left: {left:?}");
    let q99 = &results["queries"][2];
    assert_eq!(q99["xorflow_status"], "unsupported", "{q99}");
    assert!(q99["xorflow_message"]
        .as_str()
        .is_some_and(|m| m.to_lowercase().contains("no_such_function")));
    // q0, q2: over the files and with the generator; q99 once, refused.
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5, "{runs:?}");
    assert_eq!(results["latency_runs"].as_array().unwrap().len(), 1);
    assert!(runs.iter().all(|r| r["system"] != "flink"));
    for q in ["q0", "q2"] {
        let line = summary
            .lines()
            .find(|l| l.starts_with(q))
            .unwrap_or_else(|| panic!("no {q} row:\n{summary}"));
        assert!(line.contains(" k") || line.contains(" M"), "{line}");
    }
    assert!(
        summary.contains("q99  ") && summary.contains("not supported by xorflow yet"),
        "{summary}"
    );
    assert!(summary.contains("Events counted"), "{summary}");
    assert!(summary.contains("Window latency"), "{summary}");
    assert!(summary.contains("aim per core"), "{summary}");
    assert!(out.join("runs/r1-q0-xorflow.err").is_file());
}

/// Flink SQL beside xorflow (builds peers/flink-sql: Flink's table planner from Maven Central,
/// minutes on a fresh machine; `XORFLOW_FLINK_TESTS=1 cargo test --release -p xorflow-lab --test
/// bench_nexmark` runs it): both ran q0 and q2 over the same files and counted the same events.
#[test]
fn flink_sql_runs_beside_xorflow() {
    if std::env::var("XORFLOW_FLINK_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set XORFLOW_FLINK_TESTS=1 to build and run the Flink SQL peer");
        return;
    }
    let works = |tool: &str, arg: &str| {
        std::process::Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works("java", "-version") || !works("mvn", "-v") {
        xorflow_testkit::skip("java or mvn is missing (needed for the Flink SQL peer)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let nexmark = repo().join("examples/nexmark");
    let args = [
        "--queries",
        "q0,q2",
        "--latency-queries",
        "q7",
        "--latency-duration",
        "3s",
    ];
    let (results, summary) = bench(&out, &nexmark, &args, 1800);
    check_xorflow(&results, &["q0", "q2"]);
    check_latency(&results, &summary, &out, &["xorflow", "flink"]);
    for q in results["queries"].as_array().unwrap() {
        let (x, f) = (&q["xorflow"], &q["flink"]);
        assert_eq!(num(f, "events"), num(x, "events"), "{q}");
        assert!(num(f, "events_per_s") > 0.0, "{q}");
        assert!(num(f, "events_per_cpu_s") > 0.0, "{q}");
        assert!(num(q, "ratio_events_per_s") > 0.0, "{q}");
    }
    let flink: Vec<&Value> = (results["runs"].as_array().unwrap().iter())
        .filter(|r| r["system"] == "flink")
        .collect();
    assert_eq!(flink.len(), 2, "{flink:?}");
    for r in flink {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(
            r["flink"]["table_events"]["bid"],
            results["kind_events"]["bid"]
        );
    }
    assert!(results["flink_version"]
        .as_str()
        .is_some_and(|v| v.starts_with("1.20")));
    assert!(summary.contains("Flink SQL: 1.20"), "{summary}");
}
