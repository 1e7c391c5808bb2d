//! End-to-end tests of `armac-eval lbr`: JSON output, the exact values against a policy that
//! always folds, several variants in one call, TensorBoard output, and clean errors on bad
//! input.

mod common;

use common::{eval, json, num, run_err, run_ok, tmp, train};
use serde_json::Value;

/// `lbr --json` on hunl_fcpa with seed 3 and two threads unless `extra` says otherwise.
fn lbr_json(policy: &str, variant: &str, hands: u64, extra: &[&str]) -> Value {
    let hands = hands.to_string();
    let mut cmd = eval();
    cmd.args([
        "lbr",
        "--game",
        "hunl_fcpa",
        "--policy",
        policy,
        "--variant",
        variant,
    ])
    .args(["--hands", &hands, "--seed", "3", "--json"])
    .args(extra);
    if !extra.contains(&"--threads") {
        cmd.args(["--threads", "2"]);
    }
    serde_json::from_slice(&run_ok(&mut cmd).stdout).unwrap()
}

#[test]
fn always_fold_values_and_json_fields() {
    for (variant, mbb) in [("fc", 250.0), ("fcpa", 750.0), ("fc12-fcpa34", 750.0)] {
        let v = lbr_json("always-fold", variant, 24, &[]);
        assert_eq!(v["variant"], variant);
        assert_eq!(v["hands"], 24);
        assert_eq!(v["policy"], "always-fold");
        assert_eq!(v["unit"], "mbb/hand");
        assert!((v["mean"].as_f64().unwrap() - mbb).abs() < 1e-9, "{v}");
        assert!(
            (v["mean_chips"].as_f64().unwrap() - mbb / 10.0).abs() < 1e-9,
            "{v}"
        );
        assert_eq!(v["ci95"].as_f64().unwrap(), 0.0, "{v}");
        assert!(v["seconds"].as_f64().unwrap() > 0.0);
    }
}

