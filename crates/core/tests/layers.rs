//! The core's modules import only from the layers below their own, and
//! never in a circle: a module that reaches up (the machine reading the
//! engine, a reader reading the configuration) fails here. The layers are
//! those of docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `crates/core/src`, lowest layer first.
const LAYERS: &[(&str, &[&str])] = &[
    ("vocabulary", &["types", "error", "units", "util", "plugin", "events", "counters"]),
    ("streams and the machine", &["trace", "mem"]),
    ("policies", &["sched", "mech"]),
    ("the scenario", &["config"]),
    ("the run", &["engine", "results", "hcache", "thinprov", "cl1lock", "floor"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file that is built into the library: comments and
/// string literals removed, and nothing from the first `#[cfg(test)]` on
/// (tests may use any layer).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut block) = (false, 0);
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            _ if block > 0 => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    block -= 1;
                } else if c == '/' && chars.peek() == Some(&'*') {
                    chars.next();
                    block += 1;
                }
            }
            ('\\', _) if in_string => {
                chars.next();
            }
            ('"', _) => in_string = !in_string,
            _ if in_string => {}
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                block = 1;
            }
            _ => out.push(c),
        }
    }
    out
}

/// Each top-level module's imports of other top-level modules, with one
/// place each is made.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap();
        let module = rel.iter().next().unwrap().to_str().unwrap().trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let mut rest = text.as_str();
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            rest = after;
            // Macros exported at the root (`crate::register!`) are not modules.
            if after[name.len()..].starts_with('!') || name == module {
                continue;
            }
            out.entry(module.clone()).or_default().entry(name).or_insert_with(|| rel.display().to_string());
        }
    }
    out
}

#[test]
fn every_module_imports_only_from_layers_below_its_own() {
    let imports = imports();
    let mut wrong = Vec::new();
    for (module, targets) in &imports {
        let Some(mine) = layer_of(module) else {
            wrong.push(format!("{module} is in no layer: add it to LAYERS and to docs/architecture.md"));
            continue;
        };
        for (target, place) in targets {
            match layer_of(target) {
                Some(theirs) if theirs > mine => wrong.push(format!(
                    "{place}: {module} ({}) imports {target} ({}), a layer above",
                    LAYERS[mine].0, LAYERS[theirs].0
                )),
                Some(_) => {}
                None => wrong.push(format!("{place}: {target} is in no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_import_each_other_even_through_others() {
    let imports = imports();
    let graph: BTreeMap<&str, BTreeSet<&str>> =
        imports.iter().map(|(m, t)| (m.as_str(), t.keys().map(String::as_str).collect())).collect();
    // Depth-first search for a cycle; report it with its path.
    fn visit<'a>(
        m: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(i) = path.iter().position(|p| *p == m) {
            return Some([&path[i..], &[m]].concat().join(" -> "));
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for next in graph.get(m).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(cycle) = visit(module, &graph, &mut Vec::new(), &mut done) {
            panic!("an import cycle: {cycle}");
        }
    }
}

#[test]
fn the_check_sees_an_import_and_ignores_comments_strings_and_tests() {
    let text = "use crate::mem::cache::Cache;\n// crate::engine in a comment\n/* crate::engine */\n\
                let s = \"crate::engine\";\nfn f() { crate::trace::x() }\n#[cfg(test)]\nmod tests { use crate::engine; }";
    let code = code(text);
    assert!(code.contains("crate::mem") && code.contains("crate::trace"));
    assert!(!code.contains("crate::engine"), "{code}");
}
