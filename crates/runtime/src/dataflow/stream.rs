//! Streams and the operators a job applies to them: re-partitioning, element-wise operators,
//! windows, iteration, epoch snapshots and sinks. Each operator method adds a vertex to the
//! builder and registers the factory of its instances ([`crate::operators::OperatorVertex`]).

use super::edges::{key_hash, make_output, Consumers, PartitionSpec};
use super::{with_output, Builder, Dataflow, Role};
use crate::net::link::Wiring;
use crate::operators::chain::{Chained, ChainedVertex};
use crate::operators::epoch_snapshot::{EpochSnapshot, EpochSpec};
use crate::operators::iterate::{Iterate, Iteration};
use crate::operators::process::Process;
use crate::operators::sink::{Sink, SinkOp};
use crate::operators::unary::Unary;
use crate::operators::window::Window;
use crate::operators::{Operator, OperatorVertex};
use crate::port::chained::{ChainCounts, ChainedEdge};
use crate::port::OutputPort;
use crate::worker::ctx::WorkerCtx;
use std::cell::RefCell;
use std::hash::Hash;
use std::rc::Rc;
use std::sync::Arc;
use xorflow_core::{
    Aggregate, ComponentId, Data, Element, IntervalJoin, JoinSide, KeyedProcess, SessionWindows,
    VertexId, WindowResult, WindowSpec,
};
use xorflow_tracking::Time;

/// Shares a chained stage's counts between the stage made for a worker (by its producer's
/// output port) and the stand-in vertex made right after it for the same worker
/// (`execute/mod.rs` makes a worker's vertices in topological order, so the producer's, which
/// makes the stage, comes first). Only [`Stream::chained`] uses it.
type CountsSlot = Rc<RefCell<Option<Arc<ChainCounts>>>>;

/// What [`Stream::window`] returns: the windows' results and the late side output.
pub struct Windowed<K, O, T> {
    /// One [`WindowResult`] per (window, key), and an updated one per late element taken.
    pub results: Stream<WindowResult<K, O>>,
    /// Elements past the allowed lateness of all their windows.
    pub late: Stream<T>,
}

/// What [`Stream::process`] returns: the function's results and its side output.
pub struct Processed<O, S> {
    /// What the function emitted.
    pub results: Stream<O>,
    /// What it sent to the side output.
    pub side: Stream<S>,
}

/// See [`Stream::keyed`].
struct Keyed<T, K> {
    input: Stream<T>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    group: Arc<dyn Fn(&K) -> xorflow_state::KeyGroup + Send + Sync>,
    rank: usize,
}

/// A typed stream of elements produced by one vertex.
pub struct Stream<T> {
    pub(super) b: Rc<RefCell<Builder>>,
    pub(super) vertex: VertexId,
    pub(super) consumers: Consumers<T>,
    pub(super) partition: PartitionSpec<T>,
    /// The next vertex joins this stream's vertex's component.
    pub(super) join: bool,
}

impl<T> Stream<T> {
    /// The output stream of `vertex`, forward-partitioned, in a component of its own by default.
    pub(super) fn new(b: &Rc<RefCell<Builder>>, vertex: VertexId, consumers: Consumers<T>) -> Self {
        Stream {
            b: b.clone(),
            vertex,
            consumers,
            partition: PartitionSpec::Forward,
            join: false,
        }
    }
}

impl<T> Clone for Stream<T> {
    fn clone(&self) -> Self {
        Stream {
            b: self.b.clone(),
            vertex: self.vertex,
            consumers: self.consumers.clone(),
            partition: self.partition.clone(),
            join: self.join,
        }
    }
}

impl<T: Data> Stream<T> {
    /// Builds a new element-wise vertex fed by this stream; `logic(worker)` makes each instance's
    /// per-batch function. Fed by a forward edge, it is chained into its producer unless the
    /// configuration says otherwise (`RuntimeConfig::chaining`, `port/chained.rs`).
    fn unary<O, F, L>(&self, name: &str, mut logic: L) -> Stream<O>
    where
        O: Data,
        F: FnMut(Vec<Element<T>>, &mut OutputPort<O>, &mut WorkerCtx) + Send + 'static,
        L: FnMut(usize) -> F + 'static,
    {
        let chain = self.b.borrow().config.chaining;
        if chain && matches!(self.partition, PartitionSpec::Forward) {
            return self.chained(name, move |w| Unary::new(logic(w)));
        }
        self.one_to_one(name, Role::Plain, self, move |w, _, _| Unary::new(logic(w)))
    }

