//! Cross-process durations of a real run go through the clock alignment (the Cloudprofiler paper, section 3.3)
//! within their bounds: two processes of `xorflow-lab bench chain` on one host, each with a
//! different synthetic clock skew (`XORFLOW_CLOCK_SKEW`, an offset and a rate error on the
//! alignment's clock only). The runtime's stamps share the host's `CLOCK_MONOTONIC_RAW`, so the
//! plain difference of two stamps is the truth; a conversion that mishandled the skew (25 ms and
//! 45 ppm apart) would miss it by far more than its bound. The YSB bench's generators, which run
//! one schedule on each process's wall clock, are compared the same way.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::lab;
use common::procs::free_ports;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the process when dropped, so a failing test leaves nothing behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The arguments of the two-process chain run.
const CHAIN: &[&str] = &[
    "bench",
    "chain",
    "--json",
    "--workers",
    "1",
    "--stages",
    "3",
    "--elements",
    "300000",
    "--rate",
    "100000",
    "--warmup",
    "60000",
    "--granularity",
    "100",
];

/// Process `index` of a two-process run of `args` on `hosts`, with synthetic clock `skew`.
fn process(args: &[&str], hosts: &std::path::Path, index: usize, skew: &str) -> Killed {
    let child = Command::new(lab())
        .args(args)
        .args(["--cluster-token", "clock-chain"])
        .arg("--hostfile")
        .arg(hosts)
        .args(["--process", &index.to_string()])
        .env("XORFLOW_CLOCK_SKEW", skew)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xorflow");
    Killed(child)
}

/// Waits for `p` at most until `deadline`; its stdout on success.
fn finish(mut p: Killed, deadline: Instant, name: &str) -> String {
    while Instant::now() < deadline {
        if p.0.try_wait().expect("wait").is_some() {
            let out = std::mem::replace(&mut p.0, Command::new("true").spawn().unwrap());
            let o = out.wait_with_output().expect("output");
            assert!(
                o.status.success(),
                "{name} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return String::from_utf8_lossy(&o.stdout).into_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{name} did not finish within the deadline");
}

/// Checks one clock check object: samples converted, none off the truth by more than its bound,
/// and a bound that is a bound on a loopback round trip, not a skew-sized one.
fn assert_within_bounds(c: &Value, what: &str) {
    let converted = c["converted"].as_u64().unwrap();
    assert!(converted > 50, "{what}: only {converted} samples converted");
    assert_eq!(c["unconverted"], 0, "{what}: {c}");
    assert_eq!(
        c["bound_exceeded_same_host"], 0,
        "{what}: samples off the truth by more than their bound: {c}"
    );
    let bound = c["bound_us_max"].as_f64().unwrap();
    assert!(bound > 0.0 && bound < 2_000.0, "{what}: bound {bound} us");
}

/// Runs `args` as two processes with skewed clocks; process 0's JSON.
fn two_skewed_processes(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    let lines: Vec<String> = free_ports(2)
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    std::fs::write(&hosts, lines.join("\n") + "\n").unwrap();
    let p0 = process(args, &hosts, 0, "0:0");
    let p1 = process(args, &hosts, 1, "25000000:-28");
    let deadline = Instant::now() + Duration::from_secs(120);
    let out = finish(p0, deadline, "process 0");
    finish(p1, deadline, "process 1");
    serde_json::from_str(out.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("process 0 printed no JSON ({e}): {out}"))
}

#[test]
fn ysb_generators_schedules_compare_within_their_bounds() {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let start = (now_ms + 3_000).to_string();
    let args = [
        "bench",
        "ysb",
        "--json",
        "--workers",
        "1",
        "--rate",
        "2000",
        "--duration",
        "2s",
        "--start-ms",
        &start,
    ];
    let r = two_skewed_processes(&args);
    assert_eq!(r["counts_match_oracle"], true, "{r}");
    let s = &r["schedule_spread"];
    assert_eq!(s["processes"], 1, "{r}");
    assert_eq!(s["bound_exceeded_same_host"], 0, "{r}");
    let bound = s["bound_us_max"].as_f64().unwrap();
    assert!(bound > 0.0 && bound < 2_000.0, "bound {bound} us: {r}");
    // One host, one wall clock: the schedules coincide (the skew is 25 ms).
    assert!(s["spread_us"].as_f64().unwrap() < 100.0, "{r}");
}

#[test]
fn element_and_notification_latency_across_skewed_processes_stay_within_their_bounds() {
    let r = two_skewed_processes(CHAIN);
    let m = &r;
    assert_eq!(m["elements_received"], 300_000, "{m}");
    assert_within_bounds(&m["element_clock"], "element latency");
    assert_within_bounds(&m["notification_clock"], "notification latency");
    // The sampled, converted element latency describes the same elements' latency as the plain
    // one (every element, exact on one host): medians within a sampling margin. Sampling one
    // source only (the first version's mistake) moved the median by half.
    let plain = m["element_latency"]["p50_us"].as_f64().unwrap();
    let clocked = m["element_latency_clock"]["p50_us"].as_f64().unwrap();
    assert!(
        clocked > plain / 1.5 - 50.0 && clocked < plain * 1.5 + 50.0,
        "converted p50 {clocked} us against plain {plain} us"
    );
}
