//! The rounds of Student of Games self-play on the games whose whole tree fits (Kuhn, Leduc,
//! Liar's Dice): the compiled game, the sequential round (self-play, query solving, learner
//! steps; deterministic given the seed and the round), the counters a checkpoint keeps and the
//! exact evaluation of the search policy. The threaded schedule is [`super::threaded`].

use super::settings::SogSettings;
use super::{
    ExampleReplay, GameRecord, QueryBuffer, SelfPlayConfig, play_games, policy_example,
    td1_example, value_examples,
};
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::cvpn::{Cvpn, CvpnConfig, CvpnLeaves};
use crate::rl::error::TrainError;
use crate::search::{
    GtCfrConfig, LayoutCache, PbsEncoder, ResolverConfig, SearchPolicy, SearchPolicyStats,
    solve_pbs_with_frontier,
};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Games with more histories than this are refused (the search layouts and the exact
/// evaluation need the whole tree).
pub const MAX_HISTORIES: usize = 1_000_000;

/// Counters of a run, saved with every checkpoint (counters a checkpoint lacks read as 0).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SogState {
    pub round: u64,
    pub games: u64,
    pub decisions: u64,
    pub searches: u64,
    pub searches_with_frontier: u64,
    pub first_searches: u64,
    pub first_searches_with_frontier: u64,
    pub unsearched: u64,
    pub off_policy_actions: u64,
    pub queries_generated: u64,
    pub queries_solved: u64,
    pub recursive_queries: u64,
    pub learner_steps: u64,
    pub elapsed_seconds: f64,
}

impl SogState {
    /// Adds the tallies of round `round` to the counters, whose round becomes `round`.
    pub fn add_round(&mut self, round: u64, out: &RoundOut) {
        self.decisions += out.rs.decisions;
        self.first_searches += out.rs.first_searches;
        self.first_searches_with_frontier += out.rs.first_searches_with_frontier;
        self.round = round;
        self.games += out.rs.games;
        self.searches += out.rs.searches;
        self.searches_with_frontier += out.rs.searches_with_frontier;
        self.unsearched += out.rs.unsearched;
        self.off_policy_actions += out.rs.off_policy;
        self.queries_generated += out.rs.generated;
        self.queries_solved += out.rs.solved;
        self.recursive_queries += out.rs.recursive;
        self.learner_steps += out.steps as u64;
    }
}

/// The compiled game and what search needs of it.
/// Search layouts a run keeps (one per public node searched from; Leduc has fewer nodes).
const LAYOUT_CACHE: usize = 4096;

pub struct Compiled {
    pub game: GameRef,
    pub tree: Arc<PublicTree>,
    pub ht: Arc<HistoryTree>,
    /// Search layouts by public root node, shared by every self-play chain of the run.
    pub layouts: Arc<LayoutCache>,
}

pub fn compile(name: &str) -> Result<Compiled, TrainError> {
    let game = load_game(name)?;
    crate::search::check_supported(game.as_ref())
        .map_err(TrainError::context("the game of a Student of Games run"))?;
    let tree = Arc::new(PublicTree::build_with_limit(game.as_ref(), MAX_HISTORIES)?);
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree)?);
    // The whole game's search layout: games it refuses (hidden actions, as in II-Goofspiel)
    // are refused here with the layout's reason, before anything else looks at them.
    crate::tree::tensor::TensorTree::build(&tree, &ht, 0, None)
        .map_err(TrainError::context("the game's search layout"))?;
    Ok(Compiled {
        game,
        tree,
        ht,
        layouts: Arc::new(LayoutCache::new(LAYOUT_CACHE)),
    })
}

pub fn encoder(c: &Compiled) -> Result<PbsEncoder, TrainError> {
    PbsEncoder::new(c.game.clone(), c.tree.clone(), c.ht.clone())
        .map_err(TrainError::context("the game's CVPN input"))
}

pub fn net_config(c: &Compiled, enc: &PbsEncoder, s: &SogSettings) -> CvpnConfig {
    CvpnConfig {
        game: c.game.load_string(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: c.game.num_distinct_actions(),
        hidden: s.hidden,
        layers: s.layers,
    }
}

/// The random stream of round `round` of a run seeded with `seed`.
pub fn round_seed(seed: u64, round: u64) -> u64 {
    SplitMix64::new(seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x50C0_5E1F_0000_0001)
        .next_u64()
}

/// Exact NashConv of the whole-game search policy with `net` at the frontier, and what the
/// walk did.
pub fn search_nash_conv(
    c: &Compiled,
    resolver: &ResolverConfig,
    net: &Cvpn,
    enc: &mut PbsEncoder,
    zero_sum: bool,
) -> Result<(f64, SearchPolicyStats), TrainError> {
    let mut leaves = CvpnLeaves::new(net, enc).with_zero_sum(zero_sum);
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), resolver, &mut leaves)
        .map_err(TrainError::context("evaluating the search policy"))?;
    Ok((sp.nash_conv().nash_conv, sp.stats().clone()))
}

