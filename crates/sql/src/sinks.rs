//! Where a query's rows go: `blackhole` (counted and dropped, on every worker), `print` (Flink's
//! `+I[...]` lines on standard output), the terminal (CSV as windows close), or a file (CSV with
//! a header, or JSON lines; written whole, renamed into place only when the run succeeded). A
//! changelog's rows keep their kind: `print` shows it as Flink does (`-U[...]`), the terminal
//! and files in a first column `op` (`+I`, `-U`, `+U`, `-D`).

use crate::changelog::RowKind;
use crate::exec::Builder;
use crate::schema::Schema;
use crate::types::{Row, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use xorflow_runtime::connectors::output_file::{die_of_sigpipe, PendingFile};
use xorflow_runtime::connectors::rows::RowFormat;
use xorflow_runtime::{Element, OperatorError, SharedVec, Sink, Stream, VecSink};

/// A query's destination.
#[derive(Clone, Debug)]
pub enum OutputKind {
    /// `'connector' = 'blackhole'`
    Blackhole,
    /// `'connector' = 'print'`
    Print,
    /// A plain SELECT without `--output`: CSV on standard output.
    Terminal,
    /// `'connector' = 'kafka'`: JSON records, one transaction per checkpoint.
    Kafka {
        /// The topic.
        uri: xorflow_kafka::KafkaUri,
    },
    /// `'connector' = 'upsert-kafka'`: records keyed by the primary key, tombstones for
    /// deletions (connectors/upsert_kafka.rs), one transaction per checkpoint.
    UpsertKafka {
        /// The topic.
        uri: xorflow_kafka::KafkaUri,
        /// The primary key's columns.
        key: Vec<usize>,
    },
    /// A file: a plain SELECT's `--output`, or `'connector' = 'filesystem'`.
    File {
        /// Where.
        path: PathBuf,
        /// CSV or JSON lines.
        format: RowFormat,
    },
}

/// The format a file name asks for: JSON lines for `.jsonl`, `.ndjson` and `.json`, CSV
/// otherwise.
pub fn file_format(p: &Path) -> RowFormat {
    match RowFormat::of_path(p) {
        Some(RowFormat::JsonLines) => RowFormat::JsonLines,
        _ => RowFormat::Csv,
    }
}

/// A query's sink in the dataflow, and what is left to do after the run.
pub struct Output {
    kind: OutputKind,
    changelog: bool,
    columns: Vec<String>,
    rows: Arc<AtomicU64>,
    collected: Option<SharedVec<Row>>,
    pending: Option<PendingFile>,
}

impl Output {
    /// Adds the sink of query `i` for `stream`; with `explain` (the dataflow is only shown),
    /// without creating its file.
    ///
    /// # Errors
    /// A file output that cannot be created (before anything runs).
    pub fn attach(
        b: &mut Builder<'_>,
        i: usize,
        stream: Stream<Row>,
        kind: &OutputKind,
        columns: &Schema,
        changelog: bool,
        explain: bool,
    ) -> Result<Output, String> {
        let rows = Arc::new(AtomicU64::new(0));
        let mut names = columns.names();
        if changelog {
            names.insert(0, "op".into());
        }
        let name = b.name(&format!("sink {i}"));
        let (mut collected, mut pending) = (None, None);
        match kind {
            OutputKind::Blackhole => {
                let r = rows.clone();
                stream.sink(&name, move |_| Counted {
                    rows: r.clone(),
                    print: None,
                    changelog,
                });
            }
            OutputKind::Print | OutputKind::Terminal => {
                let (r, n) = (rows.clone(), names.clone());
                let flink = matches!(kind, OutputKind::Print);
                stream.gather().sink(&name, move |_| Counted {
                    rows: r.clone(),
                    print: Some(Printer {
                        flink,
                        header: (!flink).then(|| n.clone()),
                    }),
                    changelog,
                });
            }
            OutputKind::Kafka { uri } => {
                let (uri, cols) = (uri.clone(), columns.names());
                stream.sink(&name, move |i| {
                    let enc = crate::connectors::kafka::JsonRecords::new(cols.clone(), changelog);
                    xorflow_kafka::KafkaSink::new(uri.clone(), i, enc)
                });
            }
            OutputKind::UpsertKafka { uri, key } => {
                let (uri, cols, key) = (uri.clone(), columns.names(), key.clone());
                // Every change of a key through one instance, in order (the module doc).
                let by = key.clone();
                let keyed = stream.key_by(move |r: &Row| {
                    by.iter().map(|&c| r[c].clone()).collect::<Vec<Value>>()
                });
                keyed.sink(&name, move |i| {
                    let enc = crate::connectors::upsert_kafka::UpsertRecords::new(
                        cols.clone(),
                        key.clone(),
                        changelog,
                    );
                    xorflow_kafka::KafkaSink::new(uri.clone(), i, enc)
                });
            }
            OutputKind::File { path, .. } => {
                if !explain {
                    pending = Some(PendingFile::create(path, "output")?);
                }
                let shared = VecSink::<Row>::shared();
                stream.gather().sink(&name, shared.factory());
                collected = Some(shared);
            }
        }
        Ok(Output {
            kind: kind.clone(),
            changelog,
            columns: names,
            rows,
            collected,
            pending,
        })
    }

    /// After a successful run (process 0): writes a file output whole and renames it into
    /// place. Returns the rows this output received.
    ///
    /// # Errors
    /// The file cannot be written, naming it.
    pub fn finish(self) -> Result<u64, String> {
        let (Some(shared), Some(pending), OutputKind::File { format, .. }) =
            (self.collected, self.pending, &self.kind)
        else {
            return Ok(self.rows.load(Ordering::Relaxed));
        };
        let rows = shared.take();
        let err = |e: std::io::Error| format!("cannot write '{}': {e}", pending.target().display());
        let file = pending.file()?;
        let mut w = std::io::BufWriter::new(file);
        match format {
            RowFormat::JsonLines => {
                for r in &rows {
                    let values = with_kind(&r.data, self.changelog);
                    let obj: serde_json::Map<String, serde_json::Value> = (self.columns.iter())
                        .zip(&values)
                        .map(|(c, v)| (c.clone(), v.to_json()))
                        .collect();
                    serde_json::to_writer(&mut w, &obj).map_err(|e| err(e.into()))?;
                    w.write_all(b"\n").map_err(err)?;
                }
            }
            _ => {
                let mut c = csv::Writer::from_writer(&mut w);
                c.write_record(&self.columns).map_err(|e| err(e.into()))?;
                for r in &rows {
                    let values = with_kind(&r.data, self.changelog);
                    c.write_record(values.iter().map(csv_text))
                        .map_err(|e| err(e.into()))?;
                }
                c.flush().map_err(err)?;
            }
        }
        w.flush().map_err(err)?;
        drop(w);
        pending.sync()?;
        pending.commit()?;
        Ok(rows.len() as u64)
    }

    /// Where the rows went, for the summary.
    pub fn describe(&self) -> String {
        match &self.kind {
            OutputKind::Blackhole => "blackhole".into(),
            OutputKind::Print => "print".into(),
            OutputKind::Terminal => "standard output".into(),
            OutputKind::Kafka { uri } | OutputKind::UpsertKafka { uri, .. } => {
                format!("topic {}", uri.topic)
            }
            OutputKind::File { path, .. } => path.display().to_string(),
        }
    }
}

/// A row's values as written: a changelog row's kind first, as text (`+I`, ...).
fn with_kind(row: &[Value], changelog: bool) -> Vec<Value> {
    if !changelog {
        return row.to_vec();
    }
    let kind = RowKind::of(row);
    let mut out = Vec::with_capacity(row.len());
    out.push(Value::str(kind.short()));
    out.extend(row[..row.len() - 1].iter().cloned());
    out
}

/// A value as CSV text: NULL as an empty field.
fn csv_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        v => v.to_text(),
    }
}

