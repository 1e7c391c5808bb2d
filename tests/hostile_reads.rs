//! Reads are bounded before content: a file of a model grown far past the length its manifest
//! records, and a manifest grown past the manifest's cap, are refused from their length alone
//! (sparse files, which take no disk); a FIFO (which would block a reader forever) or a link to
//! `/dev/zero` (endless) in a model or a run directory is refused by name before it is opened
//! for reading, by every command that reads it; the run view of `armac-eval serve` names the
//! run files it does not read. Every command runs under a deadline: one that hangs is killed
//! and fails the test.

mod common;
#[path = "common/hostile.rs"]
mod damage;
#[path = "common/http.rs"]
mod http;

use common::{eval, run_ok, tmp, train};
use damage::{copy_dir, listed_files, mkfifo, refused_within, snapshot};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a refused command may take (a refusal comes in well under a second; the margin is
/// for a loaded machine).
const LIMIT: Duration = Duration::from_secs(60);

/// What replaces a file a program reads.
#[derive(Clone, Copy, Debug)]
enum Special {
    Fifo,
    LinkToZero,
}

impl Special {
    /// Replaces `path` with `self`; returns the file's bytes.
    fn put(self, path: &Path) -> Vec<u8> {
        let saved = std::fs::read(path).unwrap();
        std::fs::remove_file(path).unwrap();
        match self {
            Special::Fifo => mkfifo(path),
            Special::LinkToZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        }
        saved
    }

    /// What a refusal says of it (after the file's path).
    fn reason(self) -> &'static str {
        match self {
            Special::Fifo => "is not a regular file (a directory, FIFO, socket or device)",
            Special::LinkToZero => "is a symbolic link, not a regular file",
        }
    }
}

/// A command that reads a run directory, built afresh for each case.
type Reader<'a> = Box<dyn Fn() -> Command + 'a>;

/// Puts `bytes` back at `path` (a special file there is removed first).
fn restore(path: &Path, bytes: Vec<u8>) {
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn files_grown_past_their_recorded_length_are_refused_unread() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/leduc_armac");
    let dir = tmp("hostile-reads", "model");
    copy_dir(&src, &dir);
    let victim = dir.join(listed_files(&dir).1);
    let d = dir.display().to_string();
    #[rustfmt::skip]
    let cases: [(&str, &Path, u64, &[&str]); 2] = [
        ("a listed file grown to 100 GiB", &victim, 100 << 30, &["107374182400 bytes, the manifest records"]),
        ("a manifest grown to 1 GiB", &dir.join("manifest.json"), 1 << 30, &["manifest.json", "has 1073741824 bytes, more than the 16777216"]),
    ];
    for (case, path, len, needles) in cases {
        let good = std::fs::read(path).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.set_len(len).unwrap();
        drop(file);
        // Under a 4 GB address space, so that a reader that did read the file fails an
        // allocation instead of taking the machine's memory.
        let mut cmd = Command::new("sh");
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-c", "ulimit -v 4000000 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_armac-eval"))
            .args(["nashconv", "--game", "leduc_poker", "--policy", &d]);
        let t = Instant::now();
        let name = path.file_name().unwrap().to_str().unwrap();
        let mut all = vec![name];
        all.extend_from_slice(needles);
        refused_within(&mut cmd, LIMIT, &all, case);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{case}: {:?}",
            t.elapsed()
        );
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            len,
            "{case}: changed"
        );
        std::fs::write(path, good).unwrap();
    }
    run_ok(eval().args(["nashconv", "--game", "leduc_poker", "--policy", &d]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Model verification reads no FIFO, device or link: a listed file of a model replaced by a
/// FIFO, by a link to `/dev/zero` or by a link to a good copy of itself, and a FIFO as the
/// manifest, are each refused by name, and the model folder is left as it was.
#[test]
fn model_verification_reads_no_fifo_device_or_link() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/leduc_armac");
    let dir = tmp("hostile", "special-files");
    copy_dir(&src, &dir);
    let path = dir.join(listed_files(&dir).1);
    let spare = tmp("hostile", "spare-copy");
    std::fs::write(&spare, std::fs::read(&path).unwrap()).unwrap();
    let d = dir.display().to_string();
    type Make = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, PathBuf, Make, &str)> = vec![
        (
            "a FIFO",
            path.clone(),
            Box::new(mkfifo),
            "not a regular file",
        ),
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
            Box::new(mkfifo),
            "not a regular file",
        ),
    ];
    for (case, target, make, why) in &cases {
        let saved = std::fs::read(target).unwrap();
        std::fs::remove_file(target).unwrap();
        make(target);
        let before = snapshot(&dir);
        let mut cmd = eval();
        cmd.args(["nashconv", "--game", "leduc_poker", "--policy", &d]);
        let name = target.file_name().unwrap().to_str().unwrap();
        refused_within(&mut cmd, LIMIT, &[name, why], case);
        assert_eq!(snapshot(&dir), before, "{case}: the model folder changed");
        restore(target, saved);
    }
    run_ok(eval().args(["nashconv", "--game", "leduc_poker", "--policy", &d]));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&spare);
}

