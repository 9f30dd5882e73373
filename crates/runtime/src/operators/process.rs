//! Keyed process functions with event-time timers (`crates/core/src/process.rs`; Flink's
//! `KeyedProcessFunction`), and through them session windows (`crates/core/src/session.rs`).
//!
//! Per key, the function's state lives in a value table of the `state` crate, so it
//! checkpoints, restores and spills to disk like a window's contents. Timers are set and fired
//! in an in-memory index by time; a value table (one entry per (time, key)) is brought level
//! with the index before each snapshot or savepoint (`sync_timers`), and a restore rebuilds the
//! index from it. Every timer time holds
//! its creator's slot of the downstream components (`deferred.rs`) until the timer has fired
//! and what it emitted is committed; a timer set while another fires holds the firing one's
//! slot. Timers fire in time order once the frontier reaches them; a timer set for a time the
//! frontier has already reached fires in the same round.
//!
//! A function that folds a key's elements ([`KeyedProcess::BATCHED`], the SQL GROUP BY) gets
//! each input batch's elements of one key together, with the latest of their times.
//!
//! Results of `on_element` travel with the element's time and tracking range; those of a timer
//! at `t` with time `t - 1` in the hold's slot. The instance takes the buffered checkpoint cut.

use super::deferred;
use super::{Operator, OperatorState, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::Arc;
use xorflow_core::{Data, Element, KeyedProcess, ProcessContext};
use xorflow_state::checkpoint::Hold;
use xorflow_state::{KeyGroup, StateConfig, StateError, StateStore, ValueTable};
use xorflow_tracking::{ComponentId, Time, INF};

/// Counter: timers fired (one per key and time).
pub const TIMERS_FIRED: &str = "timers_fired";
/// Counter: cleanup timers left unfired because the input had ended
/// (`KeyedProcess::CLEANUP_TIMERS`), one per key and time.
pub const TIMERS_LEFT_AT_END: &str = "timers_left_at_end";

/// What a snapshot keeps beside the tables: the timer times' holds and how far timers fired.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct TimerHolds {
    fired_below: Time,
    /// (timer time, hold tag, hold slot) per timer time.
    holds: Vec<(Time, u64, u64)>,
}

/// The instance's tables.
struct Tables<K, S> {
    state: ValueTable<K, S>,
    timers: ValueTable<(Time, K), ()>,
    holds: ValueTable<u8, TimerHolds>,
}

/// The function's output buffers, reused across calls.
struct Buffers<O, S> {
    out: Vec<O>,
    side: Vec<S>,
    timers: Vec<Time>,
}

/// A keyed process operator: the function's results on the first output, its side output on
/// the second.
pub struct Process<T, K, F: KeyedProcess<K, T>> {
    /// Shared, so error messages can name it while the operator is borrowed.
    name: Arc<str>,
    /// Components of both outputs: a timer may emit on either.
    downstream: Vec<ComponentId>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    f: Arc<F>,
    config: StateConfig,
    group: Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>,
    store: Option<StateStore>,
    tables: Option<Tables<K, F::State>>,
    /// Keys with a timer, by time.
    timers: BTreeMap<Time, FxHashSet<K>>,
    /// (hold tag, hold slot) per timer time.
    holds: BTreeMap<Time, (u64, u64)>,
    /// Every timer below this has fired (the frontier of the last round).
    fired_below: Time,
    buf: Buffers<F::Out, F::Side>,
    /// Rank among the job's vertices with deferred output (`window.rs`, `rank`).
    rank: usize,
    epoch: u64,
    /// The holds as of the last snapshot.
    snapshot_holds: Vec<(Time, u64, u64)>,
    fired: u64,
    /// Cleanup timers left unfired at the end of the input.
    left_at_end: u64,
    /// A batch's elements by key ([`KeyedProcess::BATCHED`]): (key, latest time, elements),
    /// the key's place in it, and emptied element vectors to reuse. Kept between batches so
    /// that a batch allocates nothing once they have grown.
    groups: Vec<(K, Time, Vec<T>)>,
    index: FxHashMap<K, usize>,
    spare: Vec<Vec<T>>,
    /// [`crate::RuntimeConfig::leave_state_to_exit`], from [`Operator::open`].
    leave_to_exit: bool,
}

