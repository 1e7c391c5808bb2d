//! `armac.diagnostics` and `armac.tabular_w`: a short Kuhn run (with exact advantages) writes the exact diagnostics columns (finite W error
//! and policy movement every epoch, exact NashConvs and the critic's error at evaluations), and the key is refused
//! with a message naming it when exact evaluation is off.

mod common;

/// Trains `kuhn_armac.toml` into `dir` with the `--set` keys `sets` (the run must succeed) and
/// returns its `metrics.csv` (see [`read_metrics`]); the run directory is removed then.
fn train_kuhn(dir: &std::path::Path, sets: &[&str]) -> (Vec<String>, Vec<Vec<f64>>) {
    let mut cmd = common::train();
    cmd.args(["--config", "kuhn_armac.toml", "--quiet"]);
    for kv in sets {
        cmd.args(["--set", kv]);
    }
    let o = cmd.arg("--out").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let metrics = read_metrics(dir);
    let _ = std::fs::remove_dir_all(dir);
    metrics
}

/// `metrics.csv` of a run directory: the header and every row parsed as numbers.
fn read_metrics(dir: &std::path::Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

/// The index of column `name` (a test fails naming it if the run did not write it).
fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("metrics.csv has no column {name}"))
}

#[test]
fn kuhn_diagnostics_columns_are_filled() {
    let dir = common::tmp("diag", "kuhn");
    let (header, rows) = train_kuhn(
        &dir,
        &[
            "armac.diagnostics=true",
            // Shares the diagnostics' history tree (built once for both).
            "armac.exact_advantages=true",
            "armac.epochs=3",
            "eval.every=3",
            "armac.episodes_per_epoch=64",
            "armac.learning_steps_per_epoch=5",
        ],
    );
    let col = |name: &str| column(&header, name);
    assert_eq!(rows.len(), 3);
    for r in &rows {
        let w = r[col("diag_w_error")];
        let m = r[col("diag_policy_change")];
        assert!((0.0..=1.0).contains(&w), "{r:?}");
        assert!((0.0..=1.0).contains(&m), "{r:?}");
    }
    let last = &rows[2];
    // Kuhn NashConv is at most 2 × the largest payoff (2 chips) = 4.
    for name in ["diag_nash_conv_exact_rm", "diag_nash_conv_exact_avg"] {
        let v = last[col(name)];
        assert!(v.is_finite() && (0.0..=4.0).contains(&v), "{name} {v}");
    }
    for name in ["diag_w_sampling_error", "diag_w_fit_error"] {
        let v = last[col(name)];
        assert!((0.0..=1.0).contains(&v), "{name} {v}");
    }
    // The critic against the exact q of the played policy: Kuhn's values lie in [-2, 2].
    let rmse = last[col("diag_critic_rmse")];
    assert!(
        rmse.is_finite() && (0.0..=4.0).contains(&rmse),
        "critic rmse {rmse}"
    );
    let wrong = last[col("diag_critic_wrong_sign")];
    assert!((0.0..=1.0).contains(&wrong), "critic wrong sign {wrong}");
    let mass = last[col("diag_critic_wrong_mass")];
    assert!((0.0..=1.0).contains(&mass), "critic wrong mass {mass}");
    assert!(rows[0][col("diag_nash_conv_exact_avg")].is_nan());
    assert!(rows[0][col("diag_critic_rmse")].is_nan());
}

