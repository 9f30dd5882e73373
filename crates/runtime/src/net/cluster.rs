//! Cluster configuration and launch: which process this is, where the others listen, and the
//! embedded local launch.
//!
//! Three ways to run (timely's `-n/-p/-h` style for real hosts):
//! * one process (the default);
//! * `--processes N` on one machine: process 0 re-executes the current program N - 1 times with the
//!   same arguments (environment `XORFLOW_LOCAL_PROCESS=i` marks a child), every process listens on
//!   an ephemeral loopback port, and process 0 collects the ports over the children's stdout and
//!   hands out the address table over their stdin; a random cluster token comes with it;
//! * `--hostfile FILE --process I` on real hosts: line `i` of the file (`host:port`; `#` comments and
//!   blank lines skipped) is process `i`'s listening address; every host runs the same command with
//!   its own index and the same token (`--cluster-token` or `XORFLOW_CLUSTER_TOKEN`).
//!
//! With `tracker_processes = T > 0` the last T processes (the last T hostfile lines; in a local
//! launch T processes beyond the N worker processes) run no workers: they host the tracker shards
//! (docs/design.md, requirement 6: the tracker "in a worker process or in dedicated processes").
//!
//! Every process must build the same dataflow; the handshake's job id checks it.

use crate::error::ClusterError;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Prefix of the line a local child prints with its listening port.
const LISTEN_LINE: &str = "XORFLOW-LISTEN ";

pub use crate::config::cluster::{
    is_local_child, read_hostfile, ClusterConfig, HostEntry, Launch, LOCAL_PROCESS_ENV,
    MAX_FRAME_BYTES, TOKEN_ENV,
};

/// A launched (or joined) cluster as seen by this process.
pub struct Resolved {
    /// This process's index.
    pub process: usize,
    /// Listening address per process.
    pub addrs: Vec<SocketAddr>,
    /// This process's listening socket (`None` for a single process).
    pub listener: Option<TcpListener>,
    /// The token every handshake must carry.
    pub token: String,
    /// Children started by a local launch (process 0 only).
    pub children: Vec<Child>,
}

impl Resolved {
    /// Number of processes.
    pub fn processes(&self) -> usize {
        self.addrs.len().max(1)
    }
}

/// Looks up every hostfile entry, retrying the names that do not resolve yet (a host still
/// starting) until `timeout` has passed.
///
/// # Errors
/// A name still unresolved at the deadline, with the resolver's error, or two entries resolving
/// to the same address; naming the file and lines.
pub fn resolve_hosts(
    path: &Path,
    hosts: &[HostEntry],
    timeout: Duration,
) -> Result<Vec<SocketAddr>, String> {
    resolve_hosts_with(path, hosts, timeout, HostEntry::lookup)
}

/// [`resolve_hosts`] with the lookup given (tests use one that fails a few times first).
fn resolve_hosts_with(
    path: &Path,
    hosts: &[HostEntry],
    timeout: Duration,
    mut lookup: impl FnMut(&HostEntry) -> std::io::Result<SocketAddr>,
) -> Result<Vec<SocketAddr>, String> {
    let deadline = Instant::now() + timeout;
    let mut addrs: Vec<Option<SocketAddr>> = vec![None; hosts.len()];
    let mut warned = vec![false; hosts.len()];
    let mut pause = Duration::from_millis(50);
    loop {
        let mut failed = None;
        for (i, h) in hosts.iter().enumerate() {
            if addrs[i].is_some() {
                continue;
            }
            match lookup(h) {
                Ok(a) => addrs[i] = Some(a),
                Err(e) => {
                    if !warned[i] {
                        warned[i] = true;
                        tracing::warn!(
                            "hostfile '{}' line {}: {h} does not resolve yet ({e}); retrying \
                             for up to {timeout:?}",
                            path.display(),
                            h.line
                        );
                    }
                    failed.get_or_insert((h, e));
                }
            }
        }
        let Some((h, e)) = failed else {
            break;
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "hostfile '{}' line {}: cannot resolve {h} within the start-up timeout \
                 ({timeout:?}): {e}",
                path.display(),
                h.line
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_secs(1));
    }
    let addrs: Vec<SocketAddr> = addrs.into_iter().flatten().collect();
    for (j, a) in addrs.iter().enumerate() {
        if let Some(i) = addrs[..j].iter().position(|b| b == a) {
            return Err(format!(
                "hostfile '{}': {} (line {}) and {} (line {}) are the same address {a}: every \
                 process needs its own address",
                path.display(),
                hosts[i],
                hosts[i].line,
                hosts[j],
                hosts[j].line
            ));
        }
    }
    Ok(addrs)
}

