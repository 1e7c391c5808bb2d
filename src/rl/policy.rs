//! ARMAC's average-policy head as a [`crate::policy::Policy`] and an LBR
//! [`crate::eval::lbr::RangePolicy`] (whole ranges in one batched forward pass).

use super::sequence::{decision_path, gather_rows, seq_inputs};
use crate::game::GameRef;
use crate::nn::armac::{ActBatch, ArmacPolicyNet};

/// The average-policy head `π̄` of an ARMAC checkpoint as a [`Policy`]: the acting player's
/// information-state tensor goes through the network; probabilities are renormalised over the
/// legal actions.
pub struct ArmacAveragePolicy {
    net: ArmacPolicyNet,
    game: GameRef,
    epoch: u64,
}

impl ArmacAveragePolicy {
    /// The average-policy head of `net` (the network of epoch `epoch`) playing `game`.
    pub fn new(net: ArmacPolicyNet, game: GameRef, epoch: u64) -> Self {
        ArmacAveragePolicy { net, game, epoch }
    }

    /// Recurrent checkpoints: the network's outputs at the last decision of each of
    /// `histories`, running it from the root along each history's decisions (one batch).
    fn recurrent_outputs(
        &self,
        histories: &[&[crate::game::Action]],
    ) -> Result<crate::nn::armac::ActOutput, crate::policy::PolicyError> {
        let bad = |reason: String| crate::policy::PolicyError::BadEntry {
            key: self.game.load_string(),
            reason,
        };
        let paths = histories
            .iter()
            .map(|h| decision_path(self.game.as_ref(), h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("replaying the history: {e}")))?;
        let time = paths.iter().map(Vec::len).max().unwrap_or(0);
        let mut last = Vec::with_capacity(paths.len());
        for (i, path) in paths.iter().enumerate() {
            if path.is_empty() {
                return Err(crate::policy::PolicyError::NotADecision);
            }
            last.push(i * time + path.len() - 1);
        }
        let seqs: Vec<&[crate::rl::trajectory::Step]> = paths.iter().map(|x| &x[..]).collect();
        let cfg = self.net.config();
        let inputs = seq_inputs(&seqs, time, cfg.input_size, cfg.num_actions);
        let (out, _) = self
            .net
            .evaluate_sequences(&inputs, time.max(1))
            .map_err(|e| bad(e.to_string()))?;
        Ok(gather_rows(&out, &last))
    }
}

impl crate::policy::Policy for ArmacAveragePolicy {
    fn action_probabilities(
        &self,
        state: &dyn crate::game::State,
    ) -> Result<Vec<f64>, crate::policy::PolicyError> {
        let p = match state.turn() {
            crate::game::Turn::Player(p) => p,
            _ => return Err(crate::policy::PolicyError::NotADecision),
        };
        let legal_actions = state.legal_actions();
        let out = if self.net.config().recurrent {
            self.recurrent_outputs(&[state.history()])?
        } else {
            let mut info = vec![0.0; self.game.information_state_tensor_size()];
            state.information_state_tensor(p, &mut info);
            let mut legal = vec![false; self.game.num_distinct_actions()];
            for &a in &legal_actions {
                legal[a] = true;
            }
            let mut batch = ActBatch::default();
            batch.push(&info, &info, &info, &legal);
            self.net.evaluate(&batch)
        };
        let probs: Vec<f64> = legal_actions
            .iter()
            .map(|&a| out.avg_policy[a] as f64)
            .collect();
        let total: f64 = probs.iter().sum();
        let n = probs.len() as f64;
        Ok(probs
            .iter()
            .map(|&x| if total > 0.0 { x / total } else { 1.0 / n })
            .collect())
    }

    fn name(&self) -> String {
        format!("armac-average-policy(epoch {})", self.epoch)
    }
}

