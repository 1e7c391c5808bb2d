//! Goofspiel with imperfect information, as OpenSpiel presents it through
//! `turn_based_simultaneous_game(game=goofspiel(...))`.
//!
//! # Rules
//! Each player holds the cards `1..=N`; a deck of point cards `1..=N` is turned up one card per
//! round. In each round both players bid one card from their hand at the same time; the higher
//! bid wins the point card's value, equal bids discard it. Played cards are gone. With
//! `imp_info=True` a player never sees the opponent's cards, only who won each round (and so
//! the points). After `N` rounds the player with more points wins.
//!
//! armac has no simultaneous nodes, so every round is played as OpenSpiel's turn-based
//! transform plays it: player 0 bids, then player 1 bids without seeing that card, then the
//! round resolves. The last round has one legal card per player and is played automatically
//! (it is not part of the history). With `points_order=random` a chance node turns up each
//! point card (the last one is again automatic).
//!
//! # Actions
//! Player action `c` bids card `c + 1` (`[P0]Bid: 3` for `c = 2`); chance action `c` turns up
//! point card `c + 1` (`Deal 3`).
//!
//! # Parameters
//! [`load_turn_based`] reads `turn_based_simultaneous_game(game=goofspiel(...))` with these
//! parameters of the inner `goofspiel` (OpenSpiel's defaults in brackets):
//! * `imp_info` (False): must be `True` (the perfect-information variant is not supported),
//! * `num_cards` (13): `1..=13`,
//! * `points_order` (`random`): `random`, `descending` or `ascending`,
//! * `returns_type` (`win_loss`): `win_loss` (+1/-1/0) or `point_difference` (own points minus
//!   the mean); `total_points` is rejected because it is not zero-sum,
//! * `egocentric` (False): `True` writes winners relative to the observer in the win-sequence
//!   tensor segment,
//! * `num_turns` (-1, one round per card) and `players` (2): no other value is supported.
//!
//! [`Game::load_string`] renders the OpenSpiel string with the inner non-default parameters
//! sorted by key, e.g.
//! `turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))`.
//! A bare `goofspiel(...)` is rejected by [`load_goofspiel`] with a hint to wrap it.
//!
//! Deviation from OpenSpiel: with `point_difference`, OpenSpiel's `MinUtility` rounds
//! `-N(N+1)/4` towards zero (integer division; e.g. -7 instead of -7.5 for `N = 5`) although
//! -7.5 is reachable; here it is the exact `-N(N+1)/4`.
//!
//! # Tensors
//! Both tensors start with 4 entries from the transform: one-hot player to move (all zero at
//! chance and terminal nodes), then one-hot observer. With `N` cards and `P = N(N+1)/2 + 1`
//! point slots, the information-state tensor (`4 + 2P + N + 2N + 2N^2` entries) continues with
//! * `[2 x P]` points one-hot, row 0 the observer's, row 1 the opponent's;
//! * `[N]` the observer's hand;
//! * `[N x 2]` per round, one-hot winner (player id, or distance from the observer when
//!   `egocentric`), all zero for a tie or a round not played;
//! * `[N x N]` per round, one-hot point card;
//! * `[N x N]` per completed round, one-hot card the observer played.
//!
//! The observation tensor (`4 + N + N + 2P + N + 2N` entries) continues with
//! * `[N]` one-hot last point card turned up, `[N]` point cards not yet turned up;
//! * `[2 x P]` points (as above), `[N]` the observer's hand, `[N x 2]` winners (as above).
//!
//! # Public and private states
//! The public state is the point cards turned up, the winner of each round, the points and
//! the player to move. A player's private state is the sequence of cards it has played
//! (including player 0's bid of the current round while player 1 is to move), as the
//! lexicographic rank of that `k`-prefix of a permutation of the `N` cards: `N!/(N-k)!`
//! states. It changes only when the player itself bids (the automatic last round appends the
//! forced card, which keeps the same number of states).

use crate::game::{Action, Game, GameError, GameParams, GameRef, ParamValue, Player, State, Turn};
use std::fmt::Write as _;
use std::sync::Arc;

/// Largest supported `num_cards`.
pub const MAX_CARDS: usize = 13;

/// Marker OpenSpiel writes in the win sequence for a tied round (`kInvalidPlayer`).
const TIE: i8 = -3;

