//! A source of records read as they arrive on a stream: standard input, for
//! `xorflow run file --input -` (`crates/cli/src/file_job.rs`).
//!
//! A thread reads the stream row by row ([`RowReader`]) and hands each row, converted by the
//! job (its event time and record, or nothing for a row the job skips), to the source through a
//! bounded queue: a slow job holds the reading back rather than buffering the stream. The
//! source heartbeats a watermark like [`super::replay::Replay`]: the largest event time read so
//! far minus the disorder it allows, so a window closes once a row that much past its end has
//! arrived (or the stream ended). A stream cannot be read again, so this source cannot resume
//! from a checkpoint ([`Source::position`] is `None`).

use super::rows::{RowRead, RowReader};
use crate::measure::clock::now_ns;
use crate::operators::source::{Source, SourceOutput, SourcePoll};
use crossbeam_channel::{Receiver, TryRecvError};
use xorflow_core::Time;

/// Rows queued between the reading thread and the source (about one batch per poll).
const QUEUE: usize = 4096;

/// How long the source waits before looking again when nothing has arrived, ns (the latency
/// a row can add to its window's close on an idle stream).
const IDLE_POLL_NS: u64 = 1_000_000;

/// What the reading thread hands the source.
enum Arrival<T> {
    Record(Time, T),
    /// The stream cannot be read (the message names it): the run fails.
    Failed(String),
}

/// The source: see the module doc.
pub struct LiveRows<T> {
    queue: Receiver<Arrival<T>>,
    watermark: Time,
    newest: Time,
    bound: Time,
}

impl<T: Send + 'static> LiveRows<T> {
    /// Starts reading `reader` on a thread of its own; `convert` turns each row (or a skipped
    /// one: line and why) into an (event time, record), or `None` to skip it. Event times more
    /// than `bound` below the newest one read are late (they travel at the watermark and keep
    /// their event time in the record, as in [`super::replay`]).
    pub fn spawn<F>(mut reader: RowReader, bound: Time, mut convert: F) -> Self
    where
        F: FnMut(RowRead) -> Option<(Time, T)> + Send + 'static,
    {
        let (tx, queue) = crossbeam_channel::bounded(QUEUE);
        let read = move || loop {
            let arrival = match reader.next_row() {
                Ok(None) => return,
                Ok(Some(row)) => match convert(row) {
                    Some((t, r)) => Arrival::Record(t, r),
                    None => continue,
                },
                Err(e) => Arrival::Failed(e),
            };
            let failed = matches!(arrival, Arrival::Failed(_));
            // The source is gone (the run failed elsewhere): stop reading.
            if tx.send(arrival).is_err() || failed {
                return;
            }
        };
        // The thread ends with the stream (or with the source); nothing joins it, so a run that
        // fails while standard input stays open does not wait for it.
        std::thread::Builder::new()
            .name("live-rows".into())
            .spawn(read)
            .expect("spawning the input thread");
        LiveRows {
            queue,
            watermark: 0,
            newest: 0,
            bound,
        }
    }
}

impl<T: Clone + Send> Source<T> for LiveRows<T> {
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll {
        for _ in 0..out.budget() {
            match self.queue.try_recv() {
                Ok(Arrival::Record(t, r)) => {
                    self.newest = self.newest.max(t);
                    out.emit(t.max(self.watermark), r);
                    self.watermark = self.watermark.max(self.newest.saturating_sub(self.bound));
                    out.heartbeat(self.watermark);
                }
                Ok(Arrival::Failed(why)) => {
                    out.fail(why);
                    return SourcePoll::Done;
                }
                Err(TryRecvError::Empty) if out.emitted() > 0 => return SourcePoll::Ready,
                Err(TryRecvError::Empty) => return SourcePoll::WaitUntil(now_ns() + IDLE_POLL_NS),
                Err(TryRecvError::Disconnected) => return SourcePoll::Done,
            }
        }
        SourcePoll::Ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::rows::RowFormat;

    #[test]
    fn a_stream_read_as_it_arrives_keeps_its_rows_and_skips_the_bad_ones() {
        let (r, mut w) = std::io::pipe().unwrap();
        let cols = vec!["t".to_string()];
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            w.write_all(b"t\n5\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
            w.write_all(b"x\n7\n").unwrap();
        });
        let reader = RowReader::new("stdin", Box::new(r), RowFormat::Csv, &cols, 1).unwrap();
        let src = LiveRows::spawn(reader, 0, |row| {
            let row = row.ok()?;
            let t: Time = row.fields[0].parse().ok()?;
            Some((t, row.line))
        });
        writer.join().unwrap();
        let got: Vec<(Time, u64)> = std::iter::from_fn(|| match src.queue.recv().ok()? {
            Arrival::Record(t, line) => Some((t, line)),
            Arrival::Failed(e) => panic!("{e}"),
        })
        .collect();
        assert_eq!(got, vec![(5, 2), (7, 4)]);
    }
}
