//! `summary.json`, written when a run ends, and its sum `summary.sum.json` (length and FNV-1a
//! hash, as a generation's manifest records its files). Readers (`--resume`, which stops at a
//! finished run, and `armac-eval lbr --watch`, which stops at the summary's step) trust a
//! summary only when it matches its sum: one that does not (damaged, or its sum missing) is
//! reported on stderr, naming the file, and the run counts as not finished.

use super::RunSummary;
use crate::util::{FileSum, read_regular_named, write_all_atomic};
use std::path::Path;

/// The summary of a run directory.
pub const SUMMARY: &str = "summary.json";
/// The sum of [`SUMMARY`].
pub const SUMMARY_SUM: &str = "summary.sum.json";

/// Most bytes a summary or its sum may have (both are a few hundred bytes).
const MAX_SUMMARY_BYTES: u64 = 1 << 20;

/// Writes `summary` to `dir/summary.json` and its sum beside it, each atomically (a crash
/// between the two leaves a summary that does not match its sum: a run not finished).
pub fn write_summary(dir: &Path, summary: &RunSummary) -> std::io::Result<()> {
    let bytes = serde_json::to_string_pretty(summary)
        .expect("summary serialises")
        .into_bytes();
    let sum = serde_json::to_vec_pretty(&FileSum::of(&bytes)).expect("sum serialises");
    write_all_atomic(&[(dir.join(SUMMARY), bytes), (dir.join(SUMMARY_SUM), sum)])
        .map_err(Into::into)
}

/// The bytes of `dir`'s summary once they match its sum: `Ok(None)` with no summary, `Err`
/// with a one-line reason naming the file when the summary is there but does not verify.
pub fn read_verified(dir: &Path) -> Result<Option<Vec<u8>>, String> {
    let path = dir.join(SUMMARY);
    let bytes = match read_regular_named(&path, MAX_SUMMARY_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Err(e.to_string()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let sum_path = dir.join(SUMMARY_SUM);
    let recorded: FileSum = read_regular_named(&sum_path, MAX_SUMMARY_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| {
            format!(
                "{} is not verified: its sum {} is unusable ({e})",
                path.display(),
                sum_path.display()
            )
        })?;
    let got = FileSum::of(&bytes);
    if got != recorded {
        return Err(format!(
            "{} does not match its sum in {} ({} bytes with hash {}, {} bytes with hash {} \
             recorded: truncated or modified)",
            path.display(),
            sum_path.display(),
            got.len,
            got.fnv1a,
            recorded.len,
            recorded.fnv1a
        ));
    }
    Ok(Some(bytes))
}

/// The run's summary if it verifies, parses and reports step `step`: the run finished there.
/// A summary that does not verify is reported on stderr (one line) and counts as absent.
pub fn finished_at(dir: &Path, step: u64) -> Option<RunSummary> {
    match read_verified(dir) {
        Ok(bytes) => serde_json::from_slice::<RunSummary>(&bytes?)
            .ok()
            .filter(|s| s.iterations == step),
        Err(reason) => {
            eprintln!("warning: {reason}; the run counts as not finished");
            None
        }
    }
}

/// Where a run stopped inside a unit of work (an iteration, a round): the unit abandoned,
/// the last checkpoint's, and the time spent.
pub(crate) struct AbandonedAt {
    /// What a unit is called in the message: `iteration`, `round`.
    pub unit: &'static str,
    pub attempt: u64,
    pub committed: u64,
    pub seconds: f64,
    pub cpu_seconds: f64,
}

impl AbandonedAt {
    /// Says so (unless `quiet`) and writes the summary of the last checkpoint of `algorithm`'s
    /// run on `game` in `dir` (no NashConv: the state in memory was part-updated).
    pub(crate) fn finish(
        &self,
        dir: &Path,
        game: String,
        algorithm: String,
        quiet: bool,
    ) -> Result<RunSummary, super::RunError> {
        if !quiet {
            eprintln!(
                "stopped inside {unit} {}: its partial work is not kept; the run resumes from \
                 {unit} {} (its last checkpoint)",
                self.attempt,
                self.committed,
                unit = self.unit
            );
        }
        let summary = RunSummary {
            run_dir: dir.to_path_buf(),
            game,
            algorithm,
            iterations: self.committed,
            nash_conv: f64::NAN,
            seconds: self.seconds,
            stopped_early: true,
            acting_steps_per_second: None,
            peak_memory_mb: crate::util::peak_memory_mb(),
            cpu_seconds: Some(self.cpu_seconds),
            budget: None,
        };
        write_summary(dir, &summary).map_err(super::io_err("summary", &dir.join(SUMMARY)))?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(iterations: u64) -> RunSummary {
        RunSummary {
            run_dir: "x".into(),
            game: "kuhn_poker".into(),
            algorithm: "cfr".into(),
            iterations,
            nash_conv: f64::NAN,
            seconds: 1.0,
            stopped_early: false,
            acting_steps_per_second: None,
            peak_memory_mb: None,
            cpu_seconds: None,
            budget: Some(crate::run::Budget {
                nodes_touched: Some(7),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_summary_counts_only_while_it_matches_its_sum() {
        let dir = std::env::temp_dir().join(format!("armac-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read_verified(&dir), Ok(None), "no summary yet");
        write_summary(&dir, &summary(12)).unwrap();
        assert_eq!(finished_at(&dir, 12).map(|s| s.iterations), Some(12));
        assert!(finished_at(&dir, 13).is_none(), "another step");
        // One byte changed: named, not finished.
        let path = dir.join(SUMMARY);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        let at = bad.iter().position(|&b| b == b'2').unwrap();
        bad[at] = b'3';
        std::fs::write(&path, &bad).unwrap();
        let err = read_verified(&dir).unwrap_err();
        assert!(
            err.contains("summary.json") && err.contains("modified"),
            "{err}"
        );
        assert!(finished_at(&dir, 13).is_none());
        // The sum missing: named, not finished.
        std::fs::write(&path, &good).unwrap();
        std::fs::remove_file(dir.join(SUMMARY_SUM)).unwrap();
        let err = read_verified(&dir).unwrap_err();
        assert!(err.contains(SUMMARY_SUM), "{err}");
        assert!(finished_at(&dir, 12).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
