//! The rounds of Student of Games self-play on Hold'em (`universal_poker`): the game's first
//! betting round and the network's sizes ([`HoldemGame`]), and one round of self-play,
//! re-solving of the oldest queries and learner steps ([`holdem_round`]). Sequential and
//! deterministic for a seed: each round and game draws from streams seeded by
//! `(seed, round, game)`.

use super::ExampleReplay;
use super::holdem::{HoldemQueries, HoldemSelfPlay, hand_positions, play_game, solve_query};
use super::holdem_policy::CvpnHoldemLeaves;
use super::settings::{SogSettings, holdem_search_config};
use crate::game::State;
use crate::games::universal_poker::UniversalPokerGame;
use crate::nn::cvpn::{Cvpn, CvpnConfig};
use crate::rl::error::TrainError;
use crate::search::holdem::{HoldemSearchConfig, HoldemSearchError};
use crate::tree::poker::PokerLayout;
use crate::util::SplitMix64;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Counters of a Hold'em run, saved with every checkpoint.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(default)]
pub struct HoldemState {
    pub round: u64,
    pub games: u64,
    pub decisions: u64,
    pub searches: u64,
    pub unsearched: u64,
    pub off_policy_actions: u64,
    pub queries_generated: u64,
    pub queries_skipped: u64,
    pub queries_solved: u64,
    pub learner_steps: u64,
    pub elapsed_seconds: f64,
}

/// The game of a Hold'em run and what its rounds need: the first betting round's hands and
/// their positions, the network's sizes and the search settings of self-play and solving.
pub struct HoldemGame<'a> {
    pub s: &'a SogSettings,
    /// The game's load string, as the summary reports it.
    pub load_string: String,
    pub game: UniversalPokerGame,
    /// Hands of the first betting round's layout, and their positions.
    pub np: usize,
    pub positions: HashMap<u32, usize>,
    pub num_actions: usize,
    pub play: HoldemSelfPlay,
    pub solve_cfg: HoldemSearchConfig,
    /// The CVPN's configuration for this game and `s`.
    pub net_cfg: CvpnConfig,
}

impl<'a> HoldemGame<'a> {
    /// Builds the game of `s` and its first betting round (at most `sog.search.max_nodes`
    /// nodes).
    pub fn new(s: &'a SogSettings) -> Result<Self, TrainError> {
        let load_string = crate::games::load_game(&s.game)?.load_string();
        let game = UniversalPokerGame::from_string(&load_string)?;
        let gcfg = game.config();
        let mut hole_dealt = game.initial_state();
        for o in 0..2 * gcfg.num_hole {
            hole_dealt.try_apply(o)?;
        }
        let root_layout =
            PokerLayout::from_state_limited(&hole_dealt, s.max_nodes.unwrap_or(200_000), true)
                .map_err(|e| {
                    TrainError::Usage(format!(
                        "the game's first betting round (sog.search.max_nodes): {e}"
                    ))
                })?;
        let np = root_layout.num_hands();
        let positions = hand_positions(&root_layout);
        let net_cfg = CvpnConfig {
            game: load_string.clone(),
            input_size: gcfg.public_state_tensor_size() + 2 * np,
            private_states: np,
            num_actions: crate::game::Game::num_distinct_actions(&game),
            hidden: s.hidden,
            layers: s.layers,
        };
        let play = HoldemSelfPlay {
            search: holdem_search_config(s, s.simulations),
            epsilon: s.epsilon,
            queries_per_search: s.queries_per_search,
        };
        let solve_cfg = holdem_search_config(s, s.solver_simulations);
        Ok(HoldemGame {
            s,
            load_string,
            game,
            np,
            positions,
            num_actions: net_cfg.num_actions,
            play,
            solve_cfg,
            net_cfg,
        })
    }
}

/// What one Hold'em round did.
pub struct HoldemRoundOut {
    pub t_round: std::time::Instant,
    pub games: u64,
    pub searches: u64,
    pub unsearched: u64,
    pub off: u64,
    pub generated: u64,
    pub ret0: f64,
    pub solved: u64,
    pub steps: usize,
    pub value_loss: f64,
    pub play_secs: f64,
    pub solve_secs: f64,
    pub learn_secs: f64,
}

