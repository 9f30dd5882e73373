//! The edges of a dataflow: how a stream's consumers are recorded while building, and how each
//! instance's input and output ports are wired (local queues or remote channels) when the job
//! runs.

use super::Stream;
use crate::batch::Msg;
use crate::channel::output::{EdgeOutput, OutLink, Partitioner};
use crate::channel::{channel, Channel, InLink, InputPort};
use crate::net::frame::ChannelId;
use crate::net::link::{self, RemoteOut, Wiring};
use crate::port::chained::ChainedEdge;
use crate::port::OutputPort;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use xorflow_core::{Data, EdgeDesc, Partitioning, VertexId};
use xorflow_tracking::ComponentId;

/// The consumer edges of a stream, filled in as downstream vertices are added.
pub(super) type Consumers<T> = Rc<RefCell<Vec<EdgeSpec<T>>>>;

pub(super) enum PartitionSpec<T> {
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
    pub(super) fn kind(&self) -> Partitioning {
        match self {
            PartitionSpec::Forward => Partitioning::Forward,
            PartitionSpec::RoundRobin => Partitioning::RoundRobin,
            PartitionSpec::Hash(_) => Partitioning::Hash,
        }
    }
}

/// The in-process queues of one edge, `[sender local worker][receiver local worker]`, made when
/// the first instance of either end is created, for one run of the job (the [`Wiring`] it is
/// made for: a restarted job gets new, empty queues, never the failed attempt's leftovers).
type LocalChannels<T> = Arc<Mutex<Option<(u64, Arc<Vec<Vec<Channel<T>>>>)>>>;

/// Makes a chained consumer's instance for global worker `w` (`port/chained.rs`).
pub(super) type StageFactory<T> = Rc<RefCell<dyn FnMut(usize, &Wiring) -> ChainedEdge<T>>>;

/// A consumer edge of a stream.
pub(super) struct EdgeSpec<T> {
    edge: u32,
    /// The consumer runs chained into this stream's producer: no queue, no tags.
    stage: Option<StageFactory<T>>,
    /// The receiving vertex's component (its first instance's, with `instance_components`).
    component: ComponentId,
    /// The receiving vertex's `VertexDesc::instance_components`.
    instance_components: usize,
    partition: PartitionSpec<T>,
    channels: LocalChannels<T>,
}

fn local_channels<T>(c: &LocalChannels<T>, wiring: &Wiring) -> Arc<Vec<Vec<Channel<T>>>> {
    let mut slot = c.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match &*slot {
        Some((id, chans)) if *id == wiring.id => chans.clone(),
        _ => {
            let chans: Arc<Vec<Vec<Channel<T>>>> = Arc::new(
                (0..wiring.workers)
                    .map(|_| {
                        (0..wiring.workers)
                            .map(|_| channel(wiring.capacity))
                            .collect()
                    })
                    .collect(),
            );
            *slot = Some((wiring.id, chans.clone()));
            chans
        }
    }
}

fn remote_send<T: Data>(r: &RemoteOut, m: Msg<T>) -> Result<u64, Msg<T>> {
    r.try_send(m)
}

/// Mixes a 64-bit hash so its low bits are usable for `mod P` (SplitMix64's finalizer).
#[inline]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

pub(super) fn key_hash<K: Hash>(k: &K) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    k.hash(&mut h);
    mix(h.finish())
}

pub(super) fn make_output<T: Data>(
    consumers: &Consumers<T>,
    w: usize,
    wiring: &Wiring,
) -> OutputPort<T> {
    let wl = wiring
        .local(w)
        .expect("instances are made for local workers");
    let specs = consumers.borrow();
    let chained = (specs.iter())
        .filter_map(|e| e.stage.as_ref().map(|make| (make.borrow_mut())(w, wiring)))
        .collect();
    let edges = (specs.iter())
        .filter(|e| e.stage.is_none())
        .map(|e| {
            let chans = local_channels(&e.channels, wiring);
            let workers = wiring.total_workers();
            let partitioner = match &e.partition {
                PartitionSpec::Forward => Partitioner::Forward,
                // Stagger starting targets so workers do not all pick the same receiver first.
                PartitionSpec::RoundRobin => Partitioner::RoundRobin { next: w % workers },
                PartitionSpec::Hash(h) => Partitioner::Hash(h.clone()),
            };
            let links = match e.partition {
                PartitionSpec::Forward => vec![OutLink::Local(wl, chans[wl][wl].clone())],
                _ => (0..workers)
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
            assert!(
                e.instance_components == 0 || e.instance_components == workers,
                "a component per instance was planned for {} workers, the job has {workers}",
                e.instance_components
            );
            let components = match (&e.partition, e.instance_components) {
                (_, 0) => vec![e.component; links.len()],
                (PartitionSpec::Forward, _) => vec![e.component + w as ComponentId],
                _ => (0..workers)
                    .map(|r| e.component + r as ComponentId)
                    .collect(),
            };
            EdgeOutput::new(components, partitioner, links)
        })
        .collect();
    OutputPort::with_chained(edges, chained)
}

impl<T: Data> Stream<T> {
    /// Connects this stream to a new vertex; returns a function giving the vertex's input port on
    /// each (global) worker.
    /// Adds the edge to vertex `to` to the graph; returns its id and the vertex's
    /// `instance_components`.
    fn add_edge(&self, to: VertexId) -> (u32, usize) {
        let mut bb = self.b.borrow_mut();
        bb.graph.edges.push(EdgeDesc {
            from: self.vertex,
            to,
            partitioning: self.partition.kind(),
        });
        let n = bb.graph.vertices[to].instance_components;
        (bb.graph.edges.len() as u32 - 1, n)
    }

    /// Connects this stream (forward) to vertex `to` in `component`, chained: `stage(w, wiring)`
    /// makes the consumer's instance on worker `w` inside its producer's output port.
    pub(super) fn connect_chained(
        &self,
        to: VertexId,
        component: ComponentId,
        stage: StageFactory<T>,
    ) {
        assert!(matches!(self.partition, PartitionSpec::Forward));
        let (edge, _) = self.add_edge(to);
        self.consumers.borrow_mut().push(EdgeSpec {
            edge,
            stage: Some(stage),
            component,
            instance_components: 0,
            partition: PartitionSpec::Forward,
            channels: Arc::default(),
        });
    }

    pub(super) fn connect(
        &self,
        to: VertexId,
        component: ComponentId,
    ) -> impl Fn(usize, &Wiring) -> InputPort<T> {
        let forward = matches!(self.partition, PartitionSpec::Forward);
        let channels: LocalChannels<T> = Arc::default();
        let (edge, instance_components) = self.add_edge(to);
        self.consumers.borrow_mut().push(EdgeSpec {
            edge,
            stage: None,
            component,
            instance_components,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restarted job wires its edges anew: the failed attempt's leftover batches must not
    /// reach the new instances (their tags were registered with the old tracker: the restarted
    /// job would wait for them forever).
    #[test]
    fn each_wiring_gets_fresh_local_queues() {
        let chans: LocalChannels<u64> = Arc::default();
        let first = Wiring::new(0, 1, 2, vec![None], 4, 4);
        let q = local_channels(&chans, &first);
        q[0][1].push(Msg::End).unwrap();
        assert!(
            local_channels(&chans, &first)[0][1].pop().is_some(),
            "same run"
        );
        q[0][1].push(Msg::End).unwrap();
        let restarted = Wiring::new(0, 1, 2, vec![None], 4, 4);
        assert!(local_channels(&chans, &restarted)[0][1].pop().is_none());
    }
}
