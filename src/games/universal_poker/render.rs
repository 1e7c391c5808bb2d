//! Strings and tensors of `universal_poker` states, in OpenSpiel's exact formats.

use super::config::{Abstraction, BettingType, MAX_ROUNDS};
use super::{ALL_IN_BIT, Applied, BET_BIT, CALL_BIT, FOLD_BIT, Move, UniversalPokerState};
use crate::game::{Action, Player, Turn};
use crate::games::cards::{RANK_CHARS, SUIT_CHARS};
use std::fmt::Write;

/// Appends the two-character name of card `c`.
fn push_card(s: &mut String, c: u8) {
    s.push(RANK_CHARS[(c >> 2) as usize]);
    s.push(SUIT_CHARS[(c & 3) as usize]);
}

/// Appends a set of cards (bit `c` = card `c`) the way OpenSpiel's `CardSet::ToString` does:
/// by descending rank, and within a rank by descending suit (`s h d c`), i.e. by descending id.
fn push_card_set(s: &mut String, mut mask: u64) {
    while mask != 0 {
        let c = 63 - mask.leading_zeros();
        push_card(s, c as u8);
        mask &= !(1u64 << c);
    }
}

/// The bitmask of a list of card ids.
fn mask_of(cards: &[u8]) -> u64 {
    cards.iter().fold(0, |m, &c| m | 1u64 << c)
}

/// Formats a double like `absl::StrCat` does (`%.6g`: six significant digits, trailing
/// zeros removed, exponent form outside `1e-4 <= |v| < 1e6`).
pub(super) fn format_g6(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".to_string()
        } else if v > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        };
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    let strip = |t: &str| -> String {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        strip(&format!("{v:.decimals$}"))
    }
}

/// The betting record of a history, rebuilt by replaying it.
struct Record {
    /// OpenSpiel's action-sequence letter of every history entry (`d` for deals).
    codes: Vec<u8>,
    /// The recorded bet size of every history entry.
    sizes: Vec<i32>,
    /// ACPC moves by round.
    rounds: [Vec<Move>; MAX_ROUNDS],
}

impl UniversalPokerState {
    fn record(&self) -> Record {
        let n = self.history.len;
        let mut rec = Record {
            codes: Vec::with_capacity(n),
            sizes: Vec::with_capacity(n),
            rounds: Default::default(),
        };
        self.replay(|_, round, applied| match applied {
            Applied::Deal => {
                rec.codes.push(b'd');
                rec.sizes.push(0);
            }
            Applied::Choice { mv, code, size } => {
                rec.codes.push(code);
                rec.sizes.push(size);
                rec.rounds[round as usize].push(mv);
            }
        });
        rec
    }

    /// ACPC's betting string of round `r` (`f`, `c`, `r<size>`, or `r` in limit games).
    fn push_round_betting(&self, s: &mut String, moves: &[Move]) {
        for mv in moves {
            match mv {
                Move::Fold => s.push('f'),
                Move::Call => s.push('c'),
                Move::Raise(size) => {
                    s.push('r');
                    if self.cfg.betting == BettingType::NoLimit {
                        write!(s, "{size}").unwrap();
                    }
                }
            }
        }
    }

    /// `[Round r][Player: p][Pot: x][Money: a b]`, shared by the information-state,
    /// observation and public strings.
    fn push_header(&self, s: &mut String) {
        let bet = &self.core.bet;
        let pot = bet.max_spent as i64 * (2 - bet.num_folded() as i64);
        let money = |p: usize| (self.cfg.stack[p] as i64 - bet.spent[p] as i64) as u32;
        write!(
            s,
            "[Round {}][Player: {}][Pot: {}][Money: {} {}]",
            bet.round,
            self.core.turn.openspiel_id(),
            pot as u32,
            money(0),
            money(1)
        )
        .unwrap();
    }

    /// `[Sequences: ...]`: the betting of rounds `0..=round`, separated by `|`.
    fn push_sequences(&self, s: &mut String, rec: &Record) {
        s.push_str("[Sequences: ");
        for r in 0..=self.core.bet.round as usize {
            if r > 0 {
                s.push('|');
            }
            self.push_round_betting(s, &rec.rounds[r]);
        }
        s.push(']');
    }

