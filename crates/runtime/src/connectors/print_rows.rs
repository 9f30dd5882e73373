//! A sink printing rows to standard output as their windows close: `xorflow run file
//! --output -` (`crates/cli/src/file_job.rs`).
//!
//! Elements are held until trAcker's frontier at the sink passes them ([`Sink::on_frontier`]):
//! then every element below the frontier has arrived, so the held ones are printed sorted by the
//! job's order, and each run prints the same lines in the same order. Without tracking
//! (`--tracking none`) there is no frontier and everything prints at the end. Printing is not
//! staged with checkpoints (a line on a terminal cannot be taken back): the job refuses
//! checkpoints with this sink. When the reader of the pipe is gone (`| head`), the process ends by
//! SIGPIPE without a message, as `cat` does ([`super::output_file::die_of_sigpipe`]).

use crate::operators::sink::{Sink, Staging};
use crate::operators::OperatorError;
use crate::Element;
use std::io::Write;
use xorflow_core::Time;

/// How a held element prints: its sort key among the elements printed with it, and its row
/// (`None`: nothing to print).
pub type Render<T, K> = Box<dyn FnMut(&T) -> Option<(K, Vec<serde_json::Value>)> + Send>;

/// The line format of [`PrintRows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintFormat {
    /// CSV with a header row (printed before the first row).
    Csv,
    /// One JSON object per line, named by the columns.
    JsonLines,
}

/// The sink: see the module doc.
pub struct PrintRows<T, K> {
    format: PrintFormat,
    columns: Vec<String>,
    render: Render<T, K>,
    held: Vec<Element<T>>,
    header_printed: bool,
    out: Box<dyn Write + Send>,
    /// A failed print at a frontier, reported by the next write or the finish.
    failure: Option<std::io::Error>,
}

impl<T, K: Ord> PrintRows<T, K> {
    /// Prints rows of `columns` to standard output.
    pub fn stdout(format: PrintFormat, columns: Vec<String>, render: Render<T, K>) -> Self {
        Self::to(Box::new(std::io::stdout()), format, columns, render)
    }

    /// Prints to `out` (tests).
    pub fn to(
        out: Box<dyn Write + Send>,
        format: PrintFormat,
        columns: Vec<String>,
        render: Render<T, K>,
    ) -> Self {
        PrintRows {
            format,
            columns,
            render,
            held: Vec::new(),
            header_printed: false,
            out,
            failure: None,
        }
    }

    /// Prints the held elements with times below `below`, in the job's order, and flushes.
    fn print(&mut self, below: Time) -> std::io::Result<()> {
        let (ready, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|e| e.time < below);
        self.held = held;
        let mut rows: Vec<(K, Vec<serde_json::Value>)> = ready
            .iter()
            .filter_map(|e| (self.render)(&e.data))
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        if rows.is_empty() {
            // Nothing yet (or never, at an instance the rows do not reach): no header either.
            return Ok(());
        }
        let mut text = Vec::new();
        if !self.header_printed && self.format == PrintFormat::Csv {
            self.header_printed = true;
            csv_line(&mut text, self.columns.iter().map(|c| c.as_str()));
        }
        for (_, row) in rows {
            match self.format {
                PrintFormat::Csv => {
                    let cells: Vec<String> = row.iter().map(cell).collect();
                    csv_line(&mut text, cells.iter().map(|c| c.as_str()));
                }
                PrintFormat::JsonLines => {
                    let obj: serde_json::Map<String, serde_json::Value> =
                        self.columns.iter().cloned().zip(row).collect();
                    text.extend(serde_json::Value::Object(obj).to_string().into_bytes());
                    text.push(b'\n');
                }
            }
        }
        let written = self.out.write_all(&text).and_then(|()| self.out.flush());
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                super::output_file::die_of_sigpipe()
            }
            r => r,
        }
    }
}

/// A value as CSV cell text: strings as they are, null empty, numbers as JSON writes them.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// One CSV line (RFC 4180 quoting, by the csv crate) appended to `text`.
fn csv_line<'a>(text: &mut Vec<u8>, cells: impl Iterator<Item = &'a str>) {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing into memory cannot fail.
    let _ = w.write_record(cells);
    text.extend(w.into_inner().unwrap_or_default());
}

fn failed(e: std::io::Error) -> OperatorError {
    format!("cannot write standard output: {e}").into()
}

impl<T: Send, K: Ord + Send> Sink<T> for PrintRows<T, K> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        if let Some(e) = self.failure.take() {
            return Err(failed(e));
        }
        self.held.extend(batch);
        Ok(())
    }

    fn on_frontier(&mut self, frontier: Time) {
        // The trait's frontier call has no error: the next write or the finish reports it.
        if self.failure.is_none() {
            self.failure = self.print(frontier).err();
        }
    }

    fn staging(&self) -> Staging {
        Staging::Direct
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        if let Some(e) = self.failure.take() {
            return Err(failed(e));
        }
        self.print(Time::MAX).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A `Write` whose bytes a test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn rows_print_sorted_once_the_frontier_passes_them() {
        let out = Shared::default();
        let render: Render<(u32, &str), u32> =
            Box::new(|&(k, s)| Some((k, vec![k.into(), s.into()])));
        let cols = vec!["k".to_string(), "s".to_string()];
        let mut sink = PrintRows::to(Box::new(out.clone()), PrintFormat::Csv, cols, render);
        let text = || String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        sink.write(vec![
            Element::new(5, (2, "b,c")),
            Element::new(9, (0, "late")),
        ])
        .unwrap();
        sink.write(vec![Element::new(4, (1, "a"))]).unwrap();
        assert_eq!(text(), "", "nothing before the frontier");
        sink.on_frontier(6);
        assert_eq!(text(), "k,s\n1,a\n2,\"b,c\"\n");
        sink.finish().unwrap();
        assert_eq!(text(), "k,s\n1,a\n2,\"b,c\"\n0,late\n");
    }
}
