//! `xorflow sql`: a job written in Flink SQL's dialect (crates/sql, docs/sql.md), planned
//! before anything runs (a SQL error exits 2 naming its line and column), then run as one
//! dataflow with every option a job has.

use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::{Dataflow, JobError};
use xorflow_sql::exec::Builder;
use xorflow_sql::job::{build, plan_job, SelectTarget, SqlText};

/// Examples in `xorflow sql --help`.
pub const SQL_EXAMPLES: &str = "Examples:
  xorflow sql --file examples/sql/flights.sql --output out/flights_hourly_sql.csv
  xorflow sql --execute \"CREATE TABLE bid (...) WITH (...); SELECT ...\"
  xorflow sql --file examples/nexmark/ddl_gen.sql --file examples/nexmark/queries/q5.sql --workers 2
  xorflow sql --config examples/jobs/nexmark-q5.toml --processes 2";

#[derive(Args)]
pub struct SqlArgs {
    /// The job's SQL: CREATE TABLE, CREATE VIEW, INSERT INTO, SELECT and EXPLAIN statements,
    /// separated by semicolons. Repeat it to run several files as one job, in order (tables
    /// declared in one, queries in the next).
    #[arg(
        help_heading = "Job",
        long,
        value_name = "JOB.sql",
        required_unless_present = "execute"
    )]
    file: Vec<PathBuf>,
    /// The job's SQL, given on the command line.
    #[arg(
        help_heading = "Job",
        long,
        short = 'e',
        value_name = "SQL",
        allow_hyphen_values = true
    )]
    execute: Option<String>,
    /// Where a plain SELECT's rows go: a file written whole on success (CSV with a header, or
    /// JSON lines for .jsonl); without it, CSV on standard output as windows close.
    #[arg(help_heading = "Input and output", long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// A job file (TOML): `[options]` with `file = ["ddl.sql", "query.sql"]` and any option
    /// below by its long name; options on the command line override it (docs/jobs.md).
    #[arg(help_heading = "Job", long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Runs the job.
