//! The fuzzing harness in the test suite: a short campaign on every target
//! finds nothing, the inputs that once found bugs are handled, and the
//! harness itself reports what it must.

use std::path::Path;

use cachesched_fuzz::campaign;
use cachesched_fuzz::memory;
use cachesched_fuzz::targets::{check, target, Finding, Target, Verdict, TARGETS};

#[global_allocator]
static ALLOCATOR: memory::Watched = memory::Watched;

#[test]
fn the_memory_watch_sees_allocations() {
    let base = memory::start();
    let block = vec![1u8; 3 << 20];
    assert!(memory::peak(base) >= 3 << 20);
    drop(block);
    let hog = Target {
        name: "hog",
        run: |_| Ok(Verdict::Accepted(vec![7u8; 400 << 20].len() as u64)),
        seeds: Vec::new,
        tokens: &[],
    };
    match check(&hog, b"") {
        Err(Finding(what)) => assert!(what.contains("MiB of host memory"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_short_campaign_on_every_target_finds_nothing() {
    for t in TARGETS {
        let report = campaign::run(t, 50_000, 7);
        let shown: Vec<String> = report.findings.iter().map(|(input, what)| format!("{what}: {input:?}")).collect();
        assert!(shown.is_empty(), "{}: {}", t.name, shown.join("\n"));
        assert_eq!(report.inputs, 50_000);
        // Both paths are exercised: the campaign is not stuck on one outcome.
        assert!(report.accepted > 0 && report.rejected > 0, "{}: {report:?}", t.name);
        assert!(report.outcomes >= 5, "{}: only {} outcomes", t.name, report.outcomes);
    }
}

#[test]
fn the_inputs_that_found_bugs_are_handled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut replayed = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let t = target(&name).unwrap_or_else(|| panic!("{}: no target {name}", dir.display()));
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let verdict = check(t, &std::fs::read(&path).unwrap());
            assert!(verdict.is_ok(), "{}: {:?}", path.display(), verdict);
            replayed += 1;
        }
    }
    assert!(replayed >= 10, "{replayed} regression inputs");
}

#[test]
fn the_issue_19_configurations_are_refused_at_their_keys() {
    let config = target("config").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions/config");
    for (file, key) in [
        ("llc-1tib.toml", "machine.llc.size_bytes"),
        ("tlb-2-31.toml", "machine.tlb.l1d.entries"),
        ("nodes-1e9.toml", "machine.memory.nodes"),
        ("batch-4e9.toml", "run.batch"),
        ("empty-key.toml", "\"\""),
        ("count-2-32.toml", "tasks[0].count"),
        ("vcpus-2-32.toml", "scheduler.params.vcpus"),
    ] {
        match check(config, &std::fs::read(root.join(file)).unwrap()) {
            Ok(Verdict::Rejected(message)) => assert!(message.contains(&format!("{key}: ")), "{file}: {message}"),
            other => panic!("{file}: {other:?}"),
        }
    }
}

#[test]
fn the_harness_reports_panics_unplaced_errors_and_empty_traces() {
    let panics = Target { name: "panics", run: |_| panic!("boom"), seeds: Vec::new, tokens: &[] };
    assert_eq!(check(&panics, b"x"), Err(Finding("panicked: boom".into())));
    let lackey = target("lackey").unwrap();
    assert!(check(lackey, b"").is_ok(), "an empty trace is refused with its position");
    assert!(matches!(check(lackey, b" L 1000,8\n"), Ok(Verdict::Accepted(1))));
    let din = target("din").unwrap();
    match check(din, b"0 1000\n1 zz\n") {
        Ok(Verdict::Rejected(message)) => assert!(message.contains("line 2"), "{message}"),
        other => panic!("{other:?}"),
    }
}