/// What one round did (for metrics).
#[derive(Default)]
pub struct RoundStats {
    pub decisions: u64,
    pub first_searches: u64,
    pub first_searches_with_frontier: u64,
    pub td1_examples: u64,
    /// Sum over games of (learner steps − the version of the weights the game was played with).
    pub weight_lag: u64,
    pub games: u64,
    pub searches: u64,
    pub searches_with_frontier: u64,
    pub unsearched: u64,
    pub off_policy: u64,
    pub generated: u64,
    pub solved: u64,
    pub recursive: u64,
    pub value_loss: f64,
    pub policy_loss: f64,
}

/// What a round needs besides the mutable run state.
pub struct RoundCtx<'a> {
    pub c: &'a Compiled,
    pub s: &'a SogSettings,
    pub play_cfg: &'a SelfPlayConfig,
    pub solver_cfg: &'a GtCfrConfig,
    pub round: u64,
    /// The network's private states and actions.
    pub p: usize,
    pub a: usize,
    /// Asked between games, solves and learner steps: whether to abandon the round (a time
    /// limit or a signal). An abandoned round returns [`TrainError::Stopped`] and leaves the
    /// state part-updated, fit only to be dropped.
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// A round's tallies and the wall time of its phases.
pub struct RoundOut {
    pub rs: RoundStats,
    pub steps: usize,
    pub play_secs: f64,
    pub solve_secs: f64,
    pub learn_secs: f64,
}

/// Adds one self-play game's counts to `rs`.
pub fn tally_game(rs: &mut RoundStats, g: &GameRecord) {
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
pub fn game_examples(
    enc: &mut PbsEncoder,
    g: &GameRecord,
    a: usize,
    td1: f64,
) -> Result<(Vec<super::Example>, u64), TrainError> {
    let mut out = Vec::with_capacity(2 * g.policy_targets.len());
    let mut n_td1 = 0;
    for t in &g.policy_targets {
        out.push(
            policy_example(enc, t, a).map_err(TrainError::context("encoding a policy target"))?,
        );
        if let Some(e) = td1_example(enc, t, g.return0, td1)
            .map_err(TrainError::context("encoding a TD(1) target"))?
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
pub fn sequential_round(
    ctx: &RoundCtx,
    net: &mut Cvpn,
    queries: &mut QueryBuffer,
    replay: &mut ExampleReplay,
    leaf_enc: &mut PbsEncoder,
    ex_enc: &mut PbsEncoder,
) -> Result<RoundOut, TrainError> {
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
            if (ctx.stop)() {
                return Err(TrainError::Stopped);
            }
            games.extend(
                play_games(&c.tree, &c.ht, ctx.play_cfg, group, &c.layouts, &mut leaves)
                    .map_err(TrainError::context(format!("self-play in round {round}")))?,
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
                if (ctx.stop)() {
                    return Err(TrainError::Stopped);
                }
                let (v, frontier) =
                    solve_pbs_with_frontier(&c.tree, &c.ht, q, ctx.solver_cfg, &mut inner)
                        .map_err(TrainError::context(format!(
                            "solving queries in round {round}"
                        )))?;
                answers.push(v);
                if s.p_rec > 0.0 {
                    recursive.extend(frontier.into_iter().filter(|_| rng.next_f64() < s.p_rec));
                }
            }
        }
        for e in value_examples(ex_enc, &batch, &answers)
            .map_err(TrainError::context("encoding value targets"))?
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
        if (ctx.stop)() {
            return Err(TrainError::Stopped);
        }
        let b = replay.sample(&mut rng, s.batch, ctx.p, ctx.a);
        if b.input.is_empty() {
            break;
        }
        let l = net
            .train_step(&b)
            .map_err(TrainError::context("a learner step"))?;
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

pub fn frontier_fraction(stats: &SearchPolicyStats) -> f64 {
    stats.searches_with_frontier as f64 / stats.searches.max(1) as f64
}
