//! The YSB job (`xorflow-lab run ysb`; these tests were crates/cli/tests/ysb_kafka.rs) over a
//! real Kafka broker (`scripts/kafka.sh`) and a real redis-server: events from `xorflow-lab ysb
//! generate --with-skew` loaded with `xorflow-lab kafka produce-ysb` into 3 partitions, plus
//! malformed and late records another producer adds, are counted exactly as the oracle
//! (`examples/ysb/src/oracle.rs`) counts each partition's records in offset order (lateness is
//! per partition), in one process and in two; the bad records are named by partition and
//! offset; a missing topic or broker exits 2 leaving no output. With `--redis`, the windows read
//! back from Redis in the original's layout (as its `--get-stats` walks it) are the CSV's rows;
//! an unreachable Redis, or one refusing writes, fails the run without an output.
//!
//! Needs Java 17 and Maven for the broker, redis-server for Redis (`.ci/run` installs them);
//! skipped without them outside CI.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::procs::{free_ports, wait_listening};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::Duration;
use xorflow_kafka::broker::TestBroker;
use xorflow_kafka::producer::Loader;
use xorflow_kafka::KafkaUri;

use common::ysb::START_MS;
/// Longest a command may take before the test kills it and fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// The job's default lateness, ms.
const LATENESS_MS: u64 = 100;

