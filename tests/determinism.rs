//! `armac.schedule = "lockstep"`: a run is a function of its config and seed. Two runs write the
//! same files byte for byte — every reservoir network, every checkpoint file, `metrics.csv` —
//! except for the wall-clock and CPU-second fields, which are compared after removing them:
//! the `seconds` and `cpu_seconds` columns of `metrics.csv`, `elapsed_seconds` and `cpu_seconds`
//! in the checkpoint's `state.json` (and that file's sum in the manifest), the clocks of
//! `summary.json`. TensorBoard's event files carry wall times in their names and records and
//! are not compared. Student of Games self-play on its default schedule (one thread) has the
//! same property.

mod common;

use common::{run_ok, tmp, train};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Trains `config` with `sets` under the lock-step schedule into `out`.
fn lockstep(config: &str, out: &Path, sets: &[&str]) {
    let mut cmd = train();
    cmd.args(["--config", config, "--out"]).arg(out).args([
        "--quiet",
        "--set",
        "armac.schedule=\"lockstep\"",
    ]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    run_ok(&mut cmd);
}

/// `text`'s CSV without the columns named in `drop` (the first must be there).
fn without_columns(text: &str, drop: &[&str]) -> String {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| !drop.contains(&header[i]))
        .collect();
    assert!(header.contains(&drop[0]), "{header:?}");
    std::iter::once(header.join(","))
        .chain(lines.map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            keep.iter().map(|&i| v[i]).collect::<Vec<_>>().join(",")
        }))
        .collect::<Vec<_>>()
        .join("\n")
}

/// JSON `bytes` without the top-level `keys` (the wall clock must be among them).
fn json_without(bytes: &[u8], keys: &[&str]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(bytes).unwrap();
    let o = v.as_object_mut().unwrap();
    assert!(
        o.contains_key(keys[0]),
        "{} has no {}",
        String::from_utf8_lossy(bytes),
        keys[0]
    );
    for k in keys {
        o.remove(*k);
    }
    serde_json::to_vec(&v).unwrap()
}

/// Every file of run `dir` that a rerun must reproduce, by name, with its clocks removed
/// (see the module doc). The committed checkpoint's files are named relative to their
/// generation, so that a resumed run (whose generations are numbered on) compares too.
fn fingerprint(dir: &Path, with_config: bool) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let metrics = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    out.insert(
        "metrics.csv".into(),
        without_columns(&metrics, &["seconds", "cpu_seconds"]).into_bytes(),
    );
    // ARMAC's past networks (Student of Games has none).
    for e in std::fs::read_dir(dir.join("reservoir"))
        .into_iter()
        .flatten()
    {
        let p = e.unwrap().path();
        let name = format!("reservoir/{}", p.file_name().unwrap().to_string_lossy());
        out.insert(name, std::fs::read(&p).unwrap());
    }
    let mut gens: Vec<_> = std::fs::read_dir(dir.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    gens.sort();
    let generation = gens.last().unwrap();
    let mut stack = vec![generation.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(generation)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&p).unwrap();
            let bytes = match rel.as_str() {
                "state.json" => json_without(&bytes, &["elapsed_seconds", "cpu_seconds"]),
                "manifest.json" => {
                    let mut v: Value = serde_json::from_slice(&bytes).unwrap();
                    let files = v["files"].as_object_mut().unwrap();
                    files.remove("state.json").unwrap();
                    if !with_config {
                        files.remove("config.toml").unwrap();
                    }
                    serde_json::to_vec(&v).unwrap()
                }
                "config.toml" if !with_config => continue,
                _ => bytes,
            };
            out.insert(format!("checkpoint/{rel}"), bytes);
        }
    }
    let summary = std::fs::read(dir.join("summary.json")).unwrap();
    let mut s: Value = serde_json::from_slice(&summary).unwrap();
    if let Some(b) = s["budget"].as_object_mut() {
        b.remove("cpu_seconds");
    }
    for k in ["iterations", "nash_conv", "budget", "game", "algorithm"] {
        out.insert(format!("summary/{k}"), s[k].to_string().into_bytes());
    }
    if with_config {
        out.insert(
            "config.toml".into(),
            std::fs::read(dir.join("config.toml")).unwrap(),
        );
    }
    out
}

/// The names whose contents differ between two fingerprints (and the names only one has).
fn differences(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .cloned()
        .collect()
}

const LEDUC: &[&str] = &["armac.epochs=4", "armac.actors=2", "eval.every=2"];

