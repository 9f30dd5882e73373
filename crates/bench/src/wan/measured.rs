//! Running one `xorflow-lab bench wan` run and what it measured.

use super::flink_cluster::FlinkCluster;
use super::jvm::PeerCluster;
use super::netns::Router;
use super::spec::{Delay, Network, RunSpec, Workload};
use super::storm_cluster::StormCluster;
use super::tcp_counters::TcpCounters;
use crate::chain::ChainResult;
use crate::subprocess::stdout_within;
use crate::ysb::{Engine, Engines, Point};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;
use xorflow_runtime::ValueName;

/// What one run measured (a line of `raw.jsonl`, a row of `runs.csv`). Latencies in ms.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    /// Run id (its folder under `runs/`).
    pub id: String,
    /// What ran.
    pub spec: RunSpec,
    /// Mean and largest RTT over the pairs of processes, ms.
    pub rtt_mean_ms: f64,
    /// Largest RTT, ms.
    pub rtt_max_ms: f64,
    /// Events (YSB) or elements (chain) per second achieved.
    pub throughput_per_s: f64,
    /// YSB: counts equal the oracle's; chain: every element reached the sink.
    pub correct: bool,
    /// YSB window latency (last event to emission): p50, p90, p95, p99, max.
    pub window_ms: Option<[f64; 5]>,
    /// YSB: the largest lateness of an emission behind its schedule, ms (a source held back by
    /// backpressure, or started late). Results written before it was kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_lag_ms: Option<f64>,
    /// Notification latency p50 and p99: YSB at the window; chain per sink instance.
    pub notification_ms: Option<[f64; 2]>,
    /// Chain: notification latency from the last arrival at any sink instance, p50 and p99.
    pub notification_any_ms: Option<[f64; 2]>,
    /// Chain: the same from the last arrival of the substream *or an earlier one* anywhere (the
    /// first moment a frontier could pass it; the runs measure every substream, so exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_frontier_ms: Option<[f64; 2]>,
    /// Chain with trAcker: ack and heartbeat pieces applied by all tracker shards and replicas
    /// together (a piece once per replica), and the seconds they spent applying them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracker_pieces: Option<u64>,
    /// See `tracker_pieces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracker_busy_s: Option<f64>,
    /// Chain: element latency p50 and p99 (clock-aligned across processes).
    pub element_ms: Option<[f64; 2]>,
    /// Elements seen below a notified frontier (must be 0).
    pub below_frontier: u64,
    /// A peer behind delay proxies: bytes the proxies forwarded between its TaskManagers (both
    /// directions); in namespaces, bytes the router delivered between its JVMs (JobManager RPC
    /// included). More than zero, or the run failed: its traffic did not cross the delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxied_bytes: Option<u64>,
    /// In namespaces: the kernels' TCP retransmissions, timeouts and device drops over every
    /// namespace of the run (each namespace's in `runs/<id>/tcp.txt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpCounters>,
}

/// Runs specs with this binary and a YSB input.
pub struct Runner {
    /// This binary, the YSB inputs.
    pub engines: Engines,
    /// `<results>/runs`.
    pub runs_dir: PathBuf,
    /// Seconds of generation per YSB run.
    pub duration_s: u64,
    /// Seconds per chain run.
    pub chain_duration_s: u64,
    /// Where xorflow's processes talk.
    pub network: Network,
    /// In namespaces: their TCP congestion control (`Plan::tcp_congestion`).
    pub tcp_congestion: String,
}