    fn hole_mask(&self, p: Player) -> u64 {
        mask_of(self.hole_cards(p))
    }

    fn board_mask(&self) -> u64 {
        mask_of(self.board_cards())
    }

    pub(super) fn render_information_state(&self, player: Player) -> String {
        assert!(player < 2, "player {player} out of range");
        let rec = self.record();
        let mut s = String::with_capacity(128);
        self.push_header(&mut s);
        s.push_str("[Private: ");
        push_card_set(&mut s, self.hole_mask(player));
        s.push_str("][Public: ");
        push_card_set(&mut s, self.board_mask());
        s.push(']');
        self.push_sequences(&mut s, &rec);
        s
    }

    pub(super) fn render_public_state(&self) -> String {
        let rec = self.record();
        let mut s = String::with_capacity(128);
        self.push_header(&mut s);
        s.push_str("[Public: ");
        push_card_set(&mut s, self.board_mask());
        s.push(']');
        self.push_sequences(&mut s, &rec);
        s
    }

    /// The public-tree key: the public string with the board split by round, each round's
    /// cards as a set (`[Board: |Kc7d4h|9s]` for an empty preflop board, a flop and a turn).
    /// Cards belong to the round whose board they fill, also when an all-in deals the rest of
    /// the board at once.
    pub(super) fn render_public_tree_key(&self) -> String {
        let rec = self.record();
        let board = self.board_cards();
        let mut s = String::with_capacity(128);
        self.push_header(&mut s);
        s.push_str("[Board: ");
        let mut start = 0usize;
        for r in 0..self.cfg.num_rounds {
            if r > 0 {
                s.push('|');
            }
            let end = (self.cfg.board_upto[r] as usize).min(board.len());
            if start < end {
                push_card_set(&mut s, mask_of(&board[start..end]));
            }
            start = start.max(end);
        }
        s.push(']');
        self.push_sequences(&mut s, &rec);
        s
    }

    pub(super) fn render_observation(&self, player: Player) -> String {
        assert!(player < 2, "player {player} out of range");
        let mut s = String::with_capacity(128);
        self.push_header(&mut s);
        s.push_str("[Private: ");
        push_card_set(&mut s, self.hole_mask(player));
        let spent = self.core.bet.spent;
        write!(s, "][PlayerContribution: {} {}]", spent[0], spent[1]).unwrap();
        s
    }

    pub(super) fn render_action(&self, player: Option<Player>, action: Action) -> String {
        let pid = player.map_or(-1, |p| p as i64);
        let cfg = &self.cfg;
        let mv = if self.core.turn == Turn::Chance {
            let mut m = String::from("Deal ");
            if action < cfg.deck_size {
                push_card(&mut m, cfg.deck[action]);
            } else {
                m.push_str("??");
            }
            m
        } else {
            match action {
                0 => "Fold".to_string(),
                1 => "Call".to_string(),
                _ if cfg.abstraction == Abstraction::FullGame => format!("Bet{action}"),
                2 => "Bet".to_string(),
                3 => "AllIn".to_string(),
                4 => "HalfPot".to_string(),
                _ => format!("Unknown{action}"),
            }
        };
        format!("player={pid} move={mv}")
    }

