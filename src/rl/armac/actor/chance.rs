//! Chance nodes of the actors' episodes: between two decisions of a corrected learning
//! episode (`armac.chance_baseline`), their outcomes, then their values `Σ_o p(o) v(h_o)` under
//! the opponent's `π^j` and the past critic, evaluated in one batch per network; where no
//! player acts again (`armac.allin_runouts`), the mean returns of the remaining run-outs.

use super::nets::{Nets, evaluate_with_table, legal_mask, push_row, q_of, state_value};
use crate::game::{State, Turn};
use crate::nn::armac::{ActBatch, ActOutput, Heads};
use crate::policy::probs::normalized_relu;
use crate::util::SplitMix64;

/// A chance node between two decisions of a corrected learning episode.
pub(super) enum ChanceNode {
    /// Its outcomes (every outcome is a decision).
    Pending(Vec<Outcome>),
    /// `Σ_o p(o) v(h_o)`.
    Value(f32),
}

/// One outcome of a pending [`ChanceNode`]: the decision it leads to.
pub(super) struct Outcome {
    prob: f64,
    state: Box<dyn State>,
    /// The player to act there, and the legal actions.
    player: usize,
    legal: Vec<bool>,
}

/// The outcomes of chance node `state`, if every outcome leads to a decision (`None`
/// otherwise: no chance value is then used there).
pub(super) fn chance_children(state: &dyn State, num_actions: usize) -> Option<Vec<Outcome>> {
    state
        .chance_outcomes()
        .into_iter()
        .map(|(o, prob)| {
            let mut c = state.clone_box();
            c.apply_action(o);
            let Turn::Player(player) = c.turn() else {
                return None;
            };
            let legal = legal_mask(c.as_ref(), num_actions);
            Some(Outcome {
                prob,
                state: c,
                player,
                legal,
            })
        })
        .collect()
}

/// One game's part in [`evaluate_chance`]: its chance node (if any), the networks of its
/// opponent (`π^j`) and past critic, and its learning player.
pub(super) struct ChanceSlot<'a> {
    pub(super) node: &'a mut Option<ChanceNode>,
    pub(super) opp: usize,
    pub(super) critic: Option<usize>,
    pub(super) learner: usize,
}

/// Replaces every pending chance node of `games` (with a past critic) by its value
/// `Σ_o p(o) v(h_o)`, with one batched evaluation per network (the opponent's `π^j` and the
/// past critic of each episode).
pub(super) fn evaluate_chance(
    games: &mut [ChanceSlot],
    nets: &Nets,
    num_actions: usize,
    info_size: usize,
) {
    // Per network: (game, outcome) of each row.
    let mut rows_of: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nets.len()];
    let mut heads = vec![Heads::NONE; nets.len()];
    for (g, l) in games.iter().enumerate() {
        if let (Some(ChanceNode::Pending(kids)), Some(c)) = (&*l.node, l.critic) {
            let opp = l.opp;
            heads[opp] = heads[opp].union(Heads::MEAN_REGRET);
            heads[c] = heads[c].union(Heads::CRITIC);
            for o in 0..kids.len() {
                rows_of[opp].push((g, o));
                if c != opp {
                    rows_of[c].push((g, o));
                }
            }
        }
    }
    if rows_of.iter().all(Vec::is_empty) {
        return;
    }
    let kid = |g: usize, o: usize| -> &Outcome {
        match &*games[g].node {
            Some(ChanceNode::Pending(kids)) => &kids[o],
            _ => unreachable!("rows are pending outcomes"),
        }
    };
    let outs: Vec<Option<ActOutput>> = rows_of
        .iter()
        .enumerate()
        .map(|(k, rows)| {
            if rows.is_empty() {
                return None;
            }
            let mut batch = ActBatch::default();
            let mut acting = Vec::with_capacity(rows.len());
            for &(g, o) in rows {
                let k = kid(g, o);
                push_row(&mut batch, k.state.as_ref(), k.player, info_size, &k.legal);
                acting.push(k.player);
            }
            Some(evaluate_with_table(nets, k, &batch, &acting, heads[k]))
        })
        .collect();
    let row = |k: usize, g: usize, o: usize| -> usize {
        rows_of[k]
            .binary_search(&(g, o))
            .expect("network evaluated this outcome")
    };
    for (g, l) in games.iter_mut().enumerate() {
        let (Some(ChanceNode::Pending(kids)), Some(c)) = (&*l.node, l.critic) else {
            continue;
        };
        let (opp, lp) = (l.opp, l.learner);
        let mut value = 0.0f64;
        for (o, kid) in kids.iter().enumerate() {
            let po = outs[opp].as_ref().expect("evaluated");
            let r = row(opp, g, o);
            let pi = normalized_relu(
                &po.mean_regret[r * num_actions..(r + 1) * num_actions],
                &kid.legal,
            );
            let co = outs[c].as_ref().expect("evaluated");
            let q = q_of(co, row(c, g, o), num_actions, lp);
            value += kid.prob * f64::from(state_value(&pi, q));
        }
        *l.node = Some(ChanceNode::Value(value as f32));
    }
}

/// The mean returns over the rest of the game from chance node `state`, if no player acts
/// again there (poker players all in; `None` where [`State::player_acts_again`] says a
/// player does, without playing on, else as soon as a run-out reaches a decision): exact
/// when the chance moves in sequence have at most `limit` outcomes together (the first run-out
/// gives the count), else the mean of `limit` run-outs sampled with `rng`. Either way its
/// expectation is the return of one sampled run-out.
pub(super) fn runout_returns(
    state: &dyn State,
    limit: usize,
    rng: &mut SplitMix64,
) -> Option<[f64; 2]> {
    if state.player_acts_again() == Some(true) {
        return None;
    }
    // The first run-out: whether it ends without a decision, and how many outcomes the
    // sequence of chance moves has (outcome counts do not depend on earlier outcomes in
    // card games; a game where they do is still enumerated exactly by `exact_runouts`).
    let mut s = state.clone_box();
    let mut leaves = 1usize;
    while s.turn() == Turn::Chance {
        let outcomes = s.chance_outcomes();
        leaves = leaves.saturating_mul(outcomes.len());
        s.apply_action(outcomes[0].0);
    }
    if s.turn() != Turn::Terminal {
        return None;
    }
    if leaves <= limit {
        return exact_runouts(state);
    }
    let mut sum = [0.0f64; 2];
    for _ in 0..limit {
        let mut s = state.clone_box();
        while s.turn() == Turn::Chance {
            let outcomes = s.chance_outcomes();
            let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
            s.apply_action(outcomes[rng.weighted(&w)].0);
        }
        if s.turn() != Turn::Terminal {
            return None;
        }
        let r = s.returns();
        sum[0] += r[0];
        sum[1] += r[1];
    }
    Some(sum.map(|x| x / limit as f64))
}

/// The expected returns of `state` over every chance outcome below it (`None` if a decision
/// is reached).
fn exact_runouts(state: &dyn State) -> Option<[f64; 2]> {
    match state.turn() {
        Turn::Terminal => Some(state.returns()),
        Turn::Player(_) => None,
        Turn::Chance => {
            let mut sum = [0.0f64; 2];
            for (o, p) in state.chance_outcomes() {
                let mut c = state.clone_box();
                c.apply_action(o);
                let r = exact_runouts(c.as_ref())?;
                sum[0] += p * r[0];
                sum[1] += p * r[1];
            }
            Some(sum)
        }
    }
}
