//! Starting a real transport in a test: process `me` of `addrs.len()` in this process, on
//! loopback, with nothing to deliver but frontier inboxes (`clock_tests.rs`, `delay_tests.rs`).

use super::cluster::ClusterConfig;
use super::outbox::{NetWrites, Outbox};
use super::transport::{self, Delivery, Failure, Identity, TransportHandle};
use crate::progress::frontiers::Notification;
use crate::wake::Unparkers;
use crossbeam_channel::Sender;
use std::sync::Arc;

/// The transport of process `me` (started: connected and clock-aligned as `cfg` says) and its
/// outboxes to the others (`None` at `me`); frontier frames go to `inboxes`.
pub(super) fn start(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    cfg: &ClusterConfig,
    inboxes: Vec<Sender<Notification>>,
) -> (TransportHandle, Vec<Option<Arc<Outbox>>>) {
    let n = addrs.len();
    let outboxes: Vec<_> = (0..n)
        .map(|j| (j != me).then(|| Arc::new(Outbox::new(j, 1 << 20, NetWrites::Adaptive))))
        .collect();
    let unparkers = Arc::new(Unparkers::new(inboxes.len()));
    let delivery = Delivery {
        routes: Default::default(),
        shards: Vec::new(),
        inboxes,
        unparkers: unparkers.clone(),
        checkpoints: None,
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
    let t = transport::start(id, listener, cfg, outboxes.clone(), delivery, failure)
        .expect("the transport starts");
    (t, outboxes)
}
