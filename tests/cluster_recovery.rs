//! ARMAC with remote actors through a real Redis server, recovering from a killed process: a
//! learner killed and resumed, and a Redis server killed and restarted from its append-only
//! file, each mid-run, lose and repeat no trajectory (counted by stream id).
//!
//! Each test starts its own `redis-server` on a free loopback port and skips, saying why, when
//! the binary is not installed (`apt-get install redis-server`; `.ci/run` does).

#[path = "common/broker.rs"]
mod broker;
mod common;

use broker::*;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The learner processes' audit files, oldest first (the first learner's file stopped changing
/// when it was killed), each as its lines.
fn learner_files(dir: &Path) -> Vec<Vec<String>> {
    let mut files: Vec<(std::time::SystemTime, Vec<String>)> = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("learner") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let t = e.metadata().unwrap().modified().unwrap();
            files.push((t, text.lines().map(str::to_string).collect()));
        }
    }
    files.sort_by_key(|f| f.0);
    files.into_iter().map(|f| f.1).collect()
}

#[test]
fn learner_killed_and_resumed_loses_and_repeats_no_trajectory() {
    let Some((redis, dir, audit)) = with_run_dirs("resume", &[]) else {
        return;
    };
    let url = redis.url();
    let sets = [
        &SHORT_RUN[..],
        &["cluster.run=\"resume\"", "armac.memory=\"reservoir\""],
    ]
    .concat();
    let mut learner = learner_cmd(&url, &sets, &dir)
        .env("ARMAC_BROKER_AUDIT", &audit)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_run(&url, "resume", &mut learner);
    let actors = spawn_actors(2, "resume", &url, &[], &audit, false);
    let t0 = Instant::now();
    let wait = |learner: &mut Child, epochs: usize| {
        wait_epochs(
            &dir,
            epochs,
            Some((learner, "learner ended early")),
            t0,
            Duration::from_secs(120),
            Duration::from_millis(20),
        )
    };
    // An entry of a token no actor uses (malformed: skipped, but read and acknowledged).
    wait(&mut learner, 3);
    let forged = xadd_forged(&url);
    // Killed between checkpoints (they come every 2 epochs here), in the middle of an epoch.
    wait(&mut learner, 11);
    std::thread::sleep(Duration::from_millis(150));
    kill9(learner.id());
    learner.wait().unwrap();
    let killed_at = epochs_done(&dir);
    // A late copy of the test's early entry, as a retried `XADD` could write it: the original
    // is in a checkpoint, acknowledged and deleted, and no later entry of its token exists, so
    // only the tracker the checkpoint carries can tell the resumed learner it is a copy.
    let forged_copy = xadd_forged(&url);
    // The actors wait; the resumed learner carries on with them.
    let out = common::train()
        .arg("--resume")
        .arg(&dir)
        .arg("--quiet")
        .env("ARMAC_BROKER_AUDIT", &audit)
        .output()
        .unwrap();
    assert_success(&out, "resume");
    for a in actors {
        assert_success(&a.wait_with_output().unwrap(), "actor");
    }
    assert_eq!(common::json(&dir.join("summary.json"))["iterations"], 30);

    // What the first learner's last checkpoint holds plus what the resumed one processed:
    // every sent entry once, or still unread in the stream. The resumed learner names the
    // checkpoint's cursor; the first learner's ids up to it are what that checkpoint holds.
    let files = learner_files(&audit);
    assert_eq!(files.len(), 2, "two learner processes");
    let copy_line = entry_lines(&files[1])
        .find(|l| l.split(' ').next() == Some(forged_copy.as_str()))
        .expect("the resumed learner read the copy");
    assert!(
        copy_line.ends_with(" copy"),
        "a copy of an entry acknowledged before the kill entered the resumed run: {copy_line}"
    );
    let cursor = files[1]
        .iter()
        .find_map(|l| l.strip_prefix("resumed-from "))
        .expect("the resumed learner names its checkpoint's cursor")
        .to_string();
    let first_all = ids_of(&files[0]);
    let upto = first_all
        .iter()
        .position(|id| *id == cursor)
        .expect("the checkpoint's cursor is an id the first learner processed");
    // A checkpoint commits before its `commit` line: the cursor is at or after the last one.
    let before_marker = files[0]
        .iter()
        .rposition(|l| l == "commit")
        .map(|m| ids_of(&files[0][..m]).len())
        .unwrap_or(0);
    assert!(
        upto + 1 >= before_marker,
        "checkpoint cursor before its commit marker"
    );
    let forged_at = first_all
        .iter()
        .position(|id| *id == forged)
        .expect("the first learner read the test's entry");
    assert!(
        forged_at <= upto,
        "the test's entry was not in the checkpoint yet"
    );
    let held: Vec<String> = first_all[..=upto]
        .iter()
        .chain(&ids_of(&files[1]))
        .cloned()
        .collect();
    let unique: HashSet<String> = held.iter().cloned().collect();
    assert_eq!(unique.len(), held.len(), "an entry entered the run twice");
    let redone = first_all.len() - (upto + 1);
    let sent: HashSet<String> = audit_ids(&audit, "actor").into_iter().collect();
    let remaining: HashSet<String> = stream_ids(&url, "resume").into_iter().collect();
    let lost = sent
        .iter()
        .filter(|id| !unique.contains(*id) && !remaining.contains(*id))
        .count();
    assert_eq!(lost, 0, "sent entries lost");
    eprintln!(
        "learner killed at epoch {killed_at}, resumed: {} entries held once, {redone} read \
         after the last checkpoint and processed again by the resumed learner, 0 lost",
        held.len()
    );
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&audit).ok();
}

