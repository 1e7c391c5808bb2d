//! The ARMAC driver: turns a config into [`ArmacRun`], owns the run directory (config,
//! metrics, TensorBoard, checkpoint generations, summary), attaches the actors (threads of
//! this process, or `armac-actor` processes through a broker) and drives an
//! [`ArmacTrainer`] epoch by epoch (see [`crate::rl::armac`] for what an epoch does).
//!
//! # Stopping
//! `--max-seconds`, `--max-cpu-seconds` and the first SIGINT, SIGTERM or SIGHUP are checked
//! between epochs, where the run stops at once and checkpoints the epoch it finished, and
//! inside an epoch (between learning steps and between actor messages or groups), where the
//! epoch gets [`super::STOP_GRACE`] to finish. An epoch that does not finish in time is
//! abandoned: nothing of it is checkpointed, and the run resumes from its last committed
//! checkpoint (a new run commits `θ^0` before its first epoch, so there always is one). A
//! resumed lock-step run then repeats the abandoned epoch exactly.
//!
//! # Checkpoints
//! Taken at epoch boundaries, where the data set is empty by construction, so a resumed run
//! continues exactly: learner weights and optimizer, reservoir networks (one file each under
//! `reservoir/`), reservoir sampling state, counters, RNG state and candidate ranking.

use super::config::{ArmacRun, Config};
use super::generation::GenerationWriter;
use super::metrics::{Column, MetricsRow, sci};
use super::tensorboard::TbWriter;
use super::{Deadline, MetricsCsv, RunError, RunSummary, StopRule, TrainOptions, io_err};
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::armac::ArmacPolicyNet;
use crate::rl::armac::checkpoint::{self, Checkpoint};
use crate::rl::armac::diagnostics::DiagnosticsRow;
use crate::rl::armac::policy::ArmacAveragePolicy;
use crate::rl::armac::replay::Replay;
use crate::rl::armac::residency::{
    collect_reservoir, reservoir_path, reservoir_rel, working_set_capacity,
};
use crate::rl::armac::{ArmacTrainer, ResumePoint, ScalarSink, fresh_state, read_state};
use crate::util::{SplitMix64, write_atomic};
use std::path::Path;
use std::time::Instant;

use crate::rl::armac::net_config;

/// The part of a run's config an `armac-actor` needs, read from the config a learner published
/// on its broker (`origin` names it in errors).
pub fn actor_config(
    table: toml::Table,
    origin: &str,
) -> Result<crate::cluster::redis::ActorConfig, Box<dyn std::error::Error + Send + Sync>> {
    let config = Config::from_table(table, origin)?;
    let settings = config.armac()?;
    Ok(crate::cluster::redis::ActorConfig {
        settings,
        cluster: config.cluster,
    })
}

/// One row of an ARMAC run's `metrics.csv`: the epoch's counters, the exact NashConv of the
/// average policy and of `π^t` (NaN between evaluations and on games without one), the four
/// losses and the diagnostics (NaN unless `armac.diagnostics`).
struct ArmacRow {
    epoch: u64,
    seconds: f64,
    cpu_seconds: f64,
    nash_conv: (f64, f64),
    acting_steps: u64,
    learning_steps: u64,
    losses: [f64; 4],
    diag: DiagnosticsRow,
    episodes: u64,
    learning_decisions: u64,
    nodes_touched: u64,
    rows_learned: u64,
}

