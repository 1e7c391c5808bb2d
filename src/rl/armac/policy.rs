//! ARMAC's average-policy head as a [`crate::policy::Policy`] and an LBR
//! [`crate::eval::lbr::RangePolicy`] (whole ranges in one batched forward pass).
//!
//! # Fast range queries
//!
//! LBR asks, at the opponent's decisions before each of its own decisions that read the range
//! (and, for the raising variants, after each of its own raises), for the opponent's policy
//! with every one of the 1326 hole-card hands. On 52-card
//! Hold'em the answers for all hands depend only on the acting player and the *public*
//! history (betting and board): the player's observation and information-state tensors hold
//! the player's own hole cards, the board and the betting, never the other player's cards.
//! So a range query is computed once for all 1326 hands (rows) and kept under the key
//! `(player, history without the four hole-card deals)`, shared by every hand and thread of an
//! evaluation:
//! * recurrent nets: the encoder state of all 1326 rows after each decision of the public
//!   history is kept (least recently used out first); a query steps the encoder only over the
//!   decisions past the longest kept prefix, all rows in one batch, then evaluates the
//!   average-policy head once. Pre-flop prefixes recur in almost every hand, post-flop ones in
//!   the four hands of a deal. Once the board shows, the rows of hands holding a board card
//!   are dropped (11% fewer rows on the flop, 18% on the river);
//! * both kinds: the head's probabilities for all rows are kept per key, so a repeated public
//!   state costs no forward pass at all.
//!
//! * the forward passes of these queries run on [`PlainRangeNet`]'s plain-Rust kernels (weights
//!   copied out of burn on the first query; [`ArmacAveragePolicy::with_plain_kernels`]`(false)`
//!   keeps burn's tensors);
//! * a key asked for by several threads at once is computed by the first, the others wait;
//! * a query for a few hands (at most [`FEW_HANDS`]: LBR asks for the opponent's actual hand
//!   alone to sample its move) at a key with no kept probabilities runs only those hands' rows,
//!   from the longest kept prefix, and keeps nothing: LBR asks for the whole range only where
//!   its own decision needs it, so the opponent's decisions after the last such decision of a
//!   hand never cost a pass over the range.
//!
//! The reference path ([`ArmacAveragePolicy::with_incremental_ranges`]`(false)`) replays every
//! hand's history from the root, hand by hand; the paths agree to f32 rounding (tests below).

use super::sequence::{decision_path, gather_rows, seq_inputs};
use crate::game::GameRef;
use crate::games::cards::NUM_CARDS;
use crate::nn::armac::{ActBatch, ActOutput, ArmacPolicyNet, OnnxPolicy, PlainRangeNet};
use std::sync::OnceLock;

mod cache;
mod fast_range;

use cache::RangeCache;
pub use cache::{DEFAULT_RANGE_CACHE_BYTES, RangeStats};

/// Range queries for at most this many hands, at a public state whose probabilities are not
/// kept, run only those hands' rows (see the module docs).
pub const FEW_HANDS: usize = 16;

/// Thresholding (Ganzfried, Sandholm & Waugh, *Strategy purification and thresholding*,
/// AAMAS 2012): the probabilities `probs` (summing to 1 over the legal actions) lose every
/// action below `threshold` and are renormalised over the rest. Small probabilities of a
/// learned policy are mostly the network's noise, and in poker a little noise on an all-in
/// costs whole stacks against a player who calls it; dropping them trades exactness for
/// robustness. When no action reaches the threshold (possible only above `1 / legal
/// actions`), the most likely action alone is kept. `threshold <= 0` changes nothing.
pub fn threshold_probs(probs: &mut [f64], threshold: f64) {
    if threshold <= 0.0 {
        return;
    }
    let kept: f64 = probs.iter().filter(|&&p| p >= threshold).sum();
    if kept <= 0.0 {
        let best = (0..probs.len())
            .max_by(|&a, &b| probs[a].total_cmp(&probs[b]))
            .unwrap_or(0);
        for (a, p) in probs.iter_mut().enumerate() {
            *p = if a == best { 1.0 } else { 0.0 };
        }
        return;
    }
    for p in probs.iter_mut() {
        *p = if *p >= threshold { *p / kept } else { 0.0 };
    }
}

