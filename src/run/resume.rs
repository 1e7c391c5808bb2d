//! Resuming a run: which config keys may change on resume, and how the logs (metrics.csv,
//! TensorBoard event files) are cut back to the checkpoint so that a resumed run's curves equal
//! an uninterrupted one's. Nothing here runs before the whole checkpoint has been validated.

use super::config::Config;
use super::generation::Generation;
use super::{MetricsCsv, RunError};
use crate::util::remove_temporaries;
use std::path::Path;

/// Config keys that may change when a run is resumed: budgets, schedules and threads. Any
/// other difference would change what the checkpoint means and is refused.
pub const SAFE_KEYS: &[&str] = &[
    "solver.iterations",
    "armac.epochs",
    "armac.actors",
    "armac.snapshot_memory_mb",
    "armac.exact_eval",
    // Where the learner reads reservoir rows from: the same rows either way.
    "armac.device_memory",
    "sog.rounds",
    "sog.exact_eval",
    "sog.selfplay.actors",
    "sog.selfplay.solvers",
    "sog.selfplay.sync_every",
    "eval.every",
    "checkpoint.every_seconds",
    "checkpoint.every_epochs",
    // The broker may move to another host; the run's stream and keys go with it.
    "cluster.broker",
];

/// Leaf keys (`a.b.c`) of a TOML value with their values.
fn leaves(prefix: &str, v: &toml::Value, out: &mut std::collections::BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&key, v, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The keys whose values differ between `old` and `new` (present in one only counts).
pub fn changed_keys(old: &Config, new: &Config) -> Vec<String> {
    let flat = |c: &Config| {
        let mut out = std::collections::BTreeMap::new();
        let v = toml::Value::try_from(c).expect("config serialises");
        leaves("", &v, &mut out);
        out
    };
    let (a, b) = (flat(old), flat(new));
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Checks a resume's config against the checkpoint's: only [`SAFE_KEYS`] may differ.
/// Returns the changed (safe) keys.
pub fn check_config(checkpoint: &Config, resumed: &Config) -> Result<Vec<String>, RunError> {
    let changed = changed_keys(checkpoint, resumed);
    if let Some(bad) = changed.iter().find(|k| !SAFE_KEYS.contains(&k.as_str())) {
        return Err(RunError::Usage(format!(
            "--set {bad} would change the meaning of the resumed run; on resume only {} may \
             change (start a new run for other settings)",
            SAFE_KEYS.join(", ")
        )));
    }
    Ok(changed)
}

/// The step (iteration or epoch) a config runs to.
pub fn target_step(config: &Config) -> u64 {
    match (&config.solver, &config.armac, &config.sog) {
        (Some(s), _, _) => s.iterations,
        (None, Some(a), _) => a.epochs,
        (None, None, Some(g)) => g.rounds,
        _ => 0,
    }
}

/// Loads the config saved with `generation` (its `config.toml`).
pub fn generation_config(generation: &Generation) -> Result<Config, RunError> {
    let path = generation.dir.join("config.toml");
    Ok(Config::load(&path.display().to_string(), &[])?.0)
}

/// Checks, before a resume changes anything, that the logs it cuts back or appends to
/// (`metrics.csv`, the TensorBoard event files, `resumes.log`) are, where present, regular
/// files of at most [`crate::util::MAX_LOG_BYTES`]: a link, FIFO or device there, or a log
/// too large to read, is refused naming it.
pub fn check_logs(dir: &Path) -> Result<(), RunError> {
    let mut paths = vec![dir.join("metrics.csv"), dir.join("resumes.log")];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with("events.out.tfevents.")
        {
            paths.push(e.path());
        }
    }
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let why = match crate::util::irregular(&meta) {
            Some(why) => why.to_string(),
            None if meta.len() > crate::util::MAX_LOG_BYTES => format!(
                "has {} bytes, more than the {} a run's log may have",
                meta.len(),
                crate::util::MAX_LOG_BYTES
            ),
            None => continue,
        };
        return Err(RunError::Usage(format!(
            "cannot resume {}: {} {why}",
            dir.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Commits a validated resume to the run directory: removes incomplete generations and stray
/// temporaries, cuts metrics.csv and the TensorBoard event files back to `step`, and records the
/// resumed config (with its allowed changes) in `config.toml` and `resumes.log`.
pub fn commit_resume(
    dir: &Path,
    generation: &Generation,
    config: &Config,
    changed: &[String],
    metrics_header: &[&str],
) -> Result<(MetricsCsv, Option<u64>), RunError> {
    let io = |what: &str| {
        let what = what.to_string();
        let path = dir.display().to_string();
        move |source| RunError::Io { what, path, source }
    };
    generation
        .tidy(dir)
        .map_err(RunError::context("tidying the checkpoints"))?;
    remove_temporaries(dir);
    let step = generation.manifest.step;
    let (metrics, last_row) = MetricsCsv::resume(&dir.join("metrics.csv"), metrics_header, step)
        .map_err(io("metrics"))?;
    truncate_events(dir, step).map_err(io("TensorBoard events"))?;
    crate::util::write_atomic(&dir.join("config.toml"), config.to_toml().as_bytes())
        .map_err(io("config"))?;
    if !changed.is_empty() {
        use std::io::Write;
        let mut log =
            crate::util::append_regular(&dir.join("resumes.log")).map_err(io("resumes.log"))?;
        let pairs: Vec<String> = changed
            .iter()
            .map(|k| {
                let mut flat = std::collections::BTreeMap::new();
                leaves(
                    "",
                    &toml::Value::try_from(config).expect("config serialises"),
                    &mut flat,
                );
                format!("{k}={}", flat.get(k).cloned().unwrap_or_default())
            })
            .collect();
        writeln!(log, "resumed at step {step} with {}", pairs.join(" "))
            .map_err(io("resumes.log"))?;
    }
    Ok((metrics, last_row))
}

/// Reads one TFRecord (`u64` length, `u32` CRC, data, `u32` CRC) at `pos`; `None` when the rest
/// is too short (a record torn by a stop during a write).
fn record_at(bytes: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let len = u64::from_le_bytes(bytes.get(pos..pos + 8)?.try_into().ok()?) as usize;
    let start = pos + 12;
    let end = start.checked_add(len)?;
    bytes.get(start..end)?;
    bytes.get(end..end + 4)?;
    Some((&bytes[start..end], end + 4))
}

/// The `step` field (number 2, varint) of a serialised `Event`, or 0 when absent.
fn event_step(mut data: &[u8]) -> Option<u64> {
    fn varint(d: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = d.split_first()?;
            *d = rest;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let mut step = 0;
    while !data.is_empty() {
        let key = varint(&mut data)?;
        match key & 7 {
            0 => {
                let v = varint(&mut data)?;
                if key >> 3 == 2 {
                    step = v;
                }
            }
            1 => data = data.get(8..)?,
            2 => {
                let n = varint(&mut data)? as usize;
                data = data.get(n..)?;
            }
            5 => data = data.get(4..)?,
            _ => return None,
        }
    }
    Some(step)
}

/// Rewrites every TensorBoard event file in `dir` without the events logged after `step` (and
/// without a torn last record), so the resumed run's points replace them instead of doubling.
/// An event file that is no regular file or is over [`crate::util::MAX_LOG_BYTES`] is
/// refused, named, unread.
pub fn truncate_events(dir: &Path, step: u64) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("events.out.tfevents.") {
            continue;
        }
        let bytes = crate::util::read_regular_named(&e.path(), crate::util::MAX_LOG_BYTES)?;
        let mut kept = Vec::with_capacity(bytes.len());
        let mut pos = 0;
        while let Some((data, next)) = record_at(&bytes, pos) {
            if event_step(data).is_some_and(|s| s <= step) {
                kept.extend_from_slice(&bytes[pos..next]);
            }
            pos = next;
        }
        if kept.len() != bytes.len() {
            crate::util::write_atomic(&e.path(), &kept)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::from_table(text.parse().unwrap(), "test").unwrap()
    }

    #[test]
    fn only_safe_keys_may_change() {
        let base = "game = \"kuhn_poker\"\n[solver]\nalgorithm = \"cfr\"\niterations = 10\n";
        let old = config(base);
        let more = config(&base.replace("10", "50"));
        assert_eq!(
            check_config(&old, &more).unwrap(),
            vec!["solver.iterations"]
        );
        let other = config(&base.replace("\"cfr\"", "\"cfr_plus\""));
        let e = check_config(&old, &other).unwrap_err().to_string();
        assert!(e.contains("solver.algorithm"), "{e}");
        let seeded = config(&format!("seed = 3\n{base}"));
        let e = check_config(&old, &seeded).unwrap_err().to_string();
        assert!(e.contains("--set seed "), "{e}");
    }

    /// One TFRecord holding an `Event` with `step` (CRCs are not checked by the filter).
    fn record(step: u64, tag: u8) -> Vec<u8> {
        let data = vec![0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, step as u8, 0x2a, 1, tag];
        let mut r = (data.len() as u64).to_le_bytes().to_vec();
        r.extend_from_slice(&[0; 4]);
        r.extend_from_slice(&data);
        r.extend_from_slice(&[0; 4]);
        r
    }

    #[test]
    fn event_files_are_cut_back_to_the_checkpoint() {
        let dir = std::env::temp_dir().join(format!("armac-tb-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.out.tfevents.1.host.2.0");
        let mut bytes: Vec<u8> = [0, 5, 10, 15, 20]
            .iter()
            .flat_map(|&s| record(s, 7))
            .collect();
        bytes.extend_from_slice(&record(25, 7)[..9]); // torn
        std::fs::write(&path, &bytes).unwrap();
        truncate_events(&dir, 10).unwrap();
        let want: Vec<u8> = [0, 5, 10].iter().flat_map(|&s| record(s, 7)).collect();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        std::fs::remove_dir_all(&dir).ok();
    }
}
