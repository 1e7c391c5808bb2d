//! A stop (a time limit or SIGTERM) is honoured within about a second even inside a long ARMAC
//! epoch, Student of Games round or solver iteration: the unit is abandoned, nothing of it is
//! checkpointed, the final message names the step the run resumes from, and the directory
//! resumes. Ctrl-C ends a long LBR run, match or scorecard, also during the first build of
//! the hand tables. (That a resumed lock-step run equals an uninterrupted one is in
//! `tests/determinism.rs`.)

mod common;

use common::{run_ok, train};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Leduc ARMAC with epochs far longer than any test waits (100000 learning steps each), into
/// `out`, with `extra` arguments.
fn long_epochs(out: &Path, extra: &[&str]) -> Command {
    let mut cmd = train();
    cmd.args(["--config", "leduc_armac.toml", "--out"])
        .arg(out)
        .args(["--set", "armac.learning_steps_per_epoch=100000"])
        .args(extra);
    cmd
}

/// The epoch of the committed checkpoint of run `dir`.
fn committed_epoch(dir: &Path) -> u64 {
    common::json(&dir.join("checkpoint/state.json"))["epoch"]
        .as_u64()
        .unwrap()
}

/// Runs `long` (a run of long `unit`s, epochs or rounds, into `dir`, with extra arguments) with
/// `flags` and a time limit of 3 s, which falls inside its first unit: the run ends within 8 s
/// (the budget, the grace of half a second, and the start and end of the process), continues
/// from unit 0, whose state was committed before the first unit and nothing of that unit was,
/// and its summary says 0 iterations, stopped early. The directory resumes (and stops again at
/// its own limit of 1 s) from unit 0. Returns the first run's stderr.
fn time_limit_inside_the_first(
    unit: &str,
    dir: &Path,
    flags: &[&str],
    long: impl Fn(&Path, &[&str]) -> Command,
) -> String {
    let t = Instant::now();
    let mut args = flags.to_vec();
    args.extend(["--max-seconds", "3"]);
    let out = run_ok(&mut long(dir, &args));
    let took = t.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let resumes_at = format!("continue from {unit} 0 with");
    assert!(err.contains(&resumes_at), "{err}");
    assert_eq!(committed_step(dir), 0);
    let summary = common::json(&dir.join("summary.json"));
    assert_eq!(summary["iterations"], 0, "{summary}");
    assert_eq!(summary["stopped_early"], true, "{summary}");
    let t = Instant::now();
    let resumed = run_ok(
        train()
            .arg("--resume")
            .arg(dir)
            .args(flags)
            .args(["--max-seconds", "1"]),
    );
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    let resumed_err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed_err.contains(&resumes_at), "{resumed_err}");
    err
}