    pub(super) fn render_state(&self) -> String {
        let cfg = &self.cfg;
        let core = &self.core;
        let rec = self.record();
        let mut s = String::with_capacity(640);
        s.push_str(match cfg.abstraction {
            Abstraction::Fc => "BettingAbstration: FC\n",
            Abstraction::Fcpa => "BettingAbstration: FCPA\n",
            Abstraction::FullGame => "BettingAbstraction: FULLGAME\n",
        });
        for p in 0..2 {
            write!(s, "P{p} Cards: ").unwrap();
            push_card_set(&mut s, self.hole_mask(p));
            s.push('\n');
        }
        s.push_str("BoardCards ");
        push_card_set(&mut s, self.board_mask());
        s.push('\n');
        if core.turn == Turn::Chance {
            s.push_str("PossibleCardsToDeal ");
            let mut deck = 0u64;
            let mut m = core.deck;
            while m != 0 {
                deck |= 1u64 << cfg.deck[m.trailing_zeros() as usize];
                m &= m - 1;
            }
            push_card_set(&mut s, deck);
            s.push('\n');
        }
        if core.turn == Turn::Terminal {
            for p in 0..2 {
                writeln!(s, "P{p} Reward: {}", format_g6(core.returns[p])).unwrap();
            }
        }
        s.push_str("Node type?: ");
        match core.turn {
            Turn::Chance => s.push_str("Chance node\n"),
            Turn::Terminal => s.push_str("Terminal Node!\n"),
            Turn::Player(p) => writeln!(s, "Player node for player {p}").unwrap(),
        }
        if cfg.abstraction != Abstraction::FullGame {
            let names: &[(u8, &str)] = &[
                (FOLD_BIT, " ACTION_FOLD "),
                (CALL_BIT, " ACTION_CHECK_CALL "),
                (BET_BIT, " ACTION_BET "),
                (ALL_IN_BIT, " ACTION_ALL_IN "),
            ];
            if core.turn == Turn::Chance {
                s.push_str("PossibleActions (1): [ ACTION_DEAL ");
            } else {
                let legal = if core.turn == Turn::Terminal {
                    0
                } else {
                    core.legal
                };
                write!(s, "PossibleActions ({}): [", legal.count_ones()).unwrap();
                for &(bit, name) in names {
                    if legal & bit != 0 {
                        s.push_str(name);
                    }
                }
            }
        }
        write!(s, "]\nRound: {}\nACPC State: ", core.bet.round).unwrap();
        self.push_acpc_state(&mut s, &rec);
        s.push_str("\nAction Sequence: ");
        s.push_str(std::str::from_utf8(&rec.codes).expect("ascii"));
        s
    }

    /// ACPC's view of the state: `STATE:0:<betting>:<hole cards>/<board cards>` in deal order
    /// (undealt cards print as `2c`), then the contributions.
    fn push_acpc_state(&self, s: &mut String, rec: &Record) {
        let cfg = &self.cfg;
        let core = &self.core;
        let round = core.bet.round as usize;
        s.push_str("STATE:0:");
        for r in 0..=round {
            if r > 0 {
                s.push('/');
            }
            self.push_round_betting(s, &rec.rounds[r]);
        }
        s.push(':');
        for p in 0..2 {
            if p > 0 {
                s.push('|');
            }
            for &c in &core.hole[p][..cfg.num_hole] {
                push_card(s, c);
            }
        }
        let mut start = 0usize;
        for r in 0..=round {
            if r > 0 {
                s.push('/');
            }
            let n = cfg.num_board[r] as usize;
            for &c in &core.board[start..start + n] {
                push_card(s, c);
            }
            start += n;
        }
        let spent = core.bet.spent;
        writeln!(s, "\nSpent: [P0: {}  P1: {}  ]", spent[0], spent[1]).unwrap();
    }

    /// OpenSpiel's ACPC state string (`acpc_state` of the state struct), e.g.
    /// `"STATE:0:r300c/:AsKs|7c2d/3c3d3h\nSpent: [P0: 300  P1: 300  ]\n"`.
    pub fn acpc_state_string(&self) -> String {
        let mut s = String::with_capacity(96);
        self.push_acpc_state(&mut s, &self.record());
        s
    }

    /// The betting of rounds `0..=round` separated by `/` (ACPC notation, e.g. `r300c/cc`).
    pub fn betting_history(&self) -> String {
        let rec = self.record();
        let mut s = String::new();
        for r in 0..=self.core.bet.round as usize {
            if r > 0 {
                s.push('/');
            }
            self.push_round_betting(&mut s, &rec.rounds[r]);
        }
        s
    }

    /// Total chips in the pot.
    pub fn pot_size(&self) -> i32 {
        self.core.bet.total_spent()
    }

