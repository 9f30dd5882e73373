//! Checkpoint epochs tracked by trAcker (`crates/tracking/src/epochs.rs`), simulated on a chain
//! `sources -> 0 (map) -> 1 (window: emits on notifications) -> 2 (sink)` with two tracker shards
//! and random interleavings of emits, epoch advances, processing in any order, emissions and
//! flushes. The invariant: when a shard's reports combine to epoch frontier `F` for a component,
//! every batch of an epoch below `F` bound for that component or one upstream of it has been
//! processed, and nothing below `F` can still be sent there.

use proptest::prelude::*;
use xorflow_tracking::{
    split_flush, EpochDomain, FrontierCombiner, Granularity, LocalAcker, Topology, Tracker, INF,
};

#[derive(Clone, Debug)]
enum Step {
    /// Source `s` sends a batch (into component 0) in its current epoch.
    Emit(usize),
    /// Source `s` moves to its next epoch.
    Advance(usize),
    /// Component `c` processes its pending batch number `i` (modulo how many there are).
    Process(usize, usize),
    /// The window emits a result (into component 2) in its current epoch.
    WindowEmit,
    /// The window moves to its next epoch (it has snapshotted the previous one).
    WindowAdvance,
    /// The acker flushes to the shards, which report.
    Flush,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..2).prop_map(Step::Emit),
        1 => (0usize..2).prop_map(Step::Advance),
        6 => (0usize..3, any::<usize>()).prop_map(|(c, i)| Step::Process(c, i)),
        1 => Just(Step::WindowEmit),
        1 => Just(Step::WindowAdvance),
        2 => Just(Step::Flush),
    ]
}

struct Batch {
    epoch: u64,
    tag: u64,
}

struct Sim {
    domain: EpochDomain,
    acker: LocalAcker,
    shards: Vec<Tracker>,
    combiner: FrontierCombiner,
    pending: Vec<Vec<Batch>>,
    source_epoch: [u64; 2],
    window_epoch: u64,
    next_tag: u64,
}

impl Sim {
    fn new() -> Self {
        let domain = EpochDomain {
            components: 3,
            sources: 2,
            emitters: vec![1],
        };
        let g = Granularity::new(1);
        let shards = (0..2)
            .map(|k| {
                Tracker::sharded(
                    g,
                    Topology::chain(3),
                    2,
                    xorflow_tracking::ShardMap::new(2, k),
                )
                .with_epochs(domain.clone())
            })
            .collect();
        Sim {
            acker: LocalAcker::new(g),
            shards,
            combiner: FrontierCombiner::new(6, 2),
            pending: vec![Vec::new(), Vec::new(), Vec::new()],
            source_epoch: [0; 2],
            window_epoch: 0,
            next_tag: 1,
            domain,
        }
    }

    fn tag(&mut self) -> u64 {
        self.next_tag = self
            .next_tag
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(7);
        self.next_tag | 1
    }

    /// Sends a batch of `epoch` into component `c`: the send tag first.
    fn send(&mut self, c: usize, epoch: u64) {
        let tag = self.tag();
        let e = self.domain.component(c as u32);
        self.acker.xor_slots(e, epoch, epoch, tag);
        self.pending[c].push(Batch { epoch, tag });
    }

    fn epoch_frontier(&self, c: usize) -> u64 {
        self.combiner.frontier(self.domain.component(c as u32))
    }

    fn check(&self) -> Result<(), TestCaseError> {
        for c in 0..3 {
            let f = self.epoch_frontier(c);
            for u in 0..=c {
                for b in &self.pending[u] {
                    prop_assert!(
                        b.epoch >= f,
                        "component {} reported at epoch {} while a batch of epoch {} waits at {}",
                        c,
                        f,
                        b.epoch,
                        u
                    );
                }
            }
            for s in 0..2 {
                prop_assert!(self.source_epoch[s] >= f || self.source_epoch[s] == INF);
            }
            if c == 2 {
                prop_assert!(
                    self.window_epoch >= f,
                    "the window may still emit below {}",
                    f
                );
            }
        }
        Ok(())
    }

