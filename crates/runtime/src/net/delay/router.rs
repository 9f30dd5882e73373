//! A user-space router between network namespaces that delays every IP packet by its pair's
//! one-way delay: wide-area delay for whole processes of any engine, kernel TCP included
//! (`xorflow-lab delay-router`; docs/wan.md, "Processes in network namespaces").
//!
//! Host `i` sends through its TUN device ([`super::tun`]) with address `SUBNET.(i + 1)`; the
//! router reads each packet, finds the destination host from the IPv4 header, and hands it to
//! the destination's writer ([`super::writer`]), which writes it to the destination's device
//! once due ([`DelayLine`]: arrival + one-way delay, FIFO per pair, jitter without reordering).
//! Unlike the delay inside xorflow (`transport.rs`) and the TCP proxy ([`super::proxy`]),
//! everything is delayed: the kernel's TCP acks, retransmissions and window updates, the
//! handshake, the clock alignment.
//!
//! What a destination holds in flight is bounded ([`QUEUE_PACKETS`] per source); beyond that
//! packets are dropped and counted, as a router's queue would, and TCP retransmits them.

use super::tun::TunDevice;
use super::{DelayLine, DelayMatrix};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Packets in flight per ordered pair of hosts (a destination's writer: this many per source)
/// before the router drops (at 64 KiB each up to 1 GiB: more than 100 ms of anything this
/// machine sends).
pub const QUEUE_PACKETS: usize = 16 * 1024;

/// Largest packet read, bytes (the devices' MTU is set below it).
pub const MAX_PACKET: usize = 65_536;

/// How often blocked threads look at the stop flag.
pub(super) const POLL: Duration = Duration::from_millis(100);

/// What the router has done so far.
#[derive(Debug)]
pub struct RouterCounters {
    /// Packets delivered to their destination.
    pub packets: AtomicU64,
    /// Bytes delivered.
    pub bytes: AtomicU64,
    /// Packets dropped because their pair's queue was full.
    pub queue_drops: AtomicU64,
    /// Packets not for another host of the subnet (IPv6, other addresses, to itself): dropped.
    pub foreign: AtomicU64,
    /// Packets the destination device refused.
    pub write_errors: AtomicU64,
    /// How long after its due time each delayed packet was written, ns (each destination's
    /// writer merges its own histogram in when it stops): the delay the router adds to the
    /// configured one when its threads wait for a core.
    pub late_ns: Mutex<Histogram<u64>>,
}

impl Default for RouterCounters {
    fn default() -> Self {
        RouterCounters {
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            queue_drops: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            late_ns: Mutex::new(lateness_histogram()),
        }
    }
}

/// 1 us to 100 s at 3 significant digits.
pub(super) fn lateness_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// A running router: one reader thread per host, one writer per host that receives delayed
/// packets.
pub struct DelayRouter {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Counters of the router's work.
    pub counters: Arc<RouterCounters>,
}

/// A packet and when it may be delivered.
pub(super) type Timed = (Instant, Vec<u8>);

/// Where a host's packets to host `j` go: straight to `j`'s device, or through the pair's
/// delay line to `j`'s writer.
enum Path {
    Direct(TunDevice),
    Delayed(DelayLine, SyncSender<Timed>),
}

/// The destination host of an IPv4 packet in `subnet` (`None`: not IPv4, or not a host of it).
fn destination(packet: &[u8], subnet: [u8; 3], hosts: usize) -> Option<usize> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[16..19] != subnet {
        return None;
    }
    let j = (packet[19] as usize).checked_sub(1)?;
    (j < hosts).then_some(j)
}

