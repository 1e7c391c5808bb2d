//! Endgame solving for a blueprint policy on heads-up Hold'em: in the last betting round (or
//! the last few, [`EndgamePolicy::with_rounds`]) the blueprint's own answer is replaced by the
//! solution of the subgame that starts with that round.
//!
//! # One solve
//! At a decision in the solved rounds, both players' ranges at the first solved round's
//! first state are the blueprint's reach of each hand: the product, over that player's
//! decisions of the earlier rounds, of the probability the blueprint gives the action taken
//! (floored at [`RANGE_FLOOR`], so that an opponent who took an action the blueprint never
//! takes still has a range). The rest of the hand from there is a public tree with exact
//! terminal values (folds and showdowns on the full board, every board card still to come
//! dealt: no value network), solved by a CFR variant ([`FactoredCfr`], CFR+ by default) from
//! those ranges for `iterations` iterations; the player to act plays the average strategy at
//! the current node for its hand.
//!
//! Every decision below one root is answered from the same solve (it is cached by the root's
//! public edges), so the player's actions there are consistent with one another and with the
//! ranges the solve assumed. Earlier rounds are the blueprint's.
//!
//! # Safe and unsafe
//! By default the solve assumes the opponent reached the round by playing the blueprint: it
//! is *unsafe* re-solving, and an opponent whose range differs from the blueprint's may
//! exploit it. [`EndgamePolicy::with_gadget`] makes it *safe* (CFR-D's re-solving gadget, as
//! in [`super::holdem`]): the blueprint's own play of the round is evaluated first, and in
//! the solve the opponent may, per hand, take the counterfactual value the blueprint gives
//! that hand instead of entering (its root range mixed half and half with the blueprint's
//! reach); one solve per round and player then.
//!
//! Works on any heads-up `universal_poker` game the factored layout supports; the blueprint
//! must answer range queries ([`RangePolicy`]) for every hand that avoids the board.

use super::factored::FactoredCfr;
use super::holdem::{HoldemSearchError, public_edges, state_at};
use crate::cfr::SolverSpec;
use crate::eval::lbr::{ActionProbs, RangePolicy};
use crate::game::{Player, State, Turn};
use crate::games::cards::{CardSet, hole_index, hole_mask};
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::policy::{Policy, PolicyError};
use crate::tree::poker::{PokerEdge, PokerLayout};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The least probability an action taken before the solved rounds keeps in a range.
pub const RANGE_FLOOR: f64 = 0.01;

/// Bytes the cached solves may hold (the cache is emptied when a solve would pass it; one
/// Hold'em river solve holds about half a megabyte).
pub const CACHE_BYTES: usize = 256 << 20;

/// The most iterations one solve may run.
pub const MAX_ITERATIONS: usize = 100_000;

/// Public nodes one last-round tree may have.
const MAX_NODES: usize = 100_000;

/// One solved subgame: its layout and both players' average strategies.
struct Solved {
    layout: Arc<PokerLayout>,
    average: [Vec<f64>; 2],
}

impl Solved {
    fn bytes(&self) -> usize {
        self.layout.heap_bytes() + 8 * (self.average[0].len() + self.average[1].len())
    }
}

/// The cache of solves by round root, and the bytes it holds.
#[derive(Default)]
struct Cache {
    map: HashMap<(Option<Player>, Vec<PokerEdge>), Arc<Solved>>,
    bytes: usize,
}

/// A blueprint policy whose last-round decisions come from endgame solving (module docs).
pub struct EndgamePolicy<B> {
    blueprint: B,
    game: UniversalPokerGame,
    spec: SolverSpec,
    iterations: usize,
    cache: Mutex<Cache>,
    cache_budget: usize,
    safe: bool,
    rounds: usize,
}