    /// Adds a stateless element-wise vertex chained into this stream's producer (forward
    /// edge): `make(w)` creates its operator on worker `w`, run from the producer's output port
    /// (`operators/chain.rs`); the worker's list gets a stand-in that reports its counts.
    fn chained<O, Op>(&self, name: &str, mut make: impl FnMut(usize) -> Op + 'static) -> Stream<O>
    where
        O: Data,
        Op: Operator<In = T, Out = OutputPort<O>>,
    {
        debug_assert!(!Op::STATEFUL);
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Plain, 0);
        let consumers: Consumers<O> = Rc::default();
        let counts: CountsSlot = Rc::default();
        let (cons, slot) = (consumers.clone(), counts.clone());
        let stage = move |w: usize, wiring: &Wiring| {
            let out = make_output(&cons, w, wiring);
            let c = Arc::new(ChainCounts::default());
            *slot.borrow_mut() = Some(c.clone());
            ChainedEdge::new(component, Box::new(Chained::new(make(w), out, c)))
        };
        self.connect_chained(vertex, component, Rc::new(RefCell::new(stage)));
        let name = name.to_string();
        self.b.borrow_mut().factories.push(Box::new(move |_, _| {
            let c = counts.borrow_mut().take().unwrap_or_default();
            Box::new(ChainedVertex::new(&name, c))
        }));
        Stream::new(&self.b, vertex, consumers)
    }