/// Order in which the point cards are turned up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointsOrder {
    /// Chance turns up a uniformly random remaining card each round.
    Random,
    /// `N`, `N-1`, ..., 1.
    Descending,
    /// 1, 2, ..., `N`.
    Ascending,
}

/// How final points become returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnsType {
    /// +1 to the player with more points, -1 to the other, 0 each on a tie.
    WinLoss,
    /// Own points minus the average of both players' points.
    PointDifference,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    n: usize,
    order: PointsOrder,
    returns: ReturnsType,
    egocentric: bool,
}

impl Config {
    fn point_slots(&self) -> usize {
        self.n * (self.n + 1) / 2 + 1
    }

    fn info_size(&self) -> usize {
        4 + 2 * self.point_slots() + self.n + 2 * self.n + 2 * self.n * self.n
    }

    fn obs_size(&self) -> usize {
        4 + 2 * self.n + 2 * self.point_slots() + self.n + 2 * self.n
    }

    fn total_points(&self) -> f64 {
        (self.n * (self.n + 1) / 2) as f64
    }
}

/// `turn_based_simultaneous_game(game=goofspiel(...))`; see the module docs.
#[derive(Debug)]
pub struct GoofspielGame {
    cfg: Config,
}

/// Rejects a bare `goofspiel(...)`: it is a simultaneous-move game and armac has no
/// simultaneous nodes. Its parameters are still checked, so a bad one is reported first.
pub fn load_goofspiel(params: &GameParams) -> Result<GameRef, GameError> {
    GoofspielGame::from_goofspiel_params(params)?;
    let text = params.render();
    Err(GameError::Parse {
        text: text.clone(),
        reason: format!(
            "goofspiel is a simultaneous-move game; load it through OpenSpiel's transform as \
             `turn_based_simultaneous_game(game={text})`"
        ),
    })
}

/// Loads `turn_based_simultaneous_game(game=goofspiel(...))`.
pub fn load_turn_based(params: &GameParams) -> Result<GameRef, GameError> {
    params.check_known(&["game"])?;
    let inner = params.game("game")?.ok_or_else(|| {
        params.bad(
            "game",
            "required: the simultaneous-move game to wrap, e.g. goofspiel(imp_info=True,num_cards=5)",
        )
    })?;
    if inner.name != "goofspiel" {
        return Err(params.bad(
            "game",
            &format!("only goofspiel can be wrapped, not `{}`", inner.name),
        ));
    }
    Ok(Arc::new(GoofspielGame::from_goofspiel_params(&inner)?))
}

impl GoofspielGame {
    /// Validates the parameters of the inner `goofspiel(...)` and builds the turn-based game.
    pub fn from_goofspiel_params(params: &GameParams) -> Result<Self, GameError> {
        params.check_known(&[
            "imp_info",
            "egocentric",
            "num_cards",
            "num_turns",
            "players",
            "points_order",
            "returns_type",
        ])?;
        if params.int("players", 2)? != 2 {
            return Err(params.bad("players", "only 2 players are supported"));
        }
        if !params.bool("imp_info", false)? {
            return Err(params.bad(
                "imp_info",
                "only imp_info=True is supported (the perfect-information variant is not)",
            ));
        }
        let n = params.int_in("num_cards", 13, 1, MAX_CARDS as i64)? as usize;
        if params.int("num_turns", -1)? != -1 {
            return Err(params.bad("num_turns", "only -1 (one round per card) is supported"));
        }
        let order = match params.string("points_order", "random")?.as_str() {
            "random" => PointsOrder::Random,
            "descending" => PointsOrder::Descending,
            "ascending" => PointsOrder::Ascending,
            other => {
                return Err(params.bad(
                    "points_order",
                    &format!("`{other}` is not one of `random`, `descending`, `ascending`"),
                ));
            }
        };
        let returns = match params.string("returns_type", "win_loss")?.as_str() {
            "win_loss" => ReturnsType::WinLoss,
            "point_difference" => ReturnsType::PointDifference,
            "total_points" => {
                return Err(params.bad(
                    "returns_type",
                    "`total_points` is general-sum; use `win_loss` or `point_difference`",
                ));
            }
            other => {
                return Err(params.bad(
                    "returns_type",
                    &format!("`{other}` is not one of `win_loss`, `point_difference`"),
                ));
            }
        };
        let egocentric = params.bool("egocentric", false)?;
        Ok(GoofspielGame {
            cfg: Config {
                n,
                order,
                returns,
                egocentric,
            },
        })
    }

