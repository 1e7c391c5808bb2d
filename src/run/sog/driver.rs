//! The round loop shared by the Student of Games trainers (`run::sog` for the games whose
//! whole tree fits, `run::sog::holdem` for `universal_poker`): rounds until `sog.rounds`, the
//! deadline or an interrupt, the progress bar, the checkpoint cadence
//! (`sog.checkpoint.every` rounds, `sog.checkpoint.every_seconds`, and the first round of a
//! process), the final checkpoint and `summary.json`. A trainer supplies its round (the
//! phases and the counters) and its record of it (TensorBoard, `metrics.csv`) through
//! [`SogRounds`]; the checkpoint files common to both trainers are written by
//! [`save_generation`].

use super::super::config::Config;
use super::super::generation::GenerationWriter;
use super::super::tensorboard::TbWriter;
use super::super::{Deadline, RunError, RunSummary, TrainOptions, io_err};
use crate::nn::cvpn::Cvpn;
use crate::rl::sog::SogSettings;
use crate::util::write_atomic;
use indicatif::ProgressBar;
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The directory of the CVPN inside a checkpoint generation.
pub const CVPN_DIR: &str = "cvpn";

/// A trainer driven by [`drive`].
pub(crate) trait SogRounds {
    /// What [`SogRounds::play`] hands [`SogRounds::record`].
    type Out;
    /// The last completed round.
    fn round(&self) -> u64;
    /// Training seconds of the run before this process.
    fn elapsed_seconds(&self) -> f64;
    /// Stores the run's training seconds in the counters (before a checkpoint).
    fn set_elapsed_seconds(&mut self, seconds: f64);
    /// Plays round `round` (its phases) and adds it to the counters, whose round becomes
    /// `round`. `stop` is asked between the round's games, solves and learner steps; once it
    /// returns true the round is abandoned with [`RunError::Stopped`], leaving the state
    /// part-updated (never checkpointed).
    fn play(&mut self, round: u64, stop: &(dyn Fn() -> bool + Sync))
    -> Result<Self::Out, RunError>;
    /// Records round `round`, ended `seconds` into the run (TensorBoard, metrics, bar message).
    fn record(
        &mut self,
        round: u64,
        out: Self::Out,
        seconds: f64,
        bar: &ProgressBar,
    ) -> Result<(), RunError>;
    /// Writes a checkpoint of the current state.
    fn checkpoint(&mut self) -> Result<(), RunError>;
    /// The NashConv the summary reports, once the loop has ended and the final checkpoint
    /// is written.
    fn final_nash_conv(&mut self) -> Result<f64, RunError>;
}

/// Runs the rounds of `r` until `s.rounds` (or the deadline of `opts`, or an interrupt),
/// checkpointing on the cadence of `s`, then writes the final checkpoint and
/// `summary.json` of the run in `dir` on `game` (its load string).
pub(crate) fn drive<R: SogRounds>(
    r: &mut R,
    s: &SogSettings,
    dir: &Path,
    game: String,
    opts: &TrainOptions,
) -> Result<RunSummary, RunError> {
    let interrupted = crate::run::interrupt_flag();
    let deadline = Deadline::of(opts);
    let bar = super::super::progress_bar(s.rounds, "rounds");
    if opts.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_position(r.round());
    let elapsed_before = r.elapsed_seconds();
    let first_round = r.round();
    let stop = || deadline.expired() || interrupted.load(Ordering::Relaxed);
    // When a stop was first seen inside a unit of work.
    let seen = std::sync::OnceLock::new();
    // A new run commits its round-0 state first, so that a stop inside the first round has
    // a checkpoint to resume from.
    if !super::super::generation::Generation::exists(dir) {
        r.set_elapsed_seconds(elapsed_before);
        r.checkpoint()?;
    }
    let mut committed = r.round();
    let mut last_ckpt = Instant::now();
    let mut stopped_early = false;
    while r.round() < s.rounds {
        if stop() {
            stopped_early = true;
            break;
        }
        let round = r.round() + 1;
        // A stop abandons the unit under way only once STOP_GRACE has passed since it
        // was first seen: a unit that ends sooner is kept (the run then stops after it).
        let inside =
            || stop() && seen.get_or_init(Instant::now).elapsed() >= crate::run::STOP_GRACE;
        let out = match r.play(round, &inside) {
            Err(RunError::Stopped) => {
                bar.finish_and_clear();
                let at = crate::run::summary::AbandonedAt {
                    unit: "round",
                    attempt: round,
                    committed,
                    seconds: elapsed_before + deadline.elapsed(),
                    cpu_seconds: deadline.cpu_seconds(),
                };
                return at.finish(dir, game, "sog".into(), opts.quiet);
            }
            out => out?,
        };
        bar.inc(1);
        let seconds = elapsed_before + deadline.elapsed();
        r.record(round, out, seconds, &bar)?;
        if round == first_round + 1
            || round.is_multiple_of(s.checkpoint_every)
            || last_ckpt.elapsed().as_secs_f64() >= s.checkpoint_seconds
        {
            r.set_elapsed_seconds(seconds);
            r.checkpoint()?;
            committed = round;
            last_ckpt = Instant::now();
        }
    }
    bar.finish_and_clear();
    let seconds = elapsed_before + deadline.elapsed();
    r.set_elapsed_seconds(seconds);
    r.checkpoint()?;
    let nash_conv = r.final_nash_conv()?;
    let summary = RunSummary {
        run_dir: dir.to_path_buf(),
        game,
        algorithm: "sog".into(),
        iterations: r.round(),
        nash_conv,
        seconds,
        stopped_early,
        acting_steps_per_second: None,
        peak_memory_mb: crate::util::peak_memory_mb(),
        cpu_seconds: Some(deadline.cpu_seconds()),
        budget: None,
    };
    crate::run::summary::write_summary(dir, &summary).map_err(io_err("summary", dir))?;
    Ok(summary)
}

