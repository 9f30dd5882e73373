//! SQL errors: refused before anything runs, exit 2, one line naming the text, line and column
//! and what is wrong.

use assert_cmd::Command;

/// Runs `xorflow sql --execute sql`; (exit code, stderr).
fn sql(text: &str) -> (Option<i32>, String) {
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--execute", text])
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const BID: &str = "CREATE TABLE bid (auction BIGINT, price BIGINT, url VARCHAR, \
                   `dateTime` TIMESTAMP(3),\n WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND)\n \
                   WITH ('connector' = 'filesystem', 'path' = 'no/such/file.json', 'format' = 'json');\n";

#[test]
fn errors_name_line_column_and_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        ("SELECT auction FROM bid WHERE", "line 4, column 30: syntax error: Expected: an expression, found: EOF"),
        ("SELECT auction FROM bids", "line 4, column 21: unknown table 'bids' (declared: bid)"),
        ("SELECT auctoin FROM bid", "line 4, column 8: unknown column 'auctoin'"),
        ("SELECT frobnicate(price) FROM bid", "line 4, column 8: unknown function FROBNICATE"),
        ("SELECT auction FROM bid WHERE price", "line 4, column 31: a condition must be BOOLEAN, not BIGINT"),
        ("SELECT url + 1 FROM bid", "line 4, column 8: 'url + 1': Add does not apply to VARCHAR and INT"),
        (
            "SELECT auction FROM bid ORDER BY price",
            "line 4, column 34: ORDER BY is not supported on a stream",
        ),
        (
            "SELECT max(price) OVER (PARTITION BY auction) FROM bid",
            "line 4, column 8: max() OVER is not supported: only ROW_NUMBER() in a top-N",
        ),
        (
            "SELECT count(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(price), INTERVAL '1' SECOND)) GROUP BY window_start, window_end",
            "DESCRIPTOR(price): not a time attribute",
        ),
        (
            "SELECT price, count(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND)) GROUP BY window_start, window_end",
            "column 'price' must appear in GROUP BY",
        ),
        ("DELETE FROM bid", "line 4, column 1: 'DELETE FROM ...' is not supported"),
    ];
    for (query, want) in cases {
        let (code, err) = sql(&format!("{BID}{query}"));
        assert_eq!(code, Some(2), "{query}: {err}");
        assert!(err.contains(want), "{query}:\n  got  {err}\n  want {want}");
        assert!(err.contains("--execute: "), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_missing_input_file_is_named() {
    let (code, err) = sql(&format!("{BID}SELECT auction FROM bid"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no/such/file.json"), "{err}");
}

#[test]
fn a_bad_watermark_and_a_bad_type_are_refused() {
    let (code, err) = sql(
        "CREATE TABLE t (a BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts + INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = 'x', 'format' = 'json'); SELECT a FROM t",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("line 1, column 44: WATERMARK"), "{err}");
    let (code, err) =
        sql("CREATE TABLE t (a BLOB) WITH ('connector' = 'filesystem'); SELECT a FROM t");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the type BLOB is not supported"), "{err}");
}

/// upsert-kafka sinks: a key is required, `NOT ENFORCED` too (as Flink), only JSON formats, and
/// such a table is not read; each refused before anything runs, naming the table or position.
#[test]
fn upsert_kafka_tables_are_checked_before_the_job_runs() {
    let table = |pk: &str, opts: &str| {
        format!(
            "CREATE TABLE u (auction BIGINT, n BIGINT{pk}) WITH ('connector' = 'upsert-kafka', \
             'topic' = 'u', 'properties.bootstrap.servers' = '127.0.0.1:1'{opts});\n"
        )
    };
    let json = ", 'key.format' = 'json', 'value.format' = 'json'";
    let insert = "INSERT INTO u SELECT auction, count(*) FROM bid GROUP BY auction";
    let cases = [
        (
            format!("{}{BID}{insert}", table("", json)),
            "table 'u': the upsert-kafka connector needs PRIMARY KEY (...) NOT ENFORCED",
        ),
        (
            format!("{}{BID}{insert}", table(", PRIMARY KEY (auction)", json)),
            "line 1, column 64: syntax error: Expected: NOT ENFORCED after PRIMARY KEY",
        ),
        (
            format!(
                "{}{BID}{insert}",
                table(", PRIMARY KEY (auctoin) NOT ENFORCED", json)
            ),
            "unknown column 'auctoin'",
        ),
        (
            format!(
                "{}{BID}{insert}",
                table(
                    ", PRIMARY KEY (auction) NOT ENFORCED",
                    ", 'key.format' = 'csv', 'value.format' = 'json'"
                )
            ),
            "table 'u': 'key.format' = 'csv': only 'json'",
        ),
        (
            format!(
                "{}SELECT * FROM u",
                table(", PRIMARY KEY (auction) NOT ENFORCED", json)
            ),
            "table 'u': an upsert-kafka table is written only",
        ),
    ];
    for (text, want) in &cases {
        let (code, err) = sql(text);
        assert_eq!(code, Some(2), "{text}: {err}");
        assert!(err.contains(want), "{text}:\n  got  {err}\n  want {want}");
    }
}
