//! Processes and ports, for the tests that run clusters and kill their processes (Linux `/proc`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

/// `n` distinct free loopback ports (bound together, then released).
pub fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port"))
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// True while process `pid` exists and is not a zombie.
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The pids of the direct children of `parent` whose environment holds `var=value`.
pub fn children_with_env(parent: u32, var: &str, value: &str) -> Vec<u32> {
    let want = format!("{var}={value}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Waits until something listens on `addr` (true) or `within` passed (false). The probe connects
/// and leaves without a word, so the process refuses it as it would any stranger.
pub fn wait_listening(addr: SocketAddr, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits (up to 60 s) until the checkpoint directory `dir` holds a checkpoint (a file in
/// `dir/manifests`): kill moments count from there, so a slow start (the input is read first,
/// tests run side by side) does not turn a kill into one before any checkpoint.
pub fn wait_first_checkpoint(dir: &Path) {
    let t0 = Instant::now();
    while std::fs::read_dir(dir.join("manifests")).map_or(true, |mut d| d.next().is_none()) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no checkpoint in {} after 60 s",
            dir.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// The pid of process 0's local process `index`, waiting (up to 30 s) for one not in `killed`
/// (after a kill, the restarted attempt's).
pub fn live_child(parent: u32, index: usize, killed: &[u32]) -> u32 {
    let t0 = Instant::now();
    loop {
        let pids = children_with_env(parent, "XORFLOW_LOCAL_PROCESS", &index.to_string());
        if let Some(&p) = pids.iter().find(|p| !killed.contains(p) && running(**p)) {
            return p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "process {index} of {parent} never (re)started in 30 s (process {parent} {}; \
             local processes now: {:?})",
            if running(parent) {
                "still runs"
            } else {
                "has ended"
            },
            children_with_env(parent, "XORFLOW_LOCAL_PROCESS", &index.to_string())
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// kill -9 `pid` (through kill(1): the tests need no libc).
pub fn kill9(pid: u32) {
    let s = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(s.success(), "kill -9 {pid} failed");
}

/// Waits for `child` to end and returns its output; past `within` it is killed and the test
/// fails (the run hung).
pub fn wait_output(mut child: std::process::Child, within: Duration) -> std::process::Output {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("the run hung: {:?}", child.wait_with_output());
}

/// Runs `case` on each of `cases` (with its index), two at a time, each lane in order; a
/// panic in either fails the caller with that panic. For scenarios that mostly wait (paced
/// runs, kills at chosen moments): one at a time, a test of several left a core idle.
pub fn two_at_a_time<T: Sync>(cases: &[T], case: impl Fn(usize, &T) + Sync) {
    thread::scope(|s| {
        let case = &case;
        let lanes: Vec<_> = (0..2)
            .map(|lane| {
                s.spawn(move || {
                    for (i, c) in cases.iter().enumerate().filter(|(i, _)| i % 2 == lane) {
                        case(i, c);
                    }
                })
            })
            .collect();
        for lane in lanes {
            if let Err(panic) = lane.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}
