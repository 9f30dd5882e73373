//! Running one job across processes and hosts: cluster launch ([`cluster`]), the wire format
//! ([`frame`], [`batch_codec`]), remote channels with credit-based backpressure ([`link`]) and the TCP transport
//! ([`transport`]), with the Cloudprofiler paper's clock alignment on the same connections
//! ([`clock_phase`]) and the wide-area paper's delay injected in user space ([`delay`]; both
//! papers: docs/papers.md). Serialization happens only here, at the process boundary.

pub mod batch_codec;
pub mod clock_phase;
pub mod cluster;
pub mod credit;
pub mod delay;
pub mod epoll;
pub mod frame;
mod gather;
pub mod link;
pub mod outbox;
pub mod payload;
mod reading;
pub mod transport;
pub mod worker_reads;

#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod credit_tests;
#[cfg(test)]
mod delay_tests;
#[cfg(test)]
mod test_transport;