/// Starts or joins the cluster described by `cfg`.
///
/// # Errors
/// What failed, naming the process, file or address: [`ClusterError::Setup`] for a hostfile
/// cluster that cannot be set up as configured; for a local launch, [`ClusterError::Start`]
/// when its processes cannot be started and [`ClusterError::Connect`] when they do not report
/// or the launching process cannot be joined.
pub fn resolve(cfg: &ClusterConfig) -> Result<Resolved, ClusterError> {
    match &cfg.launch {
        Launch::Single => Ok(Resolved {
            process: 0,
            addrs: Vec::new(),
            listener: None,
            token: String::new(),
            children: Vec::new(),
        }),
        Launch::Hosts { hostfile, process } => {
            join_hosts(cfg, hostfile, *process).map_err(ClusterError::Setup)
        }
        Launch::Local { processes } => {
            let total = processes + cfg.tracker_processes;
            match std::env::var(LOCAL_PROCESS_ENV) {
                Ok(i) => join_local(&i, total).map_err(ClusterError::Connect),
                Err(_) => launch_local(total, cfg.startup_timeout, &cfg.child_env),
            }
        }
    }
}

/// Process `process` of a hostfile cluster: its token, every host's address, and a listener on
/// its own.
fn join_hosts(cfg: &ClusterConfig, hostfile: &Path, process: usize) -> Result<Resolved, String> {
    let hosts = cfg.check_hostfile()?.expect("a hostfile launch");
    let token = cfg.token().ok_or_else(|| {
        format!("a hostfile run needs a cluster token (--cluster-token or {TOKEN_ENV})")
    })?;
    let addrs = resolve_hosts(hostfile, &hosts, cfg.startup_timeout)?;
    let listener = TcpListener::bind(addrs[process]).map_err(|e| {
        format!(
            "process {process}: cannot listen on {} ({}): {e}",
            hosts[process], addrs[process]
        )
    })?;
    Ok(Resolved {
        process,
        addrs,
        listener: Some(listener),
        token,
        children: Vec::new(),
    })
}

fn bind_loopback() -> Result<TcpListener, String> {
    TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot listen on loopback: {e}"))
}

/// Process 0 of a local launch: start the children, collect their ports (each must report
/// within `timeout`) and hand out the address table. On failure every child is killed.
fn launch_local(
    n: usize,
    timeout: Duration,
    env: &[(String, String)],
) -> Result<Resolved, ClusterError> {
    let listener = bind_loopback().map_err(ClusterError::Start)?;
    let local = listener.local_addr();
    let mut addrs = vec![local.map_err(|e| ClusterError::Start(e.to_string()))?];
    let token = format!(
        "{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    );
    let mut children = Vec::new();
    let ports = spawn_children(n, &token, env, &mut children)
        .map_err(ClusterError::Start)
        .and_then(|(ports, started)| {
            collect_ports(&ports, &children, started + timeout, timeout)
                .map_err(ClusterError::Connect)
        });
    let ports = match ports {
        Ok(p) => p,
        Err(e) => {
            kill_children(&mut children);
            return Err(e);
        }
    };
    addrs.extend(ports.iter().map(|&p| SocketAddr::from(([127, 0, 0, 1], p))));
    let table = addrs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    for (i, c) in children.iter_mut().enumerate() {
        let mut stdin = c.stdin.take().expect("piped stdin");
        if writeln!(stdin, "{table}").is_err() {
            kill_children(&mut children);
            let gone = format!("process {} exited during start", i + 1);
            return Err(ClusterError::Connect(gone));
        }
    }
    Ok(Resolved {
        process: 0,
        addrs,
        listener: Some(listener),
        token,
        children,
    })
}

/// What a child's stdout reader reports: its index (from 1) and its first line, or `None` when
/// the pipe closed or failed first.
type PortLine = (usize, Option<String>);

/// Starts children 1..n, each with a thread reading its stdout: the first line goes to the
/// returned channel, the rest to our stderr (so the pipe never fills). Returns the channel and
/// when the last child started.
fn spawn_children(
    n: usize,
    token: &str,
    env: &[(String, String)],
    children: &mut Vec<Child>,
) -> Result<(std::sync::mpsc::Receiver<PortLine>, Instant), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 1..n {
        let mut child = Command::new(&exe)
            .args(std::env::args_os().skip(1))
            .env(LOCAL_PROCESS_ENV, i.to_string())
            .env(TOKEN_ENV, token)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start process {i} ('{}'): {e}", exe.display()))?;
        let out = BufReader::new(child.stdout.take().expect("piped stdout"));
        children.push(child);
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut lines = out.lines();
            let _ = tx.send((i, lines.next().and_then(Result::ok)));
            for line in lines.map_while(Result::ok) {
                // Not eprintln!: it panics when our stderr is closed.
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        });
    }
    Ok((rx, Instant::now()))
}

