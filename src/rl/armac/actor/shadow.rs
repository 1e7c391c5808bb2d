//! The histories the learning player cannot tell from the one being played, with their
//! weights under chance and the opponent's `π^j` ([`AdvantageTarget::Infoset`] and
//! [`AdvantageTarget::CorrectedInfoset`] in learning episodes of feed-forward networks).
//!
//! [`AdvantageTarget::Infoset`]: super::AdvantageTarget::Infoset
//! [`AdvantageTarget::CorrectedInfoset`]: super::AdvantageTarget::CorrectedInfoset

use super::nets::{Nets, evaluate_with_table, legal_mask, push_row, view};
use crate::game::State;
use crate::nn::armac::{ActBatch, ActOutput, Heads};
use std::sync::Arc;

/// Most histories a game tracks for
/// [`AdvantageTarget::Infoset`](super::AdvantageTarget::Infoset); a game whose learning player
/// cannot tell more histories apart stores single-history targets from then on.
pub const MAX_SHADOWS: usize = 512;

/// One history the learning player cannot tell from the one being played, with its weight
/// `π_{-i}(h')` under chance and the opponent's `π^j` (the played history is one of them).
pub(super) struct Shadow {
    pub(super) state: Box<dyn State>,
    pub(super) weight: f64,
}

/// The shadows after a chance node whose played outcome leads to `played`: every outcome of
/// every shadow that leaves the learning player's view as the played one does, weighted by
/// its probability. `None` past [`MAX_SHADOWS`].
pub(super) fn shadows_after_chance(
    shadows: Vec<Shadow>,
    played: &dyn State,
    learner: usize,
    size: usize,
) -> Option<Vec<Shadow>> {
    let want = view(played, learner, size);
    let mut next = Vec::new();
    for sh in shadows {
        if !sh.state.is_chance() {
            continue;
        }
        for (o, p) in sh.state.chance_outcomes() {
            let mut c = sh.state.clone_box();
            c.apply_action(o);
            if view(c.as_ref(), learner, size) == want {
                next.push(Shadow {
                    state: c,
                    weight: sh.weight * p,
                });
            }
        }
        if next.len() > MAX_SHADOWS {
            return None;
        }
    }
    Some(next)
}

/// The shadows after the opponent plays `action` from `before`, the played history:
/// `probs[k]` is `π^j` at shadow `k`'s opponent decision. Each shadow branches over its actions
/// that leave the learning player's view as the played action does (in poker only the played
/// action itself; in II-Goofspiel every bid with the same outcome), weighted by `π^j`. `None`
/// past [`MAX_SHADOWS`].
pub(super) fn shadows_after_action(
    shadows: Vec<Shadow>,
    probs: &[Vec<f32>],
    before: &dyn State,
    action: usize,
    learner: usize,
    size: usize,
) -> Option<Vec<Shadow>> {
    let mut played = before.clone_box();
    played.apply_action(action);
    let want = view(played.as_ref(), learner, size);
    let mut next = Vec::new();
    for (sh, pi) in shadows.into_iter().zip(probs) {
        for b in sh.state.legal_actions() {
            let w = sh.weight * f64::from(pi[b]);
            if w <= 0.0 {
                continue;
            }
            let mut c = sh.state.clone_box();
            c.apply_action(b);
            if view(c.as_ref(), learner, size) == want {
                next.push(Shadow {
                    state: c,
                    weight: w,
                });
            }
        }
        if next.len() > MAX_SHADOWS {
            return None;
        }
    }
    Some(next)
}

/// One game's request to [`evaluate_shadows`]: its shadows, evaluated by network `net` for
/// the outputs `heads`, `player` acting.
pub(super) struct ShadowQuery<'a> {
    pub(super) shadows: &'a [Shadow],
    pub(super) net: usize,
    pub(super) heads: Heads,
    pub(super) player: usize,
}

/// One batched forward pass per network over the shadows of the games at this decision
/// (`queries[g]` for game `g`, `None` where it tracks none): the opponent's `π^j` where the
/// opponent acts, the past critic where the learning player acts. Per game, the output
/// holding its shadows' rows and the first of them.
pub(super) fn evaluate_shadows(
    queries: &[Option<ShadowQuery>],
    nets: &Nets,
    num_actions: usize,
    info_size: usize,
) -> Vec<Option<(Arc<ActOutput>, usize)>> {
    if queries.iter().all(Option::is_none) {
        return vec![None; queries.len()];
    }
    let mut batches: Vec<(ActBatch, Vec<usize>)> = (0..nets.len())
        .map(|_| (ActBatch::default(), Vec::new()))
        .collect();
    // The acting player at each row of each network's batch, and what each network computes.
    let mut actors: Vec<Vec<usize>> = vec![Vec::new(); nets.len()];
    let mut heads = vec![Heads::NONE; nets.len()];
    let mut first = vec![None; queries.len()];
    for (g, q) in queries.iter().enumerate() {
        let Some(q) = q else { continue };
        let net = q.net;
        heads[net] = heads[net].union(q.heads);
        let (batch, games) = &mut batches[net];
        first[g] = Some((net, games.len()));
        for x in q.shadows {
            let legal = legal_mask(x.state.as_ref(), num_actions);
            push_row(batch, x.state.as_ref(), q.player, info_size, &legal);
            games.push(g);
            actors[net].push(q.player);
        }
    }
    let outs: Vec<Option<Arc<ActOutput>>> = batches
        .iter()
        .enumerate()
        .map(|(k, (b, games))| {
            (!games.is_empty())
                .then(|| Arc::new(evaluate_with_table(nets, k, b, &actors[k], heads[k])))
        })
        .collect();
    first
        .into_iter()
        .map(|f| f.map(|(net, row)| (outs[net].clone().expect("evaluated"), row)))
        .collect()
}
