//! A real broker for tests and benchmarks: `scripts/kafka.sh` on a free port, stopped and its
//! data removed when dropped, and stopped by the script's watcher if this process dies without
//! dropping it (kill -9).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A running single-node broker.
pub struct TestBroker {
    repo: PathBuf,
    port: u16,
}

/// Whether java and mvn are here. Without them a test skips (returns `None` from
/// [`TestBroker::start`]), except under CI (`CI` set), where that is a failure.
///
/// # Panics
/// Under CI, when either is missing.
pub fn java_here() -> bool {
    let ok = |c: &str| Command::new(c).arg("-version").output().is_ok();
    if ok("java") && ok("mvn") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "java and mvn are required in CI (.ci/run installs them)"
    );
    eprintln!("skipped: java or mvn is missing (needed for the Kafka broker)");
    false
}

impl TestBroker {
    /// Starts a broker with the script of the repository at `repo` on a free port; `None` if
    /// Java or Maven is missing outside CI.
    ///
    /// # Panics
    /// The broker does not start in 3 attempts on fresh ports (the script's output of each is in
    /// the message).
    pub fn start(repo: &Path) -> Option<Self> {
        Self::start_with(repo, &[])
    }

    /// One broker for the whole test process, started on first use: a JVM start takes about
    /// 10 s, so the tests of one binary share it, each with topics of its own. It is never
    /// dropped; the script's watcher stops it and removes its folder once this process exits
    /// (`scripts/kafka.sh start --owner PID --forget`). `None` as for [`TestBroker::start`].
    ///
    /// # Panics
    /// As [`TestBroker::start`].
    pub fn shared(repo: &Path) -> Option<&'static TestBroker> {
        static SHARED: OnceLock<Option<TestBroker>> = OnceLock::new();
        SHARED
            .get_or_init(|| Self::start_with(repo, &["--forget"]))
            .as_ref()
    }

    fn start_with(repo: &Path, extra: &[&str]) -> Option<Self> {
        if !java_here() {
            return None;
        }
        // A port found free may be taken by another program before the broker binds it (its
        // controller's port too: scripts/kafka.sh), so a start that fails is tried twice more
        // on fresh ports; the failures are all reported if none starts.
        let mut failures = Vec::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let b = TestBroker {
                repo: repo.to_path_buf(),
                port,
            };
            let owner = std::process::id().to_string();
            let mut args = vec!["--owner", owner.as_str()];
            args.extend_from_slice(extra);
            let o = b.script_with("start", &args);
            if o.status.success() {
                return Some(b);
            }
            failures.push(format!(
                "scripts/kafka.sh start --port {port}: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        panic!("no broker started in 3 attempts:\n{}", failures.join("\n"))
    }

    fn script(&self, cmd: &str) -> std::process::Output {
        self.script_with(cmd, &[])
    }

    fn script_with(&self, cmd: &str, extra: &[&str]) -> std::process::Output {
        Command::new(self.repo.join("scripts/kafka.sh"))
            .args([cmd, "--port", &self.port.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/kafka.sh")
    }

    /// `127.0.0.1:PORT`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The broker's folder (`scripts/kafka.sh`: `$XORFLOW_KAFKA_DIR/broker-<port>`).
    fn folder(&self) -> PathBuf {
        let base = std::env::var_os("XORFLOW_KAFKA_DIR")
            .map_or_else(|| self.repo.join("target/kafka"), PathBuf::from);
        base.join(format!("broker-{}", self.port))
    }

    /// Where the broker keeps its partitions (one folder per topic partition).
    pub fn data_dir(&self) -> PathBuf {
        self.folder().join("data")
    }

    /// The broker's process id, if it is running.
    pub fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.folder().join("pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// `kafka://127.0.0.1:PORT/topic`.
    pub fn uri(&self, topic: &str) -> String {
        format!("kafka://{}/{topic}", self.bootstrap())
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        let _ = self.script("stop");
        let _ = std::fs::remove_dir_all(self.folder());
    }
}
