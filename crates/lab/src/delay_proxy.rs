//! `xorflow-lab delay-proxy`: the user-space delay of `--rtt` for any TCP service
//! (`crates/runtime/src/net/delay/proxy.rs`; docs/wan.md, "Flink behind the proxy").

use clap::Args;
use std::net::SocketAddr;
use std::time::Duration;
use xorflow_cli::outcome::Outcome;
use xorflow_runtime::net::delay::proxy::{DelayProxy, Route};
use xorflow_runtime::net::delay::MAX_RTT;

/// Options of `xorflow-lab delay-proxy`.
#[derive(Args)]
#[command(
    after_help = "Example: a service on port 6000 reached through port 7000 with a 40 ms round trip\n  \
                  xorflow-lab delay-proxy --route 127.0.0.1:7000=127.0.0.1:6000 --rtt 40ms\n\n\
                  Each direction of every connection is delayed by half the RTT, in order. Runs \
                  until stopped."
)]
pub struct DelayProxyArgs {
    /// LISTEN=UPSTREAM: accept connections on LISTEN and forward each to UPSTREAM (both
    /// host:port; repeat for more routes).
    #[arg(long = "route", required = true)]
    routes: Vec<String>,
    /// Round-trip time added to every connection (half each way), e.g. 40ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    rtt: Duration,
    /// Spread of the RTT: each chunk's RTT is drawn from [RTT - jitter, RTT + jitter], order
    /// kept.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    rtt_jitter: Duration,
}

fn route(r: &str) -> Result<Route, String> {
    let (l, u) = r
        .split_once('=')
        .ok_or_else(|| format!("--route '{r}': expected LISTEN=UPSTREAM (host:port=host:port)"))?;
    let addr = |s: &str, what: &str| -> Result<SocketAddr, String> {
        use std::net::ToSocketAddrs;
        (s.to_socket_addrs().ok().and_then(|mut a| a.next()))
            .ok_or_else(|| format!("--route '{r}': {what} '{s}' is not host:port"))
    };
    let (listen, upstream) = (addr(l, "LISTEN")?, addr(u, "UPSTREAM")?);
    let listen = std::net::TcpListener::bind(listen)
        .map_err(|e| format!("--route '{r}': cannot listen on {listen}: {e}"))?;
    Ok(Route { listen, upstream })
}

/// Runs the proxy until the process is stopped (exit 2: bad options or a port in use).
pub fn run(a: DelayProxyArgs) -> Outcome {
    if a.rtt > MAX_RTT || a.rtt_jitter > MAX_RTT {
        eprintln!("xorflow-lab delay-proxy: --rtt and --rtt-jitter must be at most {MAX_RTT:?}");
        return Outcome::Config;
    }
    let routes = match a
        .routes
        .iter()
        .map(|r| route(r))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("xorflow-lab delay-proxy: {e}");
            return Outcome::Config;
        }
    };
    for r in &routes {
        if let Ok(l) = r.listen.local_addr() {
            eprintln!(
                "delay-proxy: {l} -> {}, RTT {:?} +- {:?}",
                r.upstream, a.rtt, a.rtt_jitter
            );
        }
    }
    match DelayProxy::start(routes, a.rtt / 2, a.rtt_jitter / 2) {
        Ok(p) => {
            p.wait();
            Outcome::Success
        }
        Err(e) => {
            eprintln!("xorflow-lab delay-proxy: cannot start: {e}");
            Outcome::Engine
        }
    }
}
