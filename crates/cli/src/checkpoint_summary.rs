//! The lines a job's run prints about its checkpoints (on standard error).

/// What checkpointing did: how many, and every resume and restart with its cause.
pub fn say_checkpoints(c: &xorflow_runtime::checkpoint::coordinator::CheckpointStats) {
    let latest = c.latest.map_or("none".into(), |l| l.to_string());
    crate::say!(
        "checkpoints: {} completed (latest {latest}), {} files, {} bytes",
        c.completed,
        c.files,
        c.bytes
    );
    if let Some(r) = c.resumed_from {
        crate::say!("resumed from checkpoint {r}");
    }
    for s in &c.skipped {
        crate::say!("resume skipped checkpoint {s}");
    }
    for r in &c.restarts {
        crate::say!("restarted from the last checkpoint after: {r}");
    }
}