    /// Number of cards per hand (and of rounds).
    pub fn num_cards(&self) -> usize {
        self.cfg.n
    }

    /// The order of the point cards.
    pub fn points_order(&self) -> PointsOrder {
        self.cfg.order
    }

    /// A fresh initial state with its concrete type (no boxing).
    pub fn initial_state(&self) -> GoofspielState {
        let n = self.cfg.n;
        let mut s = GoofspielState {
            cfg: self.cfg,
            history: Vec::with_capacity(2 * n),
            hands: [(1u16 << n) - 1; 2],
            points: [0; 2],
            point_cards: [0; MAX_CARDS],
            num_point_cards: 0,
            point_card: None,
            bids: [[0; 2]; MAX_CARDS],
            wins: [TIE; MAX_CARDS],
            rounds: 0,
            pending: 0,
            phase: Phase::Chance,
        };
        match self.cfg.order {
            PointsOrder::Random => {}
            PointsOrder::Ascending => s.deal(0),
            PointsOrder::Descending => s.deal(n - 1),
        }
        s
    }
}

impl Game for GoofspielGame {
    fn short_name(&self) -> &str {
        "turn_based_simultaneous_game"
    }

    fn load_string(&self) -> String {
        let c = &self.cfg;
        let mut g = GameParams::named("goofspiel");
        let mut set = |k: &str, v: ParamValue| {
            g.params.insert(k.to_string(), v);
        };
        set("imp_info", ParamValue::Bool(true));
        if c.n != 13 {
            set("num_cards", ParamValue::Int(c.n as i64));
        }
        match c.order {
            PointsOrder::Random => {}
            PointsOrder::Descending => set("points_order", ParamValue::Str("descending".into())),
            PointsOrder::Ascending => set("points_order", ParamValue::Str("ascending".into())),
        }
        if c.returns == ReturnsType::PointDifference {
            set("returns_type", ParamValue::Str("point_difference".into()));
        }
        if c.egocentric {
            set("egocentric", ParamValue::Bool(true));
        }
        let mut outer = GameParams::named("turn_based_simultaneous_game");
        outer.params.insert("game".into(), ParamValue::Game(g));
        outer.render()
    }

    fn num_distinct_actions(&self) -> usize {
        self.cfg.n
    }

    fn max_chance_outcomes(&self) -> usize {
        match self.cfg.order {
            PointsOrder::Random => self.cfg.n,
            _ => 0,
        }
    }

    fn max_game_length(&self) -> usize {
        2 * self.cfg.n
    }

    fn min_utility(&self) -> f64 {
        match self.cfg.returns {
            ReturnsType::WinLoss => -1.0,
            ReturnsType::PointDifference => -self.cfg.total_points() / 2.0,
        }
    }

    fn max_utility(&self) -> f64 {
        match self.cfg.returns {
            ReturnsType::WinLoss => 1.0,
            ReturnsType::PointDifference => self.cfg.total_points() / 2.0,
        }
    }

    fn information_state_tensor_size(&self) -> usize {
        self.cfg.info_size()
    }

    fn observation_tensor_size(&self) -> usize {
        self.cfg.obs_size()
    }

    fn new_initial_state(&self) -> Box<dyn State> {
        Box::new(self.initial_state())
    }
}

/// Where a round stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Chance turns up the next point card (`points_order=random`).
    Chance,
    /// Player 0 bids.
    First,
    /// Player 1 bids; player 0's bid is `pending`.
    Second,
    /// The game is over.
    Terminal,
}

/// A Goofspiel history: fixed arrays (cards as bit sets) plus the action history.
#[derive(Clone, Debug)]
pub struct GoofspielState {
    cfg: Config,
    history: Vec<Action>,
    /// Bit `c` set: card `c + 1` is still in the hand.
    hands: [u16; 2],
    points: [u32; 2],
    /// 0-based point cards in the order turned up.
    point_cards: [u8; MAX_CARDS],
    num_point_cards: usize,
    /// The point card at stake (None at a chance node).
    point_card: Option<usize>,
    /// 0-based bids of both players in each completed round.
    bids: [[u8; 2]; MAX_CARDS],
    /// Winner of each completed round, [`TIE`] for a tie.
    wins: [i8; MAX_CARDS],
    rounds: usize,
    /// Player 0's bid in the current round (valid in [`Phase::Second`]).
    pending: usize,
    phase: Phase,
}

