//! `xorflow-lab bench nexmark`: the Nexmark queries of examples/nexmark/queries on xorflow
//! (`xorflow sql`) and on Flink SQL (peers/flink-sql, `NexmarkSql`), over the same generated
//! files, alternating, with each process's wall and CPU time; and on xorflow alone with the
//! in-process generator (examples/nexmark/ddl_gen.sql) against the per-core aims of issue 50.
//! Writes `summary.txt` and `results.json` into its results folder (docs/peers.md, "Flink SQL
//! (Nexmark)").

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xorflow_bench::subprocess::median;
use xorflow_cli::outcome::CommandError;
use xorflow_cli::say;
use xorflow_cli::terminal::print_out;

mod latency;

/// The Nexmark tables, in the order of their event kinds.
const TABLES: [&str; 3] = ["person", "auction", "bid"];

/// The per-core aims of issue 50 with the in-process generator, events/s per core.
const AIMS: [(&str, f64); 6] = [
    ("q0", 1e6),
    ("q1", 1e6),
    ("q2", 1e6),
    ("q5", 5e5),
    ("q7", 5e5),
    ("q8", 5e5),
];

/// How events are counted, as the report states it.
const COUNTING: &str = "Events counted: the rows of the tables a query reads (a query on bid \
     alone: the bids, 46 in 50 events; a join: the sum of the tables it reads), over the time \
     and CPU of the run. xorflow's are the rows `xorflow sql` reports read; Flink's, the lines of \
     the files its optimized plan scans. Nexmark's own runner divides every event of the stream, \
     all kinds, by the time, so its figures for a bid-only query are 50/46 of what this rule \
     gives.";

/// What xorflow's own window figure in the throughput runs is.
const LATENCY: &str = "xorflow's completion delay in the throughput runs: the time from the \
     last input row a window aggregate's instance received to the window's result, when \
     trAcker's frontier passed the window's end, over every window of the run (`xorflow sql`'s \
     \"window latency\" line; the median of the runs' p50 and p99). Over files read as fast as \
     they can be, event time is not wall-clock time, so this is a delay inside the engine, not \
     behind a clock, and Flink has no equivalent; the window latency of both engines against \
     the clock is measured by the replay runs below.";

/// Options of `xorflow-lab bench nexmark`.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  xorflow-lab bench nexmark --events 1000000 --rounds 3\n  \
                  xorflow-lab bench nexmark --events 20000 --queries q0,q2 --rounds 1 --no-flink\n\n\
                  Writes <out>/summary.txt and <out>/results.json (docs/peers.md, \"Flink SQL \
                  (Nexmark)\"); the generated events go to <out>/data and are deleted at the end \
                  (--keep-data keeps them)."
)]
pub struct NexmarkArgs {
    /// Events to generate, all kinds (of every 50: 1 person, 3 auctions, 46 bids).
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Queries, comma-separated (q0,q1,...); default: every qN.sql in <nexmark-dir>/queries.
    #[arg(long, value_delimiter = ',')]
    queries: Vec<String>,
    /// Rounds: each runs every query on xorflow and on Flink (which of the two goes first
    /// alternates from round to round), then on xorflow with the generator; medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// xorflow's --workers and Flink's parallelism.
    #[arg(long, default_value_t = 2)]
    parallelism: usize,
    /// Leave Flink SQL out (no Java or Maven needed).
    #[arg(long)]
    no_flink: bool,
    /// Run Flink also on the queries xorflow refuses (default: only where there is a ratio).
    #[arg(long)]
    flink_unsupported: bool,
    /// Runs of the query in Flink's JVM before the measured one (a cold JVM is about twice as
    /// slow; Nexmark's own runner warms up too).
    #[arg(long, default_value_t = 1)]
    flink_warmup_runs: usize,
    /// Both engines' checkpoint interval: xorflow's --checkpoint-interval (checkpoints in a
    /// folder beside the run's log, deleted after it) and Flink's checkpointing interval.
    /// Nexmark's Flink configuration takes 3 minutes, which a run of seconds never reaches; both
    /// engines then carry what checkpointing costs while running (epochs, barriers) and write none.
    #[arg(long, default_value = "3m", value_parser = humantime::parse_duration)]
    checkpoint_interval: Duration,
    /// Flink's state backend: rocksdb (Nexmark's configuration) or hashmap.
    #[arg(long, default_value = "rocksdb", value_parser = ["rocksdb", "hashmap"])]
    flink_state_backend: String,
    /// Leave out xorflow's runs with the in-process generator.
    #[arg(long)]
    no_generator: bool,
    /// Results folder [default: bench/results/nexmark-<UTC time>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the generated events in <out>/data.
    #[arg(long)]
    keep_data: bool,
    /// Where ddl_files.sql, ddl_gen.sql and queries/ are.
    #[arg(long, default_value = "examples/nexmark")]
    nexmark_dir: PathBuf,
    /// Where the peers' projects are (flink-sql/).
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// A run that takes longer is killed and reported as failed.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Window latency runs: both engines replay a second set of events at this rate, events/s
    /// of all kinds on the wall clock, each event when its event time is due (0: no latency
    /// runs).
    #[arg(long, default_value_t = 20_000)]
    latency_rate: u64,
    /// How much faster event time runs than the wall clock in the latency runs: at 10, a 10 s
    /// window closes every second, so a run of seconds measures dozens of windows. The events
    /// are generated at --latency-rate / --latency-speed events per second of event time.
    #[arg(long, default_value_t = 10)]
    latency_speed: u64,
    /// How long each latency run replays (its events: --latency-rate times this).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    latency_duration: Duration,
    /// Queries of the latency runs, from <nexmark-dir>/latency/ [default: those of q5, q7, q8
    /// and q11 the bench runs].
    #[arg(long, value_delimiter = ',')]
    latency_queries: Vec<String>,
}

