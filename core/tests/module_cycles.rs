//! No import cycles between modules, in any crate of the workspace: each module's `crate::`,
//! `super::`, `self::` and child-name paths are read from its source file and resolved to the
//! module they name (through a façade's `pub use`), and the graph must have no cycle. A file that
//! holds only `mod` and `use` lines is a façade, and its links to its own children are
//! containment; any other file counts like every file, so a parent holding types its children
//! use may not call them. Test modules are left out. The same graph checks the server's layers:
//! no import runs up a layer (`LAYERS`), and the cache imports nothing from the layers around it.

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
                // A binary's `main.rs` beside a `lib.rs` is a crate of its own (it reaches the
                // library by name), not the library's root.
                let root_of_its_crate = match parts.last().map(String::as_str) {
                    Some("mod" | "lib") => true,
                    Some("main") => !path.with_file_name("lib.rs").exists(),
                    _ => false,
                };
                if root_of_its_crate {
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

/// Whether a module holds code, not only `mod` declarations and `use` lines (a façade): a
/// façade's re-exports and its children's `super::` paths are containment, while a module with
/// code counts like any other file, so a parent holding types its children use may not call them.
fn holds_code(code: &str) -> bool {
    let mut rest = code.trim();
    while !rest.is_empty() {
        let item = rest
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        let declaration = item.starts_with("mod ") || item.starts_with("use ");
        let attribute = rest.starts_with("#[") || rest.starts_with("#![");
        let end = if attribute {
            rest.find(']')
        } else {
            rest.find(';')
        };
        match end {
            Some(i) if declaration || attribute => rest = rest[i + 1..].trim_start(),
            _ => return true,
        }
    }
    false
}

/// A path's start resolved against the module `here`: `crate::a::b` → [a, b], `super::x` → the
/// parent's x, `self::x` and a child's bare name `x::…` → here's x.
fn absolute(here: &[&str], rest: &[&str]) -> Vec<String> {
    let mut parts: Vec<String> = match rest.first() {
        Some(&"crate") => Vec::new(),
        Some(&"super") => here[..here.len().saturating_sub(1)]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        Some(&"self") => here.iter().map(|s| s.to_string()).collect(),
        // A child's bare name: the child is the first segment.
        _ => {
            let mut v: Vec<String> = here.iter().map(|s| s.to_string()).collect();
            v.extend(rest.first().map(|s| s.to_string()));
            v
        }
    };
    let mut segments = rest[1..].iter().peekable();
    // `super::super::x`
    while segments.peek() == Some(&&"super") {
        parts.pop();
        segments.next();
    }
    parts.extend(segments.map(|s| s.to_string()));
    parts
}

/// Each path in a module's code that starts at `crate::`, `super::`, `self::` or the bare name of
/// one of its child modules, split into segments (a `{…}` group yields one path per name).
fn paths_in(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut starts: Vec<usize> = ["crate::", "super::", "self::"]
        .iter()
        .flat_map(|s| code.match_indices(s).map(|(i, _)| i))
        .collect();
    for child in children {
        starts.extend(code.match_indices(&format!("{child}::")).map(|(i, _)| i));
    }
    for i in starts {
        // A word boundary before (`tmproxy_core::`, `xsuper::` are not ours), and not the tail
        // of a longer path (`other::child::`).
        let before = &code[..i];
        if before.chars().next_back().is_some_and(word) || before.ends_with("::") {
            continue;
        }
        let tail = &code[i..];
        let head: String = tail.chars().take_while(|&c| word(c) || c == ':').collect();
        let base: Vec<String> = head
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        // `use super::{a::A, b}`: one path per name in the group.
        let group = tail[head.len()..]
            .strip_prefix('{')
            .and_then(|g| g.find('}').map(|e| &g[..e]));
        match group {
            Some(g) => {
                for name in g.split(',') {
                    let mut path = base.clone();
                    path.extend(
                        name.split_whitespace()
                            .next()
                            .unwrap_or("")
                            .split("::")
                            .filter(|s| !s.is_empty() && s.chars().all(word))
                            .map(str::to_owned),
                    );
                    out.push(path);
                }
            }
            None => out.push(base),
        }
    }
    out
}

fn children_of(name: &str, mods: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let prefix = if name.is_empty() {
        String::new()
    } else {
        format!("{name}::")
    };
    mods.keys()
        .filter_map(|m| m.strip_prefix(&prefix))
        .filter(|rest| !rest.is_empty() && !rest.contains("::"))
        .map(str::to_owned)
        .collect()
}

/// The module a path names: the longest known prefix, then through a façade's re-exports (a
/// `pub use a::X` in a façade sends `façade::X` on to `a`).
fn resolve(
    parts: &[String],
    mods: &BTreeMap<String, PathBuf>,
    reexports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
) -> Option<String> {
    let mut parts = parts.to_vec();
    for _ in 0..8 {
        let k = (0..=parts.len())
            .rev()
            .find(|&k| mods.contains_key(&parts[..k].join("::")))?;
        let module = parts[..k].join("::");
        let next = parts
            .get(k)
            .and_then(|name| reexports.get(&module)?.get(name));
        match next {
            Some(to) => {
                let mut followed = to.clone();
                followed.extend(parts[k + 1..].iter().cloned());
                parts = followed;
            }
            None => return Some(module),
        }
    }
    None
}

/// The modules each module's paths lead to. An edge between a module and its ancestor or
/// descendant is left out only when the ancestor is a façade; test modules are left out.
fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let code: BTreeMap<&String, String> = mods.iter().map(|(n, p)| (n, code_of(p))).collect();
    let facade: BTreeSet<&String> = code
        .iter()
        .filter(|(_, c)| !holds_code(c))
        .map(|(n, _)| *n)
        .collect();
    // A façade's `pub use` names → the absolute path they stand for.
    let mut reexports: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for name in &facade {
        let here: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
        let children = children_of(name, mods);
        for line in code[*name].split(';') {
            if !line.trim_start().starts_with("pub") || !line.contains("use ") {
                continue;
            }
            for path in paths_in(line, &children) {
                let segs: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Some(last) = path.last() {
                    reexports
                        .entry(name.to_string())
                        .or_default()
                        .insert(last.clone(), absolute(&here, &segs));
                }
            }
        }
    }
    let ancestor = |a: &str, d: &str| a.is_empty() || d.starts_with(&format!("{a}::"));
    let mut graph = BTreeMap::new();
    for name in mods.keys() {
        if is_test_module(name) {
            continue;
        }
        let here: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
        let children = children_of(name, mods);
        let mut targets = BTreeSet::new();
        for path in paths_in(&code[name], &children) {
            let segs: Vec<&str> = path.iter().map(String::as_str).collect();
            let Some(t) = resolve(&absolute(&here, &segs), mods, &reexports) else {
                continue;
            };
            let contained = (ancestor(&t, name) && facade.contains(&t))
                || (ancestor(name, &t) && facade.contains(name));
            if t != *name && !contained && !is_test_module(&t) {
                targets.insert(t);
            }
        }
        graph.insert(name.clone(), targets);
    }
    graph
}

