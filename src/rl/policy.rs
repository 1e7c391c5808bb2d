//! ARMAC's average-policy head as a [`crate::policy::Policy`] and an LBR
//! [`crate::eval::lbr::RangePolicy`] (whole ranges in one batched forward pass).

use super::sequence::{decision_path, gather_rows, seq_inputs};
use crate::game::{Action, GameRef};
use crate::games::cards::{CardSet, HOLE_CARDS, HOLE_MASKS, NUM_CARDS, NUM_HOLE_HANDS};
use crate::nn::armac::{ActBatch, ArmacPolicyNet, RecurrentState};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// Cached encoder states kept per thread by the recurrent range-query path (each about
/// `1326 × 2 × representation × 4` bytes).
const RANGE_CACHE_ENTRIES: usize = 24;

/// One cached state: the acting player's encoder, for every hole-card hand (row = hand index),
/// after the decisions of a history prefix whose own hole cards are masked out.
struct RangeCacheEntry {
    key: Vec<Action>,
    state: Arc<RecurrentState>,
}

/// Recent encoder states of range queries, per worker thread (LBR plays one hand per thread at
/// a time, and its queries walk down that hand's history).
#[derive(Default)]
struct RangeCache {
    threads: Mutex<HashMap<ThreadId, VecDeque<RangeCacheEntry>>>,
}

impl RangeCache {
    fn get(&self, key: &[Action]) -> Option<Arc<RecurrentState>> {
        let map = self.threads.lock().ok()?;
        map.get(&std::thread::current().id())?
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.state.clone())
    }

    fn put(&self, key: Vec<Action>, state: Arc<RecurrentState>) {
        if let Ok(mut map) = self.threads.lock() {
            let q = map.entry(std::thread::current().id()).or_default();
            if q.len() >= RANGE_CACHE_ENTRIES {
                q.pop_front();
            }
            q.push_back(RangeCacheEntry { key, state });
        }
    }
}

/// Marks a masked-out hole card in a cache key (no real action has this id).
const MASKED: Action = Action::MAX;

/// The average-policy head `π̄` of an ARMAC checkpoint as a [`Policy`]: the acting player's
/// information-state tensor goes through the network; probabilities are renormalised over the
/// legal actions.
pub struct ArmacAveragePolicy {
    net: ArmacPolicyNet,
    game: GameRef,
    epoch: u64,
    /// `false` forces recurrent range queries down the replay-from-the-root path (tests,
    /// benchmarks).
    incremental: bool,
    cache: RangeCache,
}

impl ArmacAveragePolicy {
    /// The average-policy head of `net` (the network of epoch `epoch`) playing `game`.
    pub fn new(net: ArmacPolicyNet, game: GameRef, epoch: u64) -> Self {
        ArmacAveragePolicy {
            net,
            game,
            epoch,
            incremental: true,
            cache: RangeCache::default(),
        }
    }

    /// Chooses how a recurrent network answers range queries: `true` (the default) steps the
    /// encoder once per decision for all 1326 hands at once and caches the states along the
    /// hand; `false` replays every hand's history from the root (the reference path).
    pub fn with_incremental_ranges(mut self, incremental: bool) -> Self {
        self.incremental = incremental;
        self
    }

