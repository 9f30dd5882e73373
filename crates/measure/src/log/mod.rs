//! Event-log channels and their handlers (seed 002, section 3).
