//! Exact evaluations refuse games over their history cap before compiling a tree: in seconds,
//! with a clean error naming the game, the cap and the flag that raises it; the flag lets a
//! game in under a raised cap and refuses it under a lowered one.

mod common;

use common::{eval, run_err, run_ok};
use std::time::{Duration, Instant};

/// Runs `args` of `armac-eval`, which must be refused by the history cap within a minute
/// (the cap is counted, not compiled), naming `game`.
fn refused(args: &[&str], game: &str, cap: &str) {
    let t = Instant::now();
    run_err(eval().args(args), &format!("game `{game}"));
    run_err(eval().args(args), &format!("--max-histories {cap}"));
    assert!(
        t.elapsed() < Duration::from_secs(120),
        "{args:?} took {:?} to be refused",
        t.elapsed()
    );
}

#[test]
fn nashconv_refuses_games_over_the_history_cap_by_name() {
    refused(
        &["nashconv", "--game", "hunl_fcpa", "--policy", "uniform"],
        "universal_poker",
        "20000000",
    );
    refused(
        &[
            "nashconv",
            "--game",
            "liars_dice(numdice=3)",
            "--policy",
            "uniform",
        ],
        "liars_dice(",
        "20000000",
    );
}

#[test]
fn export_policy_refuses_the_hunl_model() {
    let out = common::tmp("limits", "hunl_policy.json");
    refused(
        &[
            "export-policy",
            "--checkpoint",
            "models/hunl_fcpa_armac",
            "--out",
            out.to_str().unwrap(),
        ],
        "universal_poker",
        "20000000",
    );
    assert!(!out.exists(), "a refused export wrote {}", out.display());
}

#[test]
fn max_histories_lowers_and_raises_the_cap() {
    // Leduc has 9,457 histories.
    run_err(
        eval().args([
            "nashconv",
            "--game",
            "leduc_poker",
            "--policy",
            "uniform",
            "--max-histories",
            "9456",
        ]),
        "more than 9456 histories",
    );
    run_ok(eval().args([
        "nashconv",
        "--game",
        "leduc_poker",
        "--policy",
        "uniform",
        "--max-histories",
        "9457",
    ]));
    // Exact matches of non-poker games take the same cap.
    run_err(
        eval().args([
            "match",
            "--game",
            "leduc_poker",
            "--a",
            "uniform",
            "--b",
            "first-legal",
            "--max-histories",
            "100",
        ]),
        "--sampled",
    );
}