impl<B: Policy + RangePolicy> EndgamePolicy<B> {
    /// `blueprint` on `game`, its last round solved with `iterations` CFR+ iterations (1 to
    /// [`MAX_ITERATIONS`]).
    pub fn new(
        blueprint: B,
        game: UniversalPokerGame,
        iterations: usize,
    ) -> Result<Self, HoldemSearchError> {
        if !(1..=MAX_ITERATIONS).contains(&iterations) {
            return Err(HoldemSearchError::BadSetting {
                key: "endgame iterations",
                value: iterations.to_string(),
                reason: format!("must be 1 to {MAX_ITERATIONS}"),
            });
        }
        let cfg = game.config();
        if cfg.num_hole != 2 {
            return Err(HoldemSearchError::BadSetting {
                key: "game",
                value: cfg.load_string.clone(),
                reason: "endgame solving needs two hole cards per player".into(),
            });
        }
        Ok(EndgamePolicy {
            blueprint,
            game,
            spec: SolverSpec::named("cfr+").expect("cfr+ is a named solver"),
            iterations,
            cache: Mutex::new(Cache::default()),
            cache_budget: CACHE_BYTES,
            safe: false,
            rounds: 1,
        })
    }

    /// The policy solving the last `rounds` betting rounds (1, the default: the last round
    /// only; the game's number of rounds: the whole hand from the root). Each solve starts at
    /// the first of those rounds and answers every decision below it, through the board
    /// cards still to come. Refused outside 1 to the game's rounds.
    pub fn with_rounds(mut self, rounds: usize) -> Result<Self, HoldemSearchError> {
        let most = self.game.config().num_rounds;
        if !(1..=most).contains(&rounds) {
            return Err(HoldemSearchError::BadSetting {
                key: "endgame rounds",
                value: rounds.to_string(),
                reason: format!("must be 1 to the game's {most} betting rounds"),
            });
        }
        self.rounds = rounds;
        Ok(self)
    }

    /// The first round the solves cover (0: the pre-flop).
    fn first_solved_round(&self) -> usize {
        self.game.config().num_rounds - self.rounds
    }

