//! Keyed event-time windows (tumbling or sliding, with allowed lateness and a late side
//! output: `crates/core/src/window.rs`), fired by the frontier of their tracking component.
//!
//! Deferred output holds its slot open (docs/design.md, requirement 8): when a window `[a, b)` is opened
//! on an instance by an input batch tracked over slots `[lo, hi]`, before that batch's receive tag,
//! the instance XORs a fresh tag `r` into slot `h` of every downstream component. When the frontier
//! reaches `b` the results (time `b - 1`) are pushed with tracking range `[h, h]` and committed, and
//! only then is `r` XOR-ed again to release the hold. So a downstream component, even another
//! window, can never be declared complete at `b - 1` between the notification and the emission.
//! With one tracker shard `h` is the results' own slot, `b - 1`'s; with several it is the creator's
//! slot `lo`, so that the hold, the creator's receive tag and the output all live in the shard
//! owning `lo` (docs/sharding-notes.md, option 1: conservative, shard-local; the choice is
//! [`deferred::window_hold_slot`]).
//!
//! Allowed lateness: the contents of window `[s, e)` are kept under `e + lateness` (so the state
//! layer's close at the frontier is the purge), and the window fires once at `e` from a copy. A
//! late element reaching a fired window is added and its key's updated result is emitted at
//! once, with the element's own time and tracking range (it is in flight, so its slot is open:
//! no hold needed). Windows that keep contents past their firing make the instance use the
//! buffered cut, not the versioned one.
//!
//! The windows' contents live in the `state` crate (`crates/state/src/window/`), in the form the
//! job chose (fold-left or retain-all) and on the backend it chose (memory or disk); only the
//! holds and arrival times stay here.
use super::deferred;
use super::window_version::WindowVersion;
use super::{Operator, OperatorState, Receipt};
use crate::batch::Batch;
use crate::measure::stats::VertexStats;
use crate::operators::OperatorError;
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::Arc;
use xorflow_core::{Aggregate, Data, Element, WindowResult, WindowSpec};
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
/// Counter: elements past every window's allowed lateness, sent to the late side output.
pub const LATE_ELEMENTS: &str = "late_elements";
/// Counter: updated results emitted for late elements that reached a fired window.
pub const LATE_UPDATES: &str = "late_updates";

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
fn state_err(name: &str) -> impl Fn(StateError) -> OperatorError + '_ {
    move |e| OperatorError::state(format!("window '{name}'"), e)
}

/// A keyed window operator: results on its first output, late elements on its second.
pub struct Window<T, K, A: Aggregate<T>> {
    name: String,
    spec: WindowSpec<T>,
    /// Late elements sent to the side output, and updated results emitted for late elements.
    late: (u64, u64),
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
    /// [`crate::RuntimeConfig::leave_state_to_exit`], from [`Operator::open`].
    leave_to_exit: bool,
}