    /// Adds a vertex of `role` fed by `input` (this stream, or it re-keyed) and writing one output
    /// stream, which it returns; `make(w, component, &output)` creates the operator of the
    /// instance on worker `w`. Windows and notified vertices get frontier notifications.
    fn one_to_one<O, Op>(
        &self,
        name: &str,
        role: Role,
        input: &Stream<T>,
        mut make: impl FnMut(usize, ComponentId, &OutputPort<O>) -> Op + 'static,
    ) -> Stream<O>
    where
        O: Data,
        Op: Operator<In = T, Out = OutputPort<O>>,
    {
        let notified = !matches!(role, Role::Plain);
        let split = self.instance_components(role, input);
        let (vertex, base) = Dataflow::add_vertex(&self.b, name, 0, self.joined(), role, split);
        self.b.borrow_mut().stateful[vertex] = Op::STATEFUL;
        let input = input.connect(vertex, base);
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            let component = instance_component(base, split, w);
            let op = make(w, component, &output);
            let input = Some(input(w, wiring));
            Box::new(OperatorVertex::new(
                &name, component, op, input, output, notified,
            ))
        })
    }

    fn joined(&self) -> Option<VertexId> {
        self.join.then_some(self.vertex)
    }

    /// Components per instance for a new vertex of `role` fed by `input` (0: one for the
    /// vertex). A window or sink fed by an exchange gets one per instance under trAcker
    /// (`--instance-frontiers`), so an instance's frontier no longer waits for the acks of what
    /// its upstream sent to the other instances: across processes that is a round trip saved
    /// (docs/wan.md, "Instance frontiers"). Not below a window: its deferred output holds one
    /// component of its downstream open (`operators/window.rs`), and not when joining a component.
    fn instance_components(&self, role: Role, input: &Stream<T>) -> usize {
        let bb = self.b.borrow();
        let c = &bb.config;
        let split = c.instance_frontiers
            && crate::progress::mode::runs_tracker(c.tracking)
            && role != Role::Plain
            && !self.join
            && !matches!(input.partition, PartitionSpec::Forward)
            && !bb.deferred[input.vertex];
        if split {
            c.workers * c.cluster.launch_processes()
        } else {
            0
        }
    }

    /// Puts the next vertex into the tracking component of this stream's vertex, so both share one
    /// frontier (docs/design.md, "trAcker requirements": components; a cycle must lie inside one). Fewer components
    /// mean fewer tables and notifications, and coarser notifications.
    ///
    /// # Panics
    /// (When the next vertex is added) if this stream comes out of a window: the window's deferred
    /// output would hold its own component's frontier back forever.
    pub fn same_component(&self) -> Stream<T> {
        Stream {
            join: true,
            ..self.clone()
        }
    }

    /// Re-partitions round-robin before the next vertex: element by element over all its instances.
    pub fn rebalance(&self) -> Stream<T> {
        Stream {
            partition: PartitionSpec::RoundRobin,
            ..self.clone()
        }
    }

    /// Sends every element to instance 0 of the next vertex (worker 0, in process 0): a single
    /// writer for small results, e.g. a job's output file.
    pub fn gather(&self) -> Stream<T> {
        Stream {
            partition: PartitionSpec::Hash(Arc::new(|_| 0)),
            ..self.clone()
        }
    }

    /// Re-partitions by key hash before the next vertex: elements with equal keys meet at the same
    /// instance.
    pub fn key_by<K: Hash>(&self, key: impl Fn(&T) -> K + Send + Sync + 'static) -> Stream<T> {
        Stream {
            partition: PartitionSpec::Hash(Arc::new(move |x| key_hash(&key(x)))),
            ..self.clone()
        }
    }

    /// A vertex applying `f` to every element; outputs keep the input's time.
    pub fn map<O: Data>(
        &self,
        name: &str,
        f: impl Fn(T) -> O + Send + Sync + 'static,
    ) -> Stream<O> {
        let f = Arc::new(f);
        self.unary(name, move |_| {
            let f = f.clone();
            move |batch: Vec<Element<T>>, out: &mut OutputPort<O>, ctx: &mut WorkerCtx| {
                // Collected in place when `O` has `T`'s layout (std's in-place collect of a
                // vector's own iterator), and then passed on whole (`OutputPort::push_vec`).
                let mapped: Vec<Element<O>> = batch
                    .into_iter()
                    .map(|el| Element::new(el.time, f(el.data)))
                    .collect();
                out.push_vec(mapped, ctx)
            }
        })
    }

    /// A pass-through vertex: `f` sees every batch's elements (in arrival order) and the
    /// instance's [`crate::VertexStats`] (counters and histograms, merged over instances and
    /// processes in the run report), then the elements go on unchanged. For measuring a point
    /// of the graph, e.g. a latency histogram in us: `stats.histogram_mut("latency_us")`.
    pub fn inspect(
        &self,
        name: &str,
        f: impl Fn(&[Element<T>], &mut crate::VertexStats) + Send + Sync + 'static,
    ) -> Stream<T> {
        let f = Arc::new(f);
        self.one_to_one(name, Role::Plain, self, move |_, _, _| {
            let f = f.clone();
            crate::operators::inspect::Inspect::new(
                move |b: &[Element<T>], s: &mut crate::VertexStats| f(b, s),
            )
        })
    }

    /// A vertex keeping the elements for which `p` is true.
    pub fn filter(&self, name: &str, p: impl Fn(&T) -> bool + Send + Sync + 'static) -> Stream<T> {
        let p = Arc::new(p);
        self.unary(name, move |_| {
            let p = p.clone();
            move |batch: Vec<Element<T>>, out: &mut OutputPort<T>, ctx: &mut WorkerCtx| {
                out.push_all(batch.into_iter().filter(|el| p(&el.data)), ctx)
            }
        })
    }

    /// A vertex mapping every element to any number of outputs, all with the input's time.
    pub fn flat_map<O, I>(
        &self,
        name: &str,
        f: impl Fn(T) -> I + Send + Sync + 'static,
    ) -> Stream<O>
    where
        O: Data,
        I: IntoIterator<Item = O>,
    {
        let f = Arc::new(f);
        self.unary(name, move |_| {
            let f = f.clone();
            move |batch: Vec<Element<T>>, out: &mut OutputPort<O>, ctx: &mut WorkerCtx| {
                out.push_all(
                    batch.into_iter().flat_map(|el| {
                        let t = el.time;
                        f(el.data).into_iter().map(move |o| Element::new(t, o))
                    }),
                    ctx,
                )
            }
        })
    }

    /// Keyed event-time tumbling windows of `size` time units (the stream is re-partitioned by
    /// `key` first). For every (window, key) with at least one element, emits one
    /// [`WindowResult`] with time `end - 1` once the window's component frontier reaches `end`
    /// (with `--tracking none`: at end of stream).
    ///
    /// # Panics
    /// If `size == 0`.
    pub fn tumbling_window<K, A>(
        &self,
        name: &str,
        size: Time,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        agg: A,
    ) -> Stream<WindowResult<K, A::Out>>
    where
        K: Hash + Eq + Data,
        A: Aggregate<T>,
        A::Out: Data,
        A::Acc: Data,
    {
        assert!(size > 0, "window '{name}' needs a size of at least 1");
        self.window(name, WindowSpec::tumbling(size), key, agg)
            .results
    }

    /// Keyed sliding (hopping) windows of `size` time units starting every `slide`: as
    /// [`Stream::tumbling_window`], each element counted in every window that holds it.
    ///
    /// # Panics
    /// If `size == 0` or `slide` is not in `1..=size`.
    pub fn sliding_window<K, A>(
        &self,
        name: &str,
        size: Time,
        slide: Time,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        agg: A,
    ) -> Stream<WindowResult<K, A::Out>>
    where
        K: Hash + Eq + Data,
        A: Aggregate<T>,
        A::Out: Data,
        A::Acc: Data,
    {
        self.window(name, WindowSpec::sliding(size, slide), key, agg)
            .results
    }

    /// Keyed event-time windows as `spec` says (tumbling or sliding, allowed lateness, event
    /// time read from the element: `crates/core/src/window.rs`), re-partitioned by `key`.
    /// Returns the results and the late side output: elements past the allowed lateness of
    /// every window they belong to, with the time they travelled with.
    pub fn window<K, A>(
        &self,
        name: &str,
        spec: WindowSpec<T>,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        agg: A,
    ) -> Windowed<K, A::Out, T>
    where
        K: Hash + Eq + Data,
        A: Aggregate<T>,
        A::Out: Data,
        A::Acc: Data,
    {
        let Keyed {
            input,
            key,
            group,
            rank,
        } = self.keyed(key);
        let agg = Arc::new(agg);
        let (state, form) = {
            let b = self.b.borrow();
            (b.config.state.clone(), b.config.window_state)
        };
        let vertex_name = name.to_string();
        let late_consumers: Consumers<T> = Rc::default();
        let late = late_consumers.clone();
        let results = self.two_outputs(name, Role::Window, &input, move |w, wiring, output| {
            // Holds go to the results' components only: late elements are emitted at once.
            let downstream = output.components().collect();
            let window = Window::new(
                &vertex_name,
                spec.clone(),
                downstream,
                key.clone(),
                agg.clone(),
                state.clone(),
                form,
                group.clone(),
                rank,
            );
            (window, make_output(&late, w, wiring))
        });
        let late = Stream::new(&self.b, results.vertex, late_consumers);
        Windowed { results, late }
    }

    /// Runs the keyed process function `f` (`crates/core/src/process.rs`) per key of `key`
    /// (the stream is re-partitioned by it): its state and timers are checkpointed, and a timer
    /// at `t` fires once the vertex's frontier reaches `t`. Returns its results and its side
    /// output.
    pub fn process<K, F>(
        &self,
        name: &str,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        f: F,
    ) -> Processed<F::Out, F::Side>
    where
        K: Hash + Eq + Data,
        F: KeyedProcess<K, T>,
    {
        let Keyed {
            input,
            key,
            group,
            rank,
        } = self.keyed(key);
        let f = Arc::new(f);
        let state = self.b.borrow().config.state.clone();
        let vertex_name = name.to_string();
        let side_consumers: Consumers<F::Side> = Rc::default();
        let side = side_consumers.clone();
        let results = self.two_outputs(name, Role::Window, &input, move |w, wiring, output| {
            let side = make_output(&side, w, wiring);
            // A timer may emit on either output: both are held.
            let downstream = output.components().chain(side.components()).collect();
            let op = Process::new(
                &vertex_name,
                downstream,
                key.clone(),
                f.clone(),
                state.clone(),
                group.clone(),
                rank,
            );
            (op, side)
        });
        let side = Stream::new(&self.b, results.vertex, side_consumers);
        Processed { results, side }
    }

    /// The elements of this stream and `other` in one stream (a vertex reading both; each keeps
    /// its time). Both must come from the same dataflow.
    ///
    /// # Panics
    /// If `other` belongs to another dataflow.
    pub fn union(&self, name: &str, other: &Stream<T>) -> Stream<T> {
        assert!(
            Rc::ptr_eq(&self.b, &other.b),
            "union '{name}': the streams belong to different dataflows"
        );
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Plain, 0);
        let (a, b) = (
            self.connect(vertex, component),
            other.connect(vertex, component),
        );
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            let pass = |batch: Vec<Element<T>>, out: &mut OutputPort<T>, ctx: &mut WorkerCtx| {
                out.push_all(batch.into_iter(), ctx)
            };
            Box::new(OperatorVertex::new(
                &name,
                component,
                Unary::new(pass),
                Some(a(w, wiring).merge(b(w, wiring))),
                output,
                false,
            ))
        })
    }

    /// Keyed interval join with `other` (`crates/core/src/interval_join.rs`): a pair of this
    /// stream's element at time `a` and `other`'s at time `b` with the same key (`key` and
    /// `other_key`) joins when `a + lower <= b <= a + upper`, and `join` gives the result,
    /// emitted once with the later-arriving element's time. State is kept per key until the
    /// frontier passes the interval.
    ///
    /// # Panics
    /// If `lower > upper`, or `other` belongs to another dataflow.
    pub fn interval_join<U, K, O>(
        &self,
        name: &str,
        other: &Stream<U>,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        other_key: impl Fn(&U) -> K + Send + Sync + 'static,
        (lower, upper): (i64, i64),
        join: impl Fn(&T, &U) -> O + Send + Sync + 'static,
    ) -> Stream<O>
    where
        U: Data,
        K: Hash + Eq + Data,
        O: Data,
    {
        let f = IntervalJoin::new(lower, upper, join);
        let left = self.map(&format!("{name}.left"), JoinSide::<T, U>::Left);
        let right = other.map(&format!("{name}.right"), JoinSide::<T, U>::Right);
        let both = left.union(&format!("{name}.union"), &right);
        let key = move |e: &JoinSide<T, U>| match e {
            JoinSide::Left(l) => key(l),
            JoinSide::Right(r) => other_key(r),
        };
        both.process(name, key, f).results
    }

    /// Keyed event-time session windows (`crates/core/src/session.rs`): per key of `key`,
    /// sessions that close `gap` after their last element, with the lateness and event time
    /// `sessions` was given. Returns the results and the late side output. Results are a
    /// changelog: `Some(value)` per session firing or update, `None` (a tombstone) for a fired
    /// session that a late element merged into another.
    pub fn session_window<K, A>(
        &self,
        name: &str,
        sessions: SessionWindows<T, A>,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
    ) -> Windowed<K, Option<A::Out>, T>
    where
        T: Sync,
        K: Hash + Eq + Data,
        A: Aggregate<T>,
        A::Out: Data,
    {
        let p = self.process(name, key, sessions);
        Windowed {
            results: p.results,
            late: p.side,
        }
    }

    /// The pieces of a keyed vertex: this stream re-partitioned by `key`, the key function, its
    /// key groups, and the vertex's rank among those with deferred output.
    fn keyed<K: Hash + Eq + Data>(
        &self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
    ) -> Keyed<T, K> {
        let key: Arc<dyn Fn(&T) -> K + Send + Sync> = Arc::new(key);
        let k2 = key.clone();
        let input = Stream {
            partition: PartitionSpec::Hash(Arc::new(move |x| key_hash(&k2(x)))),
            ..self.clone()
        };
        let groups = xorflow_state::KeyGroups::DEFAULT;
        let group: Arc<dyn Fn(&K) -> xorflow_state::KeyGroup + Send + Sync> =
            Arc::new(move |k: &K| groups.of_hash(key_hash(k)));
        // Vertices with deferred output already built come first among the emitters
        // (`execute/mod.rs`).
        let rank = self.b.borrow().deferred.iter().filter(|d| **d).count();
        Keyed {
            input,
            key,
            group,
            rank,
        }
    }

    /// As [`Stream::one_to_one`] for an operator with a second output (a side output), which
    /// `make` returns beside the operator; returns the first output's stream.
    fn two_outputs<O, S, Op>(
        &self,
        name: &str,
        role: Role,
        input: &Stream<T>,
        mut make: impl FnMut(usize, &Wiring, &OutputPort<O>) -> (Op, OutputPort<S>) + 'static,
    ) -> Stream<O>
    where
        O: Data,
        S: Data,
        Op: Operator<In = T, Out = (OutputPort<O>, OutputPort<S>)>,
    {
        let split = self.instance_components(role, input);
        let (vertex, base) = Dataflow::add_vertex(&self.b, name, 0, self.joined(), role, split);
        self.b.borrow_mut().stateful[vertex] = Op::STATEFUL;
        let input = input.connect(vertex, base);
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            let component = instance_component(base, split, w);
            let (op, side) = make(w, wiring, &output);
            let input = Some(input(w, wiring));
            let notified = true;
            Box::new(OperatorVertex::new(
                &name,
                component,
                op,
                input,
                (output, side),
                notified,
            ))
        })
    }

    /// Iterates every element to a fixpoint: `step` returns [`Iteration::Again`] to send a value
    /// around the loop (round-robin over all instances: a real cycle across workers) or
    /// [`Iteration::Done`] to emit a result; both keep the element's time. The vertex and its loop
    /// form one tracking component, whose frontier passes a time once nothing of that time
    /// circulates. Runs with trAcker only: `--tracking markers` and `none` reject the cycle.
    pub fn iterate<O: Data>(
        &self,
        name: &str,
        step: impl Fn(T) -> Iteration<T, O> + Send + Sync + 'static,
    ) -> Stream<O> {
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Plain, 0);
        let input = self.connect(vertex, component);
        let loop_consumers: Consumers<T> = Rc::default();
        let around = Stream::new(&self.b, vertex, loop_consumers.clone()).rebalance();
        // The loop edge stays inside the vertex's component: it must not split it.
        let loop_input = around.connect(vertex, component);
        let name = name.to_string();
        let step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync> = Arc::new(step);
        with_output(&self.b, vertex, move |w, wiring, output| {
            let feedback = make_output(&loop_consumers, w, wiring);
            Box::new(OperatorVertex::new(
                &name,
                component,
                Iterate::new(step.clone()),
                Some(input(w, wiring).merge(loop_input(w, wiring))),
                (feedback, output),
                false,
            ))
        })
    }

    /// Passes the stream through a vertex that snapshots at epoch boundaries, driven by
    /// notifications (the trAcker paper's state-snapshotting experiment, docs/papers.md; see
    /// [`crate::operators::epoch_snapshot`]): each instance processes only the current epoch,
    /// buffers later ones (withholding their receive tags) until the epoch is complete at this
    /// vertex, then pauses `spec.pause_ns` (the imitated snapshot) and releases the buffer.
    /// Elements keep their times; the partitioning is this stream's.
    ///
    /// # Panics
    /// If a boundary is not a multiple of the granularity, or they are not increasing.
    pub fn epoch_snapshots(&self, name: &str, spec: EpochSpec) -> Stream<T> {
        let g = self.b.borrow().config.granularity;
        assert!(
            spec.boundaries.iter().all(|b| b % g == 0),
            "epoch boundaries of '{name}' must be multiples of the granularity {g}"
        );
        let vertex_name = name.to_string();
        self.one_to_one(name, Role::Notified, self, move |_, component, _| {
            EpochSnapshot::new(&vertex_name, component, spec.clone())
        })
    }

    /// Ends the stream in a sink vertex; `factory(worker)` creates each worker's sink instance.
    pub fn sink<S: Sink<T> + 'static>(
        &self,
        name: &str,
        mut factory: impl FnMut(usize) -> S + 'static,
    ) {
        let split = self.instance_components(Role::Notified, self);
        let (vertex, base) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Notified, split);
        self.b.borrow_mut().stateful[vertex] = SinkOp::<T, S>::STATEFUL;
        let input = self.connect(vertex, base);
        let name = name.to_string();
        let state = self.b.borrow().config.state.clone();
        self.b
            .borrow_mut()
            .factories
            .push(Box::new(move |w, wiring| {
                let op = SinkOp::new(&name, factory(w), state.clone());
                Box::new(OperatorVertex::new(
                    &name,
                    instance_component(base, split, w),
                    op,
                    Some(input(w, wiring)),
                    (),
                    true,
                ))
            }));
    }
}

/// The tracking component of a vertex's instance on global worker `w`: `base`, or with one
/// component per instance (`split` > 0), `base + w`.
fn instance_component(base: ComponentId, split: usize, w: usize) -> ComponentId {
    if split > 0 {
        base + w as ComponentId
    } else {
        base
    }
}
