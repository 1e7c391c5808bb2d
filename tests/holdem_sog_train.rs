//! Student of Games self-play training on Hold'em through the binaries: the tiny Hold'em of
//! tests/holdem_search.rs (`configs/holdem_tiny_sog.toml`) trains, its value loss falls, the
//! run directory plays a match as `sog:DIR` and exports as a verified model, a resumed run equals an uninterrupted one, and
//! settings that do not apply to Hold'em are refused by name.

mod common;

use common::{eval, run_err, run_ok, tmp, train};
use std::path::Path;

#[path = "common/holdem_rows.rs"]
mod holdem_rows;
use holdem_rows::TINY;

fn column(dir: &Path, key: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k = header.iter().position(|h| *h == key).unwrap();
    lines
        .map(|l| l.split(',').nth(k).unwrap().parse().unwrap())
        .collect()
}

fn metrics_without_seconds(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Vec<&str> = l.split(',').collect();
            v.remove(1);
            v.join(",")
        })
        .collect()
}

fn args(rounds: u64) -> Vec<String> {
    [
        "--config",
        "holdem_tiny_sog.toml",
        "--set",
        &format!("sog.rounds={rounds}"),
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Ten rounds of the tiny config: the mean value loss of the last round is clearly below the
/// first round's, and the run directory plays a match against uniform as `sog:DIR`.
#[test]
fn tiny_holdem_self_play_lowers_the_value_loss_and_plays_as_sog_dir() {
    let out = tmp("holdem_sog", "tiny");
    run_ok(train().args(args(10)).arg("--out").arg(&out));
    let loss = column(&out, "value_loss");
    let solved = column(&out, "queries_solved");
    eprintln!("value loss per round: {loss:?}; queries solved: {solved:?}");
    assert_eq!(loss.len(), 10);
    assert!(*solved.last().unwrap() > 0.0);
    assert!(
        loss[9] < 0.8 * loss[0],
        "the value loss did not fall by a fifth: {loss:?}"
    );
    let o = run_ok(
        eval()
            .args(["match", "--game", TINY, "--b", "uniform", "--hands", "20"])
            .arg("--a")
            .arg(format!("sog:{}", out.display())),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("per hand"), "{text}");
    exported_model_plays_and_is_verified(&out);
    let _ = std::fs::remove_dir_all(&out);
}

/// `export-model` of a SoG run: a model directory whose CVPN is in half precision without the
/// optimizer (well under the run's bytes), that plays as `sog:MODEL`, and that is refused,
/// naming the file, once a byte of its network changes.
fn exported_model_plays_and_is_verified(run: &Path) {
    let model = tmp("holdem_sog", "model");
    run_ok(
        eval()
            .args(["export-model", "--checkpoint"])
            .arg(run)
            .arg("--out")
            .arg(&model),
    );
    let net = model.join("checkpoint/cvpn/cvpn_model.bpk");
    let full = std::fs::metadata(run.join("checkpoint/cvpn/cvpn_model.bpk"))
        .unwrap()
        .len();
    let half = std::fs::metadata(&net).unwrap().len();
    assert!(half * 10 < full * 6, "f16 network {half} bytes, f32 {full}");
    assert!(!model.join("checkpoint/cvpn/cvpn_optimizer.bin").exists());
    let play = |model: &Path| {
        let mut c = eval();
        c.args(["match", "--game", TINY, "--b", "uniform", "--hands", "10"])
            .arg("--a")
            .arg(format!("sog:{}", model.display()));
        c
    };
    let o = run_ok(&mut play(&model));
    assert!(String::from_utf8_lossy(&o.stdout).contains("per hand"));
    // Without --search-iterations the model searches as it trained (`sog.search.s = 50` in
    // holdem_tiny_sog.toml): the same seeded match as with the flag set to 50.
    let json = |iterations: Option<&str>| {
        let mut c = play(&model);
        c.args(["--seed", "5", "--json"]);
        if let Some(n) = iterations {
            c.args(["--search-iterations", n]);
        }
        String::from_utf8(run_ok(&mut c).stdout).unwrap()
    };
    assert_eq!(json(None), json(Some("50")));
    // Named without `sog:`, it is refused with the name to use.
    run_err(
        eval()
            .args([
                "match", "--game", TINY, "--b", "uniform", "--hands", "2", "--a",
            ])
            .arg(&model),
        "Student of Games",
    );
    let mut bytes = std::fs::read(&net).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&net, bytes).unwrap();
    run_err(&mut play(&model), "cvpn_model.bpk");
    let _ = std::fs::remove_dir_all(&model);
}

/// Deterministic for a seed: 2 rounds, then resumed to 4, ends with the metrics of 4 rounds
/// run at once.
#[test]
fn tiny_holdem_resume_equals_an_uninterrupted_run() {
    let whole = tmp("holdem_sog", "whole");
    run_ok(train().args(args(4)).arg("--out").arg(&whole));
    let cut = tmp("holdem_sog", "cut");
    run_ok(train().args(args(2)).arg("--out").arg(&cut));
    run_ok(
        train()
            .arg("--resume")
            .arg(&cut)
            .args(["--set", "sog.rounds=4", "--quiet"]),
    );
    assert_eq!(
        metrics_without_seconds(&cut),
        metrics_without_seconds(&whole)
    );
    for dir in [whole, cut] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Keys with no meaning for Hold'em search are refused, naming the key.
#[test]
fn holdem_sog_refuses_keys_that_do_not_apply() {
    for (set, needle) in [
        ("sog.search.c=2.0", "sog.search.c"),
        ("sog.exact_eval=true", "sog.exact_eval"),
        ("sog.selfplay.p_rec=0.1", "sog.selfplay.p_rec"),
        ("sog.selfplay.actors=1", "sog.selfplay"),
        ("sog.search.max_nodes=0", "sog.search.max_nodes"),
    ] {
        let out = tmp("holdem_sog", "bad");
        run_err(
            train()
                .args(args(1))
                .args(["--set", set])
                .arg("--out")
                .arg(&out),
            needle,
        );
    }
    // And max_nodes on a small game.
    let out = tmp("holdem_sog", "bad_small");
    run_err(
        train()
            .args([
                "--config",
                "kuhn_sog.toml",
                "--set",
                "sog.search.max_nodes=10",
            ])
            .arg("--out")
            .arg(&out),
        "sog.search.max_nodes",
    );
}