/// Which engine a run is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
enum System {
    /// `xorflow sql` over the files.
    Xorflow,
    /// Flink SQL over the same files.
    Flink,
    /// `xorflow sql` with the in-process generator.
    XorflowGen,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Xorflow => "xorflow",
            System::Flink => "flink",
            System::XorflowGen => "xorflow-gen",
        }
    }
}

/// One run of one query on one system.
#[derive(Clone, Debug, Serialize)]
struct Run {
    query: String,
    system: System,
    round: usize,
    /// ok, unsupported (xorflow refused the query before running it), failed.
    status: String,
    /// The error's first line, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    /// Events read (see [`COUNTING`]).
    events: u64,
    /// The tables read, with their rows.
    table_events: BTreeMap<String, u64>,
    /// xorflow: the process's wall time; Flink: from submitting the job to its end.
    wall_s: f64,
    /// xorflow: the process's CPU (user + system, wait4); Flink: the JVM's CPU over the job.
    cpu_s: f64,
    events_per_s: f64,
    events_per_cpu_s: f64,
    /// Flink: events over the job's net runtime as its JobManager saw it (from the job's
    /// creation to its end: no planning and no MiniCluster start).
    #[serde(skip_serializing_if = "Option::is_none")]
    events_per_s_net: Option<f64>,
    /// Rows into the sink (xorflow's report; Flink's blackhole counts none).
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_written: Option<u64>,
    /// xorflow: window latency p50 and p99 over the run's windows, ms (its "window latency"
    /// line; `None`: the query has no window aggregate).
    #[serde(skip_serializing_if = "Option::is_none")]
    window_latency_ms: Option<(f64, f64)>,
    /// The whole process (for Flink, the JVM from its start), wall and CPU by wait4.
    process_wall_s: f64,
    process_cpu_s: f64,
    /// CPU the rest of the machine used while the process ran (/proc/stat's busy time less the
    /// process's own): other work that disturbed the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    others_cpu_s: Option<f64>,
    /// Flink's own JSON line.
    #[serde(skip_serializing_if = "Option::is_none")]
    flink: Option<serde_json::Value>,
    /// The run's stdout and stderr: runs/<log>.out, .err.
    log: String,
}

/// Medians over a query's successful runs on one system.
#[derive(Clone, Debug, Serialize)]
struct Medians {
    runs: usize,
    events: u64,
    events_per_s: f64,
    events_per_cpu_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    events_per_s_net: Option<f64>,
    wall_s: f64,
    cpu_s: f64,
    /// Window latency (p50, p99), ms: the medians over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    window_latency_ms: Option<(f64, f64)>,
}

/// One query's row of the report.
#[derive(Clone, Debug, Serialize)]
struct QueryRow {
    query: String,
    /// ok, or why xorflow did not run it.
    xorflow_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    xorflow_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    xorflow: Option<Medians>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flink: Option<Medians>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flink_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    xorflow_gen: Option<Medians>,
    /// xorflow / Flink, events/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio_events_per_s: Option<f64>,
    /// xorflow / Flink's events over its net runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio_events_per_s_net: Option<f64>,
    /// xorflow / Flink, events per CPU second.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio_events_per_cpu_s: Option<f64>,
    /// Issue 50's aim with the generator, events/s per core.
    #[serde(skip_serializing_if = "Option::is_none")]
    aim_events_per_cpu_s: Option<f64>,
}

/// What the whole bench ran on and with.
#[derive(Serialize)]
struct Results<'a> {
    command: String,
    started_utc: String,
    cpu_model: String,
    cores: usize,
    events: u64,
    kind_events: BTreeMap<String, u64>,
    parallelism: usize,
    rounds: usize,
    xorflow_version: String,
    flink_version: Option<String>,
    java_version: Option<String>,
    flink_warmup_runs: usize,
    flink_state_backend: &'a str,
    /// Both engines' checkpoint interval, ms (`--checkpoint-interval`).
    checkpoint_interval_ms: u128,
    counting: &'a str,
    latency: &'a str,
    queries: Vec<QueryRow>,
    runs: Vec<Run>,
    /// The window latency runs ([`latency`]): how the events were replayed, each query's
    /// medians, each run.
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_replay: Option<latency::Replay>,
    latency_queries: Vec<latency::LatencyRow>,
    latency_runs: Vec<latency::LatencyRun>,
}

/// Runs `xorflow-lab bench nexmark`.
///
/// # Errors
/// A bad option, a missing file or tool, a failed build or generation (a query's failure is
/// reported, not an error).
pub fn run(a: NexmarkArgs) -> Result<(), CommandError> {
    if a.rounds == 0 || a.parallelism == 0 || a.events == 0 {
        return Err(CommandError::Config(
            "--rounds, --parallelism and --events must be at least 1".into(),
        ));
    }
    if a.latency_rate > 0
        && (a.latency_speed == 0 || !a.latency_rate.is_multiple_of(a.latency_speed))
    {
        return Err(CommandError::Config(format!(
            "--latency-speed {} must divide --latency-rate {} (the events' rate of event time)",
            a.latency_speed, a.latency_rate
        )));
    }
    let queries = queries(&a).map_err(|e| CommandError::Config(e.to_string()))?;
    let dir = bench(&a, &queries)?;
    say!("{}", dir.join("summary.txt").display());
    Ok(())
}

