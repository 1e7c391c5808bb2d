//! The driver of tabular runs: compile the game, iterate a CFR-family solver, evaluate NashConv
//! on schedule, log to TensorBoard / CSV / progress bar, checkpoint, export the average policy.

use super::checkpoint::{self, SolverHeader};
use super::config::Config;
use super::generation::GenerationWriter;
use super::metrics::{Column, MetricsRow};
use super::solvers::TabularSettings;
use super::tensorboard::TbWriter;
use super::{Deadline, MetricsCsv, RunError, RunSummary, TrainOptions};
use crate::cfr::TreeSolver;
use crate::eval::nash_conv;
use crate::game::Game;
use crate::games::load_game;
use crate::policy::TabularPolicy;
use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use crate::util::write_atomic;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// One row of a tabular run's `metrics.csv`: exact NashConv of the average and the current
/// policy, the average policy's best-response and on-policy values, and the nodes the solver
/// has touched so far.
struct TabularRow {
    iteration: u64,
    seconds: f64,
    nash_conv: f64,
    nash_conv_current: f64,
    br_values: [f64; 2],
    value_p0: f64,
    nodes_touched: u64,
}

impl MetricsRow for TabularRow {
    const COLUMNS: &'static [Column<Self>] = &[
        Column::new("iteration", |r| r.iteration.to_string()),
        Column::new("seconds", |r| format!("{:.3}", r.seconds)),
        Column::new("nash_conv", |r| format!("{:.12e}", r.nash_conv)),
        Column::new("nash_conv_current", |r| {
            format!("{:.12e}", r.nash_conv_current)
        }),
        Column::new("br_value_p0", |r| format!("{:.12e}", r.br_values[0])),
        Column::new("br_value_p1", |r| format!("{:.12e}", r.br_values[1])),
        Column::new("value_p0", |r| format!("{:.12e}", r.value_p0)),
        Column::new("nodes_touched", |r| r.nodes_touched.to_string()),
    ];
}

/// The solver state's file inside a checkpoint generation.
pub const CHECKPOINT_FILE: &str = "checkpoint.bin";
/// Seconds to the first checkpoint of a run (or of a resumed run), when the configured
/// cadence is longer.
pub const FIRST_CHECKPOINT_SECONDS: f64 = 5.0;

/// Converts tree arrays into an OpenSpiel-compatible policy table. Infosets that share an
/// OpenSpiel string (universal_poker boards dealt in other rounds, see [`crate::tree`]) give
/// one entry, the last one's row: OpenSpiel's table cannot tell them apart.
pub fn to_tabular_policy(tree: &PublicTree, game: &dyn Game, policy: &TreePolicy) -> TabularPolicy {
    let mut out = TabularPolicy::new(&game.load_string());
    for (p, flat) in policy.iter().enumerate() {
        let inf = &tree.infosets[p];
        for i in 0..inf.len() {
            let entry = inf.range(i).map(|k| (inf.actions[k], flat[k])).collect();
            out.table.insert(inf.key[i].clone(), entry);
        }
    }
    out
}

/// The error of an I/O step `what` on `p`.
fn io(what: &str, p: &Path) -> impl FnOnce(std::io::Error) -> RunError {
    let path = p.display().to_string();
    let what = what.to_string();
    move |source| RunError::Io { what, path, source }
}

/// Restores `solver` from the checkpoint of `resumed` and commits the resume: the seconds
/// the run trained before, the iteration of the last NashConv row (when it is the
/// checkpoint's), and the reopened `metrics.csv`.
fn restore(
    solver: &mut dyn TreeSolver,
    resumed: &super::Resumed,
    game: &dyn Game,
    settings: &TabularSettings,
    config: &Config,
    dir: &Path,
) -> Result<(f64, Option<u64>, MetricsCsv), RunError> {
    let ckpt_path = resumed.generation.dir.join(CHECKPOINT_FILE);
    let (header, state) = checkpoint::load_solver(&ckpt_path)?;
    if header.game != game.load_string() || header.solver != settings.fingerprint {
        return Err(RunError::Checkpoint(
            checkpoint::CheckpointError::Mismatch {
                path: ckpt_path.display().to_string(),
                reason: format!(
                    "it holds {} with solver {}, the config asks for {} with solver {}",
                    header.game,
                    header.solver,
                    game.load_string(),
                    settings.fingerprint
                ),
            },
        ));
    }
    if header.iteration != resumed.generation.manifest.step {
        return Err(RunError::Checkpoint(checkpoint::CheckpointError::Corrupt {
            path: ckpt_path.display().to_string(),
            reason: "its iteration differs from the generation's manifest".into(),
        }));
    }
    solver.restore(state).map_err(|reason| {
        RunError::Checkpoint(checkpoint::CheckpointError::Mismatch {
            path: ckpt_path.display().to_string(),
            reason,
        })
    })?;
    // Everything loaded: only now does the run directory change.
    let (metrics, last_row) = super::resume::commit_resume(
        dir,
        &resumed.generation,
        config,
        &resumed.changed,
        &TabularRow::header(),
    )?;
    let last_eval = if last_row == Some(header.iteration) {
        last_row
    } else {
        None
    };
    Ok((header.elapsed_seconds, last_eval, metrics))
}

