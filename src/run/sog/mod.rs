//! The Student of Games training run (`[sog]` configs): a CVPN trained by sound self-play.
//!
//! One process in rounds. With `actors = 0` (the default, deterministic) each round runs its
//! phases one after the other on one thread; with `actors ≥ 1` and `solvers ≥ 1` they overlap
//! on threads, as the paper's asynchronous actors, solvers and trainers (see
//! [`threaded_round`]: paced learner, versioned weight broadcast, not reproducible bit for
//! bit). Each round:
//! 1. **self-play**: `games_per_round` games in which both players re-solve continually with
//!    GT-CFR at every decision, the current CVPN at every search's frontier
//!    ([`crate::rl::sog::play_games`]: `sog.search.batch` games per group, their searches in
//!    lock-step, one CVPN forward per single update for the group); actions from
//!    `(1 − ε)·search + ε·uniform`; at most `queries_per_search` frontier PBSs of each search (final ranges) enter the FIFO query
//!    buffer, and the search's root policy at the decided PBS becomes a policy example;
//! 2. **solving**: the `solves_per_round` oldest queries of the buffer (plus, optionally,
//!    `random_queries` random PBSs) are re-solved by GT-CFR with the *current* CVPN at the new
//!    frontier ([`crate::search::solve_pbs_with_frontier`], the computation of
//!    [`crate::search::SearchLabels`]); their root CFVs are value examples, and each frontier
//!    PBS of a re-solve re-enters the buffer with probability `p_rec` (recursive queries);
//! 3. **learning**: `steps_per_round` Adam steps on batches drawn uniformly from the FIFO
//!    replay of examples (value MSE + policy cross-entropy; with `td1 > 0` the replay also
//!    holds TD(1) value examples of the self-play decisions, [`crate::rl::sog::td1_example`]).
//!
//! Every `eval.every` rounds (small games) the whole-game search policy with the current CVPN
//! ([`crate::search::SearchPolicy`]) is evaluated exactly; round 0 of a fresh run records the
//! initial network's value. Each round draws its random numbers from a stream seeded by
//! `(seed, round)`, and checkpoints (network with Adam's state, counters, query buffer and
//! replay) are taken at round boundaries, so a resumed run continues exactly.

mod driver;
pub mod holdem;

use driver::CVPN_DIR;

use super::config::Config;
use super::metrics::{Column, MetricsRow, sci};
use super::tensorboard::TbWriter;
use super::{MetricsCsv, RunError, RunSummary, TrainOptions, io_err, read_checkpoint_file};
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::cvpn::{CVPN_META_FILE, Cvpn, CvpnLeaves};
use crate::rl::sog::rounds::{
    Compiled, RoundCtx, RoundOut, SogState, compile, encoder, frontier_fraction, net_config,
    search_nash_conv, sequential_round,
};
use crate::rl::sog::settings::{SogSettings, resolver_config};
use crate::rl::sog::threaded::threaded_round;
use crate::rl::sog::{ExampleReplay, QueryBuffer, SelfPlayConfig, decode_buffers, encode_buffers};
use crate::search::{GtCfrConfig, PbsEncoder, ResolverConfig, SearchPolicy, SearchPolicyStats};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One row of a SoG run's `metrics.csv`: the run's counters after round `round`, the
/// buffers' sizes, the round's mean losses and, on evaluation rounds, the search policy's
/// exact NashConv (NaN otherwise).
struct SogRow {
    round: u64,
    seconds: f64,
    nash_conv: f64,
    st: SogState,
    /// Searches of the round that reached the network's frontier, as a fraction.
    fraction: f64,
    dropped: u64,
    buffer: usize,
    replay: usize,
    value_loss: f64,
    policy_loss: f64,
    /// The same fraction in the evaluated search policy (NaN unless evaluated).
    eval_fraction: f64,
}

