//! The random component graphs both tracker simulations (`invariant.rs`, `sharded.rs`) run on.
#![allow(dead_code)]

use rand::rngs::SmallRng;
use rand::Rng;
use xorflow_tracking::{ComponentId, Topology};

/// How a vertex ships its outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// One batch per (input batch, destination), sent before the input's receive tag.
    Immediate,
    /// Output buffers stay open for 1..=max_inputs input batches (or until a timeout).
    Open { max_inputs: u32 },
}

#[derive(Clone, Debug)]
pub struct Graph {
    pub upstream: Vec<Vec<usize>>,
    pub downstream: Vec<Vec<usize>>,
    pub source_vertices: Vec<usize>,
    pub window: Vec<Option<u64>>,
    pub output: Vec<Output>,
}

impl Graph {
    pub fn new(
        upstream: Vec<Vec<usize>>,
        source_vertices: Vec<usize>,
        window: Vec<Option<u64>>,
        output: Vec<Output>,
    ) -> Self {
        let n = upstream.len();
        assert!(window.len() == n && output.len() == n);
        let mut downstream = vec![Vec::new(); n];
        for (v, ups) in upstream.iter().enumerate() {
            for &u in ups {
                assert!(u < v, "vertices must be numbered topologically");
                downstream[u].push(v);
            }
        }
        Graph {
            upstream,
            downstream,
            source_vertices,
            window,
            output,
        }
    }

    /// `n` vertices, 1-2 sources; each later vertex has 1-2 upstream vertices and is a window of
    /// size 1..=10 with probability `windows` (numerator, denominator).
    pub fn random(n: usize, rng: &mut SmallRng, windows: (u32, u32)) -> Self {
        let ns = rng.random_range(1..=2.min(n - 1));
        let mut upstream = vec![Vec::new(); n];
        for (v, ups) in upstream.iter_mut().enumerate().skip(ns) {
            let k = rng.random_range(1..=2.min(v));
            while ups.len() < k {
                let u = rng.random_range(0..v);
                if !ups.contains(&u) {
                    ups.push(u);
                }
            }
        }
        let window = (0..n)
            .map(|v| {
                (v >= ns && rng.random_ratio(windows.0, windows.1))
                    .then(|| rng.random_range(1..=10))
            })
            .collect();
        let output = (0..n)
            .map(|_| {
                if rng.random_ratio(2, 5) {
                    Output::Open {
                        max_inputs: rng.random_range(1..=4),
                    }
                } else {
                    Output::Immediate
                }
            })
            .collect();
        Graph::new(upstream, (0..ns).collect(), window, output)
    }

    pub fn topology(&self) -> Topology {
        Topology::new(
            self.upstream
                .iter()
                .map(|ups| ups.iter().map(|&u| u as ComponentId).collect())
                .collect(),
        )
        .expect("topological numbering")
    }

    pub fn len(&self) -> usize {
        self.upstream.len()
    }

    /// True when some window feeds another window.
    pub fn has_window_chain(&self) -> bool {
        (0..self.len()).any(|v| {
            self.window[v].is_some() && self.downstream[v].iter().any(|&d| self.window[d].is_some())
        })
    }
}
