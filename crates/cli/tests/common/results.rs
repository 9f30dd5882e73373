//! Reading a bench sweep's results folder (`bench cpu`, `bench wan`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The one folder under `out`, whose name starts with `prefix` (`cpu-`, `wan-`).
pub fn results_dir(out: &Path, prefix: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("results root")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(prefix),
        "{name} does not start with {prefix}"
    );
    dirs[0].clone()
}

/// A CSV file as rows of column -> value.
pub fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).expect("csv");
    let head: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    r.records()
        .map(|rec| {
            let rec = rec.expect("row");
            head.iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}
