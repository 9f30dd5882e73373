//! One exit-status rule for every job, as README's "Exit status" states it and
//! `crates/cli/src/outcome.rs` decides it: 2 for bad input, option or configuration (a port in
//! use, a checkpoint directory of another job and a command that moved to `xorflow-lab`
//! included), 1 when the engine fails.
//!
//! Small files written to temporary directories; each run ends within seconds.

mod common;
use common::bin;
use std::path::Path;
use std::process::{Command, Output};

/// `xorflow ARGS`, run to its end.
fn xorflow(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// Asserts the exit status `code` and that stderr says `what`.
fn assert_exit(o: &Output, code: i32, what: &str, label: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{label}: stderr:\n{err}");
    assert!(err.contains(what), "{label}: no '{what}' in stderr:\n{err}");
}

/// A small sensor file in `dir`.
fn sensors(dir: &Path) -> String {
    let p = dir.join("sensors.csv");
    std::fs::write(&p, "ts,sensor,temp\n60,a,20\n61,b,21\n125,a,22\n").unwrap();
    p.display().to_string()
}

/// `run file` over `input` with a 1 minute tumbling window per sensor, writing into `dir`.
fn file_job<'a>(input: &'a str, out: &'a str, window: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "file",
        "--input",
        input,
        "--time-field",
        "ts",
        "--key",
        "sensor",
        "--window",
        window,
        "--output",
        out,
    ]
}

/// Catches: `--workers 0` refused by the engine only once the job was built and reported as the
/// engine's failure (exit 1) by `run file` (issue 49, item 6), and any job kind drifting
/// from the others.
#[test]
fn workers_0_exits_2_for_every_job() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let out = dir.path().join("out.csv").display().to_string();
    let mut file = file_job(&input, &out, "tumbling:1m");
    file.extend(["--workers", "0"]);
    // The YSB job's case is the lab's (crates/lab/tests/ysb.rs, bad_inputs_exit_2_...).
    let jobs: [(&str, Vec<&str>); 3] = [
        ("file", file),
        ("flights", vec!["run", "flights", "--workers", "0"]),
        (
            "flights-weather",
            vec!["run", "flights-weather", "--workers", "0"],
        ),
    ];
    for (label, args) in &jobs {
        assert_exit(&xorflow(args), 2, "--workers 0", label);
    }
    assert!(!Path::new(&out).exists(), "a refused run wrote its output");
}

/// Catches: `xorflow run ysb`, `xorflow kafka produce-ysb` or a job file naming `ysb` doing
/// anything but saying, in one line with status 2, that the lab runs them now
/// (crates/cli/src/main.rs, YSB_MOVED); `run --help` listing `ysb`.
#[test]
fn ysb_moved_to_the_lab_exits_2_in_one_line_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("ysb.toml");
    std::fs::write(&job, "job = \"ysb\"\n[options]\nworkers = 2\n").unwrap();
    let job = job.display().to_string();
    for (args, says) in [
        (vec!["run", "ysb"], "`xorflow-lab run ysb`"),
        (
            vec!["run", "ysb", "--workers", "2", "--help"],
            "`xorflow-lab run ysb`",
        ),
        (vec!["run", "--config", &job], "`xorflow-lab run ysb`"),
        (
            vec!["run", "ysb", "--config", &job],
            "`xorflow-lab run ysb`",
        ),
        (
            vec!["kafka", "produce-ysb", "--partitions", "3"],
            "`xorflow-lab kafka produce-ysb`",
        ),
    ] {
        let o = xorflow(&args);
        let label = format!("{args:?}");
        assert_exit(&o, 2, says, &label);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{label}: {err}");
        assert!(err.starts_with("error: "), "{label}: {err}");
        assert!(o.stdout.is_empty(), "{label}");
    }
    let help = xorflow(&["run", "--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("flights-weather") && !help.contains("ysb"),
        "{help}"
    );
}

/// Catches: a `--metrics-addr` port held by another process reported as the engine's failure
/// (exit 1) by `run file` (issue 49, item 6).
#[test]
fn metrics_port_in_use_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let out = dir.path().join("out.csv").display().to_string();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let mut args = file_job(&input, &out, "tumbling:1m");
    args.extend(["--metrics-addr", &addr]);
    assert_exit(&xorflow(&args), 2, "cannot listen there", "run file");
    let flights = dir.path().join("flights.csv");
    std::fs::write(
        &flights,
        "dep_time,dep_delay,origin,minute,time_hour\n517,2,EWR,15,2013-01-01T10:00:00Z\n",
    )
    .unwrap();
    let flights = flights.display().to_string();
    let args = [
        "run",
        "flights",
        "--input",
        &flights,
        "--output",
        &out,
        "--metrics-addr",
        &addr,
    ];
    assert_exit(&xorflow(&args), 2, "cannot listen there", "run flights");
    drop(held);
}

/// Catches: resuming from the checkpoint directory of a job with other options ("belongs to
/// another job") reported as the engine's failure (exit 1) by `run file` (issue 49, item 6).
#[test]
fn checkpoint_directory_of_another_job_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let out = dir.path().join("out.csv").display().to_string();
    let ck = dir.path().join("ck").display().to_string();
    let checkpoints = ["--checkpoint-interval", "1s", "--checkpoint-dir", &ck];
    let mut first = file_job(&input, &out, "tumbling:1m");
    first.extend(checkpoints);
    let o = xorflow(&first);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut other = file_job(&input, &out, "tumbling:2m");
    other.extend(checkpoints);
    other.push("--resume");
    assert_exit(&xorflow(&other), 2, "belongs to another job", "resume");
}

/// Catches: a missing input or a malformed job file given the engine's status.
#[test]
fn missing_input_and_bad_configuration_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such.csv").display().to_string();
    let out = dir.path().join("out.csv").display().to_string();
    let o = xorflow(&file_job(&missing, &out, "tumbling:1m"));
    assert_exit(&o, 2, &missing, "missing input");

    let input = sensors(dir.path());
    let o = xorflow(&file_job(&input, &out, "weekly"));
    assert_exit(&o, 2, "--window 'weekly'", "bad window");

    let job = dir.path().join("job.toml");
    std::fs::write(&job, "job = \"file\"\n[options\n").unwrap();
    let job = job.display().to_string();
    let o = xorflow(&["run", "--config", &job, "file", "--input", &input]);
    assert_exit(&o, 2, &job, "malformed job file");
    assert!(!Path::new(&out).exists(), "a refused run wrote its output");
}

/// Catches: an engine failure (here the other process of a hostfile run never connects) given
/// the status of a user's mistake, or no failure at all.
#[test]
fn a_process_that_never_connects_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let input = sensors(dir.path());
    let out = dir.path().join("out.csv").display().to_string();
    // Process 0's port: free a moment ago. Process 1's: the discard port, where nothing listens.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let hostfile = dir.path().join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{port}\n127.0.0.1:9\n")).unwrap();
    let hostfile = hostfile.display().to_string();
    let mut args = file_job(&input, &out, "tumbling:1m");
    args.extend([
        "--hostfile",
        &hostfile,
        "--process",
        "0",
        "--cluster-token",
        "exit-status-test",
        "--startup-timeout",
        "1s",
    ]);
    assert_exit(&xorflow(&args), 1, "did not connect", "silent peer");
    assert!(!Path::new(&out).exists(), "a failed run wrote its output");
}
