//! Liar's Dice (also called Bluff), bit for bit as OpenSpiel's `liars_dice`.
//!
//! # Rules
//! Two players each roll their own dice in secret (player 0 rolls all of its dice first, one
//! chance node per die, then player 1). Player 0 then opens the bidding and the players
//! alternate. A bid `q-f` claims that at least `q` of all dice on the table show face `f`;
//! the highest face (`dice_sides`) is wild and counts for every face. Each bid must rank
//! strictly above the previous one; instead of bidding, a player (not the opener on the first
//! move) may call "Liar". The dice are then revealed: if the last bid holds, its bidder wins
//! (+1) and the caller loses (-1), otherwise the caller wins. Once every die has been rolled,
//! each player's dice are sorted in ascending order (so the strings list them sorted from
//! then on; while rolling they appear in the order rolled, with `-1` for dice not yet rolled).
//!
//! # Actions
//! Chance action `r` rolls face `r + 1`. With `T` dice in all and `S` sides, player action
//! `b < T*S` is a bid and `T*S` is "Liar". Bid ids are ranked by the bidding rule:
//! * `reset-face` (default): `b = (q - 1) * S + (f - 1)`, so a higher quantity beats any face
//!   and the face may go down when the quantity goes up;
//! * `reset-quantity`: `b = (f - 1) * T + (q - 1)`, so a higher face beats any quantity.
//!
//! # Parameters
//! * `players` (2; no other value is supported),
//! * `numdice` (1): dice per player, `1..=8`,
//! * `dice_sides` (6): `1..=9` (one digit per die keeps OpenSpiel's strings unambiguous),
//! * `bidding_rule` (`reset-face`): `reset-face` or `reset-quantity`,
//! * armac extensions `numdice_p0`, `numdice_p1` (default `numdice`): the dice count of one
//!   player, for Bluff(D1,D2) with D1 != D2 as in Lanctot et al.'s average-strategy-sampling
//!   experiments. OpenSpiel's C++ code already supports unequal counts internally (it reads
//!   undocumented `numdice0`/`numdice1` keys it does not accept); our strings and tensors are
//!   exactly what that code produces: each player's dice part has its own length, the dice
//!   segment of the tensors is sized for the larger hand, and bids range over all `D1 + D2`
//!   dice. With equal counts the game is exactly OpenSpiel's `liars_dice(numdice=D)`.
//!
//! [`Game::load_string`] renders only non-default parameters, sorted by key; equal per-player
//! counts are rendered as `numdice`, unequal ones as `numdice_p0`/`numdice_p1` (then the
//! string is an armac extension that OpenSpiel cannot load).
//!
//! # Tensors
//! Both tensors have `2 + M*S + T*S + 1` entries, `M` the larger dice count:
//! * `[0, 2)`: one-hot observing player;
//! * `[2, 2 + M*S)`: the observer's dice, one block of `S` per die slot, one-hot face
//!   (all zero for a die not yet rolled or a slot beyond the observer's dice count);
//! * `[2 + M*S, 2 + M*S + T*S + 1)`: one bit per bid id, "Liar" last. The information-state
//!   tensor marks every bid made so far, the observation tensor only the last two.
//!
//! # Public and private states
//! The public state is the bid sequence. A player's private state is the multiset of its
//! rolled dice: the ascending tuple of its `k` rolled faces `v_1 <= .. <= v_k` (0-based) read
//! as a number in base `S` (first die most significant), out of `S^k` states (1 before its
//! first roll, `S^D` once all its `D` dice are rolled; indices of unsorted tuples are
//! unreachable). Because the tuple is sorted, a partial tuple has the same index as the full
//! tuple padded with face-1 dice in front, so the index after a roll is a function of the
//! index before it and the roll alone, and it changes only when the player's own dice are
//! rolled.
//!
//! Two consequences of matching OpenSpiel's strings: (1) they do not reveal how far the
//! *opponent* has rolled (player 0's string is the same before and after player 1 rolls), and
//! the public state must be a function of each information state, so the whole rolling phase
//! shares the public state of the first decision node (no bids yet), as the deal does in
//! Kuhn poker; (2) the strings at decision nodes show the dice sorted, so two rolling orders
//! of the same dice are one information state, hence the sorted encoding rather than the
//! rolling order. With `numdice >= 2`, the public state and both private states determine a
//! history only up to the order of each player's rolls.