fn search_err(what: &'static str) -> impl Fn(HoldemSearchError) -> TrainError {
    move |e: HoldemSearchError| TrainError::Usage(format!("{what}: {e}"))
}

fn round_seed(seed: u64, round: u64, salt: u64) -> u64 {
    crate::util::SplitMix64::new(
        seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
    .next_u64()
}

/// Round `round` of a Hold'em run: `games_per_round` self-play games with the current
/// network (their queries into `queries`), re-solves of the `solves_per_round` oldest queries
/// (value examples into `replay`) and `steps_per_round` learner steps; the counters `st` take
/// the round's tallies. `stop` is asked between games, solves and learner steps: once it
/// returns true the round is abandoned ([`TrainError::Stopped`]), its state part-updated.
pub fn holdem_round(
    g: &HoldemGame,
    round: u64,
    net: &mut Cvpn,
    st: &mut HoldemState,
    queries: &mut HoldemQueries,
    replay: &mut ExampleReplay,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<HoldemRoundOut, TrainError> {
    let stopped = || {
        if stop() {
            Err(TrainError::Stopped)
        } else {
            Ok(())
        }
    };
    let s = g.s;
    let t_round = Instant::now();
    let snap = Arc::new(net.snapshot());
    let mut leaves = CvpnHoldemLeaves::new(snap.clone(), g.play.search.runout_boards);
    // 1. Self-play.
    let (mut games, mut decisions, mut searches, mut unsearched, mut off) = (0u64, 0, 0, 0, 0);
    let (mut generated, mut skipped, mut ret0) = (0u64, 0u64, 0.0);
    for i in 0..s.games_per_round {
        stopped()?;
        let mut rng = SplitMix64::new(round_seed(s.seed, round, 1 + i as u64));
        let rec = play_game(
            &g.game.initial_state(),
            &g.play,
            &mut leaves,
            &snap,
            &g.positions,
            &mut rng,
        )
        .map_err(search_err("self-play"))?;
        games += 1;
        decisions += rec.decisions as u64;
        searches += rec.searches as u64;
        unsearched += rec.unsearched as u64;
        off += rec.off_policy_actions as u64;
        skipped += rec.skipped_leaves as u64;
        generated += rec.queries.len() as u64;
        ret0 += rec.return0;
        for q in rec.queries {
            queries.push(q);
        }
    }
    let play_secs = t_round.elapsed().as_secs_f64();
    // 2. Solving: the oldest queries, with the current network.
    let t_solve = Instant::now();
    let mut solved = 0u64;
    let template = g.game.initial_state();
    while solved < s.solves_per_round as u64 {
        stopped()?;
        let Some(q) = queries.items.pop_front() else {
            break;
        };
        let [post, pre] = solve_query(&template, &q, &g.solve_cfg, &mut leaves, &snap)
            .map_err(search_err("re-solving a query"))?;
        replay.push(post);
        replay.push(pre);
        solved += 1;
    }
    let solve_secs = t_solve.elapsed().as_secs_f64();
    // 3. Learning.
    let t_learn = Instant::now();
    let mut rng = SplitMix64::new(round_seed(s.seed, round, 0));
    let (mut loss, mut steps) = (0.0, 0usize);
    if !replay.items.is_empty() {
        for _ in 0..s.steps_per_round {
            stopped()?;
            let mut b = replay.sample(&mut rng, s.batch, g.np, g.num_actions);
            b.policy.clear();
            b.policy_mask.clear();
            loss += net
                .train_step(&b)
                .map_err(TrainError::context("a CVPN learner step"))?
                .value;
            steps += 1;
        }
    }
    let learn_secs = t_learn.elapsed().as_secs_f64();
    let value_loss = if steps > 0 {
        loss / steps as f64
    } else {
        f64::NAN
    };
    st.round = round;
    st.games += games;
    st.decisions += decisions;
    st.searches += searches;
    st.unsearched += unsearched;
    st.off_policy_actions += off;
    st.queries_generated += generated;
    st.queries_skipped += skipped;
    st.queries_solved += solved;
    st.learner_steps += steps as u64;
    Ok(HoldemRoundOut {
        t_round,
        games,
        searches,
        unsearched,
        off,
        generated,
        ret0,
        solved,
        steps,
        value_loss,
        play_secs,
        solve_secs,
        learn_secs,
    })
}
