//! Leduc poker (`leduc_poker`), two players, matching OpenSpiel 2.0.2 bit for bit, plus an
//! armac extension to more ranks (`num_ranks`).
//!
//! # Rules
//! The deck holds `num_ranks` ranks (default 3: Jack, Queen, King) in two suits; card id
//! `c` has rank `c / 2`, so the default deck is `0..6` = J J Q Q K K. Both players ante one
//! chip (and are said to hold 100 chips before the ante). Chance deals a private card to
//! player 0, then to player 1 (chance action = card id, uniform over the cards left).
//!
//! Two betting rounds follow, each opened by player 0. Actions: `0` = Fold, `1` = Call (a
//! check when nothing is owed), `2` = Raise (match the current stake, then raise it by 2 chips
//! in round 1 and by 4 in round 2). At most two raises per round; folding is legal only
//! when facing a raise. A round ends when both players checked, or when a raise was called.
//! Between the rounds chance deals one public card. At the showdown a private card pairing
//! the public card wins; otherwise the higher private rank wins; equal ranks split the pot.
//! Returns are the chips won or lost, within `±13` (`2·2 + 2·4 + 1`, for any `num_ranks`).
//!
//! # Parameters
//! OpenSpiel's `players`, `action_mapping`, `suit_isomorphism` and `starting_player` are
//! accepted only at their defaults (2, false, false, 0). `num_ranks` (2..=13, default 3) is
//! an armac extension, the "Leduc 13" of the stochastic regret minimisation papers when 13;
//! OpenSpiel does not know it, so [`Game::load_string`] mentions it only when it is not 3
//! (`leduc_poker(num_ranks=13)`), and such a string loads in armac only. `transfer` (integer,
//! default 0, armac extension) makes player 1 pay player 0 that many chips at the end of every
//! game on top of the pot: strategically the same game, but every value is shifted (the
//! "shifted utilities" Leduc of Davis, Schmid & Bowling 2019, Figure 1c, is `transfer=100`).
//!
//! # Strings (as OpenSpiel's, with `D = 2 * num_ranks` cards)
//! * information state:
//!   `[Observer: p][Private: c][Round r][Player: q][Pot: x][Money: m0 m1][Public: b][Round1: ...][Round2: ...]`
//!   where `c` is the private card id (`-10000` before the deal), `q` the player to act
//!   (`-1` at chance nodes; at terminals the player who made the last move), `x` the pot
//!   (0 once paid out), `m` the chips each player holds, `[Public: b]` present once the
//!   public card is dealt, and the round sequences list action ids separated by spaces.
//! * observation: the same with `[Ante: a0 a1]` (chips each player has put in) instead of
//!   the two round sequences.
//! * public state ([`State::public_state_string`]): the information state without its
//!   `[Observer]` and `[Private]` parts.
//!
//! # Tensors
//! Information state (`2 + 2D + 16` floats; 30 by default):
//! `[0..2)` one-hot observing player; `[2..2+D)` one-hot private card; `[2+D..2+2D)` one-hot
//! public card; then betting, 2 rounds × 4 slots × 2 bits (`10` = call, `01` = raise,
//! `00` = fold or no action), the bit for action `i` of round `r` at `2+2D + 8r + 2i`.
//!
//! Observation (`2 + 2D + 2` floats; 16 by default): `[0..2)` one-hot observing player;
//! `[2..2+D)` private card; `[2+D..2+2D)` public card; `[2+2D..2+2D+2)` chips each player
//! has put in.
//!
//! # Public / private split
//! A player's private state is their card id (`0..D`, with `D` private states) once dealt,
//! and `0` with a single private state before. OpenSpiel's strings do not show player 1
//! whether player 0 has been dealt (both read `[Player: -1]`), so the root and the state after
//! the first deal share one public state; every later public state is distinct.

use crate::game::{Action, Game, GameError, GameParams, GameRef, Player, State, Turn};
use std::fmt::Write;
use std::sync::Arc;