    /// The policy with a cache of at most `bytes` ([`CACHE_BYTES`] unless set; 0 caches
    /// nothing: every decision solves its round again).
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_budget = bytes;
        self
    }

    /// The policy with safe re-solving: the opponent enters each solve through the CFR-D
    /// gadget with the values the blueprint gives its hands there (see the module docs).
    pub fn with_gadget(mut self, safe: bool) -> Self {
        self.safe = safe;
        self
    }

    /// The blueprint's name, how its last rounds are solved and with how many iterations.
    fn label(&self) -> String {
        let rounds = match self.rounds {
            1 => String::new(),
            r => format!(", last {r} rounds"),
        };
        format!(
            "{} + {}endgame solving ({} iterations{rounds})",
            Policy::name(&self.blueprint),
            if self.safe { "safe " } else { "" },
            self.iterations
        )
    }

    /// Solves cached now, and the bytes they hold.
    pub fn cached(&self) -> (usize, usize) {
        let c = self.cache.lock().expect("cache lock");
        (c.map.len(), c.bytes)
    }

    fn fail(&self, reason: String) -> PolicyError {
        PolicyError::Failed {
            policy: self.label(),
            reason,
        }
    }

    /// Where the solved rounds start in `edges` (the public edges of a decision): the index
    /// just past the board deal that opens the first of them (0 when that is the pre-flop),
    /// or `None` before them. The decision's round is the number of board deals it has seen.
    fn solve_root(&self, edges: &[PokerEdge]) -> Option<usize> {
        let first = self.first_solved_round();
        let deals: Vec<usize> = edges
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, PokerEdge::Deal(_)))
            .map(|(k, _)| k)
            .collect();
        match first {
            0 => Some(0),
            f if deals.len() >= f => Some(deals[f - 1] + 1),
            _ => None,
        }
    }

    /// Both players' blueprint reaches of every hole index at the start of the first solved
    /// round of `state`'s hand (zero for hands that collide with that round's board).
    fn ranges(
        &self,
        state: &UniversalPokerState,
        root: &UniversalPokerState,
    ) -> Result<[Vec<f64>; 2], PolicyError> {
        let cfg = self.game.config();
        let last = self.first_solved_round() as u8;
        let board = root.board_cards().to_vec();
        let deck = &cfg.deck[..cfg.deck_size];
        let hands = hands_avoiding(deck, &board);
        let size = crate::games::cards::NUM_HOLE_HANDS;
        let mut reach = [vec![0.0; size], vec![0.0; size]];
        for r in reach.iter_mut() {
            for &h in &hands {
                r[h as usize] = 1.0;
            }
        }
        let mut s = self.game.initial_state();
        for &a in state.history() {
            if let Turn::Player(q) = s.turn() {
                if s.betting().round >= last {
                    break;
                }
                let probs = self.range_probs(&s, q, &hands)?;
                for (&h, p) in hands.iter().zip(&probs) {
                    reach[q][h as usize] *= p[a].max(RANGE_FLOOR);
                }
            }
            s.try_apply(a).map_err(|e| self.fail(e.to_string()))?;
        }
        Ok(reach)
    }

    /// The blueprint's action probabilities of player `q` to act at `s` for each of `hands`
    /// (hole indices that avoid `s`'s board). A range query needs the opponent's hole cards
    /// to avoid the hands asked about, so the hands are asked in groups, each on a copy of
    /// `s` whose opponent holds stand-in cards that avoid the group: `q`'s information is
    /// the same in every copy.
    fn range_probs(
        &self,
        s: &UniversalPokerState,
        q: Player,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let cfg = self.game.config();
        let board = s.board_cards();
        let free: Vec<u8> = cfg.deck[..cfg.deck_size]
            .iter()
            .copied()
            .filter(|c| !board.contains(c))
            .collect();
        let pairs: Vec<(u8, u8)> = free
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| free[i + 1..].iter().map(move |&b| (a, b)))
            .collect();
        let clash = |h: u16, (a, b): (u8, u8)| {
            hole_mask(h as usize).intersects(CardSet::from_cards(&[a, b]))
        };
        let mut out = vec![[0.0; 4]; hands.len()];
        let mut left: Vec<usize> = (0..hands.len()).collect();
        while let Some(&first) = left.first() {
            let pair = *pairs
                .iter()
                .find(|&&p| !clash(hands[first], p))
                .ok_or_else(|| self.fail("no stand-in cards for the opponent".into()))?;
            let base = self.with_holes(s, q, hands[first], pair)?;
            let (fit, rest): (Vec<usize>, Vec<usize>) =
                left.iter().partition(|&&i| !clash(hands[i], pair));
            let asked: Vec<u16> = fit.iter().map(|&i| hands[i]).collect();
            let probs = self.blueprint.hand_action_probabilities(&base, &asked)?;
            for (&i, p) in fit.iter().zip(probs) {
                out[i] = p;
            }
            left = rest;
        }
        Ok(out)
    }

    /// `s` with `q` holding `own` and its opponent `pair` (both avoid `s`'s board and each
    /// other): the history replayed with those hole cards dealt.
    fn with_holes(
        &self,
        s: &UniversalPokerState,
        q: Player,
        own: u16,
        pair: (u8, u8),
    ) -> Result<UniversalPokerState, PolicyError> {
        let cfg = s.config();
        let (a, b) = crate::games::cards::hole_cards(own as usize);
        let mut cards = [[a, b], [pair.0, pair.1]];
        if q == 1 {
            cards.swap(0, 1);
        }
        let dealt: Vec<usize> = cards
            .iter()
            .flatten()
            .map(|&c| cfg.outcome_of(c))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| self.fail("a stand-in card is not in the deck".into()))?;
        let mut out = s.clone();
        out.reset();
        for (k, &x) in s.history().iter().enumerate() {
            let x = dealt.get(k).copied().unwrap_or(x);
            out.try_apply(x)
                .map_err(|e| self.fail(format!("stand-in hole cards: {e}")))?;
        }
        Ok(out)
    }

    /// The cached solve of the solved rounds that `state` (a decision of them, public edges
    /// `edges`, round root at `root`) belongs to.
    fn solve(
        &self,
        state: &UniversalPokerState,
        edges: &[PokerEdge],
        root: usize,
        player: Player,
    ) -> Result<Arc<Solved>, PolicyError> {
        let key = (self.safe.then_some(player), edges[..root].to_vec());
        if let Some(s) = self.cache.lock().expect("cache lock").map.get(&key) {
            return Ok(s.clone());
        }
        let root_state = state_at(state, &key.1).map_err(|e| self.fail(e.to_string()))?;
        let reach = self.ranges(state, &root_state)?;
        let layout = Arc::new(
            PokerLayout::from_state(&root_state, MAX_NODES)
                .map_err(|e| self.fail(e.to_string()))?,
        );
        let ranges = reach.map(|r| {
            layout
                .hole_index
                .iter()
                .map(|&h| r[h as usize])
                .collect::<Vec<f64>>()
        });
        let gadget = if self.safe {
            Some(self.gadget(&layout, &key.1, state, &ranges, 1 - player)?)
        } else {
            None
        };
        let mut solver = FactoredCfr::with_leaves(layout.clone(), self.spec, Some(ranges), None)
            .map_err(|e| self.fail(e.to_string()))?;
        if let Some(g) = gadget {
            solver.set_gadget(g).map_err(|e| self.fail(e.to_string()))?;
        }
        for _ in 0..self.iterations {
            solver.iterate();
        }
        let solved = Arc::new(Solved {
            layout,
            average: [solver.average(0), solver.average(1)],
        });
        let bytes = solved.bytes();
        if bytes > self.cache_budget {
            return Ok(solved);
        }
        let mut cache = self.cache.lock().expect("cache lock");
        if cache.bytes + bytes > self.cache_budget {
            cache.map.clear();
            cache.bytes = 0;
        }
        // Another thread may have cached the same solve meanwhile: count it once.
        if let Some(old) = cache.map.insert(key, solved.clone()) {
            cache.bytes -= old.bytes();
        }
        cache.bytes += bytes;
        Ok(solved)
    }

    /// The CFR-D gadget of a safe solve on `layout` (the round rooted at public edges `root`
    /// of `state`'s hand, both players entering with `ranges`): the opponent `opp` may
    /// terminate each hand with the counterfactual value the blueprint's own play of the
    /// round gives it.
    fn gadget(
        &self,
        layout: &Arc<PokerLayout>,
        root: &[PokerEdge],
        state: &UniversalPokerState,
        ranges: &[Vec<f64>; 2],
        opp: Player,
    ) -> Result<super::Gadget, PolicyError> {
        let np = layout.num_hands();
        let hands: Vec<u16> = (0..np)
            .filter(|&x| layout.possible(0, x))
            .map(|x| layout.hole_index[x] as u16)
            .collect();
        let mut blueprint =
            FactoredCfr::with_leaves(layout.clone(), self.spec, Some(ranges.clone()), None)
                .map_err(|e| self.fail(e.to_string()))?;
        for (i, decisions) in layout.decisions.iter().enumerate() {
            let mut strategy = blueprint.current(i).to_vec();
            for (d, &n) in decisions.iter().enumerate() {
                let node = &layout.nodes[n as usize];
                let mut path = root.to_vec();
                path.extend(layout.path(n as usize));
                let at = state_at(state, &path).map_err(|e| self.fail(e.to_string()))?;
                // Below a later deal some hands hold a board card: they cannot be there
                // (zero reach), so their rows keep the solver's uniform start.
                let board = CardSet::from_cards(at.board_cards());
                let live: Vec<u16> = hands
                    .iter()
                    .copied()
                    .filter(|&h| !hole_mask(h as usize).intersects(board))
                    .collect();
                let probs = self.range_probs(&at, i, &live)?;
                let o = layout.offsets[i][d];
                for (&h, p) in live.iter().zip(&probs) {
                    let x = layout
                        .hole_index
                        .binary_search(&u32::from(h))
                        .expect("the hands come from the layout");
                    let total: f64 = node.actions.iter().map(|&a| p[a]).sum();
                    for (k, &a) in node.actions.iter().enumerate() {
                        strategy[o + k * np + x] = if total > 0.0 {
                            p[a] / total
                        } else {
                            1.0 / node.actions.len() as f64
                        };
                    }
                }
            }
            blueprint
                .set_current(i, &strategy)
                .map_err(|e| self.fail(e.to_string()))?;
        }
        let w = blueprint.root_cfvs(opp);
        super::Gadget::new(opp, w, ranges[opp].clone(), 0.5).map_err(|e| self.fail(e.to_string()))
    }

    /// For a decision of the solved rounds: the legal actions and, per hole index of `hands`,
    /// the solved probabilities; `None` before them.
    #[allow(clippy::type_complexity)]
    fn solved_rows(
        &self,
        state: &UniversalPokerState,
        hands: &[usize],
    ) -> Result<Option<(Vec<usize>, Vec<Vec<f64>>)>, PolicyError> {
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let edges = public_edges(state).map_err(|e| self.fail(e.to_string()))?;
        let Some(root) = self.solve_root(&edges) else {
            return Ok(None);
        };
        let solved = self.solve(state, &edges, root, p)?;
        let l = &*solved.layout;
        let mut here = 0;
        for e in &edges[root..] {
            here = l
                .children(here)
                .find(|&c| &l.nodes[c].edge == e)
                .ok_or_else(|| self.fail(format!("edge {e:?} is not in the solved tree")))?;
        }
        let node = &l.nodes[here];
        let d = node.decision as usize;
        let np = l.num_hands();
        let o = l.offsets[p][d];
        let na = node.actions.len();
        let rows = hands
            .iter()
            .map(|&h| {
                let x = l
                    .hole_index
                    .binary_search(&(h as u32))
                    .map_err(|_| self.fail(format!("hand {h} is not in the layout")))?;
                Ok((0..na).map(|a| solved.average[p][o + a * np + x]).collect())
            })
            .collect::<Result<Vec<Vec<f64>>, PolicyError>>()?;
        Ok(Some((node.actions.clone(), rows)))
    }

    /// `state` replayed in this policy's game (the per-state API takes any [`State`]).
    fn replay(&self, state: &dyn State) -> Result<UniversalPokerState, PolicyError> {
        let mut s = self.game.initial_state();
        for &a in state.history() {
            s.try_apply(a).map_err(|e| {
                self.fail(format!(
                    "replaying the state in {}: {e}",
                    self.game.config().load_string
                ))
            })?;
        }
        Ok(s)
    }
}