/// The average-policy head `π̄` of an ARMAC checkpoint as a
/// [`Policy`](crate::policy::Policy): the acting player's information-state tensor goes
/// through the network; probabilities are renormalised over the legal actions.
pub struct ArmacAveragePolicy {
    net: ArmacPolicyNet,
    game: GameRef,
    epoch: u64,
    /// `false` forces range queries down the reference path: every hand replayed from the
    /// root (tests, benchmarks).
    incremental: bool,
    /// `false` runs the fast path's forward passes through burn instead of the plain kernels
    /// (the peer of `armac-bench lbr-net --peer burn`).
    plain_kernels: bool,
    /// The encoder and average-policy head as plain data, copied out of `net` on the first
    /// range query (see [`PlainRangeNet`]).
    plain: OnceLock<PlainRangeNet>,
    cache: RangeCache,
    /// `true`: play the epoch's current policy pi^t (regret matching on the mean-regret head)
    /// instead of the average-policy head (range queries: feed-forward nets only).
    current: bool,
    /// Actions below this probability are dropped and the rest renormalised
    /// ([`threshold_probs`]); 0 plays the network's probabilities as they are.
    threshold: f64,
    /// What the run divided returns by (the critic's unit).
    reward_scale: f64,
}

impl ArmacAveragePolicy {
    /// The average-policy head of `net` (the network of epoch `epoch`) playing `game`.
    pub fn new(net: ArmacPolicyNet, game: GameRef, epoch: u64) -> Self {
        let row_state_bytes = 2 * net.config().representation_size() * 4;
        ArmacAveragePolicy {
            net,
            game,
            epoch,
            incremental: true,
            plain_kernels: true,
            plain: OnceLock::new(),
            cache: RangeCache::new(DEFAULT_RANGE_CACHE_BYTES, row_state_bytes),
            current: false,
            threshold: 0.0,
            reward_scale: 1.0,
        }
    }

    /// The policy whose network's critic values returns divided by `scale` (the run's
    /// `reward_scale`; 1 unless set).
    pub fn with_reward_scale(mut self, scale: f64) -> Self {
        self.reward_scale = scale;
        self
    }

    /// The network's critic as a value estimate for AIVAT (feed-forward networks; `None` for
    /// a recurrent one).
    pub fn critic(&self) -> Option<super::critic_values::ArmacCritic> {
        (!self.net.config().recurrent).then(|| {
            super::critic_values::ArmacCritic::new(
                self.net.clone(),
                self.game.clone(),
                self.epoch,
                self.reward_scale,
            )
        })
    }

    /// `true` plays the network's current policy pi^t (the normalised-ReLU policy of its
    /// mean-regret head, Eq. 3's regret matching) instead of its average-policy head: the
    /// diagnostic view of what the run plays at that epoch. Range queries (LBR) support it for
    /// feed-forward nets only.
    pub fn with_current_policy(mut self, current: bool) -> Self {
        self.current = current;
        self
    }

    /// Plays the network's probabilities thresholded at `threshold` (see
    /// [`threshold_probs`]; 0, the default, leaves them as they are). Every query path
    /// (single states, tensors, ranges) applies it.
    pub fn with_threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Chooses how range queries are answered: `true` (the default) computes each public
    /// state once for all 1326 hands and keeps it (see the module docs); `false` replays every
    /// hand's history from the root (the reference path).
    pub fn with_incremental_ranges(mut self, incremental: bool) -> Self {
        self.incremental = incremental;
        self
    }

    /// Chooses the kernels of the fast range path's forward passes: `true` (the default) the
    /// plain-Rust ones of [`PlainRangeNet`], `false` burn's tensors (the same results to f32
    /// rounding; kept as the benchmark's peer and for tests).
    pub fn with_plain_kernels(mut self, plain: bool) -> Self {
        self.plain_kernels = plain;
        self
    }

    /// `probs` thresholded at [`Self::threshold`].
    fn thresholded(
        &self,
        mut probs: crate::eval::lbr::ActionProbs,
    ) -> crate::eval::lbr::ActionProbs {
        threshold_probs(&mut probs, self.threshold);
        probs
    }

    /// Sets the memory budget of the kept recurrent states (0 keeps none: every query steps
    /// the encoder from the root, all hands at once). Empties the caches.
    pub fn with_range_cache_bytes(mut self, bytes: usize) -> Self {
        let row_state_bytes = 2 * self.net.config().representation_size() * 4;
        self.cache = RangeCache::new(bytes, row_state_bytes);
        self
    }

    /// The game the network plays.
    pub fn game(&self) -> &GameRef {
        &self.game
    }

