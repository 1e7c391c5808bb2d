//! `armac.diagnostics`: a short Kuhn run (with exact advantages) writes the exact diagnostics columns (finite W error
//! and policy movement every epoch, exact NashConvs at evaluations), and the key is refused
//! with a message naming it when exact evaluation is off.

mod common;

#[test]
fn kuhn_diagnostics_columns_are_filled() {
    let dir = common::tmp("diag", "kuhn");
    let o = common::train()
        .args([
            "--config",
            "kuhn_armac.toml",
            "--quiet",
            "--set",
            "armac.diagnostics=true",
            // Shares the diagnostics' history tree (built once for both).
            "--set",
            "armac.exact_advantages=true",
            "--set",
            "armac.epochs=3",
            "--set",
            "eval.every=3",
            "--set",
            "armac.episodes_per_epoch=64",
            "--set",
            "armac.learning_steps_per_epoch=5",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
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
    assert!(rows[0][col("diag_nash_conv_exact_avg")].is_nan());
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
}
