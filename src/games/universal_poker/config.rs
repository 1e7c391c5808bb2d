//! Parameters of `universal_poker`: parsing, validation and the derived static facts
//! (action counts, utilities, game length, tensor sizes), following OpenSpiel 2.0.2 and the
//! ACPC game-definition rules it builds on.

use crate::game::{GameError, GameParams, ParamValue};

/// Most betting rounds an ACPC game definition may have.
pub const MAX_ROUNDS: usize = 4;
/// Most hole cards per player.
pub const MAX_HOLE_CARDS: usize = 3;
/// Most board cards over all rounds.
pub const MAX_BOARD_CARDS: usize = 7;
/// Most actions the ACPC state records in one round; a raise is refused once one raise plus
/// a call of every player would not fit.
pub const MAX_ROUND_ACTIONS: usize = 64;

/// Every parameter OpenSpiel's `universal_poker` knows.
const KNOWN: &[&str] = &[
    "betting",
    "bettingAbstraction",
    "blind",
    "boardCards",
    "calcOddsNumSims",
    "firstPlayer",
    "handReaches",
    "maxRaises",
    "numBoardCards",
    "numHoleCards",
    "numPlayers",
    "numRanks",
    "numRounds",
    "numSuits",
    "potSize",
    "raiseSize",
    "stack",
];

/// Fixed-limit or no-limit betting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BettingType {
    /// Raises are by a fixed amount per round (`raiseSize`), capped by `maxRaises`.
    Limit,
    /// Raises to any amount between the minimum raise and the player's stack.
    NoLimit,
}

/// Which player actions exist (OpenSpiel's `bettingAbstraction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abstraction {
    /// Fold and check/call only.
    Fc,
    /// Fold, check/call, pot-sized raise, all-in.
    Fcpa,
    /// Fold (0), check/call (1) and "raise to N chips" as action N.
    FullGame,
}

/// A validated `universal_poker` configuration (two players).
#[derive(Clone, Debug)]
pub struct Config {
    /// Limit or no-limit.
    pub betting: BettingType,
    /// The action abstraction.
    pub abstraction: Abstraction,
    /// Number of betting rounds, `1..=4`.
    pub num_rounds: usize,
    /// Chips each player has put in before any action.
    pub blind: [i32; 2],
    /// Stacks; `i32::MAX` in limit games, where ACPC ignores stacks.
    pub stack: [i32; 2],
    /// Limit raise size per round.
    pub raise_size: [i32; MAX_ROUNDS],
    /// First player to act in each round (0-based).
    pub first_player: [u8; MAX_ROUNDS],
    /// Most raises per round (255 when not given).
    pub max_raises: [u8; MAX_ROUNDS],
    /// Suits in the deck, `1..=4`.
    pub num_suits: usize,
    /// Ranks in the deck, `1..=13` (the lowest ranks: 2, 3, ...).
    pub num_ranks: usize,
    /// Hole cards per player.
    pub num_hole: usize,
    /// Board cards revealed at the start of each round.
    pub num_board: [u8; MAX_ROUNDS],
    /// Board cards dealt once round `r` is reached: `num_board[0] + ... + num_board[r]`.
    pub board_upto: [u8; MAX_ROUNDS],
    /// Board cards over all rounds.
    pub total_board: usize,
    /// Card id (`rank * 4 + suit`) of each chance outcome, in OpenSpiel's order (by rank,
    /// then suit); only the first `deck_size` entries are used.
    pub deck: [u8; 52],
    /// Number of cards in the deck (`num_suits * num_ranks`).
    pub deck_size: usize,
    /// Largest blind.
    pub big_blind: i32,
    /// Largest entry of the `stack` parameter (fullgame action count).
    pub max_stack_param: i32,
    /// OpenSpiel's `MaxGameLength()`.
    pub max_game_length: usize,
    /// OpenSpiel's `NumDistinctActions()`.
    pub num_distinct_actions: usize,
    /// OpenSpiel's `MinUtility()`.
    pub min_utility: f64,
    /// OpenSpiel's `MaxUtility()`.
    pub max_utility: f64,
    /// The loadable game string.
    pub load_string: String,
}

