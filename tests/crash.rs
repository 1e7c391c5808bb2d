//! Crash test: runs of ARMAC (Kuhn, tiny networks) and of a sampling solver (outcome-sampling
//! MCCFR on Leduc) are stopped at random points — by SIGKILL at a random time, or by the
//! checkpoint writer's fault-injection hook (`ARMAC_CRASH_AT`) between two of its file
//! operations, sometimes twice — and resumed until they finish. Every trial must resume (or,
//! stopped before its first checkpoint, say so and start over with `--overwrite`), end with one
//! tidy checkpoint generation, no temporary files and logs with each step once; the
//! deterministic sampling solver must end with exactly the outputs of an uninterrupted run.
//! `ARMAC_CRASH_TRIALS` sets the trials per algorithm (default 12).

mod common;

use armac::util::SplitMix64;
use common::{run_ok, tmp, train};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The `(tag, step)` of every scalar in the TensorBoard event files of `dir`.
fn tb_points(dir: &Path) -> Vec<(String, u64)> {
    fn varint(d: &mut &[u8]) -> u64 {
        let mut v = 0;
        for shift in (0..64).step_by(7) {
            let b = d[0];
            *d = &d[1..];
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    }
    /// Fields of a protobuf message: (number, varint value or bytes).
    fn fields(mut d: &[u8]) -> Vec<(u64, u64, &[u8])> {
        let mut out = Vec::new();
        while !d.is_empty() {
            let key = varint(&mut d);
            match key & 7 {
                0 => out.push((key >> 3, varint(&mut d), &[][..])),
                1 => d = &d[8..],
                2 => {
                    let n = varint(&mut d) as usize;
                    out.push((key >> 3, 0, &d[..n]));
                    d = &d[n..];
                }
                5 => d = &d[4..],
                w => panic!("wire type {w}"),
            }
        }
        out
    }
    let mut points = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with("events.out") {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let mut pos = 0;
        while pos + 12 <= bytes.len() {
            let len = u64::from_le_bytes(bytes[pos..pos + 8].try_into().unwrap()) as usize;
            assert!(
                pos + 16 + len <= bytes.len(),
                "torn record in {:?}",
                e.path()
            );
            let event = &bytes[pos + 12..pos + 12 + len];
            pos += 16 + len;
            let f = fields(event);
            let step = f.iter().find(|x| x.0 == 2).map_or(0, |x| x.1);
            for (_, _, summary) in f.iter().filter(|x| x.0 == 5) {
                for (_, _, value) in fields(summary).iter().filter(|x| x.0 == 1) {
                    for (_, _, tag) in fields(value).iter().filter(|x| x.0 == 1) {
                        points.push((String::from_utf8_lossy(tag).into_owned(), step));
                    }
                }
            }
        }
    }
    points.sort();
    points
}

/// Steps of metrics.csv (first column), in order.
fn metric_steps(dir: &Path) -> Vec<u64> {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

/// metrics.csv without its wall-clock column.
fn metrics_without_seconds(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut c: Vec<&str> = l.split(',').collect();
            c.remove(1);
            c.join(",") + "\n"
        })
        .collect()
}

/// The step of the checkpoint a resume would start from (`None`: no committed one).
fn checkpoint_step(dir: &Path) -> Option<u64> {
    let m = std::fs::read(dir.join("checkpoint/manifest.json")).ok()?;
    serde_json::from_slice::<serde_json::Value>(&m).ok()?["step"].as_u64()
}

/// Every path under `dir` (not following the pointer symlink).
fn all_paths(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}

/// The run directory after a finished run holds one generation, the pointer to it and no
/// temporaries.
fn assert_tidy(dir: &Path) {
    let paths = all_paths(dir);
    let gens: Vec<&String> = paths
        .iter()
        .filter(|p| p.starts_with("checkpoints/gen_") && !p[16..].contains('/'))
        .collect();
    assert_eq!(gens.len(), 1, "generations left: {paths:?}");
    assert!(
        !paths
            .iter()
            .any(|p| p.ends_with(".tmp") || p.contains(".tmp") || p.ends_with(".next")),
        "temporary files left: {paths:?}"
    );
}

#[derive(Default, Debug)]
struct Figures {
    trials: usize,
    sigkills: usize,
    injected: usize,
    finished_before_stop: usize,
    /// Resumes from a complete generation whose pointer switch the kill pre-empted.
    uncommitted_generation_resumes: usize,
    resumes: usize,
    restarts_without_checkpoint: usize,
    lost_steps: Vec<u64>,
}

enum Outcome {
    Stopped,
    Finished,
}

/// Starts a run (`args`), stops it per `rng`, and records the kind of stop.
fn run_and_stop(
    args: &[String],
    rng: &mut SplitMix64,
    max_ops: usize,
    max_ms: usize,
    f: &mut Figures,
) -> Outcome {
    let mut cmd = train();
    cmd.args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if rng.below(2) == 0 {
        let at = 1 + rng.below(max_ops);
        let o = cmd.env("ARMAC_CRASH_AT", at.to_string()).output().unwrap();
        match o.status.code() {
            Some(86) => {
                f.injected += 1;
                Outcome::Stopped
            }
            Some(0) => Outcome::Finished,
            s => panic!(
                "unexpected exit {s:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
        }
    } else {
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(20 + rng.below(max_ms) as u64));
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            return Outcome::Finished;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        f.sigkills += 1;
        Outcome::Stopped
    }
}