impl MetricsRow for SogRow {
    const COLUMNS: &'static [Column<Self>] = &[
        Column::new("round", |r| r.round.to_string()),
        Column::new("seconds", |r| format!("{:.3}", r.seconds)),
        Column::new("nash_conv", |r| sci(r.nash_conv)),
        Column::new("games", |r| r.st.games.to_string()),
        Column::new("searches", |r| r.st.searches.to_string()),
        Column::new("frontier_fraction", |r| format!("{:.6}", r.fraction)),
        Column::new("unsearched", |r| r.st.unsearched.to_string()),
        Column::new("off_policy_actions", |r| {
            r.st.off_policy_actions.to_string()
        }),
        Column::new("queries_generated", |r| r.st.queries_generated.to_string()),
        Column::new("queries_solved", |r| r.st.queries_solved.to_string()),
        Column::new("queries_dropped", |r| r.dropped.to_string()),
        Column::new("buffer", |r| r.buffer.to_string()),
        Column::new("replay", |r| r.replay.to_string()),
        Column::new("learner_steps", |r| r.st.learner_steps.to_string()),
        Column::new("value_loss", |r| sci(r.value_loss)),
        Column::new("policy_loss", |r| sci(r.policy_loss)),
        Column::new("eval_frontier_fraction", |r| sci(r.eval_fraction)),
        Column::new("first_searches", |r| r.st.first_searches.to_string()),
        Column::new("first_searches_with_frontier", |r| {
            r.st.first_searches_with_frontier.to_string()
        }),
        Column::new("recursive_queries", |r| r.st.recursive_queries.to_string()),
    ];
}

const STATE_FILE: &str = "state.json";
const BUFFERS_FILE: &str = "buffers.bin";

/// Runs (or resumes) a Student of Games run in `dir`.
pub fn run(
    config: &Config,
    s: &SogSettings,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    if load_game(&s.game)?.short_name() == "universal_poker" {
        return holdem::train(config, s, dir, opts, resumed);
    }
    let mut r = SogRun::open(config, s, dir, resumed)?;
    if resumed.is_none() {
        r.record_initial()?;
    }
    let game = r.c.game.load_string();
    driver::drive(&mut r, s, dir, game, opts)
}

/// The state of a SoG run between rounds.
struct SogRun<'a> {
    config: &'a Config,
    s: &'a SogSettings,
    dir: &'a Path,
    c: Compiled,
    leaf_enc: PbsEncoder,
    ex_enc: PbsEncoder,
    play_cfg: SelfPlayConfig,
    eval_resolver: ResolverConfig,
    solver_cfg: GtCfrConfig,
    net: Cvpn,
    st: SogState,
    queries: QueryBuffer,
    replay: ExampleReplay,
    metrics: MetricsCsv,
    metrics_path: PathBuf,
    tb: TbWriter,
    last_nash_conv: f64,
    last_eval_round: Option<u64>,
}

impl<'a> SogRun<'a> {
    /// Compiles the game and creates (or loads from `resumed`) the network, counters and
    /// buffers of the run in `dir`.
    fn open(
        config: &'a Config,
        s: &'a SogSettings,
        dir: &'a Path,
        resumed: Option<&super::Resumed>,
    ) -> Result<Self, RunError> {
        let c = compile(&s.game)?;
        let leaf_enc = encoder(&c)?;
        let ex_enc = encoder(&c)?;
        let device =
            crate::nn::select_device(&s.device).map_err(RunError::context("sog.device"))?;
        let net_cfg = net_config(&c, &leaf_enc, s);
        let metrics_path = dir.join("metrics.csv");
        let play_cfg = SelfPlayConfig {
            resolver: resolver_config(s, s.simulations),
            epsilon: s.epsilon,
            queries_per_search: s.queries_per_search,
        };
        let eval_resolver = resolver_config(s, s.simulations);
        let solver_cfg = resolver_config(s, s.solver_simulations).search;

        let (net, st, mut queries, mut replay, metrics) = if let Some(r) = resumed {
            let g = &r.generation;
            let net = driver::load_net(&g.dir, &net_cfg, &device, s)?;
            let st: SogState =
                read_checkpoint_file(&g.dir.join(STATE_FILE), "checkpoint state", |b| {
                    serde_json::from_slice(b)
                })?;
            let (queries, replay) = read_checkpoint_file(
                &g.dir.join(BUFFERS_FILE),
                "checkpoint buffers",
                decode_buffers,
            )?;
            // Everything loaded and verified: only now does the run directory change.
            let (metrics, _) =
                super::resume::commit_resume(dir, g, config, &r.changed, &SogRow::header())?;
            (net, st, queries, replay, metrics)
        } else {
            let (net, metrics) =
                driver::start_fresh(dir, config, &net_cfg, &device, s, &SogRow::header())?;
            (
                net,
                SogState::default(),
                QueryBuffer::new(s.buffer),
                ExampleReplay::new(s.replay),
                metrics,
            )
        };
        // Capacities follow the config (a resume cannot change them, see `resume::SAFE_KEYS`).
        queries.capacity = s.buffer;
        replay.capacity = s.replay;
        let tb = TbWriter::create(dir).map_err(io_err("TensorBoard events", dir))?;
        Ok(SogRun {
            config,
            s,
            dir,
            c,
            leaf_enc,
            ex_enc,
            play_cfg,
            eval_resolver,
            solver_cfg,
            net,
            st,
            queries,
            replay,
            metrics,
            metrics_path,
            tb,
            last_nash_conv: f64::NAN,
            last_eval_round: None,
        })
    }