impl Runner {
    /// Runs spec number `i`, keeping its command, stdout and stderr in `runs/<id>/`.
    ///
    /// # Errors
    /// The run fails, times out or prints no result.
    pub fn run(&self, spec: &RunSpec, i: usize) -> Result<Measured> {
        let id = spec.id(i);
        let dir = self.runs_dir.join(&id);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
        let delay = spec.delay.args(&dir.join("delay-matrix.txt"))?;
        // In namespaces the router delays the packets; on loopback the job delays its frames.
        let router = match (self.network, spec.engine) {
            (Network::Netns, Engine::Xorflow) => Some(Router::start(
                &self.engines.xorflow,
                self.total_processes(spec),
                &delay,
                &self.tcp_congestion,
                &dir.join("router.txt"),
            )?),
            _ => None,
        };
        let mut extra = if router.is_some() { Vec::new() } else { delay };
        extra.extend(spec.args.iter().cloned());
        let at = Where {
            dir: &dir,
            extra,
            router,
        };
        let (rtt_mean_ms, rtt_max_ms) = spec.delay.rtt_ms(self.total_processes(spec));
        let base = Measured {
            id,
            spec: spec.clone(),
            rtt_mean_ms,
            rtt_max_ms,
            throughput_per_s: 0.0,
            correct: false,
            window_ms: None,
            generator_lag_ms: None,
            notification_ms: None,
            notification_any_ms: None,
            notification_frontier_ms: None,
            tracker_pieces: None,
            tracker_busy_s: None,
            element_ms: None,
            below_frontier: 0,
            proxied_bytes: None,
            tcp: None,
        };
        match (spec.workload, spec.engine) {
            (Workload::Ysb, Engine::Xorflow) => self.ysb(spec, at, base),
            (Workload::Ysb, Engine::Flink | Engine::Storm) if self.network == Network::Netns => {
                self.peer_netns(spec, &dir, base)
            }
            (Workload::Ysb, Engine::Flink) => self.flink(spec, &dir, base),
            (Workload::Chain, Engine::Xorflow) => self.chain(spec, at, base),
            (w, e) => anyhow::bail!("bench wan runs no {w:?} on {}", e.name()),
        }
    }

    /// Processes of the run, a dedicated tracker process included.
    fn total_processes(&self, spec: &RunSpec) -> usize {
        spec.processes + usize::from(spec.args.iter().any(|a| a == "--tracker-processes"))
    }

    /// A YSB point: one worker (slot) per process, one source per process.
    fn point(&self, spec: &RunSpec) -> Point {
        Point {
            rate: spec.rate,
            duration_s: self.duration_s,
            processes: spec.processes,
            workers: 1,
            sources: spec.processes,
        }
    }

    fn ysb(&self, spec: &RunSpec, at: Where, m: Measured) -> Result<Measured> {
        let p = self.point(spec);
        let counts = at.dir.join("counts.csv");
        let (exe, args) = self
            .engines
            .command(Engine::Xorflow, p, &counts, &at.extra)?;
        // Processes started by hand share a schedule starting on a whole second after their
        // start-up, which crosses the delay too: connections and the clock alignment's round
        // trips took about 110 RTTs in namespaces (11 s at 100 ms).
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as u64;
        let start_ms = (now_ms / 1000 + 5 + (m.rtt_max_ms * 0.15).ceil() as u64) * 1000;
        let hosts = ["--start-ms".to_string(), start_ms.to_string()];
        let timeout = Duration::from_secs(self.duration_s + 180);
        let out = at.launch(&exe, &args, &hosts, timeout)?;
        let r = self.engines.result_of(Engine::Xorflow, p, &counts, &out)?;
        Ok(Measured {
            tcp: at.tcp(),
            ..measured_ysb(&r, m)
        })
    }

    /// The YSB on Flink, one TaskManager per process, each behind a delay proxy
    /// (`xorflow_runtime::net::delay::proxy`): TaskManager `i` binds a free port and advertises
    /// its proxy's, so every byte between TaskManagers crosses the RTT (`ProxiedMiniCluster`
    /// in `peers/flink`). Only the full mesh: the proxy cannot tell which TaskManager connects.
    fn flink(&self, spec: &RunSpec, dir: &Path, m: Measured) -> Result<Measured> {
        use xorflow_runtime::net::delay::proxy::{DelayProxy, Route};
        let Delay::Mesh { rtt_ms, jitter_ms } = spec.delay else {
            anyhow::bail!(
                "Flink runs behind proxies on a full mesh only, not {}",
                spec.delay.label()
            );
        };
        let mut routes = Vec::new();
        let mut ports = Vec::new();
        for _ in 0..spec.processes {
            let listen = std::net::TcpListener::bind("127.0.0.1:0")?;
            // A free port for the TaskManager to bind (free again once this returns; the
            // TaskManager takes it a second later, and fails loudly if another took it first).
            let bind = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
            ports.push(format!("{}:{}", listen.local_addr()?.port(), bind.port()));
            routes.push(Route {
                listen,
                upstream: bind,
            });
        }
        let ms = |v: u64| Duration::from_micros(v * 500);
        let proxy = DelayProxy::start(routes, ms(rtt_ms), ms(jitter_ms))?;
        let p = self.point(spec);
        let counts = dir.join("counts.csv");
        let (exe, mut args) = self.engines.command(Engine::Flink, p, &counts, &[])?;
        args.extend(["--data-ports".into(), ports.join(",")]);
        let out = run_logged(dir, &exe, &args, Duration::from_secs(self.duration_s + 180))?;
        let bytes = proxy
            .counters
            .bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        drop(proxy);
        anyhow::ensure!(
            bytes > 0,
            "no byte crossed the delay proxies: Flink's TaskManagers did not connect through them"
        );
        let r = self.engines.result_of(Engine::Flink, p, &counts, &out)?;
        Ok(Measured {
            proxied_bytes: Some(bytes),
            ..measured_ysb(&r, m)
        })
    }

