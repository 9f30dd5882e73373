//! The dataflow API: build a graph of typed streams, then run it on P worker threads.
//!
//! ```
//! use xorflow_runtime::{Dataflow, RuntimeConfig, Source, SourceOutput, SourcePoll, VecSink};
//!
//! struct Numbers(u64);
//! impl Source<u64> for Numbers {
//!     fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
//!         if self.0 == 100 { return SourcePoll::Done; }
//!         out.emit(self.0, self.0);    // time = value
//!         self.0 += 1;
//!         out.heartbeat(self.0);       // nothing below the next value will come
//!         SourcePoll::Ready
//!     }
//! }
//!
//! let df = Dataflow::new(RuntimeConfig::default()).unwrap();
//! let collected = VecSink::shared();
//! df.source("numbers", 1, |_| Numbers(0))
//!     .rebalance()
//!     .map("square", |x| x * x)
//!     .filter("even", |x| x % 2 == 0)
//!     .sink("collect", collected.factory());
//! let report = df.run().unwrap();
//! assert_eq!(collected.take().len(), 50);
//! assert_eq!(report.vertex("square").unwrap().elements_in, 100);
//! ```

use crate::batch::Msg;
use crate::channel::output::{EdgeOutput, OutLink, OutputPort, Partitioner};
use crate::channel::{channel, Channel, InLink, InputPort};
use crate::config::{RuntimeConfig, TrackingMode};
use crate::measure::stats::VertexStats;
use crate::measure::traffic::Traffic;
use crate::net::frame::ChannelId;
use crate::net::link::{self, RemoteOut, Wiring};
use crate::net::transport::{self, Delivery, Failure, Identity};
use crate::operators::epoch_snapshot::{EpochSnapshotVertex, EpochSpec};
use crate::operators::iterate::{IterateVertex, Iteration};
use crate::operators::sink::{Sink, SinkVertex};
use crate::operators::source::{Source, SourceVertex};
use crate::operators::unary::UnaryVertex;
use crate::operators::window::WindowVertex;
use crate::operators::Vertex;
use crate::progress::process_acker::{AckPolicy, ProcessAcker, ShardRoute};
use crate::progress::tracker_agent::{TrackerAgent, TrackerStats};
use crate::report::ProcessReport;
use crate::report::{RunError, RunReport};
use crate::wake::Unparkers;
use crate::worker::ctx::WorkerCtx;
use crate::worker::Worker;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use xorflow_core::{
    Aggregate, Data, EdgeDesc, Element, GraphDesc, Partitioning, VertexDesc, VertexId, WindowResult,
};
use xorflow_tracking::{ComponentId, Granularity, ShardMap, SourceId, Time, Topology, Tracker};

/// Creates the instance of a vertex for global worker `w`, wiring its channels.
type Factory = Box<dyn FnMut(usize, &Wiring) -> Box<dyn Vertex>>;

/// The consumer edges of a stream, filled in as downstream vertices are added.
type Consumers<T> = Rc<RefCell<Vec<EdgeSpec<T>>>>;

struct Builder {
    config: RuntimeConfig,
    graph: GraphDesc,
    factories: Vec<Factory>,
    sources: usize,
    /// Tracking components created so far.
    components: ComponentId,
    /// Per vertex: it emits deferred output (windows), so nothing may share its component.
    deferred: Vec<bool>,
    /// Per component: some vertex acts on its frontier (a window or sink), so trackers notify
    /// it. Known from the graph, so a tracker process without workers knows it too.
    interest: Vec<bool>,
}

/// What a vertex does with tracking, as far as the builder cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Passes elements on.
    Plain,
    /// Acts on its frontier and emits deferred output (a window).
    Window,
    /// Acts on its frontier (a sink, a snapshot vertex).
    Notified,
}

/// A dataflow under construction. Create streams from sources, transform them, end them in sinks,
/// then [`Dataflow::run`] it. Every vertex is its own tracking component, numbered in creation order,
/// unless [`Stream::same_component`] puts the next vertex into its upstream vertex's component.
pub struct Dataflow {
    b: Rc<RefCell<Builder>>,
}

enum PartitionSpec<T> {
    Forward,
    RoundRobin,
    Hash(Arc<dyn Fn(&T) -> u64 + Send + Sync>),
}

impl<T> Clone for PartitionSpec<T> {
    fn clone(&self) -> Self {
        match self {
            PartitionSpec::Forward => PartitionSpec::Forward,
            PartitionSpec::RoundRobin => PartitionSpec::RoundRobin,
            PartitionSpec::Hash(h) => PartitionSpec::Hash(h.clone()),
        }
    }
}

