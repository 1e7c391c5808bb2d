//! `--overwrite` of armac-train: it replaces only a run (never a folder of notes, a checkout or
//! a link's target), and swaps the new run in only once it has a checkpoint.

mod common;
#[path = "common/hostile.rs"]
mod damage;

use common::{run_ok, tmp, train};
use damage::{refused, snapshot, write};
use std::path::Path;

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