    /// The YSB on a peer's own cluster in network namespaces: a standalone Flink cluster
    /// ([`FlinkCluster`]: one TaskManager with one slot per process) or a Storm cluster
    /// ([`StormCluster`]: one supervisor with one worker slot per process), each node in its
    /// namespace behind the router with the run's delay (any delay: full mesh, matrix or city
    /// set), the coordinator and the client in namespace 0.
    fn peer_netns(&self, spec: &RunSpec, dir: &Path, m: Measured) -> Result<Measured> {
        let delay = spec.delay.args(&dir.join("delay-matrix.txt"))?;
        let router = Router::start(
            &self.engines.xorflow,
            spec.processes,
            &delay,
            &self.tcp_congestion,
            &dir.join("router.txt"),
        )?;
        let engine = spec.engine;
        let counts = dir.join("counts.csv");
        let (p, mut cluster, exe, args) = match engine {
            Engine::Flink => self.flink_cluster(spec, &router, dir, &counts, m.rtt_max_ms)?,
            _ => self.storm_cluster(spec, &router, dir, &counts, m.rtt_max_ms)?,
        };
        let cmd = format!(
            "{}\n(a {} cluster: {}/*.out, *.err)\nip netns exec NAMESPACE-0 {exe} {}\n",
            router.command(),
            engine.name(),
            dir.display(),
            args.join(" ")
        );
        crate::stand::files::write_whole(&dir.join("command.txt"), cmd.as_bytes())?;
        let mut client = router.spawn(0, &exe, &args, dir, "client")?;
        let timeout = Duration::from_secs(self.duration_s + 300);
        let status = super::netns::wait_until(&mut client, std::time::Instant::now() + timeout)?;
        let exited = cluster.exited();
        let tcp = router.tcp_counters(dir);
        // The router first: stopping, it kills everything in its namespaces, the JVMs the
        // daemons launched too (Storm's workers), which would write into the cluster's scratch
        // folder again after the cluster removed it.
        drop(router);
        drop(cluster);
        let out = std::fs::read_to_string(dir.join("client.out")).unwrap_or_default();
        crate::stand::files::write_whole(&dir.join("stdout.txt"), out.as_bytes())?;
        match status {
            Some(s) if s.success() => {}
            Some(s) => anyhow::bail!(
                "the {} client {s}{} (its stderr: {}/client.err)",
                engine.name(),
                if exited.is_empty() {
                    String::new()
                } else {
                    format!("; exited before it: {}", exited.join(", "))
                },
                dir.display()
            ),
            None => {
                let _ = client.kill();
                let _ = client.wait();
                anyhow::bail!("the {} client still ran after {timeout:?}", engine.name());
            }
        }
        // As behind the proxies, a run whose bytes did not cross the delay measured nothing.
        let bytes = super::netns::delivered_bytes(&dir.join("router.txt")).unwrap_or(0);
        anyhow::ensure!(
            bytes > 0,
            "the delay router delivered no byte: {}'s JVMs did not talk through it",
            engine.name()
        );
        let r = self.engines.result_of(engine, p, &counts, &out)?;
        Ok(Measured {
            proxied_bytes: Some(bytes),
            tcp,
            ..measured_ysb(&r, m)
        })
    }