impl<T> PartitionSpec<T> {
    fn kind(&self) -> Partitioning {
        match self {
            PartitionSpec::Forward => Partitioning::Forward,
            PartitionSpec::RoundRobin => Partitioning::RoundRobin,
            PartitionSpec::Hash(_) => Partitioning::Hash,
        }
    }
}

/// The in-process queues of one edge, `[sender local worker][receiver local worker]`, made when
/// the first instance of either end is created.
type LocalChannels<T> = Arc<OnceLock<Vec<Vec<Channel<T>>>>>;

/// A consumer edge of a stream.
struct EdgeSpec<T> {
    edge: u32,
    component: ComponentId,
    partition: PartitionSpec<T>,
    channels: LocalChannels<T>,
}

fn local_channels<'a, T>(c: &'a LocalChannels<T>, wiring: &Wiring) -> &'a Vec<Vec<Channel<T>>> {
    c.get_or_init(|| {
        (0..wiring.workers)
            .map(|_| {
                (0..wiring.workers)
                    .map(|_| channel(wiring.capacity))
                    .collect()
            })
            .collect()
    })
}

fn remote_send<T: Data>(r: &RemoteOut, m: Msg<T>) -> Result<u64, Msg<T>> {
    r.try_send(m)
}

/// A typed stream of elements produced by one vertex.
pub struct Stream<T> {
    b: Rc<RefCell<Builder>>,
    vertex: VertexId,
    consumers: Consumers<T>,
    partition: PartitionSpec<T>,
    /// The next vertex joins this stream's vertex's component.
    join: bool,
}

impl<T> Stream<T> {
    /// The output stream of `vertex`, forward-partitioned, in a component of its own by default.
    fn new(b: &Rc<RefCell<Builder>>, vertex: VertexId, consumers: Consumers<T>) -> Self {
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

/// Mixes a 64-bit hash so its low bits are usable for `mod P` (SplitMix64's finalizer).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

fn key_hash<K: Hash>(k: &K) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    k.hash(&mut h);
    mix(h.finish())
}

impl Dataflow {
    /// An empty dataflow for `config`.
    ///
    /// # Errors
    /// An invalid configuration, naming the field.
    pub fn new(config: RuntimeConfig) -> Result<Self, RunError> {
        config.validate().map_err(RunError::Config)?;
        Ok(Dataflow {
            b: Rc::new(RefCell::new(Builder {
                config,
                graph: GraphDesc::default(),
                factories: Vec::new(),
                sources: 0,
                components: 0,
                deferred: Vec::new(),
                interest: Vec::new(),
            })),
        })
    }

    /// The configuration this dataflow runs with.
    pub fn config(&self) -> RuntimeConfig {
        self.b.borrow().config.clone()
    }

    /// Adds a vertex in a new component, or in `join`'s component.
    fn add_vertex(
        b: &Rc<RefCell<Builder>>,
        name: &str,
        instances: usize,
        join: Option<VertexId>,
        role: Role,
    ) -> (VertexId, ComponentId) {
        let mut bb = b.borrow_mut();
        assert!(
            !bb.graph.vertices.iter().any(|v| v.name == name),
            "vertex name '{name}' is used twice"
        );
        let component = match join {
            Some(up) => {
                assert!(
                    !bb.deferred[up],
                    "vertex '{name}' cannot share the tracking component of '{}': a window's \
                     deferred output holds a slot of its downstream component open, which would \
                     then block its own frontier",
                    bb.graph.vertices[up].name
                );
                bb.graph.vertices[up].component
            }
            None => {
                bb.components += 1;
                bb.interest.push(false);
                bb.components - 1
            }
        };
        if role != Role::Plain {
            bb.interest[component as usize] = true;
        }
        let id = bb.graph.vertices.len();
        bb.graph.vertices.push(VertexDesc {
            name: name.to_string(),
            component,
            is_source: instances > 0,
            source_instances: instances,
        });
        bb.deferred.push(role == Role::Window);
        (id, component)
    }

