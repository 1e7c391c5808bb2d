//! Hostile input, table-driven over every binary: bad TOML, keys, values, game strings,
//! policies, models, run directories and flags. Each case must exit non-zero with a first line
//! `error: ...` that names the culprit, print no panic or backtrace, and leave the run
//! directory absent (new runs) or byte-identical (existing ones). Damaged files of models and
//! runs are in `tests/hostile_files.rs`, `--overwrite` in `tests/hostile_overwrite.rs`, reads
//! of special and oversized files in `tests/hostile_reads.rs`.

mod common;
#[path = "common/hostile.rs"]
mod damage;

use common::{eval, tmp, train};
use damage::{available_gib, refused, snapshot, write};
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
    // hidden = 20,000 with 4 layers is under the fixed cap (6 GB of encoder weights) but its
    // 10.4 G parameters need about 390 GiB to train: refused where less is available (every
    // machine this suite runs on).
    let mut cases = cases;
    if available_gib() < 380.0 {
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
