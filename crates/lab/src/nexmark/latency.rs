//! The window latency runs of `xorflow-lab bench nexmark`: both engines replay the same events
//! at their event-time pace (xorflow's file tables with `'replay.*'`, Flink's
//! `'connector' = 'xorflow-replay'` of peers/flink-sql: the same options, the same clock,
//! crates/runtime/src/connectors/pace.rs), run examples/nexmark/latency/qN.sql (the query with a
//! `print` sink and each row's window end last), and this process stamps each printed line as it
//! arrives. A window ending at `e`, with the tables' watermark delay `d`, can be complete no
//! sooner than the event at `e + d` is due on the replay's clock; its latency is from then to
//! the arrival of its last row. Windows that only the end of the input closes are left out.

use super::{first_line, measured_as, median, table, wrap, NexmarkArgs, System};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::path::PathBuf;
use std::process::ChildStdout;
use std::thread::JoinHandle;
use std::time::Duration;
use xorflow_cli::say;

/// The queries measured unless told (those of them in `--queries`).
pub(super) const QUERIES: [&str; 4] = ["q5", "q7", "q8", "q11"];

/// Flink's network buffer timeout in these runs, ms: its documentation's advice to minimize
/// latency ("close to 0 (for example 5 or 10 ms)"; its default, 100 ms, is for throughput).
pub(super) const FLINK_BUFFER_TIMEOUT_MS: u64 = 10;
/// Flink's periodic watermark interval in these runs, ms (its default is 200 ms): a watermark
/// every 10 ms, so that the wait for the next one adds at most that to a window.
pub(super) const FLINK_WATERMARK_INTERVAL_MS: u64 = 10;

/// What the latency figures are.
pub(super) const DEFINITION: &str = "Window latency: both engines replay the same events at \
     their event-time pace (a row of event time t is due (t - origin) / speed after the replay \
     starts: xorflow's file tables with 'replay.origin' and 'replay.speed', Flink's \
     'xorflow-replay' connector of peers/flink-sql with the same options), run \
     examples/nexmark/latency/qN.sql (the query, a print sink, each row's window end last), and \
     the bench stamps each printed line as it arrives. A window ending at e can be complete no \
     sooner than the event at e plus the tables' watermark delay is due; its latency runs from \
     then to the arrival of its last row. Windows closed only by the end of the input are left \
     out. xorflow runs without checkpoints here (its print sink holds rows until a checkpoint or \
     the end under them, for exactly-once output); Flink keeps its checkpoint interval (not \
     reached), with its documentation's low-latency settings: network buffer timeout 10 ms \
     (default 100), watermark interval 10 ms (default 200).";

/// One latency run of one query on one engine.
#[derive(Clone, Debug, Serialize)]
pub(super) struct LatencyRun {
    pub query: String,
    pub system: System,
    pub round: usize,
    /// ok or failed.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Rows printed by the measured run.
    pub rows: usize,
    /// Windows measured, and those left out as closed by the end of the input.
    pub windows: usize,
    pub windows_at_end: usize,
    /// Over the windows measured, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
    /// The replay's start, as the engine reported it (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_started_epoch_ms: Option<f64>,
    /// runs/<log>.out (stamped lines) and .err.
    pub log: String,
}

/// How the latency runs replay the events.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Replay {
    /// Events per second of all kinds, as asked (`--latency-rate`).
    pub rate: f64,
    /// Event-time ms per wall-clock ms.
    pub speed: f64,
    /// Events replayed, all kinds.
    pub events: u64,
    /// The first and last event times of the input, ms since the epoch.
    pub first_event_ms: i64,
    pub last_event_ms: i64,
    /// The tables' watermark delay, ms.
    pub delay_ms: i64,
}

/// Medians of a query's latency runs on one engine.
#[derive(Clone, Debug, Serialize)]
pub(super) struct LatencyMedians {
    pub runs: usize,
    pub windows: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One query's latency row.
#[derive(Clone, Debug, Serialize)]
pub(super) struct LatencyRow {
    pub query: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xorflow: Option<LatencyMedians>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flink: Option<LatencyMedians>,
    /// Flink's p99 over xorflow's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flink_over_xorflow_p99: Option<f64>,
}

/// Copies `pipe`'s lines into `out` as they arrive, each after its arrival time (ms since the
/// epoch, 3 decimals) and a tab.
pub(super) fn stamp_lines(pipe: ChildStdout, out: File) -> JoinHandle<Result<()>> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut w = BufWriter::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            write!(w, "{:.3}\t", epoch_ms())?;
            w.write_all(&line)?;
            if !line.ends_with(b"\n") {
                w.write_all(b"\n")?;
            }
        }
        w.flush()?;
        Ok(())
    })
}