/// Reads a parameter that is a string of space-separated integers. Like OpenSpiel, a bare
/// integer is refused (it parses as an integer, not a string), so that every accepted game
/// string also loads in OpenSpiel.
fn int_list(params: &GameParams, key: &str, default: &str) -> Result<Vec<i64>, GameError> {
    let text = match params.params.get(key) {
        None => default.to_string(),
        Some(ParamValue::Int(i)) => {
            return Err(params.bad(
                key,
                &format!(
                    "`{i}` is an integer, but OpenSpiel expects a string of space-separated \
                     integers here (give at least two entries)"
                ),
            ));
        }
        Some(ParamValue::Str(s)) => s.clone(),
        Some(v) => {
            return Err(params.bad(
                key,
                &format!("expected space-separated integers, got `{}`", v.render()),
            ));
        }
    };
    text.split_whitespace()
        .map(|t| {
            t.parse::<i64>()
                .map_err(|_| params.bad(key, &format!("`{t}` is not an integer (in `{text}`)")))
        })
        .collect()
}

/// Checks that `v` lies in `lo..=hi`.
fn in_range(params: &GameParams, key: &str, v: i64, lo: i64, hi: i64) -> Result<(), GameError> {
    if v < lo || v > hi {
        return Err(params.bad(
            key,
            &format!("{v} is outside the supported range {lo}..={hi}"),
        ));
    }
    Ok(())
}

/// `betting` and `bettingAbstraction`, and the subgame parameters (only their neutral values).
fn parse_betting(params: &GameParams) -> Result<(BettingType, Abstraction), GameError> {
    let betting = match params.string("betting", "nolimit")?.as_str() {
        "nolimit" => BettingType::NoLimit,
        "limit" => BettingType::Limit,
        other => {
            return Err(params.bad(
                "betting",
                &format!("`{other}` is not supported; use `limit` or `nolimit`"),
            ));
        }
    };
    let abstraction = match params.string("bettingAbstraction", "fcpa")?.as_str() {
        "fc" => Abstraction::Fc,
        "fcpa" => Abstraction::Fcpa,
        "fullgame" => Abstraction::FullGame,
        other => {
            return Err(params.bad(
                "bettingAbstraction",
                &format!("`{other}` is not supported; use `fc`, `fcpa` or `fullgame`"),
            ));
        }
    };
    if betting == BettingType::Limit && abstraction == Abstraction::FullGame {
        return Err(params.bad(
            "bettingAbstraction",
            "`fullgame` is only supported with `betting=nolimit`",
        ));
    }
    // Subgame parameters: only their neutral values are supported.
    if params.int("potSize", 0)? != 0 {
        return Err(params.bad("potSize", "subgames are not supported; only 0"));
    }
    if !params.string("boardCards", "")?.is_empty() {
        return Err(params.bad("boardCards", "subgames are not supported; only empty"));
    }
    if !params.string("handReaches", "")?.is_empty() {
        return Err(params.bad("handReaches", "subgames are not supported; only empty"));
    }
    Ok((betting, abstraction))
}

/// The chips of a game: `blind` and `stack`.
struct Chips {
    blind: [i32; 2],
    big_blind: i32,
    /// The stacks the betting plays with (unbounded in limit games).
    stack: [i32; 2],
    /// The largest `stack` parameter.
    max_stack_param: i32,
}