/// Default number of ranks (OpenSpiel's game).
pub const DEFAULT_NUM_RANKS: usize = 3;
/// Largest supported number of ranks.
pub const MAX_NUM_RANKS: usize = 13;
/// Chips each player holds before the ante.
const STARTING_MONEY: i16 = 100;
/// Raise size per round.
const RAISE_SIZE: [u8; 2] = [2, 4];
/// Raises allowed per round.
const MAX_RAISES: u8 = 2;
/// Betting actions per round at most (check, raise, raise, call).
const MAX_BETS_PER_ROUND: usize = 4;
/// Two private deals, one public deal, up to four bets per round.
const MAX_HISTORY: usize = 3 + 2 * MAX_BETS_PER_ROUND;
/// OpenSpiel's rendering of a card not dealt yet.
const INVALID_CARD: i32 = -10000;
/// Marker for "not set" in the small `u8` fields below.
const NONE: u8 = super::common::NO_CARD;

/// Fold.
pub const FOLD: Action = 0;
/// Call (or check).
pub const CALL: Action = 1;
/// Raise.
pub const RAISE: Action = 2;

/// Loads `leduc_poker`, rejecting OpenSpiel parameter values that are not supported here.
pub fn load(params: &GameParams) -> Result<GameRef, GameError> {
    params.check_known(&[
        "players",
        "action_mapping",
        "suit_isomorphism",
        "starting_player",
        "num_ranks",
        "transfer",
    ])?;
    super::common::require_two_players(params)?;
    if params.bool("action_mapping", false)? {
        return Err(params.bad("action_mapping", "only action_mapping=false is supported"));
    }
    if params.bool("suit_isomorphism", false)? {
        return Err(params.bad(
            "suit_isomorphism",
            "only suit_isomorphism=false is supported",
        ));
    }
    let starting_player = params.int("starting_player", 0)?;
    if starting_player != 0 {
        return Err(params.bad(
            "starting_player",
            &format!("only starting_player=0 is supported, got {starting_player}"),
        ));
    }
    let num_ranks = params.int_in(
        "num_ranks",
        DEFAULT_NUM_RANKS as i64,
        2,
        MAX_NUM_RANKS as i64,
    )? as usize;
    let transfer = params.int_in("transfer", 0, -10_000, 10_000)? as i16;
    Ok(Arc::new(LeducGame::new(num_ranks).with_transfer(transfer)))
}

/// Two-player Leduc poker with `num_ranks` ranks of two suits each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeducGame {
    num_ranks: u8,
    transfer: i16,
}

impl LeducGame {
    /// The game with `num_ranks` ranks.
    ///
    /// # Panics
    /// If `num_ranks` is outside `2..=13`.
    pub fn new(num_ranks: usize) -> Self {
        assert!(
            (2..=MAX_NUM_RANKS).contains(&num_ranks),
            "leduc_poker: num_ranks {num_ranks} outside 2..=13"
        );
        LeducGame {
            num_ranks: num_ranks as u8,
            transfer: 0,
        }
    }

    /// The same game where player 1 pays player 0 `transfer` chips at every terminal.
    pub fn with_transfer(mut self, transfer: i16) -> Self {
        self.transfer = transfer;
        self
    }

    /// Number of ranks.
    pub fn num_ranks(&self) -> usize {
        self.num_ranks as usize
    }

    /// Number of cards, `2 * num_ranks`.
    pub fn num_cards(&self) -> usize {
        2 * self.num_ranks as usize
    }
}

impl Default for LeducGame {
    fn default() -> Self {
        Self::new(DEFAULT_NUM_RANKS)
    }
}

impl Game for LeducGame {
    fn short_name(&self) -> &str {
        "leduc_poker"
    }