/// The wall clock, ms since the epoch.
fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// A timestamp as the engines print it: `2015-07-15 00:00:10.000` (xorflow), or
/// `2015-07-15T00:00:10`, `2015-07-15T00:01` (Flink's print sink): ms since the epoch, UTC.
pub(super) fn parse_printed_time(text: &str) -> Option<i64> {
    let t = text.trim().replace('T', " ");
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(&t, f).ok())
        .map(|d| d.and_utc().timestamp_millis())
}

/// The printed rows of a stamped stdout: (arrival, ms since the epoch; the last field, the
/// window's end, ms). With `after`, only the lines after the first line equal to it (Flink's
/// warm-up runs print too). Flink's `N> ` subtask prefix is dropped.
pub(super) fn printed_rows(stamped: &str, after: Option<&str>) -> Vec<(f64, i64)> {
    let mut on = after.is_none();
    let mut out = Vec::new();
    for line in stamped.lines() {
        let Some((at, text)) = line.split_once('\t') else {
            continue;
        };
        if !on {
            on = Some(text.trim_end()) == after;
            continue;
        }
        let text = match text.split_once("> ") {
            Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => text,
        };
        let Some(fields) = (text.get(2..))
            .filter(|_| text.starts_with('+') || text.starts_with('-'))
            .and_then(|t| t.strip_prefix('['))
            .and_then(|t| t.trim_end().strip_suffix(']'))
        else {
            continue;
        };
        let last = fields.rsplit(", ").next().unwrap_or("");
        if let (Ok(at), Some(end)) = (at.parse::<f64>(), parse_printed_time(last)) {
            out.push((at, end));
        }
    }
    out
}

/// The replay's start from a run's stderr: the last "replay: started at X ms since the epoch"
/// line (both engines print it in these words).
pub(super) fn replay_start(stderr: &str) -> Option<f64> {
    stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("replay: started at "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Each window's latency, ms, from the rows printed (arrival, window end) of a replay started at
/// `start_ms`: per window end, its last row's arrival less the time the event at its end plus
/// the delay was due. Also the windows left out, which the end of the input closed.
pub(super) fn window_latencies(
    rows: &[(f64, i64)],
    start_ms: f64,
    replay: &Replay,
) -> (Vec<f64>, usize) {
    let mut last: BTreeMap<i64, f64> = BTreeMap::new();
    for &(at, end) in rows {
        let e = last.entry(end).or_insert(at);
        *e = e.max(at);
    }
    let mut out = Vec::new();
    let mut at_end = 0;
    for (end, at) in last {
        let complete = end + replay.delay_ms;
        if complete > replay.last_event_ms {
            at_end += 1;
            continue;
        }
        let due = start_ms + (complete - replay.first_event_ms) as f64 / replay.speed;
        out.push(at - due);
    }
    (out, at_end)
}

/// A ratio with two significant digits below 10 (0.026x, 2.7x), none above (25x).
fn ratio(x: f64) -> String {
    match x {
        x if x >= 10.0 => format!("{x:.0}x"),
        x if x >= 1.0 => format!("{x:.1}x"),
        x => format!("{x:.2}x"),
    }
}

/// The `q`-quantile (nearest rank) of `xs`, sorted.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[i - 1]
}

/// The event times of the first and last line of a JSON-lines file of the generator (its
/// `dateTime`).
pub(super) fn event_span(path: &Path) -> Result<(i64, i64)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let time = |line: &str| -> Result<i64> {
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("'{}': not JSON: {line}", path.display()))?;
        (v["dateTime"].as_str())
            .and_then(parse_printed_time)
            .with_context(|| format!("'{}': no dateTime in {line}", path.display()))
    };
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(first), Some(last)) = (
        lines.next(),
        text.lines().rev().find(|l| !l.trim().is_empty()),
    ) else {
        bail!("'{}' is empty", path.display());
    };
    Ok((time(first)?, time(last)?))
}

