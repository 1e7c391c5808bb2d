//! What the broker tests share (`tests/cluster*.rs`): a `redis-server` child per test, the
//! learner and actor commands, and readers of the audit files and the trajectory stream.
//! Each file uses a subset.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child on a free loopback port, stopped (by its pid) when dropped.
pub struct Redis {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
    pub extra: Vec<String>,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Redis {
    /// Starts a server with `extra` arguments; `None` (after printing why) without the binary.
    pub fn start(name: &str, extra: &[&str]) -> Option<Redis> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!(
                "skipping {name}: redis-server is not installed (apt-get install redis-server)"
            );
            return None;
        }
        let dir = crate::common::tmp("redis", name);
        std::fs::create_dir_all(&dir).unwrap();
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        // A free port can be taken by another process before the server binds it: then the
        // server exits, and the test tries another port rather than talk to a stranger.
        for _ in 0..8 {
            let port = free_port();
            if let Some(child) = Redis::try_spawn(port, &dir, &extra) {
                return Some(Redis {
                    child,
                    port,
                    dir,
                    extra,
                });
            }
        }
        panic!("redis-server could not bind any of 8 free ports");
    }

    /// A server on `port` with its data in `dir` (later arguments override earlier ones),
    /// once it answers.
    pub fn spawn(port: u16, dir: &Path, extra: &[String]) -> Child {
        Redis::try_spawn(port, dir, extra)
            .unwrap_or_else(|| panic!("redis-server exited instead of listening on port {port}"))
    }

    /// [`Redis::spawn`], or `None` if the server exited (its port was taken).
    pub fn try_spawn(port: u16, dir: &Path, extra: &[String]) -> Option<Child> {
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let mut exited = || child.try_wait().ok().flatten().is_some();
        if !wait_listening(port, &mut exited) {
            return None;
        }
        wait_answering(port);
        // What answered is this server, not one that held the port before it.
        if exited() {
            return None;
        }
        Some(child)
    }

    /// `kill -9` of the server.
    pub fn kill(&mut self) {
        kill9(self.child.id());
        self.child.wait().unwrap();
    }

    /// `kill -9` of the server, `down` without one, then a new server on the same port and
    /// directory (with an append-only file, it reloads the data it acknowledged).
    pub fn kill_and_restart(&mut self, down: Duration) {
        self.kill();
        std::thread::sleep(down);
        self.child = Redis::spawn(self.port, &self.dir, &self.extra);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn actor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_armac-actor"))
}

/// Lines of the audit files whose names start with `who` (stream ids; `commit` markers
/// dropped).
pub fn audit_ids(dir: &Path, who: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with(who) {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            ids.extend(ids_of(&lines));
        }
    }
    ids
}

/// A stream entry's fields (None for a deleted entry).
type Fields = Option<std::collections::HashMap<String, Vec<u8>>>;

/// The entries still in run `run`'s stream: id and fields.
pub fn stream_entries(url: &str, run: &str) -> Vec<(String, Fields)> {
    let mut con = connect(url);
    let reply: redis::Value = redis::cmd("XRANGE")
        .arg(format!("armac:{run}:stream"))
        .arg("-")
        .arg("+")
        .query(&mut con)
        .unwrap();
    armac::cluster::redis::range_entries(reply)
}

