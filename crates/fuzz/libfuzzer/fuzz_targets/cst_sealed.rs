#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let target = cachesched_fuzz::targets::target("cst-sealed").expect("a target of crates/fuzz");
    if let Err(finding) = cachesched_fuzz::check(target, data) {
        panic!("{finding}");
    }
});
