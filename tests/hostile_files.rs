//! Damaged files, refused by name: one-byte corruption of every file of every shipped model and
//! of every checkpoint file of a small run, a summary that no longer matches its sum, a
//! corrupt model manifest of every kind, a tabular run given as a network and a policy file
//! with an unknown information state. Models and runs are left as they were.

mod common;
#[path = "common/hostile.rs"]
mod damage;

use common::{eval, run_ok, tmp, train};
use damage::{copy_dir, flip, refused, snapshot, write};
use std::path::{Path, PathBuf};

#[test]
fn one_flipped_byte_in_any_file_of_a_shipped_model_is_refused_by_name() {
    let mut cases = 0;
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/models")).unwrap() {
        let src = entry.unwrap().path();
        if !src.is_dir() {
            continue;
        }
        let score = common::json(&src.join("score.json"));
        let game = score["game"].as_str().unwrap().to_string();
        let dir = tmp("hostile", "model");
        copy_dir(&src, &dir);
        let files: Vec<PathBuf> = snapshot(&dir)
            .unwrap()
            .into_iter()
            .filter(|(_, b)| b != b"<dir>")
            .map(|(rel, _)| rel)
            .collect();
        assert!(files.len() >= 5, "{}: {files:?}", src.display());
        // A Student of Games model is named as a search policy.
        let policy = match score["policy"].as_str() {
            Some("sog") => format!("sog:{}", dir.display()),
            _ => dir.display().to_string(),
        };
        for rel in &files {
            let path = dir.join(rel);
            let good = flip(&path);
            let name = rel.file_name().unwrap().to_str().unwrap();
            let mut cmd = eval();
            if game == "hunl_fcpa" {
                cmd.args(["match", "--a", &policy, "--b", "uniform", "--hands", "2"]);
            } else {
                cmd.args(["nashconv", "--game", &game, "--policy", &policy]);
            }
            // A flipped byte of the manifest either breaks its JSON (named) or changes a
            // recorded sum (the file it names no longer matches "the manifest").
            let needle = if name == "manifest.json" {
                "manifest"
            } else {
                name
            };
            refused(
                &mut cmd,
                &[needle],
                &format!("{} {}", src.display(), rel.display()),
            );
            std::fs::write(&path, good).unwrap();
            cases += 1;
        }
        run_ok(eval().args(["manifest", dir.to_str().unwrap()]));
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!("{cases} corrupted model files refused");
    assert!(cases >= 20, "{cases}");
}

