fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tracking = args[1].parse().unwrap();
    let g: u64 = args[2].parse().unwrap();
    let n: u64 = args[3].parse().unwrap();
    let rate: f64 = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(0.0);
    let mut rt = xorflow_runtime::RuntimeConfig::default();
    rt.tracking = tracking;
    rt.granularity = g;
    if let Ok(us) = std::env::var("ACK_US") {
        rt.ack_flush_interval = std::time::Duration::from_micros(us.parse().unwrap());
    }
    let r = xorflow_bench::chain::run(&xorflow_bench::chain::ChainParams {
        stages: 10,
        elements: n,
        rate,
        runtime: rt,
    })
    .unwrap();
    println!("{}", serde_json::to_string(&r).unwrap());
}
