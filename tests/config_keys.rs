//! The key reference cannot rot: every key the config structs accept
//! (`armac::run::config::key_reference`) is documented as `` `armac.KEY` `` in `docs/armac.md`
//! (the ARMAC keys) or `` `KEY` `` in `docs/configs.md` (every other key).

use armac::run::config::key_reference;
use std::path::Path;

#[test]
fn every_config_key_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |page: &str| std::fs::read_to_string(root.join(page)).unwrap_or_default();
    let (armac_page, configs_page) = (read("docs/armac.md"), read("docs/configs.md"));
    let mut missing: Vec<String> = Vec::new();
    for (page, text, keys) in [
        (
            "docs/armac.md",
            &armac_page,
            key_reference()
                .into_iter()
                .filter(|k| k.starts_with("armac."))
                .collect::<Vec<_>>(),
        ),
        (
            "docs/configs.md",
            &configs_page,
            key_reference()
                .into_iter()
                .filter(|k| !k.starts_with("armac."))
                .collect(),
        ),
    ] {
        let absent: Vec<String> = keys
            .into_iter()
            .filter(|k| !text.contains(&format!("`{k}`")))
            .collect();
        if !absent.is_empty() {
            let file = root.join(page);
            let state = if file.is_file() {
                ""
            } else {
                " (the file does not exist)"
            };
            missing.push(format!(
                "{page}{state} does not mention {} key(s), each wanted as `key` in backticks: {}",
                absent.len(),
                absent.join(", ")
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