/// The query files: those named, or every qN.sql in order of N.
fn queries(a: &NexmarkArgs) -> Result<Vec<(String, PathBuf)>> {
    let qdir = a.nexmark_dir.join("queries");
    let mut names: Vec<String> = a.queries.iter().map(|q| q.trim().to_string()).collect();
    if names.is_empty() {
        for e in std::fs::read_dir(&qdir)
            .with_context(|| format!("cannot list '{}' (--nexmark-dir)", qdir.display()))?
        {
            let name = e?.file_name().to_string_lossy().into_owned();
            if let Some(q) = name.strip_suffix(".sql") {
                if q.starts_with('q') && q[1..].parse::<u32>().is_ok() {
                    names.push(q.to_string());
                }
            }
        }
        names.sort_by_key(|q| q[1..].parse::<u32>().unwrap_or(u32::MAX));
    }
    names.dedup();
    let mut out = Vec::new();
    for q in names {
        let p = qdir.join(format!("{q}.sql"));
        if !p.is_file() {
            bail!("--queries: no '{}'", p.display());
        }
        out.push((q, p));
    }
    if out.is_empty() {
        bail!("no query files in '{}'", qdir.display());
    }
    Ok(out)
}

fn bench(a: &NexmarkArgs, queries: &[(String, PathBuf)]) -> Result<PathBuf> {
    let started = chrono::Utc::now();
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("bench/results").join(format!("nexmark-{}", started.format("%Y%m%dT%H%M%SZ")))
    });
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("cannot create '{}'", out.display()))?;
    let out = out.canonicalize()?;
    let xorflow = xorflow_bench::subprocess::engine_binary()?;
    let flink_cmd = if a.no_flink {
        None
    } else {
        Some(xorflow_bench::stand::peers::build::flink_sql_command(
            &a.peers_dir,
            "xorflow.peer.flinksql.NexmarkSql",
        )?)
    };

    // The events, once, and the two DDLs that read them.
    let data = out.join("data");
    std::fs::create_dir_all(&data)?;
    let t0 = Instant::now();
    let line = xorflow_bench::subprocess::stdout_of(
        &xorflow,
        &[
            "nexmark".into(),
            "generate".into(),
            "--events".into(),
            a.events.to_string(),
            "--out".into(),
            data.display().to_string(),
        ],
    )?;
    say!(
        "nexmark: {} ({:.1} s)",
        line.trim(),
        t0.elapsed().as_secs_f64()
    );
    let mut kinds = BTreeMap::new();
    for t in TABLES {
        kinds.insert(t.to_string(), count_lines(&data.join(format!("{t}.json")))?);
    }
    let files_ddl = out.join("ddl_files.sql");
    std::fs::write(&files_ddl, files_ddl_text(&a.nexmark_dir, &data)?)?;
    let gen_ddl = out.join("ddl_gen.sql");
    if !a.no_generator {
        std::fs::write(&gen_ddl, gen_ddl_text(&a.nexmark_dir, a.events)?)?;
    }

    let mut runs: Vec<Run> = Vec::new();
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for round in 1..=a.rounds {
        for (q, path) in queries {
            let mut order = vec![System::Xorflow];
            if flink_cmd.is_some() {
                // Odd rounds start with xorflow, even ones with Flink.
                if round % 2 == 0 {
                    order.insert(0, System::Flink);
                } else {
                    order.push(System::Flink);
                }
            }
            if !a.no_generator {
                order.push(System::XorflowGen);
            }
            for sys in order {
                // Round 1 runs xorflow first, so a query it refuses is known before Flink runs it.
                if refused.contains_key(q) && (sys != System::Flink || !a.flink_unsupported) {
                    continue;
                }
                let log = format!("r{round}-{q}-{}", sys.name());
                let stem = out.join("runs").join(&log);
                // A folder of its own per run: one holding an earlier run's checkpoints is refused.
                let checkpoints = stem.with_extension("checkpoints");
                let ckpt = (a.checkpoint_interval, checkpoints.as_path());
                let r = match sys {
                    System::Xorflow => {
                        let args = sql_args(&files_ddl, path, a.parallelism, ckpt);
                        xorflow_run(&xorflow, &args, &stem, a.timeout, &kinds, None)?
                    }
                    System::XorflowGen => {
                        let args = sql_args(&gen_ddl, path, a.parallelism, ckpt);
                        let tables = tables_read(&runs, q, path)?;
                        xorflow_run(&xorflow, &args, &stem, a.timeout, &kinds, Some(&tables))?
                    }
                    System::Flink => {
                        let mut argv = flink_cmd.clone().expect("flink is on");
                        argv.extend(
                            [
                                "--query",
                                &path.display().to_string(),
                                "--data-dir",
                                &data.display().to_string(),
                                "--parallelism",
                                &a.parallelism.to_string(),
                                "--warmup-runs",
                                &a.flink_warmup_runs.to_string(),
                                "--state-backend",
                                &a.flink_state_backend,
                                "--checkpoint-interval-ms",
                                &a.checkpoint_interval.as_millis().max(1).to_string(),
                                "--name",
                                q,
                            ]
                            .map(String::from),
                        );
                        flink_run(&argv, &stem, a.timeout)?
                    }
                };
                if checkpoints.exists() {
                    std::fs::remove_dir_all(&checkpoints)
                        .with_context(|| format!("cannot remove '{}'", checkpoints.display()))?;
                }
                let r = Run {
                    query: q.clone(),
                    round,
                    log,
                    ..r
                };
                say!("nexmark: round {round}/{} {q} {}", a.rounds, describe(&r));
                if sys == System::Xorflow && r.status == "unsupported" {
                    refused.insert(q.clone(), r.message.clone().unwrap_or_default());
                }
                runs.push(r);
            }
        }
    }

    let latency = latency::run_all(a, &out, &xorflow, flink_cmd.as_ref(), queries)?;

    let rows: Vec<QueryRow> = queries.iter().map(|(q, _)| row(q, &runs)).collect();
    let flink_json = runs.iter().find_map(|r| r.flink.as_ref());
    let text_of = |k: &str| {
        flink_json
            .and_then(|j| j.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let results = Results {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_utc: started.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        cpu_model: xorflow_bench::machine::cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        events: a.events,
        kind_events: kinds,
        parallelism: a.parallelism,
        rounds: a.rounds,
        xorflow_version: xorflow_version(&xorflow),
        flink_version: text_of("flink_version"),
        java_version: text_of("java_version"),
        flink_warmup_runs: a.flink_warmup_runs,
        flink_state_backend: &a.flink_state_backend,
        checkpoint_interval_ms: a.checkpoint_interval.as_millis(),
        counting: COUNTING,
        latency: LATENCY,
        queries: rows,
        runs,
        latency_replay: latency.as_ref().map(|l| l.replay.clone()),
        latency_queries: latency.as_ref().map_or_else(Vec::new, |l| l.rows.clone()),
        latency_runs: latency.map_or_else(Vec::new, |l| l.runs),
    };
    let json = serde_json::to_string_pretty(&results).expect("results serialize");
    std::fs::write(out.join("results.json"), json + "\n")?;
    let summary = summary(&results, a);
    std::fs::write(out.join("summary.txt"), &summary)?;
    print_out(&summary)?;
    if !a.keep_data {
        std::fs::remove_dir_all(&data)
            .with_context(|| format!("cannot remove '{}'", data.display()))?;
    }
    Ok(out)
}

/// `xorflow sql --file DDL --file QUERY --workers P --checkpoint-interval MSms --checkpoint-dir
/// DIR`.
fn sql_args(
    ddl: &Path,
    query: &Path,
    parallelism: usize,
    checkpoints: (Duration, &Path),
) -> Vec<String> {
    vec![
        "sql".into(),
        "--file".into(),
        ddl.display().to_string(),
        "--file".into(),
        query.display().to_string(),
        "--workers".into(),
        parallelism.to_string(),
        "--checkpoint-interval".into(),
        format!("{}ms", checkpoints.0.as_millis().max(1)),
        "--checkpoint-dir".into(),
        checkpoints.1.display().to_string(),
    ]
}

/// examples/nexmark/ddl_files.sql with its paths (data/nexmark/) pointing at `data`.
fn files_ddl_text(nexmark_dir: &Path, data: &Path) -> Result<String> {
    let p = nexmark_dir.join("ddl_files.sql");
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("cannot read '{}'", p.display()))?;
    let n = text.matches("'data/nexmark/").count();
    if n != TABLES.len() {
        bail!(
            "'{}': expected a 'path' = 'data/nexmark/...' per table, found {n}",
            p.display()
        );
    }
    Ok(text.replace("'data/nexmark/", &format!("'{}/", data.display())))
}