    /// Starts a standalone Flink cluster for `spec` and returns its point, the cluster and the
    /// client's command (`YsbJob --cluster`).
    fn flink_cluster(
        &self,
        spec: &RunSpec,
        router: &Router,
        dir: &Path,
        counts: &Path,
        rtt_max_ms: f64,
    ) -> Result<PeerRun> {
        let java = (self.engines.flink.as_ref()).context("the Flink peer was not built")?;
        let cluster = FlinkCluster::start(router, java, spec.processes, 1, dir)?;
        let p = self.point(spec);
        let (exe, mut args) = self.engines.command(Engine::Flink, p, counts, &[])?;
        // T0 once every TaskManager registered, this far ahead: deployment crosses the delay
        // (a few round trips per TaskManager), and the JVMs load and compile their tasks' classes
        // on 2 cores (4 TaskManagers took 8 s: with a 5 s margin their sources started 2.9 s late).
        let margin_ms = 3000 + 2500 * spec.processes as u64 + 20 * rtt_max_ms.ceil() as u64;
        args.extend([
            "--cluster".into(),
            FlinkCluster::rest_address(),
            "--deploy-margin-ms".into(),
            margin_ms.to_string(),
        ]);
        Ok((p, Box::new(cluster), exe, args))
    }

    /// Starts a Storm cluster for `spec` and returns its point (N sources and N window tasks,
    /// so each source's chain sits in one worker: `peers/ysb-contract.md`), the cluster and the
    /// client's command (`YsbTopology --cluster`).
    fn storm_cluster(
        &self,
        spec: &RunSpec,
        router: &Router,
        dir: &Path,
        counts: &Path,
        rtt_max_ms: f64,
    ) -> Result<PeerRun> {
        let java = (self.engines.storm.as_ref()).context("the Storm peer was not built")?;
        let cluster = StormCluster::start(router, java, spec.processes, dir)?;
        let p = Point {
            workers: spec.processes,
            ..self.point(spec)
        };
        let (exe, mut args) = self.engines.command(Engine::Storm, p, counts, &[])?;
        super::storm_cluster::add_storm_jar(&mut args)?;
        // The client fixes T0 once every spout runs (Storm's deployment took 13-43 s here), so
        // the margin covers only the start file reaching the workers and their first tuples.
        let margin_ms = 3000 + 10 * rtt_max_ms.ceil() as u64;
        let stats = dir.join("storm-stats");
        let _ = std::fs::remove_dir_all(&stats);
        args.extend([
            "--cluster".into(),
            StormCluster::nimbus_address(),
            "--storm-workers".into(),
            spec.processes.to_string(),
            "--stats-dir".into(),
            stats.display().to_string(),
            "--deploy-margin-ms".into(),
            margin_ms.to_string(),
        ]);
        // The variant's own options (the windowed bolt: `wan/plan.rs`).
        args.extend(spec.args.iter().cloned());
        Ok((p, Box::new(cluster), exe, args))
    }

