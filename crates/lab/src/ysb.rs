//! The Yahoo Streaming Benchmark in the lab: `xorflow-lab ysb generate` (the catch-up mode's
//! input files), `xorflow-lab bench ysb` (the job with its generator inside, at a fixed rate),
//! and what the YSB sweeps share (`bench peers --workload ysb`, `bench sustainable`, `bench cpu`,
//! `bench wan`).

use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_cli::options::millis;
use xorflow_cli::outcome::CommandError;
use xorflow_cli::say;
use xorflow_cli::terminal::print_out;
use xorflow_runtime::args::EngineArgs;

/// YSB tools.
#[derive(Subcommand)]
pub enum YsbCmd {
    /// Write the catch-up mode's files as the original generator does (yahoo/streaming-benchmarks):
    /// the events, one JSON object per line, and the ad -> campaign table (100 campaigns x 10
    /// ads), plus campaign-ids.txt and ad-ids.txt beside the table.
    Generate(GenerateArgs),
}

#[derive(Args)]
pub struct GenerateArgs {
    /// Events to write.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Events per second of event time (event n is due at start + n / rate).
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// As the original's --with-skew: event times move by -49..50 ms and one event in 100,000
    /// is up to 60 s late.
    #[arg(long)]
    with_skew: bool,
    /// Campaigns, 10 ads each (the original: 100; the CPU-efficiency paper varies it from 1k to 16k).
    #[arg(long, default_value_t = xorflow_ysb::generate::CAMPAIGNS)]
    campaigns: usize,
    /// Seed of the ids and the draws (the same seed writes the same files).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Due time of the first event, ms since the epoch (default: now).
    #[arg(long)]
    start_ms: Option<u64>,
    /// The events file.
    #[arg(long, default_value = "data/ysb/kafka-json.txt")]
    output: PathBuf,
    /// The ad -> campaign table; campaign-ids.txt and ad-ids.txt are written beside it.
    #[arg(long, default_value = "data/ysb/ad-to-campaign-ids.txt")]
    ad_campaigns: PathBuf,
}

/// `xorflow-lab ysb ...`.
pub fn tool(cmd: YsbCmd) -> Result<(), CommandError> {
    let YsbCmd::Generate(a) = cmd;
    let start_ms = a.start_ms.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    });
    let cfg = xorflow_ysb::generate::GenerateConfig {
        events: a.events,
        rate: a.rate,
        with_skew: a.with_skew,
        seed: a.seed,
        start_ms,
        events_path: a.output.clone(),
        ad_campaigns_path: a.ad_campaigns.clone(),
        campaigns: a.campaigns,
    };
    xorflow_ysb::generate::write(&cfg).map_err(|e| CommandError::Output(e.to_string()))?;
    let text = format!(
        "ysb: {} events at {} events/s{} -> {}, ad -> campaign table -> {}\n",
        a.events,
        a.rate,
        if a.with_skew { " with skew" } else { "" },
        a.output.display(),
        a.ad_campaigns.display()
    );
    print_out(&text)
}

