//! No import cycles between modules, in any crate of the workspace: each module's `crate::`,
//! `super::` and `self::` paths are read from its source file and resolved to the module they
//! name, and the graph must have no cycle. A module using its own ancestors or descendants is
//! containment, not a cycle (a format registered in its parent module, a policy's entry among
//! the policy's files); test modules are left out. The same graph checks one layer's rule: the
//! cache imports nothing from the layers around it (`the_cache_imports_no_layer_around_it`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`policy::entry`) → its source file.
fn modules(root: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("under the root");
                let mut parts: Vec<String> = rel
                    .with_extension("")
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The source without comment lines and without an inline `#[cfg(test)] mod tests` at its end.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable source");
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_test_module(name: &str) -> bool {
    name.rsplit("::")
        .next()
        .is_some_and(|last| last == "tests" || last.ends_with("_tests"))
}

/// The modules each module's paths lead to (ancestors and descendants left out).
fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (name, path) in mods {
        if is_test_module(name) {
            continue;
        }
        let here: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
        let code = code_of(path);
        let mut targets = BTreeSet::new();
        for start in ["crate::", "super::", "self::"] {
            for (i, _) in code.match_indices(start) {
                // A word boundary before: `tmproxy_core::` or `xsuper::` are not ours.
                let before = code[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let rest: Vec<&str> = code[i..]
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap_or("")
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .collect();
                let mut parts: Vec<&str> = match rest.first() {
                    Some(&"crate") => Vec::new(),
                    Some(&"self") => here.clone(),
                    _ => here[..here.len().saturating_sub(1)].to_vec(),
                };
                let mut segments = rest[1..].iter().peekable();
                // `super::super::x`
                while segments.peek() == Some(&&"super") {
                    parts.pop();
                    segments.next();
                }
                parts.extend(segments);
                let target = (0..=parts.len())
                    .rev()
                    .map(|k| parts[..k].join("::"))
                    .find(|m| mods.contains_key(m));
                if let Some(t) = target {
                    let related = t == *name
                        || name.starts_with(&format!("{t}::"))
                        || t.starts_with(&format!("{name}::"))
                        || t.is_empty()
                        || name.is_empty();
                    if !related && !is_test_module(&t) {
                        targets.insert(t);
                    }
                }
            }
        }
        graph.insert(name.clone(), targets);
    }
    graph
}

/// One cycle of the graph, if it has any.
fn a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ is in the workspace")
        .to_path_buf()
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    for dir in [
        "core/src",
        "src",
        "disk/src",
        "sampling/src",
        "simulations/src",
        "testkit/src",
    ] {
        let root = workspace().join(dir);
        let mods = modules(&root);
        assert!(mods.len() > 3, "{dir}: no sources found");
        if let Some(cycle) = a_cycle(&edges(&mods)) {
            panic!("{dir}: an import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let dir = std::env::temp_dir().join(format!("tmproxy-cycles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(dir.join("a.rs"), "use crate::b::B;\npub struct A;\n").expect("write");
    std::fs::write(
        dir.join("b.rs"),
        "// crate::a in a comment is not a use\npub struct B;\n",
    )
    .expect("write");
    assert_eq!(a_cycle(&edges(&modules(&dir))), None);
    std::fs::write(dir.join("b.rs"), "use super::a::A;\npub struct B;\n").expect("write");
    let cycle = a_cycle(&edges(&modules(&dir))).expect("a ↔ b");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"a".to_string()) && cycle.contains(&"b".to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The layers the cache may not import: what it needs of them (the fan-out, routing, the views)
/// comes in through its own traits, given at construction in `app.rs`.
const AROUND_THE_CACHE: [&str; 4] = ["http", "upstream", "routing", "serve"];

/// Each import of a module under `prefix` into one of the top-level modules `banned`, as
/// (importer, imported); test modules are left out, as for cycles.
fn imports_into(
    mods: &BTreeMap<String, PathBuf>,
    prefix: &str,
    banned: &[&str],
) -> Vec<(String, String)> {
    let under = |name: &str| name == prefix || name.starts_with(&format!("{prefix}::"));
    edges(mods)
        .into_iter()
        .filter(|(name, _)| under(name))
        .flat_map(|(name, targets)| targets.into_iter().map(move |t| (name.clone(), t)))
        .filter(|(_, t)| banned.contains(&t.split("::").next().unwrap_or("")))
        .collect()
}

#[test]
fn the_cache_imports_no_layer_around_it() {
    let mods = modules(&workspace().join("src"));
    assert!(mods.contains_key("cache::service"), "src/cache not found");
    let found = imports_into(&mods, "cache", &AROUND_THE_CACHE);
    assert!(
        found.is_empty(),
        "src/cache imports a layer around it (give the cache a trait instead): {}",
        found
            .iter()
            .map(|(from, to)| format!("{from} → {to}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
fn an_import_out_of_the_cache_is_found() {
    let dir = std::env::temp_dir().join(format!("tmproxy-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("cache")).expect("temp dir");
    std::fs::write(dir.join("lib.rs"), "pub mod cache;\npub mod http;\n").expect("write");
    std::fs::write(dir.join("http.rs"), "pub struct View;\n").expect("write");
    std::fs::write(dir.join("cache/mod.rs"), "pub mod store;\n").expect("write");
    std::fs::write(
        dir.join("cache/store.rs"),
        "// crate::http in a comment is not a use\npub struct Store;\n",
    )
    .expect("write");
    assert!(imports_into(&modules(&dir), "cache", &AROUND_THE_CACHE).is_empty());
    std::fs::write(
        dir.join("cache/store.rs"),
        "use super::super::http::View;\n",
    )
    .expect("write");
    let found = imports_into(&modules(&dir), "cache", &AROUND_THE_CACHE);
    assert_eq!(found, [("cache::store".to_string(), "http".to_string())]);
    let _ = std::fs::remove_dir_all(&dir);
}
