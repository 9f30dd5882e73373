//! # trAcker: completeness of substreams by XOR-ing random tags
//!
//! This crate is the pure logic of xorflow's progress tracking (docs/design.md, "trAcker requirements"; Trofimov et al.,
//! "Bounding substreams in distributed stream processing", Information Systems 117, 2023). It has no
//! threads, clocks or sockets: the runtime decides where each piece runs and how messages travel.
//!
//! The pieces, one concept per file:
//! - [`time`]: logical time, granularity and slots (substreams).
//! - [`tag`]: random 64-bit tags.
//! - [`ack`]: the ack entry, the unit the acker and tracker exchange.
//! - [`diff_map`]: the XOR difference map that lets one tag cover a whole slot range.
//! - [`range_tag`]: an open output buffer's send tag over its growing slot range.
//! - [`local_acker`]: per-worker XOR merging of acks and heartbeats before they are flushed.
//! - [`heartbeats`]: per-source lower bounds on future times.
//! - [`topology`]: tracking components and their upstream relation.
//! - [`tracker`]: per-component slot tables and the frontier computation.
//!
//! ## Range tags (an extension of the paper's per-(batch, slot) tags)
//! The paper tags every (batch, slot) pair. At granularity 1 a batch of 1024 elements spans up to
//! 1024 slots, which would make tracking cost per element again. Instead a batch carries one tag `x`
//! and the slot range `[lo, hi]` of its elements; sender and receiver both XOR `x` into *every* slot
//! of the range. Slots of the range that hold no element of the batch receive `x` twice as well, so
//! they still cancel; they are merely held open until the batch is processed (conservative, never
//! early). A range XOR is two point updates on a difference map ([`diff_map::DiffMap`]), so a batch
//! costs O(1) acker and tracker updates whatever its span and granularity.

pub mod ack;
pub mod combine;
pub mod diff_map;
pub mod epochs;
pub mod heartbeats;
pub mod local_acker;
pub mod markers;
pub mod range_tag;
pub mod shard;
pub mod tag;
pub mod time;
pub mod topology;
pub mod tracker;

pub use ack::{AckEntry, ComponentId, Flush, SourceId};
pub use combine::FrontierCombiner;
pub use epochs::EpochDomain;
pub use local_acker::{AckEvent, LocalAcker};
pub use markers::MarkerAligner;
pub use shard::{split_flush, ShardMap};
pub use tag::TagSource;
pub use time::{Granularity, Slot, Time, INF};
pub use topology::Topology;
pub use tracker::{FrontierUpdate, Tracker};