    /// A source vertex with `instances` source instances (at least 1), spread over the workers
    /// round-robin (instance `i` runs on worker `i mod P`); `factory(i)` creates instance `i`.
    /// Each instance heartbeats on its own.
    ///
    /// # Panics
    /// If `instances == 0` or the name is already used.
    pub fn source<T, S, F>(&self, name: &str, instances: usize, mut factory: F) -> Stream<T>
    where
        T: Data,
        S: Source<T> + 'static,
        F: FnMut(usize) -> S + 'static,
    {
        assert!(instances > 0, "source '{name}' needs at least one instance");
        let (vertex, _) = Self::add_vertex(&self.b, name, instances, None, Role::Plain);
        let first_id = {
            let mut bb = self.b.borrow_mut();
            let id = bb.sources;
            bb.sources += instances;
            id
        };
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            let peers = wiring.total_workers();
            let mine: Vec<(SourceId, Box<dyn Source<T>>)> = (0..instances)
                .filter(|i| i % peers == w)
                .map(|i| {
                    (
                        (first_id + i) as SourceId,
                        Box::new(factory(i)) as Box<dyn Source<T>>,
                    )
                })
                .collect();
            Box::new(SourceVertex::new(&name, mine, output))
        })
    }

    /// The logical graph built so far.
    pub fn graph(&self) -> GraphDesc {
        self.b.borrow().graph.clone()
    }

    /// Runs the dataflow to completion on `config.workers` threads (plus one tracker thread with
    /// trAcker) and reports counters, traffic and latency.
    ///
    /// # Errors
    /// [`RunError::Vertex`] naming the vertex/worker that failed (e.g. a sink's I/O error),
    /// [`RunError::Panic`] if user code panicked, [`RunError::Tracker`] on a malformed flush.
    pub fn run(self) -> Result<RunReport, RunError> {
        // Streams may outlive the run; they only share the builder, which is emptied here.
        let mut bb = self.b.borrow_mut();
        let b = Builder {
            config: bb.config.clone(),
            graph: std::mem::take(&mut bb.graph),
            factories: std::mem::take(&mut bb.factories),
            sources: bb.sources,
            components: bb.components,
            deferred: std::mem::take(&mut bb.deferred),
            interest: std::mem::take(&mut bb.interest),
        };
        drop(bb);
        run_built(b)
    }
}

/// Registers the factory of `vertex`'s instances: `make(w, wiring, output)` builds the instance for
/// global worker `w` around its output port. Returns the vertex's output stream.
fn with_output<O: Data>(
    b: &Rc<RefCell<Builder>>,
    vertex: VertexId,
    mut make: impl FnMut(usize, &Wiring, OutputPort<O>) -> Box<dyn Vertex> + 'static,
) -> Stream<O> {
    let consumers: Consumers<O> = Rc::default();
    let cons = consumers.clone();
    b.borrow_mut().factories.push(Box::new(move |w, wiring| {
        make(w, wiring, make_output(&cons, w, wiring))
    }));
    Stream::new(b, vertex, consumers)
}

fn make_output<T: Data>(consumers: &Consumers<T>, w: usize, wiring: &Wiring) -> OutputPort<T> {
    let wl = wiring
        .local(w)
        .expect("instances are made for local workers");
    let edges = consumers
        .borrow()
        .iter()
        .map(|e| {
            let chans = local_channels(&e.channels, wiring);
            let peers = wiring.total_workers();
            let partitioner = match &e.partition {
                PartitionSpec::Forward => Partitioner::Forward,
                // Stagger starting targets so workers do not all pick the same receiver first.
                PartitionSpec::RoundRobin => Partitioner::RoundRobin { next: w % peers },
                PartitionSpec::Hash(h) => Partitioner::Hash(h.clone()),
            };
            let links = match e.partition {
                PartitionSpec::Forward => vec![OutLink::Local(wl, chans[wl][wl].clone())],
                _ => (0..peers)
                    .map(|r| match wiring.local(r) {
                        Some(rl) => OutLink::Local(rl, chans[wl][rl].clone()),
                        None => OutLink::Remote(
                            wiring.remote_out(ChannelId {
                                edge: e.edge,
                                from: w as u32,
                                to: r as u32,
                            }),
                            remote_send::<T>,
                        ),
                    })
                    .collect(),
            };
            EdgeOutput::new(e.component, partitioner, links)
        })
        .collect();
    OutputPort::new(edges)
}

