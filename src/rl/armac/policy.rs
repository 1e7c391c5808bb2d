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
use crate::game::{Action, GameRef};
use crate::games::cards::{CardSet, HOLE_CARDS, HOLE_MASKS, NUM_CARDS, NUM_HOLE_HANDS};
use crate::nn::armac::{ActBatch, ArmacPolicyNet, PlainRangeNet, RecurrentState};
use std::sync::{Arc, OnceLock};

mod cache;

pub use cache::{DEFAULT_RANGE_CACHE_BYTES, RangeStats};
use cache::{KeptState, RangeCache, RangeCounters};

/// Range queries for at most this many hands, at a public state whose probabilities are not
/// kept, run only those hands' rows (see the module docs).
pub const FEW_HANDS: usize = 16;

/// The key of a range query or kept state: the acting player, then the history from its
/// fifth entry on (the first four are the two players' hole cards).
fn public_key(p: usize, history: &[Action]) -> Vec<Action> {
    let mut k = Vec::with_capacity(history.len().saturating_sub(3));
    k.push(p);
    k.extend_from_slice(history.get(4..).unwrap_or(&[]));
    k
}

/// `base` (one player's tensor, whose entries `2..2 + 52` are that player's hole cards) repeated
/// for each hand of `hands` (hole-card indices), row `r` holding hand `hands[r]`'s two cards.
fn rows_for_hands(base: &[f32], hands: &[u16], out: &mut Vec<f32>) {
    let n = base.len();
    out.clear();
    out.reserve(hands.len() * n);
    for &hand in hands {
        let (a, b) = HOLE_CARDS[hand as usize];
        let at = out.len();
        out.extend_from_slice(base);
        let row = &mut out[at..at + n];
        row[2..2 + NUM_CARDS].fill(0.0);
        row[2 + a as usize] = 1.0;
        row[2 + b as usize] = 1.0;
    }
}

/// One decision along a history: the history's length there, the acting player's observation
/// and the board (a card mask).
type Decision = (usize, Vec<f32>, u64);