use crate::game::{Action, Game, GameError, GameParams, GameRef, ParamValue, Player, State, Turn};
use std::fmt::Write as _;
use std::sync::Arc;

/// Largest supported number of dice per player.
pub const MAX_DICE_PER_PLAYER: usize = 8;
/// Largest supported number of sides of a die.
pub const MAX_DICE_SIDES: usize = 9;

/// How bids are ranked (OpenSpiel's `bidding_rule` parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BiddingRule {
    /// A higher quantity beats any face (`reset-face`, the default).
    ResetFace,
    /// A higher face beats any quantity (`reset-quantity`).
    ResetQuantity,
}

/// Static facts shared by the game and its states (small and `Copy`, so states carry it by
/// value instead of through a shared pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    sides: usize,
    dice: [usize; 2],
    rule: BiddingRule,
}

impl Config {
    fn total_dice(&self) -> usize {
        self.dice[0] + self.dice[1]
    }

    fn max_dice(&self) -> usize {
        self.dice[0].max(self.dice[1])
    }

    /// The "Liar" action id (one past the highest bid).
    fn liar(&self) -> Action {
        self.total_dice() * self.sides
    }

    /// `(quantity, face)` of a bid id, both 1-based.
    fn unrank(&self, bid: Action) -> (usize, usize) {
        match self.rule {
            BiddingRule::ResetFace => (bid / self.sides + 1, bid % self.sides + 1),
            BiddingRule::ResetQuantity => {
                let t = self.total_dice();
                (bid % t + 1, bid / t + 1)
            }
        }
    }

    fn tensor_size(&self) -> usize {
        2 + self.max_dice() * self.sides + self.liar() + 1
    }

    fn push_action(&self, out: &mut String, action: Action) {
        if action == self.liar() {
            out.push_str("Liar");
        } else {
            let (q, f) = self.unrank(action);
            let _ = write!(out, "{q}-{f}");
        }
    }
}

/// The game `liars_dice(...)`; see the module docs.
#[derive(Debug)]
pub struct LiarsDiceGame {
    cfg: Config,
}

/// Loads `liars_dice(...)` from its parameters (see the module docs for the list).
pub fn load(params: &GameParams) -> Result<GameRef, GameError> {
    Ok(Arc::new(LiarsDiceGame::from_params(params)?))
}

impl LiarsDiceGame {
    /// Validates `params` and builds the game.
    pub fn from_params(params: &GameParams) -> Result<Self, GameError> {
        params.check_known(&[
            "players",
            "numdice",
            "dice_sides",
            "bidding_rule",
            "numdice_p0",
            "numdice_p1",
        ])?;
        if params.int("players", 2)? != 2 {
            return Err(params.bad("players", "only 2 players are supported"));
        }
        let max = MAX_DICE_PER_PLAYER as i64;
        let numdice = params.int_in("numdice", 1, 1, max)?;
        let d0 = params.int_in("numdice_p0", numdice, 1, max)? as usize;
        let d1 = params.int_in("numdice_p1", numdice, 1, max)? as usize;
        let sides = params.int_in("dice_sides", 6, 1, MAX_DICE_SIDES as i64)? as usize;
        let rule = match params.string("bidding_rule", "reset-face")?.as_str() {
            "reset-face" => BiddingRule::ResetFace,
            "reset-quantity" => BiddingRule::ResetQuantity,
            other => {
                return Err(params.bad(
                    "bidding_rule",
                    &format!("`{other}` is not one of `reset-face`, `reset-quantity`"),
                ));
            }
        };
        Ok(LiarsDiceGame {
            cfg: Config {
                sides,
                dice: [d0, d1],
                rule,
            },
        })
    }

