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
mod threaded;

pub(crate) use driver::{
    PhaseRates, SogRounds, drive, load_net, log_buffers_and_rates, save_generation, start_fresh,
};

use super::config::{Config, SogSettings};
use super::tensorboard::TbWriter;
use super::{MetricsCsv, RunError, RunSummary, TrainOptions, io_err, read_checkpoint_file};
use crate::cfr::SolverSpec;
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::cvpn::{CVPN_META_FILE, Cvpn, CvpnConfig, CvpnLeaves};
use crate::nn::public::engine::TensorEngineBuilder;
use crate::nn::public::{Ctx, Precision};
use crate::rl::sog::{
    ExampleReplay, QueryBuffer, SelfPlayConfig, decode_buffers, encode_buffers, play_games,
    policy_example, td1_example, value_examples,
};
use crate::search::{
    EngineBuilder, Final, GtCfrConfig, LayoutCache, PbsEncoder, ResolverConfig, SearchPolicy,
    SearchPolicyStats, solve_pbs_with_frontier,
};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Columns of `metrics.csv` of a SoG run.
pub const METRICS_HEADER: &[&str] = &[
    "round",
    "seconds",
    "nash_conv",
    "games",
    "searches",
    "frontier_fraction",
    "unsearched",
    "off_policy_actions",
    "queries_generated",
    "queries_solved",
    "queries_dropped",
    "buffer",
    "replay",
    "learner_steps",
    "value_loss",
    "policy_loss",
    "eval_frontier_fraction",
    "first_searches",
    "first_searches_with_frontier",
    "recursive_queries",
];

/// The directory of the CVPN inside a checkpoint generation.
pub const CVPN_DIR: &str = "cvpn";
const STATE_FILE: &str = "state.json";
const BUFFERS_FILE: &str = "buffers.bin";
/// Games with more histories than this are refused (the search layouts and the exact
/// evaluation need the whole tree).
const MAX_HISTORIES: usize = 1_000_000;

/// Counters of a run, saved with every checkpoint (counters a checkpoint lacks read as 0).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
struct SogState {
    round: u64,
    games: u64,
    decisions: u64,
    searches: u64,
    searches_with_frontier: u64,
    first_searches: u64,
    first_searches_with_frontier: u64,
    unsearched: u64,
    off_policy_actions: u64,
    queries_generated: u64,
    queries_solved: u64,
    recursive_queries: u64,
    learner_steps: u64,
    elapsed_seconds: f64,
}

/// The compiled game and what search needs of it.
/// Search layouts a run keeps (one per public node searched from; Leduc has fewer nodes).
const LAYOUT_CACHE: usize = 4096;

struct Compiled {
    game: GameRef,
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    /// Search layouts by public root node, shared by every self-play chain of the run.
    layouts: Arc<LayoutCache>,
}

fn compile(name: &str) -> Result<Compiled, RunError> {
    let game = load_game(name)?;
    crate::search::check_supported(game.as_ref())
        .map_err(RunError::context("the game of a Student of Games run"))?;
    let tree = Arc::new(PublicTree::build_with_limit(game.as_ref(), MAX_HISTORIES)?);
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree)?);
    // The whole game's search layout: games it refuses (hidden actions, as in II-Goofspiel)
    // are refused here with the layout's reason, before anything else looks at them.
    crate::tree::tensor::TensorTree::build(&tree, &ht, 0, None)
        .map_err(RunError::context("the game's search layout"))?;
    Ok(Compiled {
        game,
        tree,
        ht,
        layouts: Arc::new(LayoutCache::new(LAYOUT_CACHE)),
    })
}

fn encoder(c: &Compiled) -> Result<PbsEncoder, RunError> {
    PbsEncoder::new(c.game.clone(), c.tree.clone(), c.ht.clone())
        .map_err(RunError::context("the game's CVPN input"))
}

