//! Run directories are never destroyed or shared by accident: a new run refuses a non-empty
//! `--out` (unless `--overwrite`), a rejected config creates nothing, two processes cannot run
//! in one directory at once, and SIGTERM stops a run at a safe point with a checkpoint.

mod common;

use common::{run_err, run_ok, train};
use std::path::Path;
use std::time::{Duration, Instant};

/// Every file under `dir` with its bytes, sorted by path (the lock file excluded: it records
/// the last holder's pid).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "run.lock" {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_new_run_refuses_a_non_empty_out_and_leaves_it_untouched() {
    let dir = common::tmp("rundir", "refuse");
    let out = dir.to_str().unwrap();
    run_ok(train().args(["--config", "kuhn_cfr.toml", "--quiet", "--out", out]));
    let before = snapshot(&dir);
    assert!(before.iter().any(|(p, _)| p.ends_with("metrics.csv")));
    // Same algorithm, other algorithm, ARMAC: all refused, nothing changed.
    for config in ["kuhn_cfr.toml", "leduc_cfr.toml", "kuhn_armac.toml"] {
        run_err(
            train().args(["--config", config, "--quiet", "--out", out]),
            "--overwrite",
        );
        assert_eq!(snapshot(&dir), before, "{config} changed the run directory");
    }
    // A foreign file counts too.
    let other = common::tmp("rundir", "foreign");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    run_err(
        train().args([
            "--config",
            "kuhn_cfr.toml",
            "--quiet",
            "--out",
            other.to_str().unwrap(),
        ]),
        "not empty",
    );
    assert_eq!(std::fs::read(other.join("notes.txt")).unwrap(), b"mine");
    // --overwrite replaces the run: a fresh metrics.csv of the new run only.
    run_ok(train().args([
        "--config",
        "kuhn_cfr.toml",
        "--quiet",
        "--set",
        "solver.iterations=20",
        "--overwrite",
        "--out",
        out,
    ]));
    let metrics = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let last = metrics.lines().last().unwrap();
    assert!(last.starts_with("20,"), "{last}");
    // --overwrite cannot be combined with --resume.
    run_err(train().args(["--resume", out, "--overwrite"]), "overwrite");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&other).ok();
}

#[test]
fn a_rejected_config_creates_no_run_directory() {
    let dir = common::tmp("rundir", "rejected");
    run_err(
        train().args([
            "--config",
            "kuhn_cfr.toml",
            "--set",
            "solver.iterations=0",
            "--out",
            dir.to_str().unwrap(),
        ]),
        "solver.iterations",
    );
    assert!(!dir.exists(), "a rejected config created {}", dir.display());
    run_err(
        train().args(["--config", "kuhn_cfr.toml", "--max-seconds", "-5"]),
        "non-negative",
    );
}

/// Starts `armac-train` in the background.
fn spawn(args: &[&str]) -> std::process::Child {
    train()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `path` exists (at most 60 s).
fn wait_for(path: &Path) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_second_process_cannot_use_a_locked_run_directory() {
    let dir = common::tmp("rundir", "locked");
    let out = dir.to_str().unwrap();
    let mut first = spawn(&[
        "--config",
        "leduc_cfr.toml",
        "--quiet",
        "--set",
        "solver.iterations=100000000",
        "--max-seconds",
        "20",
        "--out",
        out,
    ]);
    wait_for(&dir.join("metrics.csv"));
    let pid = first.id().to_string();
    // Resuming or overwriting the busy directory fails and names the holder.
    run_err(train().args(["--resume", out]), &pid);
    run_err(
        train().args(["--config", "kuhn_cfr.toml", "--overwrite", "--out", out]),
        "in use",
    );
    first.kill().unwrap();
    first.wait().unwrap();
    // Once the holder is gone (even killed), the lock is free again.
    run_ok(train().args([
        "--config",
        "kuhn_cfr.toml",
        "--quiet",
        "--overwrite",
        "--out",
        out,
    ]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_stops_an_armac_run_at_a_safe_point_with_a_checkpoint() {
    let dir = common::tmp("rundir", "sigterm");
    let out = dir.to_str().unwrap();
    let child = spawn(&[
        "--config",
        "kuhn_armac.toml",
        "--quiet",
        "--set",
        "armac.epochs=100000",
        "--set",
        "armac.episodes_per_epoch=64",
        "--set",
        "armac.learning_steps_per_epoch=5",
        "--set",
        "checkpoint.every_epochs=1000000",
        "--out",
        out,
    ]);
    wait_for(&dir.join("metrics.csv"));
    std::thread::sleep(Duration::from_millis(1500));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "SIGTERM should stop the run cleanly: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stopped"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The checkpoint taken at the stop resumes (a few more epochs).
    let state: serde_json::Value = common::json(&dir.join("checkpoint/state.json"));
    let epoch = state["epoch"].as_u64().unwrap();
    assert!(epoch >= 1, "no epoch finished before the checkpoint");
    let target = (epoch + 2).to_string();
    run_ok(train().args([
        "--resume",
        out,
        "--quiet",
        "--set",
        &format!("armac.epochs={target}"),
    ]));
    let state: serde_json::Value = common::json(&dir.join("checkpoint/state.json"));
    assert_eq!(state["epoch"].as_u64().unwrap(), epoch + 2);
    std::fs::remove_dir_all(&dir).ok();
}