/// Hole indices of every two-card hand of `deck` (card codes) that avoids `board`.
fn hands_avoiding(deck: &[u8], board: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    for (i, &a) in deck.iter().enumerate() {
        for &b in &deck[i + 1..] {
            if !board.contains(&a) && !board.contains(&b) {
                out.push(hole_index(a, b) as u16);
            }
        }
    }
    out.sort_unstable();
    out
}

impl<B: Policy + RangePolicy> Policy for EndgamePolicy<B> {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let s = self.replay(state)?;
        let holes = s.hole_cards(p);
        let hand = hole_index(holes[0], holes[1]);
        match self.solved_rows(&s, &[hand])? {
            None => self.blueprint.action_probabilities(state),
            Some((actions, rows)) => {
                let legal = s.legal_actions();
                if legal != actions {
                    return Err(self.fail(format!(
                        "the solve's actions {actions:?} differ from the legal actions {legal:?}"
                    )));
                }
                Ok(rows[0].clone())
            }
        }
    }

    fn name(&self) -> String {
        self.label()
    }
}

impl<B: Policy + RangePolicy> RangePolicy for EndgamePolicy<B> {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let asked: Vec<usize> = hands.iter().map(|&h| h as usize).collect();
        match self.solved_rows(state, &asked)? {
            None => self.blueprint.hand_action_probabilities(state, hands),
            Some((actions, rows)) => rows
                .into_iter()
                .map(|row| {
                    let mut out = [0.0; 4];
                    for (&a, q) in actions.iter().zip(row) {
                        *out.get_mut(a).ok_or_else(|| {
                            self.fail(format!("action {a} is not an FCPA action"))
                        })? = q;
                    }
                    Ok(out)
                })
                .collect(),
        }
    }

    fn name(&self) -> String {
        self.label()
    }
}

#[cfg(test)]
mod tests;
