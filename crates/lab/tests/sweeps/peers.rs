//! `xorflow-lab bench peers --smoke --no-flink` end to end (what CI runs of the peers: the timely peer
//! is built and run next to xorflow; Flink needs a JVM and a Maven download, so CI leaves it out).
//! The peer's own checks matter here: it exits non-zero unless every element reached a sink.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::Duration;
use xorflow_bench::stand::peers::PEER_COLUMNS;

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
}

/// `xorflow-lab bench peers --smoke` without the JVM peers, writing under `out`.
fn bench_peers_smoke(out: &Path, peers: &Path, timeout_s: u64) -> std::process::Output {
    Command::cargo_bin("xorflow-lab")
        .unwrap()
        .args([
            "bench",
            "peers",
            "--smoke",
            "--no-flink",
            "--no-storm",
            "--out",
        ])
        .arg(out)
        .arg("--peers-dir")
        .arg(peers)
        .timeout(Duration::from_secs(timeout_s))
        .output()
        .unwrap()
}

#[test]
fn smoke_run_compares_xorflow_and_timely() {
    let out = tempfile::tempdir().unwrap();
    // The first build of the timely peer compiles timely (about 2 minutes on 2 cores).
    let run = bench_peers_smoke(out.path(), &peers_dir(), 900);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "bench peers --smoke failed:\n{stderr}"
    );
    let dir = std::fs::read_dir(out.path().join("peers"))
        .unwrap()
        .map(|d| d.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("peers-")
        })
        .expect("a peers-<time> folder");
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header, PEER_COLUMNS, "results.csv columns");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let mut seen = std::collections::BTreeSet::new();
    for row in &rows {
        assert_eq!(&row[col("ok")], "true", "a run failed: {row:?}");
        let sys = row[col("config")].to_string();
        assert!(
            ["xorflow", "xorflow-idle-always", "timely"].contains(&sys.as_str()),
            "unexpected system {sys}"
        );
        seen.insert((row[col("sweep")].to_string(), sys.clone()));
        let eps: f64 = row[col("elements_per_s")].parse().unwrap();
        assert!(eps > 1000.0, "{sys}: {eps} elements/s");
        if ["latency", "cluster-latency"].contains(&&row[col("sweep")]) {
            let rate: f64 = row[col("rate")].parse().unwrap();
            let achieved: f64 = row[col("achieved_rate")].parse().unwrap();
            // Above the rate only by catching up: an open-loop source that fell behind (a
            // busy machine: CI runs two test binaries at a time) emits what was due at once.
            assert!(achieved > 0.5 * rate && achieved < 1.5 * rate, "{row:?}");
            let p99: f64 = row[col("notification_p99_us")].parse().unwrap();
            assert!(p99 > 0.0, "{row:?}");
            // From the last arrival anywhere is never later than from the last arrival at the
            // notified instance: sample by sample, the reference point is the same or later.
            for q in ["p50", "p99"] {
                let own: f64 = row[col(&format!("notification_{q}_us"))].parse().unwrap();
                let any: f64 = row[col(&format!("notification_any_{q}_us"))]
                    .parse()
                    .unwrap();
                assert!(any > 0.0 && any <= own, "{sys} {q}: any {any} own {own}");
            }
        }
        if sys == "timely" {
            assert_eq!(&row[col("engine")], "timely");
            assert_eq!(&row[col("version")], "0.31.0");
        }
    }
    for sweep in [
        "stages",
        "granularity",
        "latency",
        "cluster-throughput",
        "cluster-latency",
    ] {
        for sys in ["xorflow", "timely"] {
            assert!(
                seen.contains(&(sweep.to_string(), sys.to_string())),
                "no {sys} run in the {sweep} sweep"
            );
        }
    }
    // The idle flush before gating runs beside the default in the latency sweeps only.
    for sweep in ["latency", "cluster-latency"] {
        let always = (sweep.to_string(), "xorflow-idle-always".to_string());
        assert!(
            seen.contains(&always),
            "no xorflow-idle-always run in {sweep}"
        );
    }
    let always_elsewhere = seen
        .iter()
        .any(|(sweep, sys)| sys == "xorflow-idle-always" && !sweep.contains("latency"));
    assert!(
        !always_elsewhere,
        "xorflow-idle-always outside the latency sweeps"
    );
    // Timely at its best for each mode (docs/peers.md, "Each peer at its best"): open loop in
    // throughput runs, flushed and bounded in paced ones.
    let raw = std::fs::read_to_string(dir.join("raw.jsonl")).unwrap();
    let mut timely_runs = 0;
    for line in raw.lines() {
        let run: serde_json::Value = serde_json::from_str(line).unwrap();
        if run["config"] != "timely" {
            continue;
        }
        timely_runs += 1;
        let paced = run["sweep"].as_str().unwrap().contains("latency");
        let (feed, bound) = (&run["result"]["feed"], &run["result"]["max_in_flight"]);
        if paced {
            assert_eq!(feed, "paced", "{run}");
            assert_eq!(bound, 131_072, "{run}");
        } else {
            assert_eq!(feed, "open", "{run}");
            assert!(bound.is_null(), "an open feed has no bound: {run}");
            assert_eq!(run["result"]["chunk"], 16_384, "{run}");
        }
    }
    assert!(timely_runs >= 5, "{timely_runs} timely runs in raw.jsonl");
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    assert!(report.contains("xorflow / timely"), "ratio column missing");
    assert!(
        report.contains("## Across 2 processes"),
        "cluster section missing"
    );
    for fig in [
        "peers_throughput_by_stages.svg",
        "peers_latency_p99.svg",
        "peers_cluster_throughput.svg",
        "peers_latency_cluster_any_p99.svg",
    ] {
        assert!(dir.join(fig).is_file(), "{fig} missing");
        assert!(report.contains(fig), "REPORT.md does not link {fig}");
    }
}

#[test]
fn missing_peers_dir_is_named() {
    let out = tempfile::tempdir().unwrap();
    let run = bench_peers_smoke(out.path(), Path::new("/nonexistent/peers"), 30);
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("/nonexistent/peers/timely/Cargo.toml"),
        "stderr: {stderr}"
    );
}

#[test]
fn unknown_sweep_is_refused_by_name() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::cargo_bin("xorflow-lab")
        .unwrap()
        .args(["bench", "peers", "--smoke", "--sweeps", "latency,clusterr"])
        .arg("--out")
        .arg(out.path())
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("unknown sweep 'clusterr'"),
        "stderr: {stderr}"
    );
    assert!(
        !out.path().join("peers").exists(),
        "nothing is written for a refused run"
    );
}
