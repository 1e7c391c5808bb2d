//! Hands of heads-up no-limit Texas hold'em written in the Poker Hand History format (PHH,
//! <https://phh.readthedocs.io>), which pokerkit and other tools read: one TOML table per
//! hand, many hands to a `.phhs` file as the tables `[1]`, `[2]`, ...
//!
//! A hand of `universal_poker` is written as the variant `NT` with the game's blinds, no
//! antes, a minimum bet of one big blind and the game's stacks. PHH numbers the seats `p1`,
//! `p2`; heads-up, `p1` is the big blind (it acts first after the flop) and `p2` the small
//! blind, who acts first before the flop, as OpenSpiel's heads-up games play. In the FCPA
//! game (`hunl_fcpa`) `p1` is therefore OpenSpiel's player 0 and `p2` its player 1.
//!
//! Actions are PHH's: `d dh pK CARDS` (hole cards, in the order they were dealt), `d db CARDS`
//! (the flop, turn and river, each as it is dealt), `pK f` (fold), `pK cc` (check or call),
//! `pK cbr N` (bet or raise to `N` chips on the current street: the blinds count towards the
//! preflop street) and, when the hand reaches a showdown, `pK sm CARDS` (both players show:
//! first the last player to bet or raise on the final betting round, else `p1`). Each hand
//! also records `players` (the policies' names by seat), `hand` (its number in the file) and
//! `finishing_stacks` (the starting stacks plus the chips each player won or lost, as armac
//! scored the hand).

use crate::game::{Action, GameError, Player, State, Turn};
use crate::games::cards::cards_to_string;
use crate::games::universal_poker::{BettingType, Config, UniversalPokerGame};

/// Why a game or a hand cannot be written in PHH.
#[derive(Debug, thiserror::Error)]
pub enum PhhError {
    #[error(
        "hand histories in PHH need heads-up no-limit Texas hold'em (universal_poker with \
         nolimit betting, 4 rounds, 52 cards, 2 hole cards, board 0 3 1 1, the small blind \
         first before the flop and the big blind first after it): {0}"
    )]
    Game(String),
    #[error("hand {number}: {reason}")]
    Hand { number: u64, reason: String },
    #[error("hand {number}: {source}")]
    Replay {
        number: u64,
        #[source]
        source: GameError,
    },
}

/// Writes hands of one heads-up no-limit hold'em game as PHH tables.
#[derive(Debug)]
pub struct PhhTable {
    game: UniversalPokerGame,
    /// The OpenSpiel player in each PHH seat: `[big blind, small blind]`.
    seat_player: [Player; 2],
}

impl PhhTable {
    /// The table of a game given by its OpenSpiel string; refused unless it is heads-up
    /// no-limit Texas hold'em as PHH's `NT` variant describes it.
    pub fn new(game_string: &str) -> Result<PhhTable, PhhError> {
        let game = UniversalPokerGame::from_string(game_string)
            .map_err(|e| PhhError::Game(e.to_string()))?;
        let seat_player = check_holdem(game.config()).map_err(PhhError::Game)?;
        Ok(PhhTable { game, seat_player })
    }