    fn run(&mut self, s: &Step) -> Result<(), TestCaseError> {
        match *s {
            Step::Emit(s) => {
                let e = self.source_epoch[s];
                self.send(0, e);
            }
            Step::Advance(s) => {
                self.source_epoch[s] += 1;
                let id = self.domain.source_id(s as u32);
                self.acker.heartbeat(id, self.source_epoch[s]);
            }
            Step::Process(c, i) => {
                if self.pending[c].is_empty() {
                    return Ok(());
                }
                let i = i % self.pending[c].len();
                let b = self.pending[c].remove(i);
                if c == 0 {
                    // A map: its output carries the input's epoch, sent before the receive tag.
                    self.send(1, b.epoch);
                }
                let e = self.domain.component(c as u32);
                self.acker.xor_slots(e, b.epoch, b.epoch, b.tag);
            }
            Step::WindowEmit => {
                let e = self.window_epoch;
                self.send(2, e);
            }
            Step::WindowAdvance => {
                // Only once the window's own epoch is complete (it snapshots at that point).
                if self.epoch_frontier(1) > self.window_epoch {
                    self.window_epoch += 1;
                    let id = self.domain.emitter_id(0);
                    self.acker.heartbeat(id, self.window_epoch);
                }
            }
            Step::Flush => {
                let f = self.acker.flush();
                for (k, piece) in split_flush(&f, 2).into_iter().enumerate() {
                    self.shards[k].apply(&piece).map_err(TestCaseError::fail)?;
                    for u in self.shards[k].advance() {
                        self.combiner.update(k, u).map_err(TestCaseError::fail)?;
                    }
                }
                self.check()?;
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn no_epoch_is_reported_complete_before_it_is(steps in proptest::collection::vec(step(), 1..300)) {
        let mut sim = Sim::new();
        for s in &steps {
            sim.run(s)?;
        }
        // Drain: sources end, everything is processed, the window ends; then every epoch
        // frontier is INF.
        for s in 0..2 {
            let id = sim.domain.source_id(s as u32);
            sim.acker.heartbeat(id, INF);
            sim.source_epoch[s] = INF;
        }
        for c in 0..3 {
            while !sim.pending[c].is_empty() {
                sim.run(&Step::Process(c, 0))?;
            }
        }
        sim.window_epoch = INF;
        let id = sim.domain.emitter_id(0);
        sim.acker.heartbeat(id, INF);
        sim.run(&Step::Flush)?;
        for c in 0..3 {
            prop_assert_eq!(sim.epoch_frontier(c), INF, "component {} after the end", c);
        }
        prop_assert!(sim.shards.iter().all(|t| t.regressions() == 0));
    }
}

#[test]
fn the_window_caps_downstream_epochs_but_not_its_own() {
    let mut sim = Sim::new();
    for s in 0..2 {
        sim.run(&Step::Advance(s)).unwrap();
        sim.run(&Step::Advance(s)).unwrap();
    }
    sim.run(&Step::Flush).unwrap();
    // Nothing in flight, sources at epoch 2: components 0 and 1 complete epochs 0 and 1 ...
    assert_eq!((sim.epoch_frontier(0), sim.epoch_frontier(1)), (2, 2));
    // ... but the sink waits for the window, which is still in epoch 0.
    assert_eq!(sim.epoch_frontier(2), 0);
    sim.run(&Step::WindowAdvance).unwrap();
    sim.run(&Step::Flush).unwrap();
    assert_eq!(sim.epoch_frontier(2), 1);
}

#[test]
fn unknown_epoch_participant_is_an_error() {
    let mut sim = Sim::new();
    sim.acker.heartbeat(9, 1);
    let f = sim.acker.flush();
    let e = sim.shards[0].apply(&f).unwrap_err();
    assert!(e.contains("unknown participant 9"), "{e}");
}
