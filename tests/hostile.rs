//! Hostile input, table-driven over every binary: bad TOML, keys, values, game strings,
//! policies, models, run directories and flags. Each case must exit non-zero with a first line
//! `error: ...` that names the culprit, print no panic or backtrace, and leave the run
//! directory absent (new runs) or byte-identical (existing ones). Then one-byte corruption of
//! every file of every shipped model and of every checkpoint file of a small run, each refused
//! by name.

mod common;
#[path = "common/hostile.rs"]
mod damage;

use common::{eval, run_ok, tmp, train};
use damage::{available_gib, copy_dir, flip, refused, snapshot, write};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn bad_configs_keys_values_and_flags_are_refused_before_anything_is_written() {
    let files = tmp("hostile", "configs");
    let bad_toml = write(&files, "bad.toml", b"game = \"kuhn_poker\"\n[armac\n");
    let not_utf8 = write(&files, "latin1.toml", b"game = \"kuhn_p\xf6ker\"\n");
    let no_game = write(
        &files,
        "nogame.toml",
        b"[solver]\nalgorithm = \"cfr\"\niterations = 2\n",
    );
    let big = write(
        &files,
        "big.toml",
        b"game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 99999999999999999999999\n",
    );
    let two = write(
        &files,
        "two.toml",
        b"game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 2\n[armac]\nepochs = 2\n",
    );
    let none = write(&files, "none.toml", b"game = \"kuhn_poker\"\n");
    let typo = write(
        &files,
        "typo.toml",
        b"game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niteratons = 2\n",
    );
    let q = "quickstart.toml";
    let cfr = "kuhn_cfr.toml";
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("unknown game", vec!["--config", q, "--set", "game=nosuch_game"], vec!["nosuch_game"]),
        ("bad game parameter", vec!["--config", q, "--set", "game=\"leduc_poker(num_ranks=0)\""], vec!["num_ranks"]),
        ("unknown game parameter", vec!["--config", cfr, "--set", "game=\"kuhn_poker(bogus=1)\""], vec!["bogus"]),
        ("device not compiled in", vec!["--config", q, "--set", "armac.device=\"cuda\""], vec!["armac.device", "cuda"]),
        ("unknown device", vec!["--config", q, "--set", "armac.device=\"tpu\""], vec!["armac.device"]),
        ("huge network", vec!["--config", q, "--set", "armac.hidden=100000000"], vec!["armac.hidden"]),
        ("too many layers", vec!["--config", q, "--set", "armac.layers=100000"], vec!["armac.layers"]),
        ("too many actors", vec!["--config", q, "--set", "armac.actors=100000"], vec!["armac.actors"]),
        ("device rows with mean targets", vec!["--config", q, "--set", "armac.device_memory=\"device\"", "--set", "armac.memory_targets=\"infoset_mean\""], vec!["armac.device_memory", "memory_targets"]),
        ("device rows with the replay memory", vec!["--config", q, "--set", "armac.device_memory=\"device\"", "--set", "armac.memory=\"replay\""], vec!["armac.device_memory", "reservoir"]),
        ("unknown device memory", vec!["--config", q, "--set", "armac.device_memory=\"gpu\""], vec!["armac.device_memory"]),
        ("zero actors", vec!["--config", q, "--set", "armac.actors=0"], vec!["armac.actors"]),
        ("too many learning steps", vec!["--config", q, "--set", "armac.learning_steps_per_epoch=100000000"], vec!["armac.learning_steps_per_epoch", "at most"]),
        ("huge batch", vec!["--config", q, "--set", "armac.batch_trajectories=1000000000"], vec!["armac.batch_trajectories"]),
        ("huge reservoir", vec!["--config", q, "--set", "armac.reservoir_capacity=100000000000"], vec!["armac.reservoir_capacity"]),
        ("unknown key", vec!["--config", q, "--set", "armac.nosuch=1"], vec!["nosuch"]),
        ("wrong type", vec!["--config", q, "--set", "armac.epochs=\"many\""], vec!["armac.epochs"]),
        ("negative count", vec!["--config", q, "--set", "armac.epochs=-3"], vec!["armac.epochs"]),
        ("integer out of range (override)", vec!["--config", q, "--set", "armac.epochs=99999999999999999999999"], vec!["out of range"]),
        ("integer out of range (file)", vec!["--config", &big], vec!["big.toml"]),
        ("NaN learning rate", vec!["--config", q, "--set", "armac.learning_rate=nan"], vec!["armac.learning_rate"]),
        ("override without =", vec!["--config", q, "--set", "armac.epochs"], vec!["armac.epochs"]),
        ("bad TOML", vec!["--config", &bad_toml], vec!["bad.toml"]),
        ("config not UTF-8", vec!["--config", &not_utf8], vec!["latin1.toml"]),
        ("missing game key", vec!["--config", &no_game], vec!["`game`"]),
        ("two algorithm sections", vec!["--config", &two], vec!["more than one"]),
        ("no algorithm section", vec!["--config", &none], vec!["no algorithm section"]),
        ("config not found", vec!["--config", "no_such_config"], vec!["no_such_config"]),
        ("unknown solver", vec!["--config", cfr, "--set", "solver.algorithm=\"nosuch\""], vec!["solver.algorithm"]),
        ("zero iterations", vec!["--config", cfr, "--set", "solver.iterations=0"], vec!["solver.iterations"]),
        ("misspelt required key (file)", vec!["--config", &typo], vec!["solver.iteratons", "unknown field `iteratons`", "did you mean `iterations`"]),
        ("misspelt key (override)", vec!["--config", cfr, "--set", "solver.iteratons=3"], vec!["solver.iteratons", "unknown field `iteratons`", "`iterations`, `updates`"]),
        ("misspelt key of a sampler", vec!["--config", "leduc_os_mccfr.toml", "--set", "solver.epsilonn=0.5"], vec!["solver.epsilonn", "unknown field `epsilonn`", "expected one of"]),
        ("a huge float is printed short", vec!["--config", cfr, "--set", "solver.algorithm=\"dcfr\"", "--set", "solver.gamma=-1e308"], vec!["solver.gamma", "-1e308 must be"]),
        ("too many walks", vec!["--config", "leduc_os_mccfr.toml", "--set", "solver.walks=100000000"], vec!["solver.walks", "262144"]),
        ("Hold'em under a tabular solver", vec!["--config", cfr, "--set", "game=\"hunl_fcpa\""], vec!["`game`", "numRanks=13", "more than 20000000 histories"]),
        ("Liar's Dice with 3 dice under a tabular solver", vec!["--config", cfr, "--set", "game=\"liars_dice(numdice=3)\""], vec!["`game`", "liars_dice(numdice=3)", "more than 20000000 histories"]),
        ("checkpoint every 0 epochs (solver)", vec!["--config", cfr, "--set", "checkpoint.every_epochs=0"], vec!["checkpoint.every_epochs"]),
        ("checkpoint every 0 epochs (ARMAC)", vec!["--config", q, "--set", "checkpoint.every_epochs=0"], vec!["checkpoint.every_epochs"]),
        ("eval every 0", vec!["--config", cfr, "--set", "eval.every=0"], vec!["eval.every"]),
        ("broker on a solver run", vec!["--config", cfr, "--broker", "redis://127.0.0.1:1/"], vec!["cluster"]),
        ("role on a solver run", vec!["--config", cfr, "--role", "learner"], vec!["cluster"]),
        ("SoG on an unsupported game", vec!["--config", "kuhn_sog.toml", "--set", "game=goofspiel5"], vec!["goofspiel"]),
    ];
    // hidden = 20,000 with 4 layers is under the fixed cap (6 GB of weights) but needs about
    // 51 GB to train: refused where less is available (every machine this suite runs on).
    let mut cases = cases;
    if available_gib() < 48.0 {
        cases.push((
            "network over the machine's memory",
            vec![
                "--config",
                q,
                "--set",
                "armac.hidden=20000",
                "--set",
                "armac.layers=4",
            ],
            vec!["armac.hidden", "available"],
        ));
    }
    // A batched solver's instances under the cap of `batch` (2^20) that the machine cannot
    // hold: about 740 GiB of tensors on Leduc.
    if available_gib() < 700.0 {
        cases.push((
            "batched instances over the machine's memory",
            vec![
                "--config",
                "leduc_cfr_batched.toml",
                "--set",
                "solver.batch=1048576",
            ],
            vec!["solver.batch", "1048576 solver instances", "available"],
        ));
    }
    // Memories under their fixed caps that the machine cannot hold: 2^26 reservoir rows of
    // the Hold'em tensor (about 115 GiB), 2^24 replay trajectories (about 570 GiB).
    if available_gib() < 100.0 {
        let h = "nlhe_fcpa.toml";
        cases.push((
            "reservoirs over the machine's memory",
            vec!["--config", h, "--set", "armac.memory_capacity=67108864"],
            vec!["armac.memory_capacity", "available"],
        ));
        cases.push((
            "replay over the machine's memory",
            vec!["--config", h, "--set", "armac.replay_capacity=16777216"],
            vec!["armac.replay_capacity", "available"],
        ));
    }
    for (case, args, needles) in &cases {
        let out = tmp("hostile", "run");
        let mut cmd = train();
        cmd.args(args).arg("--out").arg(&out).arg("--quiet");
        refused(&mut cmd, needles, case);
        assert!(
            snapshot(&out).is_none(),
            "{case}: left {} behind: {:?}",
            out.display(),
            snapshot(&out).map(|s| s.into_keys().collect::<Vec<_>>())
        );
    }
    // Flags clap refuses (status 2), naming the flag.
    #[rustfmt::skip]
    let flags: Vec<(&str, Vec<&str>, &str)> = vec![
        ("negative seconds", vec!["--config", q, "--max-seconds", "-1"], "--max-seconds"),
        ("seconds beyond a Duration", vec!["--config", q, "--max-seconds", "1e20"], "up to 1e9"),
        ("CPU seconds beyond a Duration", vec!["--config", q, "--max-cpu-seconds", "1e300"], "up to 1e9"),
        ("seconds not a number", vec!["--config", q, "--max-cpu-seconds", "soon"], "--max-cpu-seconds"),
        ("resume with overwrite", vec!["--resume", "x", "--overwrite"], "--overwrite"),
        ("unknown role", vec!["--config", q, "--role", "boss"], "--role"),
        ("unknown flag", vec!["--config", q, "--fast"], "--fast"),
    ];
    for (case, args, needle) in &flags {
        let out = train().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{case}: {err}");
        assert!(
            err.contains(needle) && !err.contains("panicked"),
            "{case}: {err}"
        );
    }
    println!(
        "{} config cases and {} flag cases refused",
        cases.len(),
        flags.len()
    );
    let _ = std::fs::remove_dir_all(&files);
}

