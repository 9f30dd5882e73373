//! `EXPLAIN`: prints the plan and the dataflow it would run, runs nothing and writes nothing
//! (not even the `--output` file a plain `SELECT` would write).

use assert_cmd::Command;

#[test]
fn explain_prints_the_plan_and_dataflow_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bids.csv");
    std::fs::write(
        &input,
        "auction,price,dateTime\n1,10,2024-01-01 00:00:01.000\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let sql = format!(
        "CREATE TABLE bid (auction BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), \
         WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         EXPLAIN SELECT auction, COUNT(*) AS n, window_start FROM TABLE(TUMBLE(TABLE bid, \
         DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end;",
        input.display()
    );
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--workers", "2", "--execute", &sql, "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("WindowAggregate Tumble"), "{stdout}");
    let graph = &stdout[stdout
        .find("== dataflow: 2 instances")
        .expect("the dataflow")..];
    // A source, the window fed by a hash exchange on its key, the sink gathering the rows.
    assert!(
        graph.contains("source: bid  (source, 2 instances)"),
        "{graph}"
    );
    assert!(
        graph.contains("window_aggregate  <- source: bid (hash)"),
        "{graph}"
    );
    assert!(graph.contains("sink 0  <- "), "{graph}");
    assert!(!out.exists(), "EXPLAIN wrote {}", out.display());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the input is left"
    );
}