impl<T: Data> Stream<T> {
    /// Connects this stream to a new vertex; returns a function giving the vertex's input port on
    /// each (global) worker.
    fn connect(
        &self,
        to: VertexId,
        component: ComponentId,
    ) -> impl Fn(usize, &Wiring) -> InputPort<T> {
        let forward = matches!(self.partition, PartitionSpec::Forward);
        let channels: LocalChannels<T> = Arc::default();
        let edge = {
            let mut bb = self.b.borrow_mut();
            bb.graph.edges.push(EdgeDesc {
                from: self.vertex,
                to,
                partitioning: self.partition.kind(),
            });
            bb.graph.edges.len() as u32 - 1
        };
        self.consumers.borrow_mut().push(EdgeSpec {
            edge,
            component,
            partition: self.partition.clone(),
            channels: channels.clone(),
        });
        move |w, wiring| {
            let wl = wiring
                .local(w)
                .expect("instances are made for local workers");
            let chans = local_channels(&channels, wiring);
            if forward {
                InputPort::new(vec![chans[wl][wl].clone()])
            } else {
                InputPort::with_links(
                    (0..wiring.total_workers())
                        .map(|s| match wiring.local(s) {
                            Some(sl) => InLink::Local(chans[sl][wl].clone()),
                            None => InLink::Remote(
                                wiring.remote_in(ChannelId {
                                    edge,
                                    from: s as u32,
                                    to: w as u32,
                                }),
                                link::decode::<T>,
                            ),
                        })
                        .collect(),
                )
            }
        }
    }

    /// Builds a new element-wise vertex fed by this stream; `logic(worker)` makes each instance's
    /// per-batch function.
    fn unary<O, F, L>(&self, name: &str, mut logic: L) -> Stream<O>
    where
        O: Data,
        F: FnMut(Vec<Element<T>>, &mut OutputPort<O>, &mut WorkerCtx) + Send + 'static,
        L: FnMut(usize) -> F + 'static,
    {
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Plain);
        let input = self.connect(vertex, component);
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            Box::new(UnaryVertex::new(
                &name,
                component,
                input(w, wiring),
                output,
                logic(w),
            ))
        })
    }

    fn joined(&self) -> Option<VertexId> {
        self.join.then_some(self.vertex)
    }

    /// Puts the next vertex into the tracking component of this stream's vertex, so both share one
    /// frontier (DESIGN.md section 2: components; a cycle must lie inside one). Fewer components
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
                out.push_all(
                    batch
                        .into_iter()
                        .map(|el| Element::new(el.time, f(el.data))),
                    ctx,
                )
            }
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
    {
        assert!(size > 0, "window '{name}' needs a size of at least 1");
        let key: Arc<dyn Fn(&T) -> K + Send + Sync> = Arc::new(key);
        let k2 = key.clone();
        let keyed = Stream {
            partition: PartitionSpec::Hash(Arc::new(move |x| key_hash(&k2(x)))),
            ..self.clone()
        };
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Window);
        let input = keyed.connect(vertex, component);
        let name = name.to_string();
        let agg = Arc::new(agg);
        with_output(&self.b, vertex, move |w, wiring, output| {
            Box::new(WindowVertex::new(
                &name,
                component,
                size,
                input(w, wiring),
                output,
                key.clone(),
                agg.clone(),
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
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Plain);
        let input = self.connect(vertex, component);
        let loop_consumers: Consumers<T> = Rc::default();
        let around = Stream::new(&self.b, vertex, loop_consumers.clone()).rebalance();
        // The loop edge stays inside the vertex's component: it must not split it.
        let loop_input = around.connect(vertex, component);
        let name = name.to_string();
        let step: Arc<dyn Fn(T) -> Iteration<T, O> + Send + Sync> = Arc::new(step);
        with_output(&self.b, vertex, move |w, wiring, output| {
            Box::new(IterateVertex::new(
                &name,
                component,
                input(w, wiring).merge(loop_input(w, wiring)),
                make_output(&loop_consumers, w, wiring),
                output,
                step.clone(),
            ))
        })
    }

    /// Passes the stream through a vertex that snapshots at epoch boundaries, driven by
    /// notifications (seed 000's state-snapshotting experiment; see
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
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Notified);
        let input = self.connect(vertex, component);
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            Box::new(EpochSnapshotVertex::new(
                &name,
                component,
                input(w, wiring),
                output,
                spec.clone(),
            ))
        })
    }

    /// Ends the stream in a sink vertex; `factory(worker)` creates each worker's sink instance.
    pub fn sink<S: Sink<T> + 'static>(
        &self,
        name: &str,
        mut factory: impl FnMut(usize) -> S + 'static,
    ) {
        let (vertex, component) =
            Dataflow::add_vertex(&self.b, name, 0, self.joined(), Role::Notified);
        let input = self.connect(vertex, component);
        let name = name.to_string();
        self.b
            .borrow_mut()
            .factories
            .push(Box::new(move |w, wiring| {
                Box::new(SinkVertex::new(
                    &name,
                    component,
                    input(w, wiring),
                    factory(w),
                ))
            }));
    }
}

