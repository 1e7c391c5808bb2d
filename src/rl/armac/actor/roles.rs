//! Which networks an episode plays with ([`Roles`], drawn by [`draw_roles`]) and the
//! behaviour policies of the exploration candidates (section 3.3).

use super::nets::{Nets, slot};
use super::{Behaviour, PastDraw, Snapshots};
use crate::nn::armac::{ActOutput, Heads};
use crate::policy::probs::{mix_epsilon, normalized_relu};
use crate::rl::armac::candidates::Candidate;
use crate::rl::armac::exact_values::ExactValues;
use crate::util::SplitMix64;
use std::sync::Arc;

/// Draws an index with probability proportional to `probs` (negative entries as 0).
pub(super) fn sample(probs: &[f32], rng: &mut SplitMix64) -> usize {
    let w: Vec<f64> = probs.iter().map(|&p| p.max(0.0) as f64).collect();
    rng.weighted(&w)
}

/// The behaviour policy of candidate `c` for one row of network outputs.
pub fn candidate_policy(c: Candidate, out: &ActOutput, row: usize, legal: &[bool]) -> Vec<f32> {
    let a = legal.len();
    let r = row * a..(row + 1) * a;
    match c {
        Candidate::Uniform => normalized_relu(&vec![0.0; a], legal),
        Candidate::Immediate(_) => mix_epsilon(
            &normalized_relu(&out.immediate_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::MeanRegret(_) => mix_epsilon(
            &normalized_relu(&out.mean_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::Average => out.avg_policy[r].to_vec(),
    }
}

/// The output of the exploring network that [`candidate_policy`] reads for `c` (none for the
/// uniform candidate).
pub(super) fn candidate_heads(c: Candidate) -> Heads {
    match c {
        Candidate::Uniform => Heads::NONE,
        Candidate::Immediate(_) => Heads {
            immediate_regret: true,
            ..Heads::NONE
        },
        Candidate::MeanRegret(_) => Heads::MEAN_REGRET,
        Candidate::Average => Heads::AVG_POLICY,
    }
}

/// What one episode of a group plays with: indices into the group's network list.
#[derive(Clone)]
pub(super) struct Roles {
    /// The opponent's network (`π^j`; the latest network in evaluation groups and epoch 0).
    pub(super) opp: usize,
    /// The exploring network of the learning player's candidate.
    pub(super) beh: usize,
    /// The past critic `θ^{j+1}` (learning episodes only).
    pub(super) critic: Option<usize>,
    /// Exact values of `π^j` (ablation), used instead of the critic.
    pub(super) exact: Option<Arc<ExactValues>>,
    /// The learning player's exploration candidate.
    pub(super) candidate: Candidate,
}

/// The networks of one episode (or of a whole evaluation group).
pub(super) fn draw_roles(
    snaps: &Snapshots,
    draw: PastDraw,
    behaviour: Behaviour,
    evaluation: bool,
    candidates: &[Candidate],
    nets: &mut Nets,
    rng: &mut SplitMix64,
) -> Roles {
    if evaluation {
        let latest = slot(nets, &snaps.latest, snaps.latest_table.as_ref());
        return Roles {
            opp: latest,
            beh: latest,
            critic: None,
            exact: None,
            candidate: candidates[rng.below(candidates.len())],
        };
    }
    // Learning episodes: past epoch j for the opponent and the advantages. Without a past
    // epoch (epoch 0) the opponent plays π^t and no regret or policy targets are stored.
    let past = if draw == PastDraw::Latest {
        snaps.previous.clone()
    } else {
        (!snaps.past.is_empty()).then(|| snaps.past[rng.below(snaps.past.len())].clone())
    };
    let beh = if snaps.past.is_empty() || rng.next_f64() < 0.5 {
        (snaps.latest.clone(), snaps.latest_table.clone())
    } else {
        let p = &snaps.past[rng.below(snaps.past.len())];
        (p.policy.clone(), p.table.clone())
    };
    let candidate = if behaviour == Behaviour::Uniform && past.is_some() {
        Candidate::Uniform
    } else if rng.next_f64() < 0.5 {
        snaps.best
    } else {
        candidates[rng.below(candidates.len())]
    };
    let opp = match &past {
        Some(p) => slot(nets, &p.policy, p.table.as_ref()),
        None => slot(nets, &snaps.latest, snaps.latest_table.as_ref()),
    };
    Roles {
        opp,
        beh: slot(nets, &beh.0, beh.1.as_ref()),
        critic: past.as_ref().map(|p| slot(nets, &p.critic, None)),
        exact: past.as_ref().and_then(|p| p.exact.clone()),
        candidate,
    }
}
