//! A `'format' = 'json'` file table's source: each instance reads its blocks of the file(s)
//! while it emits (`crates/runtime/src/connectors/line_blocks.rs`), decoding each line with the
//! table's [`JsonFormat`], so no instance holds the input or a copy of its rows.
//!
//! Event time and watermarks are those of the in-memory replay it replaces for plain JSON
//! (`crates/runtime/src/connectors/replay.rs`): after each row the instance's watermark is the
//! newest event time it has read less the table's `WATERMARK` delay, and a row below it travels
//! at the watermark with its event time kept, for the window operators to count as late.
//! Malformed lines are skipped and counted; the first few are kept with their file and byte
//! offset, named by line when the run reports them ([`FileTable::malformed_examples`]).
//!
//! With a [`Pace`] (`'replay.*'`), each row waits until its event time is due. A waiting
//! instance's watermark follows the replay's clock (the event time due now, less the delay),
//! as a live feed's would: instances deal the file out in blocks, so one may wait for its next
//! block while the other carries the present, and its watermark must not hold windows back.

use super::json_format::JsonFormat;
use std::sync::{Arc, Mutex};
use xorflow_runtime::connectors::line_blocks::{BlockPlan, BlockReader};
use xorflow_runtime::connectors::pace::Pace;
use xorflow_runtime::connectors::rate::Rate;
use xorflow_runtime::operators::source::{Source, SourceOutput, SourcePoll};
use xorflow_runtime::{OperatorError, Time, VertexStats};

use crate::types::Row;

/// Malformed lines kept per table to name in the run's report.
const EXAMPLES: usize = 3;

/// The counter of lines read (rows and malformed lines, blank lines not), summed over a file
/// table's source instances in every process.
pub const LINES_READ: &str = "lines read";
/// The counter of malformed lines skipped, summed like [`LINES_READ`].
pub const MALFORMED: &str = "malformed lines";

/// A malformed line: (file index in the plan, byte offset, why).
type Example = (usize, u64, String);

/// One JSON file table of a job: its blocks and what its instances in this process saw.
#[derive(Clone, Debug)]
pub struct FileTable {
    /// The table's name.
    pub table: String,
    /// Its source vertex's name, under which [`LINES_READ`] and [`MALFORMED`] are counted.
    pub vertex: String,
    plan: Arc<BlockPlan>,
    format: Arc<JsonFormat>,
    /// The event-time disorder allowed, ms (`Time::MAX` without event time).
    bound: Time,
    /// Rows per second over all instances (`'rows-per-second'`; 0: as fast as the job reads).
    rate: f64,
    /// The event-time replay (`'replay.*'`), shared by every table of the job.
    pace: Option<Pace>,
    examples: Arc<Mutex<Vec<Example>>>,
}

impl FileTable {
    /// The table `table` read from `plan` with `format`, its source vertex named `vertex`, at
    /// `rate` rows per second over all instances (0: unpaced).
    pub fn new(
        table: &str,
        vertex: &str,
        plan: BlockPlan,
        format: JsonFormat,
        bound: Time,
        rate: f64,
    ) -> Self {
        FileTable {
            table: table.to_string(),
            vertex: vertex.to_string(),
            plan: Arc::new(plan),
            format: Arc::new(format),
            bound,
            rate,
            pace: None,
            examples: Arc::default(),
        }
    }

    /// The same table replayed at `pace` (each row due at its event time on the replay's clock).
    pub fn paced(self, pace: Pace) -> Self {
        FileTable {
            pace: Some(pace),
            ..self
        }
    }

    /// Source instance `instance` of `instances`.
    pub fn source(&self, instance: usize, instances: usize) -> FileSource {
        FileSource {
            reader: self.plan.reader(instance, instances),
            rate: Rate::new(self.rate / instances.max(1) as f64),
            table: self.clone(),
            newest: 0,
            watermark: 0,
            pending: None,
            pending_at: (0, 0),
            resumed: false,
            lines: 0,
            malformed: 0,
        }
    }

    /// The first malformed lines this process's instances met, as "FILE line N: why" (the
    /// file's name only when the table reads a folder), in file order.
    pub fn malformed_examples(&self) -> Vec<String> {
        let mut kept = self.examples.lock().map(|e| e.clone()).unwrap_or_default();
        kept.sort_by_key(|e| (e.0, e.1));
        let folder = self.plan.files().len() > 1;
        (kept.into_iter().take(EXAMPLES))
            .map(|(file, offset, why)| {
                let path = &self.plan.files()[file];
                let line = match self.plan.line_at(file, offset) {
                    Ok(n) => format!("line {n}"),
                    Err(_) => format!("byte {offset}"),
                };
                match folder {
                    true => {
                        let name = path
                            .file_name()
                            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                        format!("{name} {line}: {why}")
                    }
                    false => format!("{line}: {why}"),
                }
            })
            .collect()
    }
}

/// One instance of a [`FileTable`]'s source.
pub struct FileSource {
    reader: BlockReader,
    rate: Rate,
    table: FileTable,
    newest: Time,
    watermark: Time,
    /// A row read whose event time is not yet due on the replay's clock.
    pending: Option<(Time, Row)>,
    /// The reader's position before the pending row's line ([`Source::position`]).
    pending_at: (usize, u64),
    /// Whether [`Source::seek`] resumed this instance (its newest event time is then the
    /// replay's origin, if it is the first to poll).
    resumed: bool,
    lines: u64,
    malformed: u64,
}

