//! Kuhn poker (`kuhn_poker`), two players, matching OpenSpiel 2.0.2 bit for bit.
//!
//! # Rules
//! The deck holds three cards, `0 < 1 < 2` (Jack, Queen, King). Both players ante one chip,
//! chance deals one card to player 0 and then one to player 1 (chance action = card id).
//! Player 0 acts first; actions are `0` = Pass and `1` = Bet (a bet puts one more chip in).
//! The hand ends after `pp` (showdown for 1), `bp` / `pbp` (the bettor wins 1),
//! `bb` / `pbb` (showdown for 2). At a showdown the higher card takes the pot.
//!
//! # Strings
//! * `to_string`: the dealt cards separated by spaces, then a space and the betting as
//!   `p`/`b` letters, e.g. `"2 0 pb"`.
//! * information state: the player's card (once dealt) followed by the betting, e.g. `"2pb"`.
//! * observation: the player's card followed by both pot contributions, e.g. `"212"`; empty
//!   before the player's card is dealt.
//! * public state ([`State::public_state_string`]): the betting letters alone, e.g. `"pb"`
//!   (empty during the deal).
//!
//! # Tensors
//! Information state (11 floats): `[0..2)` one-hot observing player, `[2..5)` one-hot own
//! card (zeros before the deal), `[5..11)` betting: three slots of two bits, slot `i` has bit
//! `action` set for the `i`-th betting action.
//!
//! Observation (7 floats): `[0..2)` one-hot observing player, `[2..5)` one-hot own card,
//! `[5..7)` chips each player has put in the pot.
//!
//! # Public / private split
//! A player's private state is their card (`0..3`, with 3 private states) once dealt, and `0`
//! with a single private state before. OpenSpiel's information state strings do not tell a
//! player whether the *other* player has been dealt yet (player 0 sees `"c"` both before and
//! after player 1's deal), so the whole deal phase — the root, the state after the first deal
//! and the first decision node — shares the public state `""`.

use crate::game::{Action, Game, GameError, GameParams, GameRef, Player, State, Turn};
use std::fmt::Write;
use std::sync::Arc;

/// Number of cards in the deck.
const NUM_CARDS: usize = 3;
/// Two deals plus at most three betting actions.
const MAX_HISTORY: usize = 5;
/// Marker for "not set" in the small `u8` fields below.
const NONE: u8 = super::common::NO_CARD;

/// Loads `kuhn_poker`; the only accepted parameter is `players=2`.
pub fn load(params: &GameParams) -> Result<GameRef, GameError> {
    params.check_known(&["players"])?;
    super::common::require_two_players(params)?;
    Ok(Arc::new(KuhnGame))
}

/// Two-player Kuhn poker.
#[derive(Debug, Clone, Copy, Default)]
pub struct KuhnGame;

impl Game for KuhnGame {
    fn short_name(&self) -> &str {
        "kuhn_poker"
    }

    fn load_string(&self) -> String {
        "kuhn_poker".to_string()
    }

    fn num_distinct_actions(&self) -> usize {
        2
    }

    fn max_chance_outcomes(&self) -> usize {
        NUM_CARDS
    }

    fn max_game_length(&self) -> usize {
        3
    }

    fn min_utility(&self) -> f64 {
        -2.0
    }

    fn max_utility(&self) -> f64 {
        2.0
    }

    fn information_state_tensor_size(&self) -> usize {
        11
    }

    fn observation_tensor_size(&self) -> usize {
        7
    }

    /// The two contributions (the last two entries) reach the largest win; the rest are bits.
    fn observation_tensor_scale(&self) -> Option<Vec<f32>> {
        let mut scale = vec![1.0; self.observation_tensor_size()];
        let n = scale.len();
        scale[n - 2..].fill(self.max_utility() as f32);
        Some(scale)
    }

    fn public_state_tensor_size(&self) -> usize {
        6
    }

    fn new_initial_state(&self) -> Box<dyn State> {
        Box::new(KuhnState::new())
    }
}

