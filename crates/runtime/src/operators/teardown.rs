//! What a stateful operator does with its in-memory state when the run ends: free it, or leave
//! it to the process's exit ([`crate::RuntimeConfig::leave_state_to_exit`]).

/// Frees `state`, or with `to_exit` leaves it allocated for the exiting process to drop whole:
/// freeing millions of rows one by one, and the allocator then collecting each worker thread's
/// freed pages as it ends, costs CPU that the exit's unmapping does not (docs/cpu.md, "State
/// left to the exit").
pub(crate) fn release<S>(state: S, to_exit: bool) {
    if to_exit {
        std::mem::forget(state);
    } else {
        drop(state);
    }
}