    fn chain(&self, spec: &RunSpec, at: Where, m: Measured) -> Result<Measured> {
        let elements = spec.rate * self.chain_duration_s;
        let mut args: Vec<String> = [
            "bench",
            "chain",
            "--processes",
            &spec.processes.to_string(),
            "--workers",
            "1",
            "--rate",
            &spec.rate.to_string(),
            "--elements",
            &elements.to_string(),
            "--granularity",
            "100",
            "--json",
            // Every substream, so the frontier measure is exact (10 substreams/s here).
            "--latency-sample",
            "all",
        ]
        .map(String::from)
        .to_vec();
        args.extend(at.extra.iter().cloned());
        let exe = self.engines.xorflow.display().to_string();
        let timeout = Duration::from_secs(self.chain_duration_s + 180);
        let out = at.launch(&exe, &args, &[], timeout)?;
        let line = (out.lines().rev())
            .find(|l| l.trim_start().starts_with('{'))
            .context("bench chain printed no JSON result")?;
        let r: ChainResult = serde_json::from_str(line).context("bench chain's JSON")?;
        let ms = |v: Option<f64>| v.unwrap_or(0.0) / 1e3;
        let c = &r.measures;
        let el = c
            .element_latency_clock
            .as_ref()
            .unwrap_or(&c.element_latency);
        let any = &c.notification_latency_any;
        let frontier = &c.notification_latency_frontier;
        Ok(Measured {
            throughput_per_s: c.achieved_rate.unwrap_or(c.elements_per_s),
            correct: c.elements_received.is_none_or(|n| n == c.elements),
            notification_ms: c
                .latency_p50_us
                .map(|p50| [p50 / 1e3, ms(c.latency_p99_us)]),
            notification_any_ms: (any.count > 0).then(|| [ms(any.p50_us), ms(any.p99_us)]),
            notification_frontier_ms: (frontier.count > 0)
                .then(|| [ms(frontier.p50_us), ms(frontier.p99_us)]),
            tracker_pieces: r.tracker_pieces_applied,
            tracker_busy_s: r.tracker_busy_s,
            element_ms: Some([ms(el.p50_us), ms(el.p99_us)]),
            tcp: at.tcp(),
            ..m
        })
    }
}

/// A peer's cluster started for a run: the run's point, the cluster, and the client's
/// executable and arguments.
type PeerRun = (Point, Box<dyn PeerCluster>, String, Vec<String>);

/// `m` with a YSB result's figures.
fn measured_ysb(r: &xorflow_ysb::bench::BenchResult, m: Measured) -> Measured {
    let w = &r.window_latency_ms;
    Measured {
        throughput_per_s: r.throughput_events_per_s,
        correct: r.counts_match_oracle == Some(true) && r.events_emitted == r.events_expected,
        window_ms: Some([w.p50, w.p90, w.p95, w.p99, w.max]),
        generator_lag_ms: Some(r.generator_lag_ms_max),
        notification_ms: r.notification_latency_ms.as_ref().map(|n| [n.p50, n.p99]),
        below_frontier: r.elements_below_frontier,
        ..m
    }
}

/// Where an xorflow run runs: its folder, its extra options, and the router when its
/// processes sit in namespaces.
struct Where<'a> {
    dir: &'a Path,
    extra: Vec<String>,
    router: Option<Router>,
}

impl Where<'_> {
    /// The TCP counters of the run's namespaces (`None` on loopback).
    fn tcp(&self) -> Option<TcpCounters> {
        self.router.as_ref().and_then(|r| r.tcp_counters(self.dir))
    }

    /// Runs `exe args` on loopback ([`run_logged`]) or, with a router, as its hosts' processes
    /// with `hostfile_extra` added ([`Router::run`]); writes `command.txt` and `stdout.txt`
    /// (process 0's) into the run's folder either way and returns that stdout.
    fn launch(
        &self,
        exe: &str,
        args: &[String],
        hostfile_extra: &[String],
        timeout: Duration,
    ) -> Result<String> {
        let Some(r) = &self.router else {
            return run_logged(self.dir, exe, args, timeout);
        };
        let cmd = format!(
            "{}\nip netns exec NAMESPACE-i {exe} {} {} --hostfile hosts --process i \
             --cluster-token T\n",
            r.command(),
            args.join(" "),
            hostfile_extra.join(" ")
        );
        let write = crate::stand::files::write_whole;
        write(&self.dir.join("command.txt"), cmd.as_bytes())?;
        let out = r.run(exe, args, hostfile_extra, self.dir, timeout)?;
        write(&self.dir.join("stdout.txt"), out.as_bytes())?;
        Ok(out)
    }
}

/// Runs `exe args` within `timeout`, writing `command.txt` and `stdout.txt` into `dir`; returns
/// its stdout.
///
/// # Errors
/// The run fails or times out (the error carries its stderr).
fn run_logged(dir: &Path, exe: &str, args: &[String], timeout: Duration) -> Result<String> {
    let cmd = std::iter::once(exe.to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    crate::stand::files::write_whole(&dir.join("command.txt"), format!("{cmd}\n").as_bytes())?;
    let out = stdout_within(exe, args, timeout)?;
    crate::stand::files::write_whole(&dir.join("stdout.txt"), out.as_bytes())?;
    Ok(out)
}
