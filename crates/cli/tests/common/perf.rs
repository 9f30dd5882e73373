//! What the tests of `xorflow-lab profile` and `xorflow-lab bench cpu` share: running the binary and
//! skipping where perf cannot sample.

use std::process::{Command, Output, Stdio};

/// Runs `xorflow args` (or `xorflow-lab args`, for the lab's subcommands: [`super::exe_for`]) to
/// completion (no stdin; not as a local child of another run).
pub fn xorflow(args: &[&str]) -> Output {
    Command::new(super::exe_for(args))
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdin(Stdio::null())
        .output()
        .expect("xorflow runs")
}

/// Status, stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `xorflow args` and asserts it is refused: exit status 2 and `want` in its stderr.
pub fn refused(args: &[&str], want: &str) {
    let o = xorflow(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(want),
        "{args:?}: {}",
        text(&o)
    );
}

/// True when `perf record -e cpu-clock` works here; else the test is skipped (outside CI) or
/// fails (in CI).
pub fn perf_works() -> bool {
    xorflow_testkit::perf_works()
}