/// Runs `xorflow-lab args...` (`xorflow` for the engine's `kafka consume`: [`common::exe_for`]) as
/// a top-level run, killing it (kill -9) and failing past
/// [`RUN_TIMEOUT`]. Its output is read while it runs: a full pipe must not stall it.
fn xorflow(args: &[&str]) -> Output {
    let child = Command::new(common::exe_for(args))
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xorflow");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(RUN_TIMEOUT) {
        Ok(o) => o.expect("output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("xorflow {args:?} hung for {RUN_TIMEOUT:?}");
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `events` events at `rate`/s with the original's skew, then a malformed line and a view 5 s
/// behind the last event time (late with 100 ms lateness wherever it lands). Returns (events
/// file, ad table).
fn generate(dir: &Path, events: u64, rate: u64) -> (PathBuf, PathBuf) {
    let (k, a, ad) = common::ysb::generate(dir, events, rate, 5);
    let mut f = std::fs::OpenOptions::new().append(true).open(&k).unwrap();
    f.write_all(b"{\"user_id\": \"truncated\n").unwrap();
    f.write_all(view(&ad, START_MS + events * 1000 / rate - 5000).as_bytes())
        .unwrap();
    f.write_all(b"\n").unwrap();
    (k, a)
}

/// A view of `ad` at `t` in the original's format, without the newline (a record's value).
fn view(ad: &str, t: u64) -> String {
    common::ysb::view(ad, t).trim_end().to_string()
}

/// The topic's records, per partition in offset order: (offset, value), read back with
/// `xorflow kafka consume --with-positions`.
fn records(b: &TestBroker, topic: &str) -> BTreeMap<i32, Vec<(i64, String)>> {
    let o = xorflow(&[
        "kafka",
        "consume",
        "--bootstrap",
        &b.bootstrap(),
        "--topic",
        topic,
        "--with-positions",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mut parts: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let mut f = line.splitn(4, ',');
        let (p, off, _key, value) = (f.next(), f.next(), f.next(), f.next());
        let (Some(p), Some(off), Some(value)) = (p, off, value) else {
            panic!("not partition,offset,key,value: {line}");
        };
        let off: i64 = off.parse().unwrap();
        parts
            .entry(p.parse().unwrap())
            .or_default()
            .push((off, value.to_string()));
    }
    for v in parts.values_mut() {
        v.sort_unstable_by_key(|r| r.0);
    }
    parts
}

/// The oracle's rows (as the job writes them) when each partition's records are judged on their
/// own: the oracle over every partition's values in offset order, summed.
fn oracle_per_partition(parts: &BTreeMap<i32, Vec<(i64, String)>>, table: &Path) -> String {
    let table = std::fs::read_to_string(table).unwrap();
    let mut total: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for recs in parts.values() {
        let text: Vec<&str> = recs.iter().map(|r| r.1.as_str()).collect();
        let counts = xorflow_ysb::oracle::counts(
            &text.join("\n"),
            &table,
            LATENESS_MS,
            xorflow_ysb::WINDOW_MS,
        )
        .unwrap();
        for (k, v) in counts {
            *total.entry(k).or_default() += v;
        }
    }
    let mut out = String::from("campaign_id,window_start_ms,views\n");
    for ((c, w), v) in total {
        out.push_str(&format!("{c},{w},{v}\n"));
    }
    out
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Adds records another producer might write: two malformed ones to partition 1, a view 60 s
/// behind the events to partition 2 (late there).
fn add_bad_records(b: &TestBroker, topic: &str, table: &Path) {
    let uri = KafkaUri::parse(&b.uri(topic)).unwrap();
    let ad = std::fs::read_to_string(table).unwrap();
    let ad = ad.split('"').nth(1).unwrap().to_string();
    let mut l = Loader::new(&uri).unwrap();
    let ts = START_MS as i64;
    l.send(1, ts, None, b"not json").unwrap();
    l.send(1, ts, None, b"").unwrap();
    l.send(2, ts, None, view(&ad, START_MS - 60_000).as_bytes())
        .unwrap();
    assert_eq!(l.finish().unwrap(), 3);
}

#[test]
fn the_ysb_job_reads_a_topic_and_counts_as_the_oracle_per_partition() {
    let Some(b) = TestBroker::start(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 20 s of event time: 2-3 windows x 100 campaigns.
    let (k, a) = generate(dir.path(), 60_000, 3000);
    let o = xorflow(&[
        "kafka",
        "produce-ysb",
        "--bootstrap",
        &b.bootstrap(),
        "--topic",
        "ysb",
        "--partitions",
        "3",
        "--input",
        s(&k),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("60001 events (1 malformed lines skipped)") && stdout.contains("created"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 60001: EOF"));
    add_bad_records(&b, "ysb", &a);
    let parts = records(&b, "ysb");
    let sizes: Vec<usize> = parts.values().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [20_001, 20_002, 20_001],
        "round-robin plus the added records"
    );
    let want = oracle_per_partition(&parts, &a);
    assert!(want.lines().count() > 200, "{want}");
    // The malformed records' offsets: after the 20,000 events of partition 1.
    let bad: Vec<i64> = parts[&1]
        .iter()
        .filter(|r| !r.1.starts_with('{'))
        .map(|r| r.0)
        .collect();
    assert_eq!(bad, [20_000, 20_001]);
    let c = dir.path().join("counts.csv");
    let sum = dir.path().join("summary.json");
    let topic = b.uri("ysb");
    let base = [
        "run",
        "ysb",
        "--input",
        &topic,
        "--ad-campaigns",
        s(&a),
        "--output",
        s(&c),
        "--summary",
        s(&sum),
    ];
    for extra in [
        &["--workers", "1"][..],
        &["--workers", "2", "--sources", "3", "--granularity", "100ms"],
        &["--processes", "2", "--workers", "1", "--sources", "3"],
    ] {
        let _ = std::fs::remove_file(&c);
        let o = xorflow(&[&base[..], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", text(&o));
        assert_eq!(std::fs::read_to_string(&c).unwrap(), want, "{extra:?}");
        let sm = summary(&sum);
        assert_eq!(sm["elements_below_frontier"], 0, "{extra:?}");
        // Every record read, in one process or summed over two; the two malformed ones.
        assert_eq!(sm["lines"], 60_004, "{extra:?}: {sm}");
        assert_eq!(sm["malformed"], 2, "{extra:?}: {sm}");
        let late = sm["late"].as_u64().unwrap();
        assert!(late >= 2, "the added late view and the file's: {sm}");
        assert_eq!(sm["events"].as_u64().unwrap(), 60_004 - 2 - late, "{sm}");
        if extra.contains(&"--processes") {
            // The examples are process 0's: each process logs its own skipped records.
            let cover = sm["input_counts_cover"].as_str().unwrap();
            assert!(cover.starts_with("the whole input (the examples"), "{sm}");
            continue;
        }
        // The malformed records and the late view named by position.
        assert_eq!(sm["input_counts_cover"], "the whole input");
        let skipped = sm["skipped_records"].as_array().unwrap();
        let at = |p: i64, o: i64| {
            skipped
                .iter()
                .find(|r| r["partition"] == p && r["offset"] == o)
                .map(|r| r["reason"].as_str().unwrap().to_string())
        };
        assert!(
            at(1, 20_000).is_some_and(|r| r.contains("expected")),
            "{sm}"
        );
        assert!(at(1, 20_001).is_some_and(|r| r.contains("EOF")), "{sm}");
        assert!(at(2, 20_000).is_some_and(|r| r.starts_with("late")), "{sm}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&format!(
                "skipped {topic} partition 1 offset 20000: expected"
            )),
            "{stderr}"
        );
    }
    // A topic that does not exist: exit 2, named, no output.
    let _ = std::fs::remove_file(&c);
    let _ = std::fs::remove_file(&sum);
    let missing = b.uri("no-such-topic");
    let mut args = base.to_vec();
    args[3] = &missing;
    let o = xorflow(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("topic 'no-such-topic' does not exist"),
        "{}",
        text(&o)
    );
    assert!(!c.exists() && !sum.exists());
}

/// Options that cannot apply, and a broker nobody runs: exit 2 naming why, no output.
#[test]
fn bad_kafka_options_and_an_unreachable_broker_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (k, a) = generate(dir.path(), 1000, 1000);
    let c = dir.path().join("counts.csv");
    let nobody = format!("kafka://127.0.0.1:{}/ysb", free_ports(1)[0]);
    let base = ["run", "ysb", "--ad-campaigns", s(&a), "--output", s(&c)];
    for (args, why) in [
        (
            vec!["--input", s(&k), "--kafka-follow"],
            "--kafka-follow needs --input kafka://",
        ),
        (
            vec!["--input", &nobody, "--kafka-follow"],
            "--kafka-follow never ends, so --output would never be written: add --redis",
        ),
        (
            vec!["--input", &nobody, "--kafka-idle-timeout", "0s"],
            "--kafka-idle-timeout must be positive",
        ),
        (vec!["--input", "kafka://127.0.0.1:1"], "--input: "),
        (vec!["--input", &nobody], "cannot reach Kafka at 127.0.0.1:"),
    ] {
        let o = xorflow(&[&base[..], &args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(!c.exists(), "{args:?} left an output");
    }
    let o = xorflow(&[
        "kafka",
        "produce-ysb",
        "--partitions",
        "0",
        "--input",
        s(&k),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A redis-server of this test's own on a free port, without persistence; killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// `None` (the test is skipped) when redis-server is missing outside CI.
    fn start() -> Option<Self> {
        let here = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok();
        if !here {
            xorflow_testkit::skip("redis-server is missing (apt-get install redis-server)");
            return None;
        }
        let port = free_ports(1)[0];
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let server = RedisServer { child, port };
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        assert!(
            wait_listening(addr, Duration::from_secs(10)),
            "redis-server did not listen on {port}"
        );
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis-cli` with `args` against this server; its stdout (raw replies, one a line).
    fn cli(&self, args: &[&str]) -> String {
        let o = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--raw"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run redis-cli");
        assert!(o.status.success(), "redis-cli {args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The windows as the original's `--get-stats` walks them: the "campaigns" set, each
/// campaign's "windows" list, each window's id in the campaign hash, its seen_count and
/// time_updated. Lines `campaign,window_start_ms,seen_count,time_updated`, sorted.
const WALK: &str = "local out = {}
for _, c in ipairs(redis.call('SMEMBERS', 'campaigns')) do
  local list = redis.call('HGET', c, 'windows')
  for _, ts in ipairs(redis.call('LRANGE', list, 0, -1)) do
    local w = redis.call('HGET', c, ts)
    out[#out + 1] = c .. ',' .. ts .. ',' .. redis.call('HGET', w, 'seen_count') .. ',' ..
      redis.call('HGET', w, 'time_updated')
  end
end
return out";

#[test]
fn the_redis_sink_holds_the_csv_counts_in_the_original_layout() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 13 s of event time: 2-3 windows x 100 campaigns.
    let (k, a) = generate(dir.path(), 40_000, 3000);
    let c = dir.path().join("counts.csv");
    let url = redis.url();
    let args = [
        "run",
        "ysb",
        "--input",
        s(&k),
        "--ad-campaigns",
        s(&a),
        "--output",
        s(&c),
        "--redis",
        &url,
    ];
    let before = xorflow_ysb::redis_sink::now_ms();
    let o = xorflow(&args);
    let after = xorflow_ysb::redis_sink::now_ms();
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(&c).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(rows.len() > 200, "{csv}");
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains(&format!("redis: {} windows written to {url}", rows.len())));
    let mut walked: Vec<String> = redis
        .cli(&["EVAL", WALK, "0"])
        .lines()
        .map(str::to_string)
        .collect();
    walked.sort_unstable();
    let mut from_redis = Vec::new();
    for w in &walked {
        let f: Vec<&str> = w.split(',').collect();
        let updated: u64 = f[3].parse().unwrap();
        assert!(
            (before..=after).contains(&updated),
            "{w}: not written by the run"
        );
        from_redis.push(format!("{},{},{}", f[0], f[1], f[2]));
    }
    assert_eq!(from_redis, rows, "Redis against the CSV");
    assert_eq!(
        redis.cli(&["LLEN", "time_updated"]).trim(),
        rows.len().to_string()
    );
    // A server refusing writes (out of memory): the run fails naming Redis, and no output.
    redis.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    std::fs::remove_file(&c).unwrap();
    let o = xorflow(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr.contains(&format!("error: Redis at {url}: cannot write window")),
        "{stderr}"
    );
    assert!(stderr.contains("OOM"), "{stderr}");
    assert!(!c.exists());
    // No server there: named before anything is read.
    let nobody = format!("redis://127.0.0.1:{}", free_ports(1)[0]);
    let mut bad = args;
    bad[9] = &nobody;
    let o = xorflow(&bad);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("cannot use Redis at {nobody}: ")),
        "{}",
        text(&o)
    );
    assert!(!c.exists());
}