impl MetricsRow for ArmacRow {
    const COLUMNS: &'static [Column<Self>] = &[
        Column::new("epoch", |r| r.epoch.to_string()),
        Column::new("seconds", |r| format!("{:.3}", r.seconds)),
        Column::new("nash_conv", |r| sci(r.nash_conv.0)),
        Column::new("nash_conv_current", |r| sci(r.nash_conv.1)),
        Column::new("acting_steps", |r| r.acting_steps.to_string()),
        Column::new("learning_steps", |r| r.learning_steps.to_string()),
        Column::new("loss_critic", |r| sci(r.losses[0])),
        Column::new("loss_mean_regret", |r| sci(r.losses[1])),
        Column::new("loss_immediate", |r| sci(r.losses[2])),
        Column::new("loss_policy", |r| sci(r.losses[3])),
        Column::new("diag_policy_change", |r| sci(r.diag.policy_change)),
        Column::new("diag_w_error", |r| sci(r.diag.w_error)),
        Column::new("diag_nash_conv_exact_rm", |r| {
            sci(r.diag.nash_conv_exact_rm)
        }),
        Column::new("diag_nash_conv_exact_avg", |r| {
            sci(r.diag.nash_conv_exact_avg)
        }),
        Column::new("diag_w_sampling_error", |r| sci(r.diag.w_sampling_error)),
        Column::new("diag_w_fit_error", |r| sci(r.diag.w_fit_error)),
        Column::new("diag_critic_rmse", |r| sci(r.diag.critic_rmse)),
        Column::new("diag_critic_wrong_sign", |r| sci(r.diag.critic_wrong_sign)),
        Column::new("diag_critic_wrong_mass", |r| sci(r.diag.critic_wrong_mass)),
        Column::new("diag_critic_drift", |r| sci(r.diag.critic_drift)),
        Column::new("diag_critic_adv_rmse", |r| sci(r.diag.critic_adv_rmse)),
        // The budgets in the papers' units, cumulative (appended: older files keep their rows).
        Column::new("cpu_seconds", |r| format!("{:.3}", r.cpu_seconds)),
        Column::new("episodes", |r| r.episodes.to_string()),
        Column::new("learning_decisions", |r| r.learning_decisions.to_string()),
        Column::new("nodes_touched", |r| r.nodes_touched.to_string()),
        Column::new("rows_learned", |r| r.rows_learned.to_string()),
    ];
}

impl ScalarSink for TbWriter {
    fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        TbWriter::scalar(self, tag, value, step);
    }
}

/// Runs (or resumes) an ARMAC run in `dir`.
pub fn run(
    config: &Config,
    s: &ArmacRun,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    // The learner runs inside its own rayon pool, so the backend's parallel matrix products
    // use `armac.learner_threads` threads; actor threads spawned from it are not pool workers.
    let in_process_actors = config
        .cluster
        .as_ref()
        .is_none_or(|c| c.role != crate::cluster::Role::Learner);
    // Lock-step actors and learner take turns: the learner's pool does not depend on
    // `armac.actors` (it leaves one core, as one concurrent actor would), so neither does
    // the run.
    let actors = match s.schedule {
        crate::rl::armac::choices::Schedule::Lockstep => 1,
        crate::rl::armac::choices::Schedule::Concurrent => s.actors,
    };
    let threads = learner_threads(s.learner_threads, in_process_actors.then_some(actors));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("learner-{i}"))
        .build()
        .map_err(|e| RunError::Usage(format!("armac.learner_threads: {e}")))?;
    pool.install(|| run_in_pool(config, s, dir, opts, resumed))
}