#[test]
fn a_time_limit_inside_a_long_epoch_stops_within_a_second_and_the_run_resumes() {
    let dir = common::tmp("stop", "time-limit");
    time_limit_inside_the_first("epoch", &dir, &["--quiet"], long_epochs);
    assert_eq!(committed_epoch(&dir), 0);
    let st = common::json(&dir.join("checkpoint/state.json"));
    assert_eq!(st["learning_steps"], 0, "{st}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_inside_a_long_epoch_stops_the_run_within_a_second() {
    let dir = common::tmp("stop", "sigterm");
    // The commit of θ^0 comes before the first epoch; the epoch is well under way soon after.
    let (code, err, took) =
        terminate_when_committed(long_epochs(&dir, &["--max-seconds", "120"]), &dir);
    assert_eq!(code, Some(143), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?} after SIGTERM");
    assert!(err.contains("stopped inside epoch 1"), "{err}");
    assert!(err.contains("continue from epoch 0 with"), "{err}");
    assert_eq!(committed_epoch(&dir), 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// Student of Games on Kuhn poker with rounds far longer than any test waits (a million
/// learner steps each; memory stays that of the small config), into `out`.
fn long_rounds(out: &Path, extra: &[&str]) -> Command {
    let mut cmd = train();
    cmd.args(["--config", "kuhn_sog.toml", "--out"])
        .arg(out)
        .args(["--set", "sog.selfplay.steps_per_round=1000000"])
        .args(["--set", "eval.every=1000"])
        .args(extra);
    cmd
}

/// External-sampling MCCFR on Liar's Dice with seven-sided dice (1.6 million histories), with
/// iterations of 262144 walks per player (the most a config allows) on one thread, several
/// seconds of CPU per iteration, into `out`.
fn long_iterations(out: &Path, extra: &[&str]) -> Command {
    let mut cmd = train();
    cmd.args(["--config", "leduc_es_mccfr.toml", "--out"])
        .arg(out)
        .args(["--set", "game=\"liars_dice(dice_sides=7)\""])
        .args(["--set", "solver.threads=1", "--set", "solver.walks=262144"])
        .args([
            "--set",
            "solver.iterations=1000",
            "--set",
            "eval.every=1000",
        ])
        .args(extra);
    cmd
}

/// The step of the committed checkpoint of run `dir` (its manifest's).
fn committed_step(dir: &Path) -> u64 {
    common::json(&dir.join("checkpoint/manifest.json"))["step"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_time_limit_inside_a_long_sog_round_stops_within_a_second_and_the_run_resumes() {
    let dir = common::tmp("stop", "sog-time-limit");
    let err = time_limit_inside_the_first("round", &dir, &[], long_rounds);
    assert!(err.contains("stopped inside round 1"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_inside_a_long_sog_round_stops_the_run_within_a_second() {
    let dir = common::tmp("stop", "sog-sigterm");
    let (code, err, took) = terminate_when_committed(long_rounds(&dir, &[]), &dir);
    assert_eq!(code, Some(143), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?} after SIGTERM");
    assert!(err.contains("stopped inside round 1"), "{err}");
    assert!(err.contains("continue from round 0 with"), "{err}");
    assert_eq!(committed_step(&dir), 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// A time limit inside a long solver iteration abandons it: the limit of half a second and
/// its grace of another half (`STOP_GRACE` in `src/run/mod.rs`) both fall inside the first
/// iteration, which takes 2 to 3 s on the loaded 2-core VM (a machine would have to run it
/// twice as fast for the grace to outlast it). The abandoned walks end within 64 walks
/// and their updates are dropped unapplied.
#[test]
fn a_stop_inside_a_long_solver_iteration_is_honoured_within_a_second() {
    let dir = common::tmp("stop", "solver-time-limit");
    let t = Instant::now();
    let out = run_ok(&mut long_iterations(&dir, &["--max-seconds", "0.5"]));
    // The whole run: the tree's compile (1.6 million histories), the stop and the commit of
    // iteration 0 (none was committed yet), each a few seconds on a loaded machine.
    let took = t.elapsed();
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stopped inside iteration 1"), "{err}");
    assert!(err.contains("continue from iteration 0 with"), "{err}");
    let summary = common::json(&dir.join("summary.json"));
    assert_eq!(summary["iterations"], 0, "{summary}");
    assert_eq!(summary["stopped_early"], true, "{summary}");
    assert_eq!(committed_step(&dir), 0);
    // The directory resumes from that checkpoint.
    let resumed = run_ok(
        train()
            .arg("--resume")
            .arg(&dir)
            .args(["--max-seconds", "1"]),
    );
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(err.contains("continue from iteration"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
    // SIGTERM right after a checkpoint's commit (which may still be under way, so the stop
    // can fall between iterations; the time limit above checks a stop inside one): exit 143
    // within a second or so.
    let dir = common::tmp("stop", "solver-sigterm");
    let (code, err, took) = terminate_when_committed(long_iterations(&dir, &[]), &dir);
    assert_eq!(code, Some(143), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?} after SIGTERM");
    assert!(err.contains("continue from iteration"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A stop among short iterations (full-width CFR+ on Leduc, milliseconds each) lets the
/// iteration under way finish: the run keeps every iteration done, although none was
/// checkpointed before the stop (the first checkpoint comes after 5 seconds).
#[test]
fn a_stop_among_short_iterations_keeps_them() {
    let dir = common::tmp("stop", "short-iterations");
    let out = run_ok(
        train()
            .args(["--config", "leduc_cfr_plus.toml", "--out"])
            .arg(&dir)
            .args(["--set", "solver.iterations=100000000"])
            .args(["--set", "eval.every=100000000", "--max-seconds", "1"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("stopped inside"), "{err}");
    let summary = common::json(&dir.join("summary.json"));
    let done = summary["iterations"].as_u64().unwrap();
    assert!(done > 0 && summary["stopped_early"] == true, "{summary}");
    assert_eq!(committed_step(&dir), done);
    assert!(dir.join("policy.json").is_file());
    std::fs::remove_dir_all(&dir).ok();
}

/// Starts `cmd` with its output captured, waits for `ready` to return, sends `signal` (`-TERM`,
/// `-INT`) and returns the process's exit code, stdout, stderr and how long it took to end
/// after the signal.
fn signal_when(
    mut cmd: Command,
    signal: &str,
    ready: impl FnOnce(),
) -> (Option<i32>, String, String, Duration) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ready();
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        signalled.elapsed(),
    )
}

/// Starts `cmd` (a run into `dir`), waits for its first committed checkpoint and half a second
/// more, sends SIGTERM, and returns its exit code, stderr and how long it took to end after
/// the signal.
fn terminate_when_committed(cmd: Command, dir: &Path) -> (Option<i32>, String, Duration) {
    let (code, _, err, took) = signal_when(cmd, "-TERM", || {
        let t = Instant::now();
        while !dir.join("checkpoint/manifest.json").exists() {
            assert!(t.elapsed() < Duration::from_secs(60), "no checkpoint");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
    });
    (code, err, took)
}

/// Starts `armac-eval args`, sends SIGINT once `wait` has passed, and returns its status, its
/// output and how long it took to end after the signal.
fn interrupt_eval(args: &[&str], wait: Duration) -> (Option<i32>, String, String, Duration) {
    let mut cmd = common::eval();
    cmd.args(args);
    signal_when(cmd, "-INT", || std::thread::sleep(wait))
}

#[test]
fn ctrl_c_ends_a_long_match_with_the_partial_result() {
    let (code, out, err, took) = interrupt_eval(
        &[
            "match",
            "--game",
            "leduc_poker",
            "--a",
            "uniform",
            "--b",
            "uniform",
            "--sampled",
            "--hands",
            "1000000000",
            "--json",
        ],
        Duration::from_millis(1500),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?} after SIGINT");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["partial"], true, "{v}");
    let hands = v["hands"].as_u64().unwrap();
    assert!(hands > 0 && hands < 1_000_000_000, "{v}");
    assert!(err.contains("partial"), "{err}");
}

/// [`interrupt_eval`] of a billion hands of LBR-FC against uniform play, with `extra`
/// arguments.
fn interrupt_lbr(extra: &[&str], wait: Duration) -> (Option<i32>, String, String, Duration) {
    let mut args = vec!["lbr", "--policy", "uniform", "--variant", "fc"];
    args.extend(["--hands", "1000000000"]);
    args.extend_from_slice(extra);
    interrupt_eval(&args, wait)
}

#[test]
fn ctrl_c_during_the_hand_table_build_ends_lbr_within_a_second() {
    let (code, out, err, took) = interrupt_lbr(&[], Duration::from_millis(300));
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?} after SIGINT");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("stopped before any hand was played"), "{err}");
}

#[test]
fn ctrl_c_ends_a_long_lbr_run_with_the_partial_result() {
    let (code, out, err, took) = interrupt_lbr(
        &["--threads", "1"],
        // Past the one-time build of the hand-evaluation tables (about a second alone, several
        // on a loaded machine), which no signal interrupts.
        Duration::from_millis(6000),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?} after SIGINT");
    // On a loaded machine the signal may still come before the first deal ends: then there
    // is no figure, and the message says so.
    if out.is_empty() {
        assert!(err.contains("stopped before any hand was played"), "{err}");
    } else {
        assert!(out.contains("PARTIAL: stopped after"), "{out}");
        assert!(err.contains("partial"), "{err}");
    }
}

/// Ctrl-C ends a long scorecard within a second with no result and nothing written (a
/// scorecard is whole or nothing).
#[test]
fn ctrl_c_ends_a_long_scorecard_with_nothing_written() {
    let out = common::tmp("stop", "scorecard.json");
    let o = out.display().to_string();
    #[rustfmt::skip]
    let (code, stdout, err, took) = interrupt_eval(
        &["scorecard", "--policy", "uniform", "--hands", "1000000000", "--match-hands", "1000000000", "--out", &o],
        Duration::from_millis(1500),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?} after SIGINT");
    assert!(stdout.is_empty(), "{stdout}");
    // Stopped in its first evaluation (LBR, building the hand tables or playing): no figure.
    assert!(
        err.trim_end()
            .ends_with("interrupted by signal 2: no result"),
        "{err}"
    );
    assert!(!out.exists(), "wrote {o}");
}
