//! The YSB job end to end through the lab's binary (`xorflow-lab run ysb`,
//! crates/lab/src/ysb_job.rs; it was `xorflow run ysb`, and these tests were
//! crates/cli/tests/ysb.rs): files from
//! `xorflow-lab ysb generate` (with the original's skew and late events, plus malformed lines, a
//! late view and a view of an unknown ad added here) are counted exactly as the oracle
//! (`examples/ysb/src/oracle.rs`) counts them, in one process and in two (the second one started
//! by the first from its own executable, so `xorflow-lab` again); a job file runs as its flags
//! do; bad inputs exit 2 naming what is wrong; a worker process killed with kill -9 fails the
//! run promptly and leaves no result file.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::procs::{children_with_env, running};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::ysb::{view, START_MS};
/// Longest a run may take before the test kills it and fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// `xorflow-lab args...` (or `xorflow args...`: [`common::exe_for`]) with its output piped, as a
/// top-level run (not a cluster's child).
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(common::exe_for(args));
    c.args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The `run ysb` arguments naming the three files.
fn ysb_args<'a>(k: &'a Path, a: &'a Path, c: &'a Path) -> Vec<&'a str> {
    vec![
        "run",
        "ysb",
        "--input",
        s(k),
        "--ad-campaigns",
        s(a),
        "--output",
        s(c),
    ]
}

/// Runs [`command`]`(args)`, killing it and failing past [`RUN_TIMEOUT`].
fn xorflow(args: &[&str]) -> Output {
    let mut child = command(args).spawn().expect("start xorflow");
    let t0 = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t0.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            panic!("xorflow {args:?} hung: {:?}", child.wait_with_output());
        }
        thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Generates `events` at `rate`/s with skew into `dir`, then appends hand-made lines: two
/// malformed, a view 5 s behind the largest event time (late at 100 ms lateness) and a view of
/// an ad the table lacks. Returns (events file, ad table).
fn generate(dir: &Path, events: u64, rate: u64) -> (PathBuf, PathBuf) {
    let (k, a, ad) = common::ysb::generate(dir, events, rate, 3);
    let end = START_MS + events * 1000 / rate;
    let mut f = std::fs::OpenOptions::new().append(true).open(&k).unwrap();
    f.write_all(b"{\"user_id\": \"truncated\n").unwrap();
    f.write_all(view(&ad, end - 5000).as_bytes()).unwrap();
    f.write_all(view("no-such-ad", end).as_bytes()).unwrap();
    f.write_all(b"\n").unwrap();
    f.write_all(view(&ad, end + 1).as_bytes()).unwrap();
    (k, a)
}

/// The oracle's rows for the files, as the job writes them.
fn oracle(k: &Path, a: &Path, lateness_ms: u64) -> String {
    let counts = xorflow_ysb::oracle::counts(
        &std::fs::read_to_string(k).unwrap(),
        &std::fs::read_to_string(a).unwrap(),
        lateness_ms,
        xorflow_ysb::WINDOW_MS,
    )
    .unwrap();
    let mut out = String::from("campaign_id,window_start_ms,views\n");
    for ((c, w), v) in counts {
        out.push_str(&format!("{c},{w},{v}\n"));
    }
    out
}

#[test]
fn counts_match_the_oracle_in_one_and_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    let (k, a) = generate(dir.path(), 300_000, 10_000);
    let want = oracle(&k, &a, 100);
    assert!(
        want.lines().count() > 300,
        "30 s of events: 3-4 windows x 100 campaigns"
    );
    let c = dir.path().join("counts.csv");
    let base = ysb_args(&k, &a, &c);
    for extra in [
        &["--workers", "1"][..],
        &["--workers", "2", "--sources", "3", "--granularity", "10ms"],
        &["--processes", "2", "--workers", "1", "--sources", "2"],
        &["--processes", "2", "--workers", "2", "--tracking", "none"],
    ] {
        let _ = std::fs::remove_file(&c);
        let out = xorflow(&[&base[..], extra].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{extra:?}: {stderr}");
        assert_eq!(std::fs::read_to_string(&c).unwrap(), want, "{extra:?}");
        // 2 malformed lines (the truncated one and the empty one), at least the hand-made late
        // view, the unknown ad's view.
        assert!(
            stdout.contains("300005 lines (2 malformed,"),
            "{extra:?}: {stdout}"
        );
        assert!(stdout.contains("1 views of unknown ads"), "{stdout}");
        assert!(
            stderr.contains("line 300001: EOF while parsing"),
            "{stderr}"
        );
        assert!(stderr.contains("line 300004: EOF"), "{stderr}");
    }
}

