//! The cluster's options: how processes are launched and find each other (and the hostfile
//! they are read from), which threads read and write the connections, the injected delay and
//! the transport's clock, with their checks. What uses them is in `net/`: `net/cluster.rs`
//! launches, `net/outbox.rs` and `net/worker_reads.rs` move the frames, `net/clock_phase.rs`
//! aligns the clocks.

use super::delay::DelayConfig;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;
use xorflow_measure::clock::exchange::TickFn;
use xorflow_measure::clock::skew::Skew;

/// How the processes of a job are started and find each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// One process.
    Single,
    /// `processes` processes on loopback, launched by process 0.
    Local {
        /// Number of processes (at least 2).
        processes: usize,
    },
    /// Process `process` of the hosts listed in `hostfile`.
    Hosts {
        /// One `host:port` per process.
        hostfile: PathBuf,
        /// This process's index (line in the hostfile).
        process: usize,
    },
}

/// Largest frame a process accepts, bytes ([`ClusterConfig::max_frame_bytes`]).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Cluster knobs.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// How processes are started.
    pub launch: Launch,
    /// Shared secret every process must present in the handshake (hostfile runs; local runs make
    /// their own).
    pub token: Option<String>,
    /// A remote process that sends nothing for this long (not even a keep-alive) is declared dead.
    pub peer_timeout: Duration,
    /// Start-up bound: how long each start-up step may wait for the other processes (local
    /// children reporting their ports, hostfile names resolving, everyone connecting).
    pub startup_timeout: Duration,
    /// Largest frame accepted, bytes; a larger one closes the connection.
    pub max_frame_bytes: usize,
    /// Which thread writes frames to the connections (`--net-writes`, `outbox.rs`).
    pub net_writes: NetWrites,
    /// Which thread reads the connections (`--net-reads`, `worker_reads.rs`).
    pub net_reads: NetReads,
    /// Dedicated tracker processes: the last this many processes run no workers and host the
    /// tracker shards (shard k in tracker process k mod T). 0: shards live in worker processes.
    pub tracker_processes: usize,
    /// Environment variables process 0 of a local launch gives its children (the checkpoint a
    /// resumed job restores: `checkpoint/resume.rs`). Not part of the job's identity.
    pub child_env: Vec<(String, String)>,
    /// Clock-alignment pings per pair of processes and phase (the Cloudprofiler paper used 100,
    /// section 6.5); 0 exchanges no round trips and leaves the run without clock maps.
    pub clock_rounds: u32,
    /// Wide-area delay injected between processes (`--rtt`, `--rtt-topology`, `--delay-matrix`;
    /// `delay/mod.rs`).
    pub delay: DelayConfig,
    /// The clock the transport stamps with: `None` for this process's
    /// (`ClockSource::process`); tests give simulated processes their own.
    pub clock: Option<ClockSource>,
}

/// Which thread writes a process's frames to its connections (`--net-writes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NetWrites {
    /// A worker writes the frames of one iteration itself when they total at least
    /// `net/outbox.rs`'s `INLINE_BYTES`, and hands smaller bursts to the network thread: the sender's writes
    /// at high rates, the network thread's at low ones (docs/distributed.md, "Session 4").
    /// In a process whose only worker reads the connections itself (`--net-reads worker`,
    /// `net/worker_reads.rs`) it is [`NetWrites::Sender`]: the network thread has nothing else to
    /// do there, and a hand-off is one more wake-up per frame (docs/distributed.md,
    /// "Session 8").
    #[default]
    Adaptive,
    /// The thread that sends a frame always writes it (a worker: every frame of one iteration
    /// in one `writev`, at its end), unless frames are queued ahead of it; the network thread
    /// only writes what a full socket did not take. No hand-off, but a worker pays the socket's
    /// cost itself, and on loopback that includes the receiver's TCP processing.
    Sender,
    /// Every frame is handed to the network thread, which writes what is queued in one
    /// `writev`: a wake-up of that thread per burst of frames, and the workers never enter the
    /// kernel to send.
    NetworkThread,
}

/// Which thread reads a process's connections (`--net-reads`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NetReads {
    /// The network thread reads every connection and wakes the worker a frame is for.
    NetworkThread,
    /// Each connection is read by one of the process's workers, which waits on its sockets
    /// when idle (`net/worker_reads.rs`).
    #[default]
    Worker,
}

