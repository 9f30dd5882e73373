//! What the tests of xorflow's binaries share: the rule for tests that need what a machine may
//! lack (root, network namespaces, TUN, perf, Java and Maven, redis-server, Chromium, an
//! S3-compatible server).
//!
//! Outside CI such a test passes after printing one line, `skipped: <what is missing>`; in CI
//! (`CI` set, as `.ci/run` sets it, which also installs all of these) the same absence fails
//! the test, so a broken installation cannot pass as a skip.

use std::path::Path;
use std::process::{Command, Stdio};

/// True under CI (the environment variable `CI` is set).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Skips the calling test for lack of `what` (e.g. "perf is missing or not permitted"): prints
/// `skipped: {what}` outside CI.
///
/// # Panics
/// Under CI, naming `what`.
pub fn skip(what: &str) {
    assert!(
        !in_ci(),
        "{what}, and CI needs it (.ci/run installs it; unset CI to skip)"
    );
    eprintln!("skipped: {what}");
}

/// True when `perf record -e cpu-clock` works here; otherwise [`skip`]s, naming why.
pub fn perf_works() -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let ok = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "99", "-g", "-o"])
        .arg(dir.path().join("check.data"))
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip("perf is missing or not permitted (kernel.perf_event_paranoid)");
    }
    ok
}

/// True when network namespaces joined by TUN devices can be made here (root, `ip`,
/// /dev/net/tun); otherwise [`skip`]s, naming what is missing.
pub fn namespaces_here() -> bool {
    // SAFETY: geteuid reads the process's credentials and touches no memory.
    let missing = [
        (unsafe { libc::geteuid() } != 0, "root"),
        (
            Command::new("ip").arg("-V").output().is_err(),
            "'ip' (iproute2)",
        ),
        (!Path::new("/dev/net/tun").exists(), "/dev/net/tun"),
    ];
    let lacking: Vec<&str> = missing.iter().filter(|m| m.0).map(|m| m.1).collect();
    if lacking.is_empty() {
        return true;
    }
    skip(&format!("network namespaces need {}", lacking.join(", ")));
    false
}

/// Handles a binary's exit 77 ("skipped: <reason>" on its stderr, as `xorflow-lab delay-router` and
/// `scripts/netns-cluster.sh` exit where namespaces cannot be made): true (and [`skip`]ped) when
/// `code` is 77.
pub fn skipped_by(code: Option<i32>, stderr: &str) -> bool {
    if code != Some(77) {
        return false;
    }
    let reason = stderr
        .lines()
        .find_map(|l| l.strip_prefix("skipped: "))
        .unwrap_or(stderr.trim());
    skip(reason);
    true
}