#[test]
fn a_damaged_run_directory_is_refused_by_name_and_left_byte_identical() {
    let dir = tmp("hostile", "small-run");
    let d = dir.display().to_string();
    run_ok(train().args([
        "--config",
        "quickstart.toml",
        "--set",
        "armac.epochs=4",
        "--set",
        "armac.episodes_per_epoch=64",
        "--set",
        "armac.learning_steps_per_epoch=3",
        "--set",
        "checkpoint.every_epochs=2",
        "--out",
        &d,
        "--quiet",
    ]));
    let generation = std::fs::canonicalize(dir.join("checkpoint")).unwrap();
    let manifest = common::json(&generation.join("manifest.json"));
    let mut files: Vec<PathBuf> = manifest["files"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| generation.join(k))
        .collect();
    files.extend(
        manifest["shared"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| dir.join(k)),
    );
    assert!(files.len() >= 6, "{files:?}");
    for path in &files {
        let good = flip(path);
        let name = path.file_name().unwrap().to_str().unwrap();
        let before = snapshot(&dir);
        let case = format!("resume with {} damaged", path.display());
        refused(
            train().args(["--resume", &d, "--set", "armac.epochs=6", "--quiet"]),
            &[name],
            &case,
        );
        assert_eq!(snapshot(&dir), before, "{case}: the directory changed");
        refused(
            eval().args(["nashconv", "--game", "kuhn_poker", "--policy", &d]),
            &[name],
            &format!("nashconv with {} damaged", path.display()),
        );
        std::fs::write(path, good).unwrap();
    }
    // A locked directory: refused, unchanged.
    let before = snapshot(&dir);
    let fresh = tmp("hostile", "not-a-run");
    std::fs::create_dir_all(&fresh).unwrap();
    refused(
        train().args(["--resume", fresh.to_str().unwrap()]),
        &["not a run directory"],
        "resume of a plain directory",
    );
    assert_eq!(snapshot(&fresh).unwrap().len(), 0);
    // An existing run is not overwritten without --overwrite.
    refused(
        train().args(["--config", "quickstart.toml", "--out", &d, "--quiet"]),
        &[&d],
        "a new run into an existing one",
    );
    assert_eq!(snapshot(&dir), before);
    // A dangling pointer: the resume takes the newest complete generation and says so.
    let pointer = dir.join("checkpoint");
    std::fs::remove_file(&pointer).unwrap();
    std::os::unix::fs::symlink("checkpoints/gen_00000099", &pointer).unwrap();
    let out = run_ok(train().args(["--resume", &d, "--set", "armac.epochs=6", "--quiet"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gen") && err.contains("gone"), "{err}");
    assert_eq!(common::json(&dir.join("checkpoint/state.json"))["epoch"], 6);
    println!("{} damaged run files refused", files.len());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fresh);
}

/// A finished run whose `summary.json` no longer matches its sum: `--resume` does not take it
/// as finished (it warns, naming the file, and resumes from the checkpoint, which writes the
/// summary again), so a damaged summary can never stand in for a finished run.
#[test]
fn a_damaged_summary_of_a_finished_run_is_named_and_not_taken_as_finished() {
    let dir = tmp("hostile", "finished-run");
    let d = dir.display().to_string();
    let args = ["--set", "solver.iterations=30", "--quiet"];
    run_ok(
        train()
            .args(["--config", "kuhn_cfr.toml", "--out", &d])
            .args(args),
    );
    let path = dir.join("summary.json");
    let good = std::fs::read(&path).unwrap();
    for (case, bad) in [
        ("one byte flipped", {
            flip(&path);
            std::fs::read(&path).unwrap()
        }),
        ("truncated", good[..good.len() / 2].to_vec()),
    ] {
        std::fs::write(&path, &bad).unwrap();
        let out = run_ok(train().args(["--resume", &d]).args(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines()
                .any(|l| l.starts_with("warning") && l.contains(&*path.to_string_lossy())),
            "{case}: the warning should name {}:\n{err}",
            path.display()
        );
        assert!(!err.contains("already finished"), "{case}:\n{err}");
        assert!(!err.contains("panicked"), "{case}:\n{err}");
        assert_eq!(common::json(&path)["iterations"], 30, "{case}");
        // The summary written again verifies: the next resume has nothing to do.
        let again = run_ok(train().args(["--resume", &d]));
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(err.contains("already finished"), "{case}:\n{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A damaged `manifest.json` of a model of every kind (ARMAC small game, ARMAC Hold'em,
/// Student of Games) is named as the model's manifest by every command that reads the model,
/// and the model is left as it was.
#[test]
fn a_corrupt_model_manifest_is_named_for_every_model_kind() {
    #[rustfmt::skip]
    let damages: [(&str, &[u8], &str); 5] = [
        ("truncated", b"{\"kind\": ", "corrupt model manifest"),
        ("empty", b"", "corrupt model manifest"),
        ("not text", b"\xff\xfe\x00garbage", "corrupt model manifest"),
        ("another kind", b"{\"kind\": \"other\", \"format\": 1, \"files\": {}}", "kind `other`"),
        ("a generation's", b"{\"format\": 1, \"step\": 3, \"files\": {}, \"shared\": {}}", "a run's checkpoint generation"),
    ];
    let mut cases = 0;
    for model in ["leduc_armac", "hunl_fcpa_armac", "hunl_fcpa_sog"] {
        let dir = tmp("hostile", &format!("manifest-{model}"));
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("models")
                .join(model),
            &dir,
        );
        let d = dir.display().to_string();
        let sog = format!("sog:{d}");
        let out = dir.with_extension("out");
        let o = out.display().to_string();
        #[rustfmt::skip]
        let commands: Vec<Vec<&str>> = match model {
            "leduc_armac" => vec![
                vec!["nashconv", "--game", "leduc_poker", "--policy", &d],
                vec!["export-model", "--checkpoint", &d, "--out", &o],
                vec!["export-onnx", "--policy", &d, "--out", &o],
                vec!["manifest", &d],
            ],
            "hunl_fcpa_armac" => vec![
                vec!["match", "--a", &d, "--b", "uniform", "--hands", "2"],
                vec!["lbr", "--policy", &d, "--variant", "fc", "--hands", "4"],
            ],
            _ => vec![
                vec!["match", "--a", &sog, "--b", "uniform", "--hands", "2"],
                vec!["export-model", "--checkpoint", &d, "--out", &o],
            ],
        };
        for (damage, bytes, reason) in damages {
            std::fs::write(dir.join("manifest.json"), bytes).unwrap();
            let before = snapshot(&dir);
            for args in &commands {
                let case = format!("{model}, {damage} manifest: {}", args[0]);
                refused(eval().args(args), &["manifest.json", reason], &case);
                assert_eq!(snapshot(&dir), before, "{case}: the model changed");
                assert!(!out.exists(), "{case}: wrote {o}");
                cases += 1;
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!("{cases} damaged manifests named");
}

/// A tabular solver run given where a network or search policy is expected is recognised as
/// one, and the message names its policy file (what to use instead); that file works.
#[test]
fn a_tabular_run_given_as_a_network_names_its_policy_file() {
    let dir = tmp("hostile", "tabular-run");
    let d = dir.display().to_string();
    run_ok(train().args(["--config", "kuhn_cfr.toml", "--out", &d, "--quiet"]));
    let policy = dir.join("policy.json").display().to_string();
    let out = dir.with_extension("out").display().to_string();
    let checkpoint = format!("{d}/checkpoint");
    #[rustfmt::skip]
    let cases: Vec<Vec<&str>> = vec![
        vec!["lbr", "--policy", &d, "--variant", "fc", "--hands", "4"],
        vec!["scorecard", "--policy", &d, "--hands", "4"],
        vec!["export-policy", "--checkpoint", &d, "--out", &out],
        vec!["export-policy", "--checkpoint", &checkpoint, "--out", &out],
        vec!["export-model", "--checkpoint", &d, "--out", &out],
        vec!["nashconv", "--game", "kuhn_poker", "--policy", &d],
        vec!["match", "--game", "kuhn_poker", "--a", &d, "--b", "uniform"],
    ];
    let before = snapshot(&dir);
    for args in &cases {
        let case = format!("a tabular run to {}", args[0]);
        refused(
            eval().args(args),
            &["is a tabular solver run", &policy],
            &case,
        );
        assert!(!Path::new(&out).exists(), "{case}: wrote {out}");
    }
    assert_eq!(snapshot(&dir), before, "a refused command changed the run");
    run_ok(eval().args(["nashconv", "--game", "kuhn_poker", "--policy", &policy]));
    // Moved after it finished, the run names where it is now when resumed.
    let moved = dir.with_extension("moved");
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(&dir, &moved).unwrap();
    let o = run_ok(train().arg("--resume").arg(&moved));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("outputs in {}\n", moved.display())),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&moved);
}

/// A policy file with an information state the game does not have is refused, naming it.
#[test]
fn a_policy_file_with_an_unknown_information_state_is_refused_by_name() {
    let files = tmp("hostile", "unknown-state");
    let d = files.join("run").display().to_string();
    run_ok(train().args(["--config", "kuhn_cfr.toml", "--out", &d, "--quiet"]));
    let mut policy = common::json(&files.join("run/policy.json"));
    policy["policy"]["9zz"] = serde_json::json!([[0, 0.5], [1, 0.5]]);
    let path = write(&files, "extra.json", policy.to_string().as_bytes());
    #[rustfmt::skip]
    let cases: Vec<Vec<&str>> = vec![
        vec!["nashconv", "--game", "kuhn_poker", "--policy", &path],
        vec!["match", "--game", "kuhn_poker", "--a", &path, "--b", "uniform"],
    ];
    for args in &cases {
        let case = format!("unknown state: {}", args[0]);
        refused(
            eval().args(args),
            &["\"9zz\"", "not one of kuhn_poker"],
            &case,
        );
    }
    let _ = std::fs::remove_dir_all(&files);
}