fn net_config(c: &Compiled, enc: &PbsEncoder, s: &SogSettings) -> CvpnConfig {
    CvpnConfig {
        game: c.game.load_string(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: c.game.num_distinct_actions(),
        hidden: s.hidden,
        layers: s.layers,
    }
}

/// The search settings of self-play and evaluation.
pub fn resolver_config(s: &SogSettings, simulations: usize) -> ResolverConfig {
    ResolverConfig {
        search: GtCfrConfig {
            simulations,
            expansions_per_update: s.c,
            puct: s.puct,
            final_policy: if s.final_average {
                Final::Average
            } else {
                Final::Current
            },
            spec: SolverSpec::named("cfr+").expect("cfr+ is a known algorithm"),
            seed: s.seed,
            policy_prior: s.policy_prior,
            top_k: s.top_k,
            engine: engine_builder(s),
        },
        alpha: s.alpha,
        ..ResolverConfig::default()
    }
}

/// The regret engine of `sog.search.engine`: `None` for the scalar one, a
/// [`TensorEngineBuilder`] on `sog.search.device` for `tensor` (`f64` on the flex CPU backend,
/// `f32` on wgpu and cuda, whose shaders have no `f64`).
pub fn engine_builder(s: &SogSettings) -> Option<Arc<dyn EngineBuilder>> {
    if s.search_engine != "tensor" {
        return None;
    }
    let device = crate::nn::select_device(&s.search_device)
        .expect("Config::sog checked that sog.search.device is available");
    let cpu = match s.search_device.as_str() {
        "cpu" | "flex" => true,
        "default" => crate::nn::compiled_backends().first() == Some(&"flex"),
        _ => false,
    };
    let precision = if cpu { Precision::F64 } else { Precision::F32 };
    Some(Arc::new(TensorEngineBuilder::new(Ctx::new(
        &device, precision,
    ))))
}

fn round_seed(seed: u64, round: u64) -> u64 {
    SplitMix64::new(seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x50C0_5E1F_0000_0001)
        .next_u64()
}

/// Exact NashConv of the whole-game search policy with `net` at the frontier, and what the
/// walk did.
fn search_nash_conv(
    c: &Compiled,
    resolver: &ResolverConfig,
    net: &Cvpn,
    enc: &mut PbsEncoder,
    zero_sum: bool,
) -> Result<(f64, SearchPolicyStats), RunError> {
    let mut leaves = CvpnLeaves::new(net, enc).with_zero_sum(zero_sum);
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), resolver, &mut leaves)
        .map_err(RunError::context("evaluating the search policy"))?;
    Ok((sp.nash_conv().nash_conv, sp.stats().clone()))
}

/// What one round did (for metrics).
#[derive(Default)]
struct RoundStats {
    decisions: u64,
    first_searches: u64,
    first_searches_with_frontier: u64,
    td1_examples: u64,
    /// Sum over games of (learner steps − the version of the weights the game was played with).
    weight_lag: u64,
    games: u64,
    searches: u64,
    searches_with_frontier: u64,
    unsearched: u64,
    off_policy: u64,
    generated: u64,
    solved: u64,
    recursive: u64,
    value_loss: f64,
    policy_loss: f64,
}