/// `--variant all` and comma lists run each variant in turn on the same seed: one JSON object
/// per variant, each as the variant alone gives it.
#[test]
fn several_variants_report_one_result_each() {
    let out = run_ok(eval().args([
        "lbr",
        "--policy",
        "always-fold",
        "--variant",
        "all",
        "--hands",
        "8",
        "--json",
    ]));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(&str, f64)> = lines
        .iter()
        .map(|l| (l["variant"].as_str().unwrap(), num(l, "mean")))
        .collect();
    assert_eq!(
        got,
        [("fc", 250.0), ("fcpa", 750.0), ("fc12-fcpa34", 750.0)]
    );
    let pair = run_ok(eval().args([
        "lbr",
        "--policy",
        "uniform",
        "--variant",
        "fcpa,fc",
        "--hands",
        "8",
        "--seed",
        "3",
        "--json",
    ]));
    let pair: Vec<Value> = String::from_utf8_lossy(&pair.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(pair.len(), 2);
    let alone = lbr_json("uniform", "fc", 8, &[]);
    assert_eq!(pair[1]["variant"], "fc");
    assert_eq!(pair[1]["mean"], alone["mean"]);
    let base = ["lbr", "--policy", "uniform", "--hands", "8"];
    run_err(eval().args(base).args(["--variant", "fc,fc"]), "twice");
    run_err(eval().args(base).args(["--variant", "fc,xx"]), "fc,xx");
}

#[test]
fn uniform_random_is_deterministic_and_rounds_hands_up() {
    let v = lbr_json("uniform", "fcpa", 30, &[]);
    assert_eq!(v["hands"], 32);
    let (mean, ci) = (v["mean"].as_f64().unwrap(), v["ci95"].as_f64().unwrap());
    assert!(mean.is_finite() && ci.is_finite() && ci > 0.0, "{v}");
    // Same seed, other thread count: the same result.
    let w = lbr_json("uniform", "fcpa", 32, &["--threads", "1"]);
    assert_eq!(v["mean"], w["mean"]);
    // The text line.
    let out = run_ok(eval().args([
        "lbr",
        "--policy",
        "always-call",
        "--variant",
        "fc",
        "--hands",
        "8",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("mbb/hand") && text.contains("LBR-FC vs always-call"),
        "{text}"
    );
}

#[test]
fn reference_reports_the_paired_ratio() {
    let v = lbr_json("always-call", "fcpa", 64, &["--reference", "uniform"]);
    let alone = lbr_json("uniform", "fcpa", 64, &[]);
    let r = &v["reference"];
    assert_eq!(r["policy"], "uniform");
    // The reference is played on the same deals as a plain run with the same seed.
    assert_eq!(r["mean"], alone["mean"], "{v}");
    let ratio = num(r, "ratio");
    assert!(
        (ratio - num(&v, "mean") / num(&alone, "mean")).abs() < 1e-9,
        "{v}"
    );
    assert!(num(r, "ratio_ci95") > 0.0, "{v}");
    // Without --reference the field is null; the text report adds a line.
    assert!(alone["reference"].is_null());
    let out = run_ok(eval().args([
        "lbr",
        "--policy",
        "always-call",
        "--reference",
        "uniform",
        "--variant",
        "fcpa",
        "--hands",
        "16",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("reference uniform") && text.contains("(paired)"),
        "{text}"
    );
    // A bad reference is named.
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "uniform",
            "--reference",
            "no-such-policy",
            "--variant",
            "fc",
            "--hands",
            "8",
        ]),
        "--reference",
    );
}

#[test]
fn logdir_gets_a_tensorboard_event_file() {
    let dir = common::tmp("lbr-cli", "tb");
    let d = dir.to_str().unwrap();
    lbr_json("always-fold", "fcpa", 8, &["--logdir", d, "--step", "7"]);
    let events: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("events.out.tfevents")
        })
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    let bytes = std::fs::read(&events[0]).unwrap();
    let has_tag = bytes.windows(8).any(|w| w == b"lbr/fcpa");
    assert!(has_tag, "the event file should hold the lbr/fcpa scalar");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_fails_cleanly() {
    let base = ["lbr", "--policy", "uniform", "--hands", "8"];
    run_err(eval().args(base).args(["--variant", "fcx"]), "fc12-fcpa34");
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "uniform",
            "--variant",
            "fc",
            "--hands",
            "0",
        ]),
        "--hands",
    );
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "uniform",
            "--variant",
            "fc",
            "--hands",
            "x",
        ]),
        "--hands",
    );
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "checkpoint",
            "--variant",
            "fc",
            "--hands",
            "8",
        ]),
        "run/checkpoint directory",
    );
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "nope.json",
            "--variant",
            "fc",
            "--hands",
            "8",
        ]),
        "nope.json",
    );
    run_err(
        eval()
            .args(base)
            .args(["--variant", "fc", "--game", "kuhn_poker"]),
        "kuhn_poker",
    );
    run_err(
        eval()
            .args(base)
            .args(["--variant", "fc", "--threads", "x"]),
        "--threads",
    );
    // The current-policy view of a (feed-forward) checkpoint is scored too, and names its
    // head; a `current:` path that is no directory is refused, naming it.
    let out = run_ok(eval().args([
        "lbr",
        "--policy",
        "current:models/hunl_fcpa_armac",
        "--variant",
        "fc",
        "--hands",
        "8",
        "--json",
    ]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["policy"]
            .as_str()
            .unwrap()
            .starts_with("armac-current-policy"),
        "{v}"
    );
    assert!(v["mean"].as_f64().unwrap().is_finite(), "{v}");
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "current:no/such/run",
            "--variant",
            "fc",
            "--hands",
            "8",
        ]),
        "current:no/such/run",
    );
    // An FC-only game cannot host a raising LBR.
    let fc_game = "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fc)";
    run_err(
        eval()
            .args(base)
            .args(["--variant", "fcpa", "--game", fc_game]),
        "fold and call",
    );
}

