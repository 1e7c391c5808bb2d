//! The fast range path (52-card Hold'em, see the parent module's docs): one computation of a
//! public state for all 1326 hands, from kept recurrent states and probability tables, on the
//! plain kernels or burn's tensors.

use super::cache::{KeptState, RangeCounters};
use super::{ArmacAveragePolicy, FEW_HANDS};
use crate::game::Action;
use crate::games::cards::{CardSet, HOLE_CARDS, HOLE_MASKS, NUM_CARDS, NUM_HOLE_HANDS};
use crate::nn::armac::{ActBatch, PlainRangeNet, RecurrentState};
use std::sync::Arc;

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

impl ArmacAveragePolicy {
    /// The plain kernels when they are on (built on first use).
    fn plain_net(&self) -> Option<&PlainRangeNet> {
        self.plain_kernels
            .then(|| self.plain.get_or_init(|| PlainRangeNet::new(&self.net)))
    }

    /// The fast range path (52-card Hold'em, see the module docs): the probabilities of the
    /// hands `hands` of player `p`, to move at `state`.
    pub(super) fn fast_range(
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
}
