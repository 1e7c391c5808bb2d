use super::*;
use crate::run::config::{Config, apply_override};
use std::sync::atomic::AtomicBool;

/// `solve` runs the algorithm the registry builds: its CFR+ policy is the one the solver
/// gives when driven by hand, a stop flag that is set stops it before the first
/// iteration, and a misspelt key is named.
#[test]
fn solve_matches_the_solver_and_names_bad_keys() {
    let go = AtomicBool::new(false);
    let s = solve("kuhn_poker", "cfr+", 50, 0, toml::Table::new(), &go).unwrap();
    assert_eq!(s.iterations, 50);
    let mut by_hand = TabularSolver::new(s.tree.clone(), SolverSpec::named("cfr+").unwrap());
    for _ in 0..50 {
        by_hand.iterate();
    }
    assert_eq!(s.policy, by_hand.average_policy());
    let stopped = AtomicBool::new(true);
    let s = solve(
        "kuhn_poker",
        "os-mccfr",
        50,
        0,
        toml::Table::new(),
        &stopped,
    )
    .unwrap();
    assert_eq!(s.iterations, 0);
    let mut keys = toml::Table::new();
    keys.insert("epsilonn".into(), 0.5.into());
    let e = solve("kuhn_poker", "os-mccfr", 5, 0, keys, &go)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("solver.epsilonn"), "{e}");
    let e = solve("kuhn_pokr", "cfr+", 5, 0, toml::Table::new(), &go)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("kuhn_pokr"), "{e}");
}

/// `solve` (what Python's `armac.solve` calls) refuses a game too large for a tree, after
/// counting to the cap, instead of building until memory runs out.
#[test]
fn solve_refuses_a_game_over_the_tree_cap_before_building() {
    let go = AtomicBool::new(false);
    let e = solve("hunl_fcpa", "cfr", 1, 0, toml::Table::new(), &go)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("`game`") && e.contains("more than 20000000 histories"),
        "{e}"
    );
}

fn settle(extra: &str) -> Result<SolverChoice, String> {
    let text =
        format!("game = \"kuhn_poker\"\n[solver]\nalgorithm = \"ftrl\"\niterations = 3\n{extra}");
    let c = Config::from_table(text.parse().unwrap(), "x.toml").map_err(|e| e.to_string())?;
    c.tabular().map(|s| s.choice).map_err(|e| e.to_string())
}

#[test]
fn ftrl_and_omd_keys_are_parsed_and_bad_ones_named() {
    let SolverChoice::Sfo(spec) = settle(
        "updates = \"simultaneous\"\nestimator = \"balanced-outcome\"\nsamples = 7\nstep_size = 2.5\nweights = \"uniform\"\n",
    )
    .unwrap() else {
        panic!("not an FTRL/OMD choice")
    };
    assert_eq!(spec.samples, 7);
    assert_eq!(spec.step_size, 2.5);
    assert!(spec.simultaneous);
    for (extra, key) in [
        ("stepsize = 1.0\n", "solver.stepsize"),
        ("samples = 0\n", "solver.samples"),
        ("step_size = -2.0\n", "solver.step_size"),
        ("estimator = \"outcome\"\n", "solver"),
        ("alpha = 1.0\n", "solver.alpha"),
        ("averaging = \"linear\"\n", "solver.averaging"),
        ("updates = \"sometimes\"\n", "solver.updates"),
    ] {
        let e = settle(extra).unwrap_err();
        assert!(e.contains(key), "{extra}: {e}");
    }
    // A run of the built solver works end to end.
    let choice = settle("estimator = \"external\"\n").unwrap();
    let game = crate::games::load_game("kuhn_poker").unwrap();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let mut s = build(&choice, 1, game.as_ref(), tree).unwrap();
    s.iterate();
    assert_eq!(s.iteration(), 1);
    assert!(s.nodes_touched() > 0);
}

fn tabular(solver: &str) -> Result<super::SolverChoice, String> {
    let text = format!("game = \"kuhn_poker\"\n[solver]\niterations = 10\n{solver}\n");
    Config::from_table(text.parse().unwrap(), "x.toml")
        .map_err(|e| e.to_string())?
        .tabular()
        .map(|s| s.choice)
        .map_err(|e| e.to_string())
}