/// A FIFO or a link to `/dev/zero` in a Hold'em ARMAC run directory, under the name of a file
/// that a command reads, is refused naming the file and why, by every such command: the
/// committed generation's manifest and a checkpoint file of it by `--resume`, `lbr`,
/// `scorecard`, `export-model` and `serve`; `metrics.csv`, the TensorBoard event file and
/// `run.lock` by `--resume` (which cuts the logs back to the checkpoint and writes its pid to
/// the lock). The run is left as it was, and works again once the file is back.
#[test]
fn special_files_in_a_run_directory_are_refused_by_name() {
    let dir = tmp("hostile-reads", "run");
    run_ok(common::tiny_run("nlhe_fcpa.toml", &dir).args(["--set", "armac.epochs=2"]));
    let pointed = std::fs::read_link(dir.join("checkpoint")).unwrap();
    let generation = dir.join("checkpoints").join(pointed.file_name().unwrap());
    let events = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("events.out.tfevents"))
        .unwrap();
    let d = dir.display().to_string();
    let out = tmp("hostile-reads", "exported");
    let o = out.display().to_string();
    let command = |program: Command, args: Vec<&str>| {
        let mut c = program;
        c.args(args);
        c
    };
    #[rustfmt::skip]
    let readers: Vec<(&str, Reader)> = vec![
        ("resume", Box::new(|| command(train(), vec!["--resume", &d, "--set", "armac.epochs=3", "--quiet"]))),
        ("lbr", Box::new(|| command(eval(), vec!["lbr", "--policy", &d, "--variant", "fc", "--hands", "4", "--threads", "1"]))),
        ("scorecard", Box::new(|| command(eval(), vec!["scorecard", "--policy", &d, "--hands", "4", "--match-hands", "4"]))),
        ("export-model", Box::new(|| command(eval(), vec!["export-model", "--checkpoint", &d, "--out", &o]))),
        ("serve", Box::new(|| command(eval(), vec!["serve", "--port", "0", "--policy", &d]))),
    ];
    let cases: [(PathBuf, usize); 5] = [
        (generation.join("manifest.json"), readers.len()),
        (generation.join("state.json"), readers.len()),
        (dir.join("metrics.csv"), 1),
        (events, 1),
        (dir.join("run.lock"), 1),
    ];
    let mut refusals = 0;
    for (path, n) in &cases {
        let p = path.display().to_string();
        for special in [Special::Fifo, Special::LinkToZero] {
            let saved = special.put(path);
            let before = snapshot(&dir);
            for (name, cmd) in &readers[..*n] {
                let case = format!("{name} with {p} as {special:?}");
                refused_within(&mut cmd(), LIMIT, &[&p, special.reason()], &case);
                let changed = damage::changed(&before, &snapshot(&dir));
                assert!(changed.is_empty(), "{case}: changed {changed:?}");
                assert!(!out.exists(), "{case}: exported");
                refusals += 1;
            }
            restore(path, saved);
        }
    }
    assert_eq!(refusals, 26);
    run_ok(&mut readers[3].1());
    run_ok(&mut readers[0].1());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
}

