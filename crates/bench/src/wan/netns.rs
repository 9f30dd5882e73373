//! `bench wan --network netns`: a run's processes in network namespaces behind
//! `xorflow-lab delay-router`, which delays every IP packet between them (kernel TCP included,
//! `crates/runtime/src/net/delay/router.rs`), instead of on loopback with the delay inside
//! xorflow. The job's command is the loopback one with `--processes N` replaced by a hostfile:
//! process `i` runs in namespace `i` at `10.78.0.(i + 1)`.

use super::tcp_counters::{self, TcpCounters};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Port every process listens on, in its own namespace.
const PORT: u16 = 7700;

/// A running `xorflow-lab delay-router`; stopped (and its namespaces deleted) when dropped.
pub struct Router {
    child: Child,
    prefix: String,
    hosts: usize,
    /// Its command line, for `command.txt`.
    command: String,
}

impl Router {
    /// Starts the router for `hosts` hosts with `delay` (the jobs' delay options: `--rtt`,
    /// `--rtt-topology`, `--delay-matrix`, `--rtt-jitter`; none for no delay) and TCP congestion
    /// control `congestion` in every namespace (`inherit`: the host's), its stderr into `log`,
    /// and waits for its ready line.
    ///
    /// # Errors
    /// The router cannot start (not root, namespaces left by a killed run, an algorithm the
    /// kernel lacks: the message says).
    pub fn start(
        xorflow: &Path,
        hosts: usize,
        delay: &[String],
        congestion: &str,
        log: &Path,
    ) -> Result<Router> {
        let prefix = format!("xfw{}", std::process::id() % 100_000);
        let err = std::fs::File::create(log)
            .with_context(|| format!("cannot create '{}'", log.display()))?;
        let mut child = Command::new(xorflow)
            .args(["delay-router", "--hosts", &hosts.to_string()])
            .args(["--prefix", &prefix, "--exit-with-parent"])
            .args(["--tcp-congestion", congestion])
            .args(delay)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .context("cannot start xorflow-lab delay-router")?;
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line);
        if !line.starts_with("ready ") {
            let status = child.wait()?;
            let why = std::fs::read_to_string(log).unwrap_or_default();
            bail!(
                "xorflow-lab delay-router did not start ({status}): {}",
                why.trim()
            );
        }
        Ok(Router {
            child,
            command: format!(
                "{} delay-router --hosts {hosts} --prefix {prefix} --tcp-congestion {congestion} {}",
                xorflow.display(),
                delay.join(" ")
            ),
            prefix,
            hosts,
        })
    }

    /// The router's command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    fn namespace(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    /// Host `i`'s address in its namespace.
    pub fn address(i: usize) -> String {
        format!("10.78.0.{}", i + 1)
    }

    /// Starts `exe args` in host `i`'s namespace (`ip netns exec`), its stdout and stderr into
    /// `dir/<name>.out` and `.err`; the caller waits for or kills it (the router kills what is
    /// left in its namespaces when it stops).
    ///
    /// # Errors
    /// The output files cannot be created or `ip` cannot run.
    pub fn spawn(
        &self,
        i: usize,
        exe: &str,
        args: &[String],
        dir: &Path,
        name: &str,
    ) -> Result<Child> {
        let out = std::fs::File::create(dir.join(format!("{name}.out")))?;
        let err = std::fs::File::create(dir.join(format!("{name}.err")))?;
        Command::new("ip")
            .args(["netns", "exec", &self.namespace(i), exe])
            .args(args)
            // A job's token comes from its command line, never from this environment.
            .env_remove("XORFLOW_CLUSTER_TOKEN")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .context("cannot run 'ip netns exec'")
    }

    /// Waits until something in host `i`'s namespace accepts connections on `port` at its
    /// address (a daemon another one needs, e.g. Storm's ZooKeeper).
    ///
    /// # Errors
    /// Nothing listens there within `timeout`, or `ip` cannot run.
    pub fn wait_listening(&self, i: usize, port: u16, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let probe = format!("exec 3<>/dev/tcp/{}/{port}", Self::address(i));
        loop {
            let status = Command::new("ip")
                .args(["netns", "exec", &self.namespace(i), "bash", "-c", &probe])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .context("cannot run 'ip netns exec'")?;
            if status.success() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "nothing listens on {}:{port} after {timeout:?}",
                    Self::address(i)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every namespace's TCP counters so far ([`super::tcp_counters`]), summed; each
    /// namespace's raw counters go to `dir/tcp.txt`. `None` (and the reason in that file) if a
    /// namespace could not be read: the counters are a diagnosis, not a result, so a run does not
    /// fail for them.
    pub fn tcp_counters(&self, dir: &Path) -> Option<TcpCounters> {
        let mut sum = TcpCounters::default();
        let mut text = String::new();
        let mut ok = true;
        for i in 0..self.hosts {
            match tcp_counters::read(&self.namespace(i)) {
                Ok((c, raw)) => {
                    sum.add(&c);
                    text.push_str(&format!(
                        "# namespace {i} ({}): {c:?}\n{raw}\n",
                        Self::address(i)
                    ));
                }
                Err(e) => {
                    ok = false;
                    text.push_str(&format!("# namespace {i}: {e}\n"));
                }
            }
        }
        let _ = crate::stand::files::write_whole(&dir.join("tcp.txt"), text.as_bytes());
        ok.then_some(sum)
    }

    /// The hostfile's text: host `i` at `10.78.0.(i + 1)`.
    fn hostfile(&self) -> String {
        (0..self.hosts)
            .map(|i| format!("{}:{PORT}\n", Self::address(i)))
            .collect()
    }

    /// Runs `exe args` as every host's process, `--processes N` replaced by `--hostfile`,
    /// `--process i` and a cluster token (and `extra` for every process, e.g. `--start-ms`),
    /// each with `ip netns exec`; stdout and stderr of process `i` into `dir/process-i.*`.
    /// Returns process 0's stdout.
    ///
    /// # Errors
    /// A process fails, or outlives `timeout` (then every process is killed).
    pub fn run(
        &self,
        exe: &str,
        args: &[String],
        extra: &[String],
        dir: &Path,
        timeout: Duration,
    ) -> Result<String> {
        let hostfile = dir.join("hosts");
        crate::stand::files::write_whole(&hostfile, self.hostfile().as_bytes())?;
        let token = token()?;
        let args = without_processes(args);
        let mut children = Vec::new();
        let hostfile_arg = hostfile.display().to_string();
        for i in 0..self.hosts {
            let mut a = args.clone();
            a.extend(extra.iter().cloned());
            a.extend([
                "--hostfile".into(),
                hostfile_arg.clone(),
                "--process".into(),
            ]);
            a.extend([i.to_string(), "--cluster-token".into(), token.clone()]);
            children.push(self.spawn(i, exe, &a, dir, &format!("process-{i}"))?);
        }
        let deadline = Instant::now() + timeout;
        let mut failed = Vec::new();
        for (i, c) in children.iter_mut().enumerate() {
            match wait_until(c, deadline)? {
                Some(s) if s.success() => {}
                Some(s) => failed.push(format!("process {i} {s}")),
                None => failed.push(format!("process {i} still running after {timeout:?}")),
            }
        }
        if !failed.is_empty() {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            bail!(
                "{} (their stderr: {}/process-*.err)",
                failed.join(", "),
                dir.display()
            );
        }
        Ok(std::fs::read_to_string(dir.join("process-0.out"))?)
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        // SAFETY: kill takes no memory; the pid is our child's.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// The bytes a stopped router delivered, from its report in `log` (its stderr: "... packets
/// (N bytes) delivered ..."); `None` if the report is not there.
pub fn delivered_bytes(log: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("bytes) delivered"))?;
    let before = &line[..line.find(" bytes) delivered")?];
    before.rsplit('(').next()?.trim().parse().ok()
}

/// A fresh cluster token: 16 bytes of `/dev/urandom` in hex.
fn token() -> Result<String> {
    let mut b = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// `args` without `--processes N` (the hostfile says how many).
fn without_processes(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--processes" {
            it.next();
        } else if !a.starts_with("--processes=") {
            out.push(a.clone());
        }
    }
    out
}

/// Waits for `c` until `deadline`; `None` when it is still running then.
pub(super) fn wait_until(
    c: &mut Child,
    deadline: Instant,
) -> Result<Option<std::process::ExitStatus>> {
    loop {
        if let Some(s) = c.try_wait()? {
            return Ok(Some(s));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delivered_bytes_come_from_the_routers_report() {
        let dir = std::env::temp_dir().join(format!("xfw-router-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("router.txt");
        std::fs::write(
            &log,
            "delay-router: 2 hosts\ndelay-router: stopped; 3179 packets (16907063 bytes) \
             delivered, 0 dropped on full queues\n",
        )
        .unwrap();
        assert_eq!(delivered_bytes(&log), Some(16_907_063));
        std::fs::write(&log, "delay-router: 2 hosts\n").unwrap();
        assert_eq!(delivered_bytes(&log), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_process_count_leaves_the_command() {
        let a: Vec<String> = [
            "bench",
            "ysb",
            "--processes",
            "4",
            "--workers",
            "1",
            "--processes=2",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(without_processes(&a), ["bench", "ysb", "--workers", "1"]);
    }
}