#[test]
fn bad_policies_games_and_arguments_of_armac_eval_are_refused_by_name() {
    let files = tmp("hostile", "eval");
    let garbage = write(&files, "garbage.json", b"{\"game\": ");
    let wrong_game = write(
        &files,
        "leduc_policy.json",
        b"{\"game\": \"leduc_poker()\", \"policy\": {}}",
    );
    let not_model = files.join("plain_dir");
    std::fs::create_dir_all(&not_model).unwrap();
    let not_model = not_model.display().to_string();
    let out_file = files.join("out.json");
    let out_path = out_file.display().to_string();
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("nashconv: unknown game", vec!["nashconv", "--game", "nosuch", "--policy", "uniform"], vec!["nosuch"]),
        ("nashconv: missing policy file", vec!["nashconv", "--game", "kuhn_poker", "--policy", "/no/such.json"], vec!["/no/such.json"]),
        ("nashconv: garbage policy file", vec!["nashconv", "--game", "kuhn_poker", "--policy", &garbage], vec!["garbage.json"]),
        ("nashconv: policy of another game", vec!["nashconv", "--game", "kuhn_poker", "--policy", &wrong_game], vec!["leduc"]),
        ("nashconv: model of another game", vec!["nashconv", "--game", "kuhn_poker", "--policy", "models/leduc_armac"], vec!["leduc"]),
        ("nashconv: directory that is no model", vec!["nashconv", "--game", "kuhn_poker", "--policy", &not_model], vec!["plain_dir"]),
        ("lbr: not Hold'em", vec!["lbr", "--game", "leduc_poker", "--policy", "uniform", "--variant", "fc", "--hands", "4"], vec!["leduc_poker"]),
        ("lbr: unknown variant", vec!["lbr", "--policy", "uniform", "--variant", "fcx", "--hands", "4"], vec!["--variant"]),
        ("lbr: zero hands", vec!["lbr", "--policy", "uniform", "--variant", "fc", "--hands", "0"], vec!["--hands"]),
        ("lbr: 10^12 hands", vec!["lbr", "--policy", "uniform", "--variant", "fc", "--hands", "1000000000000"], vec!["--hands", "1000000000"]),
        ("lbr --watch: poll seconds beyond a Duration", vec!["lbr", "--watch", &not_model, "--variant", "fc", "--hands", "4", "--poll-seconds", "1e20"], vec!["--poll-seconds", "1e20"]),
        ("match: 10^12 hands", vec!["match", "--a", "uniform", "--b", "uniform", "--hands", "1000000000000"], vec!["--hands", "1000000000"]),
        ("scorecard: 10^12 hands", vec!["scorecard", "--policy", "uniform", "--hands", "1000000000000"], vec!["--hands"]),
        ("scorecard: 10^12 match hands", vec!["scorecard", "--policy", "uniform", "--match-hands", "1000000000000"], vec!["--match-hands"]),
        ("lbr: small-game model", vec!["lbr", "--policy", "models/leduc_armac", "--variant", "fc", "--hands", "4"], vec!["leduc"]),
        ("match: unknown policy", vec!["match", "--a", "nosuch", "--b", "uniform", "--hands", "2"], vec!["nosuch"]),
        ("match: model of another game", vec!["match", "--game", "kuhn_poker", "--a", "models/leduc_armac", "--b", "uniform"], vec!["leduc"]),
        ("replay: illegal action", vec!["replay", "--game", "kuhn_poker", "--actions", "0,1,7"], vec!["7"]),
        ("replay: not a number", vec!["replay", "--game", "kuhn_poker", "--actions", "0,x"], vec!["x"]),
        ("export-policy: missing checkpoint", vec!["export-policy", "--checkpoint", "/no/such/run", "--out", &out_path], vec!["/no/such/run"]),
        ("export-model: missing checkpoint", vec!["export-model", "--checkpoint", "/no/such/run", "--out", &out_path], vec!["/no/such/run"]),
        ("export-model: existing output", vec!["export-model", "--checkpoint", "models/leduc_armac", "--out", &not_model], vec!["plain_dir"]),
        ("export-model: threshold of 1", vec!["export-model", "--checkpoint", "models/leduc_armac", "--out", &out_path, "--play-threshold", "1"], vec!["--play-threshold"]),
        ("export-model: threshold of a search policy", vec!["export-model", "--checkpoint", "models/hunl_fcpa_sog", "--out", &out_path, "--play-threshold", "0.1"], vec!["--play-threshold", "Student of Games"]),
        ("nashconv: threshold above 1", vec!["nashconv", "--game", "leduc_poker", "--policy", "models/leduc_armac", "--play-threshold", "1.5"], vec!["--play-threshold"]),
        ("match: negative threshold", vec!["match", "--game", "leduc_poker", "--a", "models/leduc_armac", "--b", "uniform", "--play-threshold=-0.5"], vec!["--play-threshold"]),
        ("manifest: not a model", vec!["manifest", &not_model], vec!["manifest.json"]),
        ("search-nashconv: zero simulations", vec!["search-nashconv", "--game", "kuhn_poker", "--simulations", "0"], vec!["simulations"]),
    ];
    let before = snapshot(&files);
    for (case, args, needles) in &cases {
        refused(eval().args(args), needles, case);
        assert!(!out_file.exists(), "{case}: wrote {out_path}");
    }
    assert_eq!(snapshot(&files), before, "armac-eval changed its inputs");
    println!("{} armac-eval cases refused", cases.len());
    let _ = std::fs::remove_dir_all(&files);
}