/// The ids still in run `run`'s stream.
pub fn stream_ids(url: &str, run: &str) -> Vec<String> {
    stream_entries(url, run)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// Waits until the learner of run `run` has registered it on the broker (actors started
/// before that fail with "run does not exist").
pub fn wait_for_run(url: &str, run: &str, learner: &mut Child) {
    let mut con = connect(url);
    let t0 = Instant::now();
    loop {
        let n: u64 = redis::cmd("EXISTS")
            .arg(format!("armac:{run}:epoch"))
            .query(&mut con)
            .unwrap();
        if n == 1 {
            return;
        }
        assert!(
            learner.try_wait().unwrap().is_none(),
            "the learner exited before registering its run"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "learner did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Epochs run `dir` has logged in its `metrics.csv` so far.
pub fn epochs_done(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// Waits, polling every `poll`, until run `dir` has logged `epochs` epochs, at most `limit`
/// after `t0` ("run too slow"); with a `learner`, asserts all along that it still runs
/// (`ended`: the message when it does not).
pub fn wait_epochs(
    dir: &Path,
    epochs: usize,
    mut learner: Option<(&mut Child, &str)>,
    t0: Instant,
    limit: Duration,
    poll: Duration,
) {
    while epochs_done(dir) < epochs {
        if let Some((l, ended)) = learner.as_mut() {
            assert!(l.try_wait().unwrap().is_none(), "{ended}");
        }
        assert!(t0.elapsed() < limit, "run too slow");
        std::thread::sleep(poll);
    }
}

/// A server for test `name` ([`Redis::start`]), the test's run directory and its audit
/// directory (created).
pub fn with_run_dirs(name: &str, extra: &[&str]) -> Option<(Redis, PathBuf, PathBuf)> {
    let redis = Redis::start(name, extra)?;
    let dir = crate::common::tmp("cluster", name);
    let audit = crate::common::tmp("cluster", &format!("{name}-audit"));
    std::fs::create_dir_all(&audit).unwrap();
    Some((redis, dir, audit))
}

/// `kill -9` of process `pid`.
pub fn kill9(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits until something listens on loopback port `port` (at most 10 s); `exited` is asked
/// between tries whether the server gave up (then the wait ends, `false`).
/// A connection to the test's server at `url` that has answered `PING`. I/O errors (refused,
/// or reset while a busy machine starts the server) are retried for up to 15 s; a reply of
/// the server's own (e.g. `NOAUTH`) is final.
pub fn connect(url: &str) -> redis::Connection {
    match try_connect(url) {
        Ok(con) => con,
        Err(e) => panic!("redis-server at {url} did not answer PING: {e}"),
    }
}

pub fn try_connect(url: &str) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(url)?;
    let t0 = Instant::now();
    loop {
        let attempt = client.get_connection().and_then(|mut con| {
            redis::cmd("PING").query::<String>(&mut con)?;
            Ok(con)
        });
        match attempt {
            Err(e) if e.is_io_error() && t0.elapsed() < Duration::from_secs(15) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Waits until the server on `port` answers a command (a refusal such as `NOAUTH` counts:
/// the server is up).
pub fn wait_answering(port: u16) {
    match try_connect(&format!("redis://127.0.0.1:{port}/0")) {
        Err(e) if e.is_io_error() => panic!("redis-server on port {port} did not answer: {e}"),
        _ => {}
    }
}

pub fn wait_listening(port: u16, mut exited: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if exited() {
            return false;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "redis-server did not listen on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `armac-train` as a quiet learner (`--role learner`) of the shipped Kuhn config.
pub fn kuhn_learner() -> Command {
    let mut c = crate::common::train();
    c.args([
        "--config",
        "kuhn_armac.toml",
        "--quiet",
        "--role",
        "learner",
    ]);
    c
}

/// `--set` of each `key=value` of `sets`.
pub fn with_sets<'a>(cmd: &'a mut Command, sets: &[&str]) -> &'a mut Command {
    for kv in sets {
        cmd.args(["--set", kv]);
    }
    cmd
}

/// A quiet Kuhn learner on broker `url` writing run directory `dir`, with `sets` (see
/// [`with_sets`]).
pub fn learner_cmd(url: &str, sets: &[&str], dir: &Path) -> Command {
    let mut c = kuhn_learner();
    c.args(["--broker", url]);
    with_sets(&mut c, sets).arg("--out").arg(dir);
    c
}

/// The settings of the 30-epoch runs that a learner or broker is killed in.
pub const SHORT_RUN: [&str; 4] = [
    "cluster.stream_cap=1024",
    "armac.epochs=30",
    "armac.episodes_per_epoch=256",
    "armac.learning_steps_per_epoch=10",
];

/// Asserts that process `what` exited successfully, showing its output when it did not.
pub fn assert_success(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `count` actor processes of run `run` (actor `a` with `--seed a` and `extra` arguments), with
/// audit files in `audit`, stdout piped when `keep_stdout`, stderr piped.
pub fn spawn_actors(
    count: usize,
    run: &str,
    url: &str,
    extra: &[&str],
    audit: &Path,
    keep_stdout: bool,
) -> Vec<Child> {
    (0..count)
        .map(|a| {
            actor()
                .args(["--run", run, "--broker", url])
                .args(extra)
                .args(["--seed", &a.to_string()])
                .env("ARMAC_BROKER_AUDIT", audit)
                .stdout(if keep_stdout {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Audit lines that record entries (not the `commit` / `resumed-from` markers): `<stream id>
/// <actor token>:<seq>`, with ` copy` on the learner's side for an entry it dropped as a
/// second copy of one it read before.
pub fn entry_lines(lines: &[String]) -> impl Iterator<Item = &String> {
    lines
        .iter()
        .filter(|l| !l.is_empty() && *l != "commit" && !l.starts_with("resumed-from"))
}

/// The stream ids among audit lines.
pub fn ids_of(lines: &[String]) -> Vec<String> {
    entry_lines(lines)
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}
