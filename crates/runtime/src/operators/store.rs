//! Opening a stateful instance's store: with checkpoints and on disk, rolled back to the
//! checkpoint being restored when its local file allows (local recovery: `xorflow_state::local`).

use crate::worker::ctx::WorkerCtx;
use xorflow_state::local::Opened;
use xorflow_state::{StateConfig, StateError, StateStore};

/// The store of instance `ctx.index` of vertex `vertex`. A restore that cannot use the local
/// file says why (the instance then restores from the checkpoint store).
///
/// # Errors
/// The disk file cannot be created.
pub(crate) fn open(
    config: &StateConfig,
    vertex: &str,
    ctx: &WorkerCtx,
) -> Result<StateStore, StateError> {
    let store = StateStore::open_with(config, vertex, ctx.index, ctx.affinity())?;
    match store.opened() {
        Opened::Fresh { why: Some(why) } => tracing::info!(
            "'{vertex}' instance {}: local state not reused ({why}); restoring from the \
             checkpoint store",
            ctx.index
        ),
        Opened::RolledBack(c) => tracing::info!(
            "'{vertex}' instance {}: local state rolled back to checkpoint {c}",
            ctx.index
        ),
        Opened::Fresh { why: None } => {}
    }
    Ok(store)
}
