//! Identical runs write identical files (issue 49, item 11): the rows of a job whose sinks
//! run on several workers or processes come out in one order whatever the timing, so that a run
//! and its repetition (or a recovered run and one without the failure) can be compared byte for
//! byte, not only after sorting.

use crate::common::{bin, flights_csv};
use std::path::Path;
use std::process::Command;

/// `xorflow run flights` over `input` with `extra`, its result's bytes.
fn flights(input: &Path, out: &Path, extra: &[&str]) -> Vec<u8> {
    let o = Command::new(bin())
        .args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(out).unwrap()
}

/// Catches: the flights job writing its rows in the order the windows closed on each worker, a
/// different file from run to run (f681eac), and rows out of (window start, origin) order.
#[test]
fn flights_runs_write_byte_identical_sorted_files() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    for extra in [
        &["--workers", "2", "--sources", "3"][..],
        &["--processes", "2", "--workers", "1", "--sources", "2"][..],
    ] {
        let first = flights(&input, &out, extra);
        for _ in 0..2 {
            assert!(
                flights(&input, &out, extra) == first,
                "{extra:?}: the files differ"
            );
        }
        let text = String::from_utf8(first).unwrap();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert!(rows.len() > 19_000, "{} rows", rows.len());
        let mut sorted = rows.clone();
        sorted.sort_unstable();
        assert!(
            rows == sorted,
            "{extra:?}: rows not sorted by window start and origin"
        );
    }
}
