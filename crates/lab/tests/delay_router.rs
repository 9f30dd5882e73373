//! `xorflow-lab delay-router` as a user runs it: real namespaces joined by the real router process.
//! A TCP connect between two hosts takes their pair's round trip (the SYN and SYN-ACK are
//! packets the router delays, which no user-space delay of ours can do), pairs differ as the
//! matrix says, a stop deletes the namespaces and kills what ran in them, and bad options exit 2.
//!
//! Skipped (passing, with "skipped: <reason>" on stderr) where namespaces or TUN devices cannot
//! be made (exit 77: not root, no `ip`, no /dev/net/tun), except in CI (`CI` set), where that
//! fails.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::perf::refused;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running router; stopped with SIGTERM (and waited for) when dropped, so a failing test
/// leaves no namespace behind.
struct Router {
    child: Child,
    prefix: String,
}

impl Router {
    /// Starts `xorflow-lab delay-router --prefix PREFIX ARGS` and waits for its ready line; `None`
    /// (skipped) when it exits 77.
    fn start(tag: &str, args: &[&str]) -> Option<Router> {
        let prefix = format!("xr{}{tag}", std::process::id() % 100_000);
        let mut child = Command::new(common::lab())
            .args(["delay-router", "--prefix", &prefix, "--exit-with-parent"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("xorflow runs");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        if line.starts_with("ready ") {
            return Some(Router { child, prefix });
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if xorflow_testkit::skipped_by(out.status.code(), &err) {
            return None;
        }
        panic!("the router did not start: {} {err}", out.status);
    }

    fn namespace(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    /// Stops the router; its stderr.
    fn stop(mut self) -> String {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill takes no memory; the pid is our child's.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut err);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "router: {status} {err}");
        err
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: as in `stop`.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (sockets it opens live there).
fn in_namespace<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread only, with a namespace file we hold open.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .unwrap()
}

fn addr(host: usize, port: u16) -> SocketAddr {
    format!("10.78.0.{}:{port}", host + 1).parse().unwrap()
}

/// Listens on host `i`'s address, port 9000, for the rest of the test (connects complete in
/// the kernel's backlog; nothing needs to accept).
fn listen(r: &Router, i: usize) {
    let l = in_namespace(&r.namespace(i), move || {
        TcpListener::bind(addr(i, 9000)).unwrap()
    });
    std::mem::forget(l);
}

/// The fastest of 5 TCP connects from host `from` to host `to`, ms.
fn connect_ms(r: &Router, from: usize, to: usize) -> f64 {
    in_namespace(&r.namespace(from), move || {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t0 = Instant::now();
            let s = TcpStream::connect_timeout(&addr(to, 9000), Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("connect {from} -> {to}: {e}"));
            best = best.min(t0.elapsed().as_secs_f64() * 1e3);
            drop(s);
        }
        best
    })
}

#[test]
fn a_connect_between_hosts_takes_the_pairs_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("rtt.txt");
    std::fs::File::create(&matrix)
        .unwrap()
        .write_all(b"# three hosts\n0 20 60\n20 0 0\n60 0 0\n")
        .unwrap();
    let Some(r) = Router::start(
        "a",
        &["--hosts", "3", "--delay-matrix", matrix.to_str().unwrap()],
    ) else {
        return;
    };
    for i in 0..3 {
        listen(&r, i);
    }
    for (from, to, rtt) in [(0, 1, 20.0), (0, 2, 60.0), (1, 0, 20.0), (2, 0, 60.0)] {
        let ms = connect_ms(&r, from, to);
        assert!(
            (rtt - 0.5..rtt + 10.0).contains(&ms),
            "{from} -> {to}: connect in {ms:.2} ms, RTT {rtt} ms"
        );
    }
    // A pair without delay goes straight through.
    let ms = connect_ms(&r, 1, 2);
    assert!(ms < 5.0, "1 -> 2: connect in {ms:.2} ms without delay");
    let err = r.stop();
    assert!(err.contains("packets"), "{err}");
    assert!(err.contains("delay-router: CPU "), "{err}");
    // The router reports how late it wrote the delayed packets: every handshake packet of the
    // delayed pairs (at least 4 pairs x 5 connects x 2 directions), its median well under the
    // delay itself.
    let late = (err.lines())
        .find(|l| l.contains("written after their due time"))
        .unwrap_or_else(|| panic!("no lateness line: {err}"));
    let field = |after: &str, until: &str| -> f64 {
        let rest = &late[late.find(after).unwrap() + after.len()..];
        rest[..rest.find(until).unwrap()].trim().parse().unwrap()
    };
    let (p50_us, packets) = (field("p50 ", " us"), field("(", " packets"));
    assert!(packets >= 40.0, "{late}");
    assert!((1.0..10_000.0).contains(&p50_us), "{late}");
}

#[test]
fn a_stop_deletes_the_namespaces_and_what_ran_in_them() {
    let Some(r) = Router::start("b", &["--hosts", "2", "--rtt", "10ms"]) else {
        return;
    };
    let ns = r.namespace(1);
    let mut sleeper = Command::new("ip")
        .args(["netns", "exec", &ns, "sleep", "60"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    r.stop();
    let t0 = Instant::now();
    let status = sleeper.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5) && !status.success());
    assert!(!std::path::Path::new("/run/netns").join(&ns).exists());
}

/// Each host's device queues as many packets as a pair of the router does (16,384): Linux's 500
/// overflowed when the router's reader waited for a core, and the kernel's drops became TCP
/// retransmissions the router never saw (docs/wan.md, "What the kernels' TCP did").
#[test]
fn a_hosts_device_queues_as_deep_as_the_routers_pairs() {
    let Some(r) = Router::start("q", &["--hosts", "2", "--rtt", "10ms"]) else {
        return;
    };
    let out = Command::new("ip")
        .args(["-n", &r.namespace(1), "link", "show", "dev"])
        .arg(format!("{}t1", r.prefix))
        .output()
        .expect("ip runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    r.stop();
    assert!(text.contains("qlen 16384"), "{text}");
}

/// What namespace `ns`'s kernel says its TCP congestion control is.
fn congestion(ns: &str) -> String {
    in_namespace(ns, || {
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap()
    })
    .trim()
    .to_string()
}

/// The whitespace-separated list in the sysctl file `name` of /proc/sys/net/ipv4.
fn sysctl_list(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Every namespace runs cubic unless asked, where namespaces may use it (whatever the host
/// runs: BBR here, whose ProbeRTT held a source back by 50 ms at 100 ms RTT, docs/wan.md), else
/// the host's, named on the start-up line; the asked algorithm when asked; and an algorithm this
/// kernel lacks, or does not allow in namespaces, is refused by name with the ones it has,
/// before any namespace is made.
#[test]
fn every_namespace_gets_the_asked_congestion_control() {
    let allowed = sysctl_list("tcp_allowed_congestion_control");
    let host = sysctl_list("tcp_congestion_control").concat();
    let default = if allowed.iter().any(|a| a == "cubic") {
        "cubic".to_string()
    } else {
        host
    };
    for (args, want) in [
        (&[][..], default.as_str()),
        (&["--tcp-congestion", "reno"][..], "reno"),
    ] {
        let mut a = vec!["--hosts", "2"];
        a.extend_from_slice(args);
        let Some(r) = Router::start("t", &a) else {
            return;
        };
        let got: Vec<String> = (0..2).map(|i| congestion(&r.namespace(i))).collect();
        let err = r.stop();
        assert_eq!(got, [want, want], "{args:?}");
        assert!(
            err.contains(&format!("TCP congestion control {want}")),
            "{err}"
        );
        if args.is_empty() && want != "cubic" {
            assert!(
                err.contains("cubic is not allowed in a namespace here"),
                "{err}"
            );
        }
    }
    let refused_here: Vec<String> = sysctl_list("tcp_available_congestion_control")
        .into_iter()
        .filter(|a| !allowed.contains(a))
        .collect();
    let mut cases = vec![("nosuchcc", "not among this kernel's loaded algorithms")];
    if let Some(a) = refused_here.first() {
        cases.push((a.as_str(), "not allowed in a network namespace"));
    }
    for (algorithm, why) in cases {
        let prefix = format!("xr{}u", std::process::id() % 100_000);
        let o = common::perf::xorflow(&[
            "delay-router",
            "--hosts",
            "2",
            "--prefix",
            &prefix,
            "--tcp-congestion",
            algorithm,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}", common::perf::text(&o));
        assert!(
            err.contains(&format!("--tcp-congestion {algorithm}: {why}"))
                && err.contains("this kernel has")
                && err.contains("a namespace may use"),
            "{err}"
        );
        assert!(!std::path::Path::new("/run/netns")
            .join(format!("{prefix}0"))
            .exists());
    }
}

#[test]
fn bad_options_are_refused_by_name() {
    let cases: [(&[&str], &str); 6] = [
        (&["--hosts", "1", "--rtt", "10ms"], "--hosts 1"),
        (
            &["--hosts", "2", "--tcp-congestion", "a/b"],
            "--tcp-congestion 'a/b'",
        ),
        (&["--hosts", "2", "--subnet", "10.78"], "--subnet '10.78'"),
        (&["--hosts", "2", "--prefix", "a/b"], "--prefix 'a/b'"),
        (&["--hosts", "9", "--rtt-topology", "eu"], "8 cities"),
        (
            &["--hosts", "2", "--delay-matrix", "/nonexistent/m.txt"],
            "/nonexistent/m.txt",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["delay-router"];
        a.extend_from_slice(args);
        refused(&a, want);
    }
}

#[test]
fn namespaces_that_exist_are_not_taken_over() {
    let Some(r) = Router::start("c", &["--hosts", "2"]) else {
        return;
    };
    let o = common::perf::xorflow(&["delay-router", "--hosts", "2", "--prefix", &r.prefix]);
    assert_eq!(o.status.code(), Some(2), "{}", common::perf::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exist"));
    // The first router's namespaces are still there and still route.
    listen(&r, 1);
    assert!(connect_ms(&r, 0, 1) < 5.0);
    r.stop();
}

/// A job's processes in namespaces where one pair is far: the clock alignment before the run
/// takes 100 round trips per pair, 8 s for the far pair (0, 2) and 1 s for the near ones, so
/// process 1 finishes first and hears nothing from 0 and 2 for about 7 s. That silence is
/// start-up, bounded by --startup-timeout, not a dead peer (--peer-timeout 1s): the run must
/// finish (it failed with "sent nothing for 1s: presumed dead" before the first frame was given
/// the start-up bound; a 4-process global city-set run met it at the default 5 s).
#[test]
fn a_far_pair_aligning_clocks_is_not_taken_for_a_dead_peer() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("rtt.txt");
    std::fs::write(&matrix, "0 10 80\n10 0 10\n80 10 0\n").unwrap();
    let Some(r) = Router::start(
        "f",
        &["--hosts", "3", "--delay-matrix", matrix.to_str().unwrap()],
    ) else {
        return;
    };
    let hosts = dir.path().join("hosts");
    let lines: String = (0..3).map(|i| format!("{}\n", addr(i, 7700))).collect();
    std::fs::write(&hosts, lines).unwrap();
    let children: Vec<Child> = (0..3)
        .map(|i| {
            Command::new("ip")
                .args(["netns", "exec", &r.namespace(i)])
                .arg(common::lab())
                .args(["bench", "chain", "--workers", "1", "--elements", "20000"])
                .args(["--rate", "20000", "--peer-timeout", "1s"])
                .args([
                    "--hostfile",
                    hosts.to_str().unwrap(),
                    "--process",
                    &i.to_string(),
                ])
                .args(["--cluster-token", "0123456789abcdef0123456789abcdef"])
                .env_remove("XORFLOW_CLUSTER_TOKEN")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("ip netns exec runs")
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "process {i}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    r.stop();
}