/// Whole ranges in one batched forward pass: LBR asks for the policy of every hand the
/// player might hold; each hand's information-state tensor is built from a replay with that
/// hand ([`crate::eval::lbr::with_hole_cards`]) and the network sees all of them at once.
impl crate::eval::lbr::RangePolicy for ArmacAveragePolicy {
    fn hand_action_probabilities(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<crate::eval::lbr::ActionProbs>, crate::policy::PolicyError> {
        use crate::game::State as _;
        use crate::policy::PolicyError;
        let p = match state.turn() {
            crate::game::Turn::Player(p) => p,
            _ => return Err(PolicyError::NotADecision),
        };
        let n_actions = self.game.num_distinct_actions();
        if n_actions > 4 {
            return Err(PolicyError::BadEntry {
                key: self.game.load_string(),
                reason: "range queries support at most 4 actions (fold/call/pot/all-in)".into(),
            });
        }
        let recurrent = self.net.config().recurrent;
        let mut info = vec![0.0; self.game.information_state_tensor_size()];
        let mut legal = vec![false; n_actions];
        let mut batch = ActBatch::default();
        let mut histories = Vec::new();
        for &h in hands {
            let s = crate::eval::lbr::with_hole_cards(state, p, h as usize).ok_or_else(|| {
                PolicyError::BadEntry {
                    key: format!("hand {h}"),
                    reason: "the hand collides with cards already dealt".into(),
                }
            })?;
            legal.iter_mut().for_each(|l| *l = false);
            for a in s.legal_actions() {
                legal[a] = true;
            }
            if recurrent {
                histories.push(s.history().to_vec());
            } else {
                s.information_state_tensor(p, &mut info);
                batch.push(&info, &info, &info, &legal);
            }
        }
        let out = if recurrent {
            let hs: Vec<&[crate::game::Action]> = histories.iter().map(|h| &h[..]).collect();
            self.recurrent_outputs(&hs)?
        } else {
            self.net.evaluate(&batch)
        };
        Ok((0..hands.len())
            .map(|r| {
                let row = &out.avg_policy[r * n_actions..(r + 1) * n_actions];
                let total: f64 = row.iter().map(|&x| x as f64).sum();
                let n_legal = legal.iter().filter(|&&l| l).count().max(1) as f64;
                let mut probs = [0.0; 4];
                for a in 0..n_actions {
                    probs[a] = if total > 0.0 {
                        row[a] as f64 / total
                    } else if legal[a] {
                        1.0 / n_legal
                    } else {
                        0.0
                    };
                }
                probs
            })
            .collect())
    }

    fn name(&self) -> String {
        crate::policy::Policy::name(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::lbr::{PerHand, RangePolicy};
    use crate::game::{Action, State as _, Turn};
    use crate::games::cards::{CardSet, HOLE_MASKS, NUM_HOLE_HANDS, parse_cards};
    use crate::games::load_game;
    use crate::games::universal_poker::UniversalPokerGame;
    use crate::nn::armac::ArmacNetConfig;

    /// A recurrent checkpoint's batched range query (the network run along every hand's
    /// history at once) agrees with querying the policy state by state, and the answer depends
    /// on the history, not only on the current observation.
    #[test]
    fn recurrent_range_queries_match_per_state_queries() {
        let game = load_game("hunl_fcpa").unwrap();
        let cfg = ArmacNetConfig::new(game.observation_tensor_size(), game.num_distinct_actions())
            .with_encoder_hidden(16)
            .with_head_hidden(16)
            .with_recurrent(true);
        let policy = ArmacAveragePolicy {
            net: ArmacPolicyNet::init(cfg, 11).unwrap(),
            game: game.clone(),
            epoch: 0,
        };
        let mut s = UniversalPokerGame::hunl_fcpa().initial_state();
        for c in parse_cards("AsKd2c3d").unwrap() {
            s.apply(c as Action);
        }
        s.apply(1); // the small blind calls; the big blind acts at its second decision step
        assert_eq!(s.turn(), Turn::Player(0));
        let dead = CardSet::from_cards(&parse_cards("2c3d").unwrap());
        let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
            .filter(|&h| HOLE_MASKS[h as usize] & dead.0 == 0)
            .take(40)
            .collect();
        let batched = policy.hand_action_probabilities(&s, &hands).unwrap();
        let single = PerHand(ArmacAveragePolicy {
            net: policy.net.clone(),
            game: game.clone(),
            epoch: 0,
        })
        .hand_action_probabilities(&s, &hands)
        .unwrap();
        for (x, y) in batched.iter().zip(&single) {
            assert!(
                x.iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-5),
                "{x:?} vs {y:?}"
            );
            assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        }
        // Same acting player and own cards, different history: the preceding decision's
        // observations change the answer.
        let path = decision_path(game.as_ref(), s.history()).unwrap();
        assert_eq!(path.len(), 2);
        let direct = policy.recurrent_outputs(&[s.history()]).unwrap();
        let inputs = seq_inputs(&[&path[1..]], 1, policy.net.config().input_size, 4);
        let (fresh, _) = policy.net.evaluate_sequences(&inputs, 1).unwrap();
        assert!(
            direct
                .avg_policy
                .iter()
                .zip(&fresh.avg_policy)
                .any(|(a, b)| (a - b).abs() > 1e-6),
            "{:?} vs {:?}",
            direct.avg_policy,
            fresh.avg_policy
        );
    }
}