/// Commits a checkpoint generation of `solver` (trained `elapsed` seconds) in `dir`.
fn save(
    dir: &Path,
    config: &Config,
    game: &dyn Game,
    settings: &TabularSettings,
    solver: &dyn TreeSolver,
    elapsed: f64,
) -> Result<(), RunError> {
    let header = SolverHeader {
        kind: String::new(),
        game: game.load_string(),
        solver: settings.fingerprint.clone(),
        iteration: solver.iteration(),
        elapsed_seconds: elapsed,
        counters: Vec::new(),
        lengths: Vec::new(),
    };
    let bytes = checkpoint::encode_solver(&header, &solver.snapshot());
    let mut generation = GenerationWriter::begin(dir, solver.iteration())
        .map_err(RunError::context("writing a checkpoint"))?;
    generation
        .add(CHECKPOINT_FILE, &bytes)
        .and_then(|()| generation.add("config.toml", config.to_toml().as_bytes()))
        .map_err(RunError::context("writing a checkpoint"))?;
    generation
        .commit()
        .map_err(RunError::context("committing a checkpoint"))?;
    Ok(())
}

/// NashConv of the average and current policies of `solver`, logged to TensorBoard and
/// `metrics.csv` at `seconds` into the run; returns the average policy's.
fn evaluate(
    tree: &PublicTree,
    solver: &dyn TreeSolver,
    tb: &mut TbWriter,
    metrics: &mut MetricsCsv,
    seconds: f64,
) -> Result<f64, RunError> {
    let it = solver.iteration();
    let avg = nash_conv(tree, &solver.average_policy());
    let cur = nash_conv(tree, &solver.current_policy());
    let touched = solver.nodes_touched();
    tb.scalar("nash_conv", avg.nash_conv, it);
    tb.scalar("exploitability", avg.nash_conv / 2.0, it);
    tb.scalar("nash_conv_current", cur.nash_conv, it);
    tb.scalar("br_value/p0", avg.best_response_values[0], it);
    tb.scalar("br_value/p1", avg.best_response_values[1], it);
    tb.scalar("value/p0", avg.on_policy_values[0], it);
    tb.scalar("nodes_touched", touched as f64, it);
    for (name, value) in solver.scalars() {
        tb.scalar(&name, value, it);
    }
    if seconds > 0.0 {
        tb.scalar("iterations_per_second", it as f64 / seconds, it);
        tb.scalar("nodes_touched_per_second", touched as f64 / seconds, it);
    }
    tb.flush();
    let path = metrics.path().to_path_buf();
    metrics
        .write(&TabularRow {
            iteration: it,
            seconds,
            nash_conv: avg.nash_conv,
            nash_conv_current: cur.nash_conv,
            br_values: avg.best_response_values,
            value_p0: avg.on_policy_values[0],
            nodes_touched: touched,
        })
        .map_err(io("metrics", &path))?;
    Ok(avg.nash_conv)
}

