//! The library's layers (docs/architecture.md): a module of `src/` may name only the modules
//! below it in [`LAYERS`] (`crate::X` paths outside comments and test code), so no import
//! circle can come back and `cluster` never reaches into `run`; and below the top level, no
//! module (file) imports another in a circle ([`no_import_cycle_among_modules`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first: each module may use those before it.
const LAYERS: &[&str] = &[
    "util", "game", "games", "policy", "tree", "eval", "cfr", "search", "nn", "rl", "cluster",
    "run", "serve", "bench",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code without its test modules and comments (`None` for a test file).
fn library_code(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") || name == "test_support.rs" {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    Some(without_comments(text))
}

fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a file names as `crate::X`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        found.insert(name);
    }
    found
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut breaches = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.trim_end_matches(".rs");
        let Some(level) = LAYERS.iter().position(|l| *l == top) else {
            continue; // lib.rs and the binaries
        };
        let Some(code) = library_code(file) else {
            continue;
        };
        checked += 1;
        for used in named_modules(&code) {
            if used == top {
                continue;
            }
            match LAYERS.iter().position(|l| *l == used) {
                Some(u) if u < level => {}
                _ => breaches.push(format!("{} uses crate::{used}", rel.display())),
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} library files found under {}",
        src.display()
    );
    assert!(
        breaches.is_empty(),
        "layering breaches:\n{}",
        breaches.join("\n")
    );
}

/// Only `nn` names burn: every other module reaches networks and devices through `nn`'s types
/// (`nn::Device`, snapshots, inference handles).
#[test]
fn only_nn_imports_burn() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut breaches = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("nn") {
            continue;
        }
        let Some(code) = library_code(file) else {
            continue;
        };
        if code.contains("burn::") || code.contains("burn_autodiff::") {
            breaches.push(rel.display().to_string());
        }
    }
    assert!(
        breaches.is_empty(),
        "files outside src/nn that name burn:\n{}",
        breaches.join("\n")
    );
}

#[test]
fn the_layer_check_sees_an_upward_import() {
    let code = "use crate::run::RunError;\nuse crate::util::SplitMix64; // crate::bench\n";
    let names = named_modules(&without_comments(code));
    assert_eq!(
        names,
        ["run", "util"].iter().map(|s| s.to_string()).collect()
    );
}

// ---------------------------------------------------------------------------------------------
// No import circle among sibling modules anywhere in src/.

/// A library module as its path below the crate (`""` for lib.rs, `"serve::api"`).
type Module = String;

/// The module of a file below `src/` (`foo/mod.rs` is `foo`), `None` for the binaries.
fn module_of(rel: &Path) -> Option<Module> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    match last.strip_suffix(".rs")? {
        "mod" | "lib" => {}
        stem => parts.push(stem.to_string()),
    }
    Some(parts.join("::"))
}

fn parent(module: &str) -> Module {
    module
        .rsplit_once("::")
        .map_or(String::new(), |(p, _)| p.to_string())
}

/// `true` when `ancestor` contains `module` (the crate root contains everything).
fn is_ancestor(ancestor: &str, module: &str) -> bool {
    ancestor.is_empty() || module.starts_with(&format!("{ancestor}::"))
}

/// The file's code without comments and without what follows `#[cfg(test)] mod tests {`
/// (`None` for a test file).
fn code_for_cycles(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") || name == "test_support.rs" {
        return None;
    }
    Some(non_test_code(&std::fs::read_to_string(path).unwrap()))
}