/// The watermark delay every table of a DDL declares (`WATERMARK FOR ... - INTERVAL 'N'
/// SECOND`), ms.
pub(super) fn watermark_delay_ms(ddl: &str) -> Result<i64> {
    let mut delays = Vec::new();
    for part in ddl.split("WATERMARK FOR").skip(1) {
        let stmt = part.split(')').next().unwrap_or("");
        let n = (stmt.split("INTERVAL '").nth(1))
            .and_then(|r| r.split('\'').next())
            .and_then(|n| n.trim().parse::<i64>().ok());
        match (n, stmt.contains("SECOND")) {
            (Some(n), true) => delays.push(n * 1000),
            _ => bail!("a WATERMARK without an INTERVAL 'N' SECOND delay: {stmt}"),
        }
    }
    delays.dedup();
    match delays[..] {
        [d] => Ok(d),
        [] => bail!("the DDL declares no WATERMARK"),
        _ => bail!("the tables' watermark delays differ: {delays:?} ms"),
    }
}

/// `text` (a DDL of file tables, each `'connector' = 'filesystem'`) with each table's connector
/// replaced by `connector` followed by the replay's options.
pub(super) fn replay_ddl(text: &str, connector: &str, replay: &Replay) -> Result<String> {
    let from = "'connector' = 'filesystem'";
    let n = text.matches(from).count();
    if n != super::TABLES.len() {
        bail!(
            "expected {} file tables in the DDL, found {n}",
            super::TABLES.len()
        );
    }
    let origin = chrono::DateTime::from_timestamp_millis(replay.first_event_ms)
        .context("the first event time")?
        .format("%Y-%m-%d %H:%M:%S%.3f");
    Ok(text.replace(
        from,
        &format!(
            "'connector' = '{connector}', 'replay.origin' = '{origin}', 'replay.speed' = '{}'",
            replay.speed
        ),
    ))
}

/// One latency run: `argv` run with its stdout stamped; `after`, the line its measured rows
/// follow (Flink's).
pub(super) fn latency_run(
    system: System,
    argv: &[String],
    stem: &Path,
    timeout: Duration,
    replay: &Replay,
    after: Option<&str>,
) -> Result<LatencyRun> {
    let e = measured_as(argv, stem, timeout, true)?;
    let failed = |message: String| LatencyRun {
        query: String::new(),
        system,
        round: 0,
        status: "failed".into(),
        message: Some(message),
        rows: 0,
        windows: 0,
        windows_at_end: 0,
        p50_ms: None,
        p99_ms: None,
        max_ms: None,
        replay_started_epoch_ms: None,
        log: String::new(),
    };
    if e.code != Some(0) || e.timed_out {
        return Ok(failed(first_line(&e)));
    }
    let Some(start) = replay_start(&e.stderr) else {
        return Ok(failed("no \"replay: started at\" line on stderr".into()));
    };
    let rows = printed_rows(&e.stdout, after);
    let (mut lat, at_end) = window_latencies(&rows, start, replay);
    if lat.is_empty() {
        return Ok(failed(format!(
            "no window closed before the end of the input ({} rows printed)",
            rows.len()
        )));
    }
    lat.sort_by(f64::total_cmp);
    Ok(LatencyRun {
        status: "ok".into(),
        message: None,
        rows: rows.len(),
        windows: lat.len(),
        windows_at_end: at_end,
        p50_ms: Some(quantile(&lat, 0.5)),
        p99_ms: Some(quantile(&lat, 0.99)),
        max_ms: lat.last().copied(),
        replay_started_epoch_ms: Some(start),
        ..failed(String::new())
    })
}

/// Medians of the ok runs of `system` on `query`.
fn medians(runs: &[LatencyRun], query: &str, system: System) -> Option<LatencyMedians> {
    let ok: Vec<&LatencyRun> = (runs.iter())
        .filter(|r| r.query == query && r.system == system && r.status == "ok")
        .collect();
    if ok.is_empty() {
        return None;
    }
    let m = |f: fn(&LatencyRun) -> Option<f64>| median(ok.iter().filter_map(|r| f(r)).collect());
    Some(LatencyMedians {
        runs: ok.len(),
        windows: ok[0].windows,
        p50_ms: m(|r| r.p50_ms),
        p99_ms: m(|r| r.p99_ms),
        max_ms: m(|r| r.max_ms),
    })
}