/// Runs (or resumes) a tabular run in `dir`.
pub fn run(
    config: &Config,
    settings: &TabularSettings,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    let game = load_game(&settings.game)?;
    let start = Instant::now();
    let tree = Arc::new(PublicTree::build(game.as_ref())?);
    if !opts.quiet {
        eprintln!(
            "compiled {}: {} histories, {} public nodes, {}+{} infosets in {:.2}s",
            game.load_string(),
            tree.stats.histories,
            tree.stats.public_nodes,
            tree.infosets[0].len(),
            tree.infosets[1].len(),
            start.elapsed().as_secs_f64()
        );
    }
    let mut solver =
        super::solvers::build(&settings.choice, settings.seed, game.as_ref(), tree.clone())?;
    let metrics_path = dir.join("metrics.csv");
    let (elapsed_before, mut last_eval, mut metrics) = if let Some(resumed) = resumed {
        restore(
            solver.as_mut(),
            resumed,
            game.as_ref(),
            settings,
            config,
            dir,
        )?
    } else {
        let config_path = dir.join("config.toml");
        write_atomic(&config_path, config.to_toml().as_bytes())
            .map_err(io("config", &config_path))?;
        let metrics = MetricsCsv::create(&metrics_path, &TabularRow::header())
            .map_err(io("metrics", &metrics_path))?;
        (0.0, None, metrics)
    };
    let mut tb = TbWriter::create(dir).map_err(io("TensorBoard events", dir))?;
    let deadline = Deadline::of(opts);
    let bar = super::progress_bar(settings.iterations, "it");
    if opts.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_position(solver.iteration());
    let mut last_nash_conv = f64::NAN;
    let mut last_ckpt = Instant::now();
    // The first checkpoint comes early (a stop soon after the start loses little), then the
    // configured cadence.
    let mut ckpt_every = settings.checkpoint_seconds.min(FIRST_CHECKPOINT_SECONDS);
    let save = |solver: &dyn TreeSolver, elapsed: f64| {
        save(dir, config, game.as_ref(), settings, solver, elapsed)
    };
    let mut stopped_early = false;
    let interrupted = super::interrupt_flag();
    let stop = || deadline.expired() || interrupted.load(std::sync::atomic::Ordering::Relaxed);
    // When a stop was first seen inside a unit of work.
    let seen = std::sync::OnceLock::new();
    // The iteration of the last checkpoint on disk (a new run has none yet).
    let mut committed = resumed.map(|_| solver.iteration());
    while solver.iteration() < settings.iterations {
        if stop() {
            stopped_early = true;
            break;
        }
        let attempt = solver.iteration() + 1;
        // A stop abandons the unit under way only once STOP_GRACE has passed since it
        // was first seen: a unit that ends sooner is kept (the run then stops after it).
        let inside = || stop() && seen.get_or_init(Instant::now).elapsed() >= super::STOP_GRACE;
        if !solver.iterate_until(&inside) {
            bar.finish_and_clear();
            drop(solver);
            let committed = match committed {
                Some(c) => c,
                None => {
                    // A fresh solver is the state before iteration 1: commit it, so that the
                    // run has a checkpoint to resume from.
                    let fresh = super::solvers::build(
                        &settings.choice,
                        settings.seed,
                        game.as_ref(),
                        tree.clone(),
                    )?;
                    save(fresh.as_ref(), elapsed_before + deadline.elapsed())?;
                    0
                }
            };
            let at = super::summary::AbandonedAt {
                unit: "iteration",
                attempt,
                committed,
                seconds: elapsed_before + deadline.elapsed(),
                cpu_seconds: deadline.cpu_seconds(),
            };
            let algorithm = config.solver.as_ref().map(|s| s.algorithm.clone());
            return at.finish(
                dir,
                game.load_string(),
                algorithm.unwrap_or_default(),
                opts.quiet,
            );
        }
        bar.inc(1);
        let it = solver.iteration();
        if it.is_multiple_of(settings.eval_every) || it == settings.iterations {
            last_nash_conv = evaluate(
                &tree,
                solver.as_ref(),
                &mut tb,
                &mut metrics,
                elapsed_before + deadline.elapsed(),
            )?;
            last_eval = Some(it);
            bar.set_message(format!("NashConv {last_nash_conv:.6}"));
        }
        if last_ckpt.elapsed().as_secs_f64() >= ckpt_every {
            save(solver.as_ref(), elapsed_before + deadline.elapsed())?;
            committed = Some(solver.iteration());
            last_ckpt = Instant::now();
            ckpt_every = settings.checkpoint_seconds;
        }
    }
    if last_eval != Some(solver.iteration()) && solver.iteration() > 0 {
        last_nash_conv = evaluate(
            &tree,
            solver.as_ref(),
            &mut tb,
            &mut metrics,
            elapsed_before + deadline.elapsed(),
        )?;
    }
    bar.finish_and_clear();
    let seconds = elapsed_before + deadline.elapsed();
    save(solver.as_ref(), seconds)?;
    let policy = to_tabular_policy(&tree, game.as_ref(), &solver.average_policy());
    let policy_path = dir.join("policy.json");
    write_atomic(&policy_path, policy.to_json().as_bytes()).map_err(io("policy", &policy_path))?;
    let summary = RunSummary {
        run_dir: dir.to_path_buf(),
        game: game.load_string(),
        algorithm: config
            .solver
            .as_ref()
            .map(|s| s.algorithm.clone())
            .unwrap_or_default(),
        iterations: solver.iteration(),
        nash_conv: last_nash_conv,
        seconds,
        stopped_early,
        acting_steps_per_second: None,
        peak_memory_mb: crate::util::peak_memory_mb(),
        cpu_seconds: Some(deadline.cpu_seconds()),
        budget: Some(super::Budget {
            nodes_touched: Some(solver.nodes_touched()),
            ..Default::default()
        }),
    };
    super::summary::write_summary(dir, &summary)
        .map_err(io("summary", &dir.join(super::summary::SUMMARY)))?;
    Ok(summary)
}