/// A Kuhn poker history: plain `Copy` data (48 bytes), no heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KuhnState {
    /// Every action so far: two deals, then bets.
    hist: [Action; MAX_HISTORY],
    /// Number of valid entries of `hist`.
    len: u8,
    /// Card of each player (`NONE` before the deal).
    cards: [u8; 2],
    /// Chips each player has put in.
    ante: [u8; 2],
    /// The first player to bet, `NONE` while nobody has.
    first_bettor: u8,
    /// The winner once the hand is over, `NONE` before.
    winner: u8,
}

impl Default for KuhnState {
    fn default() -> Self {
        Self::new()
    }
}

impl KuhnState {
    /// The root: nothing dealt, both players have anted one chip.
    pub fn new() -> Self {
        KuhnState {
            hist: [0; MAX_HISTORY],
            len: 0,
            cards: [NONE; 2],
            ante: [1; 2],
            first_bettor: NONE,
            winner: NONE,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len as usize
    }

    /// Betting actions so far (after the two deals).
    #[inline]
    fn bets(&self) -> &[Action] {
        if self.len() > 2 {
            &self.hist[2..self.len()]
        } else {
            &[]
        }
    }

    /// Whether `player` has put a second chip in.
    #[inline]
    fn did_bet(&self, player: usize) -> bool {
        self.ante[player] == 2
    }

    fn push_betting_letters(&self, out: &mut String) {
        for &a in self.bets() {
            out.push(if a == 1 { 'b' } else { 'p' });
        }
    }
}

impl State for KuhnState {
    #[inline]
    fn turn(&self) -> Turn {
        if self.winner != NONE {
            Turn::Terminal
        } else if self.len < 2 {
            Turn::Chance
        } else {
            Turn::Player(self.len() % 2)
        }
    }

    fn legal_actions(&self) -> Vec<Action> {
        match self.turn() {
            Turn::Terminal => Vec::new(),
            Turn::Chance => (0..NUM_CARDS)
                .filter(|&c| self.cards[0] as usize != c)
                .collect(),
            Turn::Player(_) => vec![0, 1],
        }
    }

    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        if self.turn() != Turn::Chance {
            return Vec::new();
        }
        let p = 1.0 / (NUM_CARDS - self.len()) as f64;
        (0..NUM_CARDS)
            .filter(|&c| self.cards[0] as usize != c)
            .map(|c| (c, p))
            .collect()
    }

    fn apply_action(&mut self, action: Action) {
        match self.turn() {
            Turn::Terminal => panic!("kuhn_poker: action {action} applied at a terminal"),
            Turn::Chance => {
                assert!(
                    action < NUM_CARDS && self.cards[0] as usize != action,
                    "kuhn_poker: card {action} cannot be dealt"
                );
                self.cards[self.len()] = action as u8;
            }
            Turn::Player(p) => {
                assert!(action < 2, "kuhn_poker: illegal action {action}");
                if action == 1 {
                    if self.first_bettor == NONE {
                        self.first_bettor = p as u8;
                    }
                    self.ante[p] += 1;
                }
            }
        }
        self.hist[self.len()] = action;
        self.len += 1;

        let num_bets = self.len().saturating_sub(2);
        let over = if self.first_bettor == NONE {
            num_bets == 2
        } else {
            num_bets == 2 + self.first_bettor as usize
        };
        if over {
            // Only players who put the second chip in (or everybody, without a bet) contest
            // the pot; the higher card among them wins.
            let contest = |p: usize| self.first_bettor == NONE || self.did_bet(p);
            self.winner = match (contest(0), contest(1)) {
                (true, true) => u8::from(self.cards[1] > self.cards[0]),
                (true, false) => 0,
                _ => 1,
            };
        }
    }

    fn history(&self) -> &[Action] {
        &self.hist[..self.len()]
    }

    fn returns(&self) -> [f64; 2] {
        if self.winner == NONE {
            return [0.0; 2];
        }
        let w = self.winner as usize;
        let mut r = [0.0; 2];
        r[w] = self.ante[1 - w] as f64;
        r[1 - w] = -(self.ante[1 - w] as f64);
        r
    }

