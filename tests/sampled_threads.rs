//! The threaded samplers end to end: a run with `threads = 2` repeats itself for the same seed,
//! a run stopped and resumed with `--resume` equals the uninterrupted one, and a bad `threads`
//! value is refused naming `solver.threads`.

mod common;

use common::{run_err, run_ok, train};
use std::path::Path;

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

/// metrics.csv without its wall-clock column.
fn rows(dir: &Path) -> Vec<String> {
    read(dir, "metrics.csv")
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(1);
            f.join(",")
        })
        .collect()
}

fn run(config: &str, dir: &Path, iterations: u64, extra: &[&str], resume: bool) {
    let mut cmd = train();
    cmd.args([
        "--quiet",
        "--set",
        &format!("solver.iterations={iterations}"),
    ]);
    for e in extra {
        cmd.args(["--set", e]);
    }
    if resume {
        cmd.arg("--resume");
    } else {
        cmd.args(["--config", config, "--out"]);
    }
    run_ok(cmd.arg(dir));
}

#[test]
fn threaded_samplers_repeat_and_resume_exactly() {
    // (config, iterations, eval.every): outcome sampling, external sampling, POS and FTRL; half
    // the iterations is a multiple of eval.every (a stopped run also evaluates its last one).
    let cases = [
        ("leduc_os_mccfr.toml", 400, 100),
        ("leduc_es_mccfr.toml", 40, 10),
        ("leduc_pos_predictive.toml", 80, 20),
        ("leduc13_ftrl.toml", 8, 2),
    ];
    for (config, n, every) in cases {
        let name = config.trim_end_matches(".toml");
        let dirs = ["a", "b", "c"].map(|k| common::tmp("threads", &format!("{name}-{k}")));
        let mut extra = vec![
            "solver.threads=2".to_string(),
            format!("eval.every={every}"),
        ];
        if config.starts_with("leduc_pos") {
            // The variance measurement needs the sequential pass.
            extra.push("solver.measure_variance=false".into());
        }
        if config.starts_with("leduc13") {
            extra.push("solver.samples=8".into());
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        run(config, &dirs[0], n, &extra, false);
        run(config, &dirs[1], n, &extra, false);
        assert_eq!(
            read(&dirs[0], "policy.json"),
            read(&dirs[1], "policy.json"),
            "{config}: same seed and threads, different policy"
        );
        assert_eq!(rows(&dirs[0]), rows(&dirs[1]), "{config}");
        // Stopped at half the budget, then resumed: the run directory's config keeps
        // `threads = 2`.
        run(config, &dirs[2], n / 2, &extra, false);
        let resume_extra: Vec<&str> = extra
            .iter()
            .copied()
            .filter(|e| !e.starts_with("solver.") || e.starts_with("solver.iterations"))
            .collect();
        run(config, &dirs[2], n, &resume_extra, true);
        assert_eq!(
            read(&dirs[0], "policy.json"),
            read(&dirs[2], "policy.json"),
            "{config}: resumed run differs from the uninterrupted one"
        );
        assert_eq!(
            rows(&dirs[0]),
            rows(&dirs[2]),
            "{config}: metrics after resume"
        );
        for d in &dirs {
            std::fs::remove_dir_all(d).ok();
        }
    }
}

#[test]
fn bad_threads_values_name_the_key() {
    for config in [
        "leduc_os_mccfr.toml",
        "leduc_pos_predictive.toml",
        "leduc13_ftrl.toml",
    ] {
        for bad in ["0", "1.5", "\"two\"", "-1"] {
            let dir = common::tmp("threads", "bad");
            run_err(
                train()
                    .args(["--config", config, "--quiet", "--set"])
                    .arg(format!("solver.threads={bad}"))
                    .arg("--out")
                    .arg(&dir),
                "solver.threads",
            );
            std::fs::remove_dir_all(&dir).ok();
        }
    }
}