/// Waits for every child's port line until `deadline`; the error names the first child that
/// failed, or those still silent at the deadline with their pids.
fn collect_ports(
    lines: &std::sync::mpsc::Receiver<PortLine>,
    children: &[Child],
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<u16>, String> {
    let mut ports: Vec<Option<u16>> = vec![None; children.len()];
    while ports.iter().any(Option::is_none) {
        let wait = deadline.saturating_duration_since(Instant::now());
        let Ok((i, line)) = lines.recv_timeout(wait) else {
            let silent: Vec<String> = (0..children.len())
                .filter(|&k| ports[k].is_none())
                .map(|k| format!("process {} (pid {})", k + 1, children[k].id()))
                .collect();
            return Err(format!(
                "{} did not report a listening port within the start-up timeout ({timeout:?}): \
                 stopped or hung at start",
                silent.join(", ")
            ));
        };
        let line = line.unwrap_or_default();
        let port = line
            .trim()
            .strip_prefix(LISTEN_LINE)
            .and_then(|p| p.parse::<u16>().ok());
        match port {
            Some(p) => ports[i - 1] = Some(p),
            None => {
                return Err(format!(
                    "process {i} (pid {}) exited or failed before listening (said: '{}')",
                    children[i - 1].id(),
                    line.trim()
                ))
            }
        }
    }
    Ok(ports.into_iter().flatten().collect())
}

/// Kills and reaps the children of a failed local launch (a stopped child is killed as well).
fn kill_children(children: &mut [Child]) {
    for c in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A child of a local launch: report the port, read the table.
fn join_local(index: &str, n: usize) -> Result<Resolved, String> {
    let process: usize = index
        .parse()
        .ok()
        .filter(|&i| i > 0 && i < n)
        .ok_or_else(|| format!("{LOCAL_PROCESS_ENV}={index} is not a process index below {n}"))?;
    let listener = bind_loopback()?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    // Not println!: it panics when process 0 is already gone.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{LISTEN_LINE}{port}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("process {process}: cannot report the port to process 0: {e}"))?;
    drop(out);
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("process {process}: no address table from process 0: {e}"))?;
    let addrs: Vec<SocketAddr> = line
        .split_whitespace()
        .map(|a| a.parse::<SocketAddr>())
        .collect::<Result<_, _>>()
        .map_err(|e| {
            format!(
                "process {process}: bad address table '{}': {e}",
                line.trim()
            )
        })?;
    if addrs.len() != n {
        return Err(format!(
            "process {process}: address table lists {} processes, expected {n}",
            addrs.len()
        ));
    }
    let token = std::env::var(TOKEN_ENV).map_err(|_| format!("{TOKEN_ENV} not set"))?;
    Ok(Resolved {
        process,
        addrs,
        listener: Some(listener),
        token,
        children: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cluster::parse_host;

    #[test]
    fn hostfile_parsing_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts");
        std::fs::write(&p, "# cluster\n10.0.0.1:7000\n\n10.0.0.2:7000  # second\n").unwrap();
        let a = read_hostfile(&p).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].to_string(), "10.0.0.2:7000");
        assert_eq!(a[1].line, 4);
        std::fs::write(&p, "10.0.0.1:7000\nnot-an-address\n").unwrap();
        let e = read_hostfile(&p).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        std::fs::write(&p, "# nothing\n").unwrap();
        assert!(read_hostfile(&p).unwrap_err().contains("no hosts"));
        assert!(read_hostfile(&dir.path().join("missing"))
            .unwrap_err()
            .contains("cannot read hostfile"));
    }

    #[test]
    fn defect11_malformed_entries_say_what_is_wrong() {
        for (entry, says) in [
            ("pod-1", "no port"),
            ("pod-1:", "port ''"),
            ("pod-1:70000", "port '70000'"),
            ("pod-1:http", "port 'http'"),
            ("pod-1:0", "port 0"),
            (":7000", "no host"),
            ("::1:7000", "brackets"),
            ("[::1:7000", "unclosed"),
        ] {
            let e = parse_host(entry).unwrap_err();
            assert!(e.contains(says), "{entry}: {e}");
        }
        assert_eq!(parse_host("[::1]:7000"), Ok(("::1".into(), 7000)));
        assert_eq!(
            parse_host("pod-1.xorflow.svc:7000"),
            Ok(("pod-1.xorflow.svc".into(), 7000))
        );
    }

    fn entries(names: &[&str]) -> Vec<HostEntry> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| HostEntry {
                line: i + 1,
                host: (*n).into(),
                port: 7000,
            })
            .collect()
    }

    #[test]
    fn defect11_a_name_resolving_late_is_retried() {
        let hosts = entries(&["pod-0", "pod-1"]);
        let mut failures = 0;
        let addrs = resolve_hosts_with(Path::new("h"), &hosts, Duration::from_secs(10), |h| {
            if h.host == "pod-1" && failures < 3 {
                failures += 1;
                return Err(std::io::Error::other("Name or service not known"));
            }
            Ok(SocketAddr::from(([10, 0, 0, h.line as u8], h.port)))
        })
        .unwrap();
        assert_eq!(failures, 3);
        assert_eq!(addrs[1].to_string(), "10.0.0.2:7000");
    }

    #[test]
    fn defect11_a_name_never_resolving_reports_the_resolver_error() {
        let hosts = entries(&["pod-0", "pod-1"]);
        let t0 = Instant::now();
        let e = resolve_hosts_with(Path::new("h"), &hosts, Duration::from_millis(300), |h| {
            if h.host == "pod-1" {
                return Err(std::io::Error::other("Name or service not known"));
            }
            Ok(SocketAddr::from(([10, 0, 0, 1], h.port)))
        })
        .unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(300));
        assert!(
            e.contains("line 2")
                && e.contains("cannot resolve pod-1:7000")
                && e.contains("Name or service not known"),
            "{e}"
        );
    }

    #[test]
    fn defect10_an_address_listed_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts");
        std::fs::write(&p, "pod-0:7000\npod-1:7000\nPOD-1:7000\n").unwrap();
        let e = read_hostfile(&p).unwrap_err();
        assert!(e.contains("twice (lines 2 and 3)"), "{e}");
        // Two names of one address are found once they resolve.
        let hosts = entries(&["localhost", "127.0.0.1"]);
        let e = resolve_hosts_with(&p, &hosts, Duration::from_secs(1), |h| {
            Ok(SocketAddr::from(([127, 0, 0, 1], h.port)))
        })
        .unwrap_err();
        assert!(e.contains("same address 127.0.0.1:7000"), "{e}");
    }

    #[test]
    fn defect10_a_hostfile_run_needs_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts");
        std::fs::write(&p, "127.0.0.1:7000\n127.0.0.1:7001\n").unwrap();
        let mut cfg = ClusterConfig {
            launch: Launch::Hosts {
                hostfile: p,
                process: 0,
            },
            token: Some("secret".into()),
            ..ClusterConfig::default()
        };
        cfg.validate().unwrap();
        if std::env::var_os(TOKEN_ENV).is_none() {
            cfg.token = None;
            assert!(cfg.validate().unwrap_err().contains("cluster token"));
        }
        cfg.token = Some(String::new());
        if std::env::var_os(TOKEN_ENV).is_none() {
            assert!(cfg.validate().unwrap_err().contains("cluster token"));
        }
    }
}