/// `blind` and `stack`.
fn parse_chips(params: &GameParams, betting: BettingType) -> Result<Chips, GameError> {
    let blinds = int_list(params, "blind", "100 100")?;
    if blinds.len() != 2 {
        return Err(params.bad("blind", "expected exactly 2 blinds (one per player)"));
    }
    let mut blind = [0i32; 2];
    for (b, &v) in blind.iter_mut().zip(&blinds) {
        in_range(params, "blind", v, 0, i32::MAX as i64)?;
        *b = v as i32;
    }
    let big_blind = blind[0].max(blind[1]);
    if big_blind < 1 {
        return Err(params.bad("blind", "the largest blind must be at least one chip"));
    }

    let stacks = int_list(params, "stack", "1200 1200")?;
    if stacks.len() != 2 {
        return Err(params.bad("stack", "expected exactly 2 stacks (one per player)"));
    }
    let mut stack_param = [0i32; 2];
    for (s, &v) in stack_param.iter_mut().zip(&stacks) {
        in_range(params, "stack", v, 1, i32::MAX as i64)?;
        *s = v as i32;
    }
    let max_stack_param = stack_param[0].max(stack_param[1]);
    let stack = match betting {
        BettingType::NoLimit => stack_param,
        BettingType::Limit => [i32::MAX; 2],
    };
    for p in 0..2 {
        if blind[p] > stack[p] {
            return Err(params.bad("blind", &format!("blind of player {p} exceeds its stack")));
        }
    }
    Ok(Chips {
        blind,
        big_blind,
        stack,
        max_stack_param,
    })
}

/// The per-round betting rules: `raiseSize` (limit games), `firstPlayer` and `maxRaises`.
#[allow(clippy::type_complexity)]
fn parse_round_rules(
    params: &GameParams,
    betting: BettingType,
    num_rounds: usize,
) -> Result<([i32; MAX_ROUNDS], [u8; MAX_ROUNDS], [u8; MAX_ROUNDS]), GameError> {
    let mut raise_size = [0i32; MAX_ROUNDS];
    if betting == BettingType::Limit {
        let sizes = int_list(params, "raiseSize", "100 100")?;
        if sizes.len() < num_rounds {
            return Err(params.bad("raiseSize", "expected one raise size per round"));
        }
        for (r, &v) in sizes.iter().take(num_rounds).enumerate() {
            in_range(params, "raiseSize", v, 1, i32::MAX as i64)?;
            raise_size[r] = v as i32;
        }
    }

    let firsts = int_list(params, "firstPlayer", "1 1")?;
    if firsts.len() > MAX_ROUNDS {
        return Err(params.bad("firstPlayer", "at most 4 entries (one per round)"));
    }
    // ACPC: rounds without an entry start with the first player.
    let mut first_player = [0u8; MAX_ROUNDS];
    for (r, &v) in firsts.iter().enumerate() {
        in_range(params, "firstPlayer", v, 1, 2)?;
        first_player[r] = (v - 1) as u8;
    }

    let mut max_raises = [u8::MAX; MAX_ROUNDS];
    let raises = int_list(params, "maxRaises", "")?;
    if raises.len() > MAX_ROUNDS {
        return Err(params.bad("maxRaises", "at most 4 entries (one per round)"));
    }
    for (r, &v) in raises.iter().enumerate() {
        in_range(params, "maxRaises", v, 0, u8::MAX as i64)?;
        max_raises[r] = v as u8;
    }
    Ok((raise_size, first_player, max_raises))
}