#[test]
fn diagnostics_without_exact_eval_is_refused() {
    let dir = common::tmp("diag", "refused");
    let o = common::train()
        .args([
            "--config",
            "kuhn_armac.toml",
            "--quiet",
            "--set",
            "armac.diagnostics=true",
            "--set",
            "armac.exact_eval=false",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("diagnostics"), "{err}");
    assert!(!dir.exists(), "a refused run created {}", dir.display());
}

/// `armac.tabular_w`: the actors play regret matching on the reservoir's per-infoset mean
/// targets. The diagnostics compute that policy on their own (the reservoir's samples summed per
/// infoset of the game tree), so the played `π^t` must equal it (`diag_w_fit_error` = 0) while
/// the head's own policy would not; with exact advantages this is sampled tabular regret
/// matching, whose exact average must approach equilibrium on Kuhn.
#[test]
fn tabular_w_plays_regret_matching_on_the_reservoir_means() {
    let dir = common::tmp("diag", "tabular_w");
    let (header, rows) = train_kuhn(
        &dir,
        &[
            "armac.memory=\"reservoir\"",
            "armac.behaviour=\"uniform\"",
            "armac.memory_weights=\"none\"",
            "armac.tabular_w=true",
            "armac.exact_advantages=true",
            "armac.diagnostics=true",
            "armac.epochs=60",
            "eval.every=10",
            "armac.episodes_per_epoch=256",
            "armac.learning_steps_per_epoch=5",
        ],
    );
    let col = |name: &str| column(&header, name);
    assert_eq!(rows.len(), 60);
    let evals: Vec<&Vec<f64>> = rows
        .iter()
        .filter(|r| !r[col("nash_conv")].is_nan())
        .collect();
    assert_eq!(evals.len(), 6);
    for r in &evals {
        let fit = r[col("diag_w_fit_error")];
        assert!(
            fit < 1e-6,
            "played π^t differs from RM on the memory: {fit}"
        );
        // π^t is the table's policy, and W error is then the data's error alone.
        let (w, data) = (r[col("diag_w_error")], r[col("diag_w_sampling_error")]);
        assert!((w - data).abs() < 1e-6, "{w} {data}");
    }
    let last = evals[5];
    let avg = last[col("diag_nash_conv_exact_avg")];
    // Uniform play: 0.917; measured 0.12 at this size (0.18 after 30 epochs).
    assert!(
        avg < 0.2,
        "exact average of the tabular sequence: NashConv {avg}"
    );
}

/// With `memory_targets = "infoset_mean_all"` the W head regresses on per-state means over
/// every sample ever offered, which a small reservoir no longer holds: the diagnostics' data
/// policy must be regret matching on those means (so the tabular `π^t`, which plays exactly
/// them, shows no fit error), not on the samples the reservoir still holds.
#[test]
fn the_data_error_uses_the_all_sample_means_once_the_reservoir_evicts() {
    let dir = common::tmp("diag", "mean_all");
    let (header, rows) = train_kuhn(
        &dir,
        &[
            "armac.memory=\"reservoir\"",
            "armac.behaviour=\"uniform\"",
            "armac.memory_weights=\"none\"",
            "armac.memory_targets=\"infoset_mean_all\"",
            // A few epochs' samples: most are evicted by the last evaluation.
            "armac.memory_capacity=64",
            "armac.tabular_w=true",
            "armac.exact_advantages=true",
            "armac.diagnostics=true",
            "armac.epochs=20",
            "eval.every=10",
            "armac.episodes_per_epoch=128",
            "armac.learning_steps_per_epoch=2",
        ],
    );
    let col = |name: &str| column(&header, name);
    let evals: Vec<&Vec<f64>> = rows
        .iter()
        .filter(|r| !r[col("nash_conv")].is_nan())
        .collect();
    assert_eq!(evals.len(), 2);
    for r in &evals {
        let fit = r[col("diag_w_fit_error")];
        assert!(
            fit < 1e-6,
            "played π^t differs from RM on the all-sample means: {fit}"
        );
    }
}

#[test]
fn tabular_w_needs_the_reservoir_memory_and_uniform_behaviour() {
    for extra in [vec![], vec!["--set", "armac.memory=\"reservoir\""]] {
        let dir = common::tmp("diag", "tabular_w_refused");
        let o = common::train()
            .args(["--config", "kuhn_armac.toml", "--quiet"])
            .args(&extra)
            .args(["--set", "armac.tabular_w=true", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("armac.tabular_w"), "{err}");
        assert!(!dir.exists(), "a refused run created {}", dir.display());
        let want = if extra.is_empty() {
            "reservoir"
        } else {
            "behaviour"
        };
        assert!(err.contains(want), "{err}");
        assert!(!dir.join("metrics.csv").exists());
    }
}
