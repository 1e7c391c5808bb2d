//! Reservoir memories of the mean-regret and average-policy targets (`armac.memory =
//! "reservoir"`).
//!
//! Algorithm 1 regresses `W̄` on the decisions of the current data set, each carrying the
//! advantage `A_{π^j}(h, ·)` of one past policy `j` drawn uniformly. The target of one row is
//! then a single sample of a quantity whose mean (Eq. 3, the mean regret) shrinks like
//! `1/√T` while its spread does not: with a bounded data set, regret matching on `W̄` ends up
//! matching noise. Here every learning decision ever played is offered to a reservoir
//! (Vitter's Algorithm R, so the reservoir is a uniform sample of all of them), the opponent
//! plays the previous epoch's policy `π^{t−1}` (`past_draw = "latest"`), and the heads regress on
//! rows drawn from the reservoirs. Epoch `e` then contributes advantages of `π^{e−1}` with the
//! frequency the opponent's reach gives them, so the reservoir's mean at an information state
//! `s` is Eq. 3's `W^T(s, ·)` (every epoch, one policy each) and its noise falls as epochs
//! accumulate, as in Deep CFR's advantage memory.
//!
//! The learning player `i` follows a behaviour policy `μ` that changes between episodes and
//! epochs. A decision at `s` is recorded with probability proportional to `η_i^μ(s)` (and to
//! the opponent's and chance's reach). Eq. 3's weights have the opponent's reach only, so with
//! [`MemoryWeights::Reach`] each row's loss is weighted by `1 / η_i^μ(s)`, the inverse of the
//! learning player's own behaviour reach recorded by the actor ([`Step::reach`]), clipped at
//! `max_weight`. The same holds for the average policy: the opponent plays `π^{t−1}` on
//! policy, so the frequency of its decisions carries its own reach (the weight of `π^{t−1}(s)`
//! in the average policy) times the learning player's behaviour reach, which the weight
//! removes.

use super::reservoir::Reservoir;
use super::trajectory::{Step, Trajectory, decode_replay, encode_steps};
use crate::nn::armac::{TrainBatch, TrainRow};
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// Where the mean-regret and average-policy heads get their targets (`armac.memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// The trajectories of the replay memory (Algorithm 1 as stated).
    #[default]
    Replay,
    /// Reservoirs of all learning decisions ever played (see the module docs).
    Reservoir,
}

/// Loss weights of reservoir samples (`armac.memory_weights`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryWeights {
    /// `1 / η_i^μ(s)`, clipped.
    #[default]
    Reach,
    /// Every sample weighs 1.
    None,
}

/// The two reservoirs and how their samples are weighted.
#[derive(Clone, Debug)]
pub struct Memory {
    /// Learning-player decisions with their advantages (mean-regret targets).
    pub regret: Reservoir<Step>,
    /// Opponent decisions with the policy it played (average-policy targets).
    pub policy: Reservoir<Step>,
    weights: MemoryWeights,
    max_weight: f32,
}

impl Memory {
    /// Empty reservoirs of `capacity` samples each.
    pub fn new(capacity: usize, weights: MemoryWeights, max_weight: f64) -> Memory {
        Memory {
            regret: Reservoir::new(capacity),
            policy: Reservoir::new(capacity),
            weights,
            max_weight: max_weight as f32,
        }
    }

    /// Offers the learning decisions of `t` (nothing for episodes that only rank candidates).
    pub fn add(&mut self, t: &Trajectory, rng: &mut SplitMix64) {
        if !t.learning {
            return;
        }
        for s in &t.steps {
            if s.player == t.learning_player && s.advantage.is_some() {
                self.regret.push(s.clone(), rng);
            } else if s.player != t.learning_player && s.played_policy.is_some() {
                self.policy.push(s.clone(), rng);
            }
        }
    }

    /// The loss weight of a sample.
    pub fn weight(&self, s: &Step) -> f32 {
        match self.weights {
            MemoryWeights::None => 1.0,
            MemoryWeights::Reach => (1.0 / s.reach.max(f32::MIN_POSITIVE)).min(self.max_weight),
        }
    }

    /// Appends `n` rows drawn uniformly from each non-empty reservoir to `tb`: regret rows train
    /// only the mean-regret head, policy rows only the average-policy head.
    pub fn push_rows(&self, tb: &mut TrainBatch, n: usize, rng: &mut SplitMix64) {
        for (res, is_regret) in [(&self.regret, true), (&self.policy, false)] {
            for _ in 0..n {
                let Some(s) = res.sample_uniform(rng) else {
                    break;
                };
                let w = self.weight(s);
                let na = s.legal.len();
                let zeros = vec![0.0; na];
                let target = |v: &Option<Vec<f32>>| v.clone().unwrap_or_else(|| zeros.clone());
                let (regret, policy) = (target(&s.advantage), target(&s.played_policy));
                tb.push(&TrainRow {
                    own: &s.info[s.player],
                    both0: &s.info[0],
                    both1: &s.info[1],
                    legal: &s.legal,
                    action: s.action,
                    critic_target: [0.0; 2],
                    critic_weight: 0.0,
                    regret_target: &regret,
                    regret_weight: if is_regret { w } else { 0.0 },
                    immediate_target: &zeros,
                    immediate_weight: 0.0,
                    policy_target: &policy,
                    policy_weight: if is_regret { 0.0 } else { w },
                });
            }
        }
    }