    /// Number of dice of `player`.
    pub fn num_dice(&self, player: Player) -> usize {
        self.cfg.dice[player]
    }

    /// Number of sides of each die.
    pub fn dice_sides(&self) -> usize {
        self.cfg.sides
    }

    /// The bidding rule.
    pub fn bidding_rule(&self) -> BiddingRule {
        self.cfg.rule
    }

    /// A fresh initial state with its concrete type (no boxing).
    pub fn initial_state(&self) -> LiarsDiceState {
        LiarsDiceState {
            cfg: self.cfg,
            history: Vec::with_capacity(self.cfg.total_dice() + 4),
            dice: [[0; MAX_DICE_PER_PLAYER]; 2],
            rolled: [0; 2],
            current_bid: None,
            to_move: 0,
            winner: None,
        }
    }
}

impl Game for LiarsDiceGame {
    fn short_name(&self) -> &str {
        "liars_dice"
    }

    fn load_string(&self) -> String {
        let c = &self.cfg;
        let mut g = GameParams::named("liars_dice");
        if c.dice[0] == c.dice[1] {
            if c.dice[0] != 1 {
                g.params
                    .insert("numdice".into(), ParamValue::Int(c.dice[0] as i64));
            }
        } else {
            for (p, key) in ["numdice_p0", "numdice_p1"].iter().enumerate() {
                g.params
                    .insert((*key).into(), ParamValue::Int(c.dice[p] as i64));
            }
        }
        if c.sides != 6 {
            g.params
                .insert("dice_sides".into(), ParamValue::Int(c.sides as i64));
        }
        if c.rule == BiddingRule::ResetQuantity {
            g.params.insert(
                "bidding_rule".into(),
                ParamValue::Str("reset-quantity".into()),
            );
        }
        g.render()
    }

    fn num_distinct_actions(&self) -> usize {
        self.cfg.liar() + 1
    }

    fn max_chance_outcomes(&self) -> usize {
        self.cfg.sides
    }

    fn max_game_length(&self) -> usize {
        self.cfg.liar() + 1
    }

    fn min_utility(&self) -> f64 {
        -1.0
    }

    fn max_utility(&self) -> f64 {
        1.0
    }

    fn information_state_tensor_size(&self) -> usize {
        self.cfg.tensor_size()
    }

    fn observation_tensor_size(&self) -> usize {
        self.cfg.tensor_size()
    }

    fn public_state_tensor_size(&self) -> usize {
        self.cfg.liar() + 1
    }

    fn provides_observation_string(&self) -> bool {
        false
    }

    fn new_initial_state(&self) -> Box<dyn State> {
        Box::new(self.initial_state())
    }
}

/// A Liar's Dice history. Fixed-size arrays plus the action history; no shared pointers.
#[derive(Clone, Debug)]
pub struct LiarsDiceState {
    cfg: Config,
    history: Vec<Action>,
    /// Faces `1..=sides` per die slot in OpenSpiel's order (rolling order, sorted once every
    /// die is rolled); 0 for a die not rolled yet.
    dice: [[u8; MAX_DICE_PER_PLAYER]; 2],
    rolled: [usize; 2],
    current_bid: Option<Action>,
    to_move: Player,
    winner: Option<Player>,
}

impl LiarsDiceState {
    fn rolling(&self) -> bool {
        self.rolled[0] < self.cfg.dice[0] || self.rolled[1] < self.cfg.dice[1]
    }

    /// The player whose die the next chance node rolls.
    fn roller(&self) -> Player {
        usize::from(self.rolled[0] >= self.cfg.dice[0])
    }

    /// Bids and the final "Liar", in order (empty while rolling).
    fn bids(&self) -> &[Action] {
        &self.history[self.rolled[0] + self.rolled[1]..]
    }