#[test]
fn leduc_lockstep_runs_repeat_byte_for_byte_and_the_seed_matters() {
    let (a, b, c) = (
        tmp("det", "leduc-a"),
        tmp("det", "leduc-b"),
        tmp("det", "leduc-c"),
    );
    lockstep("leduc_armac.toml", &a, LEDUC);
    lockstep("leduc_armac.toml", &b, LEDUC);
    let (fa, fb) = (fingerprint(&a, true), fingerprint(&b, true));
    // What is compared: 4 epochs of metrics, θ^0..θ^4, the learner, its optimizer, the
    // replay and both reservoir memories.
    assert_eq!(fa["metrics.csv"].iter().filter(|&&c| c == b'\n').count(), 4);
    for name in [
        "reservoir/net_000004.bpk",
        "checkpoint/learner/armac_model.bpk",
        "checkpoint/learner/armac_optimizer.bpk",
        "checkpoint/replay.bin",
        "checkpoint/memory_regret.bin",
        "checkpoint/memory_policy.bin",
    ] {
        assert!(fa.contains_key(name), "{name} missing: {:?}", fa.keys());
    }
    assert_eq!(differences(&fa, &fb), Vec::<String>::new());
    // Another seed changes the networks, the data and the metrics (the comparison can fail).
    let mut sets = LEDUC.to_vec();
    sets.push("seed=2");
    lockstep("leduc_armac.toml", &c, &sets);
    let diff = differences(&fa, &fingerprint(&c, true));
    for name in [
        "metrics.csv",
        "reservoir/net_000000.bpk",
        "checkpoint/learner/armac_model.bpk",
        "checkpoint/replay.bin",
    ] {
        assert!(diff.iter().any(|d| d == name), "{name} not in {diff:?}");
    }
    for d in [a, b, c] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn leduc_lockstep_does_not_depend_on_the_number_of_actor_threads() {
    let (two, one) = (tmp("det", "leduc-2"), tmp("det", "leduc-1"));
    lockstep("leduc_armac.toml", &two, LEDUC);
    let mut sets = LEDUC.to_vec();
    sets[1] = "armac.actors=1";
    lockstep("leduc_armac.toml", &one, &sets);
    // The configs differ in `armac.actors` alone; everything else is the same.
    let diff = differences(&fingerprint(&two, false), &fingerprint(&one, false));
    assert_eq!(diff, Vec::<String>::new());
    for d in [two, one] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn a_resumed_lockstep_run_equals_an_uninterrupted_one() {
    let (whole, parts) = (tmp("det", "whole"), tmp("det", "parts"));
    lockstep("leduc_armac.toml", &whole, LEDUC);
    let mut first = LEDUC.to_vec();
    first[0] = "armac.epochs=2";
    lockstep("leduc_armac.toml", &parts, &first);
    run_ok(
        train()
            .arg("--resume")
            .arg(&parts)
            .args(["--quiet", "--set", "armac.epochs=4"]),
    );
    let diff = differences(&fingerprint(&whole, true), &fingerprint(&parts, true));
    assert_eq!(diff, Vec::<String>::new());
    for d in [whole, parts] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn a_resumed_run_continues_its_exact_diagnostics() {
    // The diagnostics' accumulators travel in the checkpoint (`diagnostics.bin`): the resumed
    // run's W error, exact regret-matching and exact-average NashConv columns are those of the
    // uninterrupted run, which they are not when the accumulators restart at the resume.
    let (whole, parts) = (tmp("det", "diag_whole"), tmp("det", "diag_parts"));
    let sets = [
        "armac.epochs=4",
        "armac.exact_eval=true",
        "armac.diagnostics=true",
        "eval.every=1",
    ];
    lockstep("leduc_armac.toml", &whole, &sets);
    let mut first = sets.to_vec();
    first[0] = "armac.epochs=2";
    lockstep("leduc_armac.toml", &parts, &first);
    run_ok(
        train()
            .arg("--resume")
            .arg(&parts)
            .args(["--quiet", "--set", "armac.epochs=4"]),
    );
    let (a, b) = (fingerprint(&whole, true), fingerprint(&parts, true));
    assert!(
        a.contains_key("checkpoint/diagnostics.bin"),
        "{:?}",
        a.keys()
    );
    let metrics = String::from_utf8(a["metrics.csv"].clone()).unwrap();
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "diag_nash_conv_exact_avg")
        .unwrap();
    let last: Vec<&str> = metrics.lines().last().unwrap().split(',').collect();
    assert!(last[col].parse::<f64>().unwrap().is_finite(), "{metrics}");
    assert_eq!(differences(&a, &b), Vec::<String>::new());
    for d in [whole, parts] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn a_lockstep_run_stopped_inside_an_epoch_resumes_to_the_uninterrupted_run() {
    // Epochs of a few seconds: SIGTERM lands inside epoch 2, which is then abandoned.
    let sets = [
        "armac.epochs=2",
        "armac.actors=2",
        "eval.every=1",
        "armac.learning_steps_per_epoch=400",
    ];
    let (whole, parts) = (tmp("det", "stop-whole"), tmp("det", "stop-parts"));
    lockstep("leduc_armac.toml", &whole, &sets);
    let mut cmd = train();
    cmd.args(["--config", "leduc_armac.toml", "--out"])
        .arg(&parts)
        .args(["--set", "armac.schedule=\"lockstep\""]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first epoch of a process is checkpointed: stop right after that commit.
    let epoch_of = |dir: &Path| {
        std::fs::read(dir.join("checkpoint/state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["epoch"].as_u64())
    };
    let t = std::time::Instant::now();
    while epoch_of(&parts) != Some(1) {
        assert!(t.elapsed().as_secs() < 120, "epoch 1 never committed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Past the commit's own end: epoch 2 is under way (it takes seconds).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(143), "{err}");
    assert!(err.contains("stopped inside epoch 2"), "{err}");
    assert!(err.contains("continue from epoch 1 with"), "{err}");
    assert_eq!(
        epoch_of(&parts),
        Some(1),
        "the partial epoch was checkpointed"
    );
    run_ok(train().arg("--resume").arg(&parts).arg("--quiet"));
    let diff = differences(&fingerprint(&whole, true), &fingerprint(&parts, true));
    assert_eq!(diff, Vec::<String>::new());
    for d in [whole, parts] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn fcpa_lockstep_runs_repeat_byte_for_byte() {
    let sets = [
        "armac.epochs=2",
        "armac.actors=2",
        "armac.episodes_per_epoch=128",
        "armac.learning_steps_per_epoch=4",
    ];
    let (a, b) = (tmp("det", "fcpa-a"), tmp("det", "fcpa-b"));
    lockstep("nlhe_fcpa.toml", &a, &sets);
    lockstep("nlhe_fcpa.toml", &b, &sets);
    let (fa, fb) = (fingerprint(&a, true), fingerprint(&b, true));
    assert!(
        fa.contains_key("reservoir/net_000002.bpk"),
        "{:?}",
        fa.keys()
    );
    assert_eq!(differences(&fa, &fb), Vec::<String>::new());
    // The budget counters are there and count what the run did.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(a.join("summary.json")).unwrap()).unwrap();
    let budget = &summary["budget"];
    assert_eq!(budget["learning_steps"], 8);
    let episodes = budget["episodes"].as_u64().unwrap();
    assert!(episodes >= 256, "{budget}");
    // Every episode visits its deal (chance), at least one decision and its end.
    assert!(
        budget["nodes_touched"].as_u64().unwrap() >= 3 * episodes,
        "{budget}"
    );
    assert!(
        budget["learning_decisions"].as_u64().unwrap() > 0,
        "{budget}"
    );
    assert!(budget["rows_learned"].as_u64().unwrap() > 0, "{budget}");
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn lockstep_is_refused_for_a_learner_with_remote_actors() {
    let out = tmp("det", "cluster");
    common::run_err(
        train().args([
            "--config",
            "leduc_armac.toml",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
            "--set",
            "armac.schedule=\"lockstep\"",
            "--role",
            "learner",
            "--broker",
            "redis://127.0.0.1:1",
        ]),
        "armac.schedule",
    );
    assert!(!out.exists(), "nothing is written for a refused config");
}

#[test]
fn student_of_games_self_play_repeats_and_resumes_byte_for_byte() {
    // The default schedule (sog.selfplay.actors = 0: the round's phases on one thread).
    let sets = ["--set", "sog.rounds=3", "--set", "eval.every=1"];
    let (a, b, parts) = (
        tmp("det", "sog-a"),
        tmp("det", "sog-b"),
        tmp("det", "sog-parts"),
    );
    for d in [&a, &b] {
        run_ok(
            train()
                .args(["--config", "kuhn_sog.toml", "--out"])
                .arg(d)
                .arg("--quiet")
                .args(sets),
        );
    }
    run_ok(
        train()
            .args(["--config", "kuhn_sog.toml", "--out"])
            .arg(&parts)
            .args(["--quiet", "--set", "sog.rounds=2", "--set", "eval.every=1"]),
    );
    run_ok(
        train()
            .arg("--resume")
            .arg(&parts)
            .args(["--quiet", "--set", "sog.rounds=3"]),
    );
    let fa = fingerprint(&a, true);
    for name in ["checkpoint/cvpn/cvpn_model.bpk", "checkpoint/buffers.bin"] {
        assert!(fa.contains_key(name), "{name} missing: {:?}", fa.keys());
    }
    assert_eq!(
        differences(&fa, &fingerprint(&b, true)),
        Vec::<String>::new()
    );
    assert_eq!(
        differences(&fa, &fingerprint(&parts, true)),
        Vec::<String>::new()
    );
    for d in [a, b, parts] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
