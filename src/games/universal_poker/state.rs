//! The `universal_poker` state: [`UniversalPokerState`] (a shared configuration, the
//! betting and cards of a [`Core`] and the action history), its accessors and its [`State`]
//! implementation, including the private-state numbering of hole cards.

use super::betting::Betting;
use super::config::{Config, MAX_HOLE_CARDS};
use super::{Applied, Core, History};
use crate::game::{Action, Player, State, Turn};
use crate::games::cards::{HOLE_CARDS, NUM_CARDS, hole_index};
use std::fmt;
use std::sync::Arc;

/// A `universal_poker` state: the betting, the cards, and the history.
#[derive(Clone)]
pub struct UniversalPokerState {
    pub(super) cfg: Arc<Config>,
    pub(super) core: Core,
    pub(super) history: History,
}

impl fmt::Debug for UniversalPokerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UniversalPokerState")
            .field("history", &self.history.as_slice())
            .field("turn", &self.core.turn)
            .finish()
    }
}

impl UniversalPokerState {
    /// The root of a game with configuration `cfg`.
    pub fn new(cfg: Arc<Config>) -> UniversalPokerState {
        let core = Core::new(&cfg);
        UniversalPokerState {
            cfg,
            core,
            history: History::new(),
        }
    }

    /// The state with `player`'s hole cards replaced by `private` (a card with one hole card,
    /// a hole-card index with two, as [`State::private_state`] numbers them), replayed from the
    /// root: the other player's cards, the board and the betting are unchanged. `None` if the
    /// player's cards are not dealt yet, a card is outside the deck or collides with another
    /// dealt card (as [`State::with_private_state`], without the box).
    pub fn with_private_cards(
        &self,
        player: Player,
        private: usize,
    ) -> Option<UniversalPokerState> {
        let n = self.cfg.num_hole;
        if !(1..=2).contains(&n) || self.hole_cards(player).len() < n {
            return None;
        }
        let cards = match n {
            1 => [
                u8::try_from(private)
                    .ok()
                    .filter(|&c| usize::from(c) < NUM_CARDS)?,
                0,
            ],
            _ => {
                let (a, b) = *HOLE_CARDS.get(private)?;
                [a, b]
            }
        };
        let mut outcomes = [0; 2];
        for (o, &c) in outcomes.iter_mut().zip(&cards[..n]) {
            *o = self.cfg.outcome_of(c)?;
        }
        let dealt = player * n..(player + 1) * n;
        let mut s = self.clone();
        s.reset();
        for (i, &x) in self.history.as_slice().iter().enumerate() {
            let x = if dealt.contains(&i) {
                outcomes[i - dealt.start]
            } else {
                x
            };
            if s.core.turn == Turn::Chance && (x >= 64 || s.core.deck >> x & 1 == 0) {
                return None;
            }
            s.apply(x);
        }
        Some(s)
    }