/// A sink that collects every element into a shared vector (tests and small jobs).
pub struct VecSink<T> {
    shared: Arc<Mutex<Vec<Element<T>>>>,
}

/// Handle to the vector [`VecSink`] instances share.
pub struct SharedVec<T> {
    shared: Arc<Mutex<Vec<Element<T>>>>,
}

impl<T> VecSink<T> {
    /// A new shared vector to create sinks from.
    #[allow(clippy::new_ret_no_self)]
    pub fn shared() -> SharedVec<T> {
        SharedVec {
            shared: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<T: Send + 'static> SharedVec<T> {
    /// A sink factory for [`Stream::sink`].
    pub fn factory(&self) -> impl FnMut(usize) -> VecSink<T> + 'static {
        let shared = self.shared.clone();
        move |_| VecSink {
            shared: shared.clone(),
        }
    }

    /// Takes everything collected so far.
    pub fn take(&self) -> Vec<Element<T>> {
        std::mem::take(&mut *self.shared.lock().expect("sink mutex poisoned"))
    }
}

impl<T: Send> Sink<T> for VecSink<T> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), String> {
        self.shared
            .lock()
            .map_err(|_| "sink mutex poisoned".to_string())?
            .extend(batch);
        Ok(())
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A hash of everything every process must agree on: the graph and the knobs that shape the
/// wiring and tracking. The handshake compares it.
fn job_id(graph: &GraphDesc, c: &RuntimeConfig, processes: usize) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    // Not the launch itself: it names this process's own index and hostfile path.
    format!(
        "{graph:?}|{}|{:?}|{}|{}|{}|{processes}|{}|{}",
        c.workers,
        c.tracking,
        c.granularity,
        c.tracker_shards,
        c.channel_capacity,
        c.cluster.tracker_processes,
        c.job_key
    )
    .hash(&mut h);
    mix(h.finish())
}

/// The process hosting tracker shard `k`: dedicated tracker process `k mod T` after the worker
/// processes, or worker process `k mod N` without tracker processes.
fn shard_host(k: usize, worker_processes: usize, tracker_processes: usize) -> usize {
    if tracker_processes > 0 {
        worker_processes + k % tracker_processes
    } else {
        k % worker_processes
    }
}