#[test]
fn bad_arguments_of_armac_actor_and_armac_bench_are_refused_by_name() {
    let actor = || Command::new(env!("CARGO_BIN_EXE_armac-actor"));
    let nowhere = "redis://127.0.0.1:1/0";
    #[rustfmt::skip]
    let cases: Vec<(&str, Command, Vec<&str>)> = vec![
        ("actor: too many threads", { let mut c = actor(); c.args(["--run", "r", "--broker", nowhere, "--threads", "100000"]); c }, vec!["--threads", "100000"]),
        ("actor: zero threads", { let mut c = actor(); c.args(["--run", "r", "--broker", nowhere, "--threads", "0"]); c }, vec!["--threads"]),
        ("actor: not a redis URL", { let mut c = actor(); c.args(["--run", "r", "--broker", "http://example"]); c }, vec!["http://example"]),
        ("actor: no broker there", { let mut c = actor(); c.args(["--run", "r", "--broker", nowhere]); c }, vec!["127.0.0.1:1"]),
        ("bench: unknown game", { let mut c = common::bench(); c.args(["cfr", "--game", "nosuch", "--iterations", "1", "--repeats", "1"]); c }, vec!["nosuch"]),
        ("bench: unknown solver key", { let mut c = common::bench(); c.args(["solver", "--game", "kuhn_poker", "--algorithm", "cfr", "--set", "nosuch=1"]); c }, vec!["nosuch"]),
    ];
    let n = cases.len();
    for (case, mut cmd, needles) in cases {
        refused(&mut cmd, &needles, case);
    }
    println!("{n} armac-actor / armac-bench cases refused");
}

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

