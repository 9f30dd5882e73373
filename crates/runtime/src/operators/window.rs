//! Keyed event-time tumbling windows, closed by the frontier of their tracking component.
//!
//! Deferred output holds its slot open (docs/design.md, requirement 8): when a window `[a, b)` is opened
//! on an instance by an input batch tracked over slots `[lo, hi]`, before that batch's receive tag,
//! the instance XORs a fresh tag `r` into slot `lo` of every downstream component (the creator's
//! slot, not the results' slot `b - 1`). When the frontier reaches `b` the results (time `b - 1`)
//! are pushed with tracking range `[lo, lo]` and committed, and only then is `r` XOR-ed again to
//! release the hold. So a downstream component, even another window, can never be declared complete
//! at `b - 1` between the notification and the emission, and with a sharded tracker the hold, the
//! creator's receive tag and the output all live in the shard owning `lo` (docs/sharding-notes.md,
//! option 1: conservative, shard-local).
//!
//! The windows' contents live in the `state` crate (`crates/state/src/window/`), in the form the
//! job chose (fold-left or retain-all) and on the backend it chose (memory or disk); only the
//! holds and arrival times stay here.
use super::window_version::WindowVersion;
use super::{Operator, OperatorState, Receipt};
use crate::batch::Batch;
use crate::channel::OutputPort;
use crate::measure::stats::VertexStats;
use crate::worker::ctx::WorkerCtx;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::Arc;
use xorflow_core::{Aggregate, Data, Element, WindowResult};
use xorflow_state::checkpoint::Hold;
use xorflow_state::window::{Fold, WindowForm, WindowState};
use xorflow_state::{KeyGroup, StateConfig, StateError, StateStore, ValueTable};
use xorflow_tracking::{ComponentId, Time};

/// Counter: rises of a window instance's epoch frontier before the end (checkpoint epochs).
pub const EPOCH_RISES: &str = "epoch_frontier_rises";
/// Counter: records the window's stores appended to their changelogs (changelog state).
pub const CHANGELOG_RECORDS: &str = "changelog_records";
/// Counter: key and value bytes of those records.
pub const CHANGELOG_BYTES: &str = "changelog_bytes";
/// Counter: bytes the window's local stores were given (changelog state; puts and deletes).
pub const STORE_BYTES: &str = "state_store_bytes";
/// Counter: records replayed from changelogs by restores.
pub const CHANGELOG_REPLAYED: &str = "changelog_replayed";

/// Per-window metadata: the hold tag and the last element's arrival.
#[derive(Debug)]
struct Meta {
    hold: u64,
    /// Tracking slot of the hold (the creating batch's first slot).
    hold_slot: u64,
    last_arrival_ns: u64,
}

/// What a snapshot keeps beside the contents: the open windows' holds and how far the instance
/// has fired, so a restored instance releases the same holds and counts the same elements late.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct OpenWindows {
    fired_below: Time,
    /// (window end, hold tag, hold slot) per open window.
    holds: Vec<(Time, u64, u64)>,
}

/// The aggregate as the state layer folds with it.
struct AggFold<A>(Arc<A>);

impl<T, A: Aggregate<T>> Fold<T> for AggFold<A> {
    type Acc = A::Acc;
    fn init(&self) -> A::Acc {
        self.0.init()
    }
    #[inline]
    fn add(&self, acc: &mut A::Acc, el: &T) {
        self.0.add(acc, el)
    }
}

/// Names a state failure after the window vertex.
fn state_err(name: &str) -> impl Fn(StateError) -> String + '_ {
    move |e| format!("window '{name}': {e}")
}