/// Each query's medians.
pub(super) fn rows(queries: &[String], runs: &[LatencyRun]) -> Vec<LatencyRow> {
    (queries.iter())
        .map(|q| {
            let x = medians(runs, q, System::Xorflow);
            let f = medians(runs, q, System::Flink);
            LatencyRow {
                query: q.clone(),
                flink_over_xorflow_p99: match (&x, &f) {
                    (Some(x), Some(f)) if x.p99_ms > 0.0 => Some(f.p99_ms / x.p99_ms),
                    _ => None,
                },
                xorflow: x,
                flink: f,
            }
        })
        .collect()
}

/// The summary's section: the definition, the replay, a table of medians.
pub(super) fn section(replay: &Replay, rows: &[LatencyRow], runs: &[LatencyRun]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{}", wrap(DEFINITION));
    let _ = writeln!(
        t,
        "{}",
        wrap(&format!(
            "Replay: {} events at {:.0} events/s, event time {}x as fast as the wall clock \
             ({:.1} s of event time in {:.1} s; a 10 s window closes every {:.1} s), watermark \
             delay {} ms of event time.",
            replay.events,
            replay.rate,
            replay.speed,
            (replay.last_event_ms - replay.first_event_ms) as f64 / 1e3,
            (replay.last_event_ms - replay.first_event_ms) as f64 / 1e3 / replay.speed,
            10.0 / replay.speed,
            replay.delay_ms
        ))
    );
    let cell = |m: &Option<LatencyMedians>| match m {
        Some(m) => [
            format!("{:.1}", m.p50_ms),
            format!("{:.1}", m.p99_ms),
            format!("{:.1}", m.max_ms),
        ],
        None => ["-".into(), "-".into(), "-".into()],
    };
    let mut table_rows = vec![[
        "query",
        "windows",
        "xorflow p50, ms",
        "p99",
        "max",
        "Flink p50, ms",
        "p99",
        "max",
        "Flink/xorflow p99",
    ]
    .map(String::from)
    .to_vec()];
    for r in rows {
        let windows = r
            .xorflow
            .as_ref()
            .or(r.flink.as_ref())
            .map_or(0, |m| m.windows);
        let mut row = vec![r.query.clone(), windows.to_string()];
        row.extend(cell(&r.xorflow));
        row.extend(cell(&r.flink));
        row.push(r.flink_over_xorflow_p99.map_or("-".into(), ratio));
        table_rows.push(row);
    }
    t.push_str(&table(&table_rows));
    for r in runs.iter().filter(|r| r.status != "ok") {
        let _ = writeln!(
            t,
            "{} round {} {}: failed: {}",
            r.query,
            r.round,
            r.system.name(),
            r.message.as_deref().unwrap_or("")
        );
    }
    t
}

/// The latency runs' outcome.
pub(super) struct Latency {
    pub replay: Replay,
    pub rows: Vec<LatencyRow>,
    pub runs: Vec<LatencyRun>,
}

/// The queries of the latency runs: `--latency-queries`, else those of [`QUERIES`] among the
/// bench's (`selected`: `--queries`, or every query file).
fn queries(a: &NexmarkArgs, selected: &[(String, PathBuf)]) -> Result<Vec<(String, PathBuf)>> {
    let names: Vec<String> = match a.latency_queries.is_empty() {
        false => a
            .latency_queries
            .iter()
            .map(|q| q.trim().to_string())
            .collect(),
        true => (QUERIES.iter())
            .filter(|q| selected.iter().any(|(s, _)| s == *q))
            .map(|q| q.to_string())
            .collect(),
    };
    let dir = a.nexmark_dir.join("latency");
    let mut out = Vec::new();
    for q in names {
        let p = dir.join(format!("{q}.sql"));
        if !p.is_file() {
            bail!("--latency-queries: no '{}'", p.display());
        }
        out.push((q, p));
    }
    Ok(out)
}