/// Prints rows to standard output as they arrive.
struct Printer {
    /// Flink's print format, `+I[a, b]`; else CSV.
    flink: bool,
    /// The CSV header, until written.
    header: Option<Vec<String>>,
}

/// Counts the rows it is sent, and prints them if asked.
struct Counted {
    rows: Arc<AtomicU64>,
    print: Option<Printer>,
    changelog: bool,
}

impl Sink<Row> for Counted {
    /// A blackhole has nothing outside the run to keep exactly once, so its rows are dropped
    /// as they come even with checkpoints (as Flink's blackhole sink), instead of held until
    /// the job ends; the `print` sink and the terminal stage theirs, so that a restart prints
    /// nothing twice. A blackhole's count then includes rows emitted again after a restart.
    fn staging(&self) -> xorflow_runtime::Staging {
        match self.print {
            None => xorflow_runtime::Staging::Direct,
            Some(_) => xorflow_runtime::Staging::AtEnd,
        }
    }

    fn write(&mut self, batch: Vec<Element<Row>>) -> Result<(), OperatorError> {
        self.rows.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let Some(p) = &mut self.print else {
            return Ok(());
        };
        let mut text = Vec::new();
        if let Some(h) = p.header.take() {
            write_csv(&mut text, &h);
        }
        for el in &batch {
            if p.flink {
                let (kind, values) = match self.changelog {
                    true => (RowKind::of(&el.data), &el.data[..el.data.len() - 1]),
                    false => (RowKind::Insert, &el.data[..]),
                };
                let fields: Vec<String> = values.iter().map(Value::to_text).collect();
                let _ = writeln!(text, "{}[{}]", kind.short(), fields.join(", "));
            } else {
                let values = with_kind(&el.data, self.changelog);
                let fields: Vec<String> = values.iter().map(csv_text).collect();
                write_csv(&mut text, &fields);
            }
        }
        let mut out = std::io::stdout().lock();
        match out.write_all(&text).and_then(|_| out.flush()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => die_of_sigpipe(),
            Err(e) => Err(format!("cannot write standard output: {e}").into()),
        }
    }
}

fn write_csv(out: &mut Vec<u8>, fields: &[String]) {
    let mut w = csv::Writer::from_writer(out);
    let _ = w.write_record(fields);
    let _ = w.flush();
}