/// A keyed tumbling window operator.
pub struct Window<T, K, A: Aggregate<T>> {
    name: String,
    size: Time,
    /// Components of the downstream vertices: where holds go.
    downstream: Vec<ComponentId>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    agg: AggFold<A>,
    /// Open windows by end, with their holds.
    meta: BTreeMap<Time, Meta>,
    /// The contents, from [`Operator::open`] on (the store is opened on the worker).
    contents: Option<WindowState<K, T, A::Acc>>,
    state: StateConfig,
    form: WindowForm,
    group: Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>,
    /// Keeps the state's backend open.
    store: Option<StateStore>,
    /// What the store's changelog did (changelog state), as of the last snapshot.
    changelog: xorflow_state::backend::changelog::ChangelogStats,
    /// Bytes the store was given, as of the last snapshot (changelog state).
    store_bytes: u64,
    /// [`OpenWindows`] under key 0, written at each snapshot.
    open_windows: Option<ValueTable<u8, OpenWindows>>,
    /// Everything below this time has been fired (the frontier used at the last firing).
    fired_below: Time,
    /// This vertex's rank among the job's vertices with deferred output: with the worker it
    /// gives the instance's emitter id (`execute/mod.rs`, `epoch_domain`).
    rank: usize,
    /// Checkpoint epoch results are emitted in: the window's epoch frontier, heartbeated as an
    /// emitter so downstream epochs wait for it (`crates/tracking/src/epochs.rs`).
    epoch: u64,
    /// Rises of the epoch frontier seen (not counting the end).
    epoch_rises: u64,
    /// Versioned cut: what the later epoch changed, while the older one awaits its snapshot.
    version: Option<WindowVersion>,
    /// The open windows' (end, hold tag, hold slot) as of the last snapshot (its holds).
    snapshot_holds: Vec<(Time, u64, u64)>,
}

impl<T, K, A> Window<T, K, A>
where
    T: Data,
    K: Hash + Eq + Data,
    A: Aggregate<T>,
    A::Acc: Data,
{
    /// A window operator named `name` with windows of `size` time units, feeding the components
    /// `downstream` (its output port's, where the holds go). Its contents are kept as `state`
    /// and `form` say (opened with the operator; `group` gives a key's key group).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        size: Time,
        downstream: Vec<ComponentId>,
        key: Arc<dyn Fn(&T) -> K + Send + Sync>,
        agg: Arc<A>,
        state: StateConfig,
        form: WindowForm,
        group: Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>,
        rank: usize,
    ) -> Self {
        Window {
            name: name.into(),
            size,
            downstream,
            key,
            agg: AggFold(agg),
            meta: BTreeMap::new(),
            contents: None,
            state,
            form,
            group,
            store: None,
            changelog: Default::default(),
            store_bytes: 0,
            open_windows: None,
            fired_below: 0,
            rank,
            epoch: 0,
            epoch_rises: 0,
            version: None,
            snapshot_holds: Vec::new(),
        }
    }

    /// After the contents and the open-windows table were restored: the open windows' holds
    /// and how far the instance had fired, checked against the contents.
    ///
    /// # Errors
    /// The table does not decode, or the contents' windows and the holds disagree.
    fn restore_meta(&mut self) -> Result<(), String> {
        let err = state_err(&self.name);
        let (Some(contents), Some(open)) = (&mut self.contents, &mut self.open_windows) else {
            return Err(format!("window '{}' restored before open", self.name));
        };
        let windows = open.get(&0).map_err(&err)?.cloned().unwrap_or_default();
        let now = crate::measure::clock::now_ns();
        self.fired_below = windows.fired_below;
        self.meta = (windows.holds.iter())
            .map(|&(end, hold, hold_slot)| {
                let m = Meta {
                    hold,
                    hold_slot,
                    last_arrival_ns: now,
                };
                (end, m)
            })
            .collect();
        if contents.windows() != self.meta.len() {
            return Err(format!(
                "window '{}': the checkpoint holds {} open windows but {} holds",
                self.name,
                contents.windows(),
                self.meta.len()
            ));
        }
        Ok(())
    }

    /// The end of the window holding time `t`.
    #[inline]
    fn end_of(&self, t: Time) -> Time {
        (t - t % self.size).saturating_add(self.size)
    }

    /// Marks window `end` as receiving input now, opening it (and its hold, in the creating
    /// batch's first slot `lo`) if needed.
    #[inline]
    fn touch(&mut self, end: Time, lo: u64, later: bool, ctx: &mut WorkerCtx) {
        let now = ctx.now_ns;
        if let Some(v) = &mut self.version {
            match (later, self.meta.contains_key(&end)) {
                (true, false) => v.opened_later(end),
                (false, _) => v.touched_older(end),
                (true, true) => {}
            }
        }
        let meta = self.meta.entry(end).or_insert_with(|| {
            let mut hold = 0;
            if let Some(tr) = &mut ctx.tracking {
                // Hold the creator's slot of every downstream component before this batch's
                // receive tag, which the driver registers after on_batch returns.
                hold = tr.tags.next_tag();
                for &c in &self.downstream {
                    tr.acker.xor_slots(c, lo, lo, hold);
                }
            }
            Meta {
                hold,
                hold_slot: lo,
                last_arrival_ns: now,
            }
        });
        meta.last_arrival_ns = now;
    }

    /// Adds a batch's elements to their windows. Consecutive elements of one window (the usual
    /// case: input arrives roughly in time order) are added as one run: one window lookup, then
    /// a key lookup per element. Returns how many were below what has been fired (late).
    fn add_batch(
        &mut self,
        data: &[Element<T>],
        lo: u64,
        later: bool,
        ctx: &mut WorkerCtx,
    ) -> Result<u64, String> {
        let fired = self.fired_below;
        let mut late = 0;
        let mut i = 0;
        while i < data.len() {
            if data[i].time < fired {
                late += 1;
                i += 1;
                continue;
            }
            let end = self.end_of(data[i].time);
            let run = data[i..]
                .iter()
                .take_while(|e| e.time >= fired && self.end_of(e.time) == end)
                .count();
            self.touch(end, lo, later, ctx);
            let key = &self.key;
            let contents = self
                .contents
                .as_mut()
                .expect("opened before the first step");
            let items = data[i..i + run].iter().map(|e| (key(&e.data), &e.data));
            contents
                .add_run(end, items, &self.agg)
                .map_err(state_err(&self.name))?;
            i += run;
        }
        Ok(late)
    }
}

