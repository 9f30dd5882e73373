//! YSB fixtures shared by the YSB tests (crates/lab/tests/ysb.rs, ysb_kafka.rs, which include this
//! folder): generated files with the original's skew, and views in its format.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Due time of the first generated event, ms since the epoch.
pub const START_MS: u64 = 1_700_000_000_000;

/// `xorflow-lab ysb generate` of `events` at `rate`/s with skew and `seed` into `dir`: returns
/// (events file, ad table) and the ad the table lists first.
pub fn generate(dir: &Path, events: u64, rate: u64, seed: u64) -> (PathBuf, PathBuf, String) {
    let (k, a) = (
        dir.join("kafka-json.txt"),
        dir.join("ad-to-campaign-ids.txt"),
    );
    let out = Command::new(super::lab())
        .args(["ysb", "generate", "--events", &events.to_string()])
        .args(["--rate", &rate.to_string(), "--with-skew"])
        .args([
            "--seed",
            &seed.to_string(),
            "--start-ms",
            &START_MS.to_string(),
        ])
        .arg("--output")
        .arg(&k)
        .arg("--ad-campaigns")
        .arg(&a)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .output()
        .expect("xorflow runs");
    assert!(out.status.success(), "{out:?}");
    let table = std::fs::read_to_string(&a).unwrap();
    let ad = table
        .split('"')
        .nth(1)
        .expect("an ad in the table")
        .to_string();
    (k, a, ad)
}

/// A view of `ad` at `t` (ms) in the original's format, one line with its newline.
pub fn view(ad: &str, t: u64) -> String {
    format!(
        "{{\"user_id\": \"u\", \"page_id\": \"p\", \"ad_id\": \"{ad}\", \"ad_type\": \"mail\", \
         \"event_type\": \"view\", \"event_time\": \"{t}\", \"ip_address\": \"1.2.3.4\"}}\n"
    )
}
