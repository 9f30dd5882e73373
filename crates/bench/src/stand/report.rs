//! What every report of the stand shares: `results.csv` (one row per run), medians over
//! repetitions, Markdown tables, figures (SVG) and the REPORT.md header. Each experiment writes
//! its own section (`experiments/<name>.rs`), putting the paper's claims next to what its run
//! measured.

use super::experiments::{sustained, Experiment, BACKLOG_P99_MS, SUSTAINED_SHARE};
use super::plot::{self, BarChart, Series};
use super::runner::{Outcome, RunResult};
use super::Meta;
use crate::chain::{ChainMeasures, ChainResult};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use xorflow_runtime::ValueName;

/// Columns of `results.csv`, in order: the point, then what the run measured.
pub const CSV_COLUMNS: &[&str] = &[
    "experiment",
    "sweep",
    "value",
    "config",
    "rep",
    "ok",
    "error",
    "wall_s",
    "stages",
    "processes",
    "tracker_processes",
    "tracker_shards",
    "workers",
    "granularity",
    "ack_multiplier",
    "rate",
    "achieved_rate",
    "sink_rate",
    "sustained",
    "elements",
    "warmup",
    "elements_per_s",
    "service_messages_per_element",
    "service_bytes_per_element",
    "ack_messages",
    "heartbeat_messages",
    "frontier_messages",
    "marker_messages",
    "notification_p50_us",
    "notification_p95_us",
    "notification_p99_us",
    "element_latency_p50_us",
    "element_latency_p99_us",
    "tracker_busy_per_s",
    "tracker_cpu_per_s",
    "tracker_wait_per_s",
    "cpu_per_s",
    "post_snapshot_p50_us",
    "post_snapshot_p90_us",
    "post_snapshot_p99_us",
    "post_snapshot_max_us",
    "buffered_elements",
    "total_buffering_ms",
    "avg_buffering_ms",
];

/// The columns every chain run has, xorflow's or a peer's (None for a run without elements).
pub(super) fn measures_metric(m: &ChainMeasures, col: &str) -> Option<f64> {
    if m.elements == 0 {
        return None;
    }
    match col {
        "stages" => Some(m.stages as f64),
        "workers" => Some(m.workers as f64),
        "granularity" => Some(m.granularity as f64),
        "rate" => Some(m.rate),
        "achieved_rate" => m.achieved_rate,
        "elements" => Some(m.elements as f64),
        "warmup" => Some(m.warmup as f64),
        "elements_per_s" => Some(m.elements_per_s),
        "notification_p50_us" => m.latency_p50_us,
        "notification_p95_us" => m.latency_p95_us,
        "notification_p99_us" => m.latency_p99_us,
        "notification_any_p50_us" => m.notification_latency_any.p50_us,
        "notification_any_p99_us" => m.notification_latency_any.p99_us,
        "element_latency_p50_us" => m.element_latency.p50_us,
        "element_latency_p99_us" => m.element_latency.p99_us,
        _ => None,
    }
}

impl RunResult for ChainResult {
    fn metric(&self, col: &str) -> Option<f64> {
        let n = self.measures.elements as f64;
        if n == 0.0 {
            return None;
        }
        let t = &self.traffic;
        let snap = self.snapshot.as_ref();
        let snap_sum = |f: fn(&crate::chain::StageBuffering) -> f64| -> Option<f64> {
            Some(snap?.stages.iter().map(f).sum())
        };
        let post = |f: fn(&crate::chain::Percentiles) -> Option<f64>| {
            snap.and_then(|s| f(&s.post_snapshot_latency))
        };
        match col {
            "processes" => Some(self.processes as f64),
            "tracker_processes" => Some(self.tracker_processes as f64),
            "tracker_shards" => Some(self.tracker_shards as f64),
            "ack_multiplier" => Some(self.ack_multiplier as f64),
            "sink_rate" => self.sink_rate,
            "tracker_busy_per_s" => self.tracker_busy_per_s,
            "service_messages_per_element" => Some(t.service.messages as f64 / n),
            "service_bytes_per_element" => Some(t.service.bytes as f64 / n),
            "ack_messages" => Some(t.ack.messages as f64),
            "heartbeat_messages" => Some(t.heartbeat.messages as f64),
            "frontier_messages" => Some(t.frontier.messages as f64),
            "marker_messages" => Some(t.marker.messages as f64),
            "tracker_cpu_per_s" => self.tracker_process_cpu_per_s,
            "tracker_wait_per_s" => self.tracker_process_wait_per_s,
            "cpu_per_s" => self.cpu_per_s,
            "post_snapshot_p50_us" => post(|p| p.p50_us),
            "post_snapshot_p90_us" => post(|p| p.p90_us),
            "post_snapshot_p99_us" => post(|p| p.p99_us),
            "post_snapshot_max_us" => post(|p| p.max_us),
            "buffered_elements" => snap_sum(|s| s.buffered_elements as f64),
            "total_buffering_ms" => snap_sum(|s| s.total_buffering_ms),
            "avg_buffering_ms" => {
                let b = snap_sum(|s| s.buffered_elements as f64)?;
                (b > 0.0).then(|| snap_sum(|s| s.total_buffering_ms).unwrap_or(0.0) / b)
            }
            _ => measures_metric(&self.measures, col),
        }
    }
}

