//! The whole job's status on process 0 (`GET /api/status`): its own, merged with what every
//! other process serves as its own (`GET /api/status?scope=process`), so one page shows the
//! whole job. Process `p` serves on the metrics port plus `p` (`execute/mod.rs`, `start_live`),
//! on the host the cluster gives it, so process 0 knows where to ask.
//!
//! Merged per vertex: counts, rates, CPU and backpressure time add up over processes; the
//! frontier is the lowest one any process reports, the lag and queue fill the highest. The
//! processes' CPU (all threads, by task) adds up too; the checkpoints, restarts and failures are
//! process 0's (it coordinates them). A process that does
//! not answer within [`PEER_TIMEOUT`] is listed as unreachable and counted with the last status
//! it gave (a process that finished before process 0 keeps its final counts in the sum).

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long process 0 waits for another process's status.
pub const PEER_TIMEOUT: Duration = Duration::from_millis(800);

/// The largest status a process may answer with, bytes (a stranger on the port is not read
/// without end).
const MAX_STATUS_BYTES: u64 = 4 << 20;

/// `GET /api/status?scope=process` on `addr`: the body, or why not.
pub async fn fetch(addr: SocketAddr) -> Result<Value, String> {
    let get = async {
        let mut s = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let req = format!("GET /api/status?scope=process HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut text = Vec::new();
        (s.take(MAX_STATUS_BYTES).read_to_end(&mut text).await).map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&text);
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
        if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
            return Err(format!("answered '{}'", head.lines().next().unwrap_or("")));
        }
        serde_json::from_str::<Value>(body).map_err(|e| format!("not a status: {e}"))
    };
    match tokio::time::timeout(PEER_TIMEOUT, get).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} ms", PEER_TIMEOUT.as_millis())),
    }
}

/// What process 0 has of another process: its status (now, or the last one it gave), and why
/// it did not answer now.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// The process.
    pub process: usize,
    /// Its status: this time's, or the last one it answered with.
    pub status: Option<Value>,
    /// Why it did not answer this time.
    pub error: Option<String>,
}

/// Process 0's status `own` merged with the other processes'.
pub fn merge(mut own: Value, others: Vec<Peer>) -> Value {
    let mut processes = vec![json!({"process": own["process"], "reachable": true})];
    for peer in others {
        let mut entry = json!({"process": peer.process, "reachable": peer.error.is_none()});
        if let Some(why) = &peer.error {
            entry["error"] = why.clone().into();
            // Counted as it last answered (a finished process's final counts).
            entry["last_status"] = peer.status.is_some().into();
        }
        processes.push(entry);
        if let Some(status) = &peer.status {
            merge_vertices(&mut own, status);
            add_cpu(&mut own["cpu"], &status["cpu"]);
        }
    }
    own["scope"] = "job".into();
    own["processes"] = processes.into();
    own
}

/// Adds `other`'s CPU (s: every number, nested by name) into `own`'s.
fn add_cpu(own: &mut Value, other: &Value) {
    match (own, other) {
        (Value::Object(mine), Value::Object(theirs)) => {
            for (k, v) in theirs {
                add_cpu(mine.entry(k.clone()).or_insert(json!(0.0)), v);
            }
        }
        (mine @ Value::Number(_), Value::Number(n)) => {
            *mine = (mine.as_f64().unwrap_or(0.0) + n.as_f64().unwrap_or(0.0)).into();
        }
        _ => {}
    }
}

/// Adds `other`'s vertices into `own`'s (the same graph, by index).
fn merge_vertices(own: &mut Value, other: &Value) {
    let (Some(mine), Some(theirs)) = (own["vertices"].as_array_mut(), other["vertices"].as_array())
    else {
        return;
    };
    for (v, o) in mine.iter_mut().zip(theirs) {
        let n = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
        let (a, b) = (n(v, "instances"), n(o, "instances"));
        // Backpressure is a share of time per instance: weighted by instances.
        let bp = match a + b {
            0.0 => 0.0,
            all => (n(v, "backpressure") * a + n(o, "backpressure") * b) / all,
        };
        for k in ["elements_in", "elements_out", "instances"] {
            v[k] = (v[k].as_u64().unwrap_or(0) + o[k].as_u64().unwrap_or(0)).into();
        }
        for k in ["backpressure_s", "cpu_s", "in_per_s", "out_per_s"] {
            v[k] = (n(v, k) + n(o, k)).into();
        }
        v["backpressure"] = bp.into();
        for k in ["frontier_lag", "frontier_lag_s", "queue_fill"] {
            if !o[k].is_null() {
                v[k] = match v[k].is_null() {
                    true => o[k].clone(),
                    false => n(v, k).max(n(o, k)).into(),
                };
            }
        }
        v["frontier"] = match (v["frontier"].as_i64(), o["frontier"].as_i64()) {
            (Some(x), Some(y)) => x.min(y).into(),
            (x, y) => x.or(y).into(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_processes_add_up_and_the_lowest_frontier_wins() {
        let p0 = json!({"process": 0,
            "cpu": {"process_s": 2.0, "tasks": {"operators": 1.0}, "other_threads_s": 0.5},
            "vertices": [
            {"name": "src", "instances": 1, "elements_in": 0, "elements_out": 10,
             "cpu_s": 1.0, "backpressure": 0.5, "frontier": 20, "frontier_lag": 0},
            {"name": "win", "instances": 1, "elements_in": 7, "frontier": null}]});
        let p1 = json!({"process": 1,
            "cpu": {"process_s": 1.5, "tasks": {"operators": 0.5}, "other_threads_s": 0.25},
            "vertices": [
            {"name": "src", "instances": 0, "elements_out": 0, "frontier": null},
            {"name": "win", "instances": 1, "elements_in": 3, "cpu_s": 0.5,
             "frontier": 12, "frontier_lag": 8}]});
        let peer = |process, status, error: Option<&str>| Peer {
            process,
            status,
            error: error.map(String::from),
        };
        let m = merge(
            p0,
            vec![peer(1, Some(p1), None), peer(2, None, Some("no answer"))],
        );
        assert_eq!(m["scope"], "job");
        assert_eq!(m["vertices"][0]["instances"], 1);
        assert_eq!(m["vertices"][0]["elements_out"], 10);
        assert_eq!(m["vertices"][0]["frontier"], 20);
        assert_eq!(m["vertices"][0]["backpressure"], 0.5);
        assert_eq!(m["vertices"][1]["elements_in"], 10);
        assert_eq!(m["vertices"][1]["instances"], 2);
        assert_eq!(m["vertices"][1]["frontier"], 12);
        assert_eq!(m["vertices"][1]["frontier_lag"], 8.0);
        assert_eq!(m["processes"][2]["reachable"], false);
        assert_eq!(m["cpu"]["process_s"], 3.5);
        assert_eq!(m["cpu"]["tasks"]["operators"], 1.5);
        assert_eq!(m["cpu"]["other_threads_s"], 0.75);
    }
}
