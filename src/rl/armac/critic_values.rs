//! The ARMAC network's global critic as a value estimate for AIVAT
//! ([`crate::eval::aivat::ValueEstimate`]).
//!
//! At a decision `h` the critic gives `q_0(h, a)`, player 0's value of each action (ARMAC
//! paper, section 3.2: it reads both players' information-state tensors, so it sees the whole
//! deal). The value of the history is `V(h) = Σ_a π̄(a|h) q_0(h, a)` with `π̄` the network's
//! own average policy at `h` (one forward pass gives both heads), times the run's reward scale
//! (the critic learned returns divided by it). The critic learned the values of the policies
//! that trained it, not of a given match's pair, so it is an approximation: AIVAT stays
//! unbiased whatever the estimate, and the closer it is, the narrower the interval.

use crate::eval::aivat::ValueEstimate;
use crate::eval::aivat_pair::ActionValues;
use crate::game::{GameRef, State, Turn};
use crate::nn::armac::{ActBatch, ActOutput, ArmacPolicyNet, Heads};
use crate::policy::PolicyError;

/// The critic of one feed-forward ARMAC network (module docs).
pub struct ArmacCritic {
    net: ArmacPolicyNet,
    game: GameRef,
    epoch: u64,
    reward_scale: f64,
}

impl ArmacCritic {
    /// The critic of `net` (epoch `epoch`) on `game`, whose returns the run divided by
    /// `reward_scale`.
    pub fn new(net: ArmacPolicyNet, game: GameRef, epoch: u64, reward_scale: f64) -> Self {
        ArmacCritic {
            net,
            game,
            epoch,
            reward_scale,
        }
    }
}

impl ArmacCritic {
    /// One forward pass at `states` (decisions): the critic and the average-policy heads.
    fn forward(&self, states: &[&dyn State]) -> Result<ActOutput, PolicyError> {
        let n_in = self.game.information_state_tensor_size();
        let n_a = self.game.num_distinct_actions();
        let mut batch = ActBatch::new();
        let mut info = [vec![0.0; n_in], vec![0.0; n_in]];
        for s in states {
            let Turn::Player(p) = s.turn() else {
                return Err(PolicyError::NotADecision);
            };
            for (q, row) in info.iter_mut().enumerate() {
                s.information_state_tensor(q, row);
            }
            let mut legal = vec![false; n_a];
            for a in s.legal_actions() {
                legal[a] = true;
            }
            batch.push(&info[p], &info[0], &info[1], &legal);
        }
        let heads = Heads::CRITIC.union(Heads::AVG_POLICY);
        self.net
            .evaluate_heads(&batch, heads)
            .map_err(|e| PolicyError::Failed {
                policy: ValueEstimate::name(self),
                reason: e.to_string(),
            })
    }
}

impl ActionValues for ArmacCritic {
    /// `q_0(h, a)` of each legal action, times the reward scale.
    fn action_values(&self, states: &[&dyn State]) -> Result<Vec<Vec<f64>>, PolicyError> {
        let n_a = self.game.num_distinct_actions();
        let out = self.forward(states)?;
        Ok(states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.legal_actions()
                    .into_iter()
                    .map(|a| out.q0[i * n_a + a] as f64 * self.reward_scale)
                    .collect()
            })
            .collect())
    }

    fn name(&self) -> String {
        ValueEstimate::name(self)
    }
}

impl ValueEstimate for ArmacCritic {
    fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError> {
        let n_a = self.game.num_distinct_actions();
        let out = self.forward(states)?;
        Ok((0..states.len())
            .map(|i| {
                let row = i * n_a..(i + 1) * n_a;
                let v: f64 = out.q0[row.clone()]
                    .iter()
                    .zip(&out.avg_policy[row])
                    .map(|(&q, &p)| q as f64 * p as f64)
                    .sum();
                v * self.reward_scale
            })
            .collect())
    }

    fn name(&self) -> String {
        format!("armac-critic(epoch {})", self.epoch)
    }
}
