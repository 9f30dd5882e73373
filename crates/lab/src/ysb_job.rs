//! `xorflow-lab run ysb`: the Yahoo Streaming Benchmark's job in catch-up mode (examples/ysb),
//! beside its generator and the YSB experiments (crates/lab/src/ysb.rs). It was `xorflow run
//! ysb`; it lives in the lab so that the engine's binary links neither examples/ysb nor its Redis
//! client (a shorter cold `make run`). Its options, outputs and exit statuses are as they were:
//! the engine options, Kafka input options, job files and outcome are crates/cli's library's.

use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_cli::options::millis;
use xorflow_cli::outcome::{quiet, CommandError};
use xorflow_cli::say;
use xorflow_cli::terminal::print_out;
use xorflow_runtime::args::EngineArgs;

/// `xorflow-lab run ysb`.
#[derive(Args)]
pub struct YsbArgs {
    /// The events file, one JSON event per line (`xorflow-lab ysb generate` writes one), or a topic
    /// kafka://HOST:PORT/TOPIC, one JSON event per record (`xorflow-lab kafka produce-ysb` loads
    /// one; lateness is then judged per partition).
    #[arg(long, default_value = "data/ysb/kafka-json.txt")]
    input: PathBuf,
    #[command(flatten)]
    kafka: xorflow_cli::kafka_input::KafkaInputArgs,
    /// Also write each window, as it closes, into this Redis in the original benchmark's layout
    /// (campaign hash -> window -> seen_count, time_updated; docs/ysb.md).
    #[arg(long, value_name = "redis://HOST:PORT")]
    redis: Option<String>,
    /// The ad -> campaign table, one { "AD": "CAMPAIGN"} per line.
    #[arg(long, default_value = "data/ysb/ad-to-campaign-ids.txt")]
    ad_campaigns: PathBuf,
    /// Result CSV: campaign_id,window_start_ms,views, sorted.
    #[arg(long, default_value = "out/ysb_counts.csv")]
    output: PathBuf,
    /// Summary JSON.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Source instances (the file's lines are split round-robin over them; 1-1024).
    #[arg(long, default_value_t = 1)]
    sources: usize,
    /// Allowed lateness: an event more than this behind the largest event time before it in the
    /// file is counted as late and skipped (e.g. 100ms, 1m).
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    lateness: Duration,
    /// Tracking granularity (substream length), a whole number of ms.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// Replay event time this many times faster than real time (1: the original's real-time
    /// feed; default: as fast as possible, the original's catch-up mode).
    #[arg(long, allow_hyphen_values = true)]
    speed: Option<f64>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// `xorflow-lab run ysb`. With `--processes N` the runtime starts the other processes from this
/// process's own executable and arguments (`spawn_children`, crates/runtime/src/net/cluster.rs),
/// so they are `xorflow-lab run ysb` too; a hostfile run starts each process by hand, likewise.
pub fn run(a: YsbArgs) -> Result<(), CommandError> {
    let parsed = (|| {
        a.engine.validate()?;
        Ok::<_, String>((
            millis(a.lateness, "lateness", 0)?,
            millis(a.granularity, "granularity", 1)?,
            xorflow_cli::kafka_input::topic_of("--input", &a.input)?,
        ))
    })();
    let (lateness_ms, granularity_ms, topic) = parsed.map_err(CommandError::Config)?;
    let mut cfg =
        xorflow_ysb::YsbConfig::new(a.input.clone(), a.ad_campaigns.clone(), a.output.clone());
    cfg.summary = a.summary.clone();
    cfg.sources = a.sources;
    cfg.lateness_ms = lateness_ms;
    cfg.speed = a.speed;
    cfg.runtime = a.engine.runtime(granularity_ms);
    // Event times in milliseconds (the status page shows them as times).
    cfg.runtime.time_per_second = Some(1000);
    cfg.kafka = topic;
    cfg.kafka_options = a.kafka.options();
    cfg.redis = a.redis.clone();
    let s = xorflow_ysb::run(&cfg)?;
    if quiet(&a.engine) {
        return Ok(());
    }
    warn_skipped(&s);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "ysb: {} {} ({} malformed, {} late, {} views of unknown ads) -> {} views in {} \
         campaign windows in {}",
        s.lines,
        if cfg.kafka.is_some() {
            format!("records of {}", s.input)
        } else {
            "lines".into()
        },
        s.malformed,
        s.late,
        s.unknown_ad_views,
        s.views,
        s.windows,
        a.output.display()
    );
    if s.input_counts_cover != "the whole input" {
        let _ = writeln!(
            text,
            "note: the input counts cover {}",
            s.input_counts_cover
        );
    }
    if let (Some(n), Some(url)) = (s.redis_windows, &a.redis) {
        let url = xorflow_ysb::redis_sink::without_password(url);
        let _ = writeln!(text, "redis: {n} windows written to {url}");
    }
    let _ = writeln!(
        text,
        "engine: {:.3} s, {:.0} events/s",
        s.elapsed_s, s.events_per_s
    );
    if let Some(c) = &s.cpu {
        let _ = writeln!(text, "{}", c.describe());
    }
    if let Some(n) = s.checkpoints_completed {
        let _ = writeln!(text, "checkpoints: {n} completed");
    }
    if let Some(r) = s.resumed_from {
        let _ = writeln!(text, "resumed from checkpoint {r}");
    }
    for r in &s.restarts {
        let _ = writeln!(text, "restarted from the last checkpoint after: {r}");
    }
    print_out(&text)
}

/// Warns of the skipped lines (a file) or records (a topic) the summary names.
fn warn_skipped(s: &xorflow_ysb::YsbSummary) {
    for m in &s.malformed_examples {
        say!("warning: skipped {} line {}: {}", s.input, m.line, m.reason);
    }
    for r in &s.skipped_records {
        say!(
            "warning: skipped {} partition {} offset {}: {}",
            s.input,
            r.partition,
            r.offset,
            r.reason
        );
    }
}