fn run_built(mut b: Builder) -> Result<RunReport, RunError> {
    let config = b.config.clone();
    if config.tracking != TrackingMode::Tracker {
        if let Some(cycle) = b.graph.find_cycle() {
            return Err(RunError::Config(format!(
                "tracking '{}' cannot run a cyclic graph (cycle: {}): an instance would wait \
                 for a {} that depends on its own output; use --tracking tracker",
                config.tracking.name(),
                cycle.join(" -> "),
                if config.tracking == TrackingMode::Markers {
                    "marker"
                } else {
                    "end-of-stream marker"
                }
            )));
        }
    }
    let components = b.graph.components();
    let topology = Topology::new(b.graph.component_upstream()).map_err(RunError::Config)?;
    let tracker_processes = config.cluster.tracker_processes;
    let mut cluster = crate::net::cluster::resolve(&config.cluster).map_err(RunError::Cluster)?;
    let processes = cluster.processes();
    // Processes 0..worker_processes run workers; the rest host tracker shards only.
    let worker_processes = processes - tracker_processes;
    let me = cluster.process;
    let is_tracker_process = me >= worker_processes;
    let w_local = if is_tracker_process {
        0
    } else {
        config.workers
    };
    let unparkers = Arc::new(Unparkers::new(w_local));
    let abort = Arc::new(AtomicBool::new(false));
    let tracking = config.tracking == TrackingMode::Tracker;

    // One frame queue per peer process; its receiver goes to the transport's writer.
    let mut peer_txs = Vec::new();
    let mut peer_rxs = Vec::new();
    for j in 0..processes {
        if j == me {
            peer_txs.push(None);
            peer_rxs.push(None);
        } else {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            peer_txs.push(Some(tx));
            peer_rxs.push(Some(rx));
        }
    }
    let peers: Vec<Option<link::PeerTx>> = peer_txs
        .iter()
        .enumerate()
        .map(|(j, t)| t.clone().map(|t| link::PeerTx::new(j, t)))
        .collect();
    let remote_peers: Vec<link::PeerTx> = peers.iter().flatten().cloned().collect();
    let wiring = Wiring::new(
        me,
        worker_processes,
        config.workers,
        peers.clone(),
        config.channel_capacity,
    );

    let mut frontier_txs = Vec::new();
    let mut frontier_rxs = Vec::new();
    for _ in 0..w_local {
        let (tx, rx) = crossbeam_channel::unbounded();
        frontier_txs.push(tx);
        frontier_rxs.push(rx);
    }
    let mut instances: Vec<Vec<Box<dyn Vertex>>> = wiring
        .local_workers()
        .map(|w| b.factories.iter_mut().map(|f| f(w, &wiring)).collect())
        .collect();
    let interest = b.interest.clone();
    debug_assert!(instances
        .iter()
        .flatten()
        .all(|v| v.notified_component().is_none_or(|c| interest[c as usize])));
    // Frontier frames go to the other worker processes (tracker processes have no workers).
    let worker_peers: Vec<link::PeerTx> = remote_peers
        .iter()
        .filter(|p| p.process < worker_processes)
        .cloned()
        .collect();
    let shards = config.tracker_shards;
    let mut agents: Vec<Option<Arc<TrackerAgent>>> = vec![None; shards];
    let mut acker = None;
    if tracking {
        let g = Granularity::new(config.granularity);
        let mut routes = Vec::new();
        for (k, agent) in agents.iter_mut().enumerate() {
            let host = shard_host(k, worker_processes, tracker_processes);
            if host == me {
                let tracker = Tracker::sharded(
                    g,
                    topology.clone(),
                    b.sources,
                    ShardMap::new(shards as u64, k as u64),
                );
                let a = Arc::new(TrackerAgent::new(
                    k as u32,
                    tracker,
                    interest.clone(),
                    frontier_txs.clone(),
                    unparkers.clone(),
                    worker_peers.clone(),
                ));
                *agent = Some(a.clone());
                routes.push(ShardRoute::Local(a));
            } else {
                routes.push(ShardRoute::Remote(
                    peers[host]
                        .clone()
                        .expect("remote shard host has a connection"),
                ));
            }
        }
        acker = Some(Arc::new(ProcessAcker::new(
            g,
            routes,
            AckPolicy {
                interval_ns: config.ack_flush_interval.as_nanos() as u64,
                count: config.ack_flush_count,
                multiplier: config.ack_multiplier,
                flush_on_idle: config.ack_flush_on_idle,
            },
        )));
    }

    let failure = Failure {
        message: Arc::default(),
        abort: abort.clone(),
        unparkers: unparkers.clone(),
    };
    let transport = match cluster.listener.take() {
        None => None,
        Some(listener) => {
            let id = Identity {
                process: me,
                addrs: cluster.addrs.clone(),
                job_id: job_id(&b.graph, &config, processes),
                token: cluster.token.clone(),
            };
            let delivery = Delivery {
                routes: wiring.take_routes(),
                shards: agents.clone(),
                inboxes: frontier_txs.clone(),
                unparkers: unparkers.clone(),
            };
            let t = transport::start(
                id,
                listener,
                &config.cluster,
                peer_rxs,
                peer_txs,
                delivery,
                failure.clone(),
            );
            match t {
                Ok(t) => Some(t),
                Err(e) => {
                    reap(&mut cluster.children, true);
                    return Err(RunError::Cluster(e));
                }
            }
        }
    };
    drop(frontier_txs);

    let mut workers = Vec::new();
    for (wl, frx) in frontier_rxs.into_iter().enumerate() {
        let w = me * w_local + wl;
        workers.push(Worker {
            ctx: WorkerCtx::new(
                w,
                wl,
                wiring.total_workers(),
                &config,
                components,
                unparkers.clone(),
            ),
            vertices: std::mem::take(&mut instances[wl]),
            acker: acker.clone(),
            from_tracker: tracking.then_some(frx),
            abort: abort.clone(),
            last_handoff_ns: crate::measure::clock::now_ns(),
        });
    }
    drop(wiring);
    let start = Instant::now();
    let cpu_start_ns = crate::measure::clock::process_cpu_ns();
    let wait_start_ns = crate::measure::clock::run_queue_wait_ns();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                let w = worker.ctx.index;
                let abort = abort.clone();
                std::thread::Builder::new()
                    .name(format!("xorflow-worker-{w}"))
                    .spawn_scoped(s, move || {
                        let r =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
                        let r = match r {
                            Ok(Ok(x)) => Ok(x),
                            Ok(Err(e)) => Err(RunError::Vertex {
                                worker: w,
                                message: e,
                            }),
                            Err(p) => Err(RunError::Panic {
                                worker: w,
                                message: panic_message(p),
                            }),
                        };
                        if r.is_err() {
                            abort.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread result"))
            .collect()
    });
    if is_tracker_process {
        // No workers here: the process is finished once every shard it hosts has seen the end
        // of every component (nothing more will arrive or need notifying), or the job failed.
        while !abort.load(Ordering::Relaxed) && !agents.iter().flatten().all(|a| a.is_done()) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let elapsed = start.elapsed();
    // Report the root cause: a real error before the "aborted" echoes of other workers, and a
    // dead peer before the local echoes it caused.
    let mut first_err: Option<RunError> = None;
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(x) => ok.push(x),
            Err(e) => {
                if first_err
                    .as_ref()
                    .is_none_or(|f| f.is_echo() && !e.is_echo())
                {
                    first_err = Some(e);
                }
            }
        }
    }
    if first_err.as_ref().is_none_or(RunError::is_echo) {
        if let Some(m) = failure.message.lock().expect("failure lock").clone() {
            first_err = Some(RunError::Cluster(m));
        }
    }
    if let Some(e) = first_err {
        if let Some(t) = transport {
            t.abort(format!("process {me}: {e}"));
        }
        reap(&mut cluster.children, true);
        return Err(e);
    }
    let mut vertices: Vec<VertexStats> = b
        .graph
        .vertices
        .iter()
        .map(|v| VertexStats::new(&v.name))
        .collect();
    let mut traffic = Traffic::default();
    for r in &mut ok {
        traffic += r.traffic;
        for (i, s) in r.vertices.iter_mut().enumerate() {
            // Moved, not copied: up to 24 MiB per instance.
            vertices[i].slot_log.append(&mut s.slot_log);
            vertices[i].merge(s);
        }
    }
    for v in &mut vertices {
        v.settle_slot_log();
    }
    let mut tracker: Option<TrackerStats> = None;
    for a in agents.iter().flatten() {
        tracker
            .get_or_insert_with(TrackerStats::default)
            .merge(&a.stats());
    }
    if let Some(t) = &tracker {
        traffic += t.traffic;
    }
    if let Some(a) = &acker {
        traffic += a.traffic();
    }
    let mut local = ProcessReport {
        process: me,
        elapsed_s: elapsed.as_secs_f64(),
        cpu_s: (crate::measure::clock::process_cpu_ns() - cpu_start_ns) as f64 * 1e-9,
        run_queue_wait_s: crate::measure::clock::run_queue_wait_ns().saturating_sub(wait_start_ns)
            as f64
            * 1e-9,
        traffic,
        vertices: vertices.iter().map(VertexStats::to_wire).collect(),
        tracker: tracker.clone(),
    };
    let mut per_process = Vec::new();
    let mut elapsed = elapsed;
    if let Some(t) = transport {
        let payload = if me == 0 {
            Vec::new()
        } else {
            serde_json::to_vec(&local).expect("report serializes")
        };
        let outcome = t.finish(payload).map_err(|e| {
            reap(&mut cluster.children, true);
            RunError::Cluster(e)
        })?;
        local.traffic += outcome.traffic;
        traffic += outcome.traffic;
        per_process.push(local.clone());
        if me == 0 {
            for (j, r) in outcome.reports.into_iter().enumerate() {
                let Some(r) = r else { continue };
                let pr: ProcessReport = serde_json::from_slice(&r).map_err(|e| {
                    RunError::Cluster(format!("process {j} sent an unreadable report: {e}"))
                })?;
                traffic += pr.traffic;
                for (v, w) in vertices.iter_mut().zip(&pr.vertices) {
                    v.merge(&VertexStats::from_wire(w));
                }
                if let Some(ts) = &pr.tracker {
                    tracker.get_or_insert_with(TrackerStats::default).merge(ts);
                }
                elapsed = elapsed.max(Duration::from_secs_f64(pr.elapsed_s));
                per_process.push(pr);
            }
        }
        if let Some(e) = reap(&mut cluster.children, false) {
            return Err(RunError::Cluster(e));
        }
    }
    Ok(RunReport {
        elapsed,
        workers: w_local,
        processes,
        process: me,
        tracking: config.tracking,
        granularity: config.granularity,
        tracker_shards: shards,
        tracker_processes,
        traffic,
        per_process,
        vertices,
        tracker,
        graph: b.graph,
    })
}

