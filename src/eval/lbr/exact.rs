//! LBR's exact expected winnings on a game whose tree compiles.
//!
//! LBR's decision at one of its information states depends only on what it sees there: its
//! cards, the board and the betting (the range is a function of these and of the policy). So
//! LBR is a pure strategy of the game, and its expected winnings against the policy are the
//! value of that strategy pair, which the compiled tree gives exactly (two reach sweeps and
//! one pass over the terminals, [`PublicTree::expected_value`]). LBR's action at each of its
//! infosets is [`super::decision`]'s own, computed on the infoset's stored history replayed
//! as a played hand would reach it; infosets LBR's own actions never reach are skipped. On
//! games other than full Hold'em the equity is exact (every board completion) up to
//! [`super::equity::EXACT_EQUITY_PAIRS`] pairs per decision, so the value is LBR's exact
//! expected winnings, with no sampling error, and can never exceed the best response's.

use super::ActionProbs;
use super::DEFAULT_PREFLOP_SAMPLES;
use super::LbrError;
use super::LbrRule;
use super::LbrVariant;
use super::decision::{HandCtx, decision_at};
use super::deck::Deck;
use super::play::check_game;
use super::play::derive_seed;
use super::range::RangePolicy;
use crate::game::Action;
use crate::game::Player;
use crate::games::universal_poker::UniversalPokerGame;
use crate::games::universal_poker::UniversalPokerState;
use crate::tree::{PublicTree, TreePolicy};
use crate::util::SplitMix64;
use rayon::prelude::*;
use serde::Serialize;

/// The outcome of [`exact_lbr`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExactLbr {
    /// The LBR variant.
    pub variant: String,
    /// The policy's name.
    pub policy: String,
    /// LBR's expected winnings in chips per hand as player 0 and as player 1.
    pub seat_values: [f64; 2],
    /// LBR's decisions computed (its infosets reached by its own strategy), per seat.
    pub decisions: [usize; 2],
}

/// The policy as tree arrays: each infoset's row from one range query for the acting
/// player's own hand at the infoset's stored history.
fn tree_arrays(
    tree: &PublicTree,
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
) -> Result<TreePolicy, LbrError> {
    let mut out: TreePolicy = [Vec::new(), Vec::new()];
    for (p, flat) in out.iter_mut().enumerate() {
        let inf = &tree.infosets[p];
        let rows: Vec<ActionProbs> = (0..inf.len())
            .into_par_iter()
            .map(|i| {
                let state = replay(game, &inf.history[i]);
                let hole = state.hole_cards(p);
                let hand = crate::games::cards::hole_index(hole[0], hole[1]) as u16;
                let probs = policy.hand_action_probabilities(&state, &[hand])?;
                let row = *probs.first().ok_or_else(|| LbrError::BadProbabilities {
                    policy: policy.name(),
                    probs: [f64::NAN; 4],
                    history: crate::game::history_string(&inf.history[i]),
                    reason: "no row for the hand".into(),
                })?;
                Ok(row)
            })
            .collect::<Result<_, LbrError>>()?;
        *flat = vec![0.0; inf.num_actions_total()];
        for (i, row) in rows.iter().enumerate() {
            for k in inf.range(i) {
                flat[k] = row[inf.actions[k]];
            }
        }
    }
    Ok(out)
}

fn replay(game: &UniversalPokerGame, history: &[Action]) -> UniversalPokerState {
    let mut s = game.initial_state();
    for &a in history {
        s.apply(a);
    }
    s
}

/// LBR's pure strategy in seat `seat` as a flat one-hot array over the seat's global action
/// indices, and the number of decisions computed. Infosets are visited from the roots of
/// the seat's sequence forest down the chosen actions only (in parallel over the roots).
fn lbr_strategy(
    ctx: &HandCtx,
    tree: &PublicTree,
    game: &UniversalPokerGame,
    seat: Player,
) -> Result<(Vec<f64>, usize), LbrError> {
    let inf = &tree.infosets[seat];
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); tree.num_sequences(seat)];
    for i in 0..inf.len() {
        children[inf.parent_seq[i] as usize].push(i as u32);
    }
    let choose = |i: usize| -> Result<usize, LbrError> {
        let mut rng = SplitMix64::new(derive_seed(&[seat as u64, i as u64]));
        let a = decision_at(ctx, game, seat, &inf.history[i], &mut rng)?;
        let k = inf.range(i).find(|&k| inf.actions[k] == a);
        Ok(k.expect("LBR's action is legal at its infoset"))
    };
    let chosen: Vec<Vec<usize>> = children[inf.root()]
        .par_iter()
        .map(|&root| {
            let mut picked = Vec::new();
            let mut stack = vec![root as usize];
            while let Some(i) = stack.pop() {
                let k = choose(i)?;
                picked.push(k);
                stack.extend(children[k].iter().map(|&c| c as usize));
            }
            Ok(picked)
        })
        .collect::<Result<_, LbrError>>()?;
    let mut flat = vec![0.0; inf.num_actions_total()];
    let mut decisions = 0;
    for k in chosen.into_iter().flatten() {
        flat[k] = 1.0;
        decisions += 1;
    }
    Ok((flat, decisions))
}

/// LBR's exact expected winnings against `policy` in each seat of `game`, whose compiled
/// tree is `tree` (see the module docs): the game must be one LBR plays ([`check_game`]),
/// `threads` workers (0 = one per core). Decisions use the default options of
/// `LbrOptions::new` (range updates deferred, [`DEFAULT_PREFLOP_SAMPLES`] where an equity is
/// sampled).
pub fn exact_lbr(
    tree: &PublicTree,
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    variant: LbrVariant,
    threads: usize,
) -> Result<ExactLbr, LbrError> {
    exact_lbr_with_rule(tree, game, policy, variant, LbrRule::Standard, threads)
}

/// [`exact_lbr`] with LBR valuing its raises by `rule`.
pub fn exact_lbr_with_rule(
    tree: &PublicTree,
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    variant: LbrVariant,
    rule: LbrRule,
    threads: usize,
) -> Result<ExactLbr, LbrError> {
    check_game(game.config(), variant)?;
    if tree.game != game.config().load_string {
        return Err(LbrError::Options(format!(
            "the tree is of {}, not of {}",
            tree.game,
            game.config().load_string
        )));
    }
    let deck = Deck::new(game.config());
    let ctx = HandCtx {
        policy,
        deck: &deck,
        variant,
        preflop_samples: DEFAULT_PREFLOP_SAMPLES,
        defer: true,
        rule,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| LbrError::Options(format!("cannot start the thread pool: {e}")))?;
    pool.install(|| {
        let arrays = tree_arrays(tree, game, policy)?;
        let mut seat_values = [0.0; 2];
        let mut decisions = [0; 2];
        for seat in 0..2 {
            let (strategy, n) = lbr_strategy(&ctx, tree, game, seat)?;
            let opp = 1 - seat;
            let mut reach: [Vec<f64>; 2] =
                std::array::from_fn(|p| vec![0.0; tree.num_sequences(p)]);
            tree.reach(seat, &strategy, &mut reach[seat]);
            tree.reach(opp, &arrays[opp], &mut reach[opp]);
            let v0 = tree.expected_value(&reach[0], &reach[1]);
            seat_values[seat] = if seat == 0 { v0 } else { -v0 };
            decisions[seat] = n;
        }
        Ok(ExactLbr {
            variant: variant.name().to_string(),
            policy: policy.name(),
            seat_values,
            decisions,
        })
    })
}