#[test]
fn bad_inputs_exit_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (k, a) = generate(dir.path(), 1000, 1000);
    let bad_table = dir.path().join("bad-table.txt");
    std::fs::write(&bad_table, "{ \"a\": \"c\"}\n{ \"b\": 7}\n").unwrap();
    let c = dir.path().join("counts.csv");
    let missing = dir.path().join("missing.txt");
    for (args, why) in [
        (vec!["--input", s(&missing)], "cannot read --input"),
        (
            vec!["--ad-campaigns", s(&missing)],
            "cannot read --ad-campaigns",
        ),
        (vec!["--ad-campaigns", s(&bad_table)], "line 2"),
        (vec!["--output", s(&k)], "--output"),
        (
            vec!["--lateness", "1us"],
            "--lateness must be a whole number of ms",
        ),
        (
            vec!["--granularity", "0ms"],
            "--granularity must be a whole number of ms, at least 1ms",
        ),
        (vec!["--speed", "-1"], "--speed must be a positive number"),
        (
            vec!["--sources", "0"],
            "--sources must be between 1 and 1024",
        ),
        // As for every job of `xorflow run` (crates/cli/tests/exit_status.rs).
        (vec!["--workers", "0"], "--workers 0"),
    ] {
        let mut all = vec!["run", "ysb"];
        for (flag, default) in [
            ("--input", s(&k)),
            ("--ad-campaigns", s(&a)),
            ("--output", s(&c)),
        ] {
            if !args.contains(&flag) {
                all.extend([flag, default]);
            }
        }
        all.extend(&args);
        let out = xorflow(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(!c.exists(), "{args:?} left a result");
    }
    let out = xorflow(&[
        "ysb",
        "generate",
        "--rate",
        "0",
        "--output",
        s(&dir.path().join("x")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rate must be at least 1"));
}

/// `xorflow-lab run --config` reads a job file as `xorflow run --config` does
/// (crates/cli/src/job_file.rs): the file's run writes what its options as flags write, the
/// command line overrides the file, and a job of the engine's is refused naming the lab's jobs.
#[test]
fn a_job_file_runs_like_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let (k, a) = generate(dir.path(), 20_000, 2000);
    let c = dir.path().join("counts.csv");
    let mut flags = ysb_args(&k, &a, &c);
    // 10 s of lateness: the hand-made view 5 s behind counts.
    flags.extend(["--workers", "2", "--lateness", "10s"]);
    let out = xorflow(&flags);
    assert!(out.status.success(), "{out:?}");
    let want = std::fs::read_to_string(&c).unwrap();
    assert_eq!(want, oracle(&k, &a, 10_000));
    assert_ne!(want, oracle(&k, &a, 100));
    let job = dir.path().join("ysb.toml");
    let from_file = dir.path().join("from-file.csv");
    std::fs::write(
        &job,
        format!(
            "job = \"ysb\"\n[options]\ninput = '{}'\nad-campaigns = '{}'\noutput = '{}'\n\
             workers = 2\nlateness = \"10s\"\n",
            s(&k),
            s(&a),
            s(&from_file)
        ),
    )
    .unwrap();
    // `run --config` names no binary's job: `xorflow-lab` here, not [`common::exe_for`]'s pick.
    let lab = |args: &[&str]| {
        let o = Command::new(common::lab())
            .args(args)
            .env_remove("XORFLOW_LOCAL_PROCESS")
            .output();
        o.expect("run xorflow-lab")
    };
    let out = lab(&["run", "--config", s(&job)]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&from_file).unwrap(), want);
    // The command line's --lateness wins over the file's.
    let out = xorflow(&["run", "ysb", "--config", s(&job), "--lateness", "100ms"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&from_file).unwrap(),
        oracle(&k, &a, 100)
    );
    std::fs::write(&job, "job = \"flights\"\n").unwrap();
    let out = lab(&["run", "--config", s(&job)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown job 'flights' (one of: ysb)"),
        "{stderr}"
    );
}

#[test]
fn a_killed_worker_process_fails_the_run_without_a_result() {
    let dir = tempfile::tempdir().unwrap();
    // 20 s of event time, replayed in real time: the kill lands mid-run.
    let (k, a) = generate(dir.path(), 20_000, 1000);
    let c = dir.path().join("counts.csv");
    let mut args = ysb_args(&k, &a, &c);
    args.extend(["--processes", "2", "--workers", "1", "--speed", "1"]);
    let child = command(&args).spawn().unwrap();
    let t0 = Instant::now();
    let pid = loop {
        if let Some(&p) = children_with_env(child.id(), "XORFLOW_LOCAL_PROCESS", "1").first() {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "process 1 never started"
        );
        thread::sleep(Duration::from_millis(20));
    };
    thread::sleep(Duration::from_millis(1500));
    assert!(running(pid));
    let killed = Instant::now();
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "took {:?}",
        killed.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("process 1"), "{stderr}");
    assert!(!c.exists(), "a failed run left {}", c.display());
}

/// Waits (up to 60 s) until a checkpoint's manifest is in `dir`.
fn wait_first_checkpoint(dir: &Path) {
    let t0 = Instant::now();
    while std::fs::read_dir(dir.join("manifests")).map_or(true, |mut d| d.next().is_none()) {
        assert!(
            t0.elapsed() < RUN_TIMEOUT,
            "no checkpoint in {}",
            dir.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Exactly-once across a failure: a worker process killed mid-run (the job restarts from its
/// last checkpoint), and process 0 killed (a second run resumes from the checkpoint store); the
/// counts equal the oracle's, so no view is lost or counted twice.
#[test]
fn killed_runs_restart_or_resume_with_the_oracle_counts() {
    let dir = tempfile::tempdir().unwrap();
    // 10 s of event time replayed 5x faster: a 2 s run.
    let (k, a) = generate(dir.path(), 20_000, 2000);
    let want = oracle(&k, &a, 100);
    for kill_leader in [false, true] {
        let c = dir.path().join(format!("counts-{kill_leader}.csv"));
        let ck = dir.path().join(format!("ck-{kill_leader}"));
        let run = |resume: bool| {
            let mut args = ysb_args(&k, &a, &c);
            args.extend([
                "--processes",
                "2",
                "--workers",
                "1",
                "--sources",
                "2",
                "--speed",
                "5",
            ]);
            args.extend(["--checkpoint-interval", "100ms", "--checkpoint-dir", s(&ck)]);
            if resume {
                args.push("--resume");
            }
            command(&args).spawn().unwrap()
        };
        let mut child = run(false);
        wait_first_checkpoint(&ck);
        thread::sleep(Duration::from_millis(400));
        let victim = if kill_leader {
            child.id()
        } else {
            *children_with_env(child.id(), "XORFLOW_LOCAL_PROCESS", "1")
                .first()
                .expect("process 1")
        };
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the kill"
        );
        assert!(Command::new("kill")
            .args(["-9", &victim.to_string()])
            .status()
            .unwrap()
            .success());
        let out = if kill_leader {
            let _ = child.wait();
            assert!(!c.exists(), "a killed run left {}", c.display());
            run(true).wait_with_output().unwrap()
        } else {
            child.wait_with_output().unwrap()
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let label = format!("kill process 0: {kill_leader}");
        assert!(
            out.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let says = if kill_leader {
            "resumed from checkpoint"
        } else {
            "restarted from the last checkpoint"
        };
        assert!(stdout.contains(says), "{label}: {stdout}");
        assert_eq!(std::fs::read_to_string(&c).unwrap(), want, "{label}");
    }
}

/// `bench ysb` on files from `ysb generate`, 3 s across a window boundary: its counts file equals
/// the oracle's recount of the schedule (an independent formula), and its JSON says so.
fn bench_run(dir: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let (k, a) = (dir.join("t.txt"), dir.join("a.txt"));
    if !k.exists() {
        let out = xorflow(&[
            "ysb",
            "generate",
            "--events",
            "997",
            "--seed",
            "5",
            "--output",
            s(&k),
            "--ad-campaigns",
            s(&a),
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    let c = dir.join("bench-counts.csv");
    let _ = std::fs::remove_file(&c);
    // A window boundary 1.5 s into the run: events on either side of it must land right.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let boundary = (now + 2500).div_ceil(10_000) * 10_000;
    let start = boundary - 1500;
    let start = start.to_string();
    let base = [
        "bench",
        "ysb",
        "--rate",
        "4000",
        "--duration",
        "3s",
        "--events",
        s(&k),
        "--ad-campaigns",
        s(&a),
        "--start-ms",
        &start,
        "--output",
        s(&c),
        "--json",
    ];
    let out = xorflow(&[&base[..], extra].concat());
    assert!(out.status.success(), "{extra:?}: {out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let counts = xorflow_ysb::oracle::scheduled(
        &std::fs::read_to_string(&k).unwrap(),
        &std::fs::read_to_string(&a).unwrap(),
        4000,
        3,
        start.parse().unwrap(),
        xorflow_ysb::WINDOW_MS,
    )
    .unwrap();
    let mut want = String::from("campaign_id,window_start_ms,views\n");
    for ((c, w), v) in counts {
        want.push_str(&format!("{c},{w},{v}\n"));
    }
    assert_eq!(std::fs::read_to_string(&c).unwrap(), want, "{extra:?}");
    (json, want)
}

#[test]
fn bench_counts_match_the_oracle_in_one_and_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [
        &["--workers", "2"][..],
        &["--processes", "2", "--workers", "1", "--sources", "3"],
    ] {
        let (j, want) = bench_run(dir.path(), extra);
        let views: u64 = want
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(j["events_emitted"], 12_000, "{j}");
        assert_eq!(j["views_counted"], views, "{j}");
        assert_eq!(j["counts_match_oracle"], true, "{j}");
        assert!(
            want.lines().count() > 150,
            "both windows of most campaigns: {want}"
        );
        assert_eq!(j["elements_below_frontier"], 0, "{j}");
        assert!(
            j["prewindow_latency_ms"]["count"].as_u64() == Some(views),
            "{j}"
        );
        let tput = j["throughput_events_per_s"].as_f64().unwrap();
        assert!(
            (3000.0..5000.0).contains(&tput),
            "the generator holds its rate: {j}"
        );
        // Two processes: their schedules compared through the clock alignment (one host: the
        // same wall clock, so a few us apart at most).
        let spread = &j["schedule_spread"];
        if extra.contains(&"--processes") {
            assert_eq!(spread["processes"], 1, "{j}");
            assert_eq!(spread["bound_exceeded_same_host"], 0, "{j}");
            assert!(spread["spread_us"].as_f64().unwrap() < 100.0, "{j}");
        } else {
            assert!(spread.is_null(), "{j}");
        }
    }
}

#[test]
fn bench_bad_inputs_exit_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "{\"user_id\": \"u\"}\n").unwrap();
    let table = dir.path().join("a.txt");
    std::fs::write(&table, "{ \"a\": \"c\"}\n").unwrap();
    for (args, says) in [
        (
            vec!["--events", s(&bad), "--ad-campaigns", s(&table)],
            "--events line 1: ",
        ),
        (
            vec![
                "--events",
                "/nonexistent/t.txt",
                "--ad-campaigns",
                s(&table),
            ],
            "cannot read --events '/nonexistent/t.txt'",
        ),
        (vec!["--rate", "0"], "--rate and --duration"),
        (
            vec!["--rate", "10", "--start-ms", "1"],
            "whole number of seconds",
        ),
        (vec!["--sources", "0"], "--sources must be between 1"),
    ] {
        let duration = if args.contains(&"--start-ms") {
            "1500ms"
        } else {
            "1s"
        };
        let out = xorflow(&[&["bench", "ysb", "--duration", duration][..], &args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
