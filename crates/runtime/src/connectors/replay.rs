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

use super::rate::Rate;
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
    rate: Rate,
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
            rate: Rate::default(),
        }
    }

    /// Emits `per_second` records per second (this instance's share; `0.0`: unpaced). A resumed
    /// replay paces from its first poll.
    pub fn paced(mut self, per_second: f64) -> Self {
        self.rate = Rate::new(per_second);
        self
    }
}

impl<T: Clone + Send + Sync> Source<T> for Replay<T> {
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll {
        let budget = match self.rate.allowed(out.budget()) {
            Ok(n) => n,
            Err(at) => return SourcePoll::WaitUntil(at),
        };
        for _ in 0..budget {
            let Some((t, r)) = self.records.get(self.next) else {
                return SourcePoll::Done;
            };
            self.next += self.step;
            self.rate.emitted();
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
}
