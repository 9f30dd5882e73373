//! The floor of a hop (issue 51, item 4; docs/benchmarks.md, "Where the limit is"): what the
//! least an engine must do per element to move it from one thread to another costs on this
//! machine, measured with nothing of xorflow in between.
//!
//! A producer thread writes the chain's elements (16 bytes: a time and an id, as
//! `xorflow_core::Element<u64>`) one at a time into a batch, hands each full batch to a
//! consumer thread through a bounded queue (crossbeam's `ArrayQueue`, both sides spinning),
//! and the consumer reads every element; empty batches go back to the producer through a
//! second queue, so no allocation is measured. Each variant reports wall ns per element and
//! each thread's CPU ns per element (`CLOCK_THREAD_CPUTIME_ID`):
//!
//! * `hand-over`: write, hand over, read (one hop of a pass-through stage that moves batches,
//!   as timely's `give_containers` does: the floor of an exchange hop);
//! * `copy`: as `hand-over`, and the consumer copies each batch into a batch of its own before
//!   reading it (a stage that writes its output, as xorflow's map into a round-robin edge).
//!
//! Both threads are busy the whole run: the per-element CPU of a hop across the two threads is
//! what a chain of such hops costs per element per hop on two cores.

use crossbeam_queue::ArrayQueue;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;
use xorflow_core::Element;
use xorflow_runtime::measure::clock::thread_cpu_ns;

/// Options of `xorflow-lab bench floor`.
#[derive(Clone, Debug, clap::Args)]
pub struct FloorConfig {
    /// Elements moved per variant.
    #[arg(long, default_value_t = 200_000_000)]
    pub elements: u64,
    /// Elements per batch (xorflow's default `--batch-size`).
    #[arg(long, default_value_t = 1024)]
    pub batch: usize,
    /// Batches the queue holds (xorflow's default channel capacity).
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
}

/// One variant's result.
#[derive(Clone, Debug, Serialize)]
pub struct FloorResult {
    /// `hand-over` or `copy` (the module doc).
    pub variant: String,
    /// Elements moved.
    pub elements: u64,
    /// Elements per batch.
    pub batch: usize,
    /// Wall time per element, ns.
    pub wall_ns_per_element: f64,
    /// Elements per second.
    pub elements_per_s: f64,
    /// The producer's CPU per element, ns.
    pub producer_cpu_ns_per_element: f64,
    /// The consumer's CPU per element, ns.
    pub consumer_cpu_ns_per_element: f64,
    /// Both threads' CPU per element, ns: the cost of one hop on two cores.
    pub cpu_ns_per_element: f64,
    /// The consumer's sum of the ids, checked against the closed form (the reads are real).
    pub checked: bool,
}

/// Runs both variants, `hand-over` first.
///
/// # Errors
/// A batch of 0 elements or a queue of 0 batches.
pub fn run(c: &FloorConfig) -> Result<Vec<FloorResult>, String> {
    if c.batch == 0 || c.queue == 0 {
        return Err("--batch and --queue must be at least 1".into());
    }
    Ok(vec![variant(c, false), variant(c, true)])
}

fn variant(c: &FloorConfig, copy: bool) -> FloorResult {
    let full: Arc<ArrayQueue<Vec<Element<u64>>>> = Arc::new(ArrayQueue::new(c.queue));
    let empty: Arc<ArrayQueue<Vec<Element<u64>>>> = Arc::new(ArrayQueue::new(c.queue + 2));
    for _ in 0..c.queue + 2 {
        let _ = empty.push(Vec::with_capacity(c.batch));
    }
    let (n, batch) = (c.elements, c.batch);
    let t0 = Instant::now();
    let consumer = {
        let (full, empty) = (full.clone(), empty.clone());
        std::thread::spawn(move || {
            let cpu0 = thread_cpu_ns();
            let mut own: Vec<Element<u64>> = Vec::with_capacity(batch);
            let (mut seen, mut sum) = (0u64, 0u64);
            while seen < n {
                let Some(mut b) = full.pop() else {
                    std::hint::spin_loop();
                    continue;
                };
                let read = if copy {
                    own.clear();
                    own.extend_from_slice(&b);
                    &own
                } else {
                    &b
                };
                for e in read.iter() {
                    sum = sum.wrapping_add(e.data);
                }
                seen += b.len() as u64;
                b.clear();
                let _ = empty.push(b);
            }
            (sum, thread_cpu_ns() - cpu0)
        })
    };
    let cpu0 = thread_cpu_ns();
    let mut next = 0u64;
    while next < n {
        let mut b = loop {
            match empty.pop() {
                Some(b) => break b,
                None => std::hint::spin_loop(),
            }
        };
        let end = (next + batch as u64).min(n);
        while next < end {
            b.push(Element::new(next, next));
            next += 1;
        }
        let mut b = Some(b);
        while let Some(x) = b.take() {
            if let Err(x) = full.push(x) {
                b = Some(x);
                std::hint::spin_loop();
            }
        }
    }
    let producer_cpu = thread_cpu_ns() - cpu0;
    let (sum, consumer_cpu) = consumer.join().expect("the consumer thread");
    let wall = t0.elapsed().as_nanos() as f64;
    let per = |ns: f64| ns / n as f64;
    FloorResult {
        variant: if copy { "copy" } else { "hand-over" }.into(),
        elements: n,
        batch,
        wall_ns_per_element: per(wall),
        elements_per_s: n as f64 / (wall / 1e9),
        producer_cpu_ns_per_element: per(producer_cpu as f64),
        consumer_cpu_ns_per_element: per(consumer_cpu as f64),
        cpu_ns_per_element: per((producer_cpu + consumer_cpu) as f64),
        checked: sum == (n.wrapping_mul(n.wrapping_sub(1)) / 2),
    }
}

/// One line per variant.
pub fn describe(r: &FloorResult) -> String {
    format!(
        "{:<9} {} elements in batches of {}: {:.2} ns/element wall ({:.1} M elements/s), CPU \
         {:.2} ns/element (producer {:.2}, consumer {:.2}){}",
        r.variant,
        r.elements,
        r.batch,
        r.wall_ns_per_element,
        r.elements_per_s / 1e6,
        r.cpu_ns_per_element,
        r.producer_cpu_ns_per_element,
        r.consumer_cpu_ns_per_element,
        if r.checked { "" } else { " SUM MISMATCH" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element reaches the consumer once in both variants (its sum is checked), for
    /// counts that do not fill the last batch; bad options are refused.
    #[test]
    fn every_element_arrives_once() {
        for n in [0u64, 1, 1023, 1025, 10_000] {
            let c = FloorConfig {
                elements: n,
                batch: 1024,
                queue: 2,
            };
            for r in run(&c).unwrap() {
                assert!(r.checked, "{r:?}");
            }
        }
        let bad = FloorConfig {
            elements: 1,
            batch: 0,
            queue: 1,
        };
        assert!(run(&bad).is_err());
    }
}
