//! A source replaying records held in memory in arrival order, as a live feed would deliver
//! them: the file source of `xorflow run file`.
//!
//! Instance `i` of `n` replays records `i, i + n, ...`. After each record it heartbeats its
//! watermark, the largest event time it has emitted minus `bound` (the disorder it allows, like
//! Flink's bounded-out-of-orderness watermarks). A record whose event time is below the
//! watermark travels with the watermark as its time (the engine's contract: nothing below a
//! heartbeat) and keeps its event time in the record, so windows with allowed lateness decide
//! what becomes of it (`crates/core/src/window.rs`). Its position in checkpoints is the next
//! record's index. Paced ([`Replay::paced`]), it emits at a steady rate, as a live feed of the
//! file would.

use crate::measure::clock::now_ns;
use crate::operators::source::{Source, SourceOutput, SourcePoll};
use crate::operators::OperatorError;
use std::sync::Arc;
use xorflow_core::Time;

/// One instance's replay of `records`: (event time, record).
pub struct Replay<T> {
    records: Arc<Vec<(Time, T)>>,
    next: usize,
    step: usize,
    watermark: Time,
    newest: Time,
    bound: Time,
    /// Records per second (`None`: as fast as the run takes them).
    rate: Option<f64>,
    /// When pacing started (ns on [`now_ns`]'s clock) and how many records it has emitted since.
    paced_from: Option<(u64, u64)>,
}

impl<T> Replay<T> {
    /// Instance `instance` of `instances`, allowing event times `bound` below the newest.
    pub fn new(
        records: Arc<Vec<(Time, T)>>,
        instance: usize,
        instances: usize,
        bound: Time,
    ) -> Self {
        Replay {
            records,
            next: instance,
            step: instances.max(1),
            watermark: 0,
            newest: 0,
            bound,
            rate: None,
            paced_from: None,
        }
    }

    /// Emits `per_second` records per second (this instance's share; `0.0`: unpaced). A resumed
    /// replay paces from its first poll.
    pub fn paced(mut self, per_second: f64) -> Self {
        self.rate = (per_second > 0.0).then_some(per_second);
        self
    }

    /// How many records the pace allows now (`Err`: none before this time, ns).
    fn allowed(&mut self, budget: usize) -> Result<usize, u64> {
        let Some(rate) = self.rate else {
            return Ok(budget);
        };
        let now = now_ns();
        let (start, emitted) = *self.paced_from.get_or_insert((now, 0));
        let due = ((now - start) as f64 * rate / 1e9) as u64 + 1;
        match due.saturating_sub(emitted) {
            0 => Err(start + (emitted as f64 * 1e9 / rate) as u64),
            n => Ok(budget.min(n as usize)),
        }
    }
}

impl<T: Clone + Send + Sync> Source<T> for Replay<T> {
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll {
        let budget = match self.allowed(out.budget()) {
            Ok(n) => n,
            Err(at) => return SourcePoll::WaitUntil(at),
        };
        for _ in 0..budget {
            let Some((t, r)) = self.records.get(self.next) else {
                return SourcePoll::Done;
            };
            self.next += self.step;
            if let Some((_, emitted)) = &mut self.paced_from {
                *emitted += 1;
            }
            self.newest = self.newest.max(*t);
            out.emit((*t).max(self.watermark), r.clone());
            self.watermark = self.watermark.max(self.newest.saturating_sub(self.bound));
            out.heartbeat(self.watermark);
        }
        SourcePoll::Ready
    }

    fn position(&self) -> Option<String> {
        Some(self.next.to_string())
    }

    /// Resumes at record index `position`; the watermark restarts from the records before it.
    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        let next: usize = position
            .parse()
            .map_err(|_| format!("position '{position}' is not a record index"))?;
        if next > self.records.len() + self.step {
            return Err(format!(
                "position {next} is past the {} records: the checkpoint is not of this input",
                self.records.len()
            )
            .into());
        }
        let before = self.records[..next.min(self.records.len())]
            .iter()
            .skip(next % self.step);
        self.newest = before.step_by(self.step).map(|r| r.0).max().unwrap_or(0);
        self.watermark = self.newest.saturating_sub(self.bound);
        self.next = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_resumes_the_instance_share_and_its_watermark() {
        let recs: Vec<(Time, ())> = [5, 30, 10, 40, 20, 60, 15]
            .iter()
            .map(|&t| (t, ()))
            .collect();
        let mut r = Replay::new(Arc::new(recs), 1, 2, 5);
        // Instance 1 of 2 replays indices 1, 3, 5: times 30, 40, 60.
        r.seek("5").unwrap();
        assert_eq!((r.next, r.newest, r.watermark), (5, 40, 35));
        assert_eq!(r.position(), Some("5".into()));
        assert!(r.seek("x").is_err());
        assert!(r
            .seek("100")
            .unwrap_err()
            .to_string()
            .contains("not of this input"));
    }

    #[test]
    fn a_paced_replay_allows_what_its_rate_has_made_due() {
        let mut r = Replay::new(Arc::new(vec![(0, ()); 10]), 0, 1, 0).paced(1000.0);
        // At the first poll one record is due; the next is due 1 ms after pacing started.
        assert_eq!(r.allowed(64), Ok(1));
        r.paced_from.as_mut().unwrap().1 = 1;
        let (start, _) = r.paced_from.unwrap();
        match r.allowed(64) {
            Err(at) => assert_eq!(at, start + 1_000_000),
            Ok(n) => assert!(now_ns() >= start + 1_000_000 && n >= 1),
        }
        let mut unpaced = Replay::new(Arc::new(vec![(0, ())]), 0, 1, 0).paced(0.0);
        assert_eq!(unpaced.allowed(64), Ok(64));
    }
}