/// One trial: a new run stopped at a random point, then resumed (sometimes stopped again)
/// until it finishes.
fn trial(
    new_run: &[String],
    dir: &Path,
    rng: &mut SplitMix64,
    max_ops: usize,
    max_ms: usize,
    f: &mut Figures,
) {
    f.trials += 1;
    let out = dir.display().to_string();
    let resume = vec!["--resume".to_string(), out.clone(), "--quiet".to_string()];
    let mut args = new_run.to_vec();
    let mut stops = 0;
    loop {
        let outcome = if stops < 2 && (stops == 0 || rng.below(3) == 0) {
            run_and_stop(&args, rng, max_ops, max_ms, f)
        } else {
            run_ok(train().args(&args));
            Outcome::Finished
        };
        match outcome {
            Outcome::Finished => {
                if stops == 0 {
                    f.finished_before_stop += 1;
                }
                return;
            }
            Outcome::Stopped => stops += 1,
        }
        let progress = metric_steps(dir).last().copied().unwrap_or(0);
        match checkpoint_step(dir) {
            Some(step) => {
                f.lost_steps.push(progress.saturating_sub(step));
                f.resumes += 1;
                args = resume.clone();
            }
            None => {
                // No committed pointer. If the kill came after a generation was complete but
                // before the pointer switched, resume takes that generation and runs to the
                // end; otherwise it says there is no checkpoint, nothing changes, and the run
                // starts over.
                let o = train().args(&resume).output().unwrap();
                if o.status.success() {
                    f.resumes += 1;
                    f.uncommitted_generation_resumes += 1;
                    return;
                }
                let e = String::from_utf8_lossy(&o.stderr);
                assert!(
                    !o.status.success()
                        && (e.contains("no complete checkpoint") || e.contains("no config.toml")),
                    "{e}"
                );
                f.lost_steps.push(progress);
                f.restarts_without_checkpoint += 1;
                args = new_run.to_vec();
                args.push("--overwrite".into());
            }
        }
    }
}

fn trials() -> usize {
    std::env::var("ARMAC_CRASH_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

#[test]
fn a_sampling_solver_survives_random_crashes_with_identical_outputs() {
    let base = tmp("crash", "os-ref");
    let args = |out: &Path| -> Vec<String> {
        [
            "--config",
            "leduc_os_mccfr.toml",
            "--quiet",
            "--set",
            // Long enough that most trials are stopped before they finish (5M iterations
            // take about 1.6 s on an idle core; 400k end before most kills).
            "solver.iterations=5000000",
            "--set",
            "eval.every=500000",
            "--set",
            "checkpoint.every_seconds=0.05",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.display().to_string()])
        .collect()
    };
    run_ok(train().args(args(&base)));
    let want_policy = std::fs::read(base.join("policy.json")).unwrap();
    let want_metrics = metrics_without_seconds(&base);
    let want_tb = tb_points(&base);
    let mut f = Figures::default();
    for t in 0..trials() {
        let dir = tmp("crash", &format!("os-{t}"));
        let mut rng = SplitMix64::new(1000 + t as u64);
        trial(&args(&dir), &dir, &mut rng, 160, 900, &mut f);
        assert_eq!(
            std::fs::read(dir.join("policy.json")).unwrap(),
            want_policy,
            "trial {t}"
        );
        assert_eq!(metrics_without_seconds(&dir), want_metrics, "trial {t}");
        assert_eq!(tb_points(&dir), want_tb, "trial {t}: TensorBoard points");
        assert_tidy(&dir);
        std::fs::remove_dir_all(&dir).ok();
    }
    eprintln!("os-mccfr crash figures (steps = iterations, seen through metrics rows): {f:?}");
    assert!(f.sigkills + f.injected >= trials() / 2, "{f:?}");
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn armac_survives_random_crashes_and_resumes_every_time() {
    const EPOCHS: u64 = 30;
    const CAPACITY: usize = 2;
    let args = |out: &Path| -> Vec<String> {
        [
            "--config",
            "kuhn_armac.toml",
            "--quiet",
            "--set",
            "armac.epochs=30",
            "--set",
            "armac.episodes_per_epoch=32",
            "--set",
            "armac.learning_steps_per_epoch=4",
            "--set",
            "armac.reservoir_capacity=2",
            "--set",
            "armac.hidden=16",
            "--set",
            "armac.batch_trajectories=16",
            "--set",
            "armac.games_per_group=16",
            "--set",
            "eval.every=1",
            "--set",
            "checkpoint.every_epochs=3",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.display().to_string()])
        .collect()
    };
    let mut f = Figures::default();
    for t in 0..trials() {
        let dir = tmp("crash", &format!("armac-{t}"));
        let mut rng = SplitMix64::new(2000 + t as u64);
        trial(&args(&dir), &dir, &mut rng, 200, 1500, &mut f);
        let summary = common::json(&dir.join("summary.json"));
        assert_eq!(summary["iterations"].as_u64(), Some(EPOCHS), "trial {t}");
        assert_eq!(
            metric_steps(&dir),
            (1..=EPOCHS).collect::<Vec<_>>(),
            "trial {t}"
        );
        let mut per_tag: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (tag, step) in tb_points(&dir) {
            per_tag.entry(tag).or_default().push(step);
        }
        assert_eq!(
            per_tag.get("epoch"),
            Some(&(1..=EPOCHS).collect::<Vec<_>>()),
            "trial {t}: TensorBoard points"
        );
        let nets = std::fs::read_dir(dir.join("reservoir")).unwrap().count();
        assert!(
            nets <= 2 * CAPACITY + 1,
            "trial {t}: {nets} reservoir files"
        );
        assert_tidy(&dir);
        std::fs::remove_dir_all(&dir).ok();
    }
    eprintln!("ARMAC crash figures (steps = epochs): {f:?}");
    assert!(f.sigkills + f.injected >= trials() / 2, "{f:?}");
}
