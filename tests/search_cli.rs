//! `armac-eval search-nashconv`: exact NashConv of Student of Games search (continual
//! re-solving, exact leaf oracle) from the command line, reproducible from the seed, and clean
//! errors naming the culprit.

mod common;

use common::{eval, num, run_err, run_ok};
use serde_json::Value;

fn search_nashconv(args: &[&str]) -> Value {
    let out = run_ok(eval().arg("search-nashconv").args(args).arg("--json"));
    serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap()
}

#[test]
fn kuhn_search_nashconv_is_small_reproducible_and_falls_with_simulations() {
    let run = || {
        let args = [
            "--game",
            "kuhn_poker",
            "--simulations",
            "200",
            "--seed",
            "3",
        ];
        let mut v = search_nashconv(&args);
        v["stats"]["seconds"] = Value::Null;
        v
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b, "same seed, same answer (wall time aside)");
    assert_eq!(a["simulations"], 200);
    assert_eq!(a["stats"]["decisions"], 4);
    let nc = num(&a, "nash_conv");
    // Uniform play has NashConv 0.9167 on Kuhn; the search policy is near equilibrium.
    assert!(nc > 0.0 && nc < 0.01, "{a}");
    let small = search_nashconv(&["--game", "kuhn_poker", "--simulations", "20"]);
    assert!(num(&small, "nash_conv") > nc, "{small} vs {a}");
}

#[test]
fn bad_search_nashconv_input_names_the_culprit() {
    let cmd = |args: &[&str]| {
        let mut c = eval();
        c.arg("search-nashconv").args(args);
        c
    };
    run_err(
        &mut cmd(&["--game", "kuhn_poker", "--simulations", "0"]),
        "--simulations",
    );
    run_err(
        &mut cmd(&["--game", "kuhn_poker", "--oracle-iterations", "0"]),
        "oracle.iterations",
    );
    run_err(
        &mut cmd(&["--game", "leduc_poker", "--max-histories", "1000"]),
        "too large",
    );
    run_err(
        &mut cmd(&[
            "--game",
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
            "--simulations",
            "5",
        ]),
        "public actions",
    );
    run_err(&mut cmd(&["--game", "no_such_game"]), "no_such_game");
}
