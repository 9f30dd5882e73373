//! Checkpoints that help (issue 49, item 7): a finished run's checkpoint folder does not block
//! the same command, `--resume` of a finished job says so, pacing may change on `--resume`, a
//! refused resume names each option that differs, and settings that would do nothing are
//! refused.

use crate::common::bin;
use crate::common::procs::{kill9, wait_first_checkpoint};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// 4,000 sensor rows, one per second, in `dir`.
fn sensors(dir: &Path) -> PathBuf {
    let p = dir.join("sensors.csv");
    let mut text = String::from("ts,sensor,temp\n");
    for i in 0..4000 {
        text.push_str(&format!("{},{},{}\n", i, ["a", "b", "c"][i % 3], i % 7));
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// `run file` over `input` with checkpoints in `dir/ck`, writing `dir/out.csv`, and `extra`.
fn job(dir: &Path, input: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["run", "file", "--time-field", "ts", "--key", "sensor"])
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(dir.join("out.csv"))
        .arg("--checkpoint-dir")
        .arg(dir.join("ck"))
        .args(["--checkpoint-interval", "100ms"])
        .args(extra);
    c
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Catches: repeating a successful command that used --checkpoint-interval refused ("holds 3
/// checkpoint(s) of an earlier run"), and --resume of a finished job restoring its last
/// checkpoint instead of saying it finished.
#[test]
fn a_finished_job_starts_afresh_and_has_nothing_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let window = ["--window", "tumbling:1m"];
    let o = run(job(dir.path(), &input, &window));
    assert!(o.status.success(), "{}", stderr(&o));
    let first = std::fs::read(dir.path().join("out.csv")).unwrap();
    let o = run(job(dir.path(), &input, &window));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("starting afresh"), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.path().join("out.csv")).unwrap(), first);
    let mut resume = job(dir.path(), &input, &window);
    resume.arg("--resume");
    let o = run(resume);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to resume"), "{}", stderr(&o));
}

/// Catches: --resume refusing a changed pace (--rate) and, when it refuses a changed option,
/// not saying which.
#[test]
fn a_resume_may_change_the_pace_and_a_refused_one_names_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let reference = tempfile::tempdir().unwrap();
    let window = ["--window", "tumbling:1m"];
    let o = run(job(reference.path(), &input, &window));
    assert!(o.status.success(), "{}", stderr(&o));
    let want = std::fs::read(reference.path().join("out.csv")).unwrap();
    // 4,000 rows at 1,000/s: killed after its first checkpoint, well before its end.
    let mut paced = job(dir.path(), &input, &window);
    paced
        .args(["--rate", "1000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paced.spawn().unwrap();
    wait_first_checkpoint(&dir.path().join("ck"));
    std::thread::sleep(Duration::from_millis(300));
    kill9(child.id());
    let _ = child.wait();
    let mut other = job(dir.path(), &input, &["--window", "tumbling:2m", "--resume"]);
    other.args(["--rate", "1000"]);
    let o = run(other);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--window: tumbling:1m -> tumbling:2m"),
        "{err}"
    );
    assert!(
        !err.contains("rate"),
        "the pace is not part of the job: {err}"
    );
    let mut resume = job(dir.path(), &input, &window);
    resume.args(["--resume", "--rate", "0"]);
    let o = run(resume);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.path().join("out.csv")).unwrap(), want);
}

/// Catches: --checkpoint-interval 0s accepted, and --restart-attempts without checkpoints
/// doing nothing and saying nothing.
#[test]
fn settings_that_would_do_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let mut zero = job(dir.path(), &input, &["--window", "tumbling:1m"]);
    zero.args(["--checkpoint-interval", "0s"]);
    let o = run(zero);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--checkpoint-interval must be more than 0"));
    let o = Command::new(bin())
        .args([
            "run",
            "file",
            "--time-field",
            "ts",
            "--window",
            "tumbling:1m",
        ])
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("x.csv"))
        .args(["--processes", "2", "--restart-attempts", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--restart-attempts 2 needs --checkpoint-interval"),
        "{}",
        stderr(&o)
    );
}