///
/// # Errors
/// A SQL error or bad configuration (exit 2), an input or output that cannot be used, a failed
/// run.
pub fn run(a: SqlArgs) -> Result<(), JobError> {
    debug_assert!(a.config.is_none(), "job_file::expand takes --config out");
    let cfg = JobError::Config;
    a.engine.validate().map_err(cfg)?;
    let mut texts = Vec::new();
    for p in &a.file {
        let text = std::fs::read_to_string(p)
            .map_err(|e| JobError::Input(format!("--file '{}': {e}", p.display())))?;
        texts.push(SqlText {
            origin: p.display().to_string(),
            text,
        });
    }
    if let Some(s) = &a.execute {
        texts.push(SqlText {
            origin: "--execute".into(),
            text: s.clone(),
        });
    }
    let target = match &a.output {
        Some(p) => SelectTarget::File(p.clone()),
        None => SelectTarget::Terminal,
    };
    let job = plan_job(&texts, &target).map_err(|e| cfg(e.to_string()))?;
    let start = Instant::now();
    let mut runtime = a.engine.runtime(job.granularity_ms());
    // This process ends with the run: its state goes with the exit (`RuntimeConfig`).
    runtime.leave_state_to_exit = true;
    let all: String = texts.iter().map(|t| t.text.as_str()).collect();
    runtime.job_key = format!("sql {}", fingerprint(&all));
    runtime.time_per_second = Some(1000);
    let df = Dataflow::new(runtime).map_err(JobError::Run)?;
    let parallelism = a.engine.workers * a.engine.processes.max(1);
    let mut b = Builder::new(&df, parallelism);
    if job.explain {
        for (i, q) in job.queries.iter().enumerate() {
            println!("== query {i}: to {:?}", q.output);
            print!("{}", q.plan.explain());
        }
        // The vertices it would run, named as the status page and the metrics name them.
        build(&mut b, &job, true).map_err(JobError::Input)?;
        println!("== dataflow: {parallelism} instances of each vertex");
        print!("{}", df.graph().explain());
        return Ok(());
    }
    let outputs = build(&mut b, &job, false).map_err(JobError::Input)?;
    let counters = b.counters;
    let report = df.run().map_err(JobError::Run)?;
    if report.process != 0 {
        return Ok(());
    }
    if let Some(c) = &report.checkpoints {
        xorflow_cli::checkpoint_summary::say_checkpoints(c);
    }
    let mut written = Vec::new();
    for o in outputs {
        let what = o.describe();
        let n = o.finish().map_err(JobError::Output)?;
        written.push(format!("{n} rows to {what}"));
    }
    for (table, bad) in &counters.malformed {
        if bad.is_empty() {
            continue;
        }
        let shown: Vec<String> = bad
            .iter()
            .take(3)
            .map(|(l, why)| format!("line {l}: {why}"))
            .collect();
        eprintln!(
            "warning: table {table}: {} malformed rows skipped ({}{})",
            bad.len(),
            shown.join("; "),
            if bad.len() > 3 { "; ..." } else { "" }
        );
    }
    let mut read: Vec<String> = (counters.rows_read.iter())
        .map(|(t, n)| format!("{n} rows of {t}"))
        .collect();
    for t in &counters.files {
        use xorflow_sql::connectors::file_source::{LINES_READ, MALFORMED};
        let count = |name: &str| -> u64 {
            (report.vertices.iter())
                .filter(|v| v.name == t.vertex)
                .filter_map(|v| v.counters.get(name))
                .sum()
        };
        let bad = count(MALFORMED);
        if bad > 0 {
            // Named from this process's instances; the count is over every process's.
            let shown = t.malformed_examples();
            eprintln!(
                "warning: table {}: {bad} malformed rows skipped ({}{})",
                t.table,
                shown.join("; "),
                if bad > shown.len() as u64 {
                    "; ..."
                } else {
                    ""
                }
            );
        }
        read.push(format!("{} rows of {}", count(LINES_READ), t.table));
    }
    if let Ok(late) = counters.late.lock() {
        for (op, (n, first)) in late.iter() {
            eprintln!(
                "warning: {op}: {n} rows later than their table's watermark allows were skipped \
                 (the first at event time {})",
                xorflow_sql::types::format_timestamp(*first)
            );
        }
    }
    if let Some(line) = window_latency(&report.vertices) {
        eprintln!("{line}");
    }
    if let Some((_, _, pace)) = &counters.replay {
        if let Some(s) = pace.started() {
            // xorflow-lab bench nexmark reads this line: window latency is counted from it.
            eprintln!(
                "replay: started at {:.3} ms since the epoch, event time {} then, {}x",
                s.epoch_ms,
                xorflow_sql::types::format_timestamp(s.origin_ms),
                pace.speed()
            );
        }
    }
    for (table, c) in &counters.kafka {
        let n = c.snapshot();
        let first = (n.examples.first()).map_or(String::new(), |e| {
            format!(
                " (first: partition {} offset {}: {})",
                e.partition, e.offset, e.reason
            )
        });
        if n.malformed > 0 {
            eprintln!(
                "warning: table {table}: {} malformed records skipped{first}",
                n.malformed
            );
        }
        if n.late > 0 {
            eprintln!(
                "warning: table {table}: {} records later than its watermark allows skipped{first}",
                n.late
            );
        }
        read.push(format!("{} records of {table}", n.read));
    }
    eprintln!(
        "sql: {}wrote {} in {:.2} s",
        if read.is_empty() {
            String::new()
        } else {
            format!("read {}; ", read.join(", "))
        },
        written.join(", "),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// "window latency: p50 X ms, p99 Y ms (N windows, ...)": over every window of the job's
/// window aggregates (`window_aggregate`, `window_aggregate#2`, ...), the time from the last
/// input row a window's instance received to its result, when trAcker's frontier passed the
/// window's end (`crates/runtime/src/operators/window.rs`). `None` when no window closed.
fn window_latency(vertices: &[xorflow_runtime::measure::stats::VertexStats]) -> Option<String> {
    let mut windows = vertices
        .iter()
        .filter(|v| v.name.starts_with("window_aggregate"))
        .map(|v| &v.notification_latency_ns);
    let mut h = windows.next()?.clone();
    for w in windows {
        h.add(w).ok()?;
    }
    if h.is_empty() {
        return None;
    }
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
    Some(format!(
        "window latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} window closings, one per \
         window and instance, from the last row the instance received to its result)",
        ms(0.5),
        ms(0.99),
        ms(1.0),
        h.len()
    ))
}

/// A short stable fingerprint of the job's text: a resumed run must run the same SQL.
fn fingerprint(text: &str) -> String {
    // FNV-1a: stable across builds and platforms (std's hasher is not).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}
