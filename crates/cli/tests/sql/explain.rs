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

/// A sub-plan that occurs twice is built once (as Flink reuses sub-plans): Nexmark q5 aggregates
/// `bid` into the same HOP windows for both sides of its join, and its dataflow has one such
/// aggregate, feeding both.
#[test]
fn a_repeated_sub_plan_is_built_once() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |p: &str| std::fs::read_to_string(repo.join(p)).unwrap();
    let q5 = read("examples/nexmark/queries/q5.sql");
    let (table, insert) = q5.split_at(q5.find("INSERT INTO").expect("q5 inserts"));
    let sql = format!(
        "{}\n{}\nEXPLAIN {insert}",
        read("examples/nexmark/ddl_gen.sql"),
        &table[table.find("CREATE TABLE").unwrap()..]
    );
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--workers", "2", "--execute", &sql])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let graph = &stdout[stdout.find("== dataflow").expect("the dataflow")..];
    let slices: Vec<&str> = (graph.lines())
        .filter(|l| l.contains(".slices  <- source: bid"))
        .collect();
    assert_eq!(slices.len(), 1, "{graph}");
    // Its rows go to both sides: the join's left input and the maximum's aggregate.
    let readers = (graph.lines())
        .filter(|l| l.ends_with("<- window_aggregate.rows (forward)"))
        .count();
    assert_eq!(readers, 2, "{graph}");
}

/// A function call repeated in a filter and its projection is evaluated once per row (as
/// Flink's generated code reuses common expressions): Nexmark q21 calls `REGEXP_EXTRACT(url,
/// ...)` twice and `lower(channel)` five times, and its dataflow computes both once, in a
/// `shared_calls` vertex before the filter.
#[test]
fn calls_repeated_in_a_filter_and_projection_are_computed_once() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |p: &str| std::fs::read_to_string(repo.join(p)).unwrap();
    let q21 = read("examples/nexmark/queries/q21.sql");
    let (table, insert) = q21.split_at(q21.find("INSERT INTO").expect("q21 inserts"));
    let sql = format!(
        "{}\n{}\nEXPLAIN {insert}",
        read("examples/nexmark/ddl_gen.sql"),
        &table[table.find("CREATE TABLE").unwrap()..]
    );
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--workers", "2", "--execute", &sql])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let graph = &stdout[stdout.find("== dataflow").expect("the dataflow")..];
    assert!(
        graph.contains("shared_calls  <- source: bid (forward)"),
        "{graph}"
    );
    assert!(
        graph.contains("filter  <- shared_calls (forward)"),
        "{graph}"
    );
}