impl<T, K, A> Operator for Window<T, K, A>
where
    T: Data,
    K: Hash + Eq + Data,
    A: Aggregate<T>,
    A::Acc: Data,
    WindowResult<K, A::Out>: Clone,
{
    type In = T;
    type Out = OutputPort<WindowResult<K, A::Out>>;
    const STATEFUL: bool = true;

    /// Opens the state store of this instance and declares the window contents in it.
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), String> {
        let err = state_err(&self.name);
        let mut store = super::store::open(&self.state, &self.name, ctx).map_err(&err)?;
        let contents = WindowState::new(&mut store, "windows", self.form, self.group.clone());
        self.contents = Some(contents.map_err(&err)?);
        // Not keyed: one entry per instance, in group 0.
        let open = store
            .value_table("open-windows", |_: &u8| 0)
            .map_err(&err)?;
        self.open_windows = Some(open);
        self.store = Some(store);
        Ok(())
    }

    fn on_batch(
        &mut self,
        b: Batch<T>,
        _out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Receipt, String> {
        // Versioned cut: a batch of the later epoch writes the later version.
        let later = self.version.as_ref().is_some_and(|v| b.epoch >= v.epoch);
        if let Some(c) = self.contents.as_mut().filter(|_| self.version.is_some()) {
            c.set_later(later);
        }
        stats.below_frontier += self.add_batch(&b.data, b.lo, later, ctx)?;
        Ok(Receipt::Done)
    }

    /// Emits every window ending at or below `frontier`, then releases their holds.
    fn on_frontier(
        &mut self,
        frontier: Time,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(), String> {
        let mut holds = Vec::new();
        // Versioned cut: firing is the later epoch's, and so are the results.
        let emit_epoch = self.version.as_ref().map_or(self.epoch, |v| v.epoch);
        loop {
            let agg = &self.agg;
            let contents = self
                .contents
                .as_mut()
                .expect("opened before the first step");
            if self.version.is_some() {
                contents.set_later(true);
            }
            let closed = contents.close_next(frontier, agg);
            let Some((end, groups)) = closed.map_err(state_err(&self.name))? else {
                break;
            };
            let meta = self
                .meta
                .remove(&end)
                .expect("every open window has its metadata");
            if let Some(v) = &mut self.version {
                v.fired_later(end, meta.hold, meta.hold_slot);
            }
            if ctx.frontiers.live() {
                stats.record_latency(ctx.frontiers.seen_ns.saturating_sub(meta.last_arrival_ns));
            }
            out.set_lineage(Some((meta.hold_slot, meta.hold_slot)), ctx);
            out.set_epoch(emit_epoch, ctx);
            let start = end - self.size;
            for (key, acc) in groups {
                let value = self.agg.0.finish(acc);
                stats.elements_out += 1;
                let r = WindowResult {
                    start,
                    end,
                    key,
                    value,
                };
                out.push(Element::new(end - 1, r), ctx);
            }
            holds.push((meta.hold_slot, meta.hold));
        }
        if !holds.is_empty() {
            out.commit(ctx);
        }
        if let Some(tr) = &mut ctx.tracking {
            for (s, r) in holds {
                for &c in &self.downstream {
                    tr.acker.xor_slots(c, s, s, r);
                }
            }
        }
        self.fired_below = self.fired_below.max(frontier);
        Ok(())
    }

    /// Results are emitted in the new epoch from now on, and the epoch is heartbeated as this
    /// instance's emitter id (`2S + rank * workers + worker`: `execute/mod.rs`, `epoch_domain`),
    /// so downstream epochs wait for what it may still emit.
    fn on_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        let Some(ep) = ctx.epochs else {
            return;
        };
        self.epoch = epoch;
        self.version = None;
        if let Some(c) = &mut self.contents {
            c.end_version();
        }
        if epoch != xorflow_tracking::INF {
            self.epoch_rises += 1;
        }
        let id = ep.emitter_id(self.rank * ctx.workers + ctx.index);
        if let Some(tr) = &mut ctx.tracking {
            tr.acker.heartbeat(id, epoch);
        }
    }

    /// The window contents' changes since the previous snapshot (all of them if `full`), and
    /// the open windows' holds.
    fn snapshot(&mut self, epoch: u64, full: bool) -> Result<OperatorState, String> {
        let err = state_err(&self.name);
        let mut d = xorflow_state::delta::Delta::new(full);
        let (Some(contents), Some(open)) = (&mut self.contents, &mut self.open_windows) else {
            return Err(format!("window '{}' snapshot before open", self.name));
        };
        let live = (self.meta.iter()).map(|(&end, m)| (end, m.hold, m.hold_slot));
        // Versioned cut: the snapshot of an epoch before the later one states the older version.
        let older = self.version.as_ref().filter(|v| v.epoch > epoch);
        let windows = match older {
            Some(v) => OpenWindows {
                fired_below: v.fired_below,
                holds: v.older_holds(live),
            },
            None => OpenWindows {
                fired_below: self.fired_below,
                holds: live.collect(),
            },
        };
        self.snapshot_holds = windows.holds.clone();
        open.insert(&0, windows).map_err(&err)?;
        if let Some(store) = self.store.as_ref().filter(|s| s.has_changelog()) {
            // Changelog state: the flushes mirror the changes; the checkpoint records where.
            contents.flush().map_err(&err)?;
            open.flush().map_err(&err)?;
            contents.forget_changes();
            open.forget_changes();
            store.changelog_snapshot(&mut d).map_err(&err)?;
            let c = store.changelog_stats().unwrap_or_default();
            (self.changelog.records, self.changelog.bytes) = (c.records, c.bytes);
            self.store_bytes = store.stats().bytes_written;
            return Ok(OperatorState::Delta(d));
        }
        open.snapshot(&mut d).map_err(&err)?;
        match older {
            Some(_) => contents.snapshot_older(&mut d).map_err(&err)?,
            None => contents.snapshot(&mut d).map_err(&err)?,
        }
        Ok(OperatorState::Delta(d))
    }

    /// Fold-left windows keep versions (retain-all ones buffer).
    fn versioned(&self) -> bool {
        self.form != WindowForm::Retain
    }

    /// Keeps the open windows, their holds and the contents as of now apart from what epoch
    /// `epoch` changes (`window_version.rs`).
    fn begin_version(&mut self, epoch: u64, _ctx: &mut WorkerCtx) -> Result<(), String> {
        let contents = self.contents.as_mut().ok_or("window used before open")?;
        contents.begin_version().map_err(state_err(&self.name))?;
        self.version = Some(WindowVersion::new(epoch, self.fired_below));
        Ok(())
    }

    /// The hold of every window open as of the last snapshot, on every downstream component.
    fn holds(&self) -> Vec<Hold> {
        let mut out = Vec::new();
        for &(_, tag, slot) in self.snapshot_holds.iter().filter(|h| h.1 != 0) {
            out.extend(self.downstream.iter().map(|&c| Hold {
                component: c,
                slot,
                tag,
            }));
        }
        out
    }

    /// Flushes the contents and records the store's savepoint (on disk: local recovery).
    fn savepoint(
        &mut self,
        covered: std::ops::RangeInclusive<u64>,
        completed: Option<u64>,
    ) -> Result<(), String> {
        let err = state_err(&self.name);
        let (Some(store), Some(contents), Some(open)) =
            (&self.store, &mut self.contents, &mut self.open_windows)
        else {
            return Ok(());
        };
        if !store.is_local() {
            return Ok(());
        }
        contents.flush().map_err(&err)?;
        open.flush().map_err(&err)?;
        store.savepoint(covered, completed).map_err(&err)
    }

    /// Rebuilds the contents' metadata, the open windows and their holds from the local store
    /// rolled back to the checkpoint.
    fn restore_local(&mut self) -> Result<bool, String> {
        let err = state_err(&self.name);
        let (Some(store), Some(contents), Some(open)) =
            (&self.store, &mut self.contents, &mut self.open_windows)
        else {
            return Err(format!("window '{}' restored before open", self.name));
        };
        if !store.restored_locally() {
            return Ok(false);
        }
        store.changelog_resume().map_err(&err)?;
        contents.reopen().map_err(&err)?;
        open.reopen();
        drop(err);
        self.restore_meta()?;
        Ok(true)
    }

    /// Restores the contents, the open windows and their holds (which trAcker got from the
    /// checkpoint's manifest: `execute/tracking.rs`, `restore_holds`).
    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), String> {
        let err = state_err(&self.name);
        let (Some(store), Some(contents), Some(open)) =
            (&self.store, &mut self.contents, &mut self.open_windows)
        else {
            return Err(format!("window '{}' restored before open", self.name));
        };
        if let Some(n) = store.changelog_restore(chain).map_err(&err)? {
            self.changelog.replayed += n;
            // Changelog state: the store holds the replayed state, as after a local rollback.
            contents.reopen().map_err(&err)?;
            open.reopen();
            drop(err);
            return self.restore_meta();
        }
        // Instances keep their key groups across a restart: every restored key is this one's.
        contents.restore(chain, &|_| true).map_err(&err)?;
        open.restore(chain, &|_| true).map_err(&err)?;
        drop(err);
        self.restore_meta()
    }

    fn report(&mut self, stats: &mut VertexStats) {
        stats.count(EPOCH_RISES, self.epoch_rises);
        stats.count(CHANGELOG_RECORDS, self.changelog.records);
        stats.count(CHANGELOG_BYTES, self.changelog.bytes);
        stats.count(CHANGELOG_REPLAYED, self.changelog.replayed);
        stats.count(STORE_BYTES, self.store_bytes);
    }

    /// Removes the instance's on-disk state: without checkpoints nothing can use it again.
    fn close(&mut self) -> Result<(), String> {
        self.contents = None;
        self.open_windows = None;
        match self.store.take() {
            Some(store) => store.remove().map_err(state_err(&self.name)),
            None => Ok(()),
        }
    }
}
