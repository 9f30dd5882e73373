//! Live metrics (`--metrics-addr`): what a running job exposes to Prometheus and to its status
//! page, while it runs.
//!
//! Workers publish their vertex instances' counters into the registry every
//! [`PUBLISH_INTERVAL_NS`] (and once at the end), from the statistics they keep anyway
//! (`measure/stats.rs`, `measure/cpu.rs`, `measure/traffic.rs`): nothing on the per-element path
//! touches the registry or allocates for it. Names follow Prometheus' conventions: units in the
//! name, `_total` for counters (added by the OpenMetrics encoder). The server is [`server`];
//! process 0 shows the whole job ([`job`]); the last minutes are kept ([`history`]) and drawn
//! ([`charts`]).

pub mod charts;
pub mod history;
pub mod job;
pub mod server;

use crate::measure::cpu::WorkerCpu;
use crate::measure::traffic::{MessageKind, Traffic};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use xorflow_core::{GraphDesc, Time};

/// A lock that a panic elsewhere does not poison for the metrics (they only count).
pub(crate) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How often a worker publishes, ns.
pub const PUBLISH_INTERVAL_NS: u64 = 250_000_000;

/// A label set: `vertex` and `worker`, or `kind`.
type Labels = Vec<(&'static str, String)>;
type FloatCounter = Counter<f64, AtomicU64>;

/// One process's live metrics and what its status page shows.
pub struct Live {
    registry: Registry,
    graph: GraphDesc,
    process: usize,
    elements_in: Family<Labels, Counter>,
    elements_out: Family<Labels, Counter>,
    cpu: Family<Labels, FloatCounter>,
    backpressure: Family<Labels, FloatCounter>,
    frontier: Family<Labels, Gauge>,
    lag: Family<Labels, Gauge>,
    queue_fill: Family<Labels, Gauge<f64, AtomicU64>>,
    traffic_bytes: Family<Labels, Counter>,
    traffic_messages: Family<Labels, Counter>,
    checkpoints: Counter,
    checkpoint_seconds: Gauge<f64, AtomicU64>,
    checkpoint_bytes: Counter,
    restarts: Counter,
    /// Why the job restarted, newest last.
    failures: Mutex<Vec<String>>,
    /// (vertex, worker) of every instance published here.
    instances: Mutex<Vec<(usize, usize)>>,
    /// Per (vertex, worker) that has one: its frontier and lag (time units) and its instances.
    frontiers: Mutex<std::collections::HashMap<(usize, usize), (i64, i64)>>,
    /// Per (vertex, worker): the instances it stands for (a source's hosted instances).
    hosted: Mutex<std::collections::HashMap<(usize, usize), u32>>,
    /// Where the job's other processes serve their own status (process 0 of a multi-process
    /// job; empty otherwise): [`job`].
    peers: Vec<(usize, std::net::SocketAddr)>,
    /// The last status each other process answered with (process 0: [`job`]).
    pub peer_status: Mutex<std::collections::HashMap<usize, serde_json::Value>>,
    /// Event-time units per second, if the job said (`RuntimeConfig::time_per_second`).
    time_per_second: Option<u64>,
    /// Per worker: its thread's CPU by task so far (`measure/cpu.rs`).
    worker_cpu: Mutex<std::collections::HashMap<usize, WorkerCpu>>,
    /// The last minutes of the (job's) status, sampled by the server ([`history`]).
    pub history: Mutex<history::History>,
    /// Per (vertex, worker), over its last publication interval: elements in and out per
    /// second, and the share of the time it was blocked (the status page's rates).
    rates: Mutex<std::collections::HashMap<(usize, usize), [f64; 3]>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("process", &self.process)
            .finish()
    }
}

/// What a vertex instance reports to [`WorkerLive::publish`]: totals since the run started.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InstanceCounts {
    /// Elements taken in.
    pub elements_in: u64,
    /// Elements emitted.
    pub elements_out: u64,
    /// Time its outputs were full and it could not go on, ns.
    pub blocked_ns: u64,
    /// Its frontier (time units; `INF` once its input ended); `None` for an instance that has
    /// none: an element-wise vertex, a source operator hosting no instance on its worker.
    pub frontier: Option<Time>,
    /// The instances it stands for: the source instances it hosts, 1 otherwise.
    pub instances: u32,
    /// Share of its local input channels' capacity queued now (0-1).
    pub queue_fill: f64,
}

