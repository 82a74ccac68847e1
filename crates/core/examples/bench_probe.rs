use cachesched_core::engine::simulate_json;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s: f64 = args.get(1).map(|x| x.parse().unwrap()).unwrap_or(1.0);
    let ws = args.get(2).cloned().unwrap_or("64MiB".into());
    let w = args.get(3).map(|x| x.parse().unwrap()).unwrap_or(0.5f64);
    let tlb = args.get(4).map(|x| x == "tlb").unwrap_or(true);
    let sws = args.get(5).cloned().unwrap_or("64MiB".into());
    let cfg = format!(
        r#"{{"machine": {{"preset": "standard" {} }}, "run": {{"max_accesses": 10000000}},
      "workload": {{"kind": "mix", "params": {{"accesses": 10000000, "components": [
        {{"weight": {w}, "workload": {{"kind": "stream", "params": {{"working_set_bytes": "{sws}", "stride_bytes": 8, "base_addr": 68719476736}}}}}},
        {{"weight": {}, "workload": {{"kind": "zipf", "params": {{"working_set_bytes": "{ws}", "exponent": {s}, "base_addr": 137438953472}}}}}}
      ]}}}}}}"#,
        if tlb { "" } else { r#", "tlb": false"# },
        1.0 - w
    );
    let r = simulate_json(&cfg, None).unwrap();
    println!("{:.1} M/s  cpi {:.3}", r.summary.accesses_per_second / 1e6, r.summary.cpi);
    for c in &r.caches {
        let h: u64 = c.stats.hits[..3].iter().sum();
        let m: u64 = c.stats.misses[..3].iter().sum();
        println!("  {:<20} miss/access {:.4}", c.path, m as f64 / r.summary.accesses as f64);
        let _ = h;
    }
}