    fn to_string(&self) -> String {
        let mut s = String::with_capacity(8);
        for (i, &c) in self.hist[..self.len().min(2)].iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            write!(s, "{c}").unwrap();
        }
        if self.len > 2 {
            s.push(' ');
            self.push_betting_letters(&mut s);
        }
        s
    }

    fn action_to_string(&self, player: Option<Player>, action: Action) -> String {
        match player {
            None => format!("Deal:{action}"),
            Some(_) if action == 0 => "Pass".to_string(),
            Some(_) => "Bet".to_string(),
        }
    }

    fn information_state_string(&self, player: Player) -> String {
        let mut s = String::with_capacity(4);
        if self.cards[player] != NONE {
            write!(s, "{}", self.cards[player]).unwrap();
        }
        self.push_betting_letters(&mut s);
        s
    }

    fn information_state_tensor(&self, player: Player, out: &mut [f32]) {
        assert_eq!(out.len(), 11, "kuhn_poker infostate tensor length");
        out.fill(0.0);
        out[player] = 1.0;
        if self.cards[player] != NONE {
            out[2 + self.cards[player] as usize] = 1.0;
        }
        for (i, &a) in self.bets().iter().enumerate() {
            out[5 + 2 * i + a] = 1.0;
        }
    }

    /// The betting part of the information-state tensor (one-hot pass/bet per round).
    fn public_state_tensor(&self, out: &mut [f32]) {
        crate::game::public_tail_of_infostate(11, self, 5, out);
    }

    fn observation_string(&self, player: Player) -> String {
        let mut s = String::with_capacity(3);
        if self.cards[player] != NONE {
            write!(s, "{}{}{}", self.cards[player], self.ante[0], self.ante[1]).unwrap();
        }
        s
    }

    fn observation_tensor(&self, player: Player, out: &mut [f32]) {
        assert_eq!(out.len(), 7, "kuhn_poker observation tensor length");
        out.fill(0.0);
        out[player] = 1.0;
        if self.cards[player] != NONE {
            out[2 + self.cards[player] as usize] = 1.0;
        }
        out[5] = self.ante[0] as f32;
        out[6] = self.ante[1] as f32;
    }

    fn public_state_string(&self) -> String {
        let mut s = String::with_capacity(3);
        self.push_betting_letters(&mut s);
        s
    }

    fn private_state(&self, player: Player) -> usize {
        super::common::dealt_card_state(self.cards[player])
    }

    fn num_private_states(&self, player: Player) -> usize {
        super::common::dealt_card_states(self.cards[player], NUM_CARDS)
    }

    fn clone_box(&self) -> Box<dyn State> {
        Box::new(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::conformance::check_game;
    use crate::game::replay;
    use crate::games::load_game;
    use crate::games::test_support::walk_counts as walk;
    use std::collections::BTreeSet;

    #[test]
    fn conformance() {
        let game = load_game("kuhn_poker").unwrap();
        check_game(game.as_ref(), 3000, 11).unwrap();
    }

    #[test]
    fn tree_counts_and_infostates_match_openspiel() {
        let game = load_game("kuhn_poker").unwrap();
        let mut counts = [0; 4];
        let mut infos = [BTreeSet::new(), BTreeSet::new()];
        walk(game.new_initial_state().as_ref(), &mut counts, &mut infos);
        assert_eq!(counts, [58, 30, 4, 24]);
        assert_eq!(infos[0].len(), 6);
        assert_eq!(infos[1].len(), 6);

        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/golden_kuhn_poker.json"
        );
        let data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for p in 0..2 {
            let want: BTreeSet<String> = data["infostates"][p]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert_eq!(infos[p], want, "player {p}");
        }
    }

    #[test]
    fn terminal_returns() {
        let game = load_game("kuhn_poker").unwrap();
        // (deal, betting, returns of player 0)
        let cases: &[(&[Action], f64)] = &[
            (&[2, 0, 0, 0], 1.0),     // pp: King wins the antes
            (&[0, 2, 0, 0], -1.0),    // pp: Jack loses
            (&[0, 1, 1, 0], 1.0),     // bp: player 1 folds
            (&[0, 1, 1, 1], -2.0),    // bb: Queen beats Jack
            (&[1, 0, 0, 1, 0], -1.0), // pbp: player 0 folds
            (&[2, 1, 0, 1, 1], 2.0),  // pbb: King wins
        ];
        for &(actions, r0) in cases {
            let s = replay(game.as_ref(), actions).unwrap();
            assert!(s.is_terminal(), "{actions:?}");
            assert_eq!(s.returns(), [r0, -r0], "{actions:?}");
        }
        let s = replay(game.as_ref(), &[2, 1, 0, 1, 1]).unwrap();
        assert_eq!(s.to_string(), "2 1 pbb");
        assert_eq!(s.information_state_string(1), "1pbb");
        assert_eq!(s.observation_string(0), "222");
    }

    #[test]
    fn equilibrium_value_is_minus_one_eighteenth() {
        // Player 0's value under the textbook equilibrium with alpha = 0: player 0 always
        // passes first, then calls a bet with K and with Q at 1/3; player 1 after a pass bets
        // K and bluffs J at 1/3, and facing a bet calls with K and with Q at 1/3.
        fn value(s: &dyn State) -> f64 {
            match s.turn() {
                Turn::Terminal => s.returns()[0],
                Turn::Chance => s
                    .chance_outcomes()
                    .iter()
                    .map(|&(a, p)| {
                        let mut c = s.clone_box();
                        c.apply_action(a);
                        p * value(c.as_ref())
                    })
                    .sum(),
                Turn::Player(p) => {
                    let info = s.information_state_string(p);
                    let bet = match (p, info.as_str()) {
                        (0, "0" | "1" | "2" | "0pb") => 0.0,
                        (0, "2pb") => 1.0,
                        (0, "1pb") => 1.0 / 3.0,
                        (1, "0p") => 1.0 / 3.0,
                        (1, "1p" | "0b") => 0.0,
                        (1, "2p" | "2b") => 1.0,
                        (1, "1b") => 1.0 / 3.0,
                        _ => unreachable!("{info}"),
                    };
                    [1.0 - bet, bet]
                        .iter()
                        .enumerate()
                        .map(|(a, &w)| {
                            let mut c = s.clone_box();
                            c.apply_action(a);
                            w * value(c.as_ref())
                        })
                        .sum()
                }
            }
        }
        let game = load_game("kuhn_poker").unwrap();
        let v = value(game.new_initial_state().as_ref());
        assert!((v + 1.0 / 18.0).abs() < 1e-12, "{v}");
    }

    #[test]
    fn public_and_private_states() {
        let game = load_game("kuhn_poker").unwrap();
        let mut s = game.new_initial_state();
        assert_eq!((s.private_state(0), s.num_private_states(0)), (0, 1));
        s.apply_action(2);
        assert_eq!((s.private_state(0), s.num_private_states(0)), (2, 3));
        assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 1));
        s.apply_action(0);
        assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 3));
        assert_eq!(s.public_state_string(), "");
        s.apply_action(0);
        s.apply_action(1);
        assert_eq!(s.public_state_string(), "pb");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for text in ["kuhn_poker(players=3)", "kuhn_poker(players=1)"] {
            let e = load_game(text).unwrap_err().to_string();
            assert!(e.contains("players"), "{e}");
        }
        let e = load_game("kuhn_poker(cards=4)").unwrap_err().to_string();
        assert!(e.contains("cards"), "{e}");
        assert_eq!(
            load_game("kuhn_poker(players=2)").unwrap().load_string(),
            "kuhn_poker"
        );
    }

    #[test]
    fn illegal_moves_are_errors() {
        let game = load_game("kuhn_poker").unwrap();
        let mut s = replay(game.as_ref(), &[1]).unwrap();
        assert!(s.try_apply(1).is_err());
        assert!(s.try_apply(3).is_err());
        let mut s = replay(game.as_ref(), &[1, 0, 0, 0]).unwrap();
        assert!(s.try_apply(0).is_err());
    }
}