    /// The PHH seat label (`p1`, `p2`) of OpenSpiel player `player`.
    pub fn seat_label(&self, player: Player) -> &'static str {
        if self.seat_player[0] == player {
            "p1"
        } else {
            "p2"
        }
    }

    /// Hand `number` (its table name in a `.phhs` file) played with `names[p]` as OpenSpiel
    /// player `p`: the whole `history` (chance outcomes included) replayed from the root, as a
    /// PHH table without its `[number]` header. The history must end the hand.
    pub fn hand(
        &self,
        number: u64,
        names: [&str; 2],
        history: &[Action],
    ) -> Result<String, PhhError> {
        let cfg = self.game.config();
        let mut state = self.game.initial_state();
        let mut actions: Vec<String> = Vec::new();
        let (mut holes_written, mut board_written) = (false, 0usize);
        // Chips each player had in at the start of the current street (0 preflop: the
        // blinds are bets of the preflop street in PHH).
        let (mut street, mut street_base) = (0u8, [0i32; 2]);
        let mut last_aggressor: Option<Player> = None;
        for (k, &a) in history.iter().enumerate() {
            match state.turn() {
                Turn::Terminal => {
                    return Err(PhhError::Hand {
                        number,
                        reason: format!("action #{k} comes after the end of the hand"),
                    });
                }
                Turn::Chance => {
                    state
                        .try_apply(a)
                        .map_err(|source| PhhError::Replay { number, source })?;
                    if !holes_written && (0..2).all(|p| state.hole_cards(p).len() == cfg.num_hole) {
                        for p in self.seat_player {
                            actions.push(format!(
                                "d dh {} {}",
                                self.seat_label(p),
                                cards_to_string(state.hole_cards(p))
                            ));
                        }
                        holes_written = true;
                    }
                    let board = state.board_cards();
                    if board.len() > board_written
                        && cfg.board_upto[..cfg.num_rounds]
                            .contains(&u8::try_from(board.len()).unwrap_or(u8::MAX))
                    {
                        actions.push(format!("d db {}", cards_to_string(&board[board_written..])));
                        board_written = board.len();
                    }
                }
                Turn::Player(p) => {
                    let round = state.betting().round;
                    if round != street {
                        street = round;
                        street_base = state.contributions();
                        last_aggressor = None;
                    }
                    state
                        .try_apply(a)
                        .map_err(|source| PhhError::Replay { number, source })?;
                    let seat = self.seat_label(p);
                    actions.push(match a {
                        0 => format!("{seat} f"),
                        1 => format!("{seat} cc"),
                        _ => {
                            last_aggressor = Some(p);
                            let to = state.contributions()[p] - street_base[p];
                            format!("{seat} cbr {to}")
                        }
                    });
                }
            }
        }
        if !state.is_terminal() {
            return Err(PhhError::Hand {
                number,
                reason: format!("the history {history:?} does not end the hand"),
            });
        }
        if !state.betting().folded.iter().any(|&f| f) {
            let first = last_aggressor.unwrap_or(self.seat_player[0]);
            for p in [first, 1 - first] {
                actions.push(format!(
                    "{} sm {}",
                    self.seat_label(p),
                    cards_to_string(state.hole_cards(p))
                ));
            }
        }
        let returns = state.returns();
        let mut finishing = [0i64; 2];
        for (f, &p) in finishing.iter_mut().zip(&self.seat_player) {
            if returns[p].fract() != 0.0 {
                return Err(PhhError::Hand {
                    number,
                    reason: format!("player {p} won {} chips, not a whole number", returns[p]),
                });
            }
            *f = i64::from(cfg.stack[p]) + returns[p] as i64;
        }
        let [bb, sb] = self.seat_player;
        let list = |v: [i64; 2]| format!("[{}, {}]", v[0], v[1]);
        let mut out = String::new();
        out.push_str("variant = 'NT'\n");
        out.push_str("antes = [0, 0]\n");
        out.push_str(&format!(
            "blinds_or_straddles = {}\n",
            list([cfg.blind[sb].into(), cfg.blind[bb].into()])
        ));
        out.push_str(&format!("min_bet = {}\n", cfg.big_blind));
        out.push_str(&format!(
            "starting_stacks = {}\n",
            list([cfg.stack[bb].into(), cfg.stack[sb].into()])
        ));
        out.push_str("actions = [\n");
        for a in &actions {
            out.push_str(&format!("  '{a}',\n"));
        }
        out.push_str("]\n");
        out.push_str(&format!("hand = {number}\n"));
        out.push_str(&format!(
            "players = [{}, {}]\n",
            toml_string(names[bb]),
            toml_string(names[sb])
        ));
        out.push_str(&format!("finishing_stacks = {}\n", list(finishing)));
        Ok(out)
    }
}

/// Checks that `cfg` is heads-up no-limit Texas hold'em with PHH's seating; returns the
/// OpenSpiel players of PHH's seats `[big blind, small blind]`.
fn check_holdem(cfg: &Config) -> Result<[Player; 2], String> {
    if cfg.betting != BettingType::NoLimit {
        return Err("the game has limit betting".into());
    }
    if cfg.num_rounds != 4
        || cfg.num_suits != 4
        || cfg.num_ranks != 13
        || cfg.num_hole != 2
        || cfg.num_board != [0, 3, 1, 1]
    {
        return Err(format!(
            "it has {} rounds, {} suits, {} ranks, {} hole cards and board {:?}",
            cfg.num_rounds, cfg.num_suits, cfg.num_ranks, cfg.num_hole, cfg.num_board
        ));
    }
    if cfg.blind[0] == cfg.blind[1] {
        return Err(format!("both blinds are {}", cfg.blind[0]));
    }
    let bb = if cfg.blind[0] > cfg.blind[1] { 0 } else { 1 };
    let sb = 1 - bb;
    let first = cfg.first_player.map(usize::from);
    if first[0] != sb || first[1..].iter().any(|&f| f != bb) {
        return Err(format!(
            "player {sb} posts the small blind but the first players are {:?} (0-based)",
            first
        ));
    }
    Ok([bb, sb])
}