    fn push_dice(&self, out: &mut String, player: Player) {
        for &v in &self.dice[player][..self.cfg.dice[player]] {
            if v == 0 {
                out.push_str("-1");
            } else {
                out.push(char::from(b'0' + v));
            }
        }
    }

    fn push_bids(&self, out: &mut String) {
        for &b in self.bids() {
            out.push(' ');
            self.cfg.push_action(out, b);
        }
    }

    /// Writes both tensors; `last` limits the bid bits to the last `last` bids.
    fn write_tensor(&self, player: Player, out: &mut [f32], last: usize) {
        let sides = self.cfg.sides;
        assert_eq!(out.len(), self.cfg.tensor_size(), "tensor buffer size");
        out.fill(0.0);
        out[player] = 1.0;
        for (d, &v) in self.dice[player][..self.cfg.dice[player]]
            .iter()
            .enumerate()
        {
            if v != 0 {
                out[2 + d * sides + v as usize - 1] = 1.0;
            }
        }
        let offset = 2 + self.cfg.max_dice() * sides;
        let bids = self.bids();
        for &b in &bids[bids.len().saturating_sub(last)..] {
            out[offset + b] = 1.0;
        }
    }

    fn resolve(&mut self, caller: Player) {
        let bid = self.current_bid.expect("Liar needs a bid to call");
        let (quantity, face) = self.cfg.unrank(bid);
        let wild = self.cfg.sides;
        let matches = (0..2)
            .flat_map(|p| self.dice[p][..self.cfg.dice[p]].iter())
            .filter(|&&v| v as usize == face || v as usize == wild)
            .count();
        let bidder = 1 - caller;
        self.winner = Some(if matches >= quantity { bidder } else { caller });
    }
}

impl State for LiarsDiceState {
    fn turn(&self) -> Turn {
        if self.rolling() {
            Turn::Chance
        } else if self.winner.is_some() {
            Turn::Terminal
        } else {
            Turn::Player(self.to_move)
        }
    }