#[test]
fn policy_files_are_checked() {
    let dir = common::tmp("lbr-cli", "policy");
    std::fs::create_dir_all(&dir).unwrap();
    // A table without the first decision: the error names the missing information state.
    let empty = dir.join("empty.json");
    let game = "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fcpa)";
    std::fs::write(&empty, format!(r#"{{"game": "{game}", "policy": {{}}}}"#)).unwrap();
    run_err(
        eval()
            .args(["lbr", "--variant", "fc", "--hands", "4", "--policy"])
            .arg(&empty),
        "no entry for information state \"[Round 0][Player: 1]",
    );
    // A policy for another game.
    let kuhn = dir.join("kuhn.json");
    std::fs::write(
        &kuhn,
        r#"{"game": "kuhn_poker", "policy": {"0": [[0, 1.0]]}}"#,
    )
    .unwrap();
    run_err(
        eval()
            .args(["lbr", "--variant", "fc", "--hands", "4", "--policy"])
            .arg(&kuhn),
        "kuhn_poker",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lbr --watch RUN --every-checkpoint` follows a training run: it evaluates checkpoints as
/// they are committed (in increasing epoch order), ends once the run has ended and its last
/// checkpoint is evaluated, and leaves the curve in `<RUN>/lbr_fc.csv` and a TensorBoard file.
#[test]
fn watch_follows_a_training_run_to_its_last_checkpoint() {
    let dir = tmp("lbr", "watch");
    let mut trainer = train()
        .args([
            "--config",
            "nlhe_fcpa_recurrent.toml",
            "--quiet",
            "--max-seconds",
            "6",
        ])
        .args(["--out", dir.to_str().unwrap()])
        .args([
            "--set",
            "armac.hidden=8",
            "--set",
            "armac.episodes_per_epoch=16",
            "--set",
            "armac.learning_steps_per_epoch=2",
            "--set",
            "armac.batch_trajectories=4",
            "--set",
            "armac.games_per_group=8",
            "--set",
            "armac.replay_capacity=64",
            "--set",
            "armac.epochs=1000000",
            "--set",
            "checkpoint.every_epochs=1000000",
            "--set",
            "checkpoint.every_seconds=1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The watcher may start before the run directory exists.
    for _ in 0..200 {
        if dir.join("config.toml").is_file() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = run_ok(eval().args([
        "lbr",
        "--watch",
        dir.to_str().unwrap(),
        "--every-checkpoint",
        "--variant",
        "fc,fcpa",
        "--hands",
        "4",
        "--poll-seconds",
        "0.2",
        "--reference",
        "always-call",
        "--json",
    ]));
    assert!(trainer.wait().unwrap().success());
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let curve = |variant: &str| -> Vec<u64> {
        let csv = std::fs::read_to_string(dir.join(format!("lbr_{variant}.csv"))).unwrap();
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect()
    };
    // Each checkpoint is evaluated with both variants, in the order given, and each variant
    // has its own curve.
    let steps = curve("fc");
    assert_eq!(curve("fcpa"), steps);
    assert_eq!(2 * steps.len(), lines.len());
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(l["variant"], ["fc", "fcpa"][k % 2], "{l}");
    }
    assert!(
        steps.len() >= 2,
        "only {steps:?} evaluated while the run trained"
    );
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    let summary = json(&dir.join("summary.json"));
    assert_eq!(steps.last().copied(), summary["iterations"].as_u64());
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(l["step"].as_u64(), Some(steps[k / 2]));
        assert!(num(l, "mean").is_finite());
        // The reference is played once per variant and every checkpoint is compared with it.
        let r = &l["reference"];
        assert_eq!(r["policy"], "always-call");
        assert_eq!(r["mean"], lines[k % 2]["reference"]["mean"]);
        if let Some(ratio) = r["ratio"].as_f64() {
            assert!(
                (ratio - num(l, "mean") / num(r, "mean")).abs() < 1e-9,
                "{l}"
            );
        }
    }
    let events = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("events.out.tfevents")
        })
        .count();
    assert!(events >= 2, "the watcher's TensorBoard file is missing");
    // Both variants' curves, at every evaluated step.
    let scalars = armac::run::tensorboard::read_scalars(&dir).unwrap();
    for tag in ["lbr/fc", "lbr/fcpa"] {
        let mut at: Vec<u64> = scalars
            .iter()
            .filter(|(t, _, _)| t == tag)
            .map(|(_, s, _)| *s)
            .collect();
        at.sort();
        assert_eq!(at, steps, "{tag} in the run's TensorBoard");
        // A ratio point wherever the JSON line has a ratio.
        let ratios = scalars
            .iter()
            .filter(|(t, _, _)| *t == format!("{tag}_ratio"))
            .count();
        let want = lines
            .iter()
            .filter(|l| format!("lbr/{}", l["variant"].as_str().unwrap()) == tag)
            .filter(|l| l["reference"]["ratio"].is_number())
            .count();
        assert_eq!(ratios, want, "{tag}_ratio in the run's TensorBoard");
    }
    // --watch and --policy exclude each other; a directory that is no run is refused.
    run_err(
        eval()
            .args([
                "lbr",
                "--watch",
                dir.to_str().unwrap(),
                "--policy",
                "uniform",
            ])
            .args(["--variant", "fc", "--hands", "4"]),
        "cannot be used with",
    );
    run_err(
        eval().args([
            "lbr",
            "--watch",
            "/nonexistent-run",
            "--variant",
            "fc",
            "--hands",
            "4",
        ]),
        "not a run directory",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--breakdown`: the hands by how they ended, as JSON rows whose shares add up to the mean
/// and whose hands add up to the total, and as a text table; without it, no rows.
#[test]
fn breakdown_rows_add_up_to_the_mean() {
    let v = lbr_json("uniform", "fcpa", 200, &["--breakdown"]);
    let rows = v["breakdown"].as_array().unwrap();
    assert!(rows.len() > 3, "{v}");
    let share: f64 = rows.iter().map(|r| num(r, "share_mbb")).sum();
    assert!((share - num(&v, "mean")).abs() < 1e-6, "{v}");
    let hands: u64 = rows.iter().map(|r| r["hands"].as_u64().unwrap()).sum();
    assert_eq!(hands, 200);
    assert!(
        rows.iter().any(|r| r["label"] == "policy folds pre-flop"),
        "{v}"
    );
    assert!(lbr_json("uniform", "fcpa", 8, &[])["breakdown"].is_null());
    let out = run_ok(
        eval()
            .args(["lbr", "--policy", "uniform", "--variant", "fc"])
            .args(["--hands", "40", "--threads", "2", "--breakdown"]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LBR's hands, by how they ended"), "{text}");
    assert!(text.contains("showdown, "), "{text}");
}

/// `--play-threshold` plays a network thresholded (its name says so) and refuses values
/// outside [0, 1).
#[test]
fn play_threshold_is_applied_and_checked() {
    let model = "models/hunl_fcpa_armac";
    let v = lbr_json(model, "fc", 8, &["--play-threshold", "0.3"]);
    assert!(
        v["policy"].as_str().unwrap().contains("threshold 0.3"),
        "{v}"
    );
    let raw = lbr_json(model, "fc", 8, &["--play-threshold", "0"]);
    assert!(
        !raw["policy"].as_str().unwrap().contains("threshold"),
        "{raw}"
    );
    for bad in ["1", "1.5", "nan"] {
        run_err(
            eval()
                .args(["lbr", "--policy", model, "--variant", "fc", "--hands", "4"])
                .args(["--play-threshold", bad]),
            "--play-threshold",
        );
    }
}

/// `--endgame N` solves the river of a network's play: LBR runs against it (its name says
/// so, and the river answers differ from the network's own on the same deals), and a count
/// outside 1..=100,000 is refused naming the flag, as are the play flags where no policy
/// is a network.
#[test]
fn endgame_solving_is_applied_and_checked() {
    let model = "models/hunl_fcpa_armac";
    let v = lbr_json(model, "fc", 40, &["--endgame", "20"]);
    let name = v["policy"].as_str().unwrap();
    assert!(name.contains("endgame solving (20 iterations)"), "{v}");
    assert!(num(&v, "mean").is_finite());
    let plain = lbr_json(model, "fc", 40, &[]);
    assert_ne!(num(&v, "mean"), num(&plain, "mean"), "{v} {plain}");
    let safe = lbr_json(model, "fc", 8, &["--endgame", "20", "--endgame-safe"]);
    assert!(
        safe["policy"]
            .as_str()
            .unwrap()
            .contains("safe endgame solving"),
        "{safe}"
    );
    for bad in ["0", "100001"] {
        run_err(
            eval()
                .args(["lbr", "--policy", model, "--variant", "fc", "--hands", "4"])
                .args(["--endgame", bad]),
            "--endgame",
        );
    }
    run_err(
        eval()
            .args(["lbr", "--policy", model, "--variant", "fc", "--hands", "4"])
            .arg("--endgame-safe"),
        "--endgame-safe needs --endgame",
    );
    run_err(
        eval()
            .args(["lbr", "--policy", model, "--variant", "fc", "--hands", "4"])
            .args(["--endgame-rounds", "2"]),
        "--endgame-rounds needs --endgame",
    );
    for bad in ["0", "5"] {
        run_err(
            eval()
                .args(["lbr", "--policy", model, "--variant", "fc", "--hands", "4"])
                .args(["--endgame", "20", "--endgame-rounds", bad]),
            "--endgame-rounds",
        );
    }
    run_err(
        eval()
            .args([
                "match",
                "--game",
                "hunl_fcpa",
                "--a",
                model,
                "--b",
                "uniform",
            ])
            .args(["--sampled", "--hands", "2", "--endgame", "0"]),
        "--endgame",
    );
    // The play flags change networks only: with no network among the policies they are
    // refused, naming the flag and the policies.
    run_err(
        eval()
            .args([
                "lbr",
                "--policy",
                "uniform",
                "--variant",
                "fc",
                "--hands",
                "4",
            ])
            .args(["--endgame", "20"]),
        "--endgame changes how ARMAC networks play, and no policy here (`uniform`)",
    );
    run_err(
        eval()
            .args(["match", "--game", "hunl_fcpa", "--a", "uniform", "--b"])
            .args([
                "always-call",
                "--sampled",
                "--hands",
                "2",
                "--play-threshold",
                "0.2",
            ]),
        "no policy here (`uniform`, `always-call`)",
    );
    run_err(
        eval()
            .args(["scorecard", "--policy", "always-call", "--hands", "4"])
            .args(["--endgame", "20", "--endgame-safe"]),
        "drop --endgame",
    );
}

/// `--rule sharp` is reported (JSON `rule`, the `sharp LBR-...` label) and changes LBR's raises
/// against a policy that calls and re-raises; against always-fold both rules win exactly the
/// same; an unknown rule is refused by name.
#[test]
fn sharp_rule_is_reported_and_checked() {
    let standard = lbr_json("always-fold", "fcpa", 24, &[]);
    let sharp = lbr_json("always-fold", "fcpa", 24, &["--rule", "sharp"]);
    assert_eq!(standard["rule"], "standard");
    assert_eq!(sharp["rule"], "sharp");
    assert_eq!(standard["mean"], sharp["mean"], "{standard} vs {sharp}");
    let standard = lbr_json("uniform", "fcpa", 48, &[]);
    let sharp = lbr_json("uniform", "fcpa", 48, &["--rule", "sharp"]);
    assert_ne!(standard["mean"], sharp["mean"], "{standard} vs {sharp}");
    let out = run_ok(eval().args([
        "lbr",
        "--policy",
        "always-fold",
        "--variant",
        "fc",
        "--hands",
        "4",
        "--rule",
        "sharp",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("sharp LBR-FC vs always-fold"), "{text}");
    run_err(
        eval().args([
            "lbr",
            "--policy",
            "uniform",
            "--variant",
            "fc",
            "--hands",
            "4",
            "--rule",
            "sharper",
        ]),
        "not an LBR rule",
    );
}