impl Live {
    /// The registry of process `process` of the job `graph` describes.
    pub fn new(graph: GraphDesc, process: usize) -> Self {
        Self::for_job(graph, process, Vec::new(), None)
    }

    /// The registry of process `process`; process 0 of a multi-process job is given where the
    /// other processes serve their own status, `peers` (process, address), and its
    /// `/api/status` shows the whole job ([`job`]). `time_per_second`: event-time units per
    /// second, if known (times shown as times, lags in seconds).
    pub fn for_job(
        graph: GraphDesc,
        process: usize,
        peers: Vec<(usize, std::net::SocketAddr)>,
        time_per_second: Option<u64>,
    ) -> Self {
        let mut r = Registry::with_prefix("xorflow");
        let elements_in = Family::default();
        let elements_out = Family::default();
        let cpu = Family::default();
        let backpressure = Family::default();
        let frontier = Family::default();
        let lag = Family::default();
        let queue_fill = Family::default();
        let traffic_bytes = Family::default();
        let traffic_messages = Family::default();
        let checkpoints = Counter::default();
        let checkpoint_seconds = Gauge::default();
        let checkpoint_bytes = Counter::default();
        let restarts = Counter::default();
        r.register(
            "vertex_elements_in",
            "Elements a vertex instance took in",
            elements_in.clone(),
        );
        r.register(
            "vertex_elements_out",
            "Elements a vertex instance emitted",
            elements_out.clone(),
        );
        r.register(
            "vertex_cpu_seconds",
            "CPU time of a vertex instance",
            cpu.clone(),
        );
        r.register(
            "vertex_backpressure_seconds",
            "Time a vertex instance's outputs were full and it waited",
            backpressure.clone(),
        );
        r.register(
            "vertex_frontier",
            "Frontier of a vertex instance, time units",
            frontier.clone(),
        );
        r.register(
            "vertex_frontier_lag",
            "How far a vertex instance's frontier is behind the newest source heartbeat, time units",
            lag.clone(),
        );
        r.register(
            "vertex_input_queue_fill_ratio",
            "Share of a vertex instance's local input channel capacity queued",
            queue_fill.clone(),
        );
        r.register(
            "traffic_bytes",
            "Bytes this process sent, by message kind",
            traffic_bytes.clone(),
        );
        r.register(
            "traffic_messages",
            "Messages this process sent, by kind",
            traffic_messages.clone(),
        );
        r.register(
            "checkpoints_completed",
            "Checkpoints completed",
            checkpoints.clone(),
        );
        r.register(
            "checkpoint_duration_seconds",
            "Duration of the last completed checkpoint",
            checkpoint_seconds.clone(),
        );
        r.register(
            "checkpoint_bytes",
            "Bytes written by completed checkpoints",
            checkpoint_bytes.clone(),
        );
        r.register(
            "restarts",
            "Restarts of the job after a lost process",
            restarts.clone(),
        );
        Live {
            registry: r,
            graph,
            process,
            elements_in,
            elements_out,
            cpu,
            backpressure,
            frontier,
            lag,
            queue_fill,
            traffic_bytes,
            traffic_messages,
            checkpoints,
            checkpoint_seconds,
            checkpoint_bytes,
            restarts,
            failures: Mutex::default(),
            instances: Mutex::default(),
            frontiers: Mutex::default(),
            hosted: Mutex::default(),
            peers,
            time_per_second,
            peer_status: Mutex::default(),
            worker_cpu: Mutex::default(),
            history: Mutex::default(),
            rates: Mutex::default(),
        }
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut s, &self.registry);
        s
    }

    /// The handles worker `worker` publishes through, one per vertex (in graph order).
    pub fn worker(self: &Arc<Self>, worker: usize) -> WorkerLive {
        let mut inst = locked(&self.instances);
        inst.extend((0..self.graph.vertices.len()).map(|v| (v, worker)));
        WorkerLive {
            live: self.clone(),
            worker,
            last_ns: 0,
            last: vec![(InstanceCounts::default(), 0); self.graph.vertices.len()],
            traffic: Traffic::default(),
        }
    }

    fn labels(&self, vertex: usize, worker: usize) -> Labels {
        vec![
            ("vertex", self.graph.vertices[vertex].name.clone()),
            ("worker", worker.to_string()),
        ]
    }

    /// A checkpoint completed: its duration and the bytes it wrote.
    pub fn checkpoint_completed(&self, duration_s: f64, bytes: u64) {
        self.checkpoints.inc();
        self.checkpoint_seconds.set(duration_s);
        self.checkpoint_bytes.inc_by(bytes);
    }

    /// The job failed with `cause` and restarts.
    pub fn restarted(&self, cause: &str) {
        self.restarts.inc();
        let mut f = locked(&self.failures);
        f.push(cause.to_string());
    }

    /// The job's other processes and where they serve their status ([`job`]).
    pub fn peers(&self) -> &[(usize, std::net::SocketAddr)] {
        &self.peers
    }

    /// This process's CPU so far, s: all its threads (`process_s`), its worker threads by task
    /// (`tasks`: `operators` is the vertices' `cpu_s` summed) and the rest (`other_threads_s`:
    /// the network thread, dedicated trackers, the metrics server), so that they add up.
    fn cpu_status(&self) -> serde_json::Value {
        let process_s = super::clock::process_cpu_ns() as f64 / 1e9;
        let workers = locked(&self.worker_cpu).clone();
        let s = |f: fn(&WorkerCpu) -> u64| workers.values().map(f).sum::<u64>() as f64 / 1e9;
        let threads = s(|w| w.thread_ns);
        serde_json::json!({
            "process_s": process_s,
            "tasks": {
                "operators": s(|w| w.operators_ns),
                "frontiers": s(|w| w.frontiers_ns),
                "flush": s(|w| w.flush_ns),
                "acks": s(|w| w.acks_ns),
                "network": s(|w| w.network_ns),
                "idle": s(|w| w.idle_ns),
            },
            "other_threads_s": (process_s - threads).max(0.0),
        })
    }

    /// The status page's data for this process: the graph, and per vertex its instances'
    /// totals (`frontier` and `frontier_lag` null where no instance has one).
    pub fn status(&self) -> serde_json::Value {
        let inst = locked(&self.instances).clone();
        let rates = locked(&self.rates).clone();
        let frontiers = locked(&self.frontiers).clone();
        let hosted = locked(&self.hosted).clone();
        let vertices: Vec<serde_json::Value> = (self.graph.vertices.iter().enumerate())
            .map(|(v, d)| {
                let mine = inst.iter().filter(|i| i.0 == v);
                let (mut i, mut o, mut bp, mut cpu) = (0, 0, 0.0, 0.0);
                let (mut f, mut lag) = (None::<i64>, None::<i64>);
                let (mut n, mut workers, mut r, mut fill) = (0, 0, [0.0; 3], 0.0f64);
                for &(_, w) in mine {
                    let l = self.labels(v, w);
                    let ri = rates.get(&(v, w)).copied().unwrap_or_default();
                    (r[0], r[1], r[2]) = (r[0] + ri[0], r[1] + ri[1], r[2] + ri[2]);
                    if let Some(&(fw, lw)) = frontiers.get(&(v, w)) {
                        f = Some(f.map_or(fw, |f| f.min(fw)));
                        lag = Some(lag.map_or(lw, |l| l.max(lw)));
                    }
                    fill = fill.max(self.queue_fill.get_or_create(&l).get());
                    i += self.elements_in.get_or_create(&l).get();
                    o += self.elements_out.get_or_create(&l).get();
                    bp += self.backpressure.get_or_create(&l).get();
                    cpu += self.cpu.get_or_create(&l).get();
                    n += hosted.get(&(v, w)).copied().unwrap_or(0);
                    workers += 1;
                }
                // i64::MAX: every instance's input has ended.
                let f = f.map(|f| if f == i64::MAX { None } else { Some(f) });
                serde_json::json!({
                    "name": d.name, "color": charts::color(v),
                    "instances": n, "elements_in": i, "elements_out": o,
                    "backpressure_s": bp, "cpu_s": cpu,
                    "frontier": f.flatten(), "ended": f == Some(None),
                    "frontier_lag": lag,
                    "queue_fill": fill,
                    "in_per_s": r[0], "out_per_s": r[1],
                    "backpressure": if workers == 0 { 0.0 } else { r[2] / workers as f64 },
                })
            })
            .collect();
        let edges: Vec<serde_json::Value> = (self.graph.edges.iter())
            .map(|e| serde_json::json!({"from": e.from, "to": e.to}))
            .collect();
        let failures = locked(&self.failures).clone();
        serde_json::json!({
            "process": self.process,
            "scope": "process",
            "time_per_second": self.time_per_second,
            "cpu": self.cpu_status(),
            "vertices": vertices,
            "edges": edges,
            "checkpoints": {
                "completed": self.checkpoints.get(),
                "last_duration_s": self.checkpoint_seconds.get(),
                "bytes": self.checkpoint_bytes.get(),
            },
            "restarts": self.restarts.get(),
            "failures": failures,
        })
    }
}