/// The clock a transport stamps with: this process's (`ClockSource::process`, `net/clock_phase.rs`) or, in tests,
/// a simulated one (several transports in one process, each with its own skew).
#[derive(Clone)]
pub struct ClockSource {
    /// Reads the clock, ticks.
    pub ticks: TickFn,
    /// Ticks per ns of that clock; `None`: this process's calibrated value, read after the run.
    pub ticks_per_ns: Option<f64>,
    /// The synthetic skew it has (reported with it).
    pub skew: Option<Skew>,
}

impl std::fmt::Debug for ClockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClockSource")
            .field("ticks_per_ns", &self.ticks_per_ns)
            .field("skew", &self.skew)
            .finish_non_exhaustive()
    }
}

/// Environment variable marking a child of a local launch (its process index).
pub const LOCAL_PROCESS_ENV: &str = "XORFLOW_LOCAL_PROCESS";
/// Environment variable carrying the cluster token.
pub const TOKEN_ENV: &str = "XORFLOW_CLUSTER_TOKEN";

impl ClusterConfig {
    /// True in process 0 of the job (a single process, the process that launches the local
    /// ones, or index 0 of a hostfile), which writes the outputs and commits checkpoints.
    pub fn is_process_zero(&self) -> bool {
        match &self.launch {
            Launch::Single => true,
            Launch::Local { .. } => !is_local_child(),
            Launch::Hosts { process, .. } => *process == 0,
        }
    }

    /// Processes of the job, dedicated tracker processes included (what
    /// [`Resolved::processes`] will say; an unreadable hostfile counts as 1).
    pub fn total_processes(&self) -> usize {
        match &self.launch {
            Launch::Single => 1,
            _ => self.launch_processes() + self.tracker_processes,
        }
    }

    /// Number of *worker* processes the launch asks for (dedicated tracker processes excluded;
    /// an unreadable hostfile counts as 1 here, the launch reports the error).
    pub fn launch_processes(&self) -> usize {
        match &self.launch {
            Launch::Single => 1,
            Launch::Local { processes } => *processes,
            Launch::Hosts { hostfile, .. } => read_hostfile(hostfile)
                .map_or(1, |a| a.len().saturating_sub(self.tracker_processes).max(1)),
        }
    }

    /// The cluster token of a hostfile run: `--cluster-token`, else the environment variable
    /// [`TOKEN_ENV`]; `None` when neither gives a non-empty one.
    pub fn token(&self) -> Option<String> {
        self.token
            .clone()
            .or_else(|| std::env::var(TOKEN_ENV).ok())
            .filter(|t| !t.is_empty())
    }

    /// Reads and checks the hostfile of a hostfile launch (`None` for other launches): every
    /// line well formed, no address listed twice, this process's index listed and at least one
    /// worker process besides the tracker processes. Names are not looked up here (see
    /// [`resolve`]: a name may resolve only once its host is up).
    ///
    /// # Errors
    /// An unreadable or malformed file, or one too short, naming the file.
    pub fn check_hostfile(&self) -> Result<Option<Vec<HostEntry>>, String> {
        let Launch::Hosts { hostfile, process } = &self.launch else {
            return Ok(None);
        };
        let hosts = read_hostfile(hostfile)?;
        if hosts.len() <= self.tracker_processes {
            return Err(format!(
                "hostfile '{}' lists {} hosts, but --tracker-processes {} leaves no worker \
                 process (its last lines are the tracker processes)",
                hostfile.display(),
                hosts.len(),
                self.tracker_processes
            ));
        }
        if *process >= hosts.len() {
            return Err(format!(
                "--process {process} but hostfile '{}' lists {} hosts",
                hostfile.display(),
                hosts.len()
            ));
        }
        Ok(Some(hosts))
    }