/// Waits for (or with `kill`, kills) the children of a local launch; names the first that failed.
fn reap(children: &mut Vec<std::process::Child>, kill: bool) -> Option<String> {
    let mut err = None;
    for (i, c) in children.iter_mut().enumerate() {
        if kill {
            let _ = c.kill();
        }
        match c.wait() {
            Ok(st) if !st.success() && !kill => {
                err.get_or_insert(format!("process {} exited with {st}", i + 1));
            }
            _ => {}
        }
    }
    children.clear();
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::source::{SourceOutput, SourcePoll};

    struct Count(u64, u64);
    impl Source<u64> for Count {
        fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
            if self.0 == self.1 {
                return SourcePoll::Done;
            }
            out.emit(self.0, self.0);
            self.0 += 1;
            out.heartbeat(self.0);
            SourcePoll::Ready
        }
    }

    struct Sum;
    impl Aggregate<u64> for Sum {
        type Acc = u64;
        type Out = u64;
        fn init(&self) -> u64 {
            0
        }
        fn add(&self, a: &mut u64, v: &u64) {
            *a += v;
        }
        fn finish(&self, a: u64) -> u64 {
            a
        }
    }

    #[test]
    fn same_component_groups_vertices_and_windows_stay_exact() {
        let df = Dataflow::new(RuntimeConfig::default()).unwrap();
        let out = VecSink::shared();
        df.source("src", 1, |_| Count(0, 1000))
            .same_component()
            .map("double", |x| x * 2)
            .rebalance()
            .same_component()
            .map("inc", |x| x + 1)
            .tumbling_window("w", 100, |_| 0u8, Sum)
            .sink("out", out.factory());
        let g = df.graph();
        let comps: Vec<ComponentId> = g.vertices.iter().map(|v| v.component).collect();
        assert_eq!(comps, vec![0, 0, 0, 1, 2]);
        assert_eq!(g.component_upstream(), vec![vec![], vec![0], vec![1]]);
        let report = df.run().unwrap();
        let mut got: Vec<(u64, u64)> = out
            .take()
            .iter()
            .map(|e| (e.data.start, e.data.value))
            .collect();
        got.sort();
        let want: Vec<(u64, u64)> = (0..10)
            .map(|w| (w * 100, (w * 100..w * 100 + 100).map(|x| 2 * x + 1).sum()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(report.below_frontier(), 0);
        // Every window was closed by a notification (one latency sample each).
        assert!(report.vertex("w").unwrap().notification_latency_ns.len() >= 10);
    }

    #[test]
    fn shards_go_to_tracker_processes_when_there_are_any() {
        // 3 worker processes, no tracker processes: shard k in process k mod 3.
        let hosts: Vec<usize> = (0..5).map(|k| shard_host(k, 3, 0)).collect();
        assert_eq!(hosts, vec![0, 1, 2, 0, 1]);
        // 3 worker processes and 2 tracker processes (3 and 4).
        let hosts: Vec<usize> = (0..5).map(|k| shard_host(k, 3, 2)).collect();
        assert_eq!(hosts, vec![3, 4, 3, 4, 3]);
        // A tracker process has no workers of its own.
        let w = Wiring::new(3, 3, 2, vec![None; 5], 4);
        assert_eq!(w.total_workers(), 6);
        assert!(w.local_workers().is_empty());
        assert!((0..6).all(|g| w.local(g).is_none()));
        let w = Wiring::new(1, 3, 2, vec![None; 5], 4);
        assert_eq!(w.local_workers(), 2..4);
        assert_eq!((w.local(1), w.local(3)), (None, Some(1)));
    }

    #[test]
    fn interest_is_known_from_the_graph() {
        let df = Dataflow::new(RuntimeConfig::default()).unwrap();
        df.source("src", 1, |_| Count(0, 10))
            .map("m", |x| x)
            .tumbling_window("w", 5, |_| 0u8, Sum)
            .map("after", |r| r.value)
            .sink("out", VecSink::<u64>::shared().factory());
        assert_eq!(
            df.b.borrow().interest,
            vec![false, false, true, false, true]
        );
    }

    #[test]
    #[should_panic(expected = "cannot share the tracking component of 'w'")]
    fn nothing_may_share_a_windows_component() {
        let df = Dataflow::new(RuntimeConfig::default()).unwrap();
        df.source("src", 1, |_| Count(0, 10))
            .tumbling_window("w", 5, |_| 0u8, Sum)
            .same_component()
            .map("after", |r| r.value);
    }
}
