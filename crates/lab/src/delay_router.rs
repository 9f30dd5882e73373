//! `xorflow-lab delay-router`: network namespaces joined by a user-space router that delays every IP
//! packet by its pair's one-way delay (`crates/runtime/src/net/delay/router.rs`; docs/wan.md,
//! "Processes in network namespaces"). Any program run with `ip netns exec NS` in them (xorflow
//! processes with a hostfile, Flink or Storm daemons) sees the delay, kernel TCP included.
//!
//! Set-up uses the `ip` command (iproute2) and needs root. Exit codes: 0 after a clean stop
//! (SIGINT or SIGTERM, or the parent's exit with `--exit-with-parent`), 2 on bad options or
//! namespaces that already exist, 77 when namespaces or TUN devices cannot be created here (the
//! reason on a line starting with "skipped: ", as `scripts/netns-cluster.sh` does).

use clap::Args;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;
use xorflow_cli::outcome::Outcome;
use xorflow_runtime::measure::clock;
use xorflow_runtime::net::delay::router::{DelayRouter, MAX_PACKET, QUEUE_PACKETS};
use xorflow_runtime::net::delay::tun::TunDevice;
use xorflow_runtime::net::delay::{DelayConfig, Topology};

use crate::congestion;

/// Most hosts the router joins (one /24, and a thread per ordered pair).
const MAX_HOSTS: usize = 32;

/// Options of `xorflow-lab delay-router`.
#[derive(Args)]
#[command(
    after_help = "Example: two hosts 40 ms apart, a job's process 0 and 1 in them\n  \
                  xorflow-lab delay-router --hosts 2 --rtt 40ms --prefix xfw &\n  \
                  ip netns exec xfw0 xorflow-lab bench ysb --hostfile hosts --process 0 ...\n\n\
                  Host i is namespace PREFIXi with address SUBNET.(i+1). The router prints \
                  \"ready PREFIX0=ADDR ...\" on stdout once the namespaces are up, runs until \
                  SIGINT or SIGTERM, then kills what still runs in them and deletes them."
)]
pub struct DelayRouterArgs {
    /// Namespaces (hosts) to create and join, 2-32.
    #[arg(long)]
    hosts: usize,
    /// Round-trip time between every pair of hosts, e.g. 40ms (half each way).
    #[arg(long, value_parser = humantime::parse_duration,
          conflicts_with_all = ["rtt_topology", "delay_matrix"])]
    rtt: Option<Duration>,
    /// The wide-area paper's city sets: host i in city i of eu, us or global (at most 8 hosts).
    #[arg(long, conflicts_with = "delay_matrix")]
    rtt_topology: Option<Topology>,
    /// Round-trip times per pair from FILE (the format of the jobs' --delay-matrix).
    #[arg(long, value_name = "FILE")]
    delay_matrix: Option<PathBuf>,
    /// Spread of every pair's RTT: each packet's from [RTT - J, RTT + J], order kept.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    rtt_jitter: Duration,
    /// Namespace names: PREFIX0, PREFIX1, ... (the TUN devices are PREFIXt0, ... before they
    /// move in).
    #[arg(long, default_value = "xfw")]
    prefix: String,
    /// The hosts' /24, as its first three octets.
    #[arg(long, default_value = "10.78.0")]
    subnet: String,
    /// The devices' MTU, bytes (larger: fewer packets for the router to move).
    #[arg(long, default_value_t = 16_000)]
    mtu: usize,
    /// TCP congestion control in every namespace (`net.ipv4.tcp_congestion_control`): an
    /// algorithm the kernel allows in namespaces, `inherit` for what a new namespace gets from
    /// the host, or `auto`: Linux's default, cubic, where namespaces may use it, else the host's
    /// (named on the start-up line). A host set to BBR hands it to its namespaces, and BBR's
    /// ProbeRTT (every 10 s, 4 packets in flight for 200 ms and a round trip) held a YSB source
    /// back by 50 ms at 100 ms RTT where cubic held it back by 5 (docs/wan.md, "Congestion
    /// control").
    #[arg(long, default_value = congestion::AUTO, value_name = "ALGORITHM")]
    tcp_congestion: String,
    /// Stop (and clean up) when the process that started the router exits.
    #[arg(long)]
    exit_with_parent: bool,
}

/// A failure: its outcome (bad options 2, skipped 77, failed 1) and what to print.
struct Fail(Outcome, String);

fn bad(msg: String) -> Fail {
    Fail(Outcome::Config, msg)
}

impl DelayRouterArgs {
    fn subnet(&self) -> Result<[u8; 3], Fail> {
        let parts: Vec<Option<u8>> = self.subnet.split('.').map(|p| p.parse().ok()).collect();
        match parts[..] {
            [Some(a), Some(b), Some(c)] => Ok([a, b, c]),
            _ => Err(bad(format!(
                "--subnet '{}': expected the first three octets of a /24, e.g. 10.78.0",
                self.subnet
            ))),
        }
    }