impl GoofspielState {
    fn deal(&mut self, card: usize) {
        self.point_card = Some(card);
        self.point_cards[self.num_point_cards] = card as u8;
        self.num_point_cards += 1;
        self.phase = Phase::First;
    }

    fn dealt_mask(&self) -> u16 {
        self.point_cards[..self.num_point_cards]
            .iter()
            .fold(0, |m, &c| m | (1 << c))
    }

    fn play_round(&mut self, b0: usize, b1: usize) {
        let value = self.point_card.expect("a round needs a point card") as u32 + 1;
        let winner = match b0.cmp(&b1) {
            std::cmp::Ordering::Greater => 0,
            std::cmp::Ordering::Less => 1,
            std::cmp::Ordering::Equal => TIE,
        };
        if winner != TIE {
            self.points[winner as usize] += value;
        }
        self.wins[self.rounds] = winner;
        self.bids[self.rounds] = [b0 as u8, b1 as u8];
        self.hands[0] &= !(1 << b0);
        self.hands[1] &= !(1 << b1);
        self.rounds += 1;
        let n = self.cfg.n;
        if self.rounds < n {
            match self.cfg.order {
                PointsOrder::Random => {
                    self.point_card = None;
                    self.phase = Phase::Chance;
                }
                PointsOrder::Ascending => self.deal(self.point_card.unwrap() + 1),
                PointsOrder::Descending => self.deal(self.point_card.unwrap() - 1),
            }
        }
        if self.rounds + 1 == n {
            // One card left everywhere: OpenSpiel plays the last round on its own.
            if self.phase == Phase::Chance {
                let last = (!self.dealt_mask() & ((1 << n) - 1)).trailing_zeros() as usize;
                self.deal(last);
            }
            let c0 = self.hands[0].trailing_zeros() as usize;
            let c1 = self.hands[1].trailing_zeros() as usize;
            self.play_round(c0, c1);
        } else if self.rounds == n {
            self.phase = Phase::Terminal;
        } else if self.cfg.order != PointsOrder::Random {
            self.phase = Phase::First;
        }
    }

    fn current_player_id(&self) -> i32 {
        self.turn().openspiel_id()
    }

    /// The cards `player` has played, in order (with player 0's pending bid).
    fn own_bids(&self, player: Player) -> impl Iterator<Item = usize> + '_ {
        let pending = (player == 0 && self.phase == Phase::Second).then_some(self.pending);
        self.bids[..self.rounds]
            .iter()
            .map(move |b| b[player] as usize)
            .chain(pending)
    }

    fn push_hand(&self, out: &mut String, player: Player) {
        let _ = write!(out, "P{player} hand: ");
        for c in 0..self.cfg.n {
            if self.hands[player] & (1 << c) != 0 {
                let _ = write!(out, "{} ", c + 1);
            }
        }
        out.push('\n');
    }

    fn push_point_card_sequence(&self, out: &mut String) {
        out.push_str("Point card sequence: ");
        for &c in &self.point_cards[..self.num_point_cards] {
            let _ = write!(out, "{} ", c + 1);
        }
        out.push('\n');
    }

    fn push_win_sequence(&self, out: &mut String) {
        out.push_str("Win sequence: ");
        for &w in &self.wins[..self.rounds] {
            let _ = write!(out, "{w} ");
        }
        out.push('\n');
    }

    fn push_points(&self, out: &mut String) {
        let _ = writeln!(out, "Points: {} {} ", self.points[0], self.points[1]);
    }

    /// The transform's header of information-state and observation strings.
    fn push_turn_header(&self, out: &mut String, player: Player) {
        let _ = writeln!(out, "Current player: {}", self.current_player_id());
        if player == 0 && self.phase == Phase::Second {
            let _ = writeln!(out, "Observer's action this turn: {}", self.pending);
        }
    }

    /// The transform's 4 leading tensor entries; returns the rest of the buffer.
    fn write_turn_header<'a>(&self, player: Player, out: &'a mut [f32]) -> &'a mut [f32] {
        out.fill(0.0);
        if let Turn::Player(p) = self.turn() {
            out[p] = 1.0;
        }
        out[2 + player] = 1.0;
        &mut out[4..]
    }

    /// Writes the points, hand and win-sequence segments; returns the rest of the buffer.
    fn write_points<'a>(&self, player: Player, out: &'a mut [f32]) -> &'a mut [f32] {
        let slots = self.cfg.point_slots();
        for r in 0..2 {
            out[r * slots + self.points[(player + r) % 2] as usize] = 1.0;
        }
        &mut out[2 * slots..]
    }

    fn write_hand<'a>(&self, player: Player, out: &'a mut [f32]) -> &'a mut [f32] {
        let n = self.cfg.n;
        for (c, x) in out[..n].iter_mut().enumerate() {
            if self.hands[player] & (1 << c) != 0 {
                *x = 1.0;
            }
        }
        &mut out[n..]
    }

    fn write_wins<'a>(&self, player: Player, out: &'a mut [f32]) -> &'a mut [f32] {
        for (i, &w) in self.wins[..self.rounds].iter().enumerate() {
            if w != TIE {
                let w = w as usize;
                let col = if self.cfg.egocentric {
                    (2 + w - player) % 2
                } else {
                    w
                };
                out[2 * i + col] = 1.0;
            }
        }
        &mut out[2 * self.cfg.n..]
    }
}