    /// Checks the knobs, the hostfile and that a hostfile run has a token.
    ///
    /// # Errors
    /// A message naming the invalid knob.
    pub fn validate(&self) -> Result<(), String> {
        if let Launch::Local { processes } = self.launch {
            let total = processes + self.tracker_processes;
            if processes == 0 || !(2..=64).contains(&total) {
                return Err(format!(
                    "--processes plus --tracker-processes must be between 2 and 64 with at \
                     least one worker process, got {processes} + {}",
                    self.tracker_processes
                ));
            }
        }
        if self.launch == Launch::Single && self.tracker_processes > 0 {
            return Err("--tracker-processes needs a multi-process launch".into());
        }
        if matches!(self.launch, Launch::Hosts { .. }) {
            self.check_hostfile()?;
            if self.token().is_none() {
                return Err(format!(
                    "a hostfile run needs a cluster token (--cluster-token or {TOKEN_ENV})"
                ));
            }
        }
        if self.peer_timeout < Duration::from_millis(100) {
            return Err("--peer-timeout must be at least 100ms".into());
        }
        if self.startup_timeout < Duration::from_millis(100) {
            return Err("--startup-timeout must be at least 100ms".into());
        }
        if self.delay.is_none() && !self.delay.jitter.is_zero() {
            return Err(
                "--rtt-jitter needs a delay to spread (--rtt, --rtt-topology or --delay-matrix)"
                    .into(),
            );
        }
        if !self.delay.is_none() {
            if self.launch == Launch::Single {
                return Err(
                    "a delay (--rtt, --rtt-topology, --delay-matrix) acts between processes: \
                     it needs --processes or --hostfile"
                        .into(),
                );
            }
            self.delay.resolve(self.total_processes())?;
        }
        if self.max_frame_bytes < 1024 {
            return Err("max frame size must be at least 1024 bytes".into());
        }
        Ok(())
    }
}

/// One line of a hostfile: where a process listens, as written (a name is looked up at launch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// Line in the file, from 1.
    pub line: usize,
    /// Host name or IP address (an IPv6 address without its brackets).
    pub host: String,
    /// Port.
    pub port: u16,
}

impl std::fmt::Display for HostEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl HostEntry {
    /// Looks the host up (the first address it resolves to).
    ///
    /// # Errors
    /// The resolver's error, or "no address" when it returned none.
    pub fn lookup(&self) -> std::io::Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))
    }
}

/// Parses one hostfile entry, `host:port` or `[ipv6]:port`; says what is wrong otherwise.
pub(crate) fn parse_host(text: &str) -> Result<(String, u16), String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or("no port (expected host:port)")?;
    let host = match host.strip_prefix('[') {
        Some(h) => h
            .strip_suffix(']')
            .ok_or("unclosed '[' (expected [ipv6]:port)")?,
        None if host.contains(':') => {
            return Err("an IPv6 address needs brackets (expected [ipv6]:port)".into())
        }
        None => host,
    };
    if host.is_empty() {
        return Err("no host (expected host:port)".into());
    }
    if host.chars().any(char::is_whitespace) {
        return Err("a host name has no spaces (expected host:port)".into());
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("port '{port}' is not a number between 1 and 65535"))?;
    if port == 0 {
        return Err("port 0 is not a fixed port (every process needs a known one)".into());
    }
    Ok((host.to_string(), port))
}

/// Reads a hostfile: one `host:port` per process; `#` starts a comment. Names are not looked
/// up (see [`resolve_hosts`]).
///
/// # Errors
/// A missing or unreadable file, a malformed line, an address listed twice, or no hosts, naming
/// file and lines.
pub fn read_hostfile(path: &Path) -> Result<Vec<HostEntry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read hostfile '{}': {e}", path.display()))?;
    let mut hosts: Vec<HostEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let entry = line.split('#').next().unwrap_or("").trim();
        if entry.is_empty() {
            continue;
        }
        let (host, port) = parse_host(entry).map_err(|e| {
            format!(
                "hostfile '{}' line {}: '{entry}': {e}",
                path.display(),
                i + 1
            )
        })?;
        let entry = HostEntry {
            line: i + 1,
            host,
            port,
        };
        if let Some(first) = hosts
            .iter()
            .find(|h| h.port == entry.port && h.host.eq_ignore_ascii_case(&entry.host))
        {
            return Err(format!(
                "hostfile '{}' lists {entry} twice (lines {} and {}): every process needs its \
                 own address",
                path.display(),
                first.line,
                entry.line
            ));
        }
        hosts.push(entry);
    }
    if hosts.is_empty() {
        return Err(format!("hostfile '{}' lists no hosts", path.display()));
    }
    Ok(hosts)
}

/// True when this process is a child of a local launch (it should stay quiet on stdout).
pub fn is_local_child() -> bool {
    std::env::var_os(LOCAL_PROCESS_ENV).is_some()
}
