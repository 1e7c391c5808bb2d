//! Helpers shared by the integration tests: invoking the binaries, temporary directories,
//! JSON files, and the step-by-step comparison of a game state with an OpenSpiel golden record.
//!
//! Each test file uses a subset, so unused helpers are expected per file.
#![allow(dead_code)]

use armac::game::{Game, State};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `armac-train`, run from the crate root (so bare config names resolve).
pub fn train() -> Command {
    in_crate(Command::new(env!("CARGO_BIN_EXE_armac-train")))
}

/// `armac-eval`, run from the crate root.
pub fn eval() -> Command {
    in_crate(Command::new(env!("CARGO_BIN_EXE_armac-eval")))
}

/// `armac-bench`, run from the crate root.
pub fn bench() -> Command {
    in_crate(Command::new(env!("CARGO_BIN_EXE_armac-bench")))
}

fn in_crate(mut c: Command) -> Command {
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// `armac-train --config CONFIG --out DIR` with a network and epochs small enough for a test
/// run in seconds (add `armac.epochs` or a budget).
pub fn tiny_run(config: &str, dir: &Path) -> Command {
    let mut cmd = train();
    cmd.args(["--config", config, "--quiet"])
        .args(["--out", dir.to_str().unwrap()])
        .args(["--set", "armac.hidden=8"])
        .args(["--set", "armac.episodes_per_epoch=8"])
        .args(["--set", "armac.learning_steps_per_epoch=1"])
        .args(["--set", "armac.batch_trajectories=4"])
        .args(["--set", "armac.games_per_group=8"])
        .args(["--set", "armac.replay_capacity=64"]);
    cmd
}

/// A fresh (removed if present) path in the temporary directory, unique to this test process.
pub fn tmp(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("armac-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs a command that must succeed; the assertion message shows its output.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "command failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a command that must fail cleanly (exit 1 or 2, not a panic) with `needle` in stderr.
pub fn run_err(cmd: &mut Command, needle: &str) {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(
        code == Some(1) || code == Some(2),
        "expected a clean failure, got {code:?}: {err}"
    );
    assert!(
        !err.contains("panicked"),
        "panic instead of an error: {err}"
    );
    assert!(
        err.contains(needle),
        "error should mention {needle:?}: {err}"
    );
}

/// Parses a JSON file, naming it on failure.
pub fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The number `v[key]`, naming the key when it is missing.
pub fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing in {v}"))
}

/// A file of the crate's golden data (`tests/data/<name>`).
pub fn data_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A file of the project's shared OpenSpiel references: `../shared/reference/<name>` beside
/// the crate where that directory exists, else the crate's copy `tests/data/reference_<name>`
/// (so a fresh clone, e.g. in CI, checks the same data). Panics when neither exists.
pub fn shared_reference(name: &str) -> PathBuf {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference")
        .join(name);
    if shared.is_file() {
        return shared;
    }
    let copy = data_file(&format!("reference_{name}"));
    assert!(
        copy.is_file(),
        "neither {} nor {} exists",
        shared.display(),
        copy.display()
    );
    copy
}

/// A JSON array of non-negative integers.
pub fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

/// A JSON array of numbers as `f32` (a dense tensor).
pub fn floats(v: &Value, _len: usize) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// A dense tensor of length `len` from `[index, value]` pairs (a sparse record).
pub fn dense(v: &Value, len: usize) -> Vec<f32> {
    let mut out = vec![0.0; len];
    for pair in v.as_array().unwrap() {
        out[pair[0].as_u64().unwrap() as usize] = pair[1].as_f64().unwrap() as f32;
    }
    out
}

/// Checks what both players see in `state` against one golden step: current player, state
/// string, legal actions, and per player the information-state string, the observation
/// string (`observation_strings`: required, else checked where recorded) and both tensors
/// (decoded from the record by `tensor(value, length)`).
pub fn check_views(
    game: &dyn Game,
    state: &dyn State,
    step: &Value,
    ctx: &str,
    observation_strings: bool,
    tensor: fn(&Value, usize) -> Vec<f32>,
) {
    let cp = step["current_player"].as_i64().unwrap() as i32;
    assert_eq!(state.turn().openspiel_id(), cp, "{ctx}: current player");
    assert_eq!(
        state.to_string(),
        step["state_string"].as_str().unwrap(),
        "{ctx}: state string"
    );
    assert_eq!(
        state.legal_actions(),
        usizes(&step["legal_actions"]),
        "{ctx}: legal actions"
    );
    for p in 0..2 {
        assert_eq!(
            state.information_state_string(p),
            step["information_state_string"][p].as_str().unwrap(),
            "{ctx}: information state string of player {p}"
        );
        let recorded = step.get("observation_string");
        assert!(
            recorded.is_some() || !observation_strings,
            "{ctx}: the record has no observation strings"
        );
        if let Some(obs) = recorded {
            assert_eq!(
                state.observation_string(p),
                obs[p].as_str().unwrap(),
                "{ctx}: observation string of player {p}"
            );
        }
        let n = game.information_state_tensor_size();
        let mut buf = vec![f32::NAN; n];
        state.information_state_tensor(p, &mut buf);
        assert_eq!(
            buf,
            tensor(&step["information_state_tensor"][p], n),
            "{ctx}: infostate tensor p{p}"
        );
        let n = game.observation_tensor_size();
        let mut buf = vec![f32::NAN; n];
        state.observation_tensor(p, &mut buf);
        assert_eq!(
            buf,
            tensor(&step["observation_tensor"][p], n),
            "{ctx}: observation tensor p{p}"
        );
    }
}

/// Kuhn ARMAC settings of the CI-sized end-to-end tests (tests/armac.rs in-process,
/// tests/cluster.rs through a broker: the same quality bar for both), as `armac-train`
/// arguments before `--out`. Four epochs of replay for the critic (with the default 8192
/// trajectories the short run would still train on its first, near-uniform epochs at the
/// end); the mean-regret and average-policy heads learn from the reservoir memories.
/// 150 epochs: runs are not bit-reproducible (actor and learner threads race), and with 100
/// one CI run out of many reached best 0.154, over the 0.15 bar; five idle runs of 150 epochs
/// gave best 0.080-0.105 (ten of 100 epochs: 0.095-0.137).
#[allow(dead_code)]
pub const KUHN_ARMAC_CI: &[&str] = &[
    "--config",
    "kuhn_armac.toml",
    "--quiet",
    "--set",
    "armac.epochs=150",
    "--set",
    "eval.every=10",
    "--set",
    "armac.episodes_per_epoch=512",
    "--set",
    "armac.learning_steps_per_epoch=30",
    "--set",
    "armac.learning_rate=1e-3",
    "--set",
    "armac.replay_capacity=2048",
    "--set",
    "armac.memory=\"reservoir\"",
];

/// NashConv of the uniform policy in Kuhn poker.
#[allow(dead_code)]
pub const UNIFORM_KUHN_NASH_CONV: f64 = 0.9166666666666666;

/// The NashConv column of a run's metrics.csv (evaluated epochs only), as (epoch, value).
#[allow(dead_code)]
pub fn nash_convs(dir: &Path) -> Vec<(u64, f64)> {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let v: f64 = f[2].parse().ok()?;
            (!v.is_nan()).then(|| (f[0].parse().unwrap(), v))
        })
        .collect()
}

/// Copies shipped model `src` into `dir` without its network: the checkpoint's state and
/// config, `score.json` and `manifest.json` (so what a test does to the network is what the
/// loader sees). Returns the name and the path of the model's first reservoir network.
pub fn copy_model_but_network(src: &Path, dir: &Path) -> (String, PathBuf) {
    std::fs::create_dir_all(dir.join("checkpoint")).unwrap();
    std::fs::create_dir_all(dir.join("reservoir")).unwrap();
    for f in [
        "checkpoint/state.json",
        "checkpoint/config.toml",
        "score.json",
        "manifest.json",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let net = std::fs::read_dir(src.join("reservoir"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    (net.file_name().to_string_lossy().into_owned(), net.path())
}

/// A running `armac-eval serve`, killed on drop.
pub struct Served {
    pub child: std::process::Child,
    /// `host:port` it listens on.
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `armac-eval serve` on a free port with `args` and waits for its address line.
pub fn serve(args: &[&str]) -> Served {
    use std::io::BufRead;
    let mut child = eval()
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("armac-eval starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("armac-eval serve: listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address line, got {line:?}"))
        .to_string();
    Served { child, addr }
}