/// `xorflow-lab bench ysb`.
#[derive(Args)]
pub struct BenchYsbArgs {
    /// Events per second, all sources together.
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// How long the generator runs, in whole seconds (e.g. 60s, 2m).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Template events (pre-serialized; their event_time is replaced by the schedule's), e.g.
    /// from `xorflow-lab ysb generate`; default: 100,000 generated in memory with seed 1.
    #[arg(long, requires = "ad_campaigns")]
    events: Option<PathBuf>,
    /// The ad -> campaign table of --events.
    #[arg(long, requires = "events")]
    ad_campaigns: Option<PathBuf>,
    /// Due time of the first event, ms since the epoch (needed with --hostfile; default: the
    /// next whole second 2 s from now).
    #[arg(long)]
    start_ms: Option<u64>,
    /// Source instances (default: one per worker of every process).
    #[arg(long)]
    sources: Option<usize>,
    /// Write the counts (campaign_id,window_start_ms,views) here.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Tracking granularity (substream length), a whole number of ms.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// Print the result as one JSON object (the peers' shape: peers/ysb-contract.md).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

/// `xorflow-lab bench ysb`.
pub fn bench(a: BenchYsbArgs) -> Result<(), CommandError> {
    let parsed = (|| {
        a.engine.validate()?;
        if a.duration.subsec_nanos() != 0 {
            return Err("--duration must be a whole number of seconds".to_string());
        }
        millis(a.granularity, "granularity", 1)
    })();
    let granularity_ms = parsed.map_err(CommandError::Config)?;
    let cfg = xorflow_ysb::bench::BenchConfig {
        events: a.events.clone(),
        ad_campaigns: a.ad_campaigns.clone(),
        rate: a.rate,
        duration_s: a.duration.as_secs(),
        start_ms: a.start_ms,
        sources: a.sources,
        output: a.output.clone(),
        runtime: a.engine.runtime(granularity_ms),
    };
    let Some(r) = xorflow_ysb::bench::run(&cfg)? else {
        return Ok(());
    };
    let text = if a.json {
        serde_json::to_string(&r).expect("result serializes") + "\n"
    } else {
        describe_bench(&r)
    };
    let printed = print_out(&text);
    if r.counts_match_oracle == Some(false) {
        if let Err(e) = printed {
            say!("error: {e}");
        }
        return Err(CommandError::Engine(
            "the counts differ from the oracle's (examples/ysb/src/oracle.rs)".into(),
        ));
    }
    printed
}

fn describe_bench(r: &xorflow_ysb::bench::BenchResult) -> String {
    let l = |x: &xorflow_ysb::bench::latency::Latency| {
        format!(
            "p50 {:.1} / p90 {:.1} / p99 {:.1} / max {:.1} ms ({} samples)",
            x.p50, x.p90, x.p99, x.max, x.count
        )
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "ysb bench: {} events/s for {} s, {} sources, {} process(es) x {} workers",
        r.rate, r.duration_s, r.sources, r.processes, r.workers
    );
    let _ = writeln!(
        t,
        "emitted {} events at {:.0} events/s (generator lag max {:.1} ms); {} views in {} windows; counts {}",
        r.events_emitted,
        r.throughput_events_per_s,
        r.generator_lag_ms_max,
        r.views_counted,
        r.windows,
        match r.counts_match_oracle {
            Some(true) => "match the oracle",
            Some(false) => "DIFFER from the oracle",
            None => "not checked",
        }
    );
    let _ = writeln!(
        t,
        "window latency (last event -> emission): {}",
        l(&r.window_latency_ms)
    );
    let _ = writeln!(
        t,
        "updated - window start (original YSB):   {}",
        l(&r.updated_latency_ms)
    );
    let _ = writeln!(
        t,
        "pre-window latency:                      {}",
        l(&r.prewindow_latency_ms)
    );
    if let Some(n) = &r.notification_latency_ms {
        let _ = writeln!(t, "trAcker notification at the window:      {}", l(n));
    }
    if let Some(s) = &r.schedule_spread {
        let _ = writeln!(
            t,
            "generators' schedules across {} other process(es), clock-aligned: spread {:.1} us, \
             bound <= {:.1} us ({} off the same-host truth by more); the latencies are exact to \
             within their sum",
            s.processes, s.spread_us, s.bound_us_max, s.bound_exceeded_same_host
        );
    }
    if let Some(c) = &r.cpu {
        let _ = writeln!(t, "{}", c.describe());
    }
    t
}

/// The YSB's settings on the bench stand (`bench peers --workload ysb`, `bench sustainable`).
#[derive(Args)]
pub struct YsbStandArgs {
    /// Events/s (`bench peers`: the first; `bench sustainable`: the steps, ascending),
    /// comma-separated.
    #[arg(long = "rate", value_delimiter = ',')]
    pub rate: Vec<u64>,
    /// Seconds of generation per run (at least 20 s, so two windows lie wholly inside).
    #[arg(long = "duration", default_value = "60s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Repetitions, engines alternating (`bench peers`).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Processes of xorflow, TaskManagers of Flink (Storm: always one process).
    #[arg(long = "ysb-processes", default_value_t = 1)]
    pub processes: usize,
    /// Workers per process.
    #[arg(long = "ysb-workers", default_value_t = 2)]
    pub workers: usize,
}

impl YsbStandArgs {
    /// The point at `rate`: one source per worker.
    pub fn point(&self, rate: u64) -> xorflow_bench::ysb::Point {
        xorflow_bench::ysb::Point {
            rate,
            duration_s: self.duration.as_secs(),
            processes: self.processes,
            workers: self.workers,
            sources: self.processes * self.workers,
        }
    }
}

/// The engines: xorflow, then the JVM peers not left out.
pub fn engines(flink: bool, storm: bool) -> Vec<xorflow_bench::ysb::Engine> {
    use xorflow_bench::ysb::Engine;
    let mut e = vec![Engine::Xorflow];
    e.extend(flink.then_some(Engine::Flink));
    e.extend(storm.then_some(Engine::Storm));
    e
}

/// The experiments named in `names` (all of `all` when empty), in `all`'s order, each once: the
/// `--experiments` of `bench cpu` and `bench wan`.
///
/// # Errors
/// An unknown name (`parse`'s error).
pub fn chosen<E: Copy + Ord>(
    names: &[String],
    all: &[E],
    parse: impl Fn(&str) -> anyhow::Result<E>,
) -> Result<Vec<E>, String> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    let mut v = (names.iter())
        .map(|s| parse(s.trim()).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort();
    v.dedup();
    Ok(v)
}

/// A YSB sweep's seconds of generation per run: whole seconds, at least 20.
///
/// # Errors
/// A shorter or fractional `--duration`.
pub fn sweep_duration(d: std::time::Duration) -> Result<u64, String> {
    if d.subsec_nanos() != 0 || d.as_secs() < 20 {
        return Err(format!(
            "--duration must be whole seconds, at least 20s (got {d:?}): the windows are 10 s \
             long and only those wholly inside the generation count"
        ));
    }
    Ok(d.as_secs())
}

/// Runs a sweep (`bench cpu`, `bench wan`): its plan, or a configuration error naming the bad
/// option; this binary as xorflow; then `sweep` with the stand of `engines`, its folder printed.
pub fn run_sweep<P>(
    plan: Result<P, String>,
    engines: impl FnOnce(&P) -> Vec<xorflow_bench::ysb::Engine>,
    (out, peers_dir): (&std::path::Path, &std::path::Path),
    sweep: impl FnOnce(&P, &xorflow_bench::ysb::StandConfig) -> anyhow::Result<PathBuf>,
) -> Result<(), CommandError> {
    let plan = plan.map_err(CommandError::Config)?;
    let xorflow = crate::own_exe()?;
    let stand = xorflow_bench::ysb::StandConfig {
        engines: engines(&plan),
        out: out.to_path_buf(),
        peers_dir: peers_dir.to_path_buf(),
        xorflow,
    };
    finish_stand(sweep(&plan, &stand))
}

/// Prints a results folder.
///
/// # Errors
/// The experiment's error (the lab's failure).
pub fn finish_stand(r: anyhow::Result<PathBuf>) -> Result<(), CommandError> {
    let dir = r?;
    say!("{}", dir.join("REPORT.md").display());
    Ok(())
}
