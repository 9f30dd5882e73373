//! `xorflow` at the edges a newcomer meets (issue 49): outputs that commit together or not at
//! all and bad rows that are rows (`outputs.rs`), checkpoints that help (`checkpoints.rs`),
//! identical runs writing identical files (`deterministic.rs`), standard input and output as
//! streams (`streams.rs`) and the help (`help.rs`). One test
//! binary for all of them: each binary of this crate links the whole engine, which CI pays for.

#[path = "../common/mod.rs"]
mod common;

mod checkpoints;
mod deterministic;
mod help;
mod outputs;
mod streams;
