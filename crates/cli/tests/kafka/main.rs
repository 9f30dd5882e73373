//! The real Kafka broker's tests, one binary so that they overlap (they mostly wait on the
//! broker and on paced runs) and share one broker: `scripts/kafka.sh` itself (broker.rs) and the
//! flights job over Kafka with kill -9 (flights.rs), Nexmark's generator and SQL
//! over Kafka topics (nexmark.rs).

mod broker;
#[path = "../common/mod.rs"]
mod common;
// Its tests mostly wait: 3 at a time (`common::tests_at_once`).
crate::tests_at_once!(3);
mod flights;
mod nexmark;
