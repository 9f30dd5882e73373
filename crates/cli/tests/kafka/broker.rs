//! `scripts/kafka.sh`, the real Apache Kafka broker the Kafka tests start for themselves (issue
//! 14): start on a free port, answer, carry records (Kafka's own console tools, not our client),
//! refuse a taken port and bad options, stop by PID.
//!
//! Needs Java 17 and Maven (`.ci/run` installs them); skipped without them outside CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/kafka.sh"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/kafka.sh")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}; stdout: {}; stderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).trim(),
        String::from_utf8_lossy(&o.stderr).trim()
    )
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().unwrap().port()
}

/// True when java and mvn are here; outside CI their absence skips the test.
fn java_here() -> bool {
    xorflow_kafka::broker::java_here()
}

/// Stops the broker on `port` and forgets its data, also when the test fails.
struct Broker(u16);

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = script(&["stop", "--port", &self.0.to_string()]);
        let _ = std::fs::remove_dir_all(repo().join(format!("target/kafka/broker-{}", self.0)));
    }
}

/// Runs one of Kafka's own command-line tools against `bootstrap`.
fn tool(class: &str, args: &[&str], input: Option<&str>) -> Output {
    use std::io::Write;
    let libs = repo().join("target/kafka/libs/*");
    let mut c = Command::new("java")
        .arg("-cp")
        .arg(libs)
        .arg(class)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run java");
    let mut stdin = c.stdin.take().unwrap();
    if let Some(i) = input {
        stdin.write_all(i.as_bytes()).unwrap();
    }
    drop(stdin);
    c.wait_with_output().unwrap()
}

#[test]
fn the_broker_starts_carries_records_and_stops() {
    if !java_here() {
        return;
    }
    let port = free_port();
    let p = port.to_string();
    let _guard = Broker(port);
    let o = script(&["start", "--port", &p]);
    assert!(o.status.success(), "start: {}", text(&o));
    let bootstrap = format!("127.0.0.1:{port}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), bootstrap);
    let o = script(&["status", "--port", &p]);
    assert!(o.status.success(), "status: {}", text(&o));
    // A second start finds it running and says so.
    let o = script(&["start", "--port", &p]);
    assert!(
        o.status.success() && text(&o).contains("already runs"),
        "{}",
        text(&o)
    );

    let b = bootstrap.as_str();
    let create = [
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        "t",
        "--partitions",
        "2",
    ];
    let o = tool("org.apache.kafka.tools.TopicCommand", &create, None);
    assert!(o.status.success(), "create topic: {}", text(&o));
    let produce = ["--bootstrap-server", b, "--topic", "t"];
    let o = tool(
        "org.apache.kafka.tools.ConsoleProducer",
        &produce,
        Some("x\ny\nz\n"),
    );
    assert!(o.status.success(), "produce: {}", text(&o));
    let consume = [
        "--bootstrap-server",
        b,
        "--topic",
        "t",
        "--from-beginning",
        "--max-messages",
        "3",
        "--timeout-ms",
        "30000",
    ];
    let o = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &consume,
        None,
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    got.sort();
    assert_eq!(got, ["x", "y", "z"], "consume: {}", text(&o));

    let o = script(&["stop", "--port", &p]);
    assert!(o.status.success(), "stop: {}", text(&o));
    let o = script(&["status", "--port", &p]);
    assert_eq!(o.status.code(), Some(1), "status after stop: {}", text(&o));
    assert!(
        std::net::TcpStream::connect(&bootstrap).is_err(),
        "something still answers on {bootstrap}"
    );
}

#[test]
fn a_taken_port_and_bad_options_are_refused() {
    if !java_here() {
        return;
    }
    // A stranger on the port.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let _guard = Broker(port);
    let o = script(&["start", "--port", &port.to_string()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("taken by another program"),
        "{}",
        text(&o)
    );
    drop(l);
    for (args, why) in [
        (&["start", "--port", "x9"][..], "is not a port number"),
        (&["start", "--bogus"][..], "unknown option '--bogus'"),
        (&["restart"][..], "usage"),
    ] {
        let o = script(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(why), "{args:?}: {}", text(&o));
    }
    // Nothing to stop is not an error.
    let o = script(&["stop", "--port", &free_port().to_string()]);
    assert!(o.status.success(), "{}", text(&o));
}