/// `s` as a TOML basic string (quoted, with `"`, `\` and control characters escaped).
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes `.phhs` files: hands numbered from 1 in the order they are given.
pub struct PhhWriter<W: std::io::Write> {
    table: PhhTable,
    out: W,
    written: u64,
}

impl<W: std::io::Write> PhhWriter<W> {
    /// A writer of `table`'s hands to `out`.
    pub fn new(table: PhhTable, out: W) -> PhhWriter<W> {
        PhhWriter {
            table,
            out,
            written: 0,
        }
    }

    /// Appends the next hand (`names[p]` played OpenSpiel player `p`).
    pub fn write_hand(
        &mut self,
        names: [&str; 2],
        history: &[Action],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let number = self.written + 1;
        let text = self.table.hand(number, names, history)?;
        let sep = if number > 1 { "\n" } else { "" };
        write!(self.out, "{sep}[{number}]\n{text}")?;
        self.written = number;
        Ok(())
    }

    /// Hands written so far.
    pub fn hands(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::{PhhTable, PhhWriter};
    use crate::games::universal_poker::HUNL_FCPA;

    /// A hand of the FCPA game: the small blind (player 1, `p2`) pot-raises, the big blind
    /// calls, checks the flop and calls the small blind's all-in; aces win the showdown.
    #[test]
    fn an_fcpa_hand_in_phh() {
        let table = PhhTable::new(HUNL_FCPA).unwrap();
        // As Ks to player 0, 2c 7d to player 1; flop Ah 3d 9c, turn 4h, river Td.
        let history = [51, 47, 0, 21, 2, 1, 50, 5, 28, 1, 3, 1, 10, 33];
        let text = table.hand(7, ["zero", "one \"1\""], &history).unwrap();
        let expected = "variant = 'NT'
antes = [0, 0]
blinds_or_straddles = [50, 100]
min_bet = 100
starting_stacks = [20000, 20000]
actions = [
  'd dh p1 AsKs',
  'd dh p2 2c7d',
  'p2 cbr 300',
  'p1 cc',
  'd db Ah3d9c',
  'p1 cc',
  'p2 cbr 19700',
  'p1 cc',
  'd db 4h',
  'd db Td',
  'p2 sm 2c7d',
  'p1 sm AsKs',
]
hand = 7
players = [\"zero\", \"one \\\"1\\\"\"]
finishing_stacks = [40000, 0]
";
        assert_eq!(text, expected);
        // A fold ends the hand without a showdown; an unfinished hand is refused.
        let fold = table.hand(1, ["a", "b"], &[51, 47, 0, 21, 0]).unwrap();
        assert!(fold.contains("'p2 f',\n]") && fold.contains("[20050, 19950]"));
        assert!(table.hand(1, ["a", "b"], &[51, 47, 0, 21, 1]).is_err());
        let mut w = PhhWriter::new(table, Vec::new());
        w.write_hand(["a", "b"], &[51, 47, 0, 21, 0]).unwrap();
        w.write_hand(["a", "b"], &[51, 47, 0, 21, 0]).unwrap();
        let file = String::from_utf8(w.finish().unwrap()).unwrap();
        assert!(file.starts_with("[1]\n") && file.contains("\n\n[2]\nvariant"));
    }

    /// Only heads-up no-limit Texas hold'em has a PHH variant here.
    #[test]
    fn other_games_are_refused() {
        assert!(PhhTable::new("leduc_poker").is_err());
        let limit = HUNL_FCPA.replace("betting=nolimit", "betting=limit");
        assert!(PhhTable::new(&limit).is_err());
        let same_first = HUNL_FCPA.replace("firstPlayer=2 1 1 1", "firstPlayer=1 1 1 1");
        assert!(PhhTable::new(&same_first).is_err());
        // The small blind as player 0 (acting first preflop, second after): p1 is player 1.
        let swapped = HUNL_FCPA
            .replace("blind=100 50", "blind=50 100")
            .replace("firstPlayer=2 1 1 1", "firstPlayer=1 2 2 2");
        let t = PhhTable::new(&swapped).unwrap();
        assert_eq!((t.seat_label(1), t.seat_label(0)), ("p1", "p2"));
        let fold = t.hand(1, ["sb", "bb"], &[51, 47, 0, 21, 0]).unwrap();
        assert!(fold.contains("'d dh p1 2c7d'") && fold.contains("players = [\"bb\", \"sb\"]"));
        assert!(fold.contains("'p2 f'") && fold.contains("[20050, 19950]"));
    }
}
