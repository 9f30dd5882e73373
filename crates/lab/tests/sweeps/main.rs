//! The lab's sweeps end to end, one binary so that their long runs overlap, four at a time (each is mostly
//! waiting: paced generators, 20 s YSB runs, delays): `bench cpu` (cpu.rs), `bench wan`
//! (wan.rs) and `bench peers --smoke` (peers.rs). Apart, they took 64 s, 60 s and 51 s of CI
//! on 2 cores, where the whole test phase used one core of the two on average.

#[path = "../../../cli/tests/common/mod.rs"]
mod common;
// Its tests mostly wait: 4 at a time (`common::tests_at_once`).
crate::tests_at_once!(4);
mod cpu;
mod peers;
mod wan;
