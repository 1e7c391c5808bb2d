//! The library's layers (docs/architecture.md): a module of `src/` may name only the modules
//! below it in [`LAYERS`] (`crate::X` paths outside comments and test code), so no import
//! circle can come back and `cluster` never reaches into `run`.

use std::collections::BTreeSet;
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