/// A finished run whose `summary.json` is a FIFO or a link to `/dev/zero`: `--resume` names it
/// in a warning, does not take the run as finished, and writes a regular summary in its place.
#[test]
fn a_special_summary_is_named_and_replaced() {
    let dir = tmp("hostile-reads", "summary");
    run_ok(common::tiny_run("nlhe_fcpa.toml", &dir).args(["--set", "armac.epochs=1"]));
    let path = dir.join("summary.json");
    let p = path.display().to_string();
    for special in [Special::Fifo, Special::LinkToZero] {
        special.put(&path);
        let mut cmd = train();
        cmd.arg("--resume").arg(&dir);
        let out = damage::output_within(&mut cmd, LIMIT, &format!("{special:?}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{special:?}: {err}");
        let warning = format!(
            "warning: {p} {}; the run counts as not finished",
            special.reason()
        );
        assert!(err.contains(&warning), "{special:?}: {err}");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file(), "{special:?}: {:?}", meta.file_type());
        assert_eq!(common::json(&path)["iterations"], 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The run view of `armac-eval serve` reads no FIFO, link or oversized run file: each is
/// named in the answer's `refused` (the other files are served), and an oversized file (sparse,
/// far past the view's 64 MiB cap) is refused from its length, quickly.
#[test]
fn the_run_view_names_run_files_it_does_not_read() {
    let dir = tmp("hostile-reads", "served-run");
    let (config, _) = armac::run::config::Config::load("kuhn_armac.toml", &[]).unwrap();
    armac::run::armac::write_synthetic_run(&config, &dir, 1).unwrap();
    let metrics = dir.join("metrics.csv");
    std::fs::write(&metrics, "epoch,seconds,nash_conv\n0,0.5,0.4\n").unwrap();
    let curve = dir.join("lbr_fc.csv");
    std::fs::write(
        &curve,
        "step,mean_mbb,ci95_mbb,hands,seconds\n1,900.5,30.25,40,2.5\n",
    )
    .unwrap();
    let s = common::serve(&["--policy", dir.to_str().unwrap()]);
    let view = || http::ok(http::get(&s, "/api/run?model=0"));
    let v = view();
    assert_eq!(v["refused"], json!([]), "{v}");
    assert_eq!(v["metrics"]["rows"], json!([[0.0, 0.5, 0.4]]));
    assert_eq!(v["lbr"][0]["variant"], "fc");
    let (m, c) = (metrics.display(), curve.display());
    for special in [Special::Fifo, Special::LinkToZero] {
        let saved = special.put(&metrics);
        let t = Instant::now();
        let v = view();
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        let why = special.reason();
        assert_eq!(v["refused"], json!([format!("{m} {why}: not read")]), "{v}");
        assert_eq!(v["metrics"], json!(null));
        assert_eq!(v["lbr"][0]["table"]["rows"][0][1], 900.5, "{v}");
        restore(&metrics, saved);
    }
    // Both files grown past the cap (64 MiB) to 1 GiB and 100 GiB.
    for (path, len) in [(&metrics, 1u64 << 30), (&curve, 100 << 30)] {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_len(len).unwrap();
    }
    let t = Instant::now();
    let v = view();
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let too_large = |p: &dyn std::fmt::Display, len: u64| {
        format!("{p} has {len} bytes, more than the 67108864 a file may have here: not read")
    };
    assert_eq!(
        v["refused"],
        json!([too_large(&m, 1 << 30), too_large(&c, 100 << 30)]),
        "{v}"
    );
    assert_eq!((&v["metrics"], &v["lbr"]), (&json!(null), &json!([])));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
