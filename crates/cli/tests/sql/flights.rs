//! The SQL version of the flights job (examples/sql/flights.sql, README's SQL quick start)
//! against `xorflow run flights` on the same file: the same windows, counts and maxima; the
//! means equal to the cent but for rounding a mean of exactly half a cent (SQL's ROUND rounds
//! half away from zero, the flights job's text half to even).

use crate::common::flights_csv;
use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;

type Rows = BTreeMap<(String, String), Vec<String>>;

/// window_start (as the flights job writes it, RFC 3339) and origin -> the other columns.
fn rows(p: &Path, sql_times: bool) -> Rows {
    let mut r = csv::Reader::from_path(p).unwrap();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let mut start = rec[0].to_string();
            if sql_times {
                // 2013-01-01 10:00:00.000 -> 2013-01-01T10:00:00Z
                start = format!("{}Z", start.replacen(' ', "T", 1).trim_end_matches(".000"));
            }
            let rest = (2..rec.len()).map(|i| rec[i].to_string()).collect();
            ((start, rec[1].to_string()), rest)
        })
        .collect()
}

#[test]
fn the_sql_flights_job_agrees_with_run_flights() {
    let Some(csv_path) = flights_csv() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (job, sql) = (dir.path().join("job.csv"), dir.path().join("sql.csv"));
    Command::cargo_bin("xorflow")
        .unwrap()
        .args(["run", "flights", "--workers", "2", "--input"])
        .arg(&csv_path)
        .arg("--output")
        .arg(&job)
        .assert()
        .success();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/sql/flights.sql")).unwrap();
    let text = text.replace("data/nycflights13/flights.csv", csv_path.to_str().unwrap());
    Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--workers", "2", "--execute", &text, "--output"])
        .arg(&sql)
        .assert()
        .success();
    let (a, b) = (rows(&job, false), rows(&sql, true));
    assert_eq!(a.len(), b.len());
    assert!(a.len() > 19_000, "{}", a.len());
    let mut half_cents = 0;
    for (k, x) in &a {
        let y = b
            .get(k)
            .unwrap_or_else(|| panic!("{k:?} is not in the SQL job's rows"));
        // flights, cancelled, max: equal.
        assert_eq!((&x[0], &x[1], &x[3]), (&y[0], &y[1], &y[3]), "{k:?}");
        if x[2].is_empty() || y[2].is_empty() {
            // Every flight of the window cancelled: no mean on either side.
            assert_eq!(x[2], y[2], "{k:?}");
            continue;
        }
        let (m, n): (f64, f64) = (x[2].parse().unwrap(), y[2].parse().unwrap());
        if x[2] != format!("{n:.2}") {
            assert!((m - n).abs() < 0.0101, "{k:?}: mean {m} against {n}");
            half_cents += 1;
        }
    }
    // The rounding differs only on exact half cents: a few hundred of the 19,486 windows.
    assert!(half_cents < a.len() / 20, "{half_cents}");
}
