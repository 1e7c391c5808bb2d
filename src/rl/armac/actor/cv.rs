//! Baseline-corrected advantage targets ([`AdvantageTarget::Corrected`]): the past critic as
//! a control variate along each sampled episode.
//!
//! [`AdvantageTarget::Corrected`]: super::AdvantageTarget::Corrected

use super::nets::state_value;

/// One decision of a learning episode as [`corrected_advantages`] needs it.
#[derive(Clone, Debug)]
pub struct CvStep {
    /// Index of the decision in the trajectory's steps.
    pub step: usize,
    /// Whether the learning player acted.
    pub learner: bool,
    /// The past critic's `q_j(h, ·)` for the learning player's utility (0 at illegal actions).
    pub q: Vec<f32>,
    /// `π^j` at this decision (0 at illegal actions).
    pub pi: Vec<f32>,
    /// The legal actions (advantages at the others are 0).
    pub legal: Vec<bool>,
    /// The action played and the probability the behaviour policy gave it.
    pub action: usize,
    pub behaviour: f32,
    /// With a chance baseline (`armac.chance_baseline`), when a chance node came between the
    /// previous decision and this one: `Σ_o p(o) v(h_o)` over its outcomes `o`, where
    /// `v(h_o) = Σ_a π^j(a) q(h_o, a)` at the decision each outcome leads to (this decision's
    /// `v` for the outcome played).
    pub chance_value: Option<f32>,
}

/// Baseline-corrected advantages of one episode, walking its decisions backwards from the
/// learning player's (scaled) return `ret`: at a decision with sampled action `a*`,
/// `ũ(h, a) = q(h, a) + 1[a = a*] (ũ(h a*) − q(h, a*)) / ξ(a*)` and
/// `ũ(h) = Σ_a π(a) ũ(h, a)`. Chance passes `ũ` through, or with a chance value
/// ([`CvStep::chance_value`]) returns `Σ_o p(o) v(h_o) + ũ(h_{o*}) − v(h_{o*})`, which is
/// corrected in the same way (the sampled outcome has its true probability, so no weight): its
/// mean is the chance node's value and the luck of the draw cancels as far as `v` tracks it.
/// Given the history, `ũ(h, a)` is an
/// unbiased estimate of `q_π(h, a)` for any `q` (the baselines paper's Theorem 1: each
/// correction has mean zero and the terminal values are exact), so `ũ(h, ·) − ũ(h)` at the learning player's
/// decisions is an unbiased estimate of `π`'s advantages there. Returns those targets as
/// `(step index, advantages)`.
///
/// The importance weights `1 / ξ` compound along the episode, so a rare sample can be far
/// outside what any value can be. `range` is the learning player's utility range (in the
/// stored units): each `ũ(h)` passed upwards is clipped to it and each advantage to
/// `±(range[1] − range[0])`, the bounds of every true value and advantage. Clipping moves a
/// sample towards the truth, never away from it, at the price of a small bias in the tails.
pub fn corrected_advantages(steps: &[CvStep], ret: f32, range: [f32; 2]) -> Vec<(usize, Vec<f32>)> {
    let width = range[1] - range[0];
    let mut u = ret;
    let mut out = Vec::new();
    for c in steps.iter().rev() {
        let v = state_value(&c.pi, &c.q);
        let corr = (u - c.q[c.action]) / c.behaviour;
        let uh = v + c.pi[c.action] * corr;
        if c.learner {
            let adv =
                c.q.iter()
                    .enumerate()
                    .zip(&c.legal)
                    .map(|((a, &q), &ok)| match (ok, a == c.action) {
                        (false, _) => 0.0,
                        (true, true) => (q + corr - uh).clamp(-width, width),
                        (true, false) => (q - uh).clamp(-width, width),
                    })
                    .collect();
            out.push((c.step, adv));
        }
        u = uh.clamp(range[0], range[1]);
        if let Some(ev) = c.chance_value {
            u = (ev + u - v).clamp(range[0], range[1]);
        }
    }
    out
}