    fn load_string(&self) -> String {
        let mut params = Vec::new();
        if self.num_ranks() != DEFAULT_NUM_RANKS {
            params.push(format!("num_ranks={}", self.num_ranks));
        }
        if self.transfer != 0 {
            params.push(format!("transfer={}", self.transfer));
        }
        if params.is_empty() {
            "leduc_poker".to_string()
        } else {
            format!("leduc_poker({})", params.join(","))
        }
    }

    fn num_distinct_actions(&self) -> usize {
        3
    }

    fn max_chance_outcomes(&self) -> usize {
        self.num_cards()
    }

    fn max_game_length(&self) -> usize {
        2 * MAX_BETS_PER_ROUND
    }

    fn min_utility(&self) -> f64 {
        -self.max_utility()
    }

    fn max_utility(&self) -> f64 {
        (MAX_RAISES as f64) * (RAISE_SIZE[0] as f64 + RAISE_SIZE[1] as f64)
            + 1.0
            + (self.transfer as f64).abs()
    }

    fn information_state_tensor_size(&self) -> usize {
        2 + 2 * self.num_cards() + 4 * MAX_BETS_PER_ROUND
    }

    fn observation_tensor_size(&self) -> usize {
        2 + 2 * self.num_cards() + 2
    }

    /// The two contributions (the last two entries) reach the largest win; the rest are bits.
    fn observation_tensor_scale(&self) -> Option<Vec<f32>> {
        let mut scale = vec![1.0; self.observation_tensor_size()];
        let n = scale.len();
        scale[n - 2..].fill(self.max_utility() as f32);
        Some(scale)
    }

    fn public_state_tensor_size(&self) -> usize {
        self.num_cards() + 4 * MAX_BETS_PER_ROUND
    }

    fn new_initial_state(&self) -> Box<dyn State> {
        let mut s = LeducState::new(self.num_ranks());
        s.transfer = self.transfer;
        Box::new(s)
    }
}

/// A Leduc poker history: plain `Copy` data (120 bytes), no heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeducState {
    /// Every action so far, chance deals included.
    hist: [Action; MAX_HISTORY],
    /// Number of valid entries of `hist`.
    len: u8,
    /// Ranks in the deck.
    num_ranks: u8,
    /// Chips player 1 pays player 0 at the end (armac extension, 0 in OpenSpiel).
    transfer: i16,
    /// Private card of each player, `NONE` before the deal.
    cards: [u8; 2],
    /// The public card, `NONE` before round 2's deal.
    public_card: u8,
    /// Betting round, 1 or 2.
    round: u8,
    /// OpenSpiel's `cur_player_`: -1 at chance nodes, the last mover at terminals.
    cur_player: i8,
    /// The hand is over.
    terminal: bool,
    /// Calls since the last raise in this round.
    num_calls: u8,
    /// Raises in this round.
    num_raises: u8,
    /// The amount each player must have put in to stay.
    stakes: u8,
    /// Chips each player has put in.
    ante: [u8; 2],
    /// Chips in the pot (0 once paid out).
    pot: u8,
    /// Chips each player holds.
    money: [i16; 2],
    /// Betting actions of each round.
    seq: [[u8; MAX_BETS_PER_ROUND]; 2],
    /// Number of betting actions in each round.
    seq_len: [u8; 2],
}

impl LeducState {
    /// The root of the game with `num_ranks` ranks.
    pub fn new(num_ranks: usize) -> Self {
        LeducState {
            hist: [0; MAX_HISTORY],
            len: 0,
            num_ranks: num_ranks as u8,
            transfer: 0,
            cards: [NONE; 2],
            public_card: NONE,
            round: 1,
            cur_player: -1,
            terminal: false,
            num_calls: 0,
            num_raises: 0,
            stakes: 1,
            ante: [1; 2],
            pot: 2,
            money: [STARTING_MONEY - 1; 2],
            seq: [[0; MAX_BETS_PER_ROUND]; 2],
            seq_len: [0; 2],
        }
    }

    #[inline]
    fn num_cards(&self) -> usize {
        2 * self.num_ranks as usize
    }