    /// Exact NashConv of the search policy with the current network.
    fn nash_conv(&mut self) -> Result<(f64, SearchPolicyStats), RunError> {
        Ok(search_nash_conv(
            &self.c,
            &self.eval_resolver,
            &self.net,
            &mut self.leaf_enc,
            self.s.zero_sum,
        )?)
    }

    /// Round 0 of a fresh run: the initial network's row, and a checkpoint so that a stop in
    /// round 1 resumes.
    fn record_initial(&mut self) -> Result<(), RunError> {
        let (mut nash_conv, mut eval_fraction) = (f64::NAN, f64::NAN);
        if self.s.exact_eval {
            let (nc, stats) = self.nash_conv()?;
            self.tb.scalar("nash_conv", nc, 0);
            nash_conv = nc;
            eval_fraction = frontier_fraction(&stats);
            self.last_nash_conv = nc;
            self.last_eval_round = Some(0);
        }
        self.metrics
            .write(&SogRow {
                round: 0,
                seconds: 0.0,
                nash_conv,
                st: SogState::default(),
                fraction: 0.0,
                dropped: 0,
                buffer: 0,
                replay: 0,
                value_loss: 0.0,
                policy_loss: 0.0,
                eval_fraction,
            })
            .map_err(io_err("metrics", &self.metrics_path))?;
        self.tb.flush();
        driver::SogRounds::checkpoint(self)
    }

    /// The TensorBoard scalars of round `it`.
    fn log_round(&mut self, it: u64, out: &RoundOut, fraction: f64) {
        let (rs, tb) = (&out.rs, &mut self.tb);
        tb.scalar("loss/value", rs.value_loss, it);
        tb.scalar("loss/policy", rs.policy_loss, it);
        tb.scalar("selfplay/frontier_fraction", fraction, it);
        tb.scalar("selfplay/unsearched", rs.unsearched as f64, it);
        tb.scalar("selfplay/off_policy_actions", rs.off_policy as f64, it);
        tb.scalar("queries/generated", rs.generated as f64, it);
        tb.scalar("queries/solved", rs.solved as f64, it);
        tb.scalar("queries/recursive", rs.recursive as f64, it);
        tb.scalar("selfplay/td1_examples", rs.td1_examples as f64, it);
        if self.s.actors > 0 {
            tb.scalar(
                "selfplay/weight_lag",
                rs.weight_lag as f64 / rs.games.max(1) as f64,
                it,
            );
        }
        let sizes = [
            self.queries.items.len() as f64,
            self.queries.dropped as f64,
            self.replay.items.len() as f64,
        ];
        let rates = driver::PhaseRates {
            searches: rs.searches,
            solved: rs.solved,
            steps: out.steps,
            play_secs: out.play_secs,
            solve_secs: out.solve_secs,
            learn_secs: out.learn_secs,
        };
        driver::log_buffers_and_rates(tb, it, sizes, &rates);
    }
}