/// `numBoardCards`: the board cards dealt in each round, the count dealt up to each round, and
/// their total, checked against the deck and the hand evaluator.
#[allow(clippy::type_complexity)]
fn parse_board(
    params: &GameParams,
    num_rounds: usize,
    num_hole: usize,
    deck_size: usize,
) -> Result<([u8; MAX_ROUNDS], [u8; MAX_ROUNDS], usize), GameError> {
    let boards = int_list(params, "numBoardCards", "0 1")?;
    if boards.len() < num_rounds {
        return Err(params.bad("numBoardCards", "expected one entry per round"));
    }
    let mut num_board = [0u8; MAX_ROUNDS];
    let mut board_upto = [0u8; MAX_ROUNDS];
    let mut total = 0usize;
    for r in 0..num_rounds {
        in_range(
            params,
            "numBoardCards",
            boards[r],
            0,
            MAX_BOARD_CARDS as i64,
        )?;
        num_board[r] = boards[r] as u8;
        total += boards[r] as usize;
        if total > MAX_BOARD_CARDS {
            return Err(params.bad("numBoardCards", "at most 7 board cards in all"));
        }
        board_upto[r] = total as u8;
    }
    board_upto[num_rounds..].fill(total as u8);
    if 2 * num_hole + total > deck_size {
        return Err(params.bad(
            "numBoardCards",
            "more hole and board cards than the deck holds",
        ));
    }
    if !(5..=7).contains(&(num_hole + total)) {
        return Err(params.bad(
            "numBoardCards",
            &format!(
                "showdowns of {} cards (numHoleCards + board) are not supported; the hand \
                 evaluator ranks 5 to 7 cards",
                num_hole + total
            ),
        ));
    }
    Ok((num_board, board_upto, total))
}

impl Config {
    /// Validates `params` (unknown or unsupported parameters are errors naming the parameter)
    /// and derives every static fact of the game.
    pub fn from_params(params: &GameParams) -> Result<Config, GameError> {
        params.check_known(KNOWN)?;
        let num_players = params.int("numPlayers", 2)?;
        if num_players != 2 {
            return Err(params.bad("numPlayers", "only 2 players are supported"));
        }
        let (betting, abstraction) = parse_betting(params)?;
        // Only affects OpenSpiel's state struct, never strings, tensors or returns.
        let odds = params.int("calcOddsNumSims", 0)?;
        in_range(params, "calcOddsNumSims", odds, 0, i32::MAX as i64)?;

        let num_rounds = params.int("numRounds", 2)?;
        in_range(params, "numRounds", num_rounds, 1, MAX_ROUNDS as i64)?;
        let num_rounds = num_rounds as usize;
        let num_suits = params.int("numSuits", 4)?;
        in_range(params, "numSuits", num_suits, 1, 4)?;
        let num_ranks = params.int("numRanks", 6)?;
        in_range(params, "numRanks", num_ranks, 1, 13)?;
        let num_hole = params.int("numHoleCards", 1)?;
        in_range(params, "numHoleCards", num_hole, 1, MAX_HOLE_CARDS as i64)?;
        let (num_suits, num_ranks, num_hole) =
            (num_suits as usize, num_ranks as usize, num_hole as usize);

        let chips = parse_chips(params, betting)?;
        let (raise_size, first_player, max_raises) =
            parse_round_rules(params, betting, num_rounds)?;
        let deck_size = num_suits * num_ranks;
        let (num_board, board_upto, total) = parse_board(params, num_rounds, num_hole, deck_size)?;

        // OpenSpiel's deck: ranks 0..num_ranks, suits 0..num_suits, ordered by rank then suit.
        let mut deck = [0u8; 52];
        let mut i = 0;
        for r in 0..num_ranks {
            for s in 0..num_suits {
                deck[i] = (r * 4 + s) as u8;
                i += 1;
            }
        }

        let max_stack_param = chips.max_stack_param;
        let mut cfg = Config {
            betting,
            abstraction,
            num_rounds,
            blind: chips.blind,
            stack: chips.stack,
            raise_size,
            first_player,
            max_raises,
            num_suits,
            num_ranks,
            num_hole,
            num_board,
            board_upto,
            total_board: total,
            deck,
            deck_size,
            big_blind: chips.big_blind,
            max_stack_param,
            max_game_length: 0,
            num_distinct_actions: 0,
            min_utility: 0.0,
            max_utility: 0.0,
            load_string: params.render(),
        };
        cfg.max_game_length = cfg.compute_max_game_length();
        cfg.num_distinct_actions = match (abstraction, betting) {
            (Abstraction::FullGame, _) => max_stack_param as usize + 1,
            (_, BettingType::Limit) => 3,
            (_, BettingType::NoLimit) => 4,
        };
        let (lo, hi) = cfg.compute_utilities();
        cfg.min_utility = lo;
        cfg.max_utility = hi;
        Ok(cfg)
    }

