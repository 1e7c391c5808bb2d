//! A game's move at a group's decision: the policy it samples from, the targets its step
//! stores (the critic's advantages, at the sampled history or over the information state's
//! shadows) and the shadows after the sampled action.

use super::{Decision, Live, Shape};
use crate::policy::probs::normalized_relu;
use crate::rl::armac::actor::chance::ChanceNode;
use crate::rl::armac::actor::cv::CvStep;
use crate::rl::armac::actor::nets::{legal_mask, q_of, state_value};
use crate::rl::armac::actor::roles::{candidate_heads, candidate_policy, sample};
use crate::rl::armac::actor::shadow::shadows_after_action;
use crate::rl::armac::trajectory::Step;
use crate::util::SplitMix64;

/// One game's decision as its targets are computed: the game `g`, the acting player `p`,
/// the legal actions and `π^j` there (where it is needed).
struct Here<'a> {
    g: usize,
    p: usize,
    legal: &'a [bool],
    pij: Option<&'a [f32]>,
    dec: &'a Decision,
}

impl Shape {
    /// Game `g`'s decision, player `p` acting: the policy it samples from, the stored
    /// targets, the sampled action and the step that records them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn act(
        &self,
        l: &mut Live,
        g: usize,
        p: usize,
        dec: &Decision,
        info: [Vec<f32>; 2],
        legal: Vec<bool>,
        rng: &mut SplitMix64,
    ) {
        let num_actions = self.num_actions;
        let learner_turn = p == l.traj.learning_player;
        let correcting = l.corrected.is_some() && l.roles.critic.is_some();
        // `π^j` here, computed once for every use below: the opponent's sampling policy,
        // the critic's state value at the learner's turns and the correction.
        let needs_pij = if learner_turn {
            l.roles.exact.is_none() && l.roles.critic.is_some()
        } else {
            !self.evaluation || correcting
        };
        let pij = needs_pij.then(|| {
            let (o, or) = dec.at(l.roles.opp, g);
            normalized_relu(
                &o.mean_regret[or * num_actions..(or + 1) * num_actions],
                &legal,
            )
        });
        let (probs, advantage, played) = if learner_turn {
            let here = Here {
                g,
                p,
                legal: &legal,
                pij: pij.as_deref(),
                dec,
            };
            let (mu, adv) = self.learner_policy(l, &here, correcting);
            (mu, adv, None)
        } else if self.evaluation {
            let (o, or) = dec.at(l.roles.opp, g);
            let r = or * num_actions..(or + 1) * num_actions;
            (o.avg_policy[r].to_vec(), None, None)
        } else {
            let pij = pij.clone().expect("π^j at the opponent's decision");
            let learning = l.traj.learning;
            (pij.clone(), None, learning.then_some(pij))
        };
        let action = sample(&probs, rng);
        debug_assert!(legal[action], "sampled an illegal action");
        if let (Some(cv), Some(c)) = (&mut l.corrected, l.roles.critic) {
            let lp = l.traj.learning_player;
            let (co, cr) = dec.at(c, g);
            cv.push(CvStep {
                step: l.traj.steps.len(),
                learner: learner_turn,
                q: q_of(co, cr, num_actions, lp).to_vec(),
                pi: pij.expect("π^j at a corrected decision"),
                legal: legal.clone(),
                action,
                behaviour: probs[action],
                chance_value: match l.chance.take() {
                    Some(ChanceNode::Value(v)) => Some(v),
                    _ => None,
                },
            });
        }
        l.traj.steps.push(Step {
            player: p,
            info,
            legal,
            action,
            advantage,
            played_policy: played,
            reach: l.reach as f32,
        });
        if learner_turn {
            l.reach *= f64::from(probs[action]);
        }
        self.advance_shadows(l, g, learner_turn, action, dec);
        l.state.apply_action(action);
    }

    /// The learning player's behaviour policy `μ` at `here` and, unless the episode's
    /// targets are corrected at its end, the stored mean-regret target. With
    /// [`AdvantageTarget::CorrectedInfoset`](crate::rl::armac::actor::AdvantageTarget::CorrectedInfoset) it records the decision's offset instead.
    fn learner_policy(
        &self,
        l: &mut Live,
        here: &Here,
        correcting: bool,
    ) -> (Vec<f32>, Option<Vec<f32>>) {
        let (g, p, legal) = (here.g, here.p, here.legal);
        let roles = &l.roles;
        let mu = if candidate_heads(roles.candidate).any() {
            let (beh, br) = here.dec.at(roles.beh, g);
            candidate_policy(roles.candidate, beh, br, legal)
        } else {
            normalized_relu(&vec![0.0; self.num_actions], legal)
        };
        let exact = roles.exact.as_ref().map(|e| {
            e.advantages(l.state.history(), p, self.num_actions)
                .expect("the exact tree holds every history the game reaches")
        });
        let critic = roles.critic;
        // With corrected targets the advantage is set when the episode ends.
        let adv = exact.or_else(|| {
            critic
                .filter(|_| !correcting)
                .map(|c| self.critic_advantage(l, here, c, true))
        });
        if let (true, Some(c), Some(_)) = (correcting, critic, &l.shadows) {
            // `CorrectedInfoset`: the control variate's mean moves from the sampled history
            // to the information state.
            let mean = self.critic_advantage(l, here, c, true);
            let at_history = self.critic_advantage(l, here, c, false);
            let off = mean.iter().zip(&at_history).map(|(m, h)| m - h).collect();
            l.offsets.push((l.traj.steps.len(), off));
        }
        (mu, adv)
    }

    /// The past critic `c`'s advantages `r = q_j(h, ·) − v_j(h)`,
    /// `v_j(h) = Σ_a π^j(s, a) q_j(h, a)`: at the sampled history, or with `over_shadows`
    /// (where the game tracks them) `Σ_h' π_{-i}(h') r(h') / Σ_h' π_{-i}(h')` over the
    /// information state's histories.
    fn critic_advantage(&self, l: &Live, here: &Here, c: usize, over_shadows: bool) -> Vec<f32> {
        let (g, p, num_actions) = (here.g, here.p, self.num_actions);
        let pij = here.pij.expect("π^j at a critic's decision");
        let advantage = |q: &[f32]| -> Vec<f32> {
            let v = state_value(pij, q);
            q.iter()
                .zip(here.legal)
                .map(|(x, &ok)| if ok { x - v } else { 0.0 })
                .collect()
        };
        match (over_shadows, &l.shadows, &here.dec.shadows[g]) {
            (true, Some(sh), Some((out, first))) => {
                let total: f64 = sh.iter().map(|x| x.weight).sum();
                let mut mean = vec![0.0f64; num_actions];
                for (k, x) in sh.iter().enumerate() {
                    let w = x.weight / total;
                    let q = q_of(out, first + k, num_actions, p);
                    for (m, a) in mean.iter_mut().zip(advantage(q)) {
                        *m += w * f64::from(a);
                    }
                }
                mean.into_iter().map(|m| m as f32).collect()
            }
            _ => {
                let (co, cr) = here.dec.at(c, g);
                advantage(q_of(co, cr, num_actions, p))
            }
        }
    }

    /// The shadows after `action`: the learning player's action moves every shadow along;
    /// an opponent action branches each shadow over the actions that look the same to the
    /// learning player, weighted by `π^j` there.
    fn advance_shadows(
        &self,
        l: &mut Live,
        g: usize,
        learner_turn: bool,
        action: usize,
        dec: &Decision,
    ) {
        let num_actions = self.num_actions;
        if learner_turn {
            if let Some(sh) = &mut l.shadows {
                for x in sh.iter_mut() {
                    x.state.apply_action(action);
                }
            }
        } else if let (Some(sh), Some((out, first))) = (l.shadows.take(), &dec.shadows[g]) {
            let pis: Vec<Vec<f32>> = sh
                .iter()
                .enumerate()
                .map(|(k, x)| {
                    let r = (first + k) * num_actions..(first + k + 1) * num_actions;
                    normalized_relu(
                        &out.mean_regret[r],
                        &legal_mask(x.state.as_ref(), num_actions),
                    )
                })
                .collect();
            let lp = l.traj.learning_player;
            l.shadows =
                shadows_after_action(sh, &pis, l.state.as_ref(), action, lp, self.info_size);
        }
    }
}