/// A worker's handles: it publishes the differences since its last publication.
pub struct WorkerLive {
    live: Arc<Live>,
    worker: usize,
    last_ns: u64,
    /// What was published last per vertex: counts and CPU ns.
    last: Vec<(InstanceCounts, u64)>,
    traffic: Traffic,
}

impl WorkerLive {
    /// True when a publication is due at `now_ns`.
    #[inline]
    pub fn due(&self, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.last_ns) >= PUBLISH_INTERVAL_NS
    }

    /// When the next publication is due, ns (an idle worker wakes for it).
    pub fn next_due_ns(&self) -> u64 {
        self.last_ns.saturating_add(PUBLISH_INTERVAL_NS)
    }

    /// Publishes per vertex its totals and CPU so far (ns), the worker thread's CPU by task
    /// `tasks`, the newest source heartbeat `newest` (for the frontier lag), and the worker's
    /// traffic so far.
    pub fn publish(
        &mut self,
        now_ns: u64,
        counts: &[InstanceCounts],
        (cpu_ns, tasks): (&[u64], &WorkerCpu),
        newest: Time,
        traffic: &Traffic,
    ) {
        locked(&self.live.worker_cpu).insert(self.worker, *tasks);
        let dt = now_ns.saturating_sub(self.last_ns).max(1) as f64 / 1e9;
        let first = self.last_ns == 0;
        self.last_ns = now_ns;
        let l = &self.live;
        let mut rates = locked(&l.rates);
        let mut frontiers = locked(&l.frontiers);
        let mut hosted = locked(&l.hosted);
        for (v, (c, &cpu)) in counts.iter().zip(cpu_ns).enumerate() {
            hosted.insert((v, self.worker), c.instances);
            let labels = l.labels(v, self.worker);
            let (prev, prev_cpu) = self.last[v];
            l.elements_in
                .get_or_create(&labels)
                .inc_by(c.elements_in.saturating_sub(prev.elements_in));
            l.elements_out
                .get_or_create(&labels)
                .inc_by(c.elements_out.saturating_sub(prev.elements_out));
            let bp = c.blocked_ns.saturating_sub(prev.blocked_ns) as f64 / 1e9;
            l.backpressure.get_or_create(&labels).inc_by(bp);
            l.cpu
                .get_or_create(&labels)
                .inc_by(cpu.saturating_sub(prev_cpu) as f64 / 1e9);
            // No frontier, no series: a gauge of 0 or i64::MAX would read as one.
            if let Some(frontier) = c.frontier {
                let f = frontier.min(i64::MAX as u64) as i64;
                l.frontier.get_or_create(&labels).set(f);
                let lag = newest.saturating_sub(frontier).min(i64::MAX as u64) as i64;
                l.lag.get_or_create(&labels).set(lag);
                frontiers.insert((v, self.worker), (f, lag));
            }
            l.queue_fill.get_or_create(&labels).set(c.queue_fill);
            if !first {
                let per_s = |now: u64, before: u64| now.saturating_sub(before) as f64 / dt;
                let r = [
                    per_s(c.elements_in, prev.elements_in),
                    per_s(c.elements_out, prev.elements_out),
                    (per_s(c.blocked_ns, prev.blocked_ns) / 1e9).min(1.0),
                ];
                rates.insert((v, self.worker), r);
            }
            self.last[v] = (*c, cpu);
        }
        drop((rates, frontiers, hosted));
        for k in MessageKind::ALL {
            let (now, before) = (traffic.get(k), self.traffic.get(k));
            let labels = vec![("kind", k.name().to_string())];
            l.traffic_bytes
                .get_or_create(&labels)
                .inc_by(now.bytes.saturating_sub(before.bytes));
            (l.traffic_messages.get_or_create(&labels))
                .inc_by(now.messages.saturating_sub(before.messages));
        }
        self.traffic = *traffic;
    }
}