impl State for GoofspielState {
    fn turn(&self) -> Turn {
        match self.phase {
            Phase::Chance => Turn::Chance,
            Phase::First => Turn::Player(0),
            Phase::Second => Turn::Player(1),
            Phase::Terminal => Turn::Terminal,
        }
    }

    fn legal_actions(&self) -> Vec<Action> {
        let mask = match self.phase {
            Phase::Chance => !self.dealt_mask() & ((1 << self.cfg.n) - 1),
            Phase::First => self.hands[0],
            Phase::Second => self.hands[1],
            Phase::Terminal => 0,
        };
        let mut out = Vec::with_capacity(mask.count_ones() as usize);
        let mut m = mask;
        while m != 0 {
            out.push(m.trailing_zeros() as usize);
            m &= m - 1;
        }
        out
    }

    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        if self.phase != Phase::Chance {
            return Vec::new();
        }
        let legal = self.legal_actions();
        let p = 1.0 / legal.len() as f64;
        legal.into_iter().map(|a| (a, p)).collect()
    }

    fn apply_action(&mut self, action: Action) {
        let ok = action < self.cfg.n
            && match self.phase {
                Phase::Chance => self.dealt_mask() & (1 << action) == 0,
                Phase::First => self.hands[0] & (1 << action) != 0,
                Phase::Second => self.hands[1] & (1 << action) != 0,
                Phase::Terminal => false,
            };
        assert!(ok, "illegal action {action} in phase {:?}", self.phase);
        match self.phase {
            Phase::Chance => self.deal(action),
            Phase::First => {
                self.pending = action;
                self.phase = Phase::Second;
            }
            Phase::Second => self.play_round(self.pending, action),
            Phase::Terminal => unreachable!(),
        }
        self.history.push(action);
    }

    fn history(&self) -> &[Action] {
        &self.history
    }

    fn returns(&self) -> [f64; 2] {
        if self.phase != Phase::Terminal {
            return [0.0, 0.0];
        }
        let [a, b] = self.points;
        match self.cfg.returns {
            ReturnsType::WinLoss => match a.cmp(&b) {
                std::cmp::Ordering::Greater => [1.0, -1.0],
                std::cmp::Ordering::Less => [-1.0, 1.0],
                std::cmp::Ordering::Equal => [0.0, 0.0],
            },
            ReturnsType::PointDifference => {
                let mean = (a as f64 + b as f64) / 2.0;
                [a as f64 - mean, b as f64 - mean]
            }
        }
    }

    fn to_string(&self) -> String {
        let mut s = String::new();
        match self.phase {
            Phase::First => s.push_str("Partial joint action: \n"),
            Phase::Second => {
                let _ = writeln!(s, "Partial joint action: {} ", self.pending);
            }
            _ => {}
        }
        self.push_hand(&mut s, 0);
        self.push_hand(&mut s, 1);
        for p in 0..2 {
            let _ = write!(s, "P{p} actions: ");
            for b in &self.bids[..self.rounds] {
                let _ = write!(s, "{} ", b[p]);
            }
            s.push('\n');
        }
        self.push_point_card_sequence(&mut s);
        self.push_points(&mut s);
        s
    }

    fn action_to_string(&self, player: Option<Player>, action: Action) -> String {
        match player {
            None => format!("Deal {}", action + 1),
            Some(p) => format!("[P{p}]Bid: {}", action + 1),
        }
    }

    fn information_state_string(&self, player: Player) -> String {
        let mut s = String::new();
        self.push_turn_header(&mut s, player);
        self.push_hand(&mut s, player);
        let _ = write!(s, "P{player} action sequence: ");
        for b in &self.bids[..self.rounds] {
            let _ = write!(s, "{} ", b[player]);
        }
        s.push('\n');
        self.push_point_card_sequence(&mut s);
        self.push_win_sequence(&mut s);
        self.push_points(&mut s);
        let _ = writeln!(s, "Terminal?: {}", u8::from(self.phase == Phase::Terminal));
        s
    }

    fn information_state_tensor(&self, player: Player, out: &mut [f32]) {
        assert_eq!(out.len(), self.cfg.info_size(), "tensor buffer size");
        let n = self.cfg.n;
        let rest = self.write_turn_header(player, out);
        let rest = self.write_points(player, rest);
        let rest = self.write_hand(player, rest);
        let rest = self.write_wins(player, rest);
        for (i, &c) in self.point_cards[..self.num_point_cards].iter().enumerate() {
            rest[i * n + c as usize] = 1.0;
        }
        let rest = &mut rest[n * n..];
        for (i, b) in self.bids[..self.rounds].iter().enumerate() {
            rest[i * n + b[player] as usize] = 1.0;
        }
    }

    fn observation_string(&self, player: Player) -> String {
        let mut s = String::new();
        self.push_turn_header(&mut s, player);
        let current = self.point_card.map_or(0, |c| c + 1);
        let _ = writeln!(s, "Current point card: {current}");
        s.push_str("Remaining Point Cards: ");
        let dealt = self.dealt_mask();
        for c in 0..self.cfg.n {
            if dealt & (1 << c) == 0 {
                let _ = write!(s, "{}", c + 1);
            }
        }
        s.push('\n');
        self.push_points(&mut s);
        self.push_hand(&mut s, player);
        self.push_win_sequence(&mut s);
        s
    }

    fn observation_tensor(&self, player: Player, out: &mut [f32]) {
        assert_eq!(out.len(), self.cfg.obs_size(), "tensor buffer size");
        let n = self.cfg.n;
        let rest = self.write_turn_header(player, out);
        if self.num_point_cards > 0 {
            rest[self.point_cards[self.num_point_cards - 1] as usize] = 1.0;
        }
        let dealt = self.dealt_mask();
        for c in 0..n {
            if dealt & (1 << c) == 0 {
                rest[n + c] = 1.0;
            }
        }
        let rest = &mut rest[2 * n..];
        let rest = self.write_points(player, rest);
        let rest = self.write_hand(player, rest);
        self.write_wins(player, rest);
    }

    fn public_state_string(&self) -> String {
        let mut s = String::from("cards:");
        for &c in &self.point_cards[..self.num_point_cards] {
            let _ = write!(s, " {}", c + 1);
        }
        s.push_str("|wins:");
        for &w in &self.wins[..self.rounds] {
            let _ = write!(s, " {w}");
        }
        let _ = write!(
            s,
            "|points: {} {}|turn: {}",
            self.points[0],
            self.points[1],
            self.current_player_id()
        );
        s
    }

    fn private_state(&self, player: Player) -> usize {
        let n = self.cfg.n;
        let mut used = 0u16;
        let mut index = 0;
        for (k, c) in self.own_bids(player).enumerate() {
            let rank = (!used & ((1u16 << c) - 1)).count_ones() as usize;
            index = index * (n - k) + rank;
            used |= 1 << c;
        }
        index
    }

    fn num_private_states(&self, player: Player) -> usize {
        let n = self.cfg.n;
        let k = self.own_bids(player).count();
        ((n - k + 1)..=n).product()
    }

    fn clone_box(&self) -> Box<dyn State> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests;
