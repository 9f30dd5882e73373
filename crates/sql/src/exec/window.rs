//! Window aggregates on the runtime's window operators: `TUMBLE` and `HOP` on
//! `Stream::window` (sliding windows), `SESSION` on `Stream::session_window`. A window's rows
//! are emitted once, when trAcker's frontier passes its end; rows later than the watermark
//! allows go to the operator's late output and are counted.

use super::{time_ms, Builder};
use crate::expr::aggregate::{Acc, AggCall};
use crate::expr::Scalar;
use crate::key::Key;
use crate::plan::{GroupSlot, Plan, WindowKind};
use crate::types::{Row, Value};
use std::sync::Arc;
use xorflow_runtime::{Aggregate, SessionWindows, Stream, Time, WindowResult, WindowSpec};

/// The windows `(start, end)` ms an element at `t` ms belongs to (not sessions).
pub fn windows_of(w: WindowKind, t: i64) -> Vec<(i64, i64)> {
    match w {
        WindowKind::Tumble { size } => {
            let s = t - t.rem_euclid(size);
            vec![(s, s + size)]
        }
        WindowKind::Hop { slide, size } => {
            let last = t - t.rem_euclid(slide);
            let mut out = Vec::new();
            let mut s = last;
            while s > t - size {
                out.push((s, s + size));
                s -= slide;
            }
            out.reverse();
            out
        }
        WindowKind::Cumulate { step, size } => {
            let s = t - t.rem_euclid(size);
            let first_end = t - t.rem_euclid(step) + step;
            (0..)
                .map(|k| first_end + k * step)
                .take_while(|e| *e <= s + size)
                .map(|e| (s, e))
                .collect()
        }
        WindowKind::Session { .. } => Vec::new(),
    }
}

/// The aggregate calls over rows, as the runtime's [`Aggregate`].
#[derive(Clone)]
pub struct RowAggregate {
    calls: Arc<Vec<AggCall>>,
}

impl Aggregate<Row> for RowAggregate {
    type Acc = Vec<Acc>;
    type Out = Vec<Value>;

    fn init(&self) -> Vec<Acc> {
        self.calls.iter().map(AggCall::init).collect()
    }

    fn add(&self, acc: &mut Vec<Acc>, row: &Row) {
        for (c, a) in self.calls.iter().zip(acc.iter_mut()) {
            c.add(a, row);
        }
    }

    fn finish(&self, acc: Vec<Acc>) -> Vec<Value> {
        self.calls
            .iter()
            .zip(&acc)
            .map(|(c, a)| c.finish(a))
            .collect()
    }
}

/// The partial aggregates of one slice (a tumbling window of a hopping window's slide): what
/// [`MergeSlices`] combines into each hopping window's result.
#[derive(Clone)]
struct SliceAggregate {
    calls: Arc<Vec<AggCall>>,
}

impl Aggregate<Row> for SliceAggregate {
    type Acc = Vec<Acc>;
    type Out = Vec<Acc>;

    fn init(&self) -> Vec<Acc> {
        self.calls.iter().map(AggCall::init).collect()
    }

    fn add(&self, acc: &mut Vec<Acc>, row: &Row) {
        for (c, a) in self.calls.iter().zip(acc.iter_mut()) {
            c.add(a, row);
        }
    }

    fn finish(&self, acc: Vec<Acc>) -> Vec<Acc> {
        acc
    }
}

/// A hopping window's result from its slices' partial aggregates ([`SliceAggregate`]).
#[derive(Clone)]
struct MergeSlices {
    calls: Arc<Vec<AggCall>>,
}

impl Aggregate<WindowResult<Key, Vec<Acc>>> for MergeSlices {
    type Acc = Vec<Acc>;
    type Out = Vec<Value>;

    fn init(&self) -> Vec<Acc> {
        self.calls.iter().map(AggCall::init).collect()
    }

    fn add(&self, acc: &mut Vec<Acc>, slice: &WindowResult<Key, Vec<Acc>>) {
        for ((c, a), b) in self.calls.iter().zip(acc.iter_mut()).zip(&slice.value) {
            c.merge(a, b.clone());
        }
    }

    fn finish(&self, acc: Vec<Acc>) -> Vec<Value> {
        self.calls
            .iter()
            .zip(&acc)
            .map(|(c, a)| c.finish(a))
            .collect()
    }
}