    fn legal_actions(&self) -> Vec<Action> {
        match self.turn() {
            Turn::Terminal => Vec::new(),
            Turn::Chance => (0..self.cfg.sides).collect(),
            Turn::Player(_) => {
                let first = self.current_bid.map_or(0, |b| b + 1);
                let liar = self.cfg.liar();
                if self.current_bid.is_some() {
                    (first..=liar).collect()
                } else {
                    (first..liar).collect()
                }
            }
        }
    }

    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        if !self.rolling() {
            return Vec::new();
        }
        let p = 1.0 / self.cfg.sides as f64;
        (0..self.cfg.sides).map(|a| (a, p)).collect()
    }

    fn apply_action(&mut self, action: Action) {
        if self.rolling() {
            assert!(action < self.cfg.sides, "die roll {action} out of range");
            let r = self.roller();
            self.dice[r][self.rolled[r]] = action as u8 + 1;
            self.rolled[r] += 1;
            if !self.rolling() {
                for p in 0..2 {
                    self.dice[p][..self.cfg.dice[p]].sort_unstable();
                }
            }
        } else {
            assert!(self.winner.is_none(), "action {action} at a terminal state");
            let liar = self.cfg.liar();
            assert!(
                action <= liar && self.current_bid.is_none_or(|b| action > b),
                "illegal bid {action} after {:?}",
                self.current_bid
            );
            if action == liar {
                self.resolve(self.to_move);
            } else {
                self.current_bid = Some(action);
                self.to_move = 1 - self.to_move;
            }
        }
        self.history.push(action);
    }

    fn history(&self) -> &[Action] {
        &self.history
    }

    fn returns(&self) -> [f64; 2] {
        match self.winner {
            None => [0.0, 0.0],
            Some(0) => [1.0, -1.0],
            Some(_) => [-1.0, 1.0],
        }
    }

    fn to_string(&self) -> String {
        let mut s = String::new();
        self.push_dice(&mut s, 0);
        s.push(' ');
        self.push_dice(&mut s, 1);
        if self.rolling() {
            let _ = write!(
                s,
                " - chance node, current roller is player {}",
                self.roller()
            );
        } else {
            self.push_bids(&mut s);
        }
        s
    }

    fn action_to_string(&self, player: Option<Player>, action: Action) -> String {
        match player {
            None => format!("Roll {}", action + 1),
            Some(_) => {
                let mut s = String::new();
                self.cfg.push_action(&mut s, action);
                s
            }
        }
    }

    fn information_state_string(&self, player: Player) -> String {
        let mut s = String::new();
        self.push_dice(&mut s, player);
        self.push_bids(&mut s);
        s
    }

    fn information_state_tensor(&self, player: Player, out: &mut [f32]) {
        self.write_tensor(player, out, usize::MAX);
    }

    /// The bid flags of the information-state tensor (every bid so far, and `Liar`).
    fn public_state_tensor(&self, out: &mut [f32]) {
        let size = self.cfg.tensor_size();
        let skip = size - (self.cfg.liar() + 1);
        crate::game::public_tail_of_infostate(size, self, skip, out);
    }

    fn observation_string(&self, _player: Player) -> String {
        String::new()
    }

    fn observation_tensor(&self, player: Player, out: &mut [f32]) {
        self.write_tensor(player, out, 2);
    }

    fn public_state_string(&self) -> String {
        let mut s = String::from("bids:");
        self.push_bids(&mut s);
        s
    }

    fn private_state(&self, player: Player) -> usize {
        let k = self.rolled[player];
        let mut faces = self.dice[player];
        faces[..k].sort_unstable();
        faces[..k]
            .iter()
            .fold(0, |acc, &v| acc * self.cfg.sides + v as usize - 1)
    }

    fn num_private_states(&self, player: Player) -> usize {
        self.cfg.sides.pow(self.rolled[player] as u32)
    }

    fn clone_box(&self) -> Box<dyn State> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::conformance::check_game;
    use crate::games::load_game;
    use crate::games::test_support::{assert_golden_infostates, check_factorisation, walk};

    #[test]
    fn conformance_for_every_supported_variant() {
        for (text, playouts) in [
            ("liars_dice", 4000),
            ("liars_dice(numdice=2)", 3000),
            ("liars_dice(dice_sides=4)", 3000),
            ("liars_dice(bidding_rule=reset-quantity)", 3000),
            (
                "liars_dice(bidding_rule=reset-quantity,numdice=2,dice_sides=3)",
                3000,
            ),
            ("liars_dice(numdice_p0=1,numdice_p1=2)", 3000),
            ("liars_dice(numdice_p0=2,numdice_p1=1,dice_sides=4)", 3000),
            ("liars_dice(numdice=3,dice_sides=2)", 2000),
        ] {
            let game = load_game(text).unwrap();
            check_game(game.as_ref(), playouts, 17).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn tree_and_infostates_match_openspiel() {
        for (text, file, histories) in [
            ("liars_dice", "golden_liars_dice.json", 294_883),
            (
                "liars_dice(dice_sides=4)",
                "golden_liars_dice_4sides.json",
                0,
            ),
        ] {
            let game = load_game(text).unwrap();
            let (count, infos) = walk(game.as_ref());
            if histories > 0 {
                assert_eq!(count, histories, "{text}");
                assert_eq!(infos[0].len(), 12_288, "{text}");
                assert_eq!(infos[1].len(), 12_288, "{text}");
            }
            assert_golden_infostates(&infos, file, text);
        }
    }

    /// The player whose own roll an edge of `s` is.
    fn liars_roller(s: &LiarsDiceState) -> Option<Player> {
        s.is_chance().then(|| s.roller())
    }

    /// On every node of whole trees, the information state determines public and private
    /// state, and a private state changes only with the player's own rolls, as a function of
    /// the old index and the roll.
    #[test]
    fn factorisation_holds_on_whole_trees() {
        for text in [
            "liars_dice",
            "liars_dice(numdice=2,dice_sides=2)",
            "liars_dice(numdice_p0=1,numdice_p1=2,dice_sides=3)",
            "liars_dice(numdice_p0=3,numdice_p1=1,dice_sides=2,bidding_rule=reset-quantity)",
        ] {
            let game = LiarsDiceGame::from_params(&GameParams::parse(text).unwrap()).unwrap();
            check_factorisation(game.initial_state(), liars_roller, |_, _| 0);
        }
    }

    #[test]
    fn load_strings_render_non_defaults_only() {
        for (text, want) in [
            ("liars_dice", "liars_dice"),
            ("liars_dice()", "liars_dice"),
            ("liars_dice(players=2,numdice=1,dice_sides=6)", "liars_dice"),
            ("liars_dice(numdice=2)", "liars_dice(numdice=2)"),
            (
                "liars_dice(numdice_p0=2,numdice_p1=2)",
                "liars_dice(numdice=2)",
            ),
            (
                "liars_dice(numdice_p1=2)",
                "liars_dice(numdice_p0=1,numdice_p1=2)",
            ),
            (
                "liars_dice(dice_sides=4,bidding_rule=reset-quantity)",
                "liars_dice(bidding_rule=reset-quantity,dice_sides=4)",
            ),
        ] {
            assert_eq!(load_game(text).unwrap().load_string(), want, "{text}");
        }
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        for (text, param) in [
            ("liars_dice(players=3)", "players"),
            ("liars_dice(numdice=0)", "numdice"),
            ("liars_dice(numdice=9)", "numdice"),
            ("liars_dice(numdice_p0=0)", "numdice_p0"),
            ("liars_dice(numdice_p1=two)", "numdice_p1"),
            ("liars_dice(dice_sides=10)", "dice_sides"),
            ("liars_dice(bidding_rule=reset-both)", "bidding_rule"),
            ("liars_dice(recall_length=4)", "recall_length"),
        ] {
            let e = load_game(text).unwrap_err();
            match &e {
                GameError::BadParameter { param: p, .. } => assert_eq!(p, param, "{text}: {e}"),
                other => panic!("{text}: unexpected error {other}"),
            }
        }
    }

    #[test]
    fn unequal_dice_generalise_openspiel() {
        let game = load_game("liars_dice(numdice_p0=1,numdice_p1=2)").unwrap();
        assert_eq!(game.num_distinct_actions(), 19);
        assert_eq!(game.information_state_tensor_size(), 2 + 12 + 18 + 1);
        let mut s = game.new_initial_state();
        assert_eq!(
            s.to_string(),
            "-1 -1-1 - chance node, current roller is player 0"
        );
        for a in [4, 5, 1] {
            s.apply_action(a);
        }
        assert_eq!(s.to_string(), "5 26");
        assert_eq!(s.information_state_string(1), "26");
        assert_eq!((s.private_state(0), s.num_private_states(0)), (4, 6));
        assert_eq!((s.private_state(1), s.num_private_states(1)), (6 + 5, 36));
        // Two fives (the six is wild): true, so player 1 calls and loses.
        s.apply_action(6 + 4);
        s.apply_action(18);
        assert_eq!(s.returns(), [1.0, -1.0]);
        assert_eq!(s.to_string(), "5 26 2-5 Liar");
    }

    #[test]
    fn private_state_follows_own_rolls_only() {
        let game = load_game("liars_dice(numdice=2,dice_sides=4)").unwrap();
        let mut s = game.new_initial_state();
        let mut seen = Vec::new();
        for a in [3, 1, 2, 0] {
            s.apply_action(a);
            seen.push([s.private_state(0), s.private_state(1)]);
        }
        // Player 0 rolled 4 then 2: sorted (2, 4) -> 1 * 4 + 3; player 1: (1, 3) -> 0 * 4 + 2.
        assert_eq!(seen, vec![[3, 0], [7, 0], [7, 2], [7, 2]]);
        assert_eq!(s.information_state_string(0), "24");
    }
}