    #[inline]
    fn in_deck(&self, card: usize) -> bool {
        let c = card as u8;
        c != self.cards[0] && c != self.cards[1] && c != self.public_card
    }

    /// Cards dealt so far (private and public).
    #[inline]
    fn num_dealt(&self) -> usize {
        (self.cards[0] != NONE) as usize
            + (self.cards[1] != NONE) as usize
            + (self.public_card != NONE) as usize
    }

    /// Betting actions of round `r` (0 or 1).
    #[inline]
    fn round_seq(&self, r: usize) -> &[u8] {
        &self.seq[r][..self.seq_len[r] as usize]
    }

    fn put_in(&mut self, p: usize, amount: u8) {
        self.pot += amount;
        self.ante[p] += amount;
        self.money[p] -= amount as i16;
    }

    fn record(&mut self, action: Action) {
        let r = self.round as usize - 1;
        self.seq[r][self.seq_len[r] as usize] = action as u8;
        self.seq_len[r] += 1;
    }

    /// A check-check or a called raise closes the round.
    fn round_over(&self) -> bool {
        if self.num_raises == 0 {
            self.num_calls == 2
        } else {
            self.num_calls == 1
        }
    }

    /// Strength of `p`'s hand at the showdown: pairs above every high-card hand, then by
    /// the higher rank, then the lower.
    fn hand_strength(&self, p: usize) -> usize {
        let own = (self.cards[p] / 2) as usize;
        let board = (self.public_card / 2) as usize;
        let n = self.num_ranks as usize;
        if own == board {
            n * n + own
        } else {
            own.max(board) * n + own.min(board)
        }
    }

    fn pay_out(&mut self, folder: Option<usize>) {
        self.terminal = true;
        match folder {
            Some(f) => self.money[1 - f] += self.pot as i16,
            None => {
                let (s0, s1) = (self.hand_strength(0), self.hand_strength(1));
                if s0 == s1 {
                    // Both players have put in the same amount, so the pot is even.
                    let half = (self.pot / 2) as i16;
                    self.money[0] += half;
                    self.money[1] += half;
                } else {
                    self.money[usize::from(s1 > s0)] += self.pot as i16;
                }
            }
        }
        self.pot = 0;
    }

    /// `[Round r][Player: q][Pot: x][Money: m0 m1][Public: b]` and then either both round
    /// sequences (`perfect_recall`) or the antes.
    fn push_public(&self, s: &mut String, perfect_recall: bool) {
        write!(
            s,
            "[Round {}][Player: {}][Pot: {}][Money: {} {}]",
            self.round, self.cur_player, self.pot, self.money[0], self.money[1]
        )
        .unwrap();
        if self.public_card != NONE {
            write!(s, "[Public: {}]", self.public_card).unwrap();
        }
        if perfect_recall {
            for r in 0..2 {
                write!(s, "[Round{}: ", r + 1).unwrap();
                for (i, a) in self.round_seq(r).iter().enumerate() {
                    if i > 0 {
                        s.push(' ');
                    }
                    write!(s, "{a}").unwrap();
                }
                s.push(']');
            }
        } else {
            write!(s, "[Ante: {} {}]", self.ante[0], self.ante[1]).unwrap();
        }
    }

    fn push_private(&self, s: &mut String, player: Player) {
        write!(
            s,
            "[Observer: {player}][Private: {}]",
            card_or_invalid(self.cards[player])
        )
        .unwrap();
    }

    /// Writes the player and card segments shared by both tensors; returns their length.
    fn write_cards(&self, player: Player, out: &mut [f32]) -> usize {
        let d = self.num_cards();
        out[..2 + 2 * d].fill(0.0);
        out[player] = 1.0;
        if self.cards[player] != NONE {
            out[2 + self.cards[player] as usize] = 1.0;
        }
        if self.public_card != NONE {
            out[2 + d + self.public_card as usize] = 1.0;
        }
        2 + 2 * d
    }
}

