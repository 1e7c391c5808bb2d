//! The shipped models (`models/`): each loads as an `armac-eval --policy` and still scores what
//! its `score.json` records (exact NashConv on the small games), and a model directory with a
//! missing or corrupt file is refused with an error naming the file.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn models() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("score.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_shipped_model_scores_what_it_records() {
    let dirs = models();
    assert!(
        !dirs.is_empty(),
        "no models with a score.json under models/"
    );
    for dir in dirs {
        let score = json(&dir.join("score.json"));
        let game = score["game"].as_str().unwrap();
        assert_eq!(score["metric"], "nash_conv", "{}", dir.display());
        let out = run_ok(eval().args([
            "nashconv",
            "--game",
            game,
            "--policy",
            dir.to_str().unwrap(),
            "--json",
        ]));
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (want, got) = (num(&score, "value"), num(&got, "nash_conv"));
        assert!(
            (want - got).abs() <= 1e-9 * want.abs().max(1.0),
            "{}: records NashConv {want}, scores {got}",
            dir.display()
        );
        let size: u64 = armac::util::dir_size(&dir);
        assert!(size < 20 << 20, "{}: {size} bytes", dir.display());
    }
}

#[test]
fn a_model_with_a_missing_or_corrupt_file_is_refused_naming_it() {
    let src = models().into_iter().next().expect("a shipped model");
    let game = json(&src.join("score.json"))["game"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tmp("models", "broken");
    std::fs::create_dir_all(dir.join("checkpoint")).unwrap();
    std::fs::create_dir_all(dir.join("reservoir")).unwrap();
    for f in ["checkpoint/state.json", "checkpoint/config.toml"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let net = std::fs::read_dir(src.join("reservoir"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let net_name = net.file_name().to_string_lossy().into_owned();
    let eval_it = |needle: &str| {
        run_err(
            eval().args([
                "nashconv",
                "--game",
                &game,
                "--policy",
                dir.to_str().unwrap(),
            ]),
            needle,
        )
    };
    // The network file is missing.
    eval_it(&net_name);
    // Truncated.
    let bytes = std::fs::read(net.path()).unwrap();
    std::fs::write(
        dir.join("reservoir").join(&net_name),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    eval_it(&net_name);
    // The state is not JSON.
    std::fs::write(dir.join("reservoir").join(&net_name), &bytes).unwrap();
    std::fs::write(dir.join("checkpoint/state.json"), "{ not json").unwrap();
    eval_it("state.json");
    let _ = std::fs::remove_dir_all(&dir);
}