/// Runs (or resumes) a Student of Games run in `dir`.
pub fn run(
    config: &Config,
    s: &SogSettings,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    if load_game(&s.game)?.short_name() == "universal_poker" {
        return super::holdem_sog::train(config, s, dir, opts, resumed);
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

fn na(x: f64) -> String {
    format!("{x:.6e}")
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
                super::resume::commit_resume(dir, g, config, &r.changed, METRICS_HEADER)?;
            (net, st, queries, replay, metrics)
        } else {
            let (net, metrics) =
                driver::start_fresh(dir, config, &net_cfg, &device, s, METRICS_HEADER)?;
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
        search_nash_conv(
            &self.c,
            &self.eval_resolver,
            &self.net,
            &mut self.leaf_enc,
            self.s.zero_sum,
        )
    }

    /// Round 0 of a fresh run: the initial network's row, and a checkpoint so that a stop in
    /// round 1 resumes.
    fn record_initial(&mut self) -> Result<(), RunError> {
        let mut row = vec![String::new(); METRICS_HEADER.len()];
        row[0] = "0".into();
        row[1] = "0.000".into();
        row[2] = na(f64::NAN);
        row[16] = na(f64::NAN);
        if self.s.exact_eval {
            let (nc, stats) = self.nash_conv()?;
            self.tb.scalar("nash_conv", nc, 0);
            row[2] = na(nc);
            row[16] = na(frontier_fraction(&stats));
            self.last_nash_conv = nc;
            self.last_eval_round = Some(0);
        }
        for v in row.iter_mut().skip(3).filter(|v| v.is_empty()) {
            *v = "0".into();
        }
        self.metrics
            .row(&row)
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

    fn play(&mut self, round: u64) -> Result<RoundOut, RunError> {
        let ctx = RoundCtx {
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
            threaded::threaded_round(&ctx, &mut self.net, &mut self.queries, &mut self.replay)?
        };
        let (st, rs) = (&mut self.st, &out.rs);
        st.decisions += rs.decisions;
        st.first_searches += rs.first_searches;
        st.first_searches_with_frontier += rs.first_searches_with_frontier;
        st.round = round;
        st.games += rs.games;
        st.searches += rs.searches;
        st.searches_with_frontier += rs.searches_with_frontier;
        st.unsearched += rs.unsearched;
        st.off_policy_actions += rs.off_policy;
        st.queries_generated += rs.generated;
        st.queries_solved += rs.solved;
        st.recursive_queries += rs.recursive;
        st.learner_steps += out.steps as u64;
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
        let st = &self.st;
        self.metrics
            .row(&[
                it.to_string(),
                format!("{seconds:.3}"),
                na(nc),
                st.games.to_string(),
                st.searches.to_string(),
                format!("{fraction:.6}"),
                st.unsearched.to_string(),
                st.off_policy_actions.to_string(),
                st.queries_generated.to_string(),
                st.queries_solved.to_string(),
                self.queries.dropped.to_string(),
                self.queries.items.len().to_string(),
                self.replay.items.len().to_string(),
                st.learner_steps.to_string(),
                na(rs.value_loss),
                na(rs.policy_loss),
                na(eval_fraction),
                st.first_searches.to_string(),
                st.first_searches_with_frontier.to_string(),
                st.recursive_queries.to_string(),
            ])
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

/// What a round needs besides the mutable run state.
struct RoundCtx<'a> {
    c: &'a Compiled,
    s: &'a SogSettings,
    play_cfg: &'a SelfPlayConfig,
    solver_cfg: &'a GtCfrConfig,
    round: u64,
    /// The network's private states and actions.
    p: usize,
    a: usize,
}

/// A round's tallies and the wall time of its phases.
struct RoundOut {
    rs: RoundStats,
    steps: usize,
    play_secs: f64,
    solve_secs: f64,
    learn_secs: f64,
}

/// Adds one self-play game's counts to `rs`.
fn tally_game(rs: &mut RoundStats, g: &crate::rl::sog::GameRecord) {
    rs.games += 1;
    rs.decisions += g.decisions as u64;
    rs.searches += g.searches as u64;
    rs.searches_with_frontier += g.searches_with_frontier as u64;
    rs.first_searches += g.first_searches as u64;
    rs.first_searches_with_frontier += g.first_searches_with_frontier as u64;
    rs.unsearched += g.unsearched as u64;
    rs.off_policy += g.off_policy_actions as u64;
    rs.generated += g.queries.len() as u64;
}

/// The policy examples (and TD(1) value examples, weight `td1`) of a self-play game.
fn game_examples(
    enc: &mut PbsEncoder,
    g: &crate::rl::sog::GameRecord,
    a: usize,
    td1: f64,
) -> Result<(Vec<crate::rl::sog::Example>, u64), RunError> {
    let mut out = Vec::with_capacity(2 * g.policy_targets.len());
    let mut n_td1 = 0;
    for t in &g.policy_targets {
        out.push(policy_example(enc, t, a).map_err(RunError::context("encoding a policy target"))?);
        if let Some(e) = td1_example(enc, t, g.return0, td1)
            .map_err(RunError::context("encoding a TD(1) target"))?
        {
            out.push(e);
            n_td1 += 1;
        }
    }
    Ok((out, n_td1))
}

/// One round of the sequential schedule (`actors = 0`): self-play, then solving, then
/// learning, all with the weights of the round's start except the learner's own steps;
/// deterministic given `(seed, round)` and the state at the round's start.
fn sequential_round(
    ctx: &RoundCtx,
    net: &mut Cvpn,
    queries: &mut QueryBuffer,
    replay: &mut ExampleReplay,
    leaf_enc: &mut PbsEncoder,
    ex_enc: &mut PbsEncoder,
) -> Result<RoundOut, RunError> {
    let (c, s, round) = (ctx.c, ctx.s, ctx.round);
    let mut rng = SplitMix64::new(round_seed(s.seed, round));
    let mut rs = RoundStats::default();
    let t_play = Instant::now();
    // 1. Self-play with the current network.
    {
        let mut leaves = CvpnLeaves::new(&*net, leaf_enc).with_zero_sum(s.zero_sum);
        let seeds: Vec<u64> = (0..s.games_per_round).map(|_| rng.next_u64()).collect();
        let mut games = Vec::with_capacity(seeds.len());
        for group in seeds.chunks(s.search_batch.max(1)) {
            games.extend(
                play_games(&c.tree, &c.ht, ctx.play_cfg, group, &c.layouts, &mut leaves)
                    .map_err(RunError::context(format!("self-play in round {round}")))?,
            );
        }
        for g in games {
            tally_game(&mut rs, &g);
            let (examples, n_td1) = game_examples(ex_enc, &g, ctx.a, s.td1)?;
            rs.td1_examples += n_td1;
            for q in g.queries {
                queries.push(q);
            }
            for e in examples {
                replay.push(e);
            }
        }
    }
    let play_secs = t_play.elapsed().as_secs_f64();
    // 2. Re-solve the oldest queries (and random ones) with the current network.
    let t_solve = Instant::now();
    let mut batch = queries.take(s.solves_per_round);
    batch.extend(ex_enc.random_queries(&mut rng, s.random_queries));
    if !batch.is_empty() {
        let mut answers = Vec::with_capacity(batch.len());
        let mut recursive = Vec::new();
        {
            let mut inner = CvpnLeaves::new(&*net, leaf_enc).with_zero_sum(s.zero_sum);
            for q in &batch {
                let (v, frontier) =
                    solve_pbs_with_frontier(&c.tree, &c.ht, q, ctx.solver_cfg, &mut inner)
                        .map_err(RunError::context(format!(
                            "solving queries in round {round}"
                        )))?;
                answers.push(v);
                if s.p_rec > 0.0 {
                    recursive.extend(frontier.into_iter().filter(|_| rng.next_f64() < s.p_rec));
                }
            }
        }
        for e in value_examples(ex_enc, &batch, &answers)
            .map_err(RunError::context("encoding value targets"))?
        {
            replay.push(e);
        }
        rs.solved = batch.len() as u64;
        rs.recursive = recursive.len() as u64;
        for q in recursive {
            queries.push(q);
        }
    }
    let solve_secs = t_solve.elapsed().as_secs_f64();
    // 3. Learner steps.
    let t_learn = Instant::now();
    let mut steps = 0;
    for _ in 0..s.steps_per_round {
        let b = replay.sample(&mut rng, s.batch, ctx.p, ctx.a);
        if b.input.is_empty() {
            break;
        }
        let l = net
            .train_step(&b)
            .map_err(RunError::context("a learner step"))?;
        rs.value_loss += l.value;
        rs.policy_loss += l.policy;
        steps += 1;
    }
    rs.value_loss /= steps.max(1) as f64;
    rs.policy_loss /= steps.max(1) as f64;
    Ok(RoundOut {
        rs,
        steps,
        play_secs,
        solve_secs,
        learn_secs: t_learn.elapsed().as_secs_f64(),
    })
}

fn frontier_fraction(stats: &SearchPolicyStats) -> f64 {
    stats.searches_with_frontier as f64 / stats.searches.max(1) as f64
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
    if !dir.join("config.toml").is_file() {
        return Err(RunError::Usage(format!(
            "{} has no config.toml: not a run directory",
            dir.display()
        )));
    }
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