/// The stream of a [`Plan::WindowAggregate`]'s rows.
///
/// # Errors
/// What its input's stream refuses; CUMULATE (not on the runtime's windows yet).
pub fn aggregate(b: &mut Builder<'_>, plan: &Plan) -> Result<Stream<Row>, String> {
    let Plan::WindowAggregate {
        input,
        window,
        time_column,
        keys,
        slots,
        calls,
        cascade,
        ..
    } = plan
    else {
        unreachable!("a window aggregate")
    };
    let src = b.stream(input)?;
    let agg = RowAggregate {
        calls: Arc::new(calls.clone()),
    };
    let mut keys: Vec<Scalar> = keys.clone();
    // A cascading aggregate groups by the input's window too: its rows (window results at
    // time window_end - 1) fall in one window of the input's slide, which closes at their
    // window_end; the output's window columns are the key's.
    let window_key = cascade.map(|(start, end)| {
        keys.push(Scalar::Column(start));
        keys.push(Scalar::Column(end));
        (keys.len() - 2, keys.len() - 1)
    });
    let keys = Arc::new(keys);
    let key = move |r: &Row| Key::of(&keys, r);
    let col = *time_column;
    let event_time = move |r: &Row| time_ms(&r[col]).max(0) as Time;
    let name = b.name("window_aggregate");
    let window = match (window_key, *window) {
        (None, w) => w,
        (Some(_), WindowKind::Tumble { size }) => WindowKind::Tumble { size },
        (Some(_), WindowKind::Hop { slide, .. }) => WindowKind::Tumble { size: slide },
        (Some(_), other) => {
            return Err(format!("grouping {other:?} windows again is not supported"))
        }
    };
    // Cascading: the time column is window_end, one past the rows' element time.
    let event_time = move |r: &Row| match window_key {
        Some(_) => event_time(r).saturating_sub(1),
        None => event_time(r),
    };
    let (results, late) = match window {
        WindowKind::Tumble { size } => {
            let spec = WindowSpec::tumbling(size as Time).event_time(event_time);
            let w = src.window(&name, spec, key, agg);
            (w.results, w.late)
        }
        WindowKind::Hop { slide, size } if size % slide == 0 && size > slide => {
            // Slices, as Flink's window aggregates share them: each row is folded once, into
            // the tumbling window of the slide it falls in, and each hopping window merges its
            // size / slide slices when it closes. Folding each row into every window it is in
            // made q5 (HOP 10 s every 2 s) five hash lookups and key copies per bid.
            let calls = Arc::new(calls.clone());
            let spec = WindowSpec::tumbling(slide as Time).event_time(event_time);
            let slices = src.window(
                &format!("{name}.slices"),
                spec,
                key,
                SliceAggregate {
                    calls: calls.clone(),
                },
            );
            // A slice's result travels at its end - 1: in exactly the windows holding it.
            let spec = WindowSpec::sliding(size as Time, slide as Time);
            let slice_key = |r: &WindowResult<Key, Vec<Acc>>| r.key.clone();
            let w = (slices.results).window(&name, spec, slice_key, MergeSlices { calls });
            (w.results, slices.late)
        }
        WindowKind::Hop { slide, size } => {
            let spec = WindowSpec::sliding(size as Time, slide as Time).event_time(event_time);
            let w = src.window(&name, spec, key, agg);
            (w.results, w.late)
        }
        WindowKind::Session { gap } => {
            let s = SessionWindows::new(gap as Time, agg).event_time(event_time);
            let w = src.session_window(&name, s, key);
            // Without allowed lateness a session's result is final: no withdrawals.
            let results = w.results.flat_map(&format!("{name}.final"), |r| {
                r.value.map(|value| WindowResult {
                    start: r.start,
                    end: r.end,
                    key: r.key,
                    value,
                })
            });
            (results, w.late)
        }
        WindowKind::Cumulate { .. } => {
            return Err("CUMULATE windows are not supported yet (TUMBLE, HOP, SESSION are)".into())
        }
    };
    let late_counts = b.counters.late.clone();
    let late_name = name.clone();
    late.gather()
        .sink(&format!("{name}.late"), move |_| LateCounter {
            name: late_name.clone(),
            counts: late_counts.clone(),
            time_column: col,
        });
    let slots = slots.clone();
    let out = results.map(&format!("{name}.rows"), move |r| {
        let mut row: Row = slots
            .iter()
            .map(|s| match s {
                GroupSlot::Key(i) => r.key[*i].clone(),
                GroupSlot::WindowStart => match window_key {
                    Some((s, _)) => r.key[s].clone(),
                    None => Value::Timestamp(r.start as i64),
                },
                GroupSlot::WindowEnd => match window_key {
                    Some((_, e)) => r.key[e].clone(),
                    None => Value::Timestamp(r.end as i64),
                },
                GroupSlot::WindowTime => match window_key {
                    Some((_, e)) => Value::Timestamp(time_ms(&r.key[e]) - 1),
                    None => Value::Timestamp(r.end as i64 - 1),
                },
            })
            .collect();
        row.extend(r.value);
        row
    });
    Ok(out)
}

/// Counts the rows a window operator's late output receives.
struct LateCounter {
    name: String,
    counts: Arc<std::sync::Mutex<std::collections::BTreeMap<String, (u64, i64)>>>,
    time_column: usize,
}

impl xorflow_runtime::Sink<Row> for LateCounter {
    fn write(
        &mut self,
        batch: Vec<xorflow_runtime::Element<Row>>,
    ) -> Result<(), xorflow_runtime::OperatorError> {
        if batch.is_empty() {
            return Ok(());
        }
        let first = time_ms(&batch[0].data[self.time_column]);
        let mut c = self
            .counts
            .lock()
            .map_err(|_| "late counter poisoned".to_string())?;
        let e = c.entry(self.name.clone()).or_insert((0, first));
        e.0 += batch.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_fall_in_the_windows_flink_assigns() {
        assert_eq!(
            windows_of(WindowKind::Tumble { size: 10 }, 25),
            vec![(20, 30)]
        );
        assert_eq!(
            windows_of(WindowKind::Hop { slide: 2, size: 10 }, 25),
            vec![(16, 26), (18, 28), (20, 30), (22, 32), (24, 34)]
        );
        assert_eq!(
            windows_of(WindowKind::Cumulate { step: 2, size: 6 }, 7),
            vec![(6, 8), (6, 10), (6, 12)]
        );
        assert_eq!(
            windows_of(WindowKind::Tumble { size: 10 }, -1),
            vec![(-10, 0)]
        );
    }
}
