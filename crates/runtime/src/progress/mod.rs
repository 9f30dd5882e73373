//! Progress tracking glue: what connects trAcker's pure logic (`xorflow-tracking`) to the workers,
//! processes and network of this runtime.
//!
//! - [`mode`]: the tracking mode's rules (trAcker, markers, none): one trait, three
//!   implementations; nothing outside `progress/` matches on the mode.
//! - [`flush_policy`]: when a worker hands its acks on and when the process acker flushes.
//! - [`process_acker`]: the per-process acker and the routes of its flushes to the shards.
//! - [`tracker_agent`]: a tracker shard hosted by a process, notifying workers.
//! - [`frontier_inbox`]: a worker's unread frontiers, the latest per shard and component.
//! - [`frontiers`]: per-worker frontiers combined over shards, and the notification API operators
//!   use whatever the tracking mode.

pub mod cut;
pub mod epoch_ctx;
pub mod flush_policy;
pub mod frontier_inbox;
pub mod frontiers;
pub mod handoff;
pub mod idle_gate;
pub mod inlets;
pub mod mode;
pub mod process_acker;
pub mod tracker_agent;
