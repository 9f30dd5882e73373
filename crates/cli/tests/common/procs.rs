//! Processes and ports, for the tests that run clusters and kill their processes (Linux `/proc`).

use std::net::{SocketAddr, TcpListener, TcpStream};
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