impl driver::SogRounds for SogRun<'_> {
    type Out = RoundOut;

    fn round(&self) -> u64 {
        self.st.round
    }

    fn elapsed_seconds(&self) -> f64 {
        self.st.elapsed_seconds
    }

    fn set_elapsed_seconds(&mut self, seconds: f64) {
        self.st.elapsed_seconds = seconds;
    }

    fn play(&mut self, round: u64, stop: &(dyn Fn() -> bool + Sync)) -> Result<RoundOut, RunError> {
        let ctx = RoundCtx {
            stop,
            c: &self.c,
            s: self.s,
            play_cfg: &self.play_cfg,
            solver_cfg: &self.solver_cfg,
            round,
            p: self.leaf_enc.private_states(),
            a: self.c.game.num_distinct_actions(),
        };
        let out = if self.s.actors == 0 {
            sequential_round(
                &ctx,
                &mut self.net,
                &mut self.queries,
                &mut self.replay,
                &mut self.leaf_enc,
                &mut self.ex_enc,
            )?
        } else {
            threaded_round(&ctx, &mut self.net, &mut self.queries, &mut self.replay)?
        };
        self.st.add_round(round, &out);
        Ok(out)
    }

    fn record(
        &mut self,
        it: u64,
        out: RoundOut,
        seconds: f64,
        bar: &indicatif::ProgressBar,
    ) -> Result<(), RunError> {
        let s = self.s;
        let rs = &out.rs;
        let fraction = rs.searches_with_frontier as f64 / rs.searches.max(1) as f64;
        self.log_round(it, &out, fraction);
        let mut nc = f64::NAN;
        let mut eval_fraction = f64::NAN;
        if s.exact_eval && (it.is_multiple_of(s.eval_every) || it == s.rounds) {
            let (v, stats) = self.nash_conv()?;
            nc = v;
            eval_fraction = frontier_fraction(&stats);
            self.last_nash_conv = v;
            self.last_eval_round = Some(it);
            self.tb.scalar("nash_conv", v, it);
            self.tb.scalar("eval/frontier_fraction", eval_fraction, it);
            bar.set_message(format!("search NashConv {v:.4}"));
        }
        self.tb.flush();
        self.metrics
            .write(&SogRow {
                round: it,
                seconds,
                nash_conv: nc,
                st: self.st.clone(),
                fraction,
                dropped: self.queries.dropped,
                buffer: self.queries.items.len(),
                replay: self.replay.items.len(),
                value_loss: rs.value_loss,
                policy_loss: rs.policy_loss,
                eval_fraction,
            })
            .map_err(io_err("metrics", &self.metrics_path))
    }

    fn checkpoint(&mut self) -> Result<(), RunError> {
        let buffers = encode_buffers(&self.queries, &self.replay);
        driver::save_generation(
            self.dir,
            self.st.round,
            &self.net,
            STATE_FILE,
            &self.st,
            self.config,
            &[(BUFFERS_FILE, &buffers)],
        )
    }

    fn final_nash_conv(&mut self) -> Result<f64, RunError> {
        if self.s.exact_eval && self.last_eval_round != Some(self.st.round) {
            self.last_nash_conv = self.nash_conv()?.0;
        }
        Ok(self.last_nash_conv)
    }
}

/// The result of [`evaluate_run`].
#[derive(Clone, Debug, Serialize)]
pub struct RunSearchEval {
    pub run_dir: PathBuf,
    /// OpenSpiel load string of the run's game.
    pub game: String,
    /// The round of the evaluated checkpoint.
    pub round: u64,
    pub learner_steps: u64,
    pub simulations: usize,
    pub seed: u64,
    pub nash_conv: f64,
    pub best_response_values: [f64; 2],
    pub on_policy_values: [f64; 2],
    /// Frontier queries the CVPN answered and the forward passes it took.
    pub cvpn_queries: u64,
    pub cvpn_forwards: u64,
    pub stats: SearchPolicyStats,
}

/// A loaded SoG run: its validated settings, compiled game, CVPN and committed round.
struct LoadedRun {
    settings: SogSettings,
    compiled: Compiled,
    encoder: PbsEncoder,
    net: Cvpn,
    round: u64,
}