/// The graph's cycles: each set of modules that reach one another (Tarjan's strongly connected
/// components of more than one module), so a failure names every cycle at once.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, node: &'g str) {
        let i = w.index.len();
        w.index.insert(node, i);
        w.low.insert(node, i);
        w.stack.push(node);
        for next in w.graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !w.index.contains_key(next) {
                visit(w, next);
                let low = w.low[node].min(w.low[next]);
                w.low.insert(node, low);
            } else if w.stack.contains(&next) {
                let low = w.low[node].min(w.index[next]);
                w.low.insert(node, low);
            }
        }
        if w.low[node] == w.index[node] {
            let from = w.stack.iter().rposition(|n| *n == node).unwrap_or(0);
            let component: Vec<String> = w.stack.drain(from..).map(str::to_owned).collect();
            if component.len() > 1 {
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !w.index.contains_key(node.as_str()) {
            visit(&mut w, node);
        }
    }
    w.out
}

/// Within one cycle, the pairs that import each other directly, as `a ↔ b`.
fn describe(component: &[String], graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    let inside = |from: &String| -> Vec<String> {
        graph[from]
            .iter()
            .filter(|t| component.contains(t))
            .cloned()
            .collect()
    };
    let arrows: Vec<String> = component
        .iter()
        .map(|from| format!("{from} → {}", inside(from).join(", ")))
        .collect();
    format!("{{{}}}", arrows.join("; "))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ is in the workspace")
        .to_path_buf()
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    let mut report = Vec::new();
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
        let graph = edges(&mods);
        for cycle in cycles(&graph) {
            report.push(format!("{dir}: {}", describe(&cycle, &graph)));
        }
    }
    assert!(
        report.is_empty(),
        "{} import cycles (each: a module → the modules of its cycle it imports):\n{}",
        report.len(),
        report.join("\n")
    );
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
    assert!(cycles(&edges(&modules(&dir))).is_empty());
    std::fs::write(dir.join("b.rs"), "use super::a::A;\npub struct B;\n").expect("write");
    assert_eq!(cycles(&edges(&modules(&dir))).len(), 1, "a ↔ b");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_parent_with_code_counts_like_any_file_and_a_facade_does_not() {
    let dir = std::env::temp_dir().join(format!("tmproxy-parents-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("p")).expect("temp dir");
    std::fs::write(dir.join("lib.rs"), "pub mod p;\n").expect("write");
    std::fs::write(
        dir.join("p/child.rs"),
        "use super::Shared;\npub fn run() {}\n",
    )
    .expect("write");
    // The parent holds what its child uses and calls the child: a cycle.
    std::fs::write(
        dir.join("p/mod.rs"),
        "mod child;\npub struct Shared;\npub fn go() { child::run() }\n",
    )
    .expect("write");
    assert_eq!(cycles(&edges(&modules(&dir))).len(), 1, "p ↔ p::child");
    // The shared type in a file of its own and the parent a façade: no cycle, and the child's
    // `super::Shared` leads through the re-export to the file that holds it.
    std::fs::write(
        dir.join("p/mod.rs"),
        "mod child;\nmod shared;\npub use shared::Shared;\n",
    )
    .expect("write");
    std::fs::write(dir.join("p/shared.rs"), "pub struct Shared;\n").expect("write");
    let graph = edges(&modules(&dir));
    assert!(cycles(&graph).is_empty());
    assert!(graph["p::child"].contains("p::shared"), "{graph:?}");
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

/// The server's top-level modules, lowest layer first: a module imports only from its own layer's
/// other modules or from layers below it, so a request walks down from `cli` and `serve` to the
/// leaves and nothing reaches back up.
const LAYERS: [&[&str]; 10] = [
    &["clock", "encoding", "memo", "stripe", "uri_r"],
    &["config", "logs"],
    &["cache"],
    &["routing", "upstream"],
    &["error"],
    &["metrics", "view", "web"],
    &["http"],
    &["serve"],
    &["app", "demo"],
    &["cli", "main"],
];

/// Each import from a top-level module into a higher layer, as (importer, imported).
fn upward_imports(mods: &BTreeMap<String, PathBuf>) -> Vec<(String, String)> {
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&top(m).as_str()));
    edges(mods)
        .into_iter()
        .flat_map(|(from, tos)| tos.into_iter().map(move |to| (from.clone(), to)))
        .filter(|(from, to)| match (layer(from), layer(to)) {
            (Some(a), Some(b)) => b > a,
            _ => false,
        })
        .collect()
}

#[test]
fn every_top_level_module_has_a_layer_and_no_import_runs_up() {
    let mods = modules(&workspace().join("src"));
    let unplaced: BTreeSet<String> = mods
        .keys()
        .map(|m| m.split("::").next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty() && !LAYERS.iter().any(|l| l.contains(&t.as_str())))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of LAYERS: {unplaced:?}"
    );
    let up = upward_imports(&mods);
    assert!(
        up.is_empty(),
        "imports running up a layer: {}",
        up.iter()
            .map(|(f, t)| format!("{f} → {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