/// The hidden siblings a replacement builds in (`.<name>.armac-...`) under `parent`.
fn staging_left(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains(".armac-"))
        .collect()
}

/// `--overwrite` replaces only a run of armac-train: a folder of notes, a `.ssh`-like folder,
/// a git checkout, a file and a symbolic link (to a folder, or to a run) are refused naming
/// why, and nothing changes; without `--overwrite` the refusal of such a folder does not
/// suggest it.
#[test]
fn overwrite_replaces_only_a_run_and_never_follows_a_link() {
    let root = tmp("hostile", "overwrite");
    let notes = root.join("notes");
    write(&notes, "precious.txt", b"keep");
    let ssh = root.join("dotssh");
    write(&ssh, "id_ed25519", b"secret");
    write(&ssh, "config.toml", b"not a run config");
    let git = root.join("checkout");
    write(&git.join(".git"), "HEAD", b"ref: refs/heads/main\n");
    write(&git, "README.md", b"# project\n");
    let file = root.join("plain_file");
    std::fs::write(&file, b"a file").unwrap();
    let run = root.join("run");
    let r = run.display().to_string();
    run_ok(train().args([
        "--config",
        "kuhn_cfr.toml",
        "--set",
        "solver.iterations=20",
        "--out",
        &r,
        "--quiet",
    ]));
    assert!(run.join(".armac-run").is_file(), "a run carries its marker");
    let link = root.join("link");
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    let link_to_run = root.join("link_to_run");
    std::os::unix::fs::symlink(&run, &link_to_run).unwrap();
    let before = snapshot(&root);
    #[rustfmt::skip]
    let cases: Vec<(&str, &Path, &str)> = vec![
        ("a folder of notes", &notes, "not a run of armac-train"),
        ("a .ssh-like folder with a config.toml", &ssh, "not a run of armac-train"),
        ("a git checkout", &git, "not a run of armac-train"),
        ("a file", &file, "not a directory"),
        ("a link to a folder", &link, "symbolic link"),
        ("a link to a run", &link_to_run, "symbolic link"),
    ];
    for (case, out, why) in &cases {
        let o = out.display().to_string();
        let mut cmd = train();
        cmd.args([
            "--config",
            "kuhn_cfr.toml",
            "--out",
            &o,
            "--overwrite",
            "--quiet",
        ]);
        refused(&mut cmd, &["--overwrite refuses", &o, why], case);
        assert_eq!(snapshot(&root), before, "{case} (--overwrite): changed");
        let mut cmd = train();
        cmd.args(["--config", "kuhn_cfr.toml", "--out", &o, "--quiet"]);
        let err = refused(&mut cmd, &[&o, why], case);
        assert!(
            !err.contains("--overwrite"),
            "{case}: suggests --overwrite:\n{err}"
        );
        assert_eq!(snapshot(&root), before, "{case}: changed");
    }
    // A run is refused without --overwrite, which the message offers.
    refused(
        train().args(["--config", "kuhn_cfr.toml", "--out", &r, "--quiet"]),
        &["--resume", "--overwrite"],
        "a new run into a run",
    );
    assert_eq!(snapshot(&root), before);
    let _ = std::fs::remove_dir_all(&root);
}