/// `text` without comments and without what follows `#[cfg(test)] mod tests {`.
fn non_test_code(text: &str) -> String {
    let code = without_comments(text);
    let lines: Vec<&str> = code.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests {"))
        .unwrap_or(lines.len());
    lines[..end].join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path a use tree starting at `text` spells, as segments: `a::{b, c::{d, e}}` gives
/// `a::b`, `a::c::d`, `a::c::e` (segments after the last `::` included, so `x::f(` gives `x::f`).
fn use_tree(text: &str) -> Vec<Vec<String>> {
    fn tree(s: &[char], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        loop {
            while *i < s.len() && s[*i].is_whitespace() {
                *i += 1;
            }
            if *i < s.len() && s[*i] == '{' {
                *i += 1;
                loop {
                    tree(s, i, &path, out);
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    match s.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    if s.get(*i) == Some(&'}') {
                        *i += 1;
                        break;
                    }
                }
                return;
            }
            let start = *i;
            while *i < s.len() && is_ident_char(s[*i]) {
                *i += 1;
            }
            if *i > start {
                path.push(s[start..*i].iter().collect());
            }
            let rest: String = s[*i..s.len().min(*i + 2)].iter().collect();
            if *i > start && rest == "::" {
                *i += 2;
            } else {
                break;
            }
        }
        out.push(path);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &[], &mut out);
    out
}

/// The paths `code` (the code of `module`, whose child modules are `children`) names, as
/// absolute segments below the crate: `crate::..`, `super::..`, `self::..` and `child::..`.
fn named_paths(module: &str, children: &BTreeSet<String>, code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let c = rest.chars().next().unwrap();
        let at_start = !code[..i].ends_with(|p: char| is_ident_char(p) || p == ':');
        if !(at_start && is_ident_char(c)) {
            i += c.len_utf8();
            continue;
        }
        let word: String = rest.chars().take_while(|&c| is_ident_char(c)).collect();
        let after = &rest[word.len()..];
        if !after.starts_with("::") {
            i += word.len();
            continue;
        }
        for path in use_tree(rest) {
            let mut segments = path.into_iter();
            let first = segments.next().unwrap_or_default();
            let mut base = match first.as_str() {
                "crate" => Vec::new(),
                "self" => split(module),
                "super" => split(&parent(module)),
                child if children.contains(child) => {
                    let mut b = split(module);
                    b.push(child.to_string());
                    b
                }
                _ => continue,
            };
            let mut segments = segments.peekable();
            while segments.peek().is_some_and(|s| s == "super") {
                segments.next();
                base.pop();
            }
            base.extend(segments);
            found.push(base);
        }
        i += word.len();
    }
    found
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

/// The import graph of `files` (`(module, code)`): for each module, the modules its paths
/// reach (each path taken to its deepest existing module) with one path as evidence; edges
/// to the module itself or to an ancestor (a child using its parent's items) left out.
fn module_graph(files: &[(Module, String)]) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
    for (module, code) in files {
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|m| !m.is_empty() && parent(m) == *module)
            .map(|m| m.rsplit("::").next().unwrap().to_string())
            .collect();
        let edges = graph.entry(module.clone()).or_default();
        for path in named_paths(module, &children, code) {
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|m| modules.contains(m))
                .unwrap_or_default();
            if target == *module || is_ancestor(&target, module) {
                continue;
            }
            edges.entry(target).or_insert_with(|| path.join("::"));
        }
    }
    graph
}

/// The strongly connected components of `graph` with more than one module (each sorted).
fn cycles(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Vec<Vec<Module>> {
    // Tarjan's algorithm, recursive (the graph has a few hundred modules).
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, BTreeMap<Module, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on_stack.insert(v);
        let graph = w.graph;
        for u in graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            loop {
                let u = w.stack.pop().unwrap();
                w.on_stack.remove(u);
                component.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

/// A cycle's modules with the edges among them and the path behind each.
fn describe(graph: &BTreeMap<Module, BTreeMap<Module, String>>, cycle: &[Module]) -> String {
    let mut text = format!("cycle among {}:\n", cycle.join(", "));
    for from in cycle {
        for (to, path) in &graph[from] {
            if cycle.contains(to) {
                text.push_str(&format!("  {from} -> {to} (names {path})\n"));
            }
        }
    }
    text
}

#[test]
fn no_import_cycle_among_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: Vec<(Module, String)> = paths
        .iter()
        .filter_map(|p| {
            let module = module_of(p.strip_prefix(&src).unwrap())?;
            Some((module, code_for_cycles(p)?))
        })
        .collect();
    assert!(
        files.len() > 100,
        "only {} library files found",
        files.len()
    );
    let graph = module_graph(&files);
    let edges: usize = graph.values().map(BTreeMap::len).sum();
    assert!(edges > 100, "only {edges} edges between modules found");
    let unknown: Vec<String> = cycles(&graph)
        .into_iter()
        .map(|c| describe(&graph, &c))
        .collect();
    assert!(
        unknown.is_empty(),
        "import cycles among modules of src/:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let file = |m: &str, code: &str| (m.to_string(), non_test_code(code));
    let files = vec![
        file("", "pub mod a;\npub mod b;\n"),
        file("a", "pub mod x;\npub mod y;\nuse x::Thing;\n"),
        file("a::x", "use super::y::{Other, deep::Q};\n"),
        file(
            "a::y",
            "use super::Thing; // crate::a::x\nfn f() { crate::b::g() }\n",
        ),
        file(
            "b",
            "pub fn g() { crate::a::x::h() }\n#[cfg(test)]\nmod tests {\n    use crate::a::y::T;\n}\n",
        ),
    ];
    let graph = module_graph(&files);
    let edges = |m: &str| graph[m].keys().cloned().collect::<Vec<_>>();
    // `x::Thing` in a's file is its child a::x; `a::y`'s use of its parent, the path in its
    // comment and b's test module are no edges; the group reaches a::y (the deepest module of `a::y::deep::Q`).
    assert_eq!(edges("a"), ["a::x"]);
    assert_eq!(edges("a::x"), ["a::y"]);
    assert_eq!(edges("a::y"), ["b"]);
    assert_eq!(edges("b"), ["a::x"]);
    assert_eq!(
        cycles(&graph),
        vec![vec!["a::x".to_string(), "a::y".into(), "b".into()]]
    );
    // Without a::x -> a::y (a::x using its parent instead) the circle is gone.
    let files: Vec<_> = files
        .into_iter()
        .filter(|(m, _)| m != "a::x")
        .chain([file("a::x", "use crate::a::Thing;\n")])
        .collect();
    assert!(cycles(&module_graph(&files)).is_empty());
}
