//! The oracle's side of the SQL tests: Nexmark events generated into a temporary folder, the
//! query run by xorflow and by DuckDB (`duckdb_oracle.py`), the two results compared as
//! multisets of rows (numbers compared as numbers).

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The Python that has `duckdb`: `XORFLOW_ORACLE_PYTHON` (CI's virtual environment, .ci/run),
/// else `python3`; `None` (and skipped, naming it) when neither can import it.
pub fn python() -> Option<PathBuf> {
    let p = std::env::var_os("XORFLOW_ORACLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| "python3".into());
    let ok = std::process::Command::new(&p)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        xorflow_testkit::skip("duckdb for Python (pip install duckdb, or XORFLOW_ORACLE_PYTHON)");
        return None;
    }
    Some(p)
}

/// `xorflow nexmark generate --events n --rate 1000 --out dir`: 1,000 events per second of
/// event time, so that the 10 s windows of the queries are many.
pub fn generate(dir: &Path, events: u64) {
    Command::cargo_bin("xorflow")
        .unwrap()
        .args([
            "nexmark",
            "generate",
            "--rate",
            "1000",
            "--events",
            &events.to_string(),
            "--out",
        ])
        .arg(dir)
        .assert()
        .success();
}

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/nexmark/ddl_files.sql` reading the files in `data`.
pub fn ddl(data: &Path, into: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/nexmark/ddl_files.sql")).unwrap();
    let text = text.replace("data/nexmark", data.to_str().unwrap());
    let p = into.join("ddl.sql");
    std::fs::write(&p, text).unwrap();
    p
}

/// The query file `examples/nexmark/queries/{q}.sql` with its blackhole sink made a CSV file
/// `out`.
pub fn query_to_file(q: &str, out: &Path, into: &Path) -> PathBuf {
    // The Nexmark queries, else this test's own (tests/sql/queries/).
    let nexmark = root().join(format!("examples/nexmark/queries/{q}.sql"));
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/sql/queries/{q}.sql"));
    let path = if nexmark.exists() { nexmark } else { own };
    let text = std::fs::read_to_string(path).unwrap();
    let sink = format!(
        "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'",
        out.display()
    );
    assert!(text.contains("'connector' = 'blackhole'"), "{q}");
    let p = into.join(format!("{q}.sql"));
    std::fs::write(&p, text.replace("'connector' = 'blackhole'", &sink)).unwrap();
    p
}

/// DuckDB's rows of each of `queries` over `data` (one DuckDB for all: its start is most of
/// the time of one query).
pub fn oracle(python: &Path, data: &Path, queries: &[&str], into: &Path) -> Vec<Vec<Vec<String>>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sql/duckdb_oracle.py");
    let o = std::process::Command::new(python)
        .arg(script)
        .args([data.as_os_str(), into.as_os_str()])
        .args(queries)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "oracle {queries:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (queries.iter())
        .map(|q| read_csv(&into.join(format!("{q}.oracle.csv")), false))
        .collect()
}

/// The rows of a CSV file (without its header when `header`). A changelog (a header whose first
/// column is `op`) is applied: `+I` and `+U` rows added, `-U` and `-D` rows taken out again,
/// giving the result as it stands at the end.
pub fn read_csv(p: &Path, header: bool) -> Vec<Vec<String>> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(header)
        .from_path(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let changelog = header && r.headers().is_ok_and(|h| h.get(0) == Some("op"));
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    if !changelog {
        return rows;
    }
    let mut table: Vec<Vec<String>> = Vec::new();
    for row in rows {
        let (op, values) = (row[0].as_str(), row[1..].to_vec());
        match op {
            "+I" | "+U" => table.push(values),
            "-U" | "-D" => {
                let i = table.iter().position(|r| *r == values).unwrap_or_else(|| {
                    panic!(
                        "{}: {op} of a row not in the result: {values:?}",
                        p.display()
                    )
                });
                table.swap_remove(i);
            }
            other => panic!("{}: unknown op {other}", p.display()),
        }
    }
    table
}

/// A field as the comparison sees it: numbers by value (to 9 significant digits, which both
/// sides' exact decimals and doubles agree on), anything else as text.
fn key(field: &str) -> String {
    match field.parse::<f64>() {
        Ok(v)
            if !field.is_empty()
                && field
                    .chars()
                    .all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) =>
        {
            format!("{v:.9e}")
        }
        _ => field.to_string(),
    }
}

/// Asserts that `got` and `want` hold the same rows, in any order, naming the first
/// differences.
pub fn assert_same_rows(what: &str, got: &[Vec<String>], want: &[Vec<String>]) {
    let norm = |rows: &[Vec<String>]| {
        let mut v: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|f| key(f)).collect())
            .collect();
        v.sort();
        v
    };
    let (g, w) = (norm(got), norm(want));
    if g == w {
        return;
    }
    let only = |a: &[Vec<String>], b: &[Vec<String>]| -> Vec<Vec<String>> {
        let mut b = b.to_vec();
        let mut out = Vec::new();
        for r in a {
            match b.iter().position(|x| x == r) {
                Some(i) => {
                    b.swap_remove(i);
                }
                None => out.push(r.clone()),
            }
        }
        out
    };
    let (extra, missing) = (only(&g, &w), only(&w, &g));
    panic!(
        "{what}: {} rows from xorflow, {} from the oracle; {} only in xorflow's (first: {:?}), \
         {} only in the oracle's (first: {:?})",
        g.len(),
        w.len(),
        extra.len(),
        extra.first(),
        missing.len(),
        missing.first()
    );
}
