//! XoY selects the same ids on every node (the Cloudprofiler paper, sec. 5.1; docs/papers.md),
//! whatever order or subset of the ids each node sees, so per-hop durations can be computed for the
//! sampled ids.

use std::collections::BTreeSet;

use proptest::prelude::*;
use xorflow_measure::log::{read_dir, LogConfig, Logs, Records};

fn kept(node: u32, spec: &str, ids: &[u64]) -> BTreeSet<u64> {
    let dir = tempfile::tempdir().unwrap();
    let logs = Logs::new(LogConfig::parse(spec).unwrap().with_dir(dir.path()), node);
    let mut ch = logs.open("hop").unwrap();
    for &id in ids {
        ch.log(id);
    }
    ch.close().unwrap();
    let files = read_dir(dir.path()).unwrap().files;
    let Records::Events(e) = &files[0].records else {
        panic!("events expected")
    };
    e.iter().map(|e| e.id).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_same_ids_are_kept_on_every_node(
        y in 1u64..300,
        x_frac in 0.0f64..=1.0,
        ids in prop::collection::vec(any::<u64>(), 0..400),
        seed in any::<u64>(),
        pow2 in any::<bool>(),
    ) {
        let y = if pow2 { 1u64 << (y % 12) } else { y };
        let x = ((x_frac * y as f64) as u64).min(y);
        let spec = format!("xoy:{x}/{y}");
        // Node B sees a shuffled subset (some ids sampled or lost upstream) in another order.
        let mut other: Vec<u64> = ids.iter().copied().filter(|id| (id ^ seed) % 3 != 0).collect();
        other.reverse();
        let a = kept(0, &spec, &ids);
        let b = kept(1, &spec, &other);
        let common: BTreeSet<u64> = other.iter().copied().collect();
        let a_on_common: BTreeSet<u64> = a.intersection(&common).copied().collect();
        prop_assert_eq!(&a_on_common, &b);
        let want: BTreeSet<u64> = ids.iter().copied().filter(|id| id % y < x).collect();
        prop_assert_eq!(a, want);
    }
}