/// Commits checkpoint generation `round` in `dir`: the CVPN `net` (with Adam's state), the
/// counters `state` as pretty JSON in `state_file`, the run's config, then `files` in order.
pub(crate) fn save_generation(
    dir: &Path,
    round: u64,
    net: &Cvpn,
    state_file: &str,
    state: &impl Serialize,
    config: &Config,
    files: &[(&str, &[u8])],
) -> Result<(), RunError> {
    let ctx = || RunError::context("writing a checkpoint");
    let mut generation = GenerationWriter::begin(dir, round).map_err(ctx())?;
    net.save(&generation.dir().join(CVPN_DIR))
        .map_err(RunError::context("saving the CVPN"))?;
    generation.record(CVPN_DIR).map_err(ctx())?;
    generation
        .add(
            state_file,
            serde_json::to_string_pretty(state)
                .expect("state serialises")
                .as_bytes(),
        )
        .map_err(ctx())?;
    generation
        .add("config.toml", config.to_toml().as_bytes())
        .map_err(ctx())?;
    for (name, bytes) in files {
        generation.add(name, bytes).map_err(ctx())?;
    }
    generation
        .commit()
        .map_err(RunError::context("committing a checkpoint"))?;
    Ok(())
}

/// The start of a fresh run in `dir`: its `config.toml`, a new CVPN and `metrics.csv` with
/// `header`.
pub(crate) fn start_fresh(
    dir: &Path,
    config: &Config,
    net_cfg: &crate::nn::cvpn::CvpnConfig,
    device: &crate::nn::Device,
    s: &SogSettings,
    header: &[&str],
) -> Result<(Cvpn, super::super::MetricsCsv), RunError> {
    write_atomic(&dir.join("config.toml"), config.to_toml().as_bytes())
        .map_err(io_err("config", dir))?;
    let net = Cvpn::new(net_cfg.clone(), device, s.learning_rate, s.seed)
        .map_err(RunError::context("creating the CVPN"))?;
    let metrics_path = dir.join("metrics.csv");
    let metrics = super::super::MetricsCsv::create(&metrics_path, header)
        .map_err(io_err("metrics", &metrics_path))?;
    Ok((net, metrics))
}

/// The CVPN of a checkpoint generation directory `gen_dir`.
pub(crate) fn load_net(
    gen_dir: &Path,
    net_cfg: &crate::nn::cvpn::CvpnConfig,
    device: &crate::nn::Device,
    s: &SogSettings,
) -> Result<Cvpn, RunError> {
    Cvpn::load(&gen_dir.join(CVPN_DIR), net_cfg, device, s.learning_rate)
        .map_err(RunError::context("loading the CVPN checkpoint"))
}

/// How much each phase of a round did and how long it took.
pub(crate) struct PhaseRates {
    pub searches: u64,
    pub solved: u64,
    pub steps: usize,
    pub play_secs: f64,
    pub solve_secs: f64,
    pub learn_secs: f64,
}

/// The TensorBoard scalars of round `it` both trainers log: the sizes of the query buffer
/// (and what it dropped) and of the replay, then the rate of each phase.
pub(crate) fn log_buffers_and_rates(
    tb: &mut TbWriter,
    it: u64,
    [buffer, dropped, replay]: [f64; 3],
    r: &PhaseRates,
) {
    tb.scalar("queries/buffer", buffer, it);
    tb.scalar("queries/dropped", dropped, it);
    tb.scalar("replay", replay, it);
    tb.scalar(
        "searches_per_second",
        r.searches as f64 / r.play_secs.max(1e-9),
        it,
    );
    tb.scalar(
        "queries_solved_per_second",
        r.solved as f64 / r.solve_secs.max(1e-9),
        it,
    );
    tb.scalar(
        "learner_steps_per_second",
        r.steps as f64 / r.learn_secs.max(1e-9),
        it,
    );
}
