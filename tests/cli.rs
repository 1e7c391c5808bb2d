//! End-to-end tests of the binaries: runs, outputs, resume, time limits, bad input, and the
//! Python cross-checks (TensorBoard read-back, policy evaluation inside OpenSpiel).

mod common;

use common::{eval, run_err, run_ok, train};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn python(script: &str, arg: &Path) -> Option<Value> {
    if std::env::var("ARMAC_SKIP_PYTHON").is_ok() {
        return None;
    }
    let out = Command::new("python3")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join(script),
        )
        .arg(arg)
        .output()
        .expect("python3 is required (set ARMAC_SKIP_PYTHON=1 to skip the Python cross-checks)");
    assert!(
        out.status.success(),
        "{script} failed (pip install open_spiel tensorboard, or set ARMAC_SKIP_PYTHON=1): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn tabular_run_writes_all_outputs_and_openspiel_agrees() {
    let dir = common::tmp("cli", "leduc");
    run_ok(
        train()
            .args([
                "--config",
                "leduc_cfr.toml",
                "--quiet",
                "--set",
                "solver.iterations=60",
                "--out",
            ])
            .arg(&dir),
    );
    for f in [
        "config.toml",
        "metrics.csv",
        "policy.json",
        "checkpoint/checkpoint.bin",
        "summary.json",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    let cfg = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    assert!(
        cfg.contains("iterations = 60"),
        "resolved config must hold the override: {cfg}"
    );
    let s = summary(&dir);
    assert_eq!(s["iterations"], 60);
    let nc = s["nash_conv"].as_f64().unwrap();
    // metrics.csv: one row per 10 iterations, the last equal to the summary.
    let csv = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 7);
    let last: f64 = rows[6].split(',').nth(2).unwrap().parse().unwrap();
    assert!((last - nc).abs() < 1e-12);
    // Our evaluator on the exported policy file gives the same number.
    let out = run_ok(
        eval()
            .args(["nashconv", "--game", "leduc_poker", "--json", "--policy"])
            .arg(dir.join("policy.json")),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["nash_conv"].as_f64().unwrap() - nc).abs() < 1e-12);
    // OpenSpiel evaluates the exported policy file to the same NashConv.
    if let Some(os) = python("check_policy_openspiel.py", &dir.join("policy.json")) {
        assert_eq!(os["missing"], 0);
        assert!(
            (os["nash_conv"].as_f64().unwrap() - nc).abs() < 1e-9,
            "OpenSpiel says {os}"
        );
    }
    // TensorBoard reads our event file back with the logged values.
    if let Some(tb) = python("read_tensorboard.py", &dir) {
        let series = tb["nash_conv"].as_array().unwrap();
        assert_eq!(series.len(), 6);
        assert_eq!(series[5][0], 60);
        assert!((series[5][1].as_f64().unwrap() - nc).abs() < 1e-6 * nc.max(1.0));
        assert!(tb.get("br_value/p0").is_some() && tb.get("exploitability").is_some());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn resumed_run_equals_uninterrupted_run() {
    let (a, b) = (
        common::tmp("cli", "straight"),
        common::tmp("cli", "resumed"),
    );
    run_ok(
        train()
            .args([
                "--config",
                "kuhn_cfr.toml",
                "--quiet",
                "--set",
                "solver.iterations=90",
                "--out",
            ])
            .arg(&a),
    );
    run_ok(
        train()
            .args([
                "--config",
                "kuhn_cfr.toml",
                "--quiet",
                "--set",
                "solver.iterations=40",
                "--out",
            ])
            .arg(&b),
    );
    run_ok(
        train()
            .args(["--quiet", "--set", "solver.iterations=90", "--resume"])
            .arg(&b),
    );
    assert_eq!(summary(&a)["nash_conv"], summary(&b)["nash_conv"]);
    assert_eq!(summary(&b)["iterations"], 90);
    assert_eq!(
        std::fs::read_to_string(a.join("policy.json")).unwrap(),
        std::fs::read_to_string(b.join("policy.json")).unwrap()
    );
    let rows = |d: &Path| -> Vec<String> {
        std::fs::read_to_string(d.join("metrics.csv"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(',').collect();
                f.remove(1); // wall-clock seconds differ
                f.join(",")
            })
            .collect()
    };
    assert_eq!(
        rows(&a),
        rows(&b),
        "metrics must continue exactly where the checkpoint was taken"
    );
    // Starting a new run over an existing one is refused.
    run_err(
        train().args(["--config", "kuhn_cfr.toml", "--out"]).arg(&a),
        "--resume",
    );
    std::fs::remove_dir_all(&a).ok();
    std::fs::remove_dir_all(&b).ok();
}

#[test]
fn time_limit_stops_cleanly_with_outputs() {
    let dir = common::tmp("cli", "limit");
    run_ok(
        train()
            .args([
                "--config",
                "leduc_cfr.toml",
                "--quiet",
                "--max-seconds",
                "0",
                "--set",
                "solver.iterations=100000",
                "--out",
            ])
            .arg(&dir),
    );
    let s = summary(&dir);
    assert_eq!(s["stopped_early"], true);
    assert!(s["iterations"].as_u64().unwrap() < 100000);
    assert!(dir.join("policy.json").is_file() && dir.join("checkpoint/checkpoint.bin").is_file());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cpu_time_limit_stops_cleanly_and_is_recorded() {
    let dir = common::tmp("cli", "cpu-limit");
    run_ok(
        train()
            .args([
                "--config",
                "leduc_cfr.toml",
                "--quiet",
                "--max-cpu-seconds",
                "0.3",
                "--set",
                "solver.iterations=100000000",
                "--out",
            ])
            .arg(&dir),
    );
    let s = summary(&dir);
    assert_eq!(s["stopped_early"], true);
    assert!(s["iterations"].as_u64().unwrap() < 100000000);
    // Stopped at the first check after the budget was spent, by CPU time.
    let cpu = s["cpu_seconds"].as_f64().unwrap();
    assert!(cpu >= 0.3, "{s}");
    assert!(dir.join("policy.json").is_file());
    std::fs::remove_dir_all(&dir).ok();
    run_err(
        train().args(["--config", "kuhn_cfr.toml", "--max-cpu-seconds", "-1"]),
        "-1",
    );
}

#[test]
fn every_shipped_config_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let (config, _) = armac::run::config::Config::load(p.to_str().unwrap(), &[])
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            armac::run::validate(&config).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 25, "only {n} configs in {}", dir.display());
}