/// The live metrics of a process and its server, while the job runs (`execute/restart.rs`).
pub struct LiveSetup {
    /// The registry.
    pub live: Arc<Live>,
    /// Stops the server when dropped.
    pub server: server::Server,
}

impl LiveSetup {
    /// Registers the job's metrics and serves them on `addr`; `peers`: where the job's other
    /// processes serve theirs (process 0 of a multi-process job, [`job`]); `time_per_second`:
    /// the job's event-time units per second, if known.
    ///
    /// # Errors
    /// The address cannot be bound (naming it).
    pub fn start(
        addr: std::net::SocketAddr,
        graph: GraphDesc,
        process: usize,
        peers: Vec<(usize, std::net::SocketAddr)>,
        time_per_second: Option<u64>,
    ) -> Result<Self, crate::error::MetricsError> {
        let live = Arc::new(Live::for_job(graph, process, peers, time_per_second));
        let server = server::Server::start(addr, live.clone())?;
        Ok(LiveSetup { live, server })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_follow_prometheus_naming_and_publish_differences() {
        let vertex = |name: &str, component| xorflow_core::VertexDesc {
            name: name.into(),
            component,
            instance_components: 0,
            is_source: component == 0,
            source_instances: 1,
        };
        let g = GraphDesc {
            vertices: vec![vertex("src", 0), vertex("win", 1)],
            edges: Vec::new(),
        };
        let live = Arc::new(Live::new(g, 0));
        let mut w = live.worker(1);
        let c = |i, o, b, f| InstanceCounts {
            elements_in: i,
            elements_out: o,
            blocked_ns: b,
            frontier: Some(f),
            instances: 1,
            queue_fill: 0.25,
        };
        let mut t = Traffic::default();
        t.record(MessageKind::Data, 96);
        let tasks = WorkerCpu::default();
        w.publish(
            1,
            &[c(0, 10, 0, 5), c(10, 2, 500_000_000, 3)],
            (&[1_000, 2_000_000_000], &tasks),
            9,
            &t,
        );
        t.record(MessageKind::Data, 96);
        w.publish(
            2,
            &[c(0, 15, 0, 8), c(15, 3, 500_000_000, 7)],
            (&[1_000, 3_000_000_000], &tasks),
            12,
            &t,
        );
        let text = live.encode();
        for line in [
            "xorflow_vertex_elements_in_total{vertex=\"win\",worker=\"1\"} 15",
            "xorflow_vertex_elements_out_total{vertex=\"src\",worker=\"1\"} 15",
            "xorflow_vertex_cpu_seconds_total{vertex=\"win\",worker=\"1\"} 3.0",
            "xorflow_vertex_backpressure_seconds_total{vertex=\"win\",worker=\"1\"} 0.5",
            "xorflow_vertex_frontier{vertex=\"win\",worker=\"1\"} 7",
            "xorflow_vertex_frontier_lag{vertex=\"win\",worker=\"1\"} 5",
            "xorflow_traffic_bytes_total{kind=\"data\"} 200",
            "xorflow_vertex_input_queue_fill_ratio{vertex=\"win\",worker=\"1\"} 0.25",
            "xorflow_traffic_messages_total{kind=\"data\"} 2",
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
        let s = live.status();
        assert_eq!(s["vertices"][1]["elements_in"], 15);
        assert_eq!(s["vertices"][1]["frontier"], 7);
        // A worker whose source operator hosts no instance, and an element-wise vertex: no
        // frontier, no lag, no instance counted (f681eac: frontier i64::MAX, 2 instances).
        let mut other = live.worker(0);
        let none = InstanceCounts {
            frontier: None,
            instances: 0,
            ..c(0, 0, 0, 0)
        };
        other.publish(3, &[none, c(1, 0, 0, 6)], (&[0, 0], &tasks), 12, &t);
        let s = live.status();
        assert_eq!(s["vertices"][0]["instances"], 1);
        assert_eq!(s["vertices"][0]["frontier"], 8);
        assert_eq!(s["vertices"][1]["frontier"], 6);
        assert!(!live
            .encode()
            .contains("xorflow_vertex_frontier{vertex=\"src\",worker=\"0\"}"));
        live.checkpoint_completed(0.25, 4096);
        live.restarted("process 1 lost");
        let s = live.status();
        assert_eq!(s["checkpoints"]["completed"], 1);
        assert_eq!(s["failures"][0], "process 1 lost");
    }
}
