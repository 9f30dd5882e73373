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

mod edges;
mod stream;
mod vec_sink;

pub use stream::{Processed, Stream, Windowed};
pub use vec_sink::{SharedVec, VecSink};

use crate::config::RuntimeConfig;
use crate::error::RunError;
use crate::net::link::Wiring;
use crate::operators::source::{Source, Sources};
use crate::operators::{OperatorVertex, Vertex};
use crate::port::OutputPort;
pub(crate) use edges::mix;
use edges::{make_output, Consumers};
use std::cell::RefCell;
use std::rc::Rc;
use xorflow_core::{Data, GraphDesc, VertexDesc, VertexId};
use xorflow_tracking::{ComponentId, SourceId};

/// Creates the instance of a vertex for global worker `w`, wiring its channels.
pub(crate) type Factory = Box<dyn FnMut(usize, &Wiring) -> Box<dyn Vertex>>;

/// Everything the builder has collected: what [`crate::execute`] runs.
pub(crate) struct Builder {
    pub config: RuntimeConfig,
    pub graph: GraphDesc,
    /// One per vertex, in creation (topological) order.
    pub factories: Vec<Factory>,
    /// Source instances in the whole job (each heartbeats on its own).
    pub sources: usize,
    /// Tracking components created so far.
    pub components: ComponentId,
    /// Per vertex: it emits deferred output (windows), so nothing may share its component.
    pub deferred: Vec<bool>,
    /// Per vertex: its operator keeps state across epochs (`Operator::STATEFUL`: windows,
    /// sinks), so every instance reports to each checkpoint.
    pub stateful: Vec<bool>,
    /// Per component: some vertex acts on its frontier (a window or sink), so trackers notify
    /// it. Known from the graph, so a tracker process without workers knows it too.
    pub interest: Vec<bool>,
    /// The live metrics of the running attempt (`--metrics-addr`).
    pub live: Option<std::sync::Arc<crate::measure::live::Live>>,
    /// Why earlier attempts failed (`execute/restart.rs`), for the status page.
    pub restart_causes: Vec<String>,
}

/// What a vertex does with tracking, as far as the builder cares.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
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
                stateful: Vec::new(),
                interest: Vec::new(),
                live: None,
                restart_causes: Vec::new(),
            })),
        })
    }

    /// The configuration this dataflow runs with.
    pub fn config(&self) -> RuntimeConfig {
        self.b.borrow().config.clone()
    }

    /// Adds a vertex in a new component, or in `join`'s component, or (`instance_components`
    /// n > 0) in n new components, one per instance (`VertexDesc::instance_components`).
    pub(super) fn add_vertex(
        b: &Rc<RefCell<Builder>>,
        name: &str,
        instances: usize,
        join: Option<VertexId>,
        role: Role,
        instance_components: usize,
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
                let n = instance_components.max(1);
                bb.components += n as ComponentId;
                bb.interest.extend(std::iter::repeat_n(false, n));
                bb.components - n as ComponentId
            }
        };
        assert!(join.is_none() || instance_components == 0);
        if role != Role::Plain {
            let n = instance_components.max(1) as ComponentId;
            for c in component..component + n {
                bb.interest[c as usize] = true;
            }
        }
        let id = bb.graph.vertices.len();
        bb.graph.vertices.push(VertexDesc {
            name: name.to_string(),
            component,
            instance_components,
            is_source: instances > 0,
            source_instances: instances,
        });
        bb.deferred.push(role == Role::Window);
        bb.stateful.push(false);
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
        let (vertex, component) = Self::add_vertex(&self.b, name, instances, None, Role::Plain, 0);
        let first_id = {
            let mut bb = self.b.borrow_mut();
            let id = bb.sources;
            bb.sources += instances;
            id
        };
        let name = name.to_string();
        with_output(&self.b, vertex, move |w, wiring, output| {
            let workers = wiring.total_workers();
            let mine: Vec<(SourceId, Box<dyn Source<T>>)> = (0..instances)
                .filter(|i| i % workers == w)
                .map(|i| {
                    (
                        (first_id + i) as SourceId,
                        Box::new(factory(i)) as Box<dyn Source<T>>,
                    )
                })
                .collect();
            Box::new(OperatorVertex::new(
                &name,
                component,
                Sources::new(mine),
                None,
                output,
                false,
            ))
        })
    }

    /// The logical graph built so far.
    pub fn graph(&self) -> GraphDesc {
        self.b.borrow().graph.clone()
    }

    /// What the builder collected, taken out of it for the run (`Dataflow::run`,
    /// `execute/mod.rs`). Streams may outlive the run; they only share the builder, which is
    /// emptied here.
    pub(crate) fn take_built(self) -> Builder {
        let mut bb = self.b.borrow_mut();
        Builder {
            config: bb.config.clone(),
            graph: std::mem::take(&mut bb.graph),
            factories: std::mem::take(&mut bb.factories),
            sources: bb.sources,
            components: bb.components,
            deferred: std::mem::take(&mut bb.deferred),
            stateful: std::mem::take(&mut bb.stateful),
            interest: std::mem::take(&mut bb.interest),
            live: None,
            restart_causes: Vec::new(),
        }
    }
}

