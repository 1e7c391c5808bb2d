//! End-to-end tests of `armac-eval scorecard`: the JSON structure and its consistency on the
//! shipped Hold'em model (ratios, seeds, the same figures as `match`, the same JSON for the
//! same seed), the text table, and clean errors naming the culprit on bad input.

mod common;

use common::{eval, json, num, run_err, run_ok, tmp};
use serde_json::Value;

const MODEL: &str = "models/hunl_fcpa_armac";
const VARIANTS: [&str; 3] = ["fc", "fcpa", "fc12-fcpa34"];

/// `scorecard --policy POLICY --hands 40 --match-hands 400 --seed 5` plus `extra`, on two
/// threads unless `extra` says otherwise.
fn scorecard(policy: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd = eval();
    cmd.args(["scorecard", "--policy", policy])
        .args(["--hands", "40", "--match-hands", "400", "--seed", "5"])
        .args(extra);
    if !extra.contains(&"--threads") {
        cmd.args(["--threads", "2"]);
    }
    run_ok(&mut cmd)
}

/// The scorecard without its `timing` (the only field that may differ between two runs).
fn without_timing(mut v: Value) -> Value {
    let timing = v.as_object_mut().unwrap().remove("timing");
    assert!(timing.unwrap()["seconds"].as_f64().unwrap() > 0.0);
    v
}

/// Asserts the structure of one estimate: finite mean and interval, `hands` and `seed`.
fn check_estimate(e: &Value, hands: u64, seed: u64) {
    assert!(num(e, "mean").is_finite(), "{e}");
    assert!(num(e, "ci95").is_finite() && num(e, "ci95") > 0.0, "{e}");
    assert_eq!(e["hands"].as_u64(), Some(hands), "{e}");
    assert_eq!(e["seed"].as_u64(), Some(seed), "{e}");
}