/// A number for a CSV cell: whole numbers without decimals, others with 6; empty when missing.
pub(super) fn fmt_num(v: Option<f64>) -> String {
    match v {
        None => String::new(),
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        Some(x) => format!("{x:.6}"),
    }
}

/// Writes a CSV file: the header, then the rows.
///
/// # Errors
/// The file cannot be written.
pub(super) fn write_csv_file(
    path: &Path,
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header)?;
    for row in rows {
        w.write_record(&row)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    super::files::write_whole(path, &bytes)
}

/// The cells every results.csv row starts with: the point and how its run went.
pub(super) fn point_cells<R>(o: &Outcome<R>) -> Vec<String> {
    let p = &o.point;
    vec![
        p.sweep.clone(),
        p.value.clone(),
        p.config.clone(),
        p.rep.to_string(),
        o.result.is_some().to_string(),
        o.error.clone().unwrap_or_default(),
        format!("{:.3}", o.wall_s),
    ]
}

fn write_csv(e: Experiment, dir: &Path, outcomes: &[Outcome<ChainResult>]) -> Result<()> {
    let rows = outcomes.iter().map(|o| {
        let mut row = vec![e.name().to_string()];
        row.extend(point_cells(o));
        for col in &CSV_COLUMNS[row.len()..] {
            row.push(match (&o.result, *col) {
                (None, _) => String::new(),
                (Some(r), "sustained") => sustained(&r.measures).to_string(),
                (Some(r), c) => fmt_num(r.metric(c)),
            });
        }
        row
    });
    write_csv_file(&dir.join("results.csv"), CSV_COLUMNS, rows)
}

/// Median of a metric over the successful repetitions of each (sweep, value, config).
pub(super) struct Medians<R> {
    /// (sweep, value, config) -> the results of its repetitions.
    by: BTreeMap<(String, String, String), Vec<R>>,
    /// Values in first-seen order per sweep, configs in first-seen order.
    pub(super) values: BTreeMap<String, Vec<String>>,
    pub(super) configs: Vec<String>,
}

impl<R: RunResult> Medians<R> {
    pub(super) fn new(outcomes: &[Outcome<R>]) -> Self {
        let mut m = Medians {
            by: BTreeMap::new(),
            values: BTreeMap::new(),
            configs: Vec::new(),
        };
        for o in outcomes {
            let p = &o.point;
            let vals = m.values.entry(p.sweep.clone()).or_default();
            if !vals.contains(&p.value) {
                vals.push(p.value.clone());
            }
            if !m.configs.contains(&p.config) {
                m.configs.push(p.config.clone());
            }
            if let Some(r) = &o.result {
                m.by.entry((p.sweep.clone(), p.value.clone(), p.config.clone()))
                    .or_default()
                    .push(r.clone());
            }
        }
        m
    }

    pub(super) fn get(&self, sweep: &str, value: &str, config: &str, col: &str) -> Option<f64> {
        let runs = self
            .by
            .get(&(sweep.to_string(), value.to_string(), config.to_string()))?;
        let mut v: Vec<f64> = runs.iter().filter_map(|r| r.metric(col)).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }

    /// A grouped bar chart of `col` over a sweep's values, one series per config.
    pub(super) fn chart(
        &self,
        sweep: &str,
        col: &str,
        title: &str,
        y: &str,
        log: bool,
    ) -> BarChart {
        let cats = self.values.get(sweep).cloned().unwrap_or_default();
        BarChart {
            title: title.into(),
            x_label: sweep_label(sweep).into(),
            y_label: y.into(),
            series: self
                .configs
                .iter()
                .map(|c| Series {
                    name: c.clone(),
                    values: cats.iter().map(|v| self.get(sweep, v, c, col)).collect(),
                })
                // A config that has nothing in this sweep gets no legend entry and no bar slot.
                .filter(|s| s.values.iter().any(Option::is_some))
                .collect(),
            categories: cats,
            log_y: log,
        }
    }