    fn check(&self) -> Result<(), Fail> {
        if !(2..=MAX_HOSTS).contains(&self.hosts) {
            return Err(bad(format!(
                "--hosts {} is not in 2-{MAX_HOSTS}",
                self.hosts
            )));
        }
        let name_ok = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        // The device name PREFIXtNN must fit the kernel's 15 bytes.
        if self.prefix.is_empty() || !name_ok(&self.prefix) || self.prefix.len() > 12 {
            return Err(bad(format!(
                "--prefix '{}': 1-12 letters, digits or '-'",
                self.prefix
            )));
        }
        let algorithm_ok =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !algorithm_ok(&self.tcp_congestion) {
            return Err(bad(format!(
                "--tcp-congestion '{}': a congestion control's name (cubic, bbr, reno, ...) or \
                 inherit",
                self.tcp_congestion
            )));
        }
        congestion::check(&self.tcp_congestion).map_err(bad)?;
        if !(576..MAX_PACKET).contains(&self.mtu) {
            return Err(bad(format!(
                "--mtu {} is not in 576-{}",
                self.mtu,
                MAX_PACKET - 1
            )));
        }
        Ok(())
    }

    fn delay(&self) -> DelayConfig {
        DelayConfig::of_options(
            self.rtt,
            self.rtt_topology,
            self.delay_matrix.as_deref(),
            self.rtt_jitter,
        )
    }

    fn namespace(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }
}

/// Runs `ip ARGS`; its stderr in the error.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run 'ip': {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "'ip {}' failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Kills what runs in namespace `ns` and deletes it.
fn delete_namespace(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<libc::pid_t>() {
                // SAFETY: kill takes no memory; the pid came from the namespace's own list.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    let _ = ip(&["netns", "del", ns]);
}

/// The namespaces made so far, deleted when this is dropped (on every way out).
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            delete_namespace(ns);
        }
    }
}

/// Makes host `i`: its namespace, its device moved in, addressed and up.
fn make_host(
    a: &DelayRouterArgs,
    i: usize,
    subnet: [u8; 3],
    made: &mut Namespaces,
) -> Result<TunDevice, Fail> {
    let skip = |e: String| Fail(Outcome::Unsupported, format!("skipped: {e}"));
    let ns = a.namespace(i);
    ip(&["netns", "add", &ns]).map_err(skip)?;
    made.0.push(ns.clone());
    let dev = TunDevice::create(&format!("{}t{i}", a.prefix)).map_err(|e| skip(e.to_string()))?;
    let addr = format!("{}.{}.{}.{}/24", subnet[0], subnet[1], subnet[2], i + 1);
    let mtu = a.mtu.to_string();
    ip(&["link", "set", dev.name(), "netns", &ns]).map_err(skip)?;
    ip(&["-n", &ns, "link", "set", "lo", "up"]).map_err(skip)?;
    ip(&["-n", &ns, "addr", "add", &addr, "dev", dev.name()]).map_err(skip)?;
    // The device's queue holds what a host sent until the router reads it. Linux's 500 packets
    // overflowed (TUN tx_dropped, thousands in a run, each a TCP retransmission) when the
    // router's reader thread waited for a core among 4 processes on 2; a router's input buffer
    // is deep, as the pairs' queues here are (QUEUE_PACKETS).
    let queue = QUEUE_PACKETS.to_string();
    ip(&["-n", &ns, "link", "set", dev.name(), "txqueuelen", &queue]).map_err(skip)?;
    ip(&["-n", &ns, "link", "set", dev.name(), "mtu", &mtu, "up"]).map_err(skip)?;
    set_congestion(&ns, &a.tcp_congestion).map_err(bad)?;
    Ok(dev)
}

/// Sets namespace `ns`'s TCP congestion control as `--tcp-congestion` asks (`inherit`, and `auto`
/// where cubic is not allowed, leave it).
fn set_congestion(ns: &str, asked: &str) -> Result<(), String> {
    let Some(algorithm) = congestion::to_set(asked) else {
        return Ok(());
    };
    let written = in_namespace(ns, {
        let algorithm = algorithm.clone();
        move || std::fs::write(CONGESTION, algorithm)
    })?;
    written.map_err(|e| {
        format!(
            "--tcp-congestion {algorithm}: namespace {ns} refused it ({e}); {}",
            congestion::refusal(&algorithm)
        )
    })
}

/// The sysctl `net.ipv4.tcp_congestion_control`, per network namespace.
const CONGESTION: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// Runs `f` on a thread that has entered namespace `ns` (`/proc/sys/net` there is the
/// namespace's).
fn in_namespace<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let path = format!("/run/netns/{ns}");
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread only, with a namespace file held open.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
        }
        Ok(f())
    })
    .join()
    .map_err(|_| "the namespace thread panicked".to_string())?
}