    /// OpenSpiel's estimate of the longest history (deals included, plus one).
    fn compute_max_game_length(&self) -> usize {
        let n = 2.0f64;
        let mut length = 1 + self.total_board + 2 * self.num_hole + 2 * self.num_rounds;
        let max_stack = self.stack[0].max(self.stack[1]) as f64;
        let max_blind = self.big_blind as f64;
        let max_num_raises: usize = match self.abstraction {
            Abstraction::Fc => 0,
            Abstraction::Fcpa => {
                // Every raise is a pot raise, each tripling the pot.
                let mut count = 0;
                let mut pot = max_blind * n;
                while pot / n < max_stack {
                    count += 1;
                    pot += pot * n;
                }
                count
            }
            Abstraction::FullGame => ((max_stack + max_blind - 1.0) / max_blind) as usize,
        };
        length += max_num_raises;
        length
    }

    /// OpenSpiel's utility bounds.
    fn compute_utilities(&self) -> (f64, f64) {
        match self.betting {
            BettingType::NoLimit => {
                // Heads-up, the shorter stack is all that can change hands.
                let short = self.stack[0].min(self.stack[1]) as f64;
                (-short, short)
            }
            BettingType::Limit => {
                let mut commit = self.big_blind as f64;
                for r in 0..self.num_rounds {
                    commit += self.max_raises[r] as f64 * self.raise_size[r] as f64;
                }
                (-commit, commit)
            }
        }
    }

    /// Length of the information-state tensor: player, hole cards, board cards, two bits per
    /// action-sequence entry and one bet size per entry.
    pub fn information_state_tensor_size(&self) -> usize {
        2 + 2 * self.deck_size + 3 * self.max_game_length
    }

    /// Per-entry magnitudes of the information-state tensor: 1 for the bits, the larger stack
    /// for the bet sizes (the last `max_game_length` entries, in chips).
    pub fn information_state_tensor_scale(&self) -> Vec<f32> {
        let mut scale = vec![1.0; self.information_state_tensor_size()];
        let sizes = 2 + 2 * self.deck_size + 2 * self.max_game_length;
        scale[sizes..].fill(self.largest_stack());
        scale
    }

    /// Per-entry magnitudes of the observation tensor: 1 for the bits, the larger stack for
    /// the two contributions (its last two entries, in chips).
    pub fn observation_tensor_scale(&self) -> Vec<f32> {
        let mut scale = vec![1.0; self.observation_tensor_size()];
        let n = scale.len();
        scale[n - 2..].fill(self.largest_stack());
        scale
    }

    fn largest_stack(&self) -> f32 {
        self.stack.iter().copied().max().unwrap_or(1).max(1) as f32
    }

    /// Length of the public state tensor: board cards, round, player to act, contributions,
    /// amount to call, folds, two bits per history entry and one bet size per entry.
    pub fn public_state_tensor_size(&self) -> usize {
        self.deck_size + self.num_rounds + 8 + 3 * self.max_game_length
    }

    /// Length of the observation tensor: player, hole cards, board cards, contributions.
    pub fn observation_tensor_size(&self) -> usize {
        2 * (2 + self.deck_size)
    }

    /// Chance outcome of card `card`, if the card is in the deck.
    pub fn outcome_of(&self, card: u8) -> Option<usize> {
        let (r, s) = ((card >> 2) as usize, (card & 3) as usize);
        (r < self.num_ranks && s < self.num_suits).then_some(r * self.num_suits + s)
    }
}