/// Generates the latency runs' events into `out`/data-latency and runs each query on each
/// engine `a.rounds` times, alternating which goes first; `None` when there is nothing to run.
///
/// # Errors
/// A failed generation, an unreadable DDL or query (a run's failure is reported, not an error).
pub(super) fn run_all(
    a: &NexmarkArgs,
    out: &Path,
    xorflow: &Path,
    flink_cmd: Option<&Vec<String>>,
    selected: &[(String, PathBuf)],
) -> Result<Option<Latency>> {
    let queries = queries(a, selected)?;
    if a.latency_rate == 0 || queries.is_empty() {
        return Ok(None);
    }
    let data = out.join("data-latency");
    std::fs::create_dir_all(&data)?;
    let events = (a.latency_rate as f64 * a.latency_duration.as_secs_f64()).round() as u64;
    let event_rate = a.latency_rate / a.latency_speed;
    let line = xorflow_bench::subprocess::stdout_of(
        xorflow,
        &[
            "nexmark".into(),
            "generate".into(),
            "--events".into(),
            events.max(1).to_string(),
            "--rate".into(),
            event_rate.to_string(),
            "--out".into(),
            data.display().to_string(),
        ],
    )?;
    say!("nexmark: latency runs: {}", line.trim());
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for t in super::TABLES {
        let (f, l) = event_span(&data.join(format!("{t}.json")))?;
        (first, last) = (first.min(f), last.max(l));
    }
    let x_ddl = super::files_ddl_text(&a.nexmark_dir, &data)?;
    let delay_ms = watermark_delay_ms(&x_ddl)?;
    let replay = Replay {
        rate: a.latency_rate as f64,
        speed: a.latency_speed as f64,
        events,
        first_event_ms: first,
        last_event_ms: last,
        delay_ms,
    };
    let x_ddl_path = out.join("ddl_replay.sql");
    std::fs::write(&x_ddl_path, replay_ddl(&x_ddl, "filesystem", &replay)?)?;
    let f_ddl_path = out.join("ddl_replay_flink.sql");
    if flink_cmd.is_some() {
        let p = a
            .peers_dir
            .join("flink-sql/src/main/resources/ddl_files.sql");
        let text = std::fs::read_to_string(&p)
            .with_context(|| format!("cannot read '{}'", p.display()))?;
        if watermark_delay_ms(&text)? != delay_ms {
            bail!(
                "'{}': its watermark delay is not xorflow's DDL's",
                p.display()
            );
        }
        std::fs::write(&f_ddl_path, replay_ddl(&text, "xorflow-replay", &replay)?)?;
    }

    let mut runs = Vec::new();
    for round in 1..=a.rounds {
        for (q, path) in &queries {
            let mut order = vec![System::Xorflow];
            if flink_cmd.is_some() {
                match round % 2 {
                    0 => order.insert(0, System::Flink),
                    _ => order.push(System::Flink),
                }
            }
            for sys in order {
                let log = format!("latency-r{round}-{q}-{}", sys.name());
                let stem = out.join("runs").join(&log);
                let r = match sys {
                    System::Flink => {
                        let mut argv = flink_cmd.cloned().expect("flink is on");
                        argv.extend(
                            [
                                "--query",
                                &path.display().to_string(),
                                "--data-dir",
                                &data.display().to_string(),
                                "--ddl",
                                &f_ddl_path.display().to_string(),
                                "--parallelism",
                                &a.parallelism.to_string(),
                                "--warmup-runs",
                                &a.flink_warmup_runs.to_string(),
                                "--state-backend",
                                &a.flink_state_backend,
                                "--checkpoint-interval-ms",
                                &a.checkpoint_interval.as_millis().max(1).to_string(),
                                "--buffer-timeout-ms",
                                &FLINK_BUFFER_TIMEOUT_MS.to_string(),
                                "--watermark-interval-ms",
                                &FLINK_WATERMARK_INTERVAL_MS.to_string(),
                                "--name",
                                q,
                            ]
                            .map(String::from),
                        );
                        latency_run(
                            sys,
                            &argv,
                            &stem,
                            a.timeout,
                            &replay,
                            Some("-- measured run"),
                        )?
                    }
                    _ => {
                        let argv = [
                            xorflow.display().to_string(),
                            "sql".into(),
                            "--file".into(),
                            x_ddl_path.display().to_string(),
                            "--file".into(),
                            path.display().to_string(),
                            "--workers".into(),
                            a.parallelism.to_string(),
                        ];
                        latency_run(sys, &argv, &stem, a.timeout, &replay, None)?
                    }
                };
                let r = LatencyRun {
                    query: q.clone(),
                    round,
                    log,
                    ..r
                };
                say!(
                    "nexmark: latency round {round}/{} {q} {}",
                    a.rounds,
                    describe(&r)
                );
                runs.push(r);
            }
        }
    }
    if !a.keep_data {
        std::fs::remove_dir_all(&data)
            .with_context(|| format!("cannot remove '{}'", data.display()))?;
    }
    let names: Vec<String> = queries.into_iter().map(|(q, _)| q).collect();
    Ok(Some(Latency {
        rows: rows(&names, &runs),
        replay,
        runs,
    }))
}