impl<T, K, A> Window<T, K, A>
where
    T: Data,
    K: Hash + Eq + Data,
    A: Aggregate<T>,
    A::Acc: Data,
{
    /// A window operator named `name` with the windows of `spec`, feeding the components
    /// `downstream` (its output port's, where the holds go). Its contents are kept as `state`
    /// and `form` say (opened with the operator; `group` gives a key's key group).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        spec: WindowSpec<T>,
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
            spec,
            late: (0, 0),
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
            leave_to_exit: false,
        }
    }

    /// After the contents and the open-windows table were restored: the open windows' holds
    /// and how far the instance had fired, checked against the contents.
    ///
    /// # Errors
    /// The table does not decode, or the contents' windows and the holds disagree.
    fn restore_meta(&mut self) -> Result<(), OperatorError> {
        let err = state_err(&self.name);
        let (Some(contents), Some(open)) = (&mut self.contents, &mut self.open_windows) else {
            return Err(format!("window '{}' restored before open", self.name).into());
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
        // With lateness, fired windows keep their contents after their holds are gone.
        let (n, m) = (contents.windows(), self.meta.len());
        if n < m || (n != m && self.spec.lateness() == 0) {
            return Err(format!(
                "window '{}': the checkpoint holds {} open windows but {} holds",
                self.name,
                contents.windows(),
                self.meta.len()
            )
            .into());
        }
        Ok(())
    }

    /// Where the state keeps the contents of the window ending at `end`: at the end of its
    /// allowed lateness, so the state's close at the frontier is the purge.
    #[inline]
    fn kept_at(&self, end: Time) -> Time {
        end.saturating_add(self.spec.lateness())
    }

    /// Marks window `end` as receiving input now, opening it (and its hold, in slot `slot`:
    /// [`deferred::window_hold_slot`]) if needed.
    #[inline]
    fn touch(&mut self, end: Time, slot: u64, later: bool, ctx: &mut WorkerCtx) {
        let now = ctx.now_ns;
        if let Some(v) = &mut self.version {
            match (later, self.meta.contains_key(&end)) {
                (true, false) => v.opened_later(end),
                (false, _) => v.touched_older(end),
                (true, true) => {}
            }
        }
        let meta = self.meta.entry(end).or_insert_with(|| Meta {
            // Before this batch's receive tag, which the driver registers after on_batch.
            hold: deferred::open_hold(&self.downstream, slot, ctx),
            hold_slot: slot,
            last_arrival_ns: now,
        });
        meta.last_arrival_ns = now;
    }

    /// Adds a batch's elements to their windows. Consecutive elements of the same windows (the
    /// usual case: input arrives roughly in time order) are added as one run per window: one
    /// window lookup, then a key lookup per element. Returns how many were below what has been
    /// fired (late).
    fn add_batch(
        &mut self,
        data: &[Element<T>],
        (lo, exact): (u64, bool),
        later: bool,
        ctx: &mut WorkerCtx,
    ) -> Result<u64, OperatorError> {
        let fired = self.fired_below;
        let slide = self.spec.slide();
        let mut late = 0;
        let mut i = 0;
        while i < data.len() {
            if data[i].time < fired {
                late += 1;
                i += 1;
                continue;
            }
            let (first, n) = self.spec.ends(data[i].time);
            let run = data[i..]
                .iter()
                .take_while(|e| e.time >= fired && self.spec.ends(e.time) == (first, n))
                .count();
            for end in (0..n).map(|k| first + k * slide) {
                let slot = deferred::window_hold_slot(end, data[i].time, lo, exact, ctx);
                self.touch(end, slot, later, ctx);
                let kept_at = self.kept_at(end);
                let key = &self.key;
                let contents = self
                    .contents
                    .as_mut()
                    .expect("opened before the first step");
                let items = data[i..i + run].iter().map(|e| (key(&e.data), &e.data));
                (contents.add_run(kept_at, items, &self.agg)).map_err(state_err(&self.name))?;
            }
            i += run;
        }
        Ok(late)
    }

    /// Adds a batch by the elements' event times (`WindowSpec::event_time`): a window whose
    /// lateness the element's own time has passed does not take it; a fired one takes it and
    /// emits its key's updated result now; an element no window takes goes to `late`.
    fn add_by_event_time(
        &mut self,
        b: &Batch<T>,
        later: bool,
        (results, late): &mut <Self as Operator>::Out,
        ctx: &mut WorkerCtx,
    ) -> Result<(), OperatorError> {
        let event_time = self.spec.event_time_fn().expect("called with one").clone();
        results.set_lineage(Some((b.lo, b.hi)), ctx);
        late.set_lineage(Some((b.lo, b.hi)), ctx);
        let (late_before, slide) = (self.late, self.spec.slide());
        for el in &b.data {
            let (first, n) = self.spec.ends(event_time(&el.data));
            let key = (self.key)(&el.data);
            let mut taken = false;
            for end in (0..n).map(|k| first + k * slide) {
                let kept_at = self.kept_at(end);
                if kept_at <= el.time {
                    continue;
                }
                taken = true;
                if end > self.fired_below {
                    let slot = deferred::window_hold_slot(end, el.time, b.lo, b.exact, ctx);
                    self.touch(end, slot, later, ctx);
                }
                let contents = self
                    .contents
                    .as_mut()
                    .expect("opened before the first step");
                let err = state_err(&self.name);
                contents
                    .add(kept_at, key.clone(), &el.data, &self.agg)
                    .map_err(&err)?;
                if end <= self.fired_below {
                    let acc = contents.get(kept_at, &key, &self.agg).map_err(&err)?;
                    let value = self.agg.0.finish(acc.expect("just added"));
                    let (start, key) = (self.spec.start(end), key.clone());
                    let r = WindowResult {
                        start,
                        end,
                        key,
                        value,
                    };
                    results.push(Element::new(el.time, r), ctx);
                    self.late.1 += 1;
                }
            }
            if !taken {
                late.push(el.clone(), ctx);
                self.late.0 += 1;
            }
        }
        if self.late != late_before {
            results.commit(ctx);
            late.commit(ctx);
        }
        Ok(())
    }

    /// Emits the results of window `end` (`groups`: every key's accumulator) in the slot of its
    /// hold, in epoch `epoch`, and returns the hold to release.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        end: Time,
        groups: Vec<(K, A::Acc)>,
        epoch: u64,
        out: &mut OutputPort<WindowResult<K, A::Out>>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> (u64, u64) {
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
        out.set_epoch(epoch, ctx);
        let start = self.spec.start(end);
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
        (meta.hold_slot, meta.hold)
    }

    /// Fires every window ending at or below `frontier` into `out`; returns their holds.
    fn fire(
        &mut self,
        frontier: Time,
        out: &mut OutputPort<WindowResult<K, A::Out>>,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<Vec<(u64, u64)>, OperatorError> {
        let mut holds = Vec::new();
        // Versioned cut: firing is the later epoch's, and so are the results.
        let emit_epoch = self.version.as_ref().map_or(self.epoch, |v| v.epoch);
        let contents = self
            .contents
            .as_mut()
            .expect("opened before the first step");
        if self.version.is_some() {
            contents.set_later(true);
        }
        if self.spec.lateness() > 0 {
            // Fire from a copy; the contents stay until the lateness has passed.
            let due: Vec<Time> = self.meta.range(..=frontier).map(|(&e, _)| e).collect();
            for end in due {
                let kept_at = self.kept_at(end);
                let contents = self
                    .contents
                    .as_mut()
                    .expect("opened before the first step");
                let groups = contents
                    .peek(kept_at, &self.agg)
                    .map_err(state_err(&self.name))?;
                holds.push(self.emit(end, groups, emit_epoch, out, ctx, stats));
            }
            let contents = self
                .contents
                .as_mut()
                .expect("opened before the first step");
            while contents
                .close_next(frontier, &self.agg)
                .map_err(state_err(&self.name))?
                .is_some()
            {}
            return Ok(holds);
        }
        loop {
            let contents = self
                .contents
                .as_mut()
                .expect("opened before the first step");
            let Some((end, groups)) = contents
                .close_next(frontier, &self.agg)
                .map_err(state_err(&self.name))?
            else {
                break;
            };
            holds.push(self.emit(end, groups, emit_epoch, out, ctx, stats));
        }
        Ok(holds)
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
    /// Results, and late elements (the side output).
    type Out = (OutputPort<WindowResult<K, A::Out>>, OutputPort<T>);
    const STATEFUL: bool = true;

    /// Opens the state store of this instance and declares the window contents in it.
    fn open(&mut self, ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
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
        // Versioned cut: a batch of the later epoch writes the later version.
        let later = self.version.as_ref().is_some_and(|v| b.epoch >= v.epoch);
        if let Some(c) = self.contents.as_mut().filter(|_| self.version.is_some()) {
            c.set_later(later);
        }
        if self.spec.event_time_fn().is_some() {
            self.add_by_event_time(&b, later, out, ctx)?;
        } else {
            stats.below_frontier += self.add_batch(&b.data, (b.lo, b.exact), later, ctx)?;
        }
        Ok(Receipt::Done)
    }

    /// Emits every window ending at or below `frontier`, then releases their holds.
    fn on_frontier(
        &mut self,
        frontier: Time,
        out: &mut Self::Out,
        ctx: &mut WorkerCtx,
        stats: &mut VertexStats,
    ) -> Result<(), OperatorError> {
        let holds = self.fire(frontier, &mut out.0, ctx, stats)?;
        if !holds.is_empty() {
            out.0.commit(ctx);
        }
        deferred::release_holds(&self.downstream, &holds, ctx);
        self.fired_below = self.fired_below.max(frontier);
        Ok(())
    }

    /// Results are emitted in the new epoch from now on, and the epoch is heartbeated as this
    /// instance's emitter id (`2S + rank * workers + worker`: `execute/mod.rs`, `epoch_domain`),
    /// so downstream epochs wait for what it may still emit.
    fn on_epoch(&mut self, epoch: u64, ctx: &mut WorkerCtx) {
        if ctx.epochs.is_none() {
            return;
        }
        self.epoch = epoch;
        self.version = None;
        if let Some(c) = &mut self.contents {
            c.end_version();
        }
        if epoch != xorflow_tracking::INF {
            self.epoch_rises += 1;
        }
        deferred::heartbeat_epoch(self.rank, epoch, ctx);
    }

    /// The window contents' changes since the previous snapshot (all of them if `full`), and
    /// the open windows' holds.
    fn snapshot(&mut self, epoch: u64, full: bool) -> Result<OperatorState, OperatorError> {
        let err = state_err(&self.name);
        let mut d = xorflow_state::delta::Delta::new(full);
        let (Some(contents), Some(open)) = (&mut self.contents, &mut self.open_windows) else {
            return Err(format!("window '{}' snapshot before open", self.name).into());
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

    /// Fold-left windows keep versions (retain-all ones buffer, and so do windows with
    /// allowed lateness, whose contents outlive their firing).
    fn versioned(&self) -> bool {
        self.form != WindowForm::Retain && self.spec.lateness() == 0
    }

    /// Keeps the open windows, their holds and the contents as of now apart from what epoch
    /// `epoch` changes (`window_version.rs`).
    fn begin_version(&mut self, epoch: u64, _ctx: &mut WorkerCtx) -> Result<(), OperatorError> {
        let contents = self.contents.as_mut().ok_or("window used before open")?;
        contents.begin_version().map_err(state_err(&self.name))?;
        self.version = Some(WindowVersion::new(epoch, self.fired_below));
        Ok(())
    }

    /// The hold of every window open as of the last snapshot, on every downstream component.
    fn holds(&self) -> Vec<Hold> {
        deferred::holds_of(&self.snapshot_holds, &self.downstream)
    }

    /// Flushes the contents and records the store's savepoint (on disk: local recovery).
    fn savepoint(
        &mut self,
        covered: std::ops::RangeInclusive<u64>,
        completed: Option<u64>,
    ) -> Result<(), OperatorError> {
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
    fn restore_local(&mut self) -> Result<bool, OperatorError> {
        let err = state_err(&self.name);
        let (Some(store), Some(contents), Some(open)) =
            (&self.store, &mut self.contents, &mut self.open_windows)
        else {
            return Err(format!("window '{}' restored before open", self.name).into());
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
    fn restore(&mut self, chain: &[xorflow_state::delta::Delta]) -> Result<(), OperatorError> {
        let err = state_err(&self.name);
        let (Some(store), Some(contents), Some(open)) =
            (&self.store, &mut self.contents, &mut self.open_windows)
        else {
            return Err(format!("window '{}' restored before open", self.name).into());
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
        stats.count(LATE_ELEMENTS, self.late.0);
        stats.count(LATE_UPDATES, self.late.1);
    }

    /// Removes the instance's on-disk state: without checkpoints nothing can use it again.
    fn close(&mut self) -> Result<(), OperatorError> {
        let state = (self.contents.take(), self.open_windows.take());
        super::teardown::release(state, self.leave_to_exit);
        match self.store.take() {
            Some(store) => store.remove().map_err(state_err(&self.name)),
            None => Ok(()),
        }
    }
}
