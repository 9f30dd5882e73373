//! What the kernels' TCP did in a namespaced run: retransmissions, retransmission timeouts and
//! packets the TUN devices dropped, per namespace, read after the run from the namespace's own
//! `/proc/net/snmp`, `/proc/net/netstat` and `/sys/class/net/*/statistics` (each namespace has its
//! own counters, starting at 0 when `xorflow-lab delay-router` creates it).
//!
//! The router counts what it drops on its own queues; a packet the kernel drops before the router
//! reads it (a full TUN queue) or after it writes it (a full backlog) shows only here, as a
//! retransmission. A retransmission timeout stalls a connection for at least 200 ms (Linux's
//! minimum RTO) plus the round trip: the size of the late windows docs/wan.md reports.

use serde::{Deserialize, Serialize};
use std::process::Command;

/// TCP counters of one namespace (or their sum over a run's namespaces).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// Segments retransmitted (`Tcp: RetransSegs`).
    pub retransmitted: u64,
    /// Retransmission timeouts (`TcpExt: TCPTimeouts`).
    pub timeouts: u64,
    /// Tail loss probes sent (`TcpExt: TCPLossProbes`).
    pub loss_probes: u64,
    /// Packets the namespace's devices dropped on transmit: the TUN device's queue was full
    /// because the router did not read it in time.
    pub tx_drops: u64,
    /// Packets dropped on receive: the router wrote them into the device faster than the kernel
    /// took them (its backlog, `net.core.netdev_max_backlog`, was full).
    pub rx_drops: u64,
}

impl TcpCounters {
    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &TcpCounters) {
        self.retransmitted += o.retransmitted;
        self.timeouts += o.timeouts;
        self.loss_probes += o.loss_probes;
        self.tx_drops += o.tx_drops;
        self.rx_drops += o.rx_drops;
    }

    /// The counters in `text`: `/proc/net/snmp` and `/proc/net/netstat` (header line and value
    /// line per protocol), then `tx_dropped N` and `rx_dropped N` lines, one per device. Missing
    /// counters are 0.
    pub fn parse(text: &str) -> TcpCounters {
        let lines: Vec<&str> = text.lines().collect();
        let sum = |prefix: &str| -> u64 {
            (lines.iter())
                .filter_map(|l| l.strip_prefix(prefix))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .sum()
        };
        TcpCounters {
            retransmitted: field(&lines, "Tcp: ", "RetransSegs"),
            timeouts: field(&lines, "TcpExt: ", "TCPTimeouts"),
            loss_probes: field(&lines, "TcpExt: ", "TCPLossProbes"),
            tx_drops: sum("tx_dropped "),
            rx_drops: sum("rx_dropped "),
        }
    }
}

/// The value under `name` in the first pair of `/proc/net` lines starting with `proto` (a
/// header line of names, then a line of values); 0 when missing.
fn field(lines: &[&str], proto: &str, name: &str) -> u64 {
    let pair = lines
        .windows(2)
        .find_map(|w| Some((w[0].strip_prefix(proto)?, w[1].strip_prefix(proto)?)));
    pair.and_then(|(h, v)| {
        let i = h.split_whitespace().position(|k| k == name)?;
        v.split_whitespace().nth(i)?.parse().ok()
    })
    .unwrap_or(0)
}

/// The shell command that prints a namespace's counters in [`TcpCounters::parse`]'s form.
const READ: &str = "cat /proc/net/snmp /proc/net/netstat; \
    for d in /sys/class/net/*/statistics; do \
    echo tx_dropped $(cat $d/tx_dropped); echo rx_dropped $(cat $d/rx_dropped); done";

/// Reads namespace `ns`'s counters (`ip netns exec`), with the raw text for the run's folder.
///
/// # Errors
/// `ip` cannot run or the namespace is gone: the error names it.
pub fn read(ns: &str) -> Result<(TcpCounters, String), String> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", READ])
        .output()
        .map_err(|e| format!("cannot run 'ip netns exec {ns}': {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "reading the TCP counters of namespace {ns} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok((TcpCounters::parse(&text), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_come_from_their_columns() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 2 64\n\
            Tcp: RtoAlgorithm RtoMin RetransSegs InErrs\nTcp: 1 200 17 0\n\
            Udp: InDatagrams\nUdp: 5\n\
            TcpExt: SyncookiesSent TCPLossProbes TCPTimeouts\nTcpExt: 0 4 3\n\
            tx_dropped 2\nrx_dropped 1\ntx_dropped 0\nrx_dropped 5\n";
        assert_eq!(
            TcpCounters::parse(text),
            TcpCounters {
                retransmitted: 17,
                timeouts: 3,
                loss_probes: 4,
                tx_drops: 2,
                rx_drops: 6
            }
        );
        assert_eq!(TcpCounters::parse("garbage\n"), TcpCounters::default());
    }
}
