//! `armac-bench reservoir`: an ARMAC run resumed from a synthetic reservoir of past networks
//! (see [`crate::run::armac::write_synthetic_run`]), reporting peak memory, the run
//! directory's size and acting steps per second. `scripts/bench_reservoir.sh` runs it with a
//! full reservoir (1,024 networks) and a small one (8) and prints the ratios.

use super::Result;
use crate::run::{TrainOptions, config::Config};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Arguments of `armac-bench reservoir`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReservoirArgs {
    /// ARMAC config (path, or name in `configs/`).
    #[arg(long, default_value = "nlhe_fcpa_recurrent.toml")]
    pub config: String,
    /// Past epochs in the synthetic reservoir (also its capacity).
    #[arg(long, default_value_t = 1024)]
    pub snapshots: u64,
    /// Seconds of training after the resume.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Run directory (must not exist, or be empty); a fresh temporary one when absent. It is
    /// removed at the end unless `--keep` is given.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the run directory.
    #[arg(long)]
    pub keep: bool,
    /// Further config overrides (`key=value`).
    #[arg(long = "set")]
    pub set: Vec<String>,
}

/// Runs `armac-bench reservoir` (see [`ReservoirArgs`]): one JSON line.
pub fn reservoir(args: &ReservoirArgs) -> Result<Vec<Value>> {
    if args.snapshots == 0 {
        return Err("--snapshots must be at least 1".into());
    }
    let mut sets = vec![format!("armac.reservoir_capacity={}", args.snapshots)];
    sets.extend(args.set.iter().cloned());
    let (config, _) = Config::load(&args.config, &sets)?;
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "armac-bench-reservoir-{}-{}",
            std::process::id(),
            args.snapshots
        )),
    };
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        return Err(format!("{} is not empty", dir.display()).into());
    }
    let t0 = std::time::Instant::now();
    crate::run::armac::write_synthetic_run(&config, &dir, args.snapshots)?;
    let write_seconds = t0.elapsed().as_secs_f64();
    let disk_before = crate::util::dir_size(&dir);
    let opts = TrainOptions {
        out: Some(dir.clone()),
        max_seconds: Some(args.seconds),
        max_cpu_seconds: None,
        resume: true,
        quiet: true,
        overwrite: false,
    };
    let summary = crate::run::train(None, &[], &opts)?;
    let disk_after = crate::util::dir_size(&dir);
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(vec![json!({
        "bench": "reservoir",
        "config": args.config,
        "snapshots": args.snapshots,
        "seconds": summary.seconds,
        "epochs_trained": summary.iterations.saturating_sub(args.snapshots),
        "acting_steps_per_second": summary.acting_steps_per_second,
        "peak_rss_mb": summary.peak_memory_mb,
        "disk_mb_at_start": disk_before as f64 / 1048576.0,
        "disk_mb_at_end": disk_after as f64 / 1048576.0,
        "write_seconds": write_seconds,
    })])
}
