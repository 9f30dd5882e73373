//! A SQL job survives kill -9: two processes with checkpoints, one of them killed mid-run,
//! and the result still equals DuckDB's over the same events.

use crate::common::procs::{kill9, live_child, wait_first_checkpoint, wait_output};
use crate::oracle::{assert_same_rows, oracle, python, read_csv};
use assert_cmd::cargo::CommandCargoExt;
use std::time::Duration;

/// 30,000 events generated in the sources at 5,000 per second: a 6 s run.
const JOB: &str =
    "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, \
    url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, \
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) \
    WITH ('connector' = 'nexmark', 'events.num' = '30000', 'first-event.rate' = '5000'); \
    SELECT auction, window_start, count(*), sum(price), max(price), count(DISTINCT bidder) \
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND)) \
    GROUP BY auction, window_start, window_end";

#[test]
fn a_sql_job_killed_mid_run_restarts_and_writes_the_oracles_rows() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let checkpoints = dir.path().join("checkpoints");
    let child = std::process::Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", JOB, "--processes", "2"])
        .args(["--checkpoint-interval", "200ms", "--restart-attempts", "3"])
        .arg("--checkpoint-dir")
        .arg(&checkpoints)
        .arg("--output")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_first_checkpoint(&checkpoints);
    std::thread::sleep(Duration::from_millis(1500));
    let victim = live_child(child.id(), 1, &[]);
    kill9(victim);
    assert!(!out.exists(), "a result before the run finished");
    let o = wait_output(child, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("resumed from checkpoint"),
        "the run did not say it restarted: {stdout} {stderr}"
    );
    // The same events as files, for the oracle.
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    assert_cmd::Command::cargo_bin("xorflow")
        .unwrap()
        .args([
            "nexmark", "generate", "--events", "30000", "--rate", "5000", "--out",
        ])
        .arg(&data)
        .assert()
        .success();
    let want = oracle(&py, &data, &["recovery"], dir.path()).remove(0);
    assert!(want.len() > 1000, "{}", want.len());
    assert_same_rows("after kill -9", &read_csv(&out, true), &want);
}