    /// Action probabilities for `rows` information states at once, from their
    /// information-state tensors (`info`: `rows × information_state_tensor_size`, row-major)
    /// and legal-action masks (`legal`: `rows × num_distinct_actions`). Returns
    /// `rows × num_distinct_actions` probabilities, 0 at illegal actions and summing to 1 over
    /// each row's legal actions (uniform over them where the head gives them no mass): the same
    /// numbers [`crate::policy::Policy::action_probabilities`] gives state by state. Feed-forward
    /// networks only (a recurrent one reads the whole history, not one tensor).
    pub fn tensor_probabilities(
        &self,
        info: &[f32],
        legal: &[bool],
        rows: usize,
    ) -> Result<Vec<f64>, crate::policy::PolicyError> {
        let bad = |reason: String| crate::policy::PolicyError::Failed {
            policy: crate::policy::Policy::name(self),
            reason,
        };
        if self.net.config().recurrent {
            return Err(bad(
                "a recurrent network reads whole histories, not information-state tensors".into(),
            ));
        }
        let (width, actions) = (
            self.game.information_state_tensor_size(),
            self.game.num_distinct_actions(),
        );
        if info.len() != rows * width || legal.len() != rows * actions {
            return Err(bad(format!(
                "expected {rows} rows of {width} tensor entries and {actions} legal flags, got \
                 {} and {} values",
                info.len(),
                legal.len()
            )));
        }
        let mut batch = ActBatch::default();
        for r in 0..rows {
            let x = &info[r * width..(r + 1) * width];
            let mask = &legal[r * actions..(r + 1) * actions];
            if !mask.iter().any(|&l| l) {
                return Err(bad(format!("row {r} has no legal action")));
            }
            batch.push(x, x, x, mask);
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let out = self.net.evaluate(&batch);
        let mut probs = vec![0.0; rows * actions];
        for r in 0..rows {
            let mask = &legal[r * actions..(r + 1) * actions];
            let head: Vec<f32> = if self.current {
                out.current_policy(r, mask)
            } else {
                out.avg_policy[r * actions..(r + 1) * actions].to_vec()
            };
            let row = &mut probs[r * actions..(r + 1) * actions];
            let total: f64 = (0..actions)
                .filter(|&a| mask[a])
                .map(|a| head[a] as f64)
                .sum();
            let n = mask.iter().filter(|&&l| l).count() as f64;
            for a in (0..actions).filter(|&a| mask[a]) {
                row[a] = if total > 0.0 {
                    head[a] as f64 / total
                } else {
                    1.0 / n
                };
            }
            threshold_probs(row, self.threshold);
        }
        Ok(probs)
    }

    /// Row `r` of `out` as this policy's probabilities of `legal_actions`: the head's mass
    /// on them normalised (uniform where it gives them none), then thresholded.
    fn row_probabilities(&self, out: &ActOutput, r: usize, legal_actions: &[usize]) -> Vec<f64> {
        let n_a = self.game.num_distinct_actions();
        let probs: Vec<f64> = if self.current {
            let mut legal = vec![false; n_a];
            for &a in legal_actions {
                legal[a] = true;
            }
            let pi = out.current_policy(r, &legal);
            legal_actions.iter().map(|&a| pi[a] as f64).collect()
        } else {
            legal_actions
                .iter()
                .map(|&a| out.avg_policy[r * n_a + a] as f64)
                .collect()
        };
        let total: f64 = probs.iter().sum();
        let n = probs.len() as f64;
        let mut probs: Vec<f64> = probs
            .iter()
            .map(|&x| if total > 0.0 { x / total } else { 1.0 / n })
            .collect();
        threshold_probs(&mut probs, self.threshold);
        probs
    }

    /// The policy as an ONNX model (protobuf bytes; see [`ArmacPolicyNet::to_onnx`]): from
    /// information-state tensors and legal-action masks to the probabilities
    /// [`Self::tensor_probabilities`] gives (this head, this threshold), up to f32 rounding.
    /// Its metadata name the game, the epoch, the head and the threshold. Feed-forward
    /// networks only.
    pub fn to_onnx(&self) -> Result<Vec<u8>, crate::policy::PolicyError> {
        let head = if self.current { "current" } else { "average" };
        let cfg = self.net.config();
        let spec = OnnxPolicy {
            current: self.current,
            threshold: self.threshold,
            metadata: [
                ("game", self.game.load_string()),
                ("epoch", self.epoch.to_string()),
                ("head", head.to_string()),
                ("play_threshold", self.threshold.to_string()),
                ("input_size", cfg.input_size.to_string()),
                ("num_actions", cfg.num_actions.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        };
        self.net
            .to_onnx(&spec)
            .map_err(|e| crate::policy::PolicyError::Failed {
                policy: crate::policy::Policy::name(self),
                reason: e.to_string(),
            })
    }

    /// `true` when the policy plays the current policy `π^t` (mean-regret head), `false` for
    /// the average policy.
    pub fn is_current(&self) -> bool {
        self.current
    }

    /// The play threshold (0: none).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The epoch of the network.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// `true` for a recurrent network.
    pub fn is_recurrent(&self) -> bool {
        self.net.config().recurrent
    }

    /// Counters of the fast range path (see [`RangeStats`]).
    pub fn range_stats(&self) -> RangeStats {
        self.cache.counters.snapshot()
    }

    /// Empties the kept states and probabilities (counters too): the next queries start cold.
    pub fn reset_range_cache(&self) {
        self.cache.states.clear();
        self.cache.probs.clear();
        self.cache.counters.reset();
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
        let seqs: Vec<&[crate::rl::armac::trajectory::Step]> =
            paths.iter().map(|x| &x[..]).collect();
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
        Ok(self.row_probabilities(&out, 0, &legal_actions))
    }

    fn batch_action_probabilities(
        &self,
        states: &[&dyn crate::game::State],
    ) -> Result<Vec<Vec<f64>>, crate::policy::PolicyError> {
        if self.net.config().recurrent || states.len() < 2 {
            return states
                .iter()
                .map(|s| self.action_probabilities(*s))
                .collect();
        }
        let mut info = vec![0.0; self.game.information_state_tensor_size()];
        let mut batch = ActBatch::default();
        let mut legals = Vec::with_capacity(states.len());
        for s in states {
            let crate::game::Turn::Player(p) = s.turn() else {
                return Err(crate::policy::PolicyError::NotADecision);
            };
            let legal_actions = s.legal_actions();
            s.information_state_tensor(p, &mut info);
            let mut legal = vec![false; self.game.num_distinct_actions()];
            for &a in &legal_actions {
                legal[a] = true;
            }
            batch.push(&info, &info, &info, &legal);
            legals.push(legal_actions);
        }
        let out =
            self.net
                .evaluate_policies(&batch)
                .map_err(|e| crate::policy::PolicyError::Failed {
                    policy: crate::policy::Policy::name(self),
                    reason: e.to_string(),
                })?;
        Ok(legals
            .iter()
            .enumerate()
            .map(|(r, legal)| self.row_probabilities(&out, r, legal))
            .collect())
    }

    fn name(&self) -> String {
        let head = if self.current { "current" } else { "average" };
        if self.threshold > 0.0 {
            format!(
                "armac-{head}-policy(epoch {}, threshold {})",
                self.epoch, self.threshold
            )
        } else {
            format!("armac-{head}-policy(epoch {})", self.epoch)
        }
    }
}

/// Whole ranges at once: on 52-card Hold'em the fast path of the module docs; otherwise (and on
/// the reference path) each hand's tensors come from a replay with that hand
/// ([`crate::eval::lbr::with_hole_cards`]) and the network sees all of them in one batch.
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
        if self.current && self.net.config().recurrent {
            return Err(PolicyError::BadEntry {
                key: "current:".into(),
                reason: "range queries (LBR) of the current policy (mean-regret head) need a \
                         feed-forward network; this checkpoint's is recurrent"
                    .into(),
            });
        }
        let n_actions = self.game.num_distinct_actions();
        if n_actions > 4 {
            return Err(PolicyError::BadEntry {
                key: self.game.load_string(),
                reason: "range queries support at most 4 actions (fold/call/pot/all-in)".into(),
            });
        }
        let recurrent = self.net.config().recurrent;
        let holdem = state.config().deck_size == NUM_CARDS
            && state.config().num_hole == 2
            && state
                .config()
                .deck
                .iter()
                .enumerate()
                .all(|(i, &c)| c as usize == i)
            && self.net.config().input_size
                == if recurrent {
                    state.config().observation_tensor_size()
                } else {
                    state.config().information_state_tensor_size()
                };
        if self.incremental && holdem {
            return self.fast_range(state, p, hands);
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
                let row = if self.current {
                    out.current_policy(r, &legal)
                } else {
                    out.avg_policy[r * n_actions..(r + 1) * n_actions].to_vec()
                };
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
                self.thresholded(probs)
            })
            .collect())
    }

    fn name(&self) -> String {
        crate::policy::Policy::name(self)
    }
}

#[cfg(test)]
mod tests;
