//! `armac-eval match`: exact head-to-head values on small games (antisymmetric, zero in
//! self-play, equal to the exact value OpenSpiel-style policy files give), sampled duplicate
//! deals on Hold'em with confidence intervals, and clean errors on bad input.

mod common;

use common::{eval, run_err, run_ok, train};
use serde_json::Value;

fn matchup(args: &[&str]) -> Value {
    let out = run_ok(eval().arg("match").args(args).arg("--json"));
    serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap()
}

use common::num as f;

#[test]
fn exact_matches_on_leduc_are_consistent() {
    let ab = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "uniform",
        "--b",
        "first-legal",
    ]);
    let ba = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "first-legal",
        "--b",
        "uniform",
    ]);
    assert_eq!(ab["exact"], true);
    assert!(f(&ab, "mean_chips") > 0.1, "{ab}");
    assert!((f(&ab, "mean_chips") + f(&ba, "mean_chips")).abs() < 1e-12);
    let same = matchup(&["--game", "leduc_poker", "--a", "uniform", "--b", "uniform"]);
    assert!(f(&same, "mean_chips").abs() < 1e-12, "{same}");
    // The sampled estimate of the same match covers the exact value.
    let s = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "uniform",
        "--b",
        "first-legal",
        "--sampled",
        "--hands",
        "8000",
        "--seed",
        "3",
    ]);
    assert_eq!(s["exact"], false);
    assert_eq!(s["hands"], 8000);
    assert!(
        (f(&s, "mean_chips") - f(&ab, "mean_chips")).abs() < 1.5 * f(&s, "ci95_chips"),
        "{s} vs {ab}"
    );
}

#[test]
fn a_trained_policy_file_beats_uniform_exactly_by_its_value() {
    // CFR+ on Kuhn for a few hundred iterations is close to equilibrium: against uniform it
    // wins (Kuhn's uniform policy is exploitable), and the exact match equals the value of
    // the policy pair computed from the same file by the tree (here: A vs A = 0).
    let dir = common::tmp("match", "kuhn");
    run_ok(train().args([
        "--config",
        "kuhn_cfr.toml",
        "--quiet",
        "--set",
        "solver.iterations=300",
        "--out",
        dir.to_str().unwrap(),
    ]));
    let policy = dir.join("policy.json");
    let p = policy.to_str().unwrap();
    let v = matchup(&["--game", "kuhn_poker", "--a", p, "--b", "uniform"]);
    assert!(f(&v, "mean_chips") > 0.05, "{v}");
    let mirror = matchup(&["--game", "kuhn_poker", "--a", p, "--b", p]);
    assert!(f(&mirror, "mean_chips").abs() < 1e-12, "{mirror}");
    // A Kuhn policy on Leduc: the error names both games.
    run_err(
        eval().args(["match", "--game", "leduc_poker", "--a", p, "--b", "uniform"]),
        "kuhn_poker",
    );
    run_err(
        eval().args(["match", "--game", "leduc_poker", "--a", "uniform", "--b", p]),
        "leduc_poker",
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hunl_matches_use_duplicate_deals_with_an_interval() {
    let v = matchup(&[
        "--game",
        "hunl_fcpa",
        "--a",
        "always-call",
        "--b",
        "always-fold",
        "--hands",
        "400",
        "--seed",
        "1",
    ]);
    assert_eq!(v["exact"], false);
    assert_eq!(v["hands"], 400);
    // As player 0 (the big blind), always-call faces always-fold in the small blind, which
    // folds to the blind: +50 chips every hand. As player 1 it limps and the hand is checked
    // down: card luck, hence a positive interval.
    assert_eq!(v["seat_mean_chips"][0].as_f64().unwrap(), 50.0, "{v}");
    assert!(f(&v, "ci95_mbb") > 0.0, "{v}");
    assert!(
        (f(&v, "mean_mbb") - 10.0 * f(&v, "mean_chips")).abs() < 1e-9,
        "mbb = chips / big blind (100) x 1000: {v}"
    );
    let u = matchup(&[
        "--game",
        "hunl_fcpa",
        "--a",
        "uniform",
        "--b",
        "uniform",
        "--hands",
        "600",
    ]);
    assert!(f(&u, "ci95_mbb") > 0.0, "{u}");
    assert!(
        f(&u, "mean_mbb").abs() < 2.0 * f(&u, "ci95_mbb"),
        "self-play should be near 0: {u}"
    );
    let again = matchup(&[
        "--game",
        "hunl_fcpa",
        "--a",
        "uniform",
        "--b",
        "uniform",
        "--hands",
        "600",
    ]);
    assert_eq!(u, again, "same seed, same result");
}

#[test]
fn bad_match_input_is_named() {
    run_err(
        eval().args([
            "match",
            "--game",
            "leduc_poker",
            "--a",
            "nope.json",
            "--b",
            "uniform",
        ]),
        "nope.json",
    );
    run_err(
        eval().args([
            "match",
            "--game",
            "no_such_game",
            "--a",
            "uniform",
            "--b",
            "uniform",
        ]),
        "no_such_game",
    );
    run_err(
        eval().args([
            "match",
            "--game",
            "hunl_fcpa",
            "--a",
            "uniform",
            "--b",
            "uniform",
            "--hands",
            "0",
        ]),
        "--hands",
    );
}

/// `current:DIR` plays the checkpoint's current policy (regret matching on the mean-regret
/// head), a different policy from its average-policy head: the exact values differ, the
/// current policy's value against itself is 0, and LBR (range queries) refuses it by name.
#[test]
fn current_prefix_plays_the_mean_regret_policy() {
    let avg = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "models/leduc_armac",
        "--b",
        "uniform",
    ]);
    let cur = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "current:models/leduc_armac",
        "--b",
        "uniform",
    ]);
    assert_eq!(cur["exact"], true, "{cur}");
    assert!(cur["a"].as_str().unwrap().contains("current"), "{cur}");
    assert!(avg["a"].as_str().unwrap().contains("average"), "{avg}");
    assert!(
        (f(&cur, "mean_chips") - f(&avg, "mean_chips")).abs() > 1e-6,
        "the current and the average head gave the same value: {cur} {avg}"
    );
    let selfplay = matchup(&[
        "--game",
        "leduc_poker",
        "--a",
        "current:models/leduc_armac",
        "--b",
        "current:models/leduc_armac",
    ]);
    assert!(f(&selfplay, "mean_chips").abs() < 1e-9, "{selfplay}");
    run_err(
        eval().args([
            "match",
            "--game",
            "leduc_poker",
            "--a",
            "current:models/no_such_model",
            "--b",
            "uniform",
        ]),
        "current:models/no_such_model",
    );
}