#[test]
fn mccfr_keys_are_parsed_and_bad_ones_named() {
    let c = tabular("algorithm = \"os-mccfr\"\nbaseline = \"predictive\"\nregret = \"plus\"");
    assert!(matches!(c, Ok(super::SolverChoice::Mccfr(s)) if s.plus));
    for (text, key) in [
        ("algorithm = \"os-mccfr\"\nepsilon = 0.0", "solver.epsilon"),
        (
            "algorithm = \"os-mccfr\"\nbaseline = \"x\"",
            "solver.baseline",
        ),
        ("algorithm = \"es-mccfr\"\nepsilon = 0.5", "solver.epsilon"),
        ("algorithm = \"cs-mccfr\"\nfoo = 1", "solver.foo"),
        ("algorithm = \"as-mccfr\"\nbeta = -1.0", "solver.beta"),
        ("algorithm = \"os-mccfr\"\nbeta = 1.0", "solver.beta"),
        ("algorithm = \"os-mccfr\"\ngamma = 1.0", "solver.gamma"),
        (
            "algorithm = \"os-mccfr\"\nupdates = \"simultaneous\"",
            "solver.updates",
        ),
        (
            "algorithm = \"as-mccfr\"\naveraging = \"power\"",
            "solver.averaging",
        ),
    ] {
        let e = tabular(text).unwrap_err();
        assert!(e.contains(key), "{text}: {e}");
    }
}

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

#[test]
fn overrides_reach_nested_keys_and_keep_types() {
    let mut t = table("game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 10\n");
    apply_override(&mut t, "solver.iterations=500").unwrap();
    apply_override(&mut t, "solver.algorithm=cfr+").unwrap();
    apply_override(&mut t, "eval.every=5").unwrap();
    let c = Config::from_table(t, "test").unwrap();
    let s = c.tabular().unwrap();
    assert_eq!(s.iterations, 500);
    assert_eq!(
        s.choice,
        SolverChoice::Cfr(SolverSpec::named("cfr+").unwrap())
    );
    assert_eq!(s.eval_every, 5);
}

#[test]
fn unknown_keys_and_bad_values_are_named() {
    let t =
        table("game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 10\nfoo = 1\n");
    // The CFR family takes no algorithm-specific keys: a stray key is named at validation.
    let e = Config::from_table(t, "x.toml")
        .unwrap()
        .tabular()
        .unwrap_err()
        .to_string();
    assert!(e.contains("solver.foo"), "{e}");
    let t = table("game = \"kuhn_poker\"\nfoo = 1\n");
    let e = Config::from_table(t, "x.toml").unwrap_err().to_string();
    assert!(e.contains("foo") && e.contains("x.toml"), "{e}");
    let t = table("game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = \"ten\"\n");
    let e = Config::from_table(t, "x.toml").unwrap_err().to_string();
    assert!(e.contains("solver.iterations"), "{e}");
    let t = table("game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfx\"\niterations = 10\n");
    let e = Config::from_table(t, "x")
        .unwrap()
        .tabular()
        .unwrap_err()
        .to_string();
    assert!(e.contains("solver.algorithm") && e.contains("cfx"), "{e}");
    let mut t = table("game = \"kuhn_poker\"");
    assert!(apply_override(&mut t, "novalue").is_err());
    assert!(apply_override(&mut t, "game.x=1").is_err());
}

#[test]
fn dcfr_parameters_apply() {
    let t = table(
        "game = \"kuhn_poker\"\n[solver]\nalgorithm = \"dcfr\"\niterations = 1\nalpha = 2.0\ngamma = 1.0\n",
    );
    let s = Config::from_table(t, "x").unwrap().tabular().unwrap();
    assert_eq!(s.choice, SolverChoice::Cfr(SolverSpec::dcfr(2.0, 0.0, 1.0)));
    let t = table(
        "game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 1\nalpha = 2.0\n",
    );
    assert!(Config::from_table(t, "x").unwrap().tabular().is_err());
}