/// The congestion control namespace `ns` uses, as its kernel says (for the start-up line).
fn congestion_of(ns: &str) -> String {
    in_namespace(ns, || std::fs::read_to_string(CONGESTION))
        .ok()
        .and_then(Result::ok)
        .map_or_else(|| "unknown".into(), |s| s.trim().to_string())
}

fn serve(a: &DelayRouterArgs) -> Result<(), Fail> {
    a.check()?;
    let subnet = a.subnet()?;
    let delay = a.delay();
    let matrix = match delay.resolve(a.hosts).map_err(bad)? {
        Some(m) => m,
        None => xorflow_runtime::net::delay::DelayMatrix::from_fn(a.hosts, |_, _| 0.0),
    };
    if a.exit_with_parent {
        // SAFETY: PR_SET_PDEATHSIG takes a signal number, no memory.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) };
    }
    // Before anything is made: a signal from here on ends the wait below, not the process.
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| Fail(Outcome::Engine, format!("cannot handle signals: {e}")))?;
    if unsafe { libc::geteuid() } != 0 {
        return Err(Fail(
            Outcome::Unsupported,
            "skipped: network namespaces need root".into(),
        ));
    }
    let taken: Vec<String> = (0..a.hosts)
        .map(|i| a.namespace(i))
        .filter(|ns| std::path::Path::new("/run/netns").join(ns).exists())
        .collect();
    if !taken.is_empty() {
        return Err(bad(format!(
            "namespaces {} already exist (another router, or one that was killed: \
             'ip netns del NAME' removes them)",
            taken.join(", ")
        )));
    }
    let mut made = Namespaces(Vec::new());
    let mut devices = Vec::with_capacity(a.hosts);
    for i in 0..a.hosts {
        devices.push(make_host(a, i, subnet, &mut made)?);
    }
    let router = DelayRouter::start(devices, &matrix, subnet)
        .map_err(|e| Fail(Outcome::Engine, format!("cannot start the router: {e}")))?;
    let hosts: Vec<String> = (0..a.hosts)
        .map(|i| {
            format!(
                "{}={}.{}.{}.{}",
                a.namespace(i),
                subnet[0],
                subnet[1],
                subnet[2],
                i + 1
            )
        })
        .collect();
    let (mean, max) = matrix.mean_and_max_ms();
    let note =
        congestion::auto_note(&a.tcp_congestion).map_or(String::new(), |n| format!(" ({n})"));
    eprintln!(
        "delay-router: {} hosts, RTT mean {mean:.1} ms, max {max:.1} ms, TCP congestion control \
         {}{note}",
        a.hosts,
        congestion_of(&a.namespace(0))
    );
    // The router's own CPU, from here to the stop: on a shared machine it is CPU the routed
    // processes do not get (docs/wan.md, "8 processes, repeated").
    let (cpu0, t0) = (clock::process_cpu_ns(), std::time::Instant::now());
    println!("ready {}", hosts.join(" "));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = signals.forever().next();
    let (cpu_s, wall_s) = (
        (clock::process_cpu_ns() - cpu0) as f64 / 1e9,
        t0.elapsed().as_secs_f64(),
    );
    let c = router.counters.clone();
    router.stop();
    drop(made);
    eprintln!(
        "delay-router: stopped; {} packets ({} bytes) delivered, {} dropped on full queues, \
         {} not for a host (IPv6, other addresses), {} refused by a device",
        c.packets.load(Ordering::Relaxed),
        c.bytes.load(Ordering::Relaxed),
        c.queue_drops.load(Ordering::Relaxed),
        c.foreign.load(Ordering::Relaxed),
        c.write_errors.load(Ordering::Relaxed)
    );
    let packets = c.packets.load(Ordering::Relaxed).max(1) as f64;
    eprintln!(
        "delay-router: CPU {cpu_s:.1} s over {wall_s:.1} s routing ({:.2} cores, {:.1} us per \
         packet)",
        cpu_s / wall_s.max(1e-9),
        cpu_s * 1e6 / packets
    );
    if let Ok(h) = c.late_ns.lock() {
        if !h.is_empty() {
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
            eprintln!(
                "delay-router: delayed packets written after their due time: p50 {:.0} us, p99 \
                 {:.0} us, p99.9 {:.0} us, max {:.0} us ({} packets; 1 us or less counts as 1 us)",
                us(0.5),
                us(0.99),
                us(0.999),
                h.max() as f64 / 1e3,
                h.len()
            );
        }
    }
    Ok(())
}

/// Runs the router until stopped.
pub fn run(a: DelayRouterArgs) -> Outcome {
    match serve(&a) {
        Ok(()) => Outcome::Success,
        Err(Fail(outcome, msg)) => {
            if outcome == Outcome::Unsupported {
                eprintln!("{msg}");
            } else {
                eprintln!("xorflow-lab delay-router: {msg}");
            }
            outcome
        }
    }
}