/// `--aivat` on a sampled Leduc match of the shipped model: the same hands and plain figures
/// as without it, an AIVAT estimate (the pair's values over the model's critic, or the critic
/// alone) that covers the exact value with a narrower interval; refused when no policy is an
/// ARMAC network.
#[test]
fn aivat_reports_a_narrower_unbiased_estimate() {
    let base = [
        "--game",
        "leduc_poker",
        "--a",
        "models/leduc_armac",
        "--b",
        "uniform",
    ];
    let exact = matchup(&base);
    let sampled = [&base[..], &["--sampled", "--hands", "4000", "--seed", "1"]].concat();
    let plain = matchup(&sampled);
    assert!(plain["aivat"].is_null(), "{plain}");
    // The default value estimate (the pair's) and the critic alone.
    for (flags, name) in [
        (&["--aivat"][..], "pair lookahead over armac-critic"),
        (&["--aivat", "--aivat-values", "critic"][..], "armac-critic"),
    ] {
        let with = matchup(&[&sampled[..], flags].concat());
        assert_eq!(with["mean_chips"], plain["mean_chips"]);
        assert_eq!(with["ci95_chips"], plain["ci95_chips"]);
        let v = &with["aivat"];
        assert!(v["values"].as_str().unwrap().starts_with(name), "{v}");
        assert!(f(v, "ci95_chips") < f(&plain, "ci95_chips"), "{v}");
        assert!(
            (f(v, "mean_chips") - f(&exact, "mean_chips")).abs() < 2.0 * f(v, "ci95_chips"),
            "{v} vs {exact}"
        );
    }
    run_err(
        eval().args([
            "match",
            "--game",
            "leduc_poker",
            "--a",
            "uniform",
            "--b",
            "first-legal",
            "--sampled",
            "--hands",
            "10",
            "--aivat",
        ]),
        "neither `uniform` nor `first-legal`",
    );
}
