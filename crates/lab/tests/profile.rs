//! `xorflow-lab profile` end to end (the CPU-efficiency paper's task-level profiler, docs/profile.md): a profile of
//! `xorflow-lab bench chain` maps its samples to the chain's tasks, follows a second process, and
//! bad usage, files and targets exit 2 naming what is wrong without leaving a results folder.
//! The tests that sample skip (with a note) when perf is missing or not permitted.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::lab;
use common::perf::{perf_works, text, xorflow};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// summary.csv as task -> (samples, share).
fn summary(path: &Path) -> BTreeMap<String, (u64, f64)> {
    let text = std::fs::read_to_string(path).expect("summary.csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("task,samples,share,cpu_s,cpu_ns_per_event")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 5, "{l}");
            (
                f[0].to_string(),
                (f[1].parse().expect("samples"), f[2].parse().expect("share")),
            )
        })
        .collect()
}

#[test]
fn chain_samples_map_to_its_tasks() {
    if !perf_works() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("prof");
    let o = xorflow(&[
        "profile",
        "--out",
        out.to_str().expect("utf-8"),
        "--frequency",
        "999",
        "--no-inline",
        "--events",
        "40000000",
        "--",
        &lab(),
        "bench",
        "chain",
        "--elements",
        "40000000",
        "--workers",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = summary(&out.join("summary.csv"));
    let total: u64 = s.values().map(|(n, _)| n).sum();
    assert!(
        total > 500,
        "too few samples to judge: {total}\n{}",
        text(&o)
    );
    let shares: f64 = s.values().map(|(_, sh)| sh).sum();
    assert!((shares - 1.0).abs() < 1e-3, "shares sum to {shares}");
    for task in ["source", "sink", "channel"] {
        assert!(s[task].0 > 0, "{task} has no samples: {s:?}");
    }
    assert!(s["other"].1 < 0.5, "other is most of it: {s:?}");
    for f in [
        "report.html",
        "flame.svg",
        "tasks.svg",
        "stacks.folded",
        "tasks.folded",
        "other-stacks.txt",
        "processes.csv",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    assert!(!out.with_file_name("prof.partial").exists());
    assert!(
        !out.join("perf.data").exists(),
        "perf.data is removed without --keep-perf-data"
    );
    // CPU per event: 40 M events, nanoseconds each.
    let csv = std::fs::read_to_string(out.join("summary.csv")).expect("summary");
    let channel = csv
        .lines()
        .find(|l| l.starts_with("channel,"))
        .expect("channel row");
    let ns: f64 = channel
        .rsplit(',')
        .next()
        .expect("ns")
        .parse()
        .expect("ns/event");
    assert!(ns > 0.0 && ns < 1000.0, "{channel}");
}

#[test]
fn children_of_the_command_are_followed() {
    if !perf_works() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("prof");
    let o = xorflow(&[
        "profile",
        "--out",
        out.to_str().expect("utf-8"),
        "--no-inline",
        "--call-graph",
        "fp",
        "--",
        &lab(),
        "bench",
        "chain",
        "--elements",
        "10000000",
        "--processes",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let procs = std::fs::read_to_string(out.join("processes.csv")).expect("processes.csv");
    let rows: Vec<&str> = procs.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "two xorflow-lab processes: {procs}");
    for r in &rows {
        let f: Vec<&str> = r.split(',').collect();
        assert_eq!(f[1], "xorflow-lab", "{r}");
        assert!(f[2].parse::<f64>().expect("cpu_s") > 0.0, "{r}");
        let sub = out.join("processes").join(format!("{}-xorflow-lab", f[0]));
        assert!(sub.join("summary.csv").is_file(), "{}", sub.display());
    }
}

#[test]
fn attached_process_cpu_covers_the_sampled_span() {
    if !perf_works() {
        return;
    }
    let mut bench = Command::new(lab())
        .args([
            "bench",
            "chain",
            "--elements",
            "2000000000",
            "--workers",
            "2",
        ])
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bench starts");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("prof");
    let pid = bench.id().to_string();
    let o = xorflow(&[
        "profile",
        "--out",
        out.to_str().expect("utf-8"),
        "--no-inline",
        "--pid",
        &pid,
        "--duration",
        "2s",
    ]);
    let _ = bench.kill();
    let _ = bench.wait();
    assert!(o.status.success(), "{}", text(&o));
    let procs = std::fs::read_to_string(out.join("processes.csv")).expect("processes.csv");
    let row: Vec<&str> = procs.lines().nth(1).expect("a row").split(',').collect();
    assert_eq!((row[0], row[3]), (pid.as_str(), "proc-stat"), "{procs}");
    // /proc's CPU between sampling on and off against the samples' own count (one per 1/99 s
    // of CPU: cpu-clock samples by CPU time, so they agree to a tick, measured 0.0-0.5 %).
    // perf takes a few hundred ms to attach, which must not count in the CPU: read at attach
    // instead of at sampling start, it was 4.8 % over.
    let cpu_s: f64 = row[2].parse().expect("cpu_s");
    let sampled_s = row[4].parse::<f64>().expect("samples") / 99.0;
    assert!(sampled_s > 1.0, "{procs}");
    assert!(
        (cpu_s / sampled_s - 1.0).abs() < 0.03,
        "cpu {cpu_s} s, sampled {sampled_s} s"
    );
}

#[test]
fn a_failing_command_is_reported_after_its_profile() {
    if !perf_works() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("prof");
    let busy = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exit 3";
    let o = xorflow(&[
        "profile",
        "--out",
        out.to_str().expect("utf-8"),
        "--no-inline",
        "--",
        "sh",
        "-c",
        busy,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the profiled command failed") && err.contains('3'),
        "{}",
        text(&o)
    );
    assert!(out.join("summary.csv").is_file());
}

#[test]
fn bad_usage_and_targets_exit_2_and_leave_no_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("prof");
    let out_s = out.to_str().expect("utf-8");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[task]]\nname = \"a\"\nkeywords = []\n").expect("write");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["profile", "--out", out_s], "nothing to profile"),
        (
            vec!["profile", "--out", out_s, "--pid", "1", "--", "true"],
            "not both",
        ),
        (
            vec![
                "profile",
                "--out",
                out_s,
                "--profile",
                bad.to_str().expect("utf-8"),
                "--",
                "true",
            ],
            "bad.toml line 3: task 'a' has no keywords",
        ),
        (
            vec![
                "profile",
                "--out",
                out_s,
                "--profile",
                "/nonexistent/p.toml",
                "--",
                "true",
            ],
            "cannot read the application profile '/nonexistent/p.toml'",
        ),
        (
            vec!["profile", "--out", out_s, "--pid", "4294967294"],
            "no process with pid 4294967294",
        ),
        (
            vec!["profile", "--out", out_s, "--", "/nonexistent/cmd"],
            "cannot run the command '/nonexistent/cmd'",
        ),
        (
            vec!["profile", "--out", out_s, "--", "no-such-command-xyz"],
            "not found on PATH",
        ),
        (
            vec![
                "profile",
                "--out",
                out_s,
                "--perf",
                "/nonexistent/perf",
                "--",
                "true",
            ],
            "cannot run '/nonexistent/perf'",
        ),
        (
            vec!["profile", "--out", out_s, "--frequency", "0", "--", "true"],
            "frequency",
        ),
    ];
    for (args, expect) in cases {
        let o = xorflow(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(expect),
            "{args:?}: expected '{expect}'\n{}",
            text(&o)
        );
        assert!(
            !out.exists() && !out.with_file_name("prof.partial").exists(),
            "{args:?} left a folder"
        );
    }
    // A perf the kernel does not let sample.
    let denied = dir.path().join("perf");
    std::fs::write(
        &denied,
        "#!/bin/sh\necho 'Error: Access to performance monitoring and observability operations is limited.' >&2\nexit 255\n",
    )
    .expect("write");
    std::fs::set_permissions(&denied, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let o = xorflow(&[
        "profile",
        "--out",
        out_s,
        "--perf",
        denied.to_str().expect("utf-8"),
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Access to performance monitoring") && err.contains("perf_event_paranoid is"),
        "{}",
        text(&o)
    );
    assert!(!out.exists() && !out.with_file_name("prof.partial").exists());
    std::fs::create_dir(&out).expect("mkdir");
    let o = xorflow(&["profile", "--out", out_s, "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already exists"),
        "{}",
        text(&o)
    );
}