    /// A Markdown table: rows = sweep values, columns = configs, cells = `col` medians.
    pub(super) fn table(&self, sweep: &str, col: &str, digits: usize) -> String {
        let mut head = vec![(sweep_label(sweep).to_string(), Align::Left)];
        head.extend(self.configs.iter().map(|c| (c.clone(), Align::Right)));
        let mut t = Table::new(head);
        for v in self.values.get(sweep).into_iter().flatten() {
            let mut row = vec![v.clone()];
            row.extend(self.configs.iter().map(|c| {
                self.get(sweep, v, c, col)
                    .map_or("–".into(), |x| format!("{x:.digits$}"))
            }));
            t.row(row);
        }
        t.render()
    }
}

/// Column alignment of a [`Table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text (`---`).
    Left,
    /// Numbers (`---:`).
    Right,
}

/// A Markdown table: every report writes its tables through this one.
#[derive(Clone, Debug)]
pub struct Table {
    head: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headings.
    pub fn new(head: Vec<(String, Align)>) -> Self {
        Table {
            head,
            rows: Vec::new(),
        }
    }

    /// A table whose headings are given as `&str`s.
    pub fn with(head: &[(&str, Align)]) -> Self {
        Table::new(head.iter().map(|(h, a)| (h.to_string(), *a)).collect())
    }

    /// Appends a row (one cell per column).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// `| a | b |`, the alignment rule, then the rows, each line ending in a newline.
    pub fn render(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            let cells: Vec<&str> = cells.collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let mut t = line(&mut self.head.iter().map(|(h, _)| h.as_str()));
        t.push('|');
        for (_, a) in &self.head {
            t.push_str(match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        t.push('\n');
        for r in &self.rows {
            t.push_str(&line(&mut r.iter().map(String::as_str)));
        }
        t
    }
}

pub(super) fn sweep_label(sweep: &str) -> &str {
    match sweep {
        "stages" => "stages (graph size)",
        "processes" => "worker processes",
        "granularity" => "granularity (elements per substream)",
        "multiplier" => "ack load (multiplier)",
        "pause" => "snapshot pause",
        "latency" | "latency-storm" | "cluster-latency" => "granularity (elements per substream)",
        "cluster-throughput" => "granularity (none: no tracking)",
        other => other,
    }
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        // Two decimals, or two significant digits below 0.1 (0.0042x, not 0.00x).
        (Some(a), Some(b)) if b > 0.0 => {
            let r = a / b;
            let digits = if r >= 0.1 || r == 0.0 {
                2
            } else {
                (1.0 - r.log10().floor()) as usize
            };
            format!("{r:.digits$}x")
        }
        _ => "n/a".into(),
    }
}

/// The requested rate of the first successful run, as "20,000" (fixed-rate experiments use one).
pub(super) fn rate_text(outcomes: &[Outcome<ChainResult>]) -> String {
    let r = first_rate(outcomes) as u64;
    let digits = r.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The requested rate of the first successful run, elements/s.
pub(super) fn first_rate(outcomes: &[Outcome<ChainResult>]) -> f64 {
    outcomes
        .iter()
        .find_map(|o| Some(o.result.as_ref()?.measures.rate))
        .unwrap_or(0.0)
}

pub(super) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.digits$}"))
}

/// A REPORT.md being written: its text and the folder its figures go to.
pub(super) struct Doc<'a> {
    dir: &'a Path,
    /// The Markdown so far.
    pub(super) md: String,
}

impl<'a> Doc<'a> {
    pub(super) fn new(dir: &'a Path, md: String) -> Self {
        Doc { dir, md }
    }

    /// The results folder (for an experiment's own files).
    pub(super) fn dir(&self) -> &'a Path {
        self.dir
    }

    /// Draws `chart` into `dir/<file>.svg` (vertical bars) and links it; draws nothing when no
    /// value was measured (e.g. every run failed).
    ///
    /// # Errors
    /// The figure cannot be drawn or written.
    pub(super) fn figure(&mut self, chart: BarChart, file: &str) -> Result<()> {
        self.draw(chart, file, false)
    }

    /// The same with horizontal bars (distributions such as latency percentiles).
    pub(super) fn figure_horizontal(&mut self, chart: BarChart, file: &str) -> Result<()> {
        self.draw(chart, file, true)
    }

    fn draw(&mut self, chart: BarChart, file: &str, horizontal: bool) -> Result<()> {
        if chart
            .series
            .iter()
            .all(|s| s.values.iter().all(Option::is_none))
        {
            return Ok(());
        }
        let file = format!("{file}.{}", plot::EXTENSION);
        let path = self.dir.join(&file);
        if horizontal {
            chart.draw_svg_horizontal(&path)?;
        } else {
            chart.draw_svg(&path)?;
        }
        let _ = writeln!(self.md, "![{}]({file})\n", chart.title);
        Ok(())
    }

    /// Writes REPORT.md.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(super) fn finish(self) -> Result<()> {
        let path = self.dir.join("REPORT.md");
        super::files::write_whole(&path, self.md.as_bytes())
    }
}