/// examples/nexmark/ddl_gen.sql with 'events.num' set to `events`.
fn gen_ddl_text(nexmark_dir: &Path, events: u64) -> Result<String> {
    let p = nexmark_dir.join("ddl_gen.sql");
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("cannot read '{}'", p.display()))?;
    let key = "'events.num' = '";
    let mut out = String::new();
    let mut rest = text.as_str();
    let mut n = 0;
    while let Some(i) = rest.find(key) {
        let after = &rest[i + key.len()..];
        let digits = after.find('\'').unwrap_or(0);
        if digits == 0 || !after[..digits].bytes().all(|b| b.is_ascii_digit()) {
            bail!("'{}': 'events.num' is not a number", p.display());
        }
        out.push_str(&rest[..i + key.len()]);
        out.push_str(&events.to_string());
        rest = &after[digits..];
        n += 1;
    }
    out.push_str(rest);
    if n == 0 {
        bail!("'{}' sets no 'events.num'", p.display());
    }
    Ok(out)
}

/// Lines of a file.
fn count_lines(p: &Path) -> Result<u64> {
    use std::io::Read;
    let mut f = File::open(p).with_context(|| format!("cannot open '{}'", p.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut n, mut last) = (0u64, b'\n');
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[k - 1];
    }
    Ok(if last == b'\n' { n } else { n + 1 })
}

/// The tables `query` reads: those xorflow reported reading in an earlier run over the files,
/// else the names after FROM, JOIN and TABLE in its text.
fn tables_read(runs: &[Run], query: &str, path: &Path) -> Result<Vec<String>> {
    if let Some(r) = runs
        .iter()
        .rev()
        .find(|r| r.query == query && r.system == System::Xorflow && r.status == "ok")
    {
        if !r.table_events.is_empty() {
            return Ok(r.table_events.keys().cloned().collect());
        }
    }
    let text = std::fs::read_to_string(path)?;
    Ok(tables_in_text(&text))
}

/// The Nexmark tables named right after FROM, JOIN or TABLE in a query's text (comments left
/// out).
fn tables_in_text(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for w in words.windows(2) {
        if ["from", "join", "table"].contains(&w[0])
            && TABLES.contains(&w[1])
            && !out.iter().any(|t| t == w[1])
        {
            out.push(w[1].to_string());
        }
    }
    out.sort();
    out
}

/// How a child process ended, with its wall and CPU time.
struct Exit {
    wall_s: f64,
    cpu_s: f64,
    /// The exit code; None when a signal ended it.
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
    /// CPU of everything else on the machine meanwhile.
    others_cpu_s: Option<f64>,
}

/// CPU seconds the whole machine has been busy (/proc/stat: all but idle and iowait).
fn machine_busy_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = (stat.lines().next()?.split_whitespace().skip(1))
        .filter_map(|t| t.parse().ok())
        .collect();
    if ticks.len() < 8 {
        return None;
    }
    // user nice system idle iowait irq softirq steal: USER_HZ, 100 on Linux.
    let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7];
    Some(busy as f64 / 100.0)
}