/// Threads of the learner's pool: `configured`, or (0) the cores left by `actors` local actor
/// threads, at least 1.
pub fn learner_threads(configured: usize, actors: Option<usize>) -> usize {
    if configured > 0 {
        return configured;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_sub(actors.unwrap_or(0)).max(1)
}

fn run_in_pool(
    config: &Config,
    s: &ArmacRun,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    let metrics_path = dir.join("metrics.csv");
    let (mut trainer, mut metrics) = open_trainer(config, s, dir, resumed)?;
    let mut tb = TbWriter::create(dir).map_err(io_err("TensorBoard events", dir))?;
    let interrupted = crate::run::interrupt_flag();
    attach_actors(&mut trainer, config, s, dir, opts, resumed.is_some())?;

    let stop = StopRule::new(Deadline::of(opts), interrupted);
    let deadline = *stop.deadline();
    let bar = super::progress_bar(s.epochs, "epochs");
    if opts.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_position(trainer.state().epoch);
    let elapsed_before = trainer.state().elapsed_seconds;
    let cpu_before = trainer.state().cpu_seconds;
    let first_epoch = trainer.state().epoch;
    // A new run commits θ^0 before its first epoch, so that a stop inside that epoch resumes.
    if resumed.is_none() {
        trainer.record(0.0, 0.0);
        checkpoint(dir, &mut trainer, config)?;
    }
    let mut committed = Committed::of(&trainer, f64::NAN, cpu_before);
    let mut last_ckpt = Instant::now();
    let mut stopped_early = false;
    // An epoch left unfinished (a stop past the grace, or an error): never checkpointed.
    let mut abandoned = false;
    let mut last_nash_conv = f64::NAN;
    let mut last_eval_epoch = None;
    let mut result: Result<(), RunError> = Ok(());
    let halt = || stop.abandon();
    while trainer.state().epoch < s.epochs {
        if stop.requested() {
            stopped_early = true;
            break;
        }
        let (work, learn_secs) = match trainer.act_and_learn(&halt) {
            Ok(Some(w)) => w,
            Ok(None) => {
                stopped_early = true;
                abandoned = true;
                break;
            }
            Err(e) => {
                abandoned = true;
                result = Err(e.into());
                break;
            }
        };
        let resident = trainer.advance(&work)?;
        bar.inc(1);
        let seconds = elapsed_before + deadline.elapsed();
        let cpu_seconds = cpu_before + deadline.cpu_seconds();
        let report = trainer.log_epoch(&work, learn_secs, &resident, &mut tb)?;
        let it = report.step;
        let nc = report.nash_conv.unwrap_or((f64::NAN, f64::NAN));
        if report.nash_conv.is_some() {
            last_nash_conv = nc.0;
            last_eval_epoch = Some(it);
            bar.set_message(format!("NashConv {:.4} (π^t {:.4})", nc.0, nc.1));
        }
        tb.flush();
        let st = trainer.state();
        metrics
            .write(&ArmacRow {
                epoch: st.epoch,
                seconds,
                cpu_seconds,
                nash_conv: nc,
                acting_steps: st.acting_steps,
                learning_steps: st.learning_steps,
                losses: report.losses,
                diag: report.diagnostics,
                episodes: st.episodes,
                learning_decisions: st.learning_decisions,
                nodes_touched: st.nodes_touched,
                rows_learned: st.rows_learned,
            })
            .map_err(io_err("metrics", &metrics_path))?;
        // The first epoch of every process is checkpointed (a stop soon after the start loses
        // little), then the configured cadence.
        // A broker's entries are acknowledged only once a checkpoint holds them: it asks for
        // one when half its stream cap is read but unacknowledged.
        if it == first_epoch + 1
            || it % config.checkpoint.every_epochs == 0
            || last_ckpt.elapsed().as_secs_f64() >= config.checkpoint.every_seconds
            || trainer.wants_checkpoint()
        {
            trainer.record(seconds, cpu_seconds);
            checkpoint(dir, &mut trainer, config)?;
            committed = Committed::of(&trainer, last_nash_conv, cpu_seconds);
            last_ckpt = Instant::now();
            tb.scalar(
                "disk/run_mb",
                crate::util::dir_size(dir) as f64 / 1048576.0,
                it,
            );
        }
    }
    if let Err(e) = trainer.shutdown()
        && result.is_ok()
    {
        result = Err(e.into());
    }
    bar.finish_and_clear();
    let seconds = elapsed_before + deadline.elapsed();
    let cpu_seconds = cpu_before + deadline.cpu_seconds();
    if abandoned {
        result?;
        if !opts.quiet {
            eprintln!(
                "stopped inside epoch {}: its partial work is not kept; the run resumes from \
                 epoch {} (its last checkpoint)",
                trainer.state().epoch + 1,
                committed.epoch
            );
        }
        let summary = RunSummary {
            run_dir: dir.to_path_buf(),
            game: trainer.game().load_string(),
            algorithm: "armac".into(),
            iterations: committed.epoch,
            nash_conv: committed.nash_conv,
            seconds,
            stopped_early,
            acting_steps_per_second: Some(trainer.acting_steps_per_second()),
            peak_memory_mb: crate::util::peak_memory_mb(),
            cpu_seconds: Some(deadline.cpu_seconds()),
            budget: Some(committed.budget),
        };
        super::summary::write_summary(dir, &summary).map_err(io_err("summary", dir))?;
        return Ok(summary);
    }
    trainer.record(seconds, cpu_seconds);
    checkpoint(dir, &mut trainer, config)?;
    result?;
    // The summary reports the network the run ends with (also when stopped between evaluations).
    if last_eval_epoch != Some(trainer.state().epoch)
        && let Some(nc) = trainer.final_nash_conv()
    {
        last_nash_conv = nc;
    }
    let summary = RunSummary {
        run_dir: dir.to_path_buf(),
        game: trainer.game().load_string(),
        algorithm: "armac".into(),
        iterations: trainer.state().epoch,
        nash_conv: last_nash_conv,
        seconds,
        stopped_early,
        acting_steps_per_second: Some(trainer.acting_steps_per_second()),
        peak_memory_mb: crate::util::peak_memory_mb(),
        cpu_seconds: Some(deadline.cpu_seconds()),
        budget: Some(super::Budget::of_armac(trainer.state(), cpu_seconds)),
    };
    super::summary::write_summary(dir, &summary).map_err(io_err("summary", dir))?;
    Ok(summary)
}

/// What the last committed checkpoint holds, for the summary of a run whose last epoch was
/// abandoned: its epoch, the latest NashConv evaluated up to it and its budget.
struct Committed {
    epoch: u64,
    nash_conv: f64,
    budget: super::Budget,
}

impl Committed {
    /// The checkpoint of `trainer`'s state just committed.
    fn of(trainer: &ArmacTrainer, nash_conv: f64, cpu_seconds: f64) -> Committed {
        Committed {
            epoch: trainer.state().epoch,
            nash_conv,
            budget: super::Budget::of_armac(trainer.state(), cpu_seconds),
        }
    }
}

/// The trainer of a run and its open metrics file: resumed from the committed checkpoint of
/// `resumed` (the directory changes only once all of it is loaded), or a new run's `θ^0`.
fn open_trainer(
    config: &Config,
    s: &ArmacRun,
    dir: &Path,
    resumed: Option<&super::Resumed>,
) -> Result<(ArmacTrainer, MetricsCsv), RunError> {
    let metrics_path = dir.join("metrics.csv");
    Ok(if let Some(r) = resumed {
        let g = &r.generation;
        let at = ResumePoint {
            ckpt_dir: &g.dir,
            step: g.manifest.step,
            shared: &g.manifest.shared,
        };
        let trainer = ArmacTrainer::open(dir, s, config.seed, Some(at))?;
        // Everything loaded and verified: only now does the run directory change.
        let (metrics, _) =
            super::resume::commit_resume(dir, g, config, &r.changed, &ArmacRow::header())?;
        // Networks written after the checkpoint are rewritten by this run.
        trainer.drop_unreferenced_networks();
        (trainer, metrics)
    } else {
        write_atomic(&dir.join("config.toml"), config.to_toml().as_bytes())
            .map_err(io_err("config", dir))?;
        let trainer = ArmacTrainer::open(dir, s, config.seed, None)?;
        let metrics = MetricsCsv::create(&metrics_path, &ArmacRow::header())
            .map_err(io_err("metrics", &metrics_path))?;
        (trainer, metrics)
    })
}

/// The actors of a run: threads of this process (the default), or `armac-actor` processes
/// through the broker (`cluster.role = "learner"`), which then also gets every epoch's
/// networks.
fn attach_actors(
    trainer: &mut ArmacTrainer,
    config: &Config,
    s: &ArmacRun,
    dir: &Path,
    opts: &TrainOptions,
    resumed: bool,
) -> Result<(), RunError> {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let st = trainer.state();
    let (info_len, num_actions) = trainer.replay_shape();
    match crate::cluster::LearnerSettings::of(config.cluster.as_ref(), s, &dir_name)? {
        None => {
            let seed_base = config
                .seed
                .wrapping_mul(0x9E37_79B9)
                .wrapping_add(st.epoch * 1000);
            trainer.spawn_local_actors(seed_base)?;
        }
        Some(ls) => {
            let net_dir = dir.to_path_buf();
            let mut link = crate::cluster::redis::RedisLearner::open(
                &ls,
                &config.to_toml(),
                resumed,
                st.broker_cursor.clone(),
                st.broker_seen.clone(),
                info_len,
                num_actions,
                Box::new(move |id| reservoir_path(&net_dir, id)),
            )
            .map_err(RunError::context("connecting the learner to its broker"))?;
            // The first epoch's networks and quota (in-process, the quota and the
            // snapshots already hold them).
            use crate::cluster::LearnerLink;
            link.begin_epoch(&trainer.epoch_plan(), s.episodes_per_epoch as i64)?;
            if !opts.quiet {
                eprintln!(
                    "learner of run `{}` on {}; start actors with: armac-actor --run {} \
                     --broker {} --threads N",
                    ls.run, ls.broker, ls.run, ls.broker
                );
            }
            trainer.attach(Box::new(link), Vec::new());
        }
    }
    Ok(())
}

/// Writes the checkpoint generation of `trainer`'s current state and tells the trainer it is
/// committed (it then forgets and deletes the networks nothing references any more).
fn checkpoint(dir: &Path, trainer: &mut ArmacTrainer, config: &Config) -> Result<(), RunError> {
    write_generation(dir, config, &trainer.checkpoint()?)?;
    trainer.committed()?;
    Ok(())
}

/// Writes and commits a checkpoint generation: the learner, the config and the trainer's
/// files, with references (and sums) to the reservoir networks it needs.
fn write_generation(dir: &Path, config: &Config, ck: &Checkpoint<'_>) -> Result<(), RunError> {
    let ctx = || RunError::context("writing a checkpoint");
    let mut generation = GenerationWriter::begin(dir, ck.epoch).map_err(ctx())?;
    ck.learner
        .save(&generation.dir().join("learner"))
        .map_err(RunError::context("saving the learner"))?;
    generation.record("learner").map_err(ctx())?;
    let (state, rest) = ck.files.split_first().expect("a checkpoint has its state");
    generation.add(state.0, &state.1).map_err(ctx())?;
    generation
        .add("config.toml", config.to_toml().as_bytes())
        .map_err(ctx())?;
    for (name, bytes) in rest {
        if crate::rl::armac::memory_io::is_sealed(name) {
            generation.add_sealed(name, bytes).map_err(ctx())?;
        } else {
            generation.add(name, bytes).map_err(ctx())?;
        }
    }
    for (rel, sum) in &ck.snapshots {
        generation.reference(rel, sum.clone());
    }
    generation
        .commit()
        .map_err(RunError::context("committing a checkpoint"))?;
    Ok(())
}

/// Writes a run directory as if `past_epochs` epochs had been trained, for benchmarks of the
/// reservoir's memory and disk: `θ^0` from the config's seed is copied to every epoch's file
/// (a synthetic reservoir, written in seconds), the reservoir and the working set are filled as
/// a real run would fill them, and a checkpoint is committed. The run is then resumed like any
/// other (`armac-train --resume`).
pub fn write_synthetic_run(config: &Config, dir: &Path, past_epochs: u64) -> Result<(), RunError> {
    let s = config.armac()?;
    let game = load_game(&s.game)?;
    let net_cfg = net_config(&game, &s);
    let device =
        crate::nn::select_device(s.device.as_str()).map_err(RunError::context("armac.device"))?;
    std::fs::create_dir_all(dir).map_err(io_err("run directory", dir))?;
    write_atomic(&dir.join("config.toml"), config.to_toml().as_bytes())
        .map_err(io_err("config", dir))?;
    let metrics_path = dir.join("metrics.csv");
    MetricsCsv::create(&metrics_path, &ArmacRow::header())
        .map_err(io_err("metrics", &metrics_path))?;
    let (learner, mut st, nets) = fresh_state(dir, &game, &net_cfg, &device, &s, config.seed)?;
    let src = reservoir_path(dir, 0);
    let bytes = std::fs::read(&src).map_err(io_err("network snapshot", &src))?;
    let mut rng = SplitMix64::new(st.rng);
    for id in 1..=past_epochs {
        let path = reservoir_path(dir, id);
        std::fs::write(&path, &bytes).map_err(io_err("network snapshot", &path))?;
        st.reservoir.push(id - 1, &mut rng);
    }
    st.epoch = past_epochs;
    let net_bytes = 4 * nets[&0].num_weights();
    let items = st.reservoir.items().to_vec();
    st.working_set.update(
        &items,
        working_set_capacity(s.snapshot_memory_mb, net_bytes),
        0,
        &mut rng,
    );
    st.rng = rng.next_u64();
    let replay = Replay {
        items: std::collections::VecDeque::new(),
        capacity: s.replay_capacity,
        info_len: net_cfg.input_size,
        num_actions: game.num_distinct_actions(),
    };
    let (files, snapshots, referenced) =
        checkpoint::contents(dir, &st, &replay, None, None, &mut Default::default())?;
    let ck = Checkpoint {
        epoch: st.epoch,
        learner: &learner,
        files,
        snapshots,
    };
    write_generation(dir, config, &ck)?;
    collect_reservoir(dir, &referenced);
    Ok(())
}

/// Loads the average-policy head of an ARMAC checkpoint: `path` is a model directory (every
/// file checked against its manifest), a run directory (its committed generation, verified as
/// `--resume` verifies it) or one of its generations (`<run>/checkpoint`). Returns the game the
/// run was trained on.
pub fn load_checkpoint_policy(path: &Path) -> Result<(GameRef, ArmacAveragePolicy), RunError> {
    // A run that is training commits a newer checkpoint now and then and deletes the older
    // one, possibly between this load's verification and its reads: then the newer one is
    // read instead (a few times at most).
    super::generation::load_committed(path, 3, || load_checkpoint_policy_once(path))
}

fn load_checkpoint_policy_once(path: &Path) -> Result<(GameRef, ArmacAveragePolicy), RunError> {
    let verified = super::model::verify_checkpoint(path)?;
    if super::model::is_sog_checkpoint(&verified) {
        return Err(RunError::Usage(format!(
            "{} holds a Student of Games search policy, not an ARMAC network: name it as \
             sog:{}",
            path.display(),
            path.display()
        )));
    }
    if let Some(refusal) = super::model::solver_checkpoint_refusal(path, &verified) {
        return Err(refusal);
    }
    let st = read_state(&verified.checkpoint_file("state.json")?)?;
    let cfg_path = verified.checkpoint_file("config.toml")?;
    let (config, _) = Config::load(&cfg_path.display().to_string(), &[])?;
    let s = config.armac()?;
    let game = load_game(&st.game)?;
    let net_cfg = net_config(&game, &s);
    let net_path = verified.file(&reservoir_rel(st.epoch))?;
    let net = ArmacPolicyNet::load_file(net_cfg, &net_path)
        .map_err(RunError::context("loading the checkpoint's network"))?;
    let policy = ArmacAveragePolicy::new(net, game.clone(), st.epoch)
        .with_threshold(s.play_threshold)
        .with_reward_scale(crate::rl::armac::reward_scale(&game, &s));
    Ok((game, policy))
}
