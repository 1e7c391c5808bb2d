//! Student of Games training runs through the binaries: a CI-sized Leduc self-play run must at
//! least halve the search policy's NashConv, a run stopped inside a checkpoint write and
//! resumed must end exactly like an uninterrupted one, bad config values name their key, and
//! `search-nashconv --run` evaluates a run's CVPN or names what is wrong.

mod common;

use common::{eval, run_err, run_ok, tmp, train};
use std::path::Path;

/// The rows of `metrics.csv` as maps column → text.
fn metrics(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

fn f(row: &std::collections::BTreeMap<String, String>, key: &str) -> f64 {
    row[key].parse().unwrap()
}

/// Overrides of the CI-sized Leduc run (`configs/leduc_sog.toml` with fewer rounds).
fn ci_run(rounds: u64) -> Vec<String> {
    [
        "--config",
        "leduc_sog.toml",
        "--set",
        &format!("sog.rounds={rounds}"),
        "--set",
        &format!("eval.every={rounds}"),
        "--set",
        "sog.search.s=20",
        "--set",
        "sog.selfplay.games_per_round=32",
        "--set",
        "sog.selfplay.solves_per_round=512",
        "--set",
        "sog.selfplay.steps_per_round=200",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The self-play check: Leduc, s = 20 (a budget with which every chain's first search
/// ends with a frontier, asserted: the network's values are used), pure self-play queries; the
/// trained CVPN's search-policy NashConv is at most half the initial CVPN's and below 1.
#[test]
fn leduc_self_play_halves_the_search_policy_nash_conv() {
    let out = tmp("sog", "leduc");
    let rounds = 12;
    run_ok(train().args(ci_run(rounds)).arg("--out").arg(&out));
    let rows = metrics(&out);
    assert_eq!(rows.len() as u64, rounds + 1, "round 0 and every round");
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let (initial, trained) = (f(first, "nash_conv"), f(last, "nash_conv"));
    eprintln!("Leduc SoG self-play, {rounds} rounds: search NashConv {initial:.4} -> {trained:.4}");
    assert!(
        trained <= 0.5 * initial && trained < 1.0,
        "trained {trained} vs initial {initial}"
    );
    let (firsts, with_frontier) = (
        f(last, "first_searches"),
        f(last, "first_searches_with_frontier"),
    );
    assert!(firsts >= 2.0 * 32.0 * rounds as f64 - 1e-9, "{firsts}");
    assert_eq!(
        firsts, with_frontier,
        "a first search covered the whole game"
    );
    assert!(f(last, "queries_solved") > 0.0 && f(last, "learner_steps") > 0.0);

    // The run's CVPN evaluated from its directory: the same number as the run's last row.
    let o = run_ok(
        eval()
            .args(["search-nashconv", "--json", "--run"])
            .arg(&out),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["round"].as_u64(), Some(rounds));
    // (metrics.csv holds 7 significant digits)
    assert!(
        (v["nash_conv"].as_f64().unwrap() - trained).abs() <= 1e-6 * trained,
        "{v}"
    );
    assert!(v["cvpn_forwards"].as_u64().unwrap() > 0);

    // The search policy as a policy (`sog:DIR`) and as an exported OpenSpiel-format file:
    // the same exact NashConv, ours and (unless ARMAC_SKIP_PYTHON is set) OpenSpiel's.
    let searched = v["nash_conv"].as_f64().unwrap();
    let sog = format!("sog:{}", out.display());
    let o = run_ok(eval().args([
        "nashconv",
        "--game",
        "leduc_poker",
        "--json",
        "--policy",
        &sog,
    ]));
    let n: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        (n["nash_conv"].as_f64().unwrap() - searched).abs() < 1e-9,
        "{n}"
    );
    let file = out.join("search_policy.json");
    run_ok(
        eval()
            .args(["export-policy", "--checkpoint", &sog, "--out"])
            .arg(&file),
    );
    let o = run_ok(
        eval()
            .args(["nashconv", "--game", "leduc_poker", "--json", "--policy"])
            .arg(&file),
    );
    let n: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        (n["nash_conv"].as_f64().unwrap() - searched).abs() < 1e-9,
        "{n}"
    );
    if std::env::var("ARMAC_SKIP_PYTHON").is_err() {
        let o = run_ok(
            std::process::Command::new("python3")
                .arg(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_policy_openspiel.py"),
                )
                .arg(&file),
        );
        let os: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(os["missing"], 0);
        assert!(
            (os["nash_conv"].as_f64().unwrap() - searched).abs() < 1e-9,
            "OpenSpiel says {os}"
        );
    }
    run_err(
        eval()
            .args(["search-nashconv", "--game", "kuhn_poker", "--run"])
            .arg(&out),
        "does not match the run's game",
    );
    let empty = tmp("sog", "not-a-run");
    std::fs::create_dir_all(&empty).unwrap();
    run_err(
        eval().args(["search-nashconv", "--run"]).arg(&empty),
        "not a run directory",
    );
    std::fs::write(empty.join("config.toml"), "").unwrap();
    run_err(
        eval().args(["search-nashconv", "--run"]).arg(&empty),
        "no complete checkpoint",
    );
    std::fs::remove_dir_all(&out).ok();
    std::fs::remove_dir_all(&empty).ok();
}

/// The metrics without the wall-clock column.
fn metrics_without_seconds(dir: &Path) -> Vec<Vec<(String, String)>> {
    metrics(dir)
        .into_iter()
        .map(|r| r.into_iter().filter(|(k, _)| k != "seconds").collect())
        .collect()
}

/// A run stopped between two file operations of a checkpoint write (fault injection) and
/// resumed finishes with the same rounds, the same metrics and the same network (the same
/// search-policy NashConv to the bit) as an uninterrupted run.
#[test]
fn sog_run_stopped_in_a_checkpoint_resumes_to_the_uninterrupted_result() {
    let args = |rounds: u64| {
        let mut a = ci_run(rounds);
        a.extend(
            [
                "--set",
                "sog.selfplay.games_per_round=4",
                "--set",
                "sog.selfplay.solves_per_round=64",
                "--set",
                "sog.selfplay.steps_per_round=10",
                "--set",
                "checkpoint.every_epochs=1",
                "--set",
                "eval.every=2",
            ]
            .map(String::from),
        );
        a
    };
    let rounds = 4;
    let whole = tmp("sog", "whole");
    run_ok(train().args(args(rounds)).arg("--out").arg(&whole));
    for crash_at in [20, 33] {
        let cut = tmp("sog", &format!("cut{crash_at}"));
        let o = train()
            .args(args(rounds))
            .arg("--out")
            .arg(&cut)
            .env("ARMAC_CRASH_AT", crash_at.to_string())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(86),
            "stopped by fault injection: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        run_ok(train().arg("--resume").arg(&cut).arg("--quiet"));
        assert_eq!(
            metrics_without_seconds(&cut),
            metrics_without_seconds(&whole),
            "stopped at file operation {crash_at}"
        );
        // The networks: their search policies' exact NashConv, to the bit (the weight files
        // also hold burn's random parameter ids, which differ between processes).
        let evaluate = |d: &Path| -> serde_json::Value {
            let o = run_ok(eval().args(["search-nashconv", "--json", "--run"]).arg(d));
            serde_json::from_slice(&o.stdout).unwrap()
        };
        let (a, b) = (evaluate(&cut), evaluate(&whole));
        assert_eq!(a["nash_conv"], b["nash_conv"], "stopped at {crash_at}");
        assert_eq!(a["learner_steps"], b["learner_steps"]);
        let summary = common::json(&cut.join("summary.json"));
        assert_eq!(summary["iterations"].as_u64(), Some(rounds));
        std::fs::remove_dir_all(&cut).ok();
    }
    std::fs::remove_dir_all(&whole).ok();
}

/// Bad values are refused before the run directory is touched, naming the key.
#[test]
fn bad_sog_config_values_name_the_key() {
    let out = tmp("sog", "bad");
    for (kv, key) in [
        ("sog.search.s=0", "sog.search.s"),
        ("sog.search.c=0", "sog.search.c"),
        ("sog.selfplay.epsilon=1.5", "sog.selfplay.epsilon"),
        ("sog.search.alpha=-0.5", "sog.search.alpha"),
        ("sog.net.batch=0", "sog.net.batch"),
        ("sog.selfplay.bogus=1", "bogus"),
        ("sog.selfplay.p_rec=-0.1", "sog.selfplay.p_rec"),
        ("sog.selfplay.td1=2", "sog.selfplay.td1"),
        ("sog.selfplay.actors=2", "sog.selfplay.solvers"),
        ("sog.selfplay.solvers=1", "sog.selfplay.solvers"),
        ("sog.selfplay.sync_every=0", "sog.selfplay.sync_every"),
        // Hold'em goes to its own trainer, which has no exact evaluation: the Leduc config's
        // `exact_eval = true` is refused, naming the key.
        (
            "game=\"universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,\
             raiseSize=2 4,firstPlayer=1 1,maxRaises=1 1,numSuits=2,numRanks=5,\
             numHoleCards=2,numBoardCards=0 3)\"",
            "sog.exact_eval",
        ),
    ] {
        run_err(
            train()
                .args(["--config", "leduc_sog.toml", "--set", kv, "--out"])
                .arg(&out),
            key,
        );
        assert!(!out.exists(), "{kv}: nothing written");
    }
    // II-Goofspiel: the search layout refuses its hidden simultaneous moves, and says so.
    run_err(
        train()
            .args([
                "--config",
                "leduc_sog.toml",
                "--set",
                "game=\"turn_based_simultaneous_game(game=goofspiel(imp_info=True,\
                 num_cards=4,points_order=descending))\"",
                "--out",
            ])
            .arg(&out),
        "search layout",
    );
    std::fs::remove_dir_all(&out).ok();
}

/// Threads: 2 self-play actors and 1 query solver beside the learner (Kuhn, CI-sized). Every
/// round plays its quota of games and takes its quota of learner steps, the network learns,
/// and a threaded run resumed from its checkpoint continues to the longer target with the
/// counters of an uninterrupted run's quotas.
#[test]
fn threaded_self_play_keeps_the_quotas_learns_and_resumes() {
    let out = tmp("sog", "threads");
    let args = |rounds: u64| -> Vec<String> {
        [
            "--config",
            "kuhn_sog.toml",
            "--set",
            &format!("sog.rounds={rounds}"),
            "--set",
            "sog.selfplay.actors=2",
            "--set",
            "sog.selfplay.solvers=1",
            "--set",
            "sog.selfplay.sync_every=5",
            "--set",
            "sog.selfplay.td1=0.5",
            "--set",
            "eval.every=100",
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    run_ok(train().args(args(6)).arg("--out").arg(&out));
    run_ok(
        train()
            .arg("--resume")
            .arg(&out)
            .args(["--set", "sog.rounds=12", "--quiet"]),
    );
    let rows = metrics(&out);
    assert_eq!(rows.len(), 13, "round 0 and 12 rounds");
    let last = &rows[12];
    assert_eq!(f(last, "games"), 12.0 * 16.0);
    assert_eq!(f(last, "learner_steps"), 12.0 * 100.0);
    let solved = f(last, "queries_solved");
    assert!(solved > 0.0 && solved <= 12.0 * 128.0, "{solved}");
    let (initial, trained) = (f(&rows[0], "nash_conv"), f(last, "nash_conv"));
    eprintln!("Kuhn SoG, 2 actors + 1 solver, 12 rounds: {initial:.4} -> {trained:.4}");
    assert!(
        trained < 0.5 * initial,
        "trained {trained} vs initial {initial}"
    );
    std::fs::remove_dir_all(&out).ok();
}

/// `sog.search.batch`: self-play games played in lock-step groups (one CVPN forward per single
/// update for a whole group) make the same run as games played one by one: the same metrics
/// (games, searches, queries, losses, search-policy NashConv) round for round. The flex
/// backend computes each row of a batched forward as it computes it alone, so the runs agree
/// to the bit.
#[test]
fn lockstep_self_play_groups_make_the_same_run() {
    let args = |batch: usize| {
        let mut a = ci_run(2);
        a.extend(
            [
                "--set",
                "sog.selfplay.games_per_round=12",
                "--set",
                "sog.selfplay.solves_per_round=64",
                "--set",
                "sog.selfplay.steps_per_round=10",
                "--set",
                &format!("sog.search.batch={batch}"),
            ]
            .map(String::from),
        );
        a
    };
    let one = tmp("sog", "batch1");
    run_ok(train().args(args(1)).arg("--out").arg(&one));
    let grouped = tmp("sog", "batch5");
    run_ok(train().args(args(5)).arg("--out").arg(&grouped));
    let (a, b) = (
        metrics_without_seconds(&one),
        metrics_without_seconds(&grouped),
    );
    assert_eq!(a.len(), 3, "round 0 and two rounds");
    assert_eq!(a, b);
    std::fs::remove_dir_all(&one).ok();
    std::fs::remove_dir_all(&grouped).ok();
}

/// `sog.search.engine = "tensor"`: Kuhn trains two rounds with every search (self-play,
/// query solves, the exact evaluation's search policy) on the tensor engine, and ends where
/// the scalar engine's run ends (the engines agree to rounding, so the runs' counters agree and
/// the search-policy NashConv to 1e-6). A bad engine name, a device the tensor engine cannot
/// use and the tensor engine on Hold'em are refused, naming the key.
#[test]
fn tensor_engine_trains_kuhn_sog_like_the_scalar_one() {
    let args = |engine: &str| -> Vec<String> {
        [
            "--config",
            "kuhn_sog.toml",
            "--set",
            "sog.rounds=2",
            "--set",
            "eval.every=2",
            "--set",
            "sog.selfplay.games_per_round=8",
            "--set",
            "sog.selfplay.solves_per_round=32",
            "--set",
            "sog.selfplay.steps_per_round=10",
            "--set",
            &format!("sog.search.engine=\"{engine}\""),
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let scalar = tmp("sog", "engine_scalar");
    run_ok(train().args(args("scalar")).arg("--out").arg(&scalar));
    let tensor = tmp("sog", "engine_tensor");
    run_ok(train().args(args("tensor")).arg("--out").arg(&tensor));
    let (a, b) = (metrics(&scalar), metrics(&tensor));
    assert_eq!(a.len(), 3, "round 0 and two rounds");
    assert_eq!(b.len(), 3, "round 0 and two rounds");
    let last = |rows: &[std::collections::BTreeMap<String, String>]| rows[2].clone();
    let (ra, rb) = (last(&a), last(&b));
    for k in ra.keys().filter(|k| *k != "seconds") {
        let (x, y) = (f(&ra, k), f(&rb, k));
        eprintln!("{k}: scalar {x} tensor {y}");
        assert!((x - y).abs() <= 1e-6 * (1.0 + x.abs()), "{k}: {x} vs {y}");
    }
    std::fs::remove_dir_all(&scalar).ok();
    std::fs::remove_dir_all(&tensor).ok();
    let out = tmp("sog", "engine_bad");
    for sets in [
        vec!["sog.search.engine=\"gpu\""],
        vec!["sog.search.engine=\"tensor\"", "sog.search.device=\"tpu\""],
        vec![
            "sog.search.engine=\"tensor\"",
            "sog.exact_eval=false",
            "game=\"universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,\
             raiseSize=2 4,firstPlayer=1 1,maxRaises=1 1,numSuits=2,numRanks=5,\
             numHoleCards=2,numBoardCards=0 3)\"",
        ],
    ] {
        let key = if sets.len() == 2 {
            "sog.search.device"
        } else {
            "sog.search.engine"
        };
        let mut cmd = train();
        cmd.args(["--config", "kuhn_sog.toml"]);
        for kv in &sets {
            cmd.args(["--set", kv]);
        }
        run_err(cmd.arg("--out").arg(&out), key);
        assert!(!out.exists(), "{sets:?}: nothing written");
    }
}