impl FileSource {
    /// Emits a row of event time `t` (below the watermark: at the watermark, for the windows to
    /// count as late) and advances the watermark.
    fn emit(&mut self, t: Time, row: Row, out: &mut SourceOutput<'_, Row>) {
        self.rate.emitted();
        self.newest = self.newest.max(t);
        out.emit(t.max(self.watermark), row);
        self.watermark = (self.watermark).max(self.newest.saturating_sub(self.table.bound));
    }

    /// `Err(at)` when the replay holds a row of event time `t` until `at` (ns on the monotonic
    /// clock), after promising what the replay's clock allows.
    fn due(&mut self, t: Time, out: &mut SourceOutput<'_, Row>) -> Result<(), u64> {
        let Some(pace) = &self.table.pace else {
            return Ok(());
        };
        let start = pace.start(self.resumed.then_some(self.newest as i64));
        let at = pace.due_ns(start, t as i64);
        if at <= xorflow_runtime::measure::clock::now_ns() {
            return Ok(());
        }
        let now = pace.event_now_ms(start).max(0) as Time;
        let bound = self.table.bound;
        self.watermark = self.watermark.max(now.saturating_sub(bound));
        out.heartbeat(self.watermark);
        // Until the row is due the watermark goes on with the replay's clock. Frontiers move a
        // slot at a time, so the instance wakes when it would enter the next slot: sleeping to
        // the row instead held windows back by up to a block's duration (a block, ~1 s of rows,
        // against 1 s windows drifted from 10 to 450 ms over 14 windows: docs/sql.md).
        let g = out.granularity().max(1);
        let next = (self.watermark / g).saturating_add(1).saturating_mul(g);
        let tick = pace.due_ns(
            start,
            next.saturating_add(bound).min(i64::MAX as u64) as i64,
        );
        Err(at.min(tick))
    }

    fn skip(&mut self, file: usize, offset: u64, why: String) {
        self.malformed += 1;
        if let Ok(mut kept) = self.table.examples.lock() {
            // Kept in file order, not arrival order: the report names the first lines.
            kept.push((file, offset, why));
            if kept.len() > EXAMPLES {
                kept.sort_by_key(|e| (e.0, e.1));
                kept.truncate(EXAMPLES);
            }
        }
    }
}

impl Source<Row> for FileSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, Row>) -> SourcePoll {
        let budget = match self.rate.allowed(out.budget()) {
            Ok(n) => n,
            Err(at) => return SourcePoll::WaitUntil(at),
        };
        let mut budget = budget;
        if let Some((t, row)) = self.pending.take() {
            if let Err(at) = self.due(t, out) {
                self.pending = Some((t, row));
                return SourcePoll::WaitUntil(at);
            }
            self.emit(t, row, out);
            budget = budget.saturating_sub(1);
        }
        let paced = self.table.pace.is_some();
        for _ in 0..budget {
            let before = if paced {
                self.reader.position()
            } else {
                (0, 0)
            };
            let line = match self.reader.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => return SourcePoll::Done,
                Err(why) => {
                    out.fail(format!("table '{}': {why}", self.table.table));
                    return SourcePoll::Done;
                }
            };
            let decoded = self.table.format.decode(line.bytes);
            let (file, offset) = (line.file, line.offset);
            match decoded {
                Ok((t, row)) => {
                    self.lines += 1;
                    let t = t.max(0) as Time;
                    if let Err(at) = self.due(t, out) {
                        self.pending = Some((t, row));
                        self.pending_at = before;
                        return SourcePoll::WaitUntil(at);
                    }
                    self.emit(t, row, out);
                }
                // Blank lines are no rows (the error path only: a row is never blank).
                Err(_) if line.bytes.iter().all(u8::is_ascii_whitespace) => {}
                Err(why) => {
                    self.lines += 1;
                    let why = match std::str::from_utf8(line.bytes) {
                        Ok(_) => why,
                        Err(e) => {
                            format!("not UTF-8 (at byte {} of the line)", e.valid_up_to() + 1)
                        }
                    };
                    self.skip(file, offset, why);
                }
            }
        }
        out.heartbeat(self.watermark);
        SourcePoll::Ready
    }

    /// "BLOCK:OFFSET:NEWEST": the next line's block and byte offset, and the newest event time
    /// read before it (the watermark resumes from it). A row held by the replay is not yet
    /// emitted: the position is its line's, so that a restart reads it again.
    fn position(&self) -> Option<String> {
        let (block, offset) = match &self.pending {
            Some(_) => self.pending_at,
            None => self.reader.position(),
        };
        Some(format!("{block}:{offset}:{}", self.newest))
    }

    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        let parts: Vec<u64> = (position.split(':').map(str::parse))
            .collect::<Result<_, _>>()
            .map_err(|_| format!("position '{position}' is not BLOCK:OFFSET:NEWEST"))?;
        let [block, offset, newest] = parts[..] else {
            return Err(format!("position '{position}' is not BLOCK:OFFSET:NEWEST").into());
        };
        self.reader.seek(block as usize, offset)?;
        self.newest = newest;
        self.watermark = newest.saturating_sub(self.table.bound);
        self.pending = None;
        self.resumed = true;
        Ok(())
    }

    fn report(&mut self, stats: &mut VertexStats) {
        stats.count(LINES_READ, self.lines);
        stats.count(MALFORMED, self.malformed);
    }
}
