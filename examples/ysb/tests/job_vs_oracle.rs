//! Property: for any events file (times out of order, late events, malformed lines, unknown ads)
//! and any split over sources and workers, the job writes exactly the oracle's counts
//! (`src/oracle.rs`): no window is emitted before its substream is complete (it would miss
//! views) and no view is counted twice.

use proptest::prelude::*;
use xorflow_ysb::event::{Event, EventType};
use xorflow_ysb::{oracle, run, YsbConfig, WINDOW_MS};

const TABLE: &str = "{ \"a0\": \"c0\"}\n{ \"a1\": \"c0\"}\n{ \"a2\": \"c1\"}\n{ \"a3\": \"c2\"}\n";

/// One line: a valid event (ad index 0-4, 4 being unknown; a time offset; a type) or garbage.
fn line() -> impl Strategy<Value = Option<(usize, u64, usize)>> {
    prop_oneof![
        9 => (0usize..5, 0u64..400, 0usize..3).prop_map(Some),
        1 => Just(None),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn the_job_counts_what_the_oracle_counts(
        lines in proptest::collection::vec(line(), 0..400),
        lateness_ms in prop_oneof![Just(0u64), Just(100), Just(5_000), Just(30_000)],
        sources in 1usize..4,
        workers in 1usize..3,
        granularity in prop_oneof![Just(1u64), Just(250), Just(1000), Just(10_000)],
        // Small batches let the frontier move while the file is still being read.
        batch_size in prop_oneof![Just(1usize), Just(7), Just(1024)],
        // Paced (40 s of event time in 20 ms) the windows close while later lines are still
        // due, so a source that heartbeats too far ahead loses views; unpaced, all in a rush.
        speed in prop_oneof![Just(None), Just(Some(2000.0))],
        // Partial batches sent when a worker goes idle, or only at the flush timeout.
        batch_flush_on_idle in any::<bool>(),
        // A component per window instance, or one for the window vertex.
        instance_frontiers in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for (i, l) in lines.iter().enumerate() {
            match l {
                // A drifting clock with jitter, on a 100 ms grid so that ties with the running
                // maximum minus the lateness (the boundary cases) are common.
                Some((ad, dt, kind)) => text.push_str(&Event {
                    user_id: "u", page_id: "p", ad_id: &format!("a{ad}"), ad_type: "mail",
                    event_type: EventType::ALL[*kind], event_time: 1_000_000 + (i as u64 + dt) * 100,
                    ip_address: "1.2.3.4",
                }.to_json()),
                None => text.push_str("{\"user_id\": 3}"),
            }
            text.push('\n');
        }
        let (k, a, c) = (dir.path().join("k.txt"), dir.path().join("a.txt"), dir.path().join("c.csv"));
        std::fs::write(&k, &text).unwrap();
        std::fs::write(&a, TABLE).unwrap();
        let mut cfg = YsbConfig::new(k, a, c.clone());
        cfg.sources = sources;
        cfg.lateness_ms = lateness_ms;
        cfg.runtime.workers = workers;
        cfg.runtime.granularity = granularity;
        cfg.runtime.batch_size = batch_size;
        cfg.runtime.batch_flush_on_idle = batch_flush_on_idle;
        cfg.runtime.instance_frontiers = instance_frontiers;
        cfg.speed = speed;
        let s = run(&cfg).unwrap();
        let want = oracle::counts(&text, TABLE, lateness_ms, WINDOW_MS).unwrap();
        let mut expected = String::from("campaign_id,window_start_ms,views\n");
        for ((c, w), v) in &want {
            expected.push_str(&format!("{c},{w},{v}\n"));
        }
        prop_assert_eq!(std::fs::read_to_string(&c).unwrap(), expected);
        prop_assert_eq!(s.views, want.values().sum::<u64>());
        prop_assert_eq!(s.elements_below_frontier, 0);
        prop_assert_eq!(s.malformed, lines.iter().filter(|l| l.is_none()).count() as u64);
    }
}
