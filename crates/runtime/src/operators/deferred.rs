//! Deferred output: what an operator that emits later than its input arrives (a window's
//! results, a timer's) does with trAcker, shared by [`super::window`] and [`super::process`].
//!
//! When it takes on output to emit later, the instance XORs a fresh tag into the creator's slot
//! ([`creator_slot`]) of every downstream component (the hold: docs/design.md, requirement 8),
//! emits that output in that slot, commits it, and only then XORs the tag again (the release). Results of a
//! checkpoint epoch are heartbeated under the instance's emitter id, so downstream epochs wait
//! for what it may still emit (`crates/tracking/src/epochs.rs`).

use crate::worker::ctx::WorkerCtx;
use xorflow_state::checkpoint::Hold;
use xorflow_tracking::{ComponentId, Time};

/// The tracking slot of the element at `time` in a batch tracked from slot `lo`: the element's own
/// slot in an exact batch (each element tracked at its own time's slot: a source's), else the
/// batch's first slot. The hold and the deferred output live there (docs/design.md, "Deferred
/// outputs with shards": an element's whole tree in one slot). Not `lo` for an exact batch: a
/// batch spanning slots `[1, 3]` would hold slot 1 of every downstream component until a window
/// opened by its slot-3 element fires, and on an idle stream the windows of slots 1 and 2, fired
/// already, would reach a downstream sink only when more input came
/// (`crates/cli/tests/edges/streams.rs`).
#[inline]
pub(crate) fn creator_slot(time: Time, lo: u64, exact: bool, ctx: &WorkerCtx) -> u64 {
    match exact {
        true => ctx.granularity.slot(time).max(lo),
        false => lo,
    }
}

/// The slot a window ending at `end` holds its downstream components in (and tracks its results
/// in), opened by the element at `time` in a batch from slot `lo`. With one tracker shard: the
/// results' own slot, that of `end - 1` (never below the creator's), as docs/design.md,
/// requirement 8, first had it: the hold is XOR-ed into the worker's acker before the creator's
/// receive tag, and the acker is flushed whole and in order (`progress/idle_gate.rs`), so the one
/// tracker (or each replica) sees the hold first. A window then holds back nothing below its
/// results: with the creator's slot, a hopping window opened at `s` held a cascade over its
/// results (Nexmark q5's `MaxBids`) at `s` until it closed, `size - slide` after the cascade's
/// own windows could (docs/sql.md, "A cascade over HOP windows"). With several shards the hold at
/// `end - 1` races with the receive (docs/sharding-notes.md, section 2): the creator's slot.
#[inline]
pub(crate) fn window_hold_slot(
    end: Time,
    time: Time,
    lo: u64,
    exact: bool,
    ctx: &WorkerCtx,
) -> u64 {
    let creator = creator_slot(time, lo, exact, ctx);
    match ctx.config.tracker_shards {
        1 => ctx.granularity.slot(end.saturating_sub(1)).max(creator),
        _ => creator,
    }
}

/// Opens a hold in slot `slot` of every component of `downstream`; returns its tag (0 without
/// trAcker: nothing to hold).
pub(crate) fn open_hold(downstream: &[ComponentId], slot: u64, ctx: &mut WorkerCtx) -> u64 {
    ctx.progress.open_hold(downstream, slot)
}

/// Releases holds `(slot, tag)` on every component of `downstream` (after their output was
/// committed).
pub(crate) fn release_holds(downstream: &[ComponentId], holds: &[(u64, u64)], ctx: &mut WorkerCtx) {
    ctx.progress.release_holds(downstream, holds);
}

/// The holds `(time, tag, slot)` recorded with a snapshot, as trAcker restores them (one per
/// downstream component; tag 0: none was opened).
pub(crate) fn holds_of(recorded: &[(Time, u64, u64)], downstream: &[ComponentId]) -> Vec<Hold> {
    let mut out = Vec::new();
    for &(_, tag, slot) in recorded.iter().filter(|h| h.1 != 0) {
        out.extend(downstream.iter().map(|&component| Hold {
            component,
            slot,
            tag,
        }));
    }
    out
}

/// Heartbeats checkpoint epoch `epoch` as the emitter of instance `ctx.index` of the deferred
/// vertex of rank `rank` (`2S + rank * workers + worker`: `execute/mod.rs`, `epoch_domain`).
pub(crate) fn heartbeat_epoch(rank: usize, epoch: u64, ctx: &mut WorkerCtx) {
    let Some(ep) = ctx.epochs else {
        return;
    };
    let id = ep.emitter_id(rank * ctx.workers + ctx.index);
    ctx.progress.heartbeat(id, epoch);
}