/// A network's action probabilities `row` (one per action id) as LBR's [`ActionProbs`]:
/// renormalised, or uniform over `legal` (`n_legal` of them) when they sum to 0.
///
/// [`ActionProbs`]: crate::eval::lbr::ActionProbs
fn normalised_row(row: &[f32], legal: &[f32], n_legal: f64) -> crate::eval::lbr::ActionProbs {
    let total: f64 = row.iter().map(|&x| x as f64).sum();
    let mut out = [0.0; 4];
    for a in 0..row.len().min(4) {
        out[a] = if total > 0.0 {
            row[a] as f64 / total
        } else {
            legal[a] as f64 / n_legal
        };
    }
    out
}

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
        }
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

    /// The plain kernels when they are on (built on first use).
    fn plain_net(&self) -> Option<&PlainRangeNet> {
        self.plain_kernels
            .then(|| self.plain.get_or_init(|| PlainRangeNet::new(&self.net)))
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

    /// The fast range path (52-card Hold'em, see the module docs): the probabilities of the
    /// hands `hands` of player `p`, to move at `state`.
    fn fast_range(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        hands: &[u16],
    ) -> Result<Vec<crate::eval::lbr::ActionProbs>, crate::policy::PolicyError> {
        use crate::game::State as _;
        use crate::policy::PolicyError;
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
        let na = self.net.config().num_actions;
        let mut legal = vec![0.0f32; na];
        for a in state.legal_actions() {
            if a < na {
                legal[a] = 1.0;
            }
        }
        let n_legal = legal.iter().filter(|&&l| l > 0.0).count().max(1) as f64;
        let key = public_key(p, state.history());
        if hands.len() <= FEW_HANDS && self.cache.probs.get(&key).is_none() {
            RangeCounters::add(&self.cache.counters.few_queries, 1);
            let rows = if self.net.config().recurrent {
                self.recurrent_rows(state, p, hands, &legal)?
            } else {
                self.feed_forward_rows(state, p, hands, &legal)?
            };
            return Ok(rows
                .chunks_exact(na)
                .map(|row| self.thresholded(normalised_row(row, &legal, n_legal)))
                .collect());
        }
        RangeCounters::add(&self.cache.counters.queries, 1);
        let probs = loop {
            if let Some(x) = self.cache.probs.get(&key) {
                RangeCounters::add(&self.cache.counters.prob_hits, 1);
                break x;
            }
            // Another thread computing this key: wait for it, then look again.
            let Some(_claim) = self.cache.in_flight.claim(&key) else {
                continue;
            };
            // It may have been put between the look and the claim.
            if let Some(x) = self.cache.probs.get(&key) {
                RangeCounters::add(&self.cache.counters.prob_hits, 1);
                break x;
            }
            let x = Arc::new(if self.net.config().recurrent {
                self.recurrent_all_hands(state, p, &legal)?
            } else {
                self.feed_forward_all_hands(state, p, &legal)?
            });
            self.cache.probs.put(key, x.clone());
            break x;
        };
        Ok(hands
            .iter()
            .map(|&hand| {
                let row = &probs[hand as usize * na..(hand as usize + 1) * na];
                self.thresholded(normalised_row(row, &legal, n_legal))
            })
            .collect())
    }

    /// Feed-forward nets: `1326 × A` probabilities at `state` for every hand of player `p`, from
    /// the player's information-state tensor with the hole-card entries replaced.
    fn feed_forward_all_hands(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        legal: &[f32],
    ) -> Result<Vec<f32>, crate::policy::PolicyError> {
        RangeCounters::add(&self.cache.counters.head_passes, 1);
        let all: Vec<u16> = (0..NUM_HOLE_HANDS as u16).collect();
        self.feed_forward_rows(state, p, &all, legal)
    }

    /// Feed-forward nets: `hands.len() × A` probabilities at `state` for the hands `hands` of
    /// player `p`.
    fn feed_forward_rows(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        hands: &[u16],
        legal: &[f32],
    ) -> Result<Vec<f32>, crate::policy::PolicyError> {
        use crate::game::State as _;
        let mut base = vec![0.0; self.net.config().input_size];
        state.information_state_tensor(p, &mut base);
        let mut info = Vec::new();
        rows_for_hands(&base, hands, &mut info);
        let n = hands.len();
        let legal_rows: Vec<f32> = legal.repeat(n);
        // pi^t: regret matching on the mean-regret head; pi-bar: the average-policy head.
        match (self.plain_net(), self.current) {
            (Some(k), true) => k.current_policy(&info, &legal_rows, n),
            (Some(k), false) => k.avg_policy(&info, &legal_rows, n),
            (None, true) => Ok(self.net_current_policy(&info, legal)),
            (None, false) => self.net.avg_policy(&info, &legal_rows, n),
        }
        .map_err(|e| self.bad(e.to_string()))
    }

    /// The current policy of every row of `info` (one legal mask for all) through burn's
    /// forward pass (the path without plain kernels).
    fn net_current_policy(&self, info: &[f32], legal: &[f32]) -> Vec<f32> {
        let n_in = self.net.config().input_size;
        let mask: Vec<bool> = legal.iter().map(|&l| l > 0.0).collect();
        let mut batch = ActBatch::default();
        for row in info.chunks(n_in) {
            batch.push(row, row, row, &mask);
        }
        let out = self.net.evaluate(&batch);
        (0..info.len() / n_in)
            .flat_map(|i| out.current_policy(i, &mask))
            .collect()
    }

    /// Recurrent nets: `1326 × A` probabilities at `state` for every hand of player `p`. One
    /// walk down the actual history records player `p`'s observation at every decision; each
    /// hand's observation is that one with the hole-card entries replaced (the layout of
    /// `UniversalPokerState::observation_tensor`: player one-hot, own cards, board, bets), and
    /// only the decisions past the longest kept prefix go through the encoder, all hands in
    /// one batch.
    fn recurrent_all_hands(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        legal: &[f32],
    ) -> Result<Vec<f32>, crate::policy::PolicyError> {
        use crate::game::State as _;
        let history = state.history();
        let decisions = self.decisions_of(state, p)?;
        let n = decisions.len();
        let (start, st) = self.longest_kept(p, history, &decisions);
        let c = &self.cache.counters;
        RangeCounters::add(&c.reused_steps, start as u64);
        RangeCounters::add(&c.encoder_steps, (n - start) as u64);
        let mut st = match st {
            Some(x) => x,
            None => {
                let h = self.net.config().representation_size();
                let rows = NUM_HOLE_HANDS;
                Arc::new(KeptState {
                    hands: (0..rows as u16).collect(),
                    state: RecurrentState {
                        rows,
                        hidden: vec![0.0; rows * h],
                        cell: vec![0.0; rows * h],
                    },
                })
            }
        };
        let mut obs = Vec::new();
        for (len, base, board) in &decisions[start..] {
            let dropped = st.live_rows(*board);
            let kept = dropped.as_ref().unwrap_or(&st);
            rows_for_hands(base, &kept.hands, &mut obs);
            RangeCounters::add(&c.encoder_rows, kept.hands.len() as u64);
            RangeCounters::add(&c.preflop_steps, (*board == 0) as u64);
            let next = self.encoder_step(&obs, &kept.state)?;
            st = Arc::new(KeptState {
                hands: kept.hands.clone(),
                state: next,
            });
            self.cache
                .states
                .put(public_key(p, &history[..*len]), st.clone());
        }
        RangeCounters::add(&c.head_passes, 1);
        let rows = st.hands.len();
        let legal_rows = legal.repeat(rows);
        let probs = self.avg_policy_head(&st.state.hidden, &legal_rows, rows)?;
        // Back to one row per hole-card hand (0 for hands that hold a board card).
        let na = legal.len();
        let mut all = vec![0.0f32; NUM_HOLE_HANDS * na];
        for (&hand, row) in st.hands.iter().zip(probs.chunks_exact(na)) {
            all[hand as usize * na..(hand as usize + 1) * na].copy_from_slice(row);
        }
        Ok(all)
    }

    /// Player `p`'s observation, the history length and the board (a card mask) at each
    /// decision along `state`'s history, `state`'s own decision last.
    fn decisions_of(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
    ) -> Result<Vec<Decision>, crate::policy::PolicyError> {
        use crate::game::{State as _, Turn};
        let n_in = self.net.config().input_size;
        let history = state.history();
        let mut walk = state.clone();
        walk.reset();
        let mut decisions = Vec::new();
        for i in 0..=history.len() {
            if let Turn::Player(_) = walk.turn() {
                let mut obs = vec![0.0; n_in];
                walk.observation_tensor(p, &mut obs);
                decisions.push((i, obs, CardSet::from_cards(walk.board_cards()).0));
            }
            if let Some(&x) = history.get(i) {
                walk.try_apply(x)
                    .map_err(|e| self.bad(format!("replaying the history: {e}")))?;
            }
        }
        match decisions.last() {
            Some(d) if d.0 == history.len() => Ok(decisions),
            _ => Err(crate::policy::PolicyError::NotADecision),
        }
    }

    /// The longest prefix of `decisions` (along `history`) whose encoder state is kept: how
    /// many decisions it covers (0 with none) and the state.
    fn longest_kept(
        &self,
        p: usize,
        history: &[Action],
        decisions: &[Decision],
    ) -> (usize, Option<Arc<KeptState>>) {
        for j in (0..decisions.len()).rev() {
            let key = public_key(p, &history[..decisions[j].0]);
            if let Some(x) = self.cache.states.get(&key) {
                return (j + 1, Some(x));
            }
        }
        (0, None)
    }

    /// Recurrent nets: `hands.len() × A` probabilities at `state` for the hands `hands` of
    /// player `p`, stepping only their rows from the longest kept prefix (nothing is kept).
    fn recurrent_rows(
        &self,
        state: &crate::games::universal_poker::UniversalPokerState,
        p: usize,
        hands: &[u16],
        legal: &[f32],
    ) -> Result<Vec<f32>, crate::policy::PolicyError> {
        use crate::game::State as _;
        let decisions = self.decisions_of(state, p)?;
        let (start, kept) = self.longest_kept(p, state.history(), &decisions);
        let h = self.net.config().representation_size();
        let n = hands.len();
        let mut cur = RecurrentState {
            rows: n,
            hidden: vec![0.0; n * h],
            cell: vec![0.0; n * h],
        };
        if let Some(k) = kept {
            for (i, &hand) in hands.iter().enumerate() {
                let r = k.hands.binary_search(&hand).map_err(|_| {
                    self.bad(format!("hand {hand} has no row in the kept encoder state"))
                })?;
                cur.hidden[i * h..(i + 1) * h].copy_from_slice(&k.state.hidden[r * h..(r + 1) * h]);
                cur.cell[i * h..(i + 1) * h].copy_from_slice(&k.state.cell[r * h..(r + 1) * h]);
            }
        }
        RangeCounters::add(
            &self.cache.counters.few_rows,
            (n * (decisions.len() - start)) as u64,
        );
        let mut obs = Vec::new();
        for (_, base, _) in &decisions[start..] {
            rows_for_hands(base, hands, &mut obs);
            cur = self.encoder_step(&obs, &cur)?;
        }
        self.avg_policy_head(&cur.hidden, &legal.repeat(n), n)
    }

    /// The recurrent encoder advanced by one observation per row (plain kernels or burn).
    fn encoder_step(
        &self,
        obs: &[f32],
        state: &RecurrentState,
    ) -> Result<RecurrentState, crate::policy::PolicyError> {
        match self.plain_net() {
            Some(k) => k.encoder_step(obs, state),
            None => self.net.encoder_step(obs, state),
        }
        .map_err(|e| self.bad(e.to_string()))
    }

    /// The average-policy head on `rows` representations (plain kernels or burn).
    fn avg_policy_head(
        &self,
        rep: &[f32],
        legal_rows: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, crate::policy::PolicyError> {
        match self.plain_net() {
            Some(k) => k.avg_policy_head(rep, legal_rows, rows),
            None => self.net.avg_policy_head(rep, legal_rows, rows),
        }
        .map_err(|e| self.bad(e.to_string()))
    }

    /// A bad-entry error naming the game.
    fn bad(&self, reason: String) -> crate::policy::PolicyError {
        crate::policy::PolicyError::BadEntry {
            key: self.game.load_string(),
            reason,
        }
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
        let probs: Vec<f64> = if self.current {
            let mut legal = vec![false; self.game.num_distinct_actions()];
            for &a in &legal_actions {
                legal[a] = true;
            }
            let pi = out.current_policy(0, &legal);
            legal_actions.iter().map(|&a| pi[a] as f64).collect()
        } else {
            legal_actions
                .iter()
                .map(|&a| out.avg_policy[a] as f64)
                .collect()
        };
        let total: f64 = probs.iter().sum();
        let n = probs.len() as f64;
        let mut probs: Vec<f64> = probs
            .iter()
            .map(|&x| if total > 0.0 { x / total } else { 1.0 / n })
            .collect();
        threshold_probs(&mut probs, self.threshold);
        Ok(probs)
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