/// `--overwrite` of a run builds the new run beside it: a replacement stopped at any file
/// operation of its first checkpoint (`ARMAC_CRASH_AT`, as a kill would) leaves the old run
/// byte-identical or, once that checkpoint is committed, the new run in its place; one that
/// finishes leaves only the new run (with its marker, its summary naming the directory) and
/// nothing beside it. A run made before the marker existed (config.toml and the checkpoint
/// pointer) is replaced too.
#[test]
fn overwrite_swaps_in_the_new_run_only_once_it_has_a_checkpoint() {
    let root = tmp("hostile", "replace");
    let run = root.join("run");
    let r = run.display().to_string();
    let new_run = |iterations: &str| {
        let mut c = train();
        c.args(["--config", "kuhn_cfr.toml", "--out", &r, "--quiet"])
            .args(["--set", &format!("solver.iterations={iterations}")]);
        c
    };
    run_ok(&mut new_run("20"));
    std::fs::write(run.join("stray.txt"), b"left by the old run").unwrap();
    let old = snapshot(&run);
    let (mut kept, mut swapped) = (0, 0);
    for at in 1..=60 {
        let out = new_run("30")
            .arg("--overwrite")
            .env("ARMAC_CRASH_AT", at.to_string())
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        assert_eq!(out.status.code(), Some(86), "crash at {at}");
        for name in staging_left(&root) {
            let _ = std::fs::remove_dir_all(root.join(&name));
            let _ = std::fs::remove_file(root.join(&name));
        }
        if snapshot(&run) == old {
            kept += 1;
        } else {
            // Swapped: the new run is complete where the old one was.
            assert!(!run.join("stray.txt").exists(), "crash at {at}: a mix");
            run_ok(train().args(["--resume", &r, "--quiet"]));
            std::fs::write(run.join("stray.txt"), b"x").unwrap();
            swapped += 1;
            break;
        }
    }
    assert!(kept >= 3, "{kept} crashes left the old run");
    println!("{kept} stopped replacements left the old run, {swapped} the new one");
    // A replacement that finishes.
    run_ok(new_run("30").arg("--overwrite"));
    assert!(!run.join("stray.txt").exists());
    assert!(run.join(".armac-run").is_file());
    let summary = common::json(&run.join("summary.json"));
    assert_eq!(summary["run_dir"], r.as_str());
    assert_eq!(summary["iterations"], 30);
    assert_eq!(staging_left(&root), Vec::<String>::new());
    // A run without the marker (made before it existed) is recognised by its layout.
    std::fs::remove_file(run.join(".armac-run")).unwrap();
    std::fs::write(run.join("stray.txt"), b"x").unwrap();
    run_ok(new_run("25").arg("--overwrite"));
    assert!(!run.join("stray.txt").exists());
    assert_eq!(common::json(&run.join("summary.json"))["iterations"], 25);
    let _ = std::fs::remove_dir_all(&root);
}

