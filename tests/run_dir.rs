//! Run directories are never destroyed or shared by accident: a new run refuses a non-empty
//! `--out` (unless it is a run and `--overwrite` is given), a rejected config creates nothing,
//! two processes cannot run in one directory at once, and SIGTERM stops a run at a safe point
//! with a checkpoint.

mod common;

use common::{run_err, run_ok, train};
use std::path::Path;
use std::time::{Duration, Instant};

/// Every file, directory and symlink under `dir` with its bytes (link target), sorted by path
/// (the lock file excluded: it records the last holder's pid).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((
                    p.display().to_string(),
                    target.display().to_string().into_bytes(),
                ));
            } else if kind.is_dir() {
                out.push((p.display().to_string(), b"<dir>".to_vec()));
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
        "not a run of armac-train",
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
    // A clean stop at a safe point, reported with the conventional status 128 + 15.
    assert_eq!(
        o.status.code(),
        Some(143),
        "SIGTERM should stop the run cleanly: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--resume"),
        "{}",
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

/// Arguments of a tiny Kuhn ARMAC run into `out`, plus `extra`.
fn tiny_armac(out: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--config",
        "kuhn_armac.toml",
        "--quiet",
        "--set",
        "armac.episodes_per_epoch=32",
        "--set",
        "armac.learning_steps_per_epoch=4",
        "--set",
        "armac.reservoir_capacity=2",
        "--set",
        "armac.hidden=16",
        "--set",
        "armac.batch_trajectories=16",
        "--set",
        "armac.games_per_group=16",
        "--set",
        "eval.every=1",
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Flips one byte in the middle of `path`.
fn flip_byte(path: &Path) {
    let mut b = std::fs::read(path).unwrap();
    let i = b.len() / 2;
    b[i] ^= 0x40;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_failed_resume_leaves_the_run_directory_byte_identical() {
    let dir = common::tmp("rundir", "failed-resume");
    let out = dir.to_str().unwrap();
    run_ok(train().args(tiny_armac(out, &["--set", "armac.epochs=5"])));
    let before = snapshot(&dir);
    let ckpt = dir.join("checkpoint");
    let resume = |extra: &[&str], needle: &str| {
        let mut args = vec!["--resume", out, "--quiet", "--set", "armac.epochs=7"];
        args.extend_from_slice(extra);
        run_err(train().args(&args), needle);
    };
    // A key that changes the run's meaning is named and refused.
    resume(&["--set", "armac.hidden=32"], "armac.hidden");
    resume(&["--set", "seed=9"], "seed");
    assert_eq!(
        snapshot(&dir),
        before,
        "a refused --set changed the run dir"
    );
    // Corrupt replay memory, reservoir network, edited state epoch: each named, nothing changed.
    let net = std::fs::read_dir(dir.join("reservoir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    for (path, needle) in [
        (ckpt.join("replay.bin"), "replay.bin"),
        (net.clone(), net.file_name().unwrap().to_str().unwrap()),
        (ckpt.join("learner/armac_model.bpk"), "armac_model.bpk"),
    ] {
        let good = std::fs::read(&path).unwrap();
        flip_byte(&path);
        let corrupted = snapshot(&dir);
        resume(&[], needle);
        assert_eq!(
            snapshot(&dir),
            corrupted,
            "a failed resume changed the run dir ({needle})"
        );
        std::fs::write(&path, good).unwrap();
    }
    let state = std::fs::read_to_string(ckpt.join("state.json")).unwrap();
    std::fs::write(
        ckpt.join("state.json"),
        state.replace("\"epoch\": 5", "\"epoch\": 6"),
    )
    .unwrap();
    let corrupted = snapshot(&dir);
    resume(&[], "state.json");
    assert_eq!(snapshot(&dir), corrupted);
    std::fs::write(ckpt.join("state.json"), state).unwrap();
    // A deleted reservoir is not recreated empty.
    let aside = common::tmp("rundir", "reservoir-aside");
    std::fs::rename(dir.join("reservoir"), &aside).unwrap();
    resume(&[], "reservoir");
    assert!(
        !dir.join("reservoir").exists(),
        "the reservoir dir was recreated"
    );
    std::fs::rename(&aside, dir.join("reservoir")).unwrap();
    assert_eq!(snapshot(&dir), before);
    // Safe keys are allowed and recorded; the run continues.
    run_ok(train().args(["--resume", out, "--quiet", "--set", "armac.epochs=7"]));
    let log = std::fs::read_to_string(dir.join("resumes.log")).unwrap();
    assert!(
        log.contains("at step 5") && log.contains("armac.epochs=7"),
        "{log}"
    );
    assert!(
        std::fs::read_to_string(dir.join("config.toml"))
            .unwrap()
            .contains("epochs = 7")
    );
    let rows: Vec<String> = std::fs::read_to_string(dir.join("metrics.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(rows, ["1", "2", "3", "4", "5", "6", "7"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn resuming_a_finished_run_is_a_no_op_with_a_message() {
    let dir = common::tmp("rundir", "finished");
    let out = dir.to_str().unwrap();
    run_ok(train().args([
        "--config",
        "kuhn_cfr.toml",
        "--quiet",
        "--set",
        "solver.iterations=30",
        "--out",
        out,
    ]));
    let before = snapshot(&dir);
    let o = run_ok(train().args(["--resume", out]));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already finished"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(snapshot(&dir), before, "resuming a finished run changed it");
    // A tabular solver cannot be swapped on resume either.
    run_err(
        train().args(["--resume", out, "--set", "solver.algorithm=cfr_plus"]),
        "solver.algorithm",
    );
    assert_eq!(snapshot(&dir), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn evicted_reservoir_networks_survive_until_the_next_checkpoint_commits() {
    // Capacity 2 and a checkpoint every 5 epochs: the reservoir evicts networks that the epoch-1
    // checkpoint references. The run is stopped at the start of the epoch-5 checkpoint (file
    // operation 30: the checkpoints of θ^0 and of epoch 1 took 29), so only the epoch-1 one is
    // committed.
    let dir = common::tmp("rundir", "evicted");
    let out = dir.to_str().unwrap();
    let o = train()
        .args(tiny_armac(
            out,
            &[
                "--set",
                "armac.epochs=9",
                "--set",
                "checkpoint.every_epochs=5",
            ],
        ))
        .env("ARMAC_CRASH_AT", "30")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(86),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let state = common::json(&dir.join("checkpoint/state.json"));
    assert_eq!(state["epoch"].as_u64(), Some(1));
    assert!(
        std::fs::read_to_string(dir.join("metrics.csv"))
            .unwrap()
            .lines()
            .count()
            > 5
    );
    run_ok(train().args(["--resume", out, "--quiet"]));
    let state = common::json(&dir.join("checkpoint/state.json"));
    assert_eq!(state["epoch"].as_u64(), Some(9));
    std::fs::remove_dir_all(&dir).ok();
}

/// A new run commits θ^0 before its first epoch (so that a stop inside that epoch resumes), then
/// the first epoch; a kill right after the first commit resumes.
#[test]
fn the_first_checkpoint_comes_before_the_first_epoch() {
    let dir = common::tmp("rundir", "first-checkpoint");
    let out = dir.to_str().unwrap();
    let mut child = spawn(
        &tiny_armac(
            out,
            &[
                "--set",
                "armac.epochs=100000",
                "--set",
                "checkpoint.every_epochs=1000000",
            ],
        )
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    wait_for(&dir.join("checkpoint/manifest.json"));
    child.kill().unwrap();
    child.wait().unwrap();
    let state = common::json(&dir.join("checkpoint/state.json"));
    let epoch = state["epoch"].as_u64().unwrap();
    run_ok(train().args([
        "--resume",
        out,
        "--quiet",
        "--set",
        &format!("armac.epochs={}", epoch + 1),
    ]));
    std::fs::remove_dir_all(&dir).ok();
}
