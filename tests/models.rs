//! The shipped models (`models/`): each loads as an `armac-eval --policy` and still scores what
//! its `score.json` records (exact NashConv on the small games; on Hold'em a seeded match and a
//! small-sample scorecard, beside a consistent full scorecard), and a model directory with a
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
        let (want, got) = match score["metric"].as_str() {
            // Small games: the exact NashConv.
            Some("nash_conv") => {
                let out = run_ok(eval().args([
                    "nashconv",
                    "--game",
                    game,
                    "--policy",
                    dir.to_str().unwrap(),
                    "--json",
                ]));
                let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                (num(&score, "value"), num(&got, "nash_conv"))
            }
            // Hold'em: a small seeded match (deals and action draws fixed by the seed), whose
            // result must come out as recorded; the large-sample scores are recorded beside it.
            Some("match_mbb") => {
                let check = &score["check"];
                let out = run_ok(
                    eval()
                        .args(["match", "--game", game, "--a", &policy_arg(&dir, &score)])
                        .args(search_args(&score))
                        .args([
                            "--b",
                            check["opponent"].as_str().unwrap(),
                            "--hands",
                            &check["hands"].to_string(),
                            "--seed",
                            &check["seed"].to_string(),
                            "--json",
                        ]),
                );
                let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                for key in ["vs_uniform", "vs_always_call"] {
                    assert!(
                        score[key]["mean_mbb"].is_number() && score[key]["ci95_mbb"].is_number(),
                        "{}: no {key} record",
                        dir.display()
                    );
                }
                check_scorecard(&dir, &score);
                (num(&score, "value"), num(&got, "mean_mbb"))
            }
            m => panic!("{}: unknown metric {m:?}", dir.display()),
        };
        assert!(
            (want - got).abs() <= 1e-9 * want.abs().max(1.0),
            "{}: records {want}, scores {got}",
            dir.display()
        );
        let size: u64 = armac::util::dir_size(&dir);
        assert!(size < 20 << 20, "{}: {size} bytes", dir.display());
    }
}

const VARIANTS: [&str; 3] = ["fc", "fcpa", "fc12-fcpa34"];

/// How `armac-eval` names the model: `sog:DIR` for a Student of Games model (`"policy":
/// "sog"` in its `score.json`), else the directory.
fn policy_arg(dir: &Path, score: &serde_json::Value) -> String {
    match score["policy"].as_str() {
        Some("sog") => format!("sog:{}", dir.display()),
        None => dir.display().to_string(),
        Some(p) => panic!("{}: unknown policy kind {p}", dir.display()),
    }
}

/// `--search-iterations N` when the model records the search it was scored with.
fn search_args(score: &serde_json::Value) -> Vec<String> {
    match score["search_iterations"].as_u64() {
        Some(n) => vec!["--search-iterations".into(), n.to_string()],
        None => Vec::new(),
    }
}

/// A Hold'em model's `scorecard` (`armac-eval scorecard --json` at its stated hands): every
/// field is there and finite, each LBR ratio is the row's mean over LBR's against uniform,
/// and the small-sample `scorecard_check` beside it comes out as recorded when re-run.
fn check_scorecard(dir: &Path, score: &serde_json::Value) {
    let name = dir.display();
    let card = &score["scorecard"];
    assert!(card.is_object(), "{name}: no scorecard in score.json");
    let policies = card["policies"].as_object().unwrap();
    let columns: &[&str] = match score["policy"].as_str() {
        Some("sog") => &["search"],
        _ => &["average", "current"],
    };
    assert!(
        columns.iter().all(|c| policies.contains_key(*c)),
        "{name}: the scorecard should hold the columns {columns:?}"
    );
    let finite = |v: &serde_json::Value, key: &str| {
        let x = num(v, key);
        assert!(x.is_finite(), "{name}: {key} = {x} in {v}");
        x
    };
    for p in policies.values() {
        for key in ["vs_uniform", "vs_always_call"] {
            finite(&p[key], "mean");
            finite(&p[key], "ci95");
            assert_eq!(p[key]["hands"], card["match_hands"], "{name}: {p}");
        }
        for v in VARIANTS {
            let (row, uniform) = (&p["lbr"][v], &card["lbr_uniform"][v]);
            finite(row, "ci95");
            finite(row, "ratio_ci95");
            assert_eq!(row["seed"], uniform["seed"], "{name}: {v} is not paired");
            assert_eq!(row["hands"], card["hands"], "{name}: {row}");
            let want = finite(row, "mean") / finite(uniform, "mean");
            let ratio = finite(row, "ratio");
            assert!(
                (ratio - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{name}: {v} ratio {ratio}, mean / uniform mean {want}"
            );
        }
    }
    // The small-sample scorecard, re-run with its recorded options, gives what it records.
    let check = &score["scorecard_check"];
    let arg = |k: &str| check[k].as_u64().unwrap().to_string();
    let out = run_ok(
        eval()
            .args(["scorecard", "--policy", &policy_arg(dir, score)])
            .args(search_args(score))
            .args([
                "--game",
                score["game"].as_str().unwrap(),
                "--hands",
                &arg("hands"),
                "--match-hands",
                &arg("match_hands"),
                "--seed",
                &arg("seed"),
                "--threads",
                "2",
                "--json",
            ]),
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = &check["result"];
    assert!(want.is_object(), "{name}: scorecard_check has no result");
    for (col, p) in want["policies"].as_object().unwrap() {
        let q = &got["policies"][col];
        let mut pairs = vec![(&p["vs_uniform"], &q["vs_uniform"])];
        pairs.push((&p["vs_always_call"], &q["vs_always_call"]));
        for v in VARIANTS {
            pairs.push((&p["lbr"][v], &q["lbr"][v]));
            pairs.push((&want["lbr_uniform"][v], &got["lbr_uniform"][v]));
        }
        for (a, b) in pairs {
            for key in ["mean", "ci95"] {
                let (x, y) = (num(a, key), num(b, key));
                assert!(
                    (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                    "{name}: scorecard_check {col} records {a}, scores {b}"
                );
            }
        }
    }
}

#[test]
fn a_model_with_a_missing_or_corrupt_file_is_refused_naming_it() {
    let src = models()
        .into_iter()
        .find(|d| json(&d.join("score.json"))["metric"] == "nash_conv")
        .expect("a shipped small-game model");
    let game = json(&src.join("score.json"))["game"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tmp("models", "broken");
    let (net_name, net) = common::copy_model_but_network(&src, &dir);
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
    let bytes = std::fs::read(&net).unwrap();
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
    // Without its manifest nothing can be verified.
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    eval_it("manifest.json");
    let _ = std::fs::remove_dir_all(&dir);
}
