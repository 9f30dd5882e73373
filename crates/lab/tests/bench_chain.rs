//! `xorflow-lab bench chain`: the chain benchmark of the trAcker paper (K pass-through stages,
//! each after a round-robin re-partition) prints its throughput, its JSON, delivers every element
//! across processes, refuses bad options, and its live metrics count what every stage emits.

#[path = "../../cli/tests/common/mod.rs"]
mod common;

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn xorflow() -> Command {
    Command::cargo_bin("xorflow-lab").expect("the xorflow-lab binary")
}

const CHAIN: [&str; 8] = [
    "bench",
    "chain",
    "--stages",
    "3",
    "--elements",
    "20000",
    "--granularity",
    "10",
];

#[test]
fn bench_chain_prints_throughput() {
    for tracking in ["tracker", "none"] {
        xorflow()
            .args(CHAIN)
            .args(["--tracking", tracking])
            .timeout(Duration::from_secs(60))
            .assert()
            .code(0)
            .stdout(contains("elements/s"));
    }
}

/// The JSON line of `xorflow-lab bench chain` with [`CHAIN`] and `args` (exit 0 within 120 s).
fn chain_json(args: &[&str]) -> Value {
    let out = xorflow()
        .args(CHAIN)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = stdout.lines().next().expect("a JSON line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn bench_chain_json() {
    for tracking in ["tracker", "none"] {
        let v = chain_json(&["--tracking", tracking]);
        assert!(
            v["elements_per_s"].as_f64().unwrap() > 0.0,
            "{tracking}: {v}"
        );
        assert_eq!(v["elements"], 20000, "{tracking}: {v}");
        assert_eq!(v["tracking"], tracking, "{v}");
        if tracking == "tracker" {
            assert!(v["latency_p50_us"].is_number(), "{v}");
            // Measured from the last arrival at any sink instance: one sample per (instance, slot)
            // the instance received, each no later than the per-instance one.
            let any = &v["notification_latency_any"];
            assert!(any["count"].as_u64().unwrap() > 0, "{v}");
            for q in ["p50", "p99"] {
                let own = v[format!("latency_{q}_us")].as_f64().unwrap();
                let a = any[format!("{q}_us")].as_f64().unwrap();
                assert!(a <= own, "{q}: from any {a} > per instance {own}: {v}");
            }
        } else {
            assert_eq!(v["notification_latency_any"]["count"], 0, "{v}");
        }
    }
}

/// Across 2 processes the chain's `u64` elements travel in plain batches
/// (`crates/runtime/src/net/batch_codec.rs`): every element reaches the sink once, and its
/// payload (the emission time, ns) decodes to a latency between 0 and the run's length. A
/// payload read from the wrong bytes (the time field, a shifted offset) would give a latency of
/// about the clock's whole value, and a lost or repeated element a different count.
#[test]
fn bench_chain_across_two_processes_delivers_every_element_intact() {
    for tracking in ["none", "tracker"] {
        let v = chain_json(&["--processes", "2", "--workers", "1", "--tracking", tracking]);
        let e = &v["element_latency"];
        assert_eq!(e["count"], 20000, "{tracking}: {v}");
        let run_us = v["elapsed_s"].as_f64().unwrap() * 1e6;
        let max = e["max_us"].as_f64().unwrap();
        assert!(
            max > 0.0 && max <= run_us + 1e6,
            "{tracking}: max {max} us: {v}"
        );
        let data = v["traffic"]["data"]["messages"].as_u64().unwrap();
        assert!(data > 0, "{tracking}: nothing crossed the processes: {v}");
    }
}

#[test]
fn bench_chain_repeat_0_exits_2() {
    xorflow()
        .args(CHAIN)
        .args(["--repeat", "0"])
        .assert()
        .code(2)
        .stderr(contains("--repeat"));
}

/// `GET /metrics` on `addr`: the body, or `None` while nothing answers.
fn metrics(addr: SocketAddr) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text.split_once("\r\n\r\n")?.1.to_string())
}

/// Sum over workers of `metric` for vertex `vertex`.
fn per_vertex(text: &str, metric: &str, vertex: &str) -> f64 {
    let label = format!("vertex=\"{vertex}\"");
    (text.lines())
        .filter(|l| l.starts_with(&format!("{metric}{{")) && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A pass-through stage counts what it emits: while a paced chain runs, every stage's
/// `xorflow_vertex_elements_out_total` moves with its `elements_in_total` (they reported 0 out
/// while hundreds of thousands went in), and a stage emits no more than it took in.
#[test]
fn live_metrics_count_what_every_pass_through_stage_emits() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let child = std::process::Command::new(common::lab())
        .args(["bench", "chain", "--stages", "3", "--workers", "2"])
        .args(["--elements", "600000", "--rate", "100000"])
        .args(["--metrics-addr", &addr.to_string()])
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = None;
    while Instant::now() < deadline {
        if let Some(t) = metrics(addr) {
            if per_vertex(&t, "xorflow_vertex_elements_in_total", "stage-2") > 50_000.0 {
                seen = Some(t);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = child.wait_with_output().unwrap();
    let t = seen.unwrap_or_else(|| {
        panic!(
            "no metrics with stage-2 moving: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for stage in ["stage-0", "stage-1", "stage-2"] {
        let i = per_vertex(&t, "xorflow_vertex_elements_in_total", stage);
        let out = per_vertex(&t, "xorflow_vertex_elements_out_total", stage);
        assert!(i > 0.0, "{stage}: nothing in:\n{t}");
        assert!(out > 0.0 && out <= i, "{stage}: {out} out of {i} in:\n{t}");
    }
}
