//! Mean-regret targets at the learning player's other private states (`armac.regret_hands`).
//!
//! At a learning decision the history `h` is one of many that differ only in the private
//! outcomes chance dealt the learning player `i` (its hole cards). Every such variant `h'`
//! keeps the opponent's private state, the public cards and every action, so it has the
//! same chance probability and the same opponent reach as `h`. With a behaviour policy that
//! does not depend on `i`'s private state (uniform), it also has the same behaviour reach, so
//! it is drawn exactly as often as `h`: the past critic's advantages at `K` variants drawn
//! uniformly are `K` further samples of the same distribution of mean-regret targets, each
//! at another information state of `i`, for the price of one batched forward pass instead of
//! `K` episodes. Under `memory_weights = "reach"` each variant keeps the played decision's
//! behaviour reach, whose inverse weight leaves every row with the opponent's and chance's
//! reach (Eq. 3's weights) whatever the behaviour. This is the public-state idea of the
//! baselines paper's Appendix E (targets for many private states at one sampled public
//! state), here for the learning player's own private states.

use super::nets::{Nets, legal_mask, q_of, state_value, view};
use super::shadow::{Shadow, ShadowQuery, evaluate_shadows};
use crate::game::State;
use crate::nn::armac::{ActOutput, Heads};
use crate::policy::probs::normalized_relu;
use crate::rl::armac::exact_values::ExactValues;
use crate::rl::armac::trajectory::Step;
use crate::util::SplitMix64;
use std::sync::Arc;

/// One game's learning decision, as [`variant_steps`] needs it.
pub(super) struct VariantQuery<'a> {
    pub(super) state: &'a dyn State,
    pub(super) player: usize,
    /// `π^j`'s network and the past critic's in the group's list.
    pub(super) opp: usize,
    pub(super) critic: usize,
    /// Exact values of `π^j` (the `exact_advantages` ablation) instead of the critic.
    pub(super) exact: Option<&'a Arc<ExactValues>>,
    /// The learning player's behaviour reach before this decision.
    pub(super) reach: f32,
}

/// Up to `k` private states of `player` other than its own, drawn uniformly without
/// replacement from those the rest of the deal allows, as histories.
pub(super) fn draw_variants(
    state: &dyn State,
    player: usize,
    k: usize,
    rng: &mut SplitMix64,
) -> Vec<Box<dyn State>> {
    let mut alts = state.private_state_alternatives(player);
    let n = k.min(alts.len());
    for i in 0..n {
        let j = i + rng.below(alts.len() - i);
        alts.swap(i, j);
    }
    alts[..n]
        .iter()
        .map(|&a| {
            state
                .with_private_state(player, a)
                .expect("every listed alternative is a possible deal")
        })
        .collect()
}

/// The mean-regret samples at `k` variants of each queried decision (`queries[g]`, `None`
/// for games not at a learning decision): the past critic's advantages
/// `q_j(h', ·) − Σ_a π^j(s', a) q_j(h', a)` at each variant `h'` (information state `s'`),
/// from one batched forward pass per network over all games' variants, or the exact ones.
pub(super) fn variant_steps(
    queries: &[Option<VariantQuery>],
    k: usize,
    nets: &Nets,
    num_actions: usize,
    info_size: usize,
    rng: &mut SplitMix64,
) -> Vec<Vec<Step>> {
    let drawn: Vec<Vec<Shadow>> = queries
        .iter()
        .map(|q| {
            q.as_ref().map_or_else(Vec::new, |q| {
                draw_variants(q.state, q.player, k, rng)
                    .into_iter()
                    .map(|state| Shadow { state, weight: 1.0 })
                    .collect()
            })
        })
        .collect();
    let ask = |pick: &dyn Fn(&VariantQuery) -> (usize, Heads)| -> Vec<Option<ShadowQuery>> {
        queries
            .iter()
            .zip(&drawn)
            .map(|(q, d)| {
                let q = q.as_ref().filter(|q| q.exact.is_none() && !d.is_empty())?;
                let (net, heads) = pick(q);
                Some(ShadowQuery {
                    shadows: d,
                    net,
                    heads,
                    player: q.player,
                })
            })
            .collect()
    };
    let critic_heads = |q: &VariantQuery| {
        // One pass where `π^j` and the critic are the same network.
        let heads = if q.opp == q.critic {
            Heads::CRITIC.union(Heads::MEAN_REGRET)
        } else {
            Heads::CRITIC
        };
        (q.critic, heads)
    };
    let critic_out = evaluate_shadows(&ask(&critic_heads), nets, num_actions, info_size);
    let separate = |q: &VariantQuery| (q.opp, Heads::MEAN_REGRET);
    let any_separate = queries.iter().flatten().any(|q| q.opp != q.critic);
    let pij_out = if any_separate {
        let asks: Vec<Option<ShadowQuery>> = ask(&separate)
            .into_iter()
            .zip(queries)
            .map(|(a, q)| a.filter(|_| q.as_ref().is_some_and(|q| q.opp != q.critic)))
            .collect();
        evaluate_shadows(&asks, nets, num_actions, info_size)
    } else {
        vec![None; queries.len()]
    };
    queries
        .iter()
        .zip(drawn)
        .enumerate()
        .map(|(g, (q, d))| {
            let Some(q) = q else { return Vec::new() };
            let rows = Rows {
                critic: critic_out[g].as_ref(),
                pij: pij_out[g].as_ref().or(critic_out[g].as_ref()),
            };
            d.iter()
                .enumerate()
                .map(|(r, v)| variant_step(q, v.state.as_ref(), r, &rows, num_actions, info_size))
                .collect()
        })
        .collect()
}

/// Where a game's variants' rows are: the critic's output and `π^j`'s, each with the row
/// of the game's first variant.
struct Rows<'a> {
    critic: Option<&'a (Arc<ActOutput>, usize)>,
    pij: Option<&'a (Arc<ActOutput>, usize)>,
}

/// The mean-regret sample at variant `v` (the `r`-th of its game).
fn variant_step(
    q: &VariantQuery,
    v: &dyn State,
    r: usize,
    rows: &Rows,
    num_actions: usize,
    info_size: usize,
) -> Step {
    let p = q.player;
    let legal = legal_mask(v, num_actions);
    let advantage = match q.exact {
        Some(e) => e
            .advantages(v.history(), p, num_actions)
            .expect("the exact tree holds every history the game reaches"),
        None => {
            let (co, c0) = rows.critic.expect("the critic evaluated the variants");
            let (po, p0) = rows.pij.expect("π^j evaluated the variants");
            let pr = (p0 + r) * num_actions..(p0 + r + 1) * num_actions;
            let pij = normalized_relu(&po.mean_regret[pr], &legal);
            let qv = q_of(co, c0 + r, num_actions, p);
            let value = state_value(&pij, qv);
            qv.iter()
                .zip(&legal)
                .map(|(x, &ok)| if ok { x - value } else { 0.0 })
                .collect()
        }
    };
    let mut info = [Vec::new(), Vec::new()];
    info[p] = view(v, p, info_size);
    // No action is taken at a variant; the step records a legal one.
    let action = legal.iter().position(|&m| m).unwrap_or(0);
    Step {
        player: p,
        info,
        legal,
        action,
        advantage: Some(advantage),
        played_policy: None,
        reach: q.reach,
    }
}