/// The machine and run facts every report opens with, as markdown list lines.
pub(super) fn meta_lines(meta: &Meta) -> String {
    format!(
        "- command: `{}`\n- git: {}\n- started: {}\n- machine: {} CPUs ({}), {:.1} GiB, Linux {}\n",
        meta.command,
        meta.git,
        meta.started_utc,
        meta.cpus,
        meta.cpu_model,
        meta.memory_gib,
        meta.kernel,
    )
}

/// The list of runs that fell behind their rate: their counts stand, their latencies include a
/// backlog (snapshot runs pause on purpose, so only their sources' rate counts).
fn behind_list(e: Experiment, outcomes: &[Outcome<ChainResult>], md: &mut String) {
    let behind: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            let m = &o.result.as_ref()?.measures;
            let achieved = m.achieved_rate.unwrap_or(0.0);
            let short = achieved < SUSTAINED_SHARE * m.rate;
            let lagging = e != Experiment::Snapshots && !sustained(m);
            (short || lagging).then(|| {
                format!(
                    "{}={} {} rep {} (achieved {achieved:.0} of {:.0} el/s, end-to-end p99 {:.0} ms)",
                    o.point.sweep,
                    o.point.value,
                    o.point.config,
                    o.point.rep,
                    m.rate,
                    m.element_latency.p99_us.unwrap_or(0.0) / 1e3
                )
            })
        })
        .collect();
    if behind.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "Runs that did not keep up with their rate ({}; sources under {:.0}% of it or \
         end-to-end p99 over {} ms): their per-element counts are exact, their latencies \
         include the backlog.\n",
        behind.len(),
        SUSTAINED_SHARE * 100.0,
        BACKLOG_P99_MS
    );
    for b in &behind {
        let _ = writeln!(md, "- {b}");
    }
    md.push('\n');
}

/// Writes results.csv, the experiment's own files and figures, and REPORT.md into `dir`.
///
/// # Errors
/// A file cannot be written or a figure cannot be drawn.
pub fn write(
    e: Experiment,
    dir: &Path,
    meta: &Meta,
    outcomes: &[Outcome<ChainResult>],
) -> Result<()> {
    write_csv(e, dir, outcomes)?;
    let m = Medians::new(outcomes);
    let failed = outcomes.iter().filter(|o| o.result.is_none()).count();
    let mut doc = Doc::new(
        dir,
        format!(
            "# The trAcker paper, {}: {} profile\n\n{}- runs: {} ({} failed; see results.csv and runs.log)\n\n",
            e.name(),
            meta.profile,
            meta_lines(meta),
            outcomes.len(),
            failed
        ),
    );
    if e != Experiment::Throughput {
        behind_list(e, outcomes, &mut doc.md);
    }
    e.report(&mut doc, &m, outcomes, meta)?;
    doc.finish()
}

#[cfg(test)]
mod tests {
    use super::{ratio, Align, Table};

    #[test]
    fn ratios_keep_two_significant_digits_when_small() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50x");
        assert_eq!(ratio(Some(1.0), Some(8.0)), "0.12x");
        assert_eq!(ratio(Some(2.0), Some(1819.0)), "0.0011x");
        assert_eq!(ratio(Some(4.0), Some(190.0)), "0.021x");
        assert_eq!(ratio(Some(0.0), Some(5.0)), "0.00x");
        assert_eq!(ratio(Some(1.0), Some(0.0)), "n/a");
        assert_eq!(ratio(None, Some(1.0)), "n/a");
    }

    #[test]
    fn tables_render_heading_rule_and_rows() {
        let mut t = Table::with(&[("W", Align::Right), ("system", Align::Left)]);
        t.row(vec!["100".into(), "timely".into()]);
        t.row(vec!["".into(), "–".into()]);
        assert_eq!(
            t.render(),
            "| W | system |\n|---:|---|\n| 100 | timely |\n|  | – |\n"
        );
    }
}