/// A `[solver]` run whose tree is under the history cap but over the memory the process may
/// take (here `RLIMIT_AS`, set by `ulimit -v` to 1.5 GB; the tiny Hold'em's history tree for
/// stochastic OMD is estimated at about 1.7 GB) is refused before the tree is built, naming
/// the game key and the estimate, instead of aborting when an allocation fails.
#[test]
fn a_solver_run_over_the_address_space_limit_is_refused_before_building() {
    let out = tmp("hostile", "rlimit");
    let o = out.display().to_string();
    let game = "game=\"universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,\
                raiseSize=4 7,firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,\
                numBoardCards=0 3,bettingAbstraction=fcpa)\"";
    let mut cmd = Command::new("sh");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-c", "ulimit -v 1500000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_armac-train"))
        .args(["--config", "leduc13_omd.toml", "--set", game, "--out", &o]);
    refused(
        &mut cmd,
        &["`game`", "5645621 histories", "RLIMIT_AS"],
        "tiny Hold'em OMD under a 1.5 GB address space",
    );
    assert!(snapshot(&out).is_none(), "left {o}");
}

/// Model verification reads no FIFO, device or link: a listed file of a model replaced by a
/// FIFO (which would block a reader forever), by a link to `/dev/zero` (endless) or by a
/// link to a good copy of itself, and a FIFO as the manifest, are each refused by name
/// within the time limit of `timeout`, and the model folder is left as it was.
#[test]
fn model_verification_reads_no_fifo_device_or_link() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/leduc_armac");
    let dir = tmp("hostile", "special-files");
    copy_dir(&src, &dir);
    let listed: Vec<String> = common::json(&dir.join("manifest.json"))["files"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let victim = listed.iter().find(|r| !r.contains('/')).unwrap().clone();
    let path = dir.join(&victim);
    let good = std::fs::read(&path).unwrap();
    let spare = tmp("hostile", "spare-copy");
    std::fs::write(&spare, &good).unwrap();
    let fifo = |p: &Path| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    let d = dir.display().to_string();
    type Make = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, PathBuf, Make, &str)> = vec![
        ("a FIFO", path.clone(), Box::new(fifo), "not a regular file"),
        (
            "a link to /dev/zero",
            path.clone(),
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
            "symbolic link",
        ),
        (
            "a link to a good copy",
            path.clone(),
            Box::new({
                let spare = spare.clone();
                move |p: &Path| std::os::unix::fs::symlink(&spare, p).unwrap()
            }),
            "symbolic link",
        ),
        (
            "a FIFO manifest",
            dir.join("manifest.json"),
            Box::new(fifo),
            "not a regular file",
        ),
    ];
    for (case, target, make, why) in &cases {
        let saved = std::fs::read(target).unwrap();
        std::fs::remove_file(target).unwrap();
        make(target);
        let before = snapshot(&dir);
        let mut cmd = Command::new("timeout");
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("60")
            .arg(env!("CARGO_BIN_EXE_armac-eval"))
            .args(["nashconv", "--game", "leduc_poker", "--policy", &d]);
        let name = target.file_name().unwrap().to_str().unwrap();
        let needles: Vec<&str> = [name, why].into_iter().filter(|n| !n.is_empty()).collect();
        refused(&mut cmd, &needles, case);
        assert_eq!(snapshot(&dir), before, "{case}: the model folder changed");
        std::fs::remove_file(target).unwrap();
        std::fs::write(target, saved).unwrap();
    }
    run_ok(eval().args(["nashconv", "--game", "leduc_poker", "--policy", &d]));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&spare);
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