    /// Returns to the root, keeping the configuration (cheaper than a new state).
    pub fn reset(&mut self) {
        self.core = Core::new(&self.cfg);
        self.history.len = 0;
        self.history.spill.clear();
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Chips each player has put in the pot.
    pub fn contributions(&self) -> [i32; 2] {
        self.core.bet.spent
    }

    /// The betting state.
    pub fn betting(&self) -> &Betting {
        &self.core.bet
    }

    /// At FC/FCPA/limit decision nodes, the legal actions as bits (`1 << action`); 0
    /// elsewhere. Fullgame raises are not included (see [`Self::raise_range`]).
    #[inline]
    pub fn legal_mask(&self) -> u8 {
        self.core.legal
    }

    /// At decision nodes where raising is allowed, the legal raise-to range `(min, max)`.
    pub fn raise_range(&self) -> Option<(i32, i32)> {
        (self.core.raise_ok && matches!(self.core.turn, Turn::Player(_)))
            .then_some((self.core.raise_min, self.core.raise_max))
    }

    /// At chance nodes, the outcomes still possible as bits (`1 << outcome`).
    #[inline]
    pub fn chance_mask(&self) -> u64 {
        if self.core.turn == Turn::Chance {
            self.core.deck
        } else {
            0
        }
    }

    /// Hole cards of player `p` dealt so far (card ids, deal order).
    pub fn hole_cards(&self, p: Player) -> &[u8] {
        self.core.hole_cards(&self.cfg, p)
    }

    /// Board cards dealt so far (card ids, deal order).
    pub fn board_cards(&self) -> &[u8] {
        self.core.board_cards()
    }

    /// Applies `action` (a chance outcome at chance nodes) and records it.
    ///
    /// # Panics
    /// On an illegal action or at a terminal state.
    #[inline]
    pub fn apply(&mut self, action: Action) {
        self.core.apply(&self.cfg, action, true);
        self.history.push(action);
    }

    /// Replays the history from the root, calling `f(index, round, applied)` for every action
    /// with the round it was taken in. No hand is evaluated.
    pub(super) fn replay(&self, mut f: impl FnMut(usize, u8, Applied)) {
        let mut core = Core::new(&self.cfg);
        for (i, &a) in self.history.as_slice().iter().enumerate() {
            let round = core.bet.round;
            let applied = core.apply(&self.cfg, a, false);
            f(i, round, applied);
        }
    }
}

/// Colexicographic rank of a sorted set of distinct cards among all sets of that size.
pub(super) fn colex_rank(sorted: &[u8]) -> usize {
    fn choose(n: usize, k: usize) -> usize {
        if k > n {
            return 0;
        }
        (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
    }
    sorted
        .iter()
        .enumerate()
        .map(|(i, &c)| choose(c as usize, i + 1))
        .sum()
}

impl State for UniversalPokerState {
    fn turn(&self) -> Turn {
        self.core.turn
    }

    fn legal_actions(&self) -> Vec<Action> {
        match self.core.turn {
            Turn::Terminal => Vec::new(),
            Turn::Chance => {
                let mut v = Vec::with_capacity(self.core.deck.count_ones() as usize);
                let mut m = self.core.deck;
                while m != 0 {
                    v.push(m.trailing_zeros() as Action);
                    m &= m - 1;
                }
                v
            }
            Turn::Player(_) => self.core.legal_actions(&self.cfg),
        }
    }

    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        if self.core.turn != Turn::Chance {
            return Vec::new();
        }
        let n = self.core.deck.count_ones();
        let p = 1.0 / n as f64;
        let mut v = Vec::with_capacity(n as usize);
        let mut m = self.core.deck;
        while m != 0 {
            v.push((m.trailing_zeros() as Action, p));
            m &= m - 1;
        }
        v
    }

    fn apply_action(&mut self, action: Action) {
        self.apply(action);
    }

    fn history(&self) -> &[Action] {
        self.history.as_slice()
    }

    fn returns(&self) -> [f64; 2] {
        if self.core.turn == Turn::Terminal {
            self.core.returns
        } else {
            [0.0; 2]
        }
    }

    fn to_string(&self) -> String {
        self.render_state()
    }

    fn action_to_string(&self, player: Option<Player>, action: Action) -> String {
        self.render_action(player, action)
    }

    fn information_state_string(&self, player: Player) -> String {
        self.render_information_state(player)
    }

    fn information_state_tensor(&self, player: Player, out: &mut [f32]) {
        self.write_information_state_tensor(player, out);
    }

    fn observation_string(&self, player: Player) -> String {
        self.render_observation(player)
    }

    fn observation_tensor(&self, player: Player, out: &mut [f32]) {
        self.write_observation_tensor(player, out);
    }

    fn public_state_string(&self) -> String {
        self.render_public_state()
    }

    fn public_tree_key(&self) -> String {
        self.render_public_tree_key()
    }

    fn public_state_tensor(&self, out: &mut [f32]) {
        self.write_public_state_tensor(out);
    }

    fn private_state(&self, player: Player) -> usize {
        let cards = self.hole_cards(player);
        let mut sorted = [0u8; MAX_HOLE_CARDS];
        sorted[..cards.len()].copy_from_slice(cards);
        let sorted = &mut sorted[..cards.len()];
        sorted.sort_unstable();
        match sorted.len() {
            0 => 0,
            1 => sorted[0] as usize,
            2 => hole_index(sorted[0], sorted[1]),
            _ => colex_rank(sorted),
        }
    }

    fn num_private_states(&self, player: Player) -> usize {
        match self.hole_cards(player).len() {
            0 => 1,
            1 => 52,
            2 => 1326,
            _ => 22100,
        }
    }

    fn private_state_alternatives(&self, player: Player) -> Vec<usize> {
        let n = self.cfg.num_hole;
        if !(1..=2).contains(&n) || self.hole_cards(player).len() < n {
            return Vec::new();
        }
        // The cards the player could hold: those still in the deck and its own.
        let mut free = self.core.deck;
        for &c in self.hole_cards(player) {
            free |= 1u64 << self.cfg.outcome_of(c).expect("a dealt card is in the deck");
        }
        let mut cards = Vec::with_capacity(free.count_ones() as usize);
        while free != 0 {
            cards.push(self.cfg.deck[free.trailing_zeros() as usize]);
            free &= free - 1;
        }
        let mut out: Vec<usize> = if n == 1 {
            cards.iter().map(|&c| usize::from(c)).collect()
        } else {
            let mut v = Vec::with_capacity(cards.len() * cards.len() / 2);
            for (i, &a) in cards.iter().enumerate() {
                v.extend(cards[i + 1..].iter().map(|&b| hole_index(a, b)));
            }
            v
        };
        let own = self.private_state(player);
        out.retain(|&i| i != own);
        out.sort_unstable();
        out
    }

    fn with_private_state(&self, player: Player, private: usize) -> Option<Box<dyn State>> {
        self.with_private_cards(player, private)
            .map(|s| Box::new(s) as Box<dyn State>)
    }

    fn clone_box(&self) -> Box<dyn State> {
        Box::new(self.clone())
    }

    fn player_acts_again(&self) -> Option<bool> {
        // Betting that is over stays over (only deals remain); betting that is not leads to
        // a decision once the cards of the current round are dealt.
        Some(match self.core.turn {
            Turn::Player(_) => true,
            Turn::Terminal => false,
            Turn::Chance => !self.core.bet.finished,
        })
    }
}