    /// The board as OpenSpiel prints card sets (descending rank, then suit `s h d c`).
    pub fn board_string(&self) -> String {
        let mut s = String::new();
        push_card_set(&mut s, self.board_mask());
        s
    }

    /// Player `p`'s hole cards as OpenSpiel prints card sets.
    pub fn hand_string(&self, p: Player) -> String {
        let mut s = String::new();
        push_card_set(&mut s, self.hole_mask(p));
        s
    }

    /// Writes the hole and board card sections starting at `out[2]`.
    fn write_cards(&self, player: Player, out: &mut [f32]) {
        let cfg = &self.cfg;
        let d = cfg.deck_size;
        for &c in self.hole_cards(player) {
            if let Some(i) = cfg.outcome_of(c) {
                out[2 + i] = 1.0;
            }
        }
        for &c in self.board_cards() {
            if let Some(i) = cfg.outcome_of(c) {
                out[2 + d + i] = 1.0;
            }
        }
    }

    pub(super) fn write_information_state_tensor(&self, player: Player, out: &mut [f32]) {
        let cfg = &self.cfg;
        assert!(player < 2, "player {player} out of range");
        assert_eq!(
            out.len(),
            cfg.information_state_tensor_size(),
            "tensor length"
        );
        out.fill(0.0);
        out[player] = 1.0;
        self.write_cards(player, out);
        self.write_actions(out, 2 + 2 * cfg.deck_size, 1.0);
    }

    /// The betting history from `out[bits]` on: two bits per action (call 10, pot 01, all-in
    /// 11), then after `2 · max_game_length` bits each action's size divided by `scale`.
    fn write_actions(&self, out: &mut [f32], bits: usize, scale: f32) {
        let len = self.cfg.max_game_length;
        let sizes = bits + 2 * len;
        self.replay(|i, _, applied| {
            if i >= len {
                return;
            }
            if let Applied::Choice { code, size, .. } = applied {
                let (a, b) = match code {
                    b'c' => (1.0, 0.0),
                    b'p' => (0.0, 1.0),
                    b'a' => (1.0, 1.0),
                    _ => (0.0, 0.0),
                };
                out[bits + 2 * i] = a;
                out[bits + 2 * i + 1] = b;
                out[sizes + i] = size as f32 / scale;
            }
        });
    }

    /// The public state tensor (segments in the module docs of `universal_poker`): a
    /// function of the public-tree node, the same for every deal of hole cards.
    pub(super) fn write_public_state_tensor(&self, out: &mut [f32]) {
        let cfg = &self.cfg;
        assert_eq!(out.len(), cfg.public_state_tensor_size(), "tensor length");
        out.fill(0.0);
        let (d, r) = (cfg.deck_size, cfg.num_rounds);
        let scale = cfg.max_utility.abs().max(1.0) as f32;
        for &c in self.board_cards() {
            if let Some(i) = cfg.outcome_of(c) {
                out[i] = 1.0;
            }
        }
        let bet = &self.core.bet;
        out[d + (bet.round as usize).min(r - 1)] = 1.0;
        let at = d + r;
        match self.core.turn {
            Turn::Player(p) => {
                out[at + p] = 1.0;
                out[at + 5] = (bet.max_spent - bet.spent[p]) as f32 / scale;
            }
            _ => out[at + 2] = 1.0,
        }
        out[at + 3] = bet.spent[0] as f32 / scale;
        out[at + 4] = bet.spent[1] as f32 / scale;
        out[at + 6] = f32::from(u8::from(bet.folded[0]));
        out[at + 7] = f32::from(u8::from(bet.folded[1]));
        self.write_actions(out, at + 8, scale);
    }

    pub(super) fn write_observation_tensor(&self, player: Player, out: &mut [f32]) {
        let cfg = &self.cfg;
        assert!(player < 2, "player {player} out of range");
        assert_eq!(out.len(), cfg.observation_tensor_size(), "tensor length");
        out.fill(0.0);
        out[player] = 1.0;
        self.write_cards(player, out);
        let at = 2 + 2 * cfg.deck_size;
        out[at] = self.core.bet.spent[0] as f32;
        out[at + 1] = self.core.bet.spent[1] as f32;
    }
}