impl DelayRouter {
    /// Routes between `devices` (host `i` = `devices[i]`, address `subnet.(i + 1)`) with the
    /// one-way delays of `matrix` (half of each pair's RTT, [`DelayMatrix::one_way`]).
    ///
    /// # Errors
    /// `matrix` has fewer hosts than `devices`, or a device cannot be cloned for a thread.
    pub fn start(
        devices: Vec<TunDevice>,
        matrix: &DelayMatrix,
        subnet: [u8; 3],
    ) -> std::io::Result<Self> {
        let n = devices.len();
        if matrix.processes() < n {
            return Err(std::io::Error::other(format!(
                "the delay matrix has {} hosts, the router {n}",
                matrix.processes()
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(RouterCounters::default());
        let mut threads = Vec::new();
        // One writer per destination with a delayed source, fed by every such source; it may
        // sleep up to the smallest delay any source's line can draw (writer.rs).
        let mut writers: Vec<Option<SyncSender<Timed>>> = Vec::with_capacity(n);
        for (j, to) in devices.iter().enumerate() {
            let min_delay = ((0..n).filter(|&i| i != j))
                .filter_map(|i| {
                    let (base, jitter) = matrix.one_way(i, j);
                    DelayLine::least(base, jitter)
                })
                .min();
            writers.push(match min_delay {
                None => None,
                Some(min_delay) => {
                    let (tx, rx) = sync_channel(QUEUE_PACKETS);
                    let (to, stop, c) = (to.try_clone()?, stop.clone(), counters.clone());
                    let limit = QUEUE_PACKETS * n.saturating_sub(1).max(1);
                    threads.push(std::thread::spawn(move || {
                        super::writer::write_loop(rx, to, min_delay, limit, &stop, &c)
                    }));
                    Some(tx)
                }
            });
        }
        for (i, dev) in devices.iter().enumerate() {
            let mut paths = Vec::with_capacity(n);
            for (j, to) in devices.iter().enumerate() {
                let (base, jitter) = matrix.one_way(i, j);
                let line = DelayLine::new(base, jitter, (i * n + j) as u64);
                paths.push(match (line, &writers[j]) {
                    (Some(l), Some(tx)) => Path::Delayed(l, tx.clone()),
                    _ => Path::Direct(to.try_clone()?),
                });
            }
            let (from, stop, c) = (dev.try_clone()?, stop.clone(), counters.clone());
            threads.push(std::thread::spawn(move || {
                read_loop(i, from, paths, subnet, &stop, &c)
            }));
        }
        Ok(DelayRouter {
            stop,
            threads,
            counters,
        })
    }

    /// Stops every thread (within [`POLL`]) and waits for them.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Waits up to [`POLL`] for `dev` to have a packet; false on timeout.
fn readable(dev: &TunDevice) -> bool {
    let mut p = libc::pollfd {
        fd: dev.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the duration of the call.
    let rc = unsafe { libc::poll(&mut p, 1, POLL.as_millis() as libc::c_int) };
    rc != 0
}

/// Host `i`'s packets: read, find the destination, deliver or queue with their due time.
fn read_loop(
    i: usize,
    mut from: TunDevice,
    mut paths: Vec<Path>,
    subnet: [u8; 3],
    stop: &AtomicBool,
    c: &RouterCounters,
) {
    let mut buf = vec![0u8; MAX_PACKET];
    while !stop.load(Ordering::Relaxed) {
        if !readable(&from) {
            continue;
        }
        let len = match from.recv(&mut buf) {
            Ok(len) => len,
            // The device is gone (its namespace was deleted).
            Err(_) => return,
        };
        let packet = &buf[..len];
        let Some(j) = destination(packet, subnet, paths.len()).filter(|&j| j != i) else {
            c.foreign.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        match &mut paths[j] {
            Path::Direct(to) => deliver(to, packet, c),
            Path::Delayed(line, tx) => {
                let due = line.due(Instant::now());
                if let Err(TrySendError::Full(_)) = tx.try_send((due, packet.to_vec())) {
                    c.queue_drops.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

pub(super) fn deliver(to: &mut TunDevice, packet: &[u8], c: &RouterCounters) {
    match to.send(packet) {
        Ok(()) => {
            c.packets.fetch_add(1, Ordering::Relaxed);
            c.bytes.fetch_add(packet.len() as u64, Ordering::Relaxed);
        }
        Err(_) => {
            c.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_to(dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn destination_is_the_host_of_the_subnet_or_none() {
        let s = [10, 78, 0];
        assert_eq!(destination(&ipv4_to([10, 78, 0, 1]), s, 3), Some(0));
        assert_eq!(destination(&ipv4_to([10, 78, 0, 3]), s, 3), Some(2));
        // Beyond the hosts, host 0 (.0), another subnet, IPv6, a runt.
        assert_eq!(destination(&ipv4_to([10, 78, 0, 4]), s, 3), None);
        assert_eq!(destination(&ipv4_to([10, 78, 0, 0]), s, 3), None);
        assert_eq!(destination(&ipv4_to([10, 77, 0, 1]), s, 3), None);
        let mut v6 = ipv4_to([10, 78, 0, 1]);
        v6[0] = 0x60;
        assert_eq!(destination(&v6, s, 3), None);
        assert_eq!(destination(&[0x45; 10], s, 3), None);
    }
}