/// Appends to run `resume`'s stream an entry of token `test-forged`, sequence 1, with no
/// trajectory (the learner skips it as malformed unless it is a copy); its stream id.
fn xadd_forged(url: &str) -> String {
    let mut con = connect(url);
    redis::cmd("XADD")
        .arg("armac:resume:stream")
        .arg("*")
        .arg("a")
        .arg("test")
        .arg("u")
        .arg("test-forged:1")
        .query(&mut con)
        .unwrap()
}

/// `(token:seq, copy?)` of the audit lines of files whose names start with `who`, with the
/// stream id of each.
fn tokens(dir: &Path, who: &str) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with(who) {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            for l in entry_lines(&lines) {
                let mut parts = l.split(' ');
                let id = parts.next().unwrap().to_string();
                let u = parts
                    .next()
                    .expect("an entry line names its token")
                    .to_string();
                out.push((id, u, parts.next() == Some("copy")));
            }
        }
    }
    out
}

/// The `u` fields of the entries still in run `run`'s stream.
fn stream_tokens(url: &str, run: &str) -> Vec<String> {
    stream_entries(url, run)
        .into_iter()
        .filter_map(|(_, f)| Some(String::from_utf8_lossy(f?.get("u")?).into_owned()))
        .collect()
}

#[test]
fn redis_killed_and_restarted_with_aof_mid_run_loses_and_repeats_nothing() {
    let Some((mut redis, dir, audit)) =
        with_run_dirs("aof", &["--appendonly", "yes", "--appendfsync", "always"])
    else {
        return;
    };
    let url = redis.url();
    // The actors start first and wait for their run (--wait).
    let actors = spawn_actors(2, "aof", &url, &["--wait", "60"], &audit, false);
    std::thread::sleep(Duration::from_millis(500));
    let sets = [&SHORT_RUN[..], &["cluster.run=\"aof\""]].concat();
    let mut learner = learner_cmd(&url, &sets, &dir)
        .env("ARMAC_BROKER_AUDIT", &audit)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_epochs(
        &dir,
        8,
        Some((&mut learner, "learner ended early")),
        Instant::now(),
        Duration::from_secs(120),
        Duration::from_millis(20),
    );
    let killed_at = epochs_done(&dir);
    // Down for a second and a half: every process meets a dropped connection and retries.
    redis.kill_and_restart(Duration::from_millis(1500));
    let out = learner.wait_with_output().unwrap();
    let learner_err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "learner failed: {learner_err}");
    assert!(
        learner_err.contains("reconnecting") && learner_err.contains("reconnected after"),
        "the learner did not report the lost broker: {learner_err}"
    );
    let mut actor_reconnects = 0;
    for a in actors {
        let o = a.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "actor failed: {err}");
        assert!(err.contains("waiting up to 60 s"), "{err}");
        actor_reconnects += err.matches("reconnected after").count();
    }
    assert!(actor_reconnects >= 2, "both actors reconnect");
    assert_eq!(common::json(&dir.join("summary.json"))["iterations"], 30);

    // Counting by the actors' entry tokens: every entry an actor got a reply for is taken
    // into the run exactly once or still unread in the stream; copies written by retried
    // XADDs are dropped, never taken twice.
    let learned = tokens(&audit, "learner");
    let taken: Vec<&String> = learned.iter().filter(|l| !l.2).map(|l| &l.1).collect();
    let taken_set: HashSet<&String> = taken.iter().copied().collect();
    assert_eq!(taken_set.len(), taken.len(), "an entry was taken twice");
    let ids: HashSet<&String> = learned.iter().map(|l| &l.0).collect();
    assert_eq!(ids.len(), learned.len(), "a stream id was read twice");
    let copies = learned.len() - taken.len();
    let sent: HashSet<String> = tokens(&audit, "actor").into_iter().map(|l| l.1).collect();
    let remaining: HashSet<String> = stream_tokens(&url, "aof").into_iter().collect();
    let lost = sent
        .iter()
        .filter(|u| !taken_set.contains(u) && !remaining.contains(*u))
        .count();
    assert_eq!(lost, 0, "sent entries lost");
    let unsent = taken_set.iter().filter(|u| !sent.contains(**u)).count();
    assert_eq!(unsent, 0, "entries taken that no actor sent");
    assert!(taken.len() >= 30 * 256);
    eprintln!(
        "redis kill -9 at epoch {killed_at}, restarted from its append-only file: {} entries \
         taken once, {copies} copies dropped, {} unread, {actor_reconnects} actor \
         reconnections, 0 lost",
        taken.len(),
        remaining.len()
    );
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&audit).ok();
}