#[test]
fn bad_configs_and_arguments_are_named() {
    let dir = common::tmp("cli", "bad");
    run_err(train().args(["--config", "nope.toml"]), "nope.toml");
    run_err(
        train()
            .args([
                "--config",
                "kuhn_cfr.toml",
                "--set",
                "solver.bogus=1",
                "--out",
            ])
            .arg(&dir),
        "bogus",
    );
    run_err(
        train()
            .args([
                "--config",
                "kuhn_cfr.toml",
                "--set",
                "solver.iterations=many",
                "--out",
            ])
            .arg(&dir),
        "iterations",
    );
    run_err(
        train()
            .args(["--config", "kuhn_cfr.toml", "--set", "game=chess", "--out"])
            .arg(&dir),
        "chess",
    );
    run_err(
        train()
            .args([
                "--config",
                "kuhn_cfr.toml",
                "--set",
                "solver.algorithm=cfx",
                "--out",
            ])
            .arg(&dir),
        "solver.algorithm",
    );
    run_err(
        train().args(["--config", "kuhn_cfr.toml", "--max-seconds", "-3"]),
        "-3",
    );
    run_err(train().args(["--resume"]).arg(&dir), "config.toml");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_policies_are_named() {
    let dir = common::tmp("cli", "policies");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let malformed = write(
        "malformed.json",
        "{\"game\": \"kuhn_poker\", \"policy\": [1,2]",
    );
    run_err(
        eval()
            .args(["nashconv", "--game", "kuhn_poker", "--policy"])
            .arg(&malformed),
        "malformed.json",
    );
    let other = write("other.json", "{\"game\": \"leduc_poker\", \"policy\": {}}");
    run_err(
        eval()
            .args(["nashconv", "--game", "kuhn_poker", "--policy"])
            .arg(&other),
        "leduc_poker",
    );
    let missing = write(
        "missing.json",
        "{\"game\": \"kuhn_poker\", \"policy\": {\"0\": [[0, 1.0]]}}",
    );
    run_err(
        eval()
            .args(["nashconv", "--game", "kuhn_poker", "--policy"])
            .arg(&missing),
        "no entry for information state",
    );
    let badsum = write(
        "badsum.json",
        "{\"game\": \"kuhn_poker\", \"policy\": {\"0\": [[0, 0.7], [1, 0.7]]}}",
    );
    run_err(
        eval()
            .args(["nashconv", "--game", "kuhn_poker", "--policy"])
            .arg(&badsum),
        "sum",
    );
    run_err(
        eval().args([
            "nashconv",
            "--game",
            "kuhn_poker",
            "--policy",
            "nosuchfile.json",
        ]),
        "nosuchfile.json",
    );
    run_err(
        eval().args([
            "nashconv",
            "--game",
            "leduc_poker(players=3)",
            "--policy",
            "uniform",
        ]),
        "players",
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nashconv_command_matches_openspiel_reference() {
    let out = run_ok(eval().args(["nashconv", "--game", "kuhn_poker", "--policy", "uniform"]));
    let text = String::from_utf8_lossy(&out.stdout);
    let v: f64 = text
        .trim()
        .strip_prefix("nash_conv ")
        .unwrap()
        .parse()
        .unwrap();
    assert!((v - 0.9166666666666666).abs() < 1e-12, "{text}");
    let out = run_ok(eval().args([
        "nashconv",
        "--game",
        "leduc_poker",
        "--policy",
        "first-legal",
        "--json",
    ]));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((j["nash_conv"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    assert!((j["best_response_values"][0].as_f64().unwrap() - 1.0).abs() < 1e-12);
}

#[test]
fn replay_prints_openspiel_infostates_and_rejects_illegal_actions() {
    let out = run_ok(eval().args([
        "replay",
        "--game",
        "kuhn_poker",
        "--actions",
        "0,1,1,0",
        "--json",
    ]));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[3]["information_state_string"][0], "0b");
    assert_eq!(steps[3]["current_player"], 1);
    assert_eq!(j["returns"][0], 1.0);
    // With --policy, each decision carries the policy's probabilities (chance nodes none).
    let out = run_ok(eval().args([
        "replay",
        "--game",
        "kuhn_poker",
        "--actions",
        "0,1,1",
        "--policy",
        "first-legal",
        "--json",
    ]));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(j["steps"][0]["probabilities"].is_null());
    assert_eq!(
        j["steps"][2]["probabilities"],
        serde_json::json!([1.0, 0.0])
    );
    run_err(
        eval().args(["replay", "--game", "kuhn_poker", "--actions", "0,0"]),
        "illegal action 0",
    );
    run_err(
        eval().args(["replay", "--game", "kuhn_poker", "--actions", "0,x"]),
        "`x`",
    );
}

/// A model exported with `--play-threshold` plays thresholded: its exact NashConv is the
/// source model's with `--play-threshold` on the command line, not the raw network's, and the
/// exported config records the key; `--play-threshold 0` plays the raw network again.
#[test]
fn exported_play_threshold_is_how_the_model_plays() {
    let nashconv = |policy: &str, extra: &[&str]| -> f64 {
        let out = run_ok(
            eval()
                .args([
                    "nashconv",
                    "--game",
                    "leduc_poker",
                    "--json",
                    "--policy",
                    policy,
                ])
                .args(extra),
        );
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        j["nash_conv"].as_f64().unwrap()
    };
    let dir = common::tmp("cli", "threshold-model");
    let _ = std::fs::remove_dir_all(&dir);
    let model = dir.to_str().unwrap();
    run_ok(
        eval()
            .args(["export-model", "--checkpoint", "models/leduc_armac"])
            .args(["--out", model, "--play-threshold", "0.15"]),
    );
    run_ok(eval().args(["manifest", model]));
    let config = std::fs::read_to_string(dir.join("checkpoint/config.toml")).unwrap();
    assert!(config.contains("play_threshold = 0.15"), "{config}");
    let raw = nashconv("models/leduc_armac", &[]);
    let thresholded = nashconv(model, &[]);
    assert_eq!(
        thresholded,
        nashconv("models/leduc_armac", &["--play-threshold", "0.15"])
    );
    assert!((thresholded - raw).abs() > 1e-6, "{raw} vs {thresholded}");
    assert_eq!(nashconv(model, &["--play-threshold", "0"]), raw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory given as `--config` is named as one (not "not found"); a checkpoint whose
/// `state.json` is not UTF-8 is named corrupt when read (not "cannot write").
#[test]
fn a_config_directory_and_a_non_utf8_state_are_named() {
    run_err(train().args(["--config", "configs"]), "is a directory");
    let dir = common::tmp("cli", "non-utf8-state");
    let out = dir.to_str().unwrap();
    run_ok(train().args([
        "--config",
        "kuhn_armac.toml",
        "--quiet",
        "--set",
        "armac.epochs=1",
        "--set",
        "armac.episodes_per_epoch=16",
        "--set",
        "armac.learning_steps_per_epoch=1",
        "--out",
        out,
    ]));
    let state = dir.join("checkpoint/state.json");
    std::fs::write(&state, b"{\"epoch\": \xff\xfe}").unwrap();
    let o = eval()
        .args(["nashconv", "--game", "kuhn_poker", "--policy", out])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("state.json"), "{err}");
    assert!(!err.contains("cannot write"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