/// A latency run's progress line.
fn describe(r: &LatencyRun) -> String {
    match (r.p50_ms, r.p99_ms) {
        (Some(p50), Some(p99)) => format!(
            "{}: {} windows, p50 {p50:.1} ms, p99 {p99:.1} ms",
            r.system.name(),
            r.windows
        ),
        _ => format!(
            "{}: failed: {}",
            r.system.name(),
            r.message.as_deref().unwrap_or("")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay() -> Replay {
        Replay {
            rate: 20_000.0,
            speed: 2.0,
            events: 300_000,
            first_event_ms: 0,
            last_event_ms: 30_000,
            delay_ms: 4_000,
        }
    }

    #[test]
    fn both_engines_printed_times_are_read() {
        assert_eq!(parse_printed_time("1970-01-01 00:00:10.000"), Some(10_000));
        assert_eq!(parse_printed_time("1970-01-01T00:00:10"), Some(10_000));
        assert_eq!(parse_printed_time("1970-01-01T00:01"), Some(60_000));
        assert_eq!(parse_printed_time("1970-01-01T00:00:10.5"), Some(10_500));
        assert_eq!(parse_printed_time("10"), None);
        let out = "5.000\t-- other\n\
                   7.000\t1> +I[1, a, b, 1970-01-01T00:00:10]\n\
                   8.000\t-- measured run\n\
                   9.500\t2> +I[2, x, 1970-01-01T00:00:20]\n\
                   9.600\t+I[3, 1970-01-01 00:00:30.000]\n\
                   9.700\tnot a row\n";
        assert_eq!(
            printed_rows(out, Some("-- measured run")),
            vec![(9.5, 20_000), (9.6, 30_000)]
        );
        assert_eq!(printed_rows(out, None).len(), 3);
        let err = "x\nreplay: started at 1000.500 ms since the epoch, event time ...\n";
        assert_eq!(replay_start(err), Some(1000.5));
        assert_eq!(replay_start("nothing"), None);
    }

    #[test]
    fn a_window_counts_from_its_end_plus_the_delay_on_the_replay_clock() {
        // Window [0, 10 s) is complete when the event at 14 s is due: 7 s after the start at
        // speed 2. Its last row arrives 7.25 s after; the other row earlier does not count.
        let start = 1_000_000.0;
        let rows = [
            (start + 7_100.0, 10_000),
            (start + 7_250.0, 10_000),
            (start + 12_300.0, 20_000),
            // 30 s + 4 s is past the last event (30 s): closed by the end of the input.
            (start + 15_000.0, 30_000),
        ];
        let (lat, at_end) = window_latencies(&rows, start, &replay());
        assert_eq!(lat, vec![250.0, 300.0]);
        assert_eq!(at_end, 1);
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&sorted, 0.5), 2.0);
        assert_eq!(quantile(&sorted, 0.99), 4.0);
        assert_eq!(
            [0.026, 2.71, 25.4].map(ratio),
            ["0.03x", "2.7x", "25x"].map(String::from)
        );
    }

    #[test]
    fn the_ddl_is_rewritten_and_its_delay_read() {
        let ddl = "CREATE TABLE a (t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '4' SECOND) \
                   WITH ('connector' = 'filesystem', 'path' = 'a');\n"
            .repeat(3);
        assert_eq!(watermark_delay_ms(&ddl).unwrap(), 4_000);
        let out = replay_ddl(&ddl, "xorflow-replay", &replay()).unwrap();
        assert_eq!(
            out.matches("'connector' = 'xorflow-replay', 'replay.origin' = '1970-01-01 00:00:00.000', 'replay.speed' = '2'").count(),
            3
        );
        assert!(replay_ddl("nothing", "x", &replay()).is_err());
        let mixed = ddl.replacen("'4' SECOND", "'5' SECOND", 1);
        assert!(watermark_delay_ms(&mixed).is_err());
    }
}