/// Loads the committed checkpoint of the SoG run in `dir`; `game`, when given, must be the
/// run's game. Errors name the culprit: no run, not a SoG run, no CVPN checkpoint, another
/// game, a damaged checkpoint.
fn load_run(dir: &Path, game: Option<&str>) -> Result<LoadedRun, RunError> {
    super::check_run_dir(dir)?;
    let g = super::generation::Generation::open(dir).map_err(RunError::context(format!(
        "reading the checkpoint of {}",
        dir.display()
    )))?;
    let config = super::resume::generation_config(&g)?;
    if config.sog.is_none() {
        return Err(RunError::Usage(format!(
            "{} is not a Student of Games run (its config has no [sog] section)",
            dir.display()
        )));
    }
    if !g.dir.join(CVPN_DIR).join(CVPN_META_FILE).is_file() {
        return Err(RunError::Usage(format!(
            "{} has no CVPN checkpoint ({} is missing)",
            dir.display(),
            Path::new(CVPN_DIR).join(CVPN_META_FILE).display()
        )));
    }
    let settings = config.sog()?;
    let compiled = compile(&settings.game)?;
    if let Some(name) = game {
        let want = load_game(name)?.load_string();
        if want != compiled.game.load_string() {
            return Err(RunError::Usage(format!(
                "--game {want} does not match the run's game {}",
                compiled.game.load_string()
            )));
        }
    }
    let encoder = encoder(&compiled)?;
    let device =
        crate::nn::select_device(&settings.device).map_err(RunError::context("sog.device"))?;
    let net = Cvpn::load(
        &g.dir.join(CVPN_DIR),
        &net_config(&compiled, &encoder, &settings),
        &device,
        settings.learning_rate,
    )
    .map_err(RunError::context(format!(
        "loading the CVPN of {}",
        dir.display()
    )))?;
    let path = g.dir.join(STATE_FILE);
    let st: SogState =
        serde_json::from_slice(&std::fs::read(&path).map_err(io_err("checkpoint state", &path))?)
            .map_err(|e| RunError::Usage(format!("{}: {e}", path.display())))?;
    Ok(LoadedRun {
        settings,
        compiled,
        encoder,
        net,
        round: st.round,
    })
}

/// The whole-game search policy of the SoG run in `dir` (its committed CVPN at the frontier,
/// the run's search settings, `simulations` overriding `s`), with the run's game: what
/// `sog:DIR` means to `armac-eval nashconv`, `match` and `export-policy`.
pub fn load_search_policy(
    dir: &Path,
    simulations: Option<usize>,
) -> Result<(GameRef, SearchPolicy), RunError> {
    let mut run = load_run(dir, None)?;
    let resolver = resolver_config(
        &run.settings,
        simulations.unwrap_or(run.settings.simulations),
    );
    let mut leaves =
        CvpnLeaves::new(&run.net, &mut run.encoder).with_zero_sum(run.settings.zero_sum);
    let c = &run.compiled;
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), &resolver, &mut leaves)
        .map_err(RunError::context("building the search policy"))?;
    Ok((c.game.clone(), sp))
}

/// Exact NashConv of the search policy with the CVPN of the SoG run in `dir` (its committed
/// checkpoint) at the frontier: the run's search settings, `simulations` overriding `s`.
/// `game`, when given, must be the run's game. Errors name the culprit: no run, no CVPN
/// checkpoint, another game, a damaged checkpoint.
pub fn evaluate_run(
    dir: &Path,
    simulations: Option<usize>,
    game: Option<&str>,
) -> Result<RunSearchEval, RunError> {
    let mut run = load_run(dir, game)?;
    let s = &run.settings;
    let sims = simulations.unwrap_or(s.simulations);
    let resolver = resolver_config(s, sims);
    let c = &run.compiled;
    let zero_sum = s.zero_sum;
    let mut leaves = CvpnLeaves::new(&run.net, &mut run.encoder).with_zero_sum(zero_sum);
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), &resolver, &mut leaves)
        .map_err(RunError::context("building the search policy"))?;
    let (queries, forwards) = (leaves.queries, leaves.forwards);
    let r = sp.nash_conv();
    Ok(RunSearchEval {
        run_dir: dir.to_path_buf(),
        game: c.game.load_string(),
        round: run.round,
        learner_steps: run.net.steps(),
        simulations: sims,
        seed: s.seed,
        nash_conv: r.nash_conv,
        best_response_values: r.best_response_values,
        on_policy_values: r.on_policy_values,
        cvpn_queries: queries,
        cvpn_forwards: forwards,
        stats: sp.stats().clone(),
    })
}

#[cfg(test)]
mod tests;
