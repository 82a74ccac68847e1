//! How fast can the benchmark's machine be simulated at all? The floor
//! (`cachesched_core::floor`) timed beside the engine's machine.
//!
//! `cargo run --release --example floor -- TRACE.cst [repeats]`
use std::path::Path;

fn main() {
    let path = std::env::args().nth(1).expect("a .cst trace");
    let repeats: usize = std::env::args().nth(2).map_or(3, |r| r.parse().expect("a number of repeats"));
    let f = cachesched_core::floor::measure(Path::new(&path), repeats).unwrap_or_else(|e| panic!("{e}"));
    println!("{} accesses, best of {repeats}; counts equal: yes", f.accesses);
    println!("decoding (one thread):      {:6.2} ns/access", f.decoding_ns);
    println!("engine, standard machine:   {:6.2} ns/access  {:6.1} M/s", f.engine_ns, 1e3 / f.engine_ns);
    println!(
        "engine, caches split by set on 2 threads: {:6.2} ns/access  {:6.1} M/s  (speed-up {:.2})",
        f.engine_split_ns,
        1e3 / f.engine_split_ns,
        f.engine_ns / f.engine_split_ns
    );
    println!(
        "floor, standard machine:    {:6.2} ns/access  {:6.1} M/s  (engine / floor: {:.2})",
        f.floor_ns,
        1e3 / f.floor_ns,
        f.engine_ns / f.floor_ns
    );
    println!(
        "floor, translation and two halves of the caches on 3 threads: {:6.2} ns/access  {:6.1} M/s",
        f.halves_ns,
        1e3 / f.halves_ns
    );
    println!("floor, the L1D alone:       {:6.2} ns/access  {:6.1} M/s", f.l1_ns, 1e3 / f.l1_ns);
}
