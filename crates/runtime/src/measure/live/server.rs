//! The HTTP server of `--metrics-addr`: `GET /metrics` (OpenMetrics text, for Prometheus),
//! `GET /` (the status page, `status.html`) and `GET /api/status` (its data, JSON: on process 0
//! the whole job's, `super::job`; `?scope=process` this process's own), `GET /api/history` (the
//! last minutes, sampled here once a second: `super::history`) and its charts,
//! `GET /charts/{throughput,backpressure,lag}.svg` (`super::charts`). It runs on
//! a thread of its own with a single-threaded tokio runtime, away from the workers, and stops
//! when the [`Server`] is dropped.

use super::charts::{self, Chart};
use super::{locked, Live};
use crate::error::MetricsError;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::{Json, Router};
use std::net::SocketAddr;
use std::sync::Arc;

/// The status page: the dataflow graph with per-vertex rate, backpressure and frontier, the
/// checkpoints and failures, refreshed every second from `/api/status`.
const STATUS_PAGE: &str = include_str!("status.html");

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0: any free port) and serves `live`.
    ///
    /// # Errors
    /// The address cannot be bound ([`MetricsError::Bind`], naming it and why), the socket set
    /// up or the thread started.
    pub fn start(addr: SocketAddr, live: Arc<Live>) -> Result<Server, MetricsError> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| MetricsError::Bind { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| MetricsError::Socket { addr, source })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| MetricsError::Socket { addr, source })?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("xorflow-metrics".into())
            .spawn(move || serve(listener, live, stopped))
            .map_err(MetricsError::Thread)?;
        tracing::info!("metrics on http://{bound}/metrics, status page on http://{bound}/");
        Ok(Server {
            addr: bound,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    /// Stops the server and waits up to a second for it (a client holding a request open must
    /// not keep the job from ending; the thread then ends with the process).
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// `/api/status`: this process's own status (`own_only`, or a single process), or on process 0
/// of a multi-process job the whole job's, the other processes asked at once.
async fn status(live: &Live, own_only: bool) -> serde_json::Value {
    let own = live.status();
    if live.peers().is_empty() || own_only {
        return own;
    }
    let asks = live.peers().iter().map(|&(p, addr)| async move {
        let r = super::job::fetch(addr).await;
        (p, r.map_err(|why| format!("process {p} at {addr}: {why}")))
    });
    let answers = futures_util::future::join_all(asks).await;
    let mut last = locked(&live.peer_status);
    let peers = (answers.into_iter())
        .map(|(process, r)| match r {
            Ok(status) => {
                last.insert(process, status.clone());
                super::job::Peer {
                    process,
                    status: Some(status),
                    error: None,
                }
            }
            Err(why) => super::job::Peer {
                process,
                status: last.get(&process).cloned(),
                error: Some(why),
            },
        })
        .collect();
    drop(last);
    super::job::merge(own, peers)
}

/// The server thread's body: serves until `stopped` fires. Failures are logged: the job goes
/// on without its metrics rather than failing.
fn serve(
    listener: std::net::TcpListener,
    live: Arc<Live>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return tracing::error!("metrics server: {e}"),
    };
    rt.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => return tracing::error!("metrics server: {e}"),
        };
        // The history: the (job's) status once a second, from the start.
        let sampled = live.clone();
        tokio::spawn(async move {
            let start = std::time::Instant::now();
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                tick.tick().await;
                let st = status(&sampled, false).await;
                locked(&sampled.history).record(start.elapsed().as_secs_f64(), &st);
            }
        });
        let (l1, l2, l3) = (live.clone(), live.clone(), live.clone());
        let chart = |which: Chart| {
            let l = live.clone();
            get(move || async move {
                let svg = charts::render(&locked(&l.history), which);
                ([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response()
            })
        };
        let app = Router::new()
            .route("/", get(|| async { Html(STATUS_PAGE) }))
            .route(
                "/metrics",
                get(move || async move {
                    let ct = "application/openmetrics-text; version=1.0.0; charset=utf-8";
                    ([(header::CONTENT_TYPE, ct)], l1.encode()).into_response()
                }),
            )
            .route(
                "/api/status",
                get(move |uri: axum::http::Uri| async move {
                    let own = uri.query() == Some("scope=process");
                    Json(status(&l2, own).await)
                }),
            )
            .route(
                "/api/history",
                get(move || async move { Json(locked(&l3.history).to_json()) }),
            )
            .route("/charts/throughput.svg", chart(Chart::Throughput))
            .route("/charts/backpressure.svg", chart(Chart::Backpressure))
            .route("/charts/lag.svg", chart(Chart::Lag));
        let shutdown = async {
            let _ = stopped.await;
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!("metrics server: {e}");
        }
    });
}