/// Runs `argv` to its end with stdout and stderr into `stem`.out and .err, killing it after
/// `timeout`: its wall time from spawn to exit, and its CPU (user + system, itself and the
/// children it waited for) from the rusage wait4 returns.
fn measured(argv: &[String], stem: &Path, timeout: Duration) -> Result<Exit> {
    measured_as(argv, stem, timeout, false)
}

/// As [`measured`]; with `stamp`, each line of stdout is written to `stem`.out as it arrives,
/// after the wall-clock time it arrived at (ms since the epoch, a tab): the window latency runs
/// ([`latency`]) time the rows the engines print.
fn measured_as(argv: &[String], stem: &Path, timeout: Duration, stamp: bool) -> Result<Exit> {
    let (out_p, err_p) = (stem.with_extension("out"), stem.with_extension("err"));
    let mut cmd = Command::new(&argv[0]);
    let out_file = File::create(&out_p)?;
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stderr(File::create(&err_p)?);
    match stamp {
        true => cmd.stdout(Stdio::piped()),
        false => cmd.stdout(out_file.try_clone()?),
    };
    let busy0 = machine_busy_s();
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{}`", argv.join(" ")))?;
    let stamper = (child.stdout.take()).map(|pipe| latency::stamp_lines(pipe, out_file));
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, killed) = (done.clone(), killed.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                if t0.elapsed() > timeout {
                    killed.store(true, Ordering::Release);
                    // SAFETY: kill(2) on the child's pid, which is not reaped until wait4 below
                    // returns (and `done` is set right after).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child with valid pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            done.store(true, Ordering::Release);
            bail!("wait4 on `{}`: {e}", argv.join(" "));
        }
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let busy1 = machine_busy_s();
    done.store(true, Ordering::Release);
    let _ = watchdog.join();
    if let Some(h) = stamper {
        // The pipe closes with the process (and any child holding it).
        h.join()
            .map_err(|_| anyhow::anyhow!("the stdout reader panicked"))??;
    }
    drop(child);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu_s = tv(ru.ru_utime) + tv(ru.ru_stime);
    Ok(Exit {
        wall_s,
        cpu_s,
        others_cpu_s: busy0.zip(busy1).map(|(a, b)| (b - a - cpu_s).max(0.0)),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        timed_out: killed.load(Ordering::Acquire),
        stdout: std::fs::read_to_string(&out_p).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_p).unwrap_or_default(),
    })
}

/// A run that did not produce figures.
fn not_ok(system: System, status: &str, message: String, e: &Exit) -> Run {
    Run {
        query: String::new(),
        system,
        round: 0,
        status: status.into(),
        message: Some(message),
        events: 0,
        table_events: BTreeMap::new(),
        wall_s: e.wall_s,
        cpu_s: e.cpu_s,
        events_per_s: 0.0,
        events_per_cpu_s: 0.0,
        events_per_s_net: None,
        rows_written: None,
        window_latency_ms: None,
        process_wall_s: e.wall_s,
        process_cpu_s: e.cpu_s,
        others_cpu_s: e.others_cpu_s,
        flink: None,
        log: String::new(),
    }
}

/// The first line of a failure's stderr that says something (Java's stack traces and Rust's
/// errors both lead with it).
fn first_line(e: &Exit) -> String {
    if e.timed_out {
        return format!("killed after {:.0} s (--timeout)", e.wall_s);
    }
    let line = (e.stderr.lines())
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("flink-sql: "))
        .unwrap_or("");
    let status = match e.code {
        Some(c) => format!("exit {c}"),
        None => "killed by a signal".into(),
    };
    if line.is_empty() {
        status
    } else {
        format!("{line} ({status})")
    }
}

/// One xorflow run. `tables` (generator runs): the tables the query reads, whose events are the
/// generator's of their kind; over files, xorflow reports what it read.
fn xorflow_run(
    exe: &Path,
    args: &[String],
    stem: &Path,
    timeout: Duration,
    kinds: &BTreeMap<String, u64>,
    tables: Option<&[String]>,
) -> Result<Run> {
    let mut argv = vec![exe.display().to_string()];
    argv.extend(args.iter().cloned());
    let e = measured(&argv, stem, timeout)?;
    let system = if tables.is_some() {
        System::XorflowGen
    } else {
        System::Xorflow
    };
    if e.code != Some(0) || e.timed_out {
        // Exit 2: refused before anything ran (a SQL error, an unsupported construct).
        let status = if e.code == Some(2) && !e.timed_out {
            "unsupported"
        } else {
            "failed"
        };
        return Ok(not_ok(system, status, first_line(&e), &e));
    }
    let (read, written) = sql_report(&e.stderr);
    let table_events: BTreeMap<String, u64> = match tables {
        Some(ts) => (ts.iter())
            .map(|t| (t.clone(), kinds.get(t).copied().unwrap_or(0)))
            .collect(),
        None => read.into_iter().collect(),
    };
    let events: u64 = table_events.values().sum();
    if events == 0 {
        return Ok(not_ok(
            system,
            "failed",
            format!(
                "no events counted (its report: {:?})",
                e.stderr.lines().last().unwrap_or("")
            ),
            &e,
        ));
    }
    Ok(Run {
        events,
        table_events,
        events_per_s: events as f64 / e.wall_s,
        events_per_cpu_s: events as f64 / e.cpu_s.max(1e-6),
        rows_written: written,
        window_latency_ms: window_latency(&e.stderr),
        status: "ok".into(),
        message: None,
        ..not_ok(system, "ok", String::new(), &e)
    })
}

/// `xorflow sql`'s last line, "sql: read N rows of T[, ...]; wrote M rows to ... in S s": the
/// rows read per table and the first output's rows.
fn sql_report(stderr: &str) -> (Vec<(String, u64)>, Option<u64>) {
    let Some(line) = stderr.lines().rev().find(|l| l.starts_with("sql: ")) else {
        return (Vec::new(), None);
    };
    let mut read = Vec::new();
    if let Some(rest) = line.strip_prefix("sql: read ") {
        for item in rest.split(';').next().unwrap_or("").split(", ") {
            let w: Vec<&str> = item.split_whitespace().collect();
            if let [n, "rows", "of", t] = w[..] {
                if let Ok(n) = n.parse() {
                    read.push((t.to_string(), n));
                }
            }
        }
    }
    let written = line
        .find("wrote ")
        .and_then(|i| line[i + 6..].split_whitespace().next()?.parse().ok());
    (read, written)
}

/// `xorflow sql`'s "window latency: p50 X ms, p99 Y ms, ..." line: (p50, p99) in ms.
fn window_latency(stderr: &str) -> Option<(f64, f64)> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("window latency: "))?;
    let ms = |key: &str| -> Option<f64> {
        let at = line.find(key)? + key.len();
        line[at..].split_whitespace().next()?.parse().ok()
    };
    Some((ms("p50 ")?, ms("p99 ")?))
}

/// One Flink run: its JSON line, and the JVM's wall and CPU from wait4.
fn flink_run(argv: &[String], stem: &Path, timeout: Duration) -> Result<Run> {
    let e = measured(argv, stem, timeout)?;
    if e.code != Some(0) || e.timed_out {
        return Ok(not_ok(System::Flink, "failed", first_line(&e), &e));
    }
    let Some(j) = (e.stdout.lines().rev())
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    else {
        return Ok(not_ok(
            System::Flink,
            "failed",
            "printed no JSON result".into(),
            &e,
        ));
    };
    let num = |k: &str| j.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    let table_events: BTreeMap<String, u64> = (j.get("table_events"))
        .and_then(|t| t.as_object())
        .map(|o| {
            (o.iter())
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let events = num("events") as u64;
    let (wall_s, cpu_s) = (num("elapsed_ms") / 1e3, num("job_cpu_ms") / 1e3);
    let net_s = num("net_runtime_ms") / 1e3;
    Ok(Run {
        status: "ok".into(),
        message: None,
        events,
        table_events,
        wall_s,
        cpu_s,
        events_per_s: events as f64 / wall_s.max(1e-6),
        events_per_cpu_s: events as f64 / cpu_s.max(1e-6),
        events_per_s_net: (net_s > 0.0).then(|| events as f64 / net_s),
        flink: Some(j),
        ..not_ok(System::Flink, "ok", String::new(), &e)
    })
}

/// A run's progress line.
fn describe(r: &Run) -> String {
    if r.status != "ok" {
        let what = if r.status == "unsupported" {
            "not supported by xorflow yet"
        } else {
            "failed"
        };
        return format!(
            "{}: {what}: {}",
            r.system.name(),
            r.message.as_deref().unwrap_or("")
        );
    }
    format!(
        "{}: {} events in {:.2} s, {:.2} s CPU: {} events/s, {} per core",
        r.system.name(),
        r.events,
        r.wall_s,
        r.cpu_s,
        rate(r.events_per_s),
        rate(r.events_per_cpu_s)
    )
}

/// Medians over the successful runs of `system` on `query`.
fn medians(runs: &[Run], query: &str, system: System) -> Option<Medians> {
    let ok: Vec<&Run> = (runs.iter())
        .filter(|r| r.query == query && r.system == system && r.status == "ok")
        .collect();
    if ok.is_empty() {
        return None;
    }
    let m = |f: fn(&Run) -> f64| median(ok.iter().map(|r| f(r)).collect());
    Some(Medians {
        runs: ok.len(),
        events: ok[0].events,
        events_per_s: m(|r| r.events_per_s),
        events_per_cpu_s: m(|r| r.events_per_cpu_s),
        events_per_s_net: (ok.iter().all(|r| r.events_per_s_net.is_some()))
            .then(|| median(ok.iter().filter_map(|r| r.events_per_s_net).collect())),
        wall_s: m(|r| r.wall_s),
        cpu_s: m(|r| r.cpu_s),
        window_latency_ms: (ok.iter().all(|r| r.window_latency_ms.is_some())).then(|| {
            let l: Vec<(f64, f64)> = ok.iter().filter_map(|r| r.window_latency_ms).collect();
            (
                median(l.iter().map(|x| x.0).collect()),
                median(l.iter().map(|x| x.1).collect()),
            )
        }),
    })
}

/// The first message of a failed or refused run of `system` on `query`.
fn message(runs: &[Run], query: &str, system: System) -> Option<String> {
    (runs.iter())
        .find(|r| r.query == query && r.system == system && r.status != "ok")
        .and_then(|r| r.message.clone())
}

fn row(query: &str, runs: &[Run]) -> QueryRow {
    let x = medians(runs, query, System::Xorflow);
    let f = medians(runs, query, System::Flink);
    let refused = (runs.iter())
        .any(|r| r.query == query && r.system == System::Xorflow && r.status == "unsupported");
    let failed = (runs.iter())
        .any(|r| r.query == query && r.system == System::Xorflow && r.status == "failed");
    let ratio = |g: fn(&Medians) -> f64| match (&x, &f) {
        (Some(x), Some(f)) if g(f) > 0.0 => Some(g(x) / g(f)),
        _ => None,
    };
    QueryRow {
        query: query.into(),
        xorflow_status: if refused {
            "unsupported"
        } else if failed {
            "failed"
        } else {
            "ok"
        }
        .into(),
        xorflow_message: message(runs, query, System::Xorflow),
        ratio_events_per_s: ratio(|m| m.events_per_s),
        ratio_events_per_s_net: match (&x, &f) {
            (
                Some(x),
                Some(Medians {
                    events_per_s_net: Some(n),
                    ..
                }),
            ) if *n > 0.0 => Some(x.events_per_s / n),
            _ => None,
        },
        ratio_events_per_cpu_s: ratio(|m| m.events_per_cpu_s),
        xorflow: x,
        flink: f,
        flink_message: message(runs, query, System::Flink),
        xorflow_gen: medians(runs, query, System::XorflowGen),
        aim_events_per_cpu_s: AIMS.iter().find(|(q, _)| *q == query).map(|(_, a)| *a),
    }
}

/// A rate, short: 1.23 M, 456 k.
fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else {
        format!("{:.0} k", x / 1e3)
    }
}

/// Rows of cells as a table with a rule under the header, columns right-aligned but the first.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            (rows.iter())
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut t = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = (r.iter().enumerate())
            .map(|(c, s)| {
                if c == 0 {
                    format!("{s:<w$}", w = width[c])
                } else {
                    format!("{s:>w$}", w = width[c])
                }
            })
            .collect();
        let _ = writeln!(t, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(t, "{}", rule.join("  "));
        }
    }
    t
}

fn summary(r: &Results, a: &NexmarkArgs) -> String {
    let mut t = String::new();
    let kinds: Vec<String> = TABLES
        .iter()
        .map(|k| format!("{} {k}", r.kind_events.get(*k).copied().unwrap_or(0)))
        .collect();
    let _ = writeln!(
        t,
        "Nexmark on xorflow and Flink SQL: {} events ({}), parallelism {}, {} round(s), medians",
        r.events,
        kinds.join(", "),
        r.parallelism,
        r.rounds
    );
    let _ = writeln!(t, "command: {}", r.command);
    let _ = writeln!(t, "started: {}", r.started_utc);
    let _ = writeln!(t, "CPU: {} ({} cores)", r.cpu_model, r.cores);
    let _ = writeln!(t, "xorflow: {}", r.xorflow_version);
    let _ = writeln!(
        t,
        "checkpoints: every {} on both engines (xorflow --checkpoint-interval, Flink's \
         execution.checkpointing.interval; Nexmark's is 3 min)",
        humantime::format_duration(Duration::from_millis(r.checkpoint_interval_ms as u64))
    );
    if a.no_flink {
        let _ = writeln!(t, "Flink SQL: left out (--no-flink)");
    } else {
        let _ = writeln!(
            t,
            "Flink SQL: {} on Java {} (peers/flink-sql, MiniCluster in-process), state backend {}, \
             {} warm-up run(s) in the same JVM before the measured one",
            r.flink_version.as_deref().unwrap_or("?"),
            r.java_version.as_deref().unwrap_or("?"),
            r.flink_state_backend,
            r.flink_warmup_runs
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(t, "{}", wrap(COUNTING));
    let _ = writeln!(
        t,
        "{}",
        wrap(
            "xorflow: `xorflow sql --file <out>/ddl_files.sql --file qN.sql --workers P \
             --checkpoint-interval I --checkpoint-dir <run>.checkpoints`, the \
             process's wall time and CPU (user + system, wait4). Flink: from submitting the job \
             (planning the INSERT and starting the MiniCluster included) to its end, and the \
             JVM's CPU over that time (OperatingSystemMXBean); \"net\": over the job's net \
             runtime as Flink's JobManager reports it instead (no planning, no MiniCluster \
             start). The JVM's start, the DDL and the warm-up runs are left out (they are in \
             results.json)."
        )
    );
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "Over the same files (events/s; per core: events per CPU second):"
    );
    let mut rows = vec![[
        "query",
        "events",
        "xorflow",
        "per core",
        "Flink",
        "net",
        "per core",
        "xorflow/Flink",
        "net",
        "per core",
    ]
    .map(String::from)
    .to_vec()];
    let mut notes = Vec::new();
    for q in &r.queries {
        if q.xorflow_status != "ok" && q.xorflow.is_none() {
            let what = if q.xorflow_status == "unsupported" {
                "not supported by xorflow yet"
            } else {
                "xorflow failed"
            };
            notes.push(format!(
                "{}: {what}: {}",
                q.query,
                q.xorflow_message.as_deref().unwrap_or("")
            ));
        }
        if q.flink.is_none() && !a.no_flink {
            if let Some(m) = &q.flink_message {
                notes.push(format!("{}: Flink failed: {m}", q.query));
            }
        }
        let (xe, xc) = q.xorflow.as_ref().map_or(("-".into(), "-".into()), |m| {
            (rate(m.events_per_s), rate(m.events_per_cpu_s))
        });
        let (fe, fc) = q.flink.as_ref().map_or(("-".into(), "-".into()), |m| {
            (rate(m.events_per_s), rate(m.events_per_cpu_s))
        });
        let fnet = (q.flink.as_ref())
            .and_then(|m| m.events_per_s_net)
            .map_or("-".into(), rate);
        let events =
            (q.xorflow.as_ref().or(q.flink.as_ref())).map_or("-".into(), |m| m.events.to_string());
        let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}x"));
        let xe = match q.xorflow_status.as_str() {
            _ if q.xorflow.is_some() => xe,
            "unsupported" => "unsupported".into(),
            _ => "failed".into(),
        };
        rows.push(vec![
            q.query.clone(),
            events,
            xe,
            xc,
            fe,
            fnet,
            fc,
            ratio(q.ratio_events_per_s),
            ratio(q.ratio_events_per_s_net),
            ratio(q.ratio_events_per_cpu_s),
        ]);
    }
    t.push_str(&table(&rows));
    if !a.no_generator {
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "xorflow with the in-process generator (ddl_gen.sql, 'events.num' = '{}'), against \
             issue 50's aims per core:",
            r.events
        );
        let mut rows = vec![[
            "query",
            "events",
            "events/s",
            "per core",
            "aim per core",
            "met",
        ]
        .map(String::from)
        .to_vec()];
        for q in &r.queries {
            let Some(m) = &q.xorflow_gen else {
                continue;
            };
            let aim = q.aim_events_per_cpu_s;
            rows.push(vec![
                q.query.clone(),
                m.events.to_string(),
                rate(m.events_per_s),
                rate(m.events_per_cpu_s),
                aim.map_or("-".into(), rate),
                aim.map_or("-".into(), |x| {
                    if m.events_per_cpu_s >= x { "yes" } else { "no" }.into()
                }),
            ]);
        }
        t.push_str(&table(&rows));
    }
    if !notes.is_empty() {
        let _ = writeln!(t);
        for n in notes {
            let _ = writeln!(t, "{n}");
        }
    }
    let _ = writeln!(t);
    let _ = writeln!(t, "{}", wrap(&disturbance(r)));
    let _ = writeln!(t);
    let _ = writeln!(t, "{}", wrap(LATENCY));
    let mut rows = vec![["query", "xorflow completion p50, ms", "p99, ms"]
        .map(String::from)
        .to_vec()];
    for q in &r.queries {
        if let Some((p50, p99)) = q.xorflow.as_ref().and_then(|m| m.window_latency_ms) {
            rows.push(vec![
                q.query.clone(),
                format!("{p50:.3}"),
                format!("{p99:.3}"),
            ]);
        }
    }
    if rows.len() > 1 {
        t.push_str(&table(&rows));
    }
    if let Some(replay) = &r.latency_replay {
        let _ = writeln!(t);
        t.push_str(&latency::section(
            replay,
            &r.latency_queries,
            &r.latency_runs,
        ));
    }
    t
}

/// How busy the rest of the machine was during the runs.
fn disturbance(r: &Results) -> String {
    let share: Vec<(f64, &Run)> = (r.runs.iter())
        .filter_map(|x| {
            let o = x.others_cpu_s?;
            Some((o / (x.process_wall_s * r.cores as f64).max(1e-9), x))
        })
        .collect();
    let Some(&(max, worst)) = share.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return "Other processes' CPU during the runs: not measured (no /proc/stat).".into();
    };
    let med = median(share.iter().map(|s| s.0).collect());
    format!(
        "Other processes' CPU while each run's process ran (/proc/stat's busy time less the \
         run's own, as a share of all {} cores): median {:.1}%, at most {:.1}% ({} of {}, round \
         {}). Wall-clock rates suffer from it more than per-core ones.",
        r.cores,
        med * 100.0,
        max * 100.0,
        worst.system.name(),
        worst.query,
        worst.round
    )
}

/// `s` wrapped at 100 columns.
fn wrap(s: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in s.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > 100 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(&line);
    out
}

/// The commit of the checkout the `xorflow` binary at `exe` was built in (its target folder is
/// inside it; else the current directory's), and whether that checkout has changes now.
fn xorflow_version(exe: &Path) -> String {
    let dir = exe.parent().unwrap_or(Path::new("."));
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev} (with uncommitted changes)")
            } else {
                rev
            }
        }
        None => "unknown (not in a git checkout)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorflow_sql_report_is_read() {
        let (read, written) = sql_report(
            "warning: x\nsql: read 920000 rows of bid, 60000 rows of auction; wrote 42 rows to \
             blackhole in 2.66 s\n",
        );
        assert_eq!(
            read,
            vec![("bid".to_string(), 920000), ("auction".to_string(), 60000)]
        );
        assert_eq!(written, Some(42));
        let (read, written) = sql_report("sql: wrote 920000 rows to blackhole in 0.65 s\n");
        assert!(read.is_empty());
        assert_eq!(written, Some(920000));
    }

    #[test]
    fn the_window_latency_line_is_read_and_its_absence_is_none() {
        let err = "window latency: p50 0.412 ms, p99 3.100 ms, max 9.000 ms (60 windows per \
                   instance, ...)\nsql: wrote 1 rows to blackhole in 1.00 s\n";
        assert_eq!(window_latency(err), Some((0.412, 3.1)));
        assert_eq!(
            window_latency("sql: wrote 1 rows to blackhole in 1.00 s\n"),
            None
        );
    }

    #[test]
    fn tables_are_found_after_from_join_and_table() {
        let q = "-- FROM person in a comment\nCREATE TABLE nexmark_q0 (auction BIGINT) WITH \
                 ('connector' = 'blackhole');\nINSERT INTO nexmark_q0 SELECT auction FROM \
                 TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), ...)) JOIN auction ON x";
        assert_eq!(tables_in_text(q), vec!["auction", "bid"]);
    }

    #[test]
    fn events_num_is_replaced_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ddl_gen.sql"),
            "a 'events.num' = '10000000', b\nc 'events.num' = '10000000')",
        )
        .unwrap();
        let t = gen_ddl_text(dir.path(), 1234).unwrap();
        assert_eq!(t, "a 'events.num' = '1234', b\nc 'events.num' = '1234')");
    }

    #[test]
    fn tables_render_aligned() {
        let t = table(&[
            vec!["q".into(), "events".into()],
            vec!["q10".into(), "5".into()],
        ]);
        assert_eq!(t, "q    events\n---  ------\nq10       5\n");
    }
}