    /// The reservoirs as bytes (replay-file format, one single-step trajectory per sample;
    /// `epoch` holds nothing) and their counts of samples seen.
    pub fn encode(&self, info_len: usize, num_actions: usize) -> [(Vec<u8>, u64); 2] {
        [&self.regret, &self.policy].map(|r| {
            (
                encode_steps(r.items().iter(), info_len, num_actions),
                r.seen(),
            )
        })
    }

    /// Rebuilds the reservoirs from [`Self::encode`]'s bytes; the error says which part is bad.
    pub fn decode(
        &mut self,
        parts: [(&[u8], u64); 2],
        info_len: usize,
        num_actions: usize,
    ) -> Result<(), String> {
        let [regret, policy] = parts.map(|(bytes, seen)| -> Result<Reservoir<Step>, String> {
            let items: Vec<Step> = decode_replay(bytes, info_len, num_actions)?
                .into_iter()
                .map(|t| {
                    let mut steps = t.steps;
                    if steps.len() == 1 {
                        Ok(steps.pop().expect("one step"))
                    } else {
                        Err(format!("a sample with {} steps", steps.len()))
                    }
                })
                .collect::<Result<_, String>>()?;
            Reservoir::from_parts(self.regret.capacity(), seen, items)
        });
        self.regret = regret.map_err(|e| format!("regret memory: {e}"))?;
        self.policy = policy.map_err(|e| format!("average-policy memory: {e}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(player: usize, reach: f32, adv: bool) -> Step {
        Step {
            player,
            info: [vec![player as f32, 1.0], vec![2.0, reach]],
            legal: vec![true, true],
            action: 1,
            advantage: adv.then(|| vec![0.5, -0.5]),
            played_policy: (!adv).then(|| vec![0.25, 0.75]),
            reach,
        }
    }

    fn episode(learning: bool) -> Trajectory {
        Trajectory {
            epoch: 3,
            learning_player: 0,
            learning,
            steps: vec![step(0, 1.0, true), step(1, 0.5, false), step(0, 0.25, true)],
            returns: [1.0, -1.0],
        }
    }

    #[test]
    fn learning_decisions_split_into_the_two_reservoirs_with_reach_weights() {
        let mut rng = SplitMix64::new(1);
        let mut m = Memory::new(8, MemoryWeights::Reach, 3.0);
        m.add(&episode(false), &mut rng);
        assert!(m.regret.is_empty() && m.policy.is_empty());
        m.add(&episode(true), &mut rng);
        assert_eq!((m.regret.len(), m.policy.len()), (2, 1));
        // 1/reach, clipped at 3.
        let w: Vec<f32> = m.regret.items().iter().map(|s| m.weight(s)).collect();
        assert_eq!(w, vec![1.0, 3.0]);
        assert_eq!(m.weight(&m.policy.items()[0]), 2.0);
        let flat = Memory::new(8, MemoryWeights::None, 3.0);
        assert_eq!(flat.weight(&m.regret.items()[1]), 1.0);

        let mut tb = TrainBatch::new();
        m.push_rows(&mut tb, 4, &mut rng);
        assert_eq!(tb.rows(), 8);
        for r in 0..8 {
            assert_eq!(tb.critic_weight[r], 0.0);
            assert_eq!(tb.immediate_weight[r], 0.0);
            let regret_row = r < 4;
            assert_eq!(tb.regret_weight[r] > 0.0, regret_row);
            assert_eq!(tb.policy_weight[r] > 0.0, !regret_row);
            if regret_row {
                assert_eq!(&tb.regret_target[2 * r..2 * r + 2], &[0.5, -0.5]);
            } else {
                assert_eq!(tb.policy_weight[r], 2.0);
                assert_eq!(&tb.policy_target[2 * r..2 * r + 2], &[0.25, 0.75]);
                // The opponent's own tensor is its input.
                assert_eq!(&tb.own[2 * r..2 * r + 2], &[2.0, 0.5]);
            }
        }
    }

    #[test]
    fn memory_round_trips_and_names_the_bad_part() {
        let mut rng = SplitMix64::new(2);
        let mut m = Memory::new(2, MemoryWeights::Reach, 20.0);
        for _ in 0..3 {
            m.add(&episode(true), &mut rng);
        }
        assert_eq!((m.regret.seen(), m.policy.seen()), (6, 3));
        let [(rb, rs), (pb, ps)] = m.encode(2, 2);
        let mut back = Memory::new(2, MemoryWeights::Reach, 20.0);
        back.decode([(&rb, rs), (&pb, ps)], 2, 2).unwrap();
        assert_eq!(format!("{:?}", back.regret), format!("{:?}", m.regret));
        assert_eq!(format!("{:?}", back.policy), format!("{:?}", m.policy));
        let mut bad = pb.clone();
        bad[12] ^= 1;
        let e = back.decode([(&rb, rs), (&bad, ps)], 2, 2).unwrap_err();
        assert!(e.contains("average-policy memory"), "{e}");
        let e = back.decode([(&rb, 1), (&pb, ps)], 2, 2).unwrap_err();
        assert!(e.contains("regret memory"), "{e}");
    }
}
