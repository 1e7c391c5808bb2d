//! End-to-end test of `armac-bench actor`: one JSON line whose rates and ratio agree, on Leduc
//! with a feed-forward net and Hold'em with a recurrent one, and bad flags that fail with a message.

mod common;

use serde_json::Value;

fn run(args: &[&str]) -> std::process::Output {
    common::bench().arg("actor").args(args).output().unwrap()
}

#[test]
fn actor_bench_reports_both_paths_and_their_ratio() {
    // Leduc with its shipped feed-forward settings; Hold'em's recurrent config.
    for (config, recurrent) in [
        ("leduc_armac.toml", false),
        ("nlhe_fcpa_recurrent.toml", true),
    ] {
        let out = run(&[
            "--config",
            config,
            "--groups",
            "1",
            "--repeats",
            "2",
            "--past",
            "2",
            "--set",
            "armac.hidden=16",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "armac-bench actor failed: {err}");
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "one JSON line expected: {text}");
        let v: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["recurrent"], recurrent, "{v}");
        let sel = common::num(&v, "steps_per_second_selected_heads");
        let all = common::num(&v, "steps_per_second_all_heads");
        let ratio = common::num(&v, "ratio");
        assert!(sel > 0.0 && all > 0.0, "{v}");
        assert!((ratio - sel / all).abs() < 1e-9 * ratio, "{v}");
        // Two blocks of one group of 64 games: at least one decision per game.
        assert!(common::num(&v, "decisions_per_path") >= 2.0 * 64.0, "{v}");
    }
}

#[test]
fn actor_bench_rejects_bad_flags() {
    let out = run(&["--config", "leduc_armac.toml", "--groups", "0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--groups"), "{err}");
    let out = run(&["--config", "no_such_config.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no_such_config"), "{err}");
}
