//! The engine's identity for the results store: a hash of the core's and
//! the bindings' sources, so that runs stored by one build of the engine
//! are not taken for runs of another (`cachesched._core.__build__`).

use std::path::{Path, PathBuf};

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for (tag, root) in [("core", here.join("../core/src")), ("py", here.join("src"))] {
        println!("cargo:rerun-if-changed={}", root.display());
        walk(tag, &root, &root, &mut files);
    }
    files.sort();
    // FNV-1a over each file's name and bytes: the same on every machine
    // that builds the same sources.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, path) in &files {
        eat(name.as_bytes());
        eat(&std::fs::read(path).unwrap_or_default());
    }
    let id = if files.is_empty() { "unknown".to_string() } else { format!("{hash:016x}") };
    println!("cargo:rustc-env=CACHESCHED_BUILD={id}");
}

/// Every file under `dir`, as (`tag/` and its path under `root`, its path).
fn walk(tag: &str, root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            walk(tag, root, &path, out);
        } else if let Ok(under) = path.strip_prefix(root) {
            out.push((format!("{tag}/{}", under.display()), path));
        }
    }
}