/// Registers the factory of `vertex`'s instances: `make(w, wiring, output)` builds the instance for
/// global worker `w` around its output port. Returns the vertex's output stream.
pub(super) fn with_output<O: Data>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::source::{SourceOutput, SourcePoll};
    use xorflow_core::Aggregate;

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
        // The window, fed by an exchange, has a component per instance (2 workers: 1 and 2);
        // the sink below it one for both (a window's output holds its downstream component).
        assert_eq!(comps, vec![0, 0, 0, 1, 3]);
        assert_eq!(g.vertices[3].instance_components, 2);
        assert_eq!(g.vertices[4].instance_components, 0);
        assert_eq!(
            g.component_upstream(),
            vec![vec![], vec![0], vec![0], vec![1, 2]]
        );
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
    fn interest_is_known_from_the_graph() {
        let df = Dataflow::new(RuntimeConfig::default()).unwrap();
        df.source("src", 1, |_| Count(0, 10))
            .map("m", |x| x)
            .tumbling_window("w", 5, |_| 0u8, Sum)
            .map("after", |r| r.value)
            .sink("out", VecSink::<u64>::shared().factory());
        // The window has a component per instance (2 workers), both of interest.
        assert_eq!(
            df.b.borrow().interest,
            vec![false, false, true, true, false, true]
        );
    }

    #[test]
    fn instance_components_only_under_the_tracker_below_an_exchange_and_when_asked() {
        let graph = |cfg: RuntimeConfig| {
            let df = Dataflow::new(cfg).unwrap();
            let s = df.source("src", 1, |_| Count(0, 10));
            s.sink("forward", VecSink::<u64>::shared().factory());
            s.rebalance()
                .sink("exchanged", VecSink::<u64>::shared().factory());
            s.map("m", |x| x)
                .tumbling_window("w", 5, |_| 0u8, Sum)
                .rebalance()
                .sink("below_window", VecSink::shared().factory());
            let g = df.graph();
            g.vertices
                .iter()
                .map(|v| (v.name.clone(), v.instance_components))
                .filter(|(_, n)| *n > 0)
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        let c = |workers, instance_frontiers, tracking| RuntimeConfig {
            workers,
            instance_frontiers,
            tracking,
            ..RuntimeConfig::default()
        };
        use crate::TrackingMode::{Markers, Tracker};
        assert_eq!(graph(c(3, true, Tracker)), ["exchanged", "w"]);
        assert!(graph(c(3, false, Tracker)).is_empty());
        assert!(graph(c(3, true, Markers)).is_empty());
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