#[test]
fn a_model_gets_both_columns_with_consistent_figures() {
    let out = scorecard(MODEL, &["--json"]);
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(card["policy"], MODEL);
    assert_eq!(card["unit"], "mbb/hand");
    assert_eq!(card["seed"], 5);
    assert_eq!(card["hands"], 40);
    assert_eq!(card["match_hands"], 400);
    assert!(
        card["game"]
            .as_str()
            .unwrap()
            .contains("bettingAbstraction=fcpa")
    );
    let seeds = &card["seeds"];
    let seed = |k: &str| seeds[k].as_u64().unwrap();
    assert_eq!(
        [
            "vs_uniform",
            "vs_always_call",
            "lbr_fc",
            "lbr_fcpa",
            "lbr_fc12_fcpa34"
        ]
        .map(seed),
        [5, 6, 7, 8, 9]
    );
    let lbr_seed = |v: &str| seed(&format!("lbr_{}", v.replace('-', "_")));
    for v in VARIANTS {
        check_estimate(&card["lbr_uniform"][v], 40, lbr_seed(v));
    }
    let policies = card["policies"].as_object().unwrap();
    let names: Vec<&String> = policies.keys().collect();
    assert_eq!(names, ["average", "current"]);
    assert_eq!(policies["current"]["argument"], format!("current:{MODEL}"));
    for (name, p) in policies {
        let prefix = format!("armac-{name}-policy");
        assert!(p["policy"].as_str().unwrap().starts_with(&prefix), "{p}");
        check_estimate(&p["vs_uniform"], 400, 5);
        check_estimate(&p["vs_always_call"], 400, 6);
        // AIVAT is opt-in (`--aivat`): absent by default.
        assert!(p["vs_uniform"].get("aivat").is_none(), "{p}");
        assert!(p["vs_always_call"].get("aivat").is_none(), "{p}");
        for v in VARIANTS {
            let row = &p["lbr"][v];
            check_estimate(row, 40, lbr_seed(v));
            let want = num(row, "mean") / num(&card["lbr_uniform"][v], "mean");
            let ratio = num(row, "ratio");
            assert!((ratio - want).abs() <= 1e-9 * want.abs().max(1.0), "{row}");
            assert!(num(row, "ratio_ci95").is_finite(), "{row}");
        }
    }
    // The match rows are what `armac-eval match` reports with the same hands and seed.
    let m = run_ok(eval().args([
        "match", "--a", MODEL, "--b", "uniform", "--hands", "400", "--seed", "5", "--json",
    ]));
    let m: Value = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(
        num(&m, "mean_mbb"),
        num(&policies["average"]["vs_uniform"], "mean")
    );
    // Same seed, the text table and --out: the same JSON; the table names every row.
    let file = tmp("scorecard", "card.json");
    let text = scorecard(MODEL, &["--out", file.to_str().unwrap(), "--threads", "1"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    for needle in [
        "| vs uniform",
        "| vs always-call",
        "| LBR-FC ",
        "| LBR-FCPA ",
        "| LBR-FC12-FCPA34",
        "average: armac-average-policy",
        "current: armac-current-policy",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(!text.contains("AIVAT"), "{text}");
    assert_eq!(without_timing(json(&file)), without_timing(card.clone()));
    let _ = std::fs::remove_file(&file);
    // An explicit `current:` scores that column only, with the same figures.
    let out = scorecard(&format!("current:{MODEL}"), &["--json"]);
    let current: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cols: Vec<&String> = current["policies"].as_object().unwrap().keys().collect();
    assert_eq!(cols, ["current"]);
    assert_eq!(current["policies"]["current"], policies["current"]);
    assert_eq!(current["lbr_uniform"], card["lbr_uniform"]);
}

#[test]
fn bad_input_is_refused_naming_it() {
    let base = ["scorecard", "--hands", "8", "--match-hands", "8"];
    let with = |policy: &str, extra: &[&str], needle: &str| {
        run_err(
            eval().args(base).args(["--policy", policy]).args(extra),
            needle,
        )
    };
    // Not heads-up no-limit Hold'em with FCPA actions.
    with(MODEL, &["--game", "leduc_poker"], "leduc_poker");
    with("uniform", &["--game", "kuhn_poker"], "kuhn_poker");
    let fc_game = "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fc)";
    with("uniform", &["--game", fc_game], "fold and call");
    // A model of another game, a missing directory, a missing `current:` directory.
    with("models/leduc_armac", &[], "models/leduc_armac");
    with("models/leduc_armac", &[], "trained on leduc_poker");
    with("no/such/model", &[], "no/such/model");
    with("current:no/such/model", &[], "current:no/such/model");
    // Bad numbers and an output file that cannot be written.
    with(MODEL, &["--hands", "0"], "--hands");
    with(MODEL, &["--match-hands", "0"], "--match-hands");
    with(MODEL, &["--aivat-values", "pair"], "--aivat");
    with(MODEL, &["--aivat", "--aivat-values", "both"], "both");
    with(
        MODEL,
        &["--out", "/no/such/dir/card.json"],
        "/no/such/dir/card.json",
    );
    // A corrupt model: its network truncated, then missing.
    let dir = tmp("scorecard", "corrupt");
    let (name, net) = common::copy_model_but_network(std::path::Path::new(MODEL), &dir);
    let bytes = std::fs::read(net).unwrap();
    std::fs::write(dir.join("reservoir").join(&name), &bytes[..bytes.len() / 3]).unwrap();
    with(dir.to_str().unwrap(), &[], &name);
    std::fs::remove_file(dir.join("reservoir").join(&name)).unwrap();
    with(dir.to_str().unwrap(), &[], &name);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--aivat` (cheap here: one column, 40 match hands): each match reports AIVAT's estimate
/// beside its plain mean, with the critic by default (the figure `match --aivat --aivat-values
/// critic` gives) or the pair's values with `--aivat-values pair`; the table says so.
#[test]
fn aivat_is_reported_on_request() {
    let policy = format!("current:{MODEL}");
    let card = |extra: &[&str]| {
        let mut cmd = eval();
        cmd.args(["scorecard", "--policy", &policy, "--hands", "8"])
            .args([
                "--match-hands",
                "40",
                "--seed",
                "5",
                "--threads",
                "2",
                "--aivat",
            ])
            .args(extra);
        run_ok(&mut cmd)
    };
    let out = card(&["--json"]);
    let card_json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &card_json["policies"]["current"];
    for row in ["vs_uniform", "vs_always_call"] {
        let v = &p[row]["aivat"];
        assert!(num(v, "mean").is_finite() && num(v, "ci95") > 0.0, "{v}");
        assert!(
            v["values"].as_str().unwrap().starts_with("armac-critic"),
            "{v}"
        );
    }
    let m = run_ok(eval().args([
        "match",
        "--a",
        &policy,
        "--b",
        "uniform",
        "--hands",
        "40",
        "--seed",
        "5",
        "--json",
        "--aivat",
        "--aivat-values",
        "critic",
    ]));
    let m: Value = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(num(&m, "mean_mbb"), num(&p["vs_uniform"], "mean"));
    let (want, got) = (
        num(&m["aivat"], "mean_mbb"),
        num(&p["vs_uniform"]["aivat"], "mean"),
    );
    assert!(
        (want - got).abs() <= 1e-6 * want.abs().max(1.0),
        "{m} vs {p}"
    );
    let pair = card(&["--json", "--aivat-values", "pair"]);
    let pair: Value = serde_json::from_slice(&pair.stdout).unwrap();
    let v = &pair["policies"]["current"]["vs_uniform"]["aivat"];
    assert!(
        v["values"].as_str().unwrap().starts_with("pair lookahead"),
        "{v}"
    );
    let text = String::from_utf8_lossy(&card(&[]).stdout).into_owned();
    for needle in ["(AIVAT ", "AIVAT's unbiased estimate"] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
}

/// A recurrent checkpoint: LBR cannot query its current policy's ranges, so a run directory
/// gets the average column only and an explicit `current:` is refused before anything plays.
#[test]
fn a_recurrent_run_is_scored_as_its_average_policy() {
    let dir = tmp("scorecard", "recurrent");
    run_ok(common::tiny_run("nlhe_fcpa_recurrent.toml", &dir).args(["--set", "armac.epochs=2"]));
    let run = dir.to_str().unwrap();
    let out = run_ok(eval().args(["scorecard", "--policy", run]).args([
        "--hands",
        "4",
        "--match-hands",
        "20",
        "--json",
    ]));
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cols: Vec<&String> = card["policies"].as_object().unwrap().keys().collect();
    assert_eq!(cols, ["average"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("recurrent"));
    run_err(
        eval().args(["scorecard", "--policy", &format!("current:{run}")]),
        "recurrent",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--breakdown`: every LBR row of every column carries LBR's hands by how they ended (the
/// shares add up to the row's mean, the hands to its hands) and the text shows one table per
/// row; without it the JSON has no `breakdown`.
#[test]
fn breakdown_is_kept_per_lbr_row() {
    let out = scorecard("always-call", &["--json", "--breakdown"]);
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    let col = &card["policies"]["policy"];
    for v in VARIANTS {
        let row = &col["lbr"][v];
        let parts = row["breakdown"].as_array().unwrap();
        assert!(!parts.is_empty(), "{row}");
        let share: f64 = parts.iter().map(|r| num(r, "share_mbb")).sum();
        assert!((share - num(row, "mean")).abs() < 1e-6, "{row}");
        let hands: u64 = parts.iter().map(|r| r["hands"].as_u64().unwrap()).sum();
        assert_eq!(hands, 40, "{row}");
        // Always-call never folds, so no hand ends with the policy folding.
        assert!(
            parts
                .iter()
                .all(|r| !r["label"].as_str().unwrap().starts_with("policy folds")),
            "{row}"
        );
    }
    let plain: Value =
        serde_json::from_slice(&scorecard("always-call", &["--json"]).stdout).unwrap();
    assert!(
        plain["policies"]["policy"]["lbr"]["fc"]
            .get("breakdown")
            .is_none()
    );
    let text =
        String::from_utf8_lossy(&scorecard("always-call", &["--breakdown"]).stdout).into_owned();
    assert_eq!(
        text.matches("LBR's hands, by how they ended").count(),
        3,
        "{text}"
    );
    assert!(
        text.contains("LBR-FC12-FCPA34 vs policy (always-call)"),
        "{text}"
    );
}

/// `scripts/hunl_curve.sh` on a tiny Hold'em run with one-second legs: a model and a
/// scorecard per hour (played with PLAY_THRESHOLD), later hours at later epochs, the merged
/// CSV with every point; run again, it finds every hour scored and trains nothing more.
#[test]
fn the_curve_script_keeps_a_model_and_a_scorecard_per_leg() {
    let dir = tmp("scorecard", "curve");
    let run = dir.join("run");
    let out = dir.join("out");
    run_ok(
        common::tiny_run("nlhe_fcpa.toml", &run)
            .args(["--max-cpu-seconds", "1"])
            .args(["--set", "armac.epochs=100000"]),
    );
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_armac-eval"))
        .parent()
        .unwrap();
    let curve = || {
        let mut cmd = std::process::Command::new("bash");
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("scripts/hunl_curve.sh")
            .args([run.to_str().unwrap(), out.to_str().unwrap(), "2"])
            .env("BIN", bin)
            .env("LEG_SECONDS", "1")
            .env("HANDS", "4")
            .env("MATCH_HANDS", "20")
            .env("PLAY_THRESHOLD", "0.3");
        cmd
    };
    run_ok(&mut curve());
    let card = |h: u32| -> Value {
        let text = std::fs::read_to_string(out.join(format!("sc_h{h}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let epoch = |h: u32| -> u64 {
        let name = card(h)["policies"]["average"]["policy"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(name.contains("threshold 0.3"), "{name}");
        name.split("epoch ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(epoch(2) > epoch(1), "{} {}", epoch(1), epoch(2));
    for h in [1, 2] {
        assert_eq!(
            card(h)["policies"]["average"]["argument"],
            out.join(format!("models/h{h}")).to_str().unwrap()
        );
        assert!(out.join(format!("models/h{h}/manifest.json")).is_file());
    }
    let csv = std::fs::read_to_string(out.join("curve.csv")).unwrap();
    for h in ["1", "2"] {
        assert!(
            csv.lines().any(|l| l.starts_with(&format!("{h},"))),
            "{csv}"
        );
    }
    // A second call finds both hours scored: the run's checkpoint does not move.
    let state = run.join("checkpoint").join("state.json");
    let before = std::fs::read(&state).unwrap();
    let again = run_ok(&mut curve());
    assert!(!String::from_utf8_lossy(&again.stdout).contains("hour "));
    assert_eq!(std::fs::read(&state).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--sharp-lbr` adds the sharp rule's rows for the raising variants, on the standard rows'
/// seeds, in the JSON (`lbr_sharp`, `lbr_sharp_uniform`) and in the table; without it the
/// JSON has neither field.
#[test]
fn sharp_lbr_rows_are_added_on_request() {
    let plain: Value = serde_json::from_slice(&scorecard("uniform", &["--json"]).stdout).unwrap();
    assert!(plain.get("lbr_sharp_uniform").is_none(), "{plain}");
    assert!(plain["policies"]["policy"].get("lbr_sharp").is_none());
    let out = scorecard("uniform", &["--json", "--sharp-lbr"]);
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sharp = &card["policies"]["policy"]["lbr_sharp"];
    let keys: Vec<&String> = sharp.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["fc12-fcpa34", "fcpa"]);
    for v in ["fcpa", "fc12-fcpa34"] {
        let row = &sharp[v];
        let seed = card["policies"]["policy"]["lbr"][v]["seed"]
            .as_u64()
            .unwrap();
        check_estimate(row, 40, seed);
        // The policy is uniform: LBR against it is its own reference, ratio 1.
        assert!((num(row, "ratio") - 1.0).abs() < 1e-9, "{row}");
        assert_eq!(row["mean"], card["lbr_sharp_uniform"][v]["mean"]);
        // The standard rows are those of a scorecard without the sharp ones.
        assert_eq!(
            card["policies"]["policy"]["lbr"][v],
            plain["policies"]["policy"]["lbr"][v]
        );
    }
    let out = scorecard("uniform", &["--sharp-lbr"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| sharp LBR-FCPA "), "{text}");
    assert!(text.contains("| sharp LBR-FC12-FCPA34 "), "{text}");
    assert!(!text.contains("sharp LBR-FC "), "{text}");
}