/// Names a state failure after the vertex.
fn state_err(name: &str) -> impl Fn(StateError) -> OperatorError + '_ {
    move |e| OperatorError::state(format!("process '{name}'"), e)
}

impl<T, K, F> Process<T, K, F>
where
    T: Data,
    K: Hash + Eq + Data,
    F: KeyedProcess<K, T>,
{
    /// The operator `name` running `f` per key of `key`, its holds on the components
    /// `downstream`, its state kept as `config` says (`group` gives a key's key group).
    pub fn new(
        name: &str,
        downstream: Vec<ComponentId>,
        key: Arc<dyn Fn(&T) -> K + Send + Sync>,
        f: Arc<F>,
        config: StateConfig,
        group: Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>,
        rank: usize,
    ) -> Self {
        Process {
            name: name.into(),
            downstream,
            key,
            f,
            config,
            group,
            store: None,
            tables: None,
            timers: BTreeMap::new(),
            holds: BTreeMap::new(),
            fired_below: 0,
            buf: Buffers {
                out: Vec::new(),
                side: Vec::new(),
                timers: Vec::new(),
            },
            rank,
            epoch: 0,
            snapshot_holds: Vec::new(),
            fired: 0,
            left_at_end: 0,
            groups: Vec::new(),
            index: FxHashMap::default(),
            spare: Vec::new(),
            leave_to_exit: false,
        }
    }

    /// Fills `groups` with `data`'s elements by key, keys in order of first arrival, each with
    /// the latest time of its elements ([`KeyedProcess::BATCHED`]).
    fn group_by_key(&mut self, data: Vec<Element<T>>) {
        self.index.clear();
        for el in data {
            let key = (self.key)(&el.data);
            match self.index.get(&key) {
                Some(&i) => {
                    let g = &mut self.groups[i];
                    g.1 = g.1.max(el.time);
                    g.2.push(el.data);
                }
                None => {
                    self.index.insert(key.clone(), self.groups.len());
                    let mut items = self.spare.pop().unwrap_or_default();
                    items.push(el.data);
                    self.groups.push((key, el.time, items));
                }
            }
        }
    }

    /// Makes the `timers` table hold exactly the in-memory index, before a snapshot or a
    /// savepoint records it. Timers are set and fired in the index only: writing each to the
    /// table as well doubled its cost (an interval join sets one per element: Nexmark q7 took a
    /// quarter more CPU with checkpoints configured), and only a restore reads the table
    /// ([`Process::rebuild`]). This costs one pass over the live timers per checkpoint.
    fn sync_timers(&mut self) -> Result<(), StateError> {
        let t = self.tables.as_mut().expect("opened before a snapshot");
        let mut stored: FxHashSet<(Time, K)> = t.timers.keys()?.into_iter().collect();
        for (&time, keys) in &self.timers {
            for k in keys {
                let timer = (time, k.clone());
                if !stored.remove(&timer) {
                    t.timers.insert(&timer, ())?;
                }
            }
        }
        // What is left has fired since the last sync.
        for fired in stored {
            t.timers.remove(&fired)?;
        }
        Ok(())
    }

    fn tables(&mut self) -> &mut Tables<K, F::State> {
        self.tables.as_mut().expect("opened before the first step")
    }

    /// Records the timers the last call set for `key`, holding slot `slot` for new times.
    fn add_timers(&mut self, key: &K, slot: u64, ctx: &mut WorkerCtx) -> Result<(), StateError> {
        while let Some(t) = self.buf.timers.pop() {
            if !self.timers.entry(t).or_default().insert(key.clone()) {
                continue;
            }

            if !self.holds.contains_key(&t) {
                let tag = deferred::open_hold(&self.downstream, slot, ctx);
                self.holds.insert(t, (tag, slot));
            }
        }
        Ok(())
    }

    /// Pushes what the last call emitted with time `time`; returns whether there was any.
    fn push_outputs(
        &mut self,
        time: Time,
        (out, side): &mut <Self as Operator>::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> bool {
        let any = !self.buf.out.is_empty() || !self.buf.side.is_empty();
        stats.elements_out += self.buf.out.len() as u64;
        for o in self.buf.out.drain(..) {
            out.push(Element::new(time, o), ctx);
        }
        for s in self.buf.side.drain(..) {
            side.push(Element::new(time, s), ctx);
        }
        any
    }

    /// Fires the timers of time `t` (every key's), at frontier `frontier`; returns its hold.
    fn fire(
        &mut self,
        t: Time,
        frontier: Time,
        out: &mut <Self as Operator>::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(u64, u64), OperatorError> {
        let keys = self.timers.remove(&t).unwrap_or_default();
        let Some((tag, slot)) = self.holds.remove(&t) else {
            return Err(format!("process '{}': timer {t} has no hold", self.name).into());
        };
        out.0.set_lineage(Some((slot, slot)), ctx);
        out.1.set_lineage(Some((slot, slot)), ctx);
        out.0.set_epoch(self.epoch, ctx);
        out.1.set_epoch(self.epoch, ctx);
        let (f, name) = (self.f.clone(), self.name.clone());
        let err = state_err(&name);
        for key in keys {
            let b = &mut self.buf;
            let tables = self.tables.as_mut().expect("opened before the first step");
            (tables.state)
                .update(&key, |st| {
                    let mut pc =
                        ProcessContext::new(t, frontier, &mut b.out, &mut b.side, &mut b.timers);
                    f.on_timer(&key, st, &mut pc);
                })
                .map_err(&err)?;
            self.add_timers(&key, slot, ctx).map_err(&err)?;
            self.push_outputs(t - 1, out, ctx, stats);
            self.fired += 1;
        }
        Ok((slot, tag))
    }

    /// Rebuilds the timer index, the holds and how far timers fired from the restored tables.
    ///
    /// # Errors
    /// The tables do not decode, or timers and holds disagree.
    fn rebuild(&mut self) -> Result<(), OperatorError> {
        let name = self.name.clone();
        let err = state_err(&name);
        let t = self.tables();
        let keys = t.timers.keys().map_err(&err)?;
        let recorded = t.holds.get(&0).map_err(&err)?.cloned().unwrap_or_default();
        self.timers.clear();
        for (time, k) in keys {
            self.timers.entry(time).or_default().insert(k);
        }
        self.fired_below = recorded.fired_below;
        self.holds = (recorded.holds.iter())
            .map(|&(t, tag, slot)| (t, (tag, slot)))
            .collect();
        // Created and fired together: a hold without timers would never be released (the
        // frontier would stop there), a timer without a hold could emit into a complete slot.
        if let Some(t) = self.timers.keys().find(|t| !self.holds.contains_key(t)) {
            return Err(format!("process '{name}': the checkpoint's timer {t} has no hold").into());
        }
        if let Some(t) = self.holds.keys().find(|t| !self.timers.contains_key(t)) {
            return Err(format!(
                "process '{name}': the checkpoint holds time {t}, which has no timer"
            )
            .into());
        }
        Ok(())
    }

    fn reopen(&mut self) {
        let t = self.tables();
        t.state.reopen();
        t.timers.reopen();
        t.holds.reopen();
    }
}

impl<T, K, F> Operator for Process<T, K, F>
where
    T: Data,
    K: Hash + Eq + Data,
    F: KeyedProcess<K, T>,
{
    type In = T;
    /// Results, and the side output.
    type Out = (OutputPort<F::Out>, OutputPort<F::Side>);
    const STATEFUL: bool = true;

    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        let err = state_err(&self.name);
        let mut store = super::store::open(&self.config, &self.name, ctx).map_err(&err)?;
        let (g1, g2) = (self.group.clone(), self.group.clone());
        let state = store
            .value_table("state", move |k: &K| g1(k))
            .map_err(&err)?;
        let timers = (store.value_table("timers", move |k: &(Time, K)| g2(&k.1))).map_err(&err)?;
        // Not keyed: one entry per instance, in group 0.
        let holds = store.value_table("timer-holds", |_: &u8| 0).map_err(&err)?;
        self.tables = Some(Tables {
            state,
            timers,
            holds,
        });
        self.store = Some(store);
        self.leave_to_exit = ctx.config.leave_state_to_exit;
        Ok(())
    }

    fn on_batch(
        &mut self,
        b: Batch<T>,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, OperatorError> {
        out.0.set_lineage(Some((b.lo, b.hi)), ctx);
        out.1.set_lineage(Some((b.lo, b.hi)), ctx);
        let (f, frontier, name) = (self.f.clone(), self.fired_below, self.name.clone());
        let err = state_err(&name);
        let mut any = false;
        if F::BATCHED {
            self.group_by_key(b.data);
            let mut groups = std::mem::take(&mut self.groups);
            for (key, time, items) in groups.drain(..) {
                let mut items = items;
                let bf = &mut self.buf;
                let tables = self.tables.as_mut().expect("opened before the first step");
                (tables.state)
                    .update(&key, |st| {
                        let mut pc = ProcessContext::new(
                            time,
                            frontier,
                            &mut bf.out,
                            &mut bf.side,
                            &mut bf.timers,
                        );
                        f.on_elements(&key, st, &mut items, &mut pc);
                    })
                    .map_err(&err)?;
                let slot = deferred::creator_slot(time, b.lo, b.exact, ctx);
                self.add_timers(&key, slot, ctx).map_err(&err)?;
                any |= self.push_outputs(time, out, ctx, stats);
                items.clear();
                self.spare.push(items);
            }
            self.groups = groups;
            if any {
                out.0.commit(ctx);
                out.1.commit(ctx);
            }
            return Ok(Receipt::Done);
        }
        for el in b.data {
            let key = (self.key)(&el.data);
            let bf = &mut self.buf;
            let tables = self.tables.as_mut().expect("opened before the first step");
            // In place: one lookup of the key per element instead of get, remove and insert.
            (tables.state)
                .update(&key, |st| {
                    let mut pc = ProcessContext::new(
                        el.time,
                        frontier,
                        &mut bf.out,
                        &mut bf.side,
                        &mut bf.timers,
                    );
                    f.on_element(&key, st, el.data, &mut pc);
                })
                .map_err(&err)?;
            // New timer times hold the creator's slot, before the batch's receive tag.
            let slot = deferred::creator_slot(el.time, b.lo, b.exact, ctx);
            self.add_timers(&key, slot, ctx).map_err(&err)?;
            any |= self.push_outputs(el.time, out, ctx, stats);
        }
        if any {
            out.0.commit(ctx);
            out.1.commit(ctx);
        }
        Ok(Receipt::Done)
    }

    /// Fires every timer at or below `frontier` in time order (including those set meanwhile),
    /// commits what they emitted, then releases their holds.
    fn on_frontier(
        &mut self,
        frontier: Time,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(), OperatorError> {
        let mut released = Vec::new();
        if frontier == INF && F::CLEANUP_TIMERS {
            // The input has ended: these timers would only clear state that goes with the
            // operator (`KeyedProcess::CLEANUP_TIMERS`). Their holds are released unfired.
            for (t, keys) in std::mem::take(&mut self.timers) {
                self.left_at_end += keys.len() as u64;
                let Some((tag, slot)) = self.holds.remove(&t) else {
                    return Err(format!("process '{}': timer {t} has no hold", self.name).into());
                };
                released.push((slot, tag));
            }
        }
        while let Some(t) = self.timers.first_key_value().map(|(&t, _)| t) {
            if t > frontier {
                break;
            }
            released.push(self.fire(t, frontier, out, ctx, stats)?);
        }
        if !released.is_empty() {
            out.0.commit(ctx);
            out.1.commit(ctx);
        }
        deferred::release_holds(&self.downstream, &released, ctx);
        self.fired_below = self.fired_below.max(frontier);
        Ok(())
    }

    fn on_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        if ctx.epochs.is_none() {
            return;
        }
        self.epoch = epoch;
        deferred::heartbeat_epoch(self.rank, epoch, ctx);
    }

    /// The tables' changes since the previous snapshot (all if `full`), with the timers' holds.
    fn snapshot(&mut self, _epoch: u64, full: bool) -> Result<OperatorState, OperatorError> {
        let name = self.name.clone();
        let err = state_err(&name);
        let holds: Vec<(Time, u64, u64)> = (self.holds.iter())
            .map(|(&t, &(tag, slot))| (t, tag, slot))
            .collect();
        let recorded = TimerHolds {
            fired_below: self.fired_below,
            holds: holds.clone(),
        };
        self.snapshot_holds = holds;
        self.sync_timers().map_err(&err)?;
        let mut d = xorflow_state::delta::Delta::new(full);
        let (Some(t), Some(store)) = (&mut self.tables, &self.store) else {
            return Err(format!("process '{name}' snapshot before open").into());
        };
        t.holds.insert(&0, recorded).map_err(&err)?;
        if store.has_changelog() {
            // Changelog state: the flushes mirror the changes; the checkpoint records where.
            t.state.flush().map_err(&err)?;
            t.timers.flush().map_err(&err)?;
            t.holds.flush().map_err(&err)?;
            t.state.forget_changes();
            t.timers.forget_changes();
            t.holds.forget_changes();
            store.changelog_snapshot(&mut d).map_err(&err)?;
            return Ok(OperatorState::Delta(d));
        }
        t.state.snapshot(&mut d).map_err(&err)?;
        t.timers.snapshot(&mut d).map_err(&err)?;
        t.holds.snapshot(&mut d).map_err(&err)?;
        Ok(OperatorState::Delta(d))
    }

    fn holds(&self) -> Vec<Hold> {
        deferred::holds_of(&self.snapshot_holds, &self.downstream)
    }

    /// Flushes the tables and records the store's savepoint (on disk: local recovery).
    fn savepoint(
        &mut self,
        covered: std::ops::RangeInclusive<u64>,
        completed: Option<u64>,
    ) -> Result<(), OperatorError> {
        let name = self.name.clone();
        let err = state_err(&name);
        match &self.store {
            Some(store) if store.is_local() && self.tables.is_some() => {}
            _ => return Ok(()),
        }
        self.sync_timers().map_err(&err)?;
        let (Some(store), Some(t)) = (&self.store, &mut self.tables) else {
            return Ok(());
        };
        t.state.flush().map_err(&err)?;
        t.timers.flush().map_err(&err)?;
        t.holds.flush().map_err(&err)?;
        store.savepoint(covered, completed).map_err(&err)
    }

    fn restore_local(&mut self) -> Result<bool, OperatorError> {
        let Some(store) = &self.store else {
            return Err(format!("process '{}' restored before open", self.name).into());
        };
        if !store.restored_locally() {
            return Ok(false);
        }
        store.changelog_resume().map_err(state_err(&self.name))?;
        self.reopen();
        self.rebuild()?;
        Ok(true)
    }

    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError> {
        let name = self.name.clone();
        let err = state_err(&name);
        let (Some(store), Some(t)) = (&self.store, &mut self.tables) else {
            return Err(format!("process '{name}' restored before open").into());
        };
        if store.changelog_restore(chain).map_err(&err)?.is_some() {
            self.reopen();
            return self.rebuild();
        }
        // Instances keep their key groups across a restart: every restored key is this one's.
        t.state.restore(chain, &|_| true).map_err(&err)?;
        t.timers.restore(chain, &|_| true).map_err(&err)?;
        t.holds.restore(chain, &|_| true).map_err(&err)?;
        self.rebuild()
    }

    fn report(&mut self, stats: &mut VertexStats) {
        stats.count(TIMERS_FIRED, self.fired);
        stats.count(TIMERS_LEFT_AT_END, self.left_at_end);
    }

    /// Removes the instance's on-disk state: without checkpoints nothing can use it again.
    fn close(&mut self) -> Result<(), OperatorError> {
        let timers = std::mem::take(&mut self.timers);
        super::teardown::release((self.tables.take(), timers), self.leave_to_exit);
        match self.store.take() {
            Some(store) => store.remove().map_err(state_err(&self.name)),
            None => Ok(()),
        }
    }
}
