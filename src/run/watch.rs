//! Following a run's checkpoints while it trains (`armac-eval lbr --watch RUN`): every newly
//! committed checkpoint generation is handed to an evaluation as soon as it appears, until the
//! run has finished or its process is gone.

use super::RunError;
use super::generation::complete_generations;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An evaluation's error.
pub type EvalError = Box<dyn std::error::Error + Send + Sync>;

/// How [`watch_checkpoints`] follows a run.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Evaluate every checkpoint that appears (`true`) or only the newest one each time the
    /// evaluation is free again (`false`).
    pub every_checkpoint: bool,
    /// Seconds between looks at the run directory.
    pub poll_seconds: f64,
    /// Give up after this many seconds without a new checkpoint (`None`: wait while the run's
    /// process lives).
    pub idle_timeout: Option<f64>,
}

/// Whether the process that holds `run_dir`'s lock is still alive (Linux: its pid in
/// `run.lock` under `/proc`; elsewhere assumed alive).
fn trainer_alive(run_dir: &Path) -> bool {
    match super::lock_pid(run_dir) {
        Some(pid) if Path::new("/proc/self").exists() => {
            // Gone, or a zombie (state `Z` after the command name in `stat`) waiting for its
            // parent to reap it.
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Ok(stat) => stat
                    .rsplit_once(')')
                    .is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
                Err(_) => false,
            }
        }
        Some(_) => true,
        None => false,
    }
}

/// The step the run's `summary.json` reports, once the run has ended: `Ok(None)` while there
/// is none, `Err` (naming the file) for one that does not match its sum.
fn finished_step(run_dir: &Path) -> Result<Option<u64>, String> {
    // Read as plain JSON: a summary's NaN values are written as `null`.
    let Some(bytes) = super::summary::read_verified(run_dir)? else {
        return Ok(None);
    };
    Ok(serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("iterations")?.as_u64()))
}

/// Calls `evaluate(generation_dir, step)` for the run's checkpoints in step order, each step at
/// most once, starting with what is already there, and returns the steps evaluated. Returns
/// when the run has ended (its summary names a step that has been evaluated, or its process is
/// gone) and nothing newer is left. A checkpoint that the run removes before its evaluation
/// could read it is reported on stderr and skipped. Errors of `evaluate` other than vanished
/// files end the watch.
pub fn watch_checkpoints(
    run_dir: &Path,
    opts: &WatchOptions,
    mut evaluate: impl FnMut(&Path, u64) -> Result<(), EvalError>,
) -> Result<Vec<u64>, RunError> {
    if !run_dir.join("config.toml").is_file() {
        return Err(RunError::Usage(format!(
            "--watch {}: not a run directory (no config.toml)",
            run_dir.display()
        )));
    }
    let mut done: Vec<u64> = Vec::new();
    let mut last_new = Instant::now();
    let mut warned = false;
    loop {
        let last = done.last().copied();
        let fresh: Vec<(u64, PathBuf)> = complete_generations(run_dir)
            .into_iter()
            .filter(|(step, _)| last.is_none_or(|l| *step > l))
            .collect();
        let todo: Vec<(u64, PathBuf)> = if opts.every_checkpoint {
            fresh
        } else {
            fresh.into_iter().last().into_iter().collect()
        };
        for (step, dir) in todo {
            last_new = Instant::now();
            match evaluate(&dir, step) {
                Ok(()) => done.push(step),
                Err(e) if !dir.exists() => {
                    eprintln!(
                        "checkpoint at step {step} was replaced before it could be read: {e}"
                    );
                }
                Err(e) => {
                    return Err(RunError::Failed {
                        context: format!("evaluating the checkpoint at step {step}"),
                        source: e,
                    });
                }
            }
        }
        let newest = complete_generations(run_dir).last().map(|(s, _)| *s);
        let caught_up = newest.is_none_or(|n| done.last().is_some_and(|&d| d >= n));
        if caught_up {
            let finished = finished_step(run_dir).unwrap_or_else(|reason| {
                if !warned {
                    eprintln!("warning: {reason}; the run counts as not finished");
                    warned = true;
                }
                None
            });
            let ended =
                finished.is_some_and(|f| done.last() == Some(&f)) || !trainer_alive(run_dir);
            if ended {
                return Ok(done);
            }
        }
        if opts
            .idle_timeout
            .is_some_and(|t| last_new.elapsed().as_secs_f64() > t)
        {
            return Ok(done);
        }
        let poll = Duration::try_from_secs_f64(opts.poll_seconds).unwrap_or(Duration::from_secs(5));
        // Slept in slices so that Ctrl-C (the interrupt flag) ends the watch within 0.1 s.
        let until = Instant::now() + poll.max(Duration::from_millis(10));
        let stop = crate::run::external_interrupt_flag();
        while Instant::now() < until {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(done);
            }
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::LOCK_FILE;

    #[test]
    fn a_summary_with_null_values_still_names_its_step() {
        let dir = std::env::temp_dir().join(format!("armac-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = r#"{"iterations": 12, "nash_conv": null, "seconds": 1.0}"#;
        std::fs::write(dir.join("summary.json"), text).unwrap();
        let sum = crate::util::FileSum::of(text.as_bytes());
        std::fs::write(
            dir.join(super::super::summary::SUMMARY_SUM),
            serde_json::to_vec(&sum).unwrap(),
        )
        .unwrap();
        assert_eq!(finished_step(&dir), Ok(Some(12)));
        // Not the bytes its sum records: named, no step.
        std::fs::write(dir.join("summary.json"), text.replace("12", "13")).unwrap();
        let err = finished_step(&dir).unwrap_err();
        assert!(err.contains("summary.json"), "{err}");
        // The run's own summary type reads it back too (NaN for null).
        let s: crate::run::RunSummary = serde_json::from_str(
            r#"{"run_dir": "x", "game": "g", "algorithm": "armac", "iterations": 12,
                "nash_conv": null, "seconds": 1.0, "stopped_early": false}"#,
        )
        .unwrap();
        assert!(s.nash_conv.is_nan());
        // No lock file: no trainer.
        assert!(!trainer_alive(&dir));
        std::fs::write(dir.join(LOCK_FILE), format!("{}\n", std::process::id())).unwrap();
        assert!(trainer_alive(&dir), "this process is alive");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