fn card_or_invalid(card: u8) -> i32 {
    if card == NONE {
        INVALID_CARD
    } else {
        card as i32
    }
}

fn action_name(action: u8) -> &'static str {
    match action as Action {
        FOLD => "Fold",
        CALL => "Call",
        _ => "Raise",
    }
}

impl State for LeducState {
    #[inline]
    fn turn(&self) -> Turn {
        if self.terminal {
            Turn::Terminal
        } else if self.cur_player < 0 {
            Turn::Chance
        } else {
            Turn::Player(self.cur_player as usize)
        }
    }

    fn legal_actions(&self) -> Vec<Action> {
        match self.turn() {
            Turn::Terminal => Vec::new(),
            Turn::Chance => (0..self.num_cards()).filter(|&c| self.in_deck(c)).collect(),
            Turn::Player(p) => {
                let mut v = Vec::with_capacity(3);
                if self.stakes > self.ante[p] {
                    v.push(FOLD);
                }
                v.push(CALL);
                if self.num_raises < MAX_RAISES {
                    v.push(RAISE);
                }
                v
            }
        }
    }

    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        if self.turn() != Turn::Chance {
            return Vec::new();
        }
        let p = 1.0 / (self.num_cards() - self.num_dealt()) as f64;
        (0..self.num_cards())
            .filter(|&c| self.in_deck(c))
            .map(|c| (c, p))
            .collect()
    }

    fn apply_action(&mut self, action: Action) {
        match self.turn() {
            Turn::Terminal => panic!("leduc_poker: action {action} applied at a terminal"),
            Turn::Chance => {
                assert!(
                    action < self.num_cards() && self.in_deck(action),
                    "leduc_poker: card {action} cannot be dealt"
                );
                if self.cards[0] == NONE {
                    self.cards[0] = action as u8;
                } else if self.cards[1] == NONE {
                    self.cards[1] = action as u8;
                    self.cur_player = 0;
                } else {
                    self.public_card = action as u8;
                    self.cur_player = 0;
                }
            }
            Turn::Player(p) => match action {
                FOLD => {
                    assert!(
                        self.stakes > self.ante[p],
                        "leduc_poker: fold without facing a raise"
                    );
                    self.record(FOLD);
                    self.pay_out(Some(p));
                }
                CALL => {
                    self.put_in(p, self.stakes - self.ante[p]);
                    self.num_calls += 1;
                    self.record(CALL);
                    if self.round_over() {
                        if self.round == 2 {
                            self.pay_out(None);
                        } else {
                            self.round = 2;
                            self.num_raises = 0;
                            self.num_calls = 0;
                            self.cur_player = -1;
                        }
                    } else {
                        self.cur_player = 1 - p as i8;
                    }
                }
                RAISE => {
                    assert!(
                        self.num_raises < MAX_RAISES,
                        "leduc_poker: more than two raises in a round"
                    );
                    let raise = RAISE_SIZE[self.round as usize - 1];
                    self.put_in(p, self.stakes - self.ante[p] + raise);
                    self.stakes += raise;
                    self.num_raises += 1;
                    self.num_calls = 0;
                    self.record(RAISE);
                    self.cur_player = 1 - p as i8;
                }
                _ => panic!("leduc_poker: illegal action {action}"),
            },
        }
        self.hist[self.len as usize] = action;
        self.len += 1;
    }

    fn history(&self) -> &[Action] {
        &self.hist[..self.len as usize]
    }

    fn returns(&self) -> [f64; 2] {
        if !self.terminal {
            return [0.0; 2];
        }
        let t = self.transfer as f64;
        [
            (self.money[0] - STARTING_MONEY) as f64 + t,
            (self.money[1] - STARTING_MONEY) as f64 - t,
        ]
    }

    fn to_string(&self) -> String {
        let mut s = String::with_capacity(160);
        write!(
            s,
            "Round: {}\nPlayer: {}\nPot: {}\nMoney (player_0 player_1): {} {}\n\
             Cards (public player_0 player_1): {} {} {} \n",
            self.round,
            self.cur_player,
            self.pot,
            self.money[0],
            self.money[1],
            card_or_invalid(self.public_card),
            card_or_invalid(self.cards[0]),
            card_or_invalid(self.cards[1]),
        )
        .unwrap();
        for r in 0..2 {
            write!(s, "Round {} sequence: ", r + 1).unwrap();
            for (i, &a) in self.round_seq(r).iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push_str(action_name(a));
            }
            s.push('\n');
        }
        s
    }

    fn action_to_string(&self, player: Option<Player>, action: Action) -> String {
        match player {
            None => format!("Chance outcome:{action}"),
            Some(_) => action_name(action as u8).to_string(),
        }
    }

    fn information_state_string(&self, player: Player) -> String {
        let mut s = String::with_capacity(112);
        self.push_private(&mut s, player);
        self.push_public(&mut s, true);
        s
    }

    fn information_state_tensor(&self, player: Player, out: &mut [f32]) {
        let start = self.write_cards(player, out);
        let betting = &mut out[start..];
        assert_eq!(
            betting.len(),
            4 * MAX_BETS_PER_ROUND,
            "leduc_poker infostate tensor length"
        );
        betting.fill(0.0);
        for r in 0..2 {
            for (i, &a) in self.round_seq(r).iter().enumerate() {
                let slot = 2 * (MAX_BETS_PER_ROUND * r + i);
                match a as Action {
                    CALL => betting[slot] = 1.0,
                    RAISE => betting[slot + 1] = 1.0,
                    _ => {}
                }
            }
        }
    }

    /// The public card and the betting of the information-state tensor.
    fn public_state_tensor(&self, out: &mut [f32]) {
        let d = self.num_cards();
        crate::game::public_tail_of_infostate(2 + 2 * d + 4 * MAX_BETS_PER_ROUND, self, 2 + d, out);
    }

    fn observation_string(&self, player: Player) -> String {
        let mut s = String::with_capacity(96);
        self.push_private(&mut s, player);
        self.push_public(&mut s, false);
        s
    }

    fn observation_tensor(&self, player: Player, out: &mut [f32]) {
        let start = self.write_cards(player, out);
        assert_eq!(
            out.len(),
            start + 2,
            "leduc_poker observation tensor length"
        );
        out[start] = self.ante[0] as f32;
        out[start + 1] = self.ante[1] as f32;
    }

    fn public_state_string(&self) -> String {
        let mut s = String::with_capacity(80);
        self.push_public(&mut s, true);
        s
    }

    fn private_state(&self, player: Player) -> usize {
        super::common::dealt_card_state(self.cards[player])
    }

    fn num_private_states(&self, player: Player) -> usize {
        super::common::dealt_card_states(self.cards[player], self.num_cards())
    }

    fn private_state_alternatives(&self, player: Player) -> Vec<usize> {
        let own = self.cards[player];
        if own == NONE {
            return Vec::new();
        }
        (0..self.num_cards())
            .filter(|&c| c != usize::from(own) && self.in_deck(c))
            .collect()
    }

    fn with_private_state(&self, player: Player, private: usize) -> Option<Box<dyn State>> {
        if self.cards[player] == NONE || private >= self.num_cards() {
            return None;
        }
        let mut s = LeducState::new(usize::from(self.num_ranks));
        s.transfer = self.transfer;
        // The players' cards are the history's first two deals, player 0's first.
        for (i, &a) in self.hist[..usize::from(self.len)].iter().enumerate() {
            let a = if i == player { private } else { a };
            if s.turn() == Turn::Chance && !(a < s.num_cards() && s.in_deck(a)) {
                return None;
            }
            s.apply_action(a);
        }
        Some(Box::new(s))
    }

    fn clone_box(&self) -> Box<dyn State> {
        Box::new(*self)
    }
}

#[cfg(test)]
mod tests;
