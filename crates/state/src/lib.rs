//! Keyed state for xorflow's operators (docs/state.md; docs/design.md, "Fault tolerance").
//!
//! * [`key_group`]: keys hash into a fixed number of key groups, the unit in which state moves
//!   between worker instances (Flink's key groups).
//! * [`backend`]: one trait, [`backend::Backend`], an ordered byte store with two implementations:
//!   [`backend::MemoryBackend`] (a `BTreeMap`) and [`backend::DiskBackend`] (redb, for state larger
//!   than memory).
//! * [`ValueTable`] and [`ListTable`]: typed keyed state (a value per key; an append-only list per
//!   key) behind a write-back cache ([`CacheConfig`]: flush at N dirty keys, at a checkpoint, on
//!   demand; the Samza store of the changelog thesis, docs/papers.md). Lists are stored as runs of
//!   elements (`run.rs`).
//! * [`delta`]: what changed since the last snapshot, as records ([`delta::Record`]); a snapshot of a
//!   [`StateStore`] is the delta of each of its tables, so checkpoints are incremental.
//! * [`window`]: window state in the changelog thesis's two forms, fold-left and retain-all.
//! * [`checkpoint`]: checkpoint files with checksums, manifests and retention in a checkpoint
//!   directory.
//! * [`local`]: local recovery (host affinity): a restarted process rolls its on-disk stores back
//!   to the restored checkpoint's savepoint instead of reloading them.

pub mod backend;
mod cache;
pub mod checkpoint;
mod codec;
pub mod delta;
mod error;
pub mod key_group;
mod list;
pub mod local;
mod run;
mod store;
mod table;
mod value;
pub mod window;

pub use backend::{Backend, BackendKind};
pub use cache::CacheConfig;
pub use error::StateError;
pub use key_group::{KeyGroup, KeyGroups};
pub use list::ListTable;
pub use store::{decode_snapshot, encode_snapshot, StateConfig, StateStore};
pub use value::ValueTable;