    /// Recurrent range queries on a 52-card Hold'em game, incrementally: one walk down the
    /// actual history records player `p`'s observation at every decision; each hand's
    /// observation is that one with the hole-card bits replaced (the layout of
    /// `UniversalPokerState::observation_tensor`: player one-hot, own cards, board, bets), and
    /// only the decisions past the longest cached prefix go through the encoder, all hands in
    /// one batch.
    fn incremental_range(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        hands: &[u16],
    ) -> Result<Vec<crate::eval::lbr::ActionProbs>, crate::policy::PolicyError> {
        use crate::game::{State as _, Turn};
        use crate::policy::PolicyError;
        let bad = |reason: String| PolicyError::BadEntry {
            key: self.game.load_string(),
            reason,
        };
        let mut dead = CardSet::from_cards(state.board_cards());
        dead = CardSet(dead.0 | CardSet::from_cards(state.hole_cards(1 - p)).0);
        for &h in hands {
            if HOLE_MASKS.get(h as usize).is_none_or(|m| m & dead.0 != 0) {
                return Err(PolicyError::BadEntry {
                    key: format!("hand {h}"),
                    reason: "the hand collides with cards already dealt".into(),
                });
            }
        }
        let (n_in, na) = (self.net.config().input_size, self.net.config().num_actions);
        let history = state.history();
        // Player p's observation, legal mask and masked history length at each decision.
        let mut walk = state.clone();
        walk.reset();
        let mut decisions: Vec<(usize, Vec<f32>, Vec<f32>)> = Vec::new();
        for i in 0..=history.len() {
            if let Turn::Player(_) = walk.turn() {
                let mut obs = vec![0.0; n_in];
                walk.observation_tensor(p, &mut obs);
                let mut legal = vec![0.0; na];
                for a in walk.legal_actions() {
                    if a < na {
                        legal[a] = 1.0;
                    }
                }
                decisions.push((i, obs, legal));
            }
            if let Some(&x) = history.get(i) {
                walk.try_apply(x)
                    .map_err(|e| bad(format!("replaying the history: {e}")))?;
            }
        }
        let key = |len: usize| -> Vec<Action> {
            let mut k = Vec::with_capacity(len + 1);
            k.push(p);
            k.extend(
                history[..len].iter().enumerate().map(
                    |(i, &x)| {
                        if i / 2 == p && i < 4 { MASKED } else { x }
                    },
                ),
            );
            k
        };
        let n = decisions.len();
        if n == 0 {
            return Err(PolicyError::NotADecision);
        }
        // The longest cached prefix that ends before the current decision.
        let mut start = 0;
        let mut st = None;
        for j in (0..n - 1).rev() {
            if let Some(x) = self.cache.get(&key(decisions[j].0)) {
                st = Some(x);
                start = j + 1;
                break;
            }
        }
        let rows = NUM_HOLE_HANDS;
        let h = self.net.config().representation_size();
        let mut st = st.unwrap_or_else(|| {
            Arc::new(RecurrentState {
                rows,
                hidden: vec![0.0; rows * h],
                cell: vec![0.0; rows * h],
            })
        });
        let mut probs = Vec::new();
        let mut obs = vec![0.0f32; rows * n_in];
        for (len, base, legal) in &decisions[start..] {
            for (r, row) in obs.chunks_exact_mut(n_in).enumerate() {
                row.copy_from_slice(base);
                row[2..2 + NUM_CARDS].fill(0.0);
                let (a, b) = HOLE_CARDS[r];
                row[2 + a as usize] = 1.0;
                row[2 + b as usize] = 1.0;
            }
            let legal_rows: Vec<f32> = legal.iter().copied().cycle().take(rows * na).collect();
            let (pr, next) = self
                .net
                .avg_policy_step(&obs, &legal_rows, &st)
                .map_err(|e| bad(e.to_string()))?;
            probs = pr;
            st = Arc::new(next);
            self.cache.put(key(*len), st.clone());
        }
        let legal = &decisions[n - 1].2;
        let n_legal = legal.iter().filter(|&&l| l > 0.0).count().max(1) as f64;
        Ok(hands
            .iter()
            .map(|&hand| {
                let row = &probs[hand as usize * na..(hand as usize + 1) * na];
                let total: f64 = row.iter().map(|&x| x as f64).sum();
                let mut out = [0.0; 4];
                for a in 0..na.min(4) {
                    out[a] = if total > 0.0 {
                        row[a] as f64 / total
                    } else {
                        legal[a] as f64 / n_legal
                    };
                }
                out
            })
            .collect())
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
        let holdem_obs = self.game.observation_tensor_size() == 2 * (2 + NUM_CARDS)
            && state.config().deck_size == NUM_CARDS
            && state.config().num_hole == 2;
        if recurrent && self.incremental && holdem_obs {
            return self.incremental_range(state, p, hands);
        }
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
        let policy =
            ArmacAveragePolicy::new(ArmacPolicyNet::init(cfg, 11).unwrap(), game.clone(), 0);
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
        let single = PerHand(ArmacAveragePolicy::new(policy.net.clone(), game.clone(), 0))
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

    /// The incremental range path (one encoder step per decision for all hands, states cached
    /// along the hand) gives the replay-from-the-root path's answers to 1e-5 along a whole
    /// hand, for both players, with cache hits, a branch off the hand, and a second deal.
    #[test]
    fn incremental_range_queries_match_replayed_ones() {
        let game = load_game("hunl_fcpa").unwrap();
        let cfg = ArmacNetConfig::new(game.observation_tensor_size(), game.num_distinct_actions())
            .with_encoder_hidden(16)
            .with_head_hidden(16)
            .with_recurrent(true);
        let net = ArmacPolicyNet::init(cfg, 5).unwrap();
        let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0);
        let slow = ArmacAveragePolicy::new(net, game.clone(), 0).with_incremental_ranges(false);
        let check = |s: &crate::games::universal_poker::UniversalPokerState| {
            let Turn::Player(p) = s.turn() else {
                panic!("not a decision")
            };
            let mut dead = CardSet::from_cards(s.board_cards()).0;
            dead |= CardSet::from_cards(s.hole_cards(1 - p)).0;
            let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
                .filter(|&h| HOLE_MASKS[h as usize] & dead == 0)
                .step_by(37)
                .collect();
            let a = fast.hand_action_probabilities(s, &hands).unwrap();
            let b = slow.hand_action_probabilities(s, &hands).unwrap();
            assert_eq!(a.len(), hands.len());
            let mut spread = 0.0f64;
            for (x, y) in a.iter().zip(&b) {
                for (u, v) in x.iter().zip(y) {
                    assert!((u - v).abs() < 1e-5, "{x:?} vs {y:?} at {:?}", s.history());
                }
                spread = spread.max((x[1] - a[0][1]).abs());
            }
            assert!(spread > 0.0, "the answer should depend on the hand");
            // Colliding hands are refused by both paths.
            let bad = HOLE_MASKS.iter().position(|m| m & dead != 0).unwrap() as u16;
            assert!(fast.hand_action_probabilities(s, &[bad]).is_err());
        };
        for deal in ["AsKd2c3d", "7h7c9s2d"] {
            let mut s = UniversalPokerGame::hunl_fcpa().initial_state();
            for c in parse_cards(deal).unwrap() {
                s.apply(c as Action);
            }
            check(&s);
            check(&s); // a cache hit at the same state
            let mut branch = s.clone();
            branch.apply(2); // pot bet
            check(&branch);
            s.apply(1); // call
            check(&s);
            s.apply(1); // check: the flop is dealt
            for c in parse_cards("Qh8d4s").unwrap() {
                s.apply(c as Action);
            }
            check(&s);
            s.apply(2);
            check(&s);
            check(&branch); // back to the branch after walking the hand
        }
    }
}
