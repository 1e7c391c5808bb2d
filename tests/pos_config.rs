//! `pos-mccfr` in the `[solver]` registry: the shipped config validates, bad keys and values
//! are errors naming the key.

use armac::run::config::{Config, ConfigError};
use armac::run::solvers::SolverChoice;

const CONFIG: &str = "configs/leduc_pos_predictive.toml";

fn settings(overrides: &[&str]) -> Result<SolverChoice, ConfigError> {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let (config, _) = Config::load(CONFIG, &o)?;
    Ok(config.tabular()?.choice)
}

fn error_key(overrides: &[&str]) -> String {
    match settings(overrides) {
        Err(ConfigError::Value { key, .. }) => key,
        other => panic!("{overrides:?}: expected a value error, got {other:?}"),
    }
}

#[test]
fn shipped_config_selects_pos_with_its_options() {
    let SolverChoice::Pos(spec) = settings(&[]).unwrap() else {
        panic!("not a pos-mccfr choice");
    };
    assert_eq!(
        spec.options.baseline,
        armac::cfr::baseline::Baseline::Predictive
    );
    assert!(spec.options.measure_variance);
    let SolverChoice::Pos(spec) = settings(&["solver.baseline=\"learned-infoset\""]).unwrap()
    else {
        panic!("not a pos-mccfr choice");
    };
    assert_eq!(
        spec.options.baseline,
        armac::cfr::baseline::Baseline::LearnedInfoset
    );
}

#[test]
fn bad_pos_keys_name_the_key() {
    assert_eq!(error_key(&["solver.baselin=\"none\""]), "solver.baselin");
    assert_eq!(
        error_key(&["solver.baseline_alpha=0.0"]),
        "solver.baseline_alpha"
    );
    assert_eq!(error_key(&["solver.exploration=2.0"]), "solver.exploration");
    assert_eq!(
        error_key(&["solver.updates=\"sometimes\""]),
        "solver.updates"
    );
    assert_eq!(
        error_key(&["solver.averaging=\"cubic\""]),
        "solver.averaging"
    );
    assert_eq!(error_key(&["solver.alpha=1.0"]), "solver.alpha");
    match settings(&["solver.baseline=\"oracle\""]) {
        Err(e) => assert!(e.to_string().contains("oracle"), "{e}"),
        Ok(c) => panic!("accepted an unknown baseline: {c:?}"),
    }
}
