//! Starting a real transport in a test: process `me` of `addrs.len()` in this process, on
//! loopback, delivering to frontier inboxes and the remote channels of `routes`
//! (`clock_tests.rs`, `delay_tests.rs`, `credit_tests.rs`).

use super::cluster::ClusterConfig;
use super::link::Routes;
use super::outbox::{NetWrites, Outbox};
use super::transport::{self, Delivery, Failure, Identity, TransportHandle};
use crate::progress::frontier_inbox::FrontierInbox;
use crate::wake::Unparkers;
use std::sync::Arc;

/// The transport of process `me` (started: connected and clock-aligned as `cfg` says) and its
/// outboxes to the others (`None` at `me`); frontier frames go to `inboxes`.
pub(super) fn start(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    cfg: &ClusterConfig,
    inboxes: Vec<Arc<FrontierInbox>>,
) -> (TransportHandle, Vec<Option<Arc<Outbox>>>) {
    let outboxes = outboxes(me, addrs.len());
    let t = start_with(
        me,
        listener,
        addrs,
        cfg,
        inboxes,
        &outboxes,
        Routes::default(),
    );
    (t, outboxes)
}

/// Outboxes of process `me` to the others of `n` (`None` at `me`).
pub(super) fn outboxes(me: usize, n: usize) -> Vec<Option<Arc<Outbox>>> {
    (0..n)
        .map(|j| (j != me).then(|| Arc::new(Outbox::new(j, 1 << 20, NetWrites::Adaptive))))
        .collect()
}

/// As [`start`], writing through `outboxes` and delivering channel frames to `routes`.
pub(super) fn start_with(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    cfg: &ClusterConfig,
    inboxes: Vec<Arc<FrontierInbox>>,
    outboxes: &[Option<Arc<Outbox>>],
    routes: Routes,
) -> TransportHandle {
    let unparkers = Arc::new(Unparkers::new(inboxes.len()));
    let mut inlets = crate::net::payload::Inlets::default();
    inlets.register(
        super::frame::Kind::Frontier,
        Arc::new(crate::progress::inlets::FrontierInlet {
            inboxes,
            unparkers: unparkers.clone(),
        }),
    );
    let delivery = Delivery {
        routes,
        unparkers: unparkers.clone(),
        inlets,
        handover: None,
    };
    let failure = Failure {
        message: Arc::default(),
        abort: Arc::default(),
        unparkers,
    };
    let id = Identity {
        process: me,
        addrs,
        job_id: 7,
        token: "transport-test".into(),
    };
    transport::start(id, listener, cfg, outboxes.to_vec(), delivery, failure)
        .expect("the transport starts")
}

/// Runs `n` "processes" on threads of this process, each with its own loopback listener and
/// everyone's addresses: `process(me, listener, addrs)`. Returns their results in process order.
pub(super) fn run_processes<R: Send + 'static>(
    n: usize,
    process: impl Fn(usize, std::net::TcpListener, Vec<std::net::SocketAddr>) -> R
        + Clone
        + Send
        + 'static,
) -> Vec<R> {
    let listeners: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<_> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let threads: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(me, l)| {
            let (addrs, process) = (addrs.clone(), process.clone());
            std::thread::spawn(move || process(me, l, addrs))
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}
