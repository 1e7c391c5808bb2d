//! The LBR decision at one node, the opponent's side, and the play of one hand.

use super::ActionProbs;
use super::LbrError;
use super::LbrRule;
use super::LbrVariant;
use super::deck::Deck;
use super::equity::general_win_probability;
use super::equity::win_probability;
use super::range::Range;
use super::range::RangePolicy;
use crate::game::Action;
use crate::game::Player;
use crate::game::State;
use crate::game::Turn;
use crate::games::cards::CardSet;
use crate::games::universal_poker::ALL_IN;
use crate::games::universal_poker::BET;
use crate::games::universal_poker::CALL;
use crate::games::universal_poker::FOLD;
use crate::games::universal_poker::UniversalPokerGame;
use crate::games::universal_poker::UniversalPokerState;
use crate::util::SplitMix64;

/// Lisý & Bowling's values of calling and of raises (module docs), relative to folding now.
/// `raises` lists `(x, fp)`: what the opponent must add to call the raise and the range's
/// fold probability. Returns `U(call)` and one `U` per raise.
pub fn lbr_utilities(pot: f64, asked: f64, wp: f64, raises: &[(f64, f64)]) -> (f64, Vec<f64>) {
    let call = wp * pot - (1.0 - wp) * asked;
    let raise = raises
        .iter()
        .map(|&(x, fp)| fp * pot + (1.0 - fp) * (wp * (pot + x) - (1.0 - wp) * (asked + x)))
        .collect();
    (call, raise)
}

/// The value relative to folding now of a showdown in which both players have put in
/// `total`, for LBR having put in `c_me` now and winning with probability `wp` (ties one half):
/// `S(wp, total)` of the module docs.
fn showdown_value(wp: f64, total: f64, c_me: f64) -> f64 {
    wp * (total + c_me) - (1.0 - wp) * (total - c_me)
}

/// Everything one LBR hand needs besides the state.
pub(super) struct HandCtx<'a> {
    pub(super) policy: &'a dyn RangePolicy,
    /// The game's cards.
    pub(super) deck: &'a Deck,
    pub(super) variant: LbrVariant,
    /// How raises are valued.
    pub(super) rule: LbrRule,
    pub(super) preflop_samples: usize,
    /// [`LbrOptions::defer_range_updates`].
    pub(super) defer: bool,
}

/// LBR's action at `state` (LBR = `me` to move, holding `hole`, opponent range `range`).
fn lbr_action(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    me: Player,
    hole: (u8, u8),
    range: &Range,
    rng: &mut SplitMix64,
) -> Result<Action, LbrError> {
    let round = state.betting().round as usize;
    let legal = state.legal_mask();
    let allowed = legal & ctx.variant.action_mask(round, ctx.deck.num_rounds);
    let c = state.contributions();
    let (c_me, c_opp) = (c[me] as f64, c[1 - me] as f64);
    let pot = c_me + c_opp;
    let asked = c_opp - c_me;
    let board = state.board_cards();
    let wp = equity(ctx, hole, board, range.weights(), rng);
    let mut raises = Vec::new();
    let mut sharp = Vec::new();
    let mut raise_actions = Vec::new();
    for a in [BET, ALL_IN] {
        if allowed >> a & 1 == 0 {
            continue;
        }
        let mut child = state.clone();
        child.apply(a);
        let x = child.contributions()[me] as f64 - c_opp;
        let hands = range.support();
        let probs = ctx.policy.hand_action_probabilities(&child, &hands)?;
        check_len(ctx, &child, &hands, &probs)?;
        let fp = range.average(&hands, |i| probs[i][FOLD]);
        raises.push((x, fp));
        raise_actions.push(a);
        if ctx.rule == LbrRule::Sharp {
            let split = Split {
                child: &child,
                me,
                hole,
                range,
                hands: &hands,
                probs: &probs,
            };
            sharp.push(sharp_raise_value(ctx, &split, pot, c_me, rng));
        }
    }
    let (u_call, mut u_raise) = lbr_utilities(pot, asked, wp, &raises);
    if ctx.rule == LbrRule::Sharp {
        u_raise = sharp;
    }
    let (mut best, mut best_u) = (CALL, u_call);
    for (&a, &u) in raise_actions.iter().zip(&u_raise) {
        if u > best_u {
            best = a;
            best_u = u;
        }
    }
    if best_u > 0.0 || legal & (1 << FOLD) == 0 {
        Ok(best)
    } else {
        Ok(FOLD)
    }
}

/// LBR's checked-down equity with `hole` on `board` against the hand weights `weights` (1326,
/// need not be normalised).
fn equity(
    ctx: &HandCtx,
    hole: (u8, u8),
    board: &[u8],
    weights: &[f64],
    rng: &mut SplitMix64,
) -> f64 {
    if ctx.deck.holdem {
        win_probability(hole, board, weights, ctx.preflop_samples, rng)
    } else {
        general_win_probability(ctx.deck, hole, board, weights, ctx.preflop_samples, rng)
    }
}

/// The opponent's reply to one of LBR's raises: the state after the raise and the policy's
/// probabilities there for every hand of the range.
struct Split<'s> {
    child: &'s UniversalPokerState,
    me: Player,
    hole: (u8, u8),
    range: &'s Range,
    hands: &'s [u16],
    probs: &'s [ActionProbs],
}

/// The sharp rule's value of a raise (module docs): the range split by the opponent's reply
/// (fold, call, each re-raise), a called raise valued against the hands that call, a re-raise
/// by LBR folding or calling against the hands that make it.
fn sharp_raise_value(
    ctx: &HandCtx,
    split: &Split,
    pot: f64,
    c_me: f64,
    rng: &mut SplitMix64,
) -> f64 {
    let weights = split.range.weights();
    let mut mass = [0.0; 4];
    let mut total = 0.0;
    for (row, &h) in split.probs.iter().zip(split.hands) {
        let w = weights[h as usize];
        total += w;
        for (m, &p) in mass.iter_mut().zip(row) {
            *m += w * p.max(0.0);
        }
    }
    if total <= 0.0 {
        return 0.0;
    }
    let board = split.child.board_cards();
    // LBR's equity against the hands that reply with `a`, each weighted by its probability.
    let against = |a: Action, rng: &mut SplitMix64| {
        let mut w = vec![0.0; weights.len()];
        for (row, &h) in split.probs.iter().zip(split.hands) {
            w[h as usize] = weights[h as usize] * row[a].max(0.0);
        }
        equity(ctx, split.hole, board, &w, rng)
    };
    let raised_to = split.child.contributions()[split.me] as f64;
    let mut u = mass[FOLD] / total * pot;
    if mass[CALL] > 0.0 {
        let wp = against(CALL, rng);
        u += mass[CALL] / total * showdown_value(wp, raised_to, c_me);
    }
    let legal = split.child.legal_mask();
    for b in [BET, ALL_IN] {
        if legal >> b & 1 == 0 || mass[b] <= 0.0 {
            continue;
        }
        let mut reraised = split.child.clone();
        reraised.apply(b);
        let to = reraised.contributions()[1 - split.me] as f64;
        let wp = against(b, rng);
        let call = showdown_value(wp, to, c_me);
        u += mass[b] / total * call.max(-(raised_to - c_me));
    }
    u
}

fn check_len(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    hands: &[u16],
    probs: &[ActionProbs],
) -> Result<(), LbrError> {
    if probs.len() == hands.len() {
        return Ok(());
    }
    Err(LbrError::BadProbabilities {
        policy: ctx.policy.name(),
        probs: [f64::NAN; 4],
        history: crate::game::history_string(state.history()),
        reason: format!("{} rows for {} hands", probs.len(), hands.len()),
    })
}

/// Whether LBR's decision at `state` reads the opponent's range: it does when LBR may fold
/// (it faces a bet) or its variant lets it raise; otherwise LBR calls (checks).
fn needs_range(ctx: &HandCtx, state: &UniversalPokerState) -> bool {
    let legal = state.legal_mask();
    let round = state.betting().round as usize;
    legal & (1 << FOLD) != 0
        || legal
            & ctx.variant.action_mask(round, ctx.deck.num_rounds)
            & ((1 << BET) | (1 << ALL_IN))
            != 0
}

/// The opponent's move: its action sampled from the policy's probabilities for its actual
/// hand `actual` (a query for that hand alone; the range's update waits, see [`update_range`]).
pub(super) fn opponent_action(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    actual: u16,
    rng: &mut SplitMix64,
) -> Result<Action, LbrError> {
    let hands = [actual];
    let probs = ctx.policy.hand_action_probabilities(state, &hands)?;
    check_len(ctx, state, &hands, &probs)?;
    let legal = state.legal_mask();
    let mut own = probs[0];
    let bad = |reason: &str| LbrError::BadProbabilities {
        policy: ctx.policy.name(),
        probs: probs[0],
        history: crate::game::history_string(state.history()),
        reason: reason.to_string(),
    };
    for (a, p) in own.iter_mut().enumerate() {
        if !p.is_finite() || *p < 0.0 {
            return Err(bad("negative or non-finite probability"));
        }
        if legal >> a & 1 == 0 {
            *p = 0.0;
        }
    }
    if own.iter().sum::<f64>() <= 0.0 {
        return Err(bad("no probability on a legal action"));
    }
    Ok(rng.weighted(&own))
}

/// Bayes' update of the opponent's range for its action `action` at `state` (one batched
/// query for the range's hands), `actual` being the hand it holds.
pub(super) fn update_range(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    action: Action,
    actual: u16,
    range: &mut Range,
) -> Result<(), LbrError> {
    let hands = range.support();
    let probs = ctx.policy.hand_action_probabilities(state, &hands)?;
    check_len(ctx, state, &hands, &probs)?;
    let likelihood: Vec<f64> = probs.iter().map(|p| p[action].max(0.0)).collect();
    if range.update(&hands, &likelihood) <= 0.0 {
        // Only the actual hand can have taken the action with positive probability, but the
        // range gave it no weight (underflow): restart from the actual hand alone.
        range.weights.fill(0.0);
        range.weights[actual as usize] = 1.0;
    }
    Ok(())
}

/// One hand in progress as LBR (in seat `seat`) sees it: the state, the opponent's range and
/// the opponent's decisions not yet folded into the range.
struct Hand<'a> {
    ctx: &'a HandCtx<'a>,
    state: UniversalPokerState,
    seat: Player,
    hole: (u8, u8),
    /// The opponent's actual hand (a hole-card index).
    opp_hand: u16,
    range: Range,
    /// The opponent's decisions (state, action) not yet folded into the range.
    pending: Vec<(UniversalPokerState, Action)>,
    /// Chance outcomes dealt so far (hole cards included).
    dealt: usize,
}

impl<'a> Hand<'a> {
    /// A new hand at the root; `hole` are LBR's cards, `opp` the opponent's.
    fn new(
        ctx: &'a HandCtx<'a>,
        game: &UniversalPokerGame,
        seat: Player,
        hole: (u8, u8),
        opp: (u8, u8),
    ) -> Hand<'a> {
        let known = CardSet::EMPTY.with(hole.0).with(hole.1);
        Hand {
            ctx,
            state: game.initial_state(),
            seat,
            hole,
            opp_hand: crate::games::cards::hole_index(opp.0, opp.1) as u16,
            range: Range::uniform_in(ctx.deck.set, known),
            pending: Vec::new(),
            dealt: 0,
        }
    }

    /// Deals chance outcome `outcome`; a board card leaves the range.
    fn deal(&mut self, outcome: Action) {
        self.state.apply(outcome);
        self.dealt += 1;
        if self.dealt > 4 {
            let card = self.ctx.deck.cards[outcome];
            self.range.remove_cards(CardSet::single(card));
        }
    }

    /// Folds the pending opponent decisions into the range if LBR's decision at the current
    /// state reads it; returns whether it does.
    fn prepare_decision(&mut self) -> Result<bool, LbrError> {
        if !needs_range(self.ctx, &self.state) {
            return Ok(false);
        }
        for (s, a) in self.pending.drain(..) {
            update_range(self.ctx, &s, a, self.opp_hand, &mut self.range)?;
        }
        Ok(true)
    }

    /// LBR's action at the current state (LBR to move).
    fn decide(&mut self, rng: &mut SplitMix64) -> Result<Action, LbrError> {
        if self.prepare_decision()? {
            lbr_action(
                self.ctx,
                &self.state,
                self.seat,
                self.hole,
                &self.range,
                rng,
            )
        } else {
            Ok(CALL)
        }
    }

    /// Applies the opponent's action `a`, recording it for the range.
    fn opponent_acts(&mut self, a: Action) -> Result<(), LbrError> {
        if self.ctx.defer {
            self.pending.push((self.state.clone(), a));
        } else {
            update_range(self.ctx, &self.state, a, self.opp_hand, &mut self.range)?;
        }
        self.state.apply(a);
        Ok(())
    }
}

/// Plays one hand with the dealt cards `cards` (P0's two hole cards, P1's two, then the
/// board cards in deal order); LBR sits in `seat`. Returns the terminal state (LBR's
/// winnings in chips are its `returns()[seat]`).
pub(super) fn play_hand(
    ctx: &HandCtx,
    game: &UniversalPokerGame,
    seat: Player,
    cards: &[u8],
    rng: &mut SplitMix64,
) -> Result<UniversalPokerState, LbrError> {
    let opp = 1 - seat;
    let hole = (cards[2 * seat], cards[2 * seat + 1]);
    let mut hand = Hand::new(ctx, game, seat, hole, (cards[2 * opp], cards[2 * opp + 1]));
    loop {
        match hand.state.turn() {
            Turn::Terminal => return Ok(hand.state),
            Turn::Chance => {
                let c = cards[hand.dealt];
                hand.deal(ctx.deck.outcome(c));
            }
            Turn::Player(p) if p == seat => {
                let a = hand.decide(rng)?;
                hand.state.apply(a);
            }
            Turn::Player(_) => {
                let a = opponent_action(ctx, &hand.state, hand.opp_hand, rng)?;
                hand.opponent_acts(a)?;
            }
        }
    }
}

/// LBR's action (in seat `seat`) at the end of `history`, a history of `game` at which LBR
/// is to move: the history is replayed as [`play_hand`] would have played it (the same range
/// updates in the same order, LBR's own earlier actions taken from the history), so the action
/// is the one LBR takes there in play.
pub(super) fn decision_at(
    ctx: &HandCtx,
    game: &UniversalPokerGame,
    seat: Player,
    history: &[Action],
    rng: &mut SplitMix64,
) -> Result<Action, LbrError> {
    let card = |i: usize| ctx.deck.cards[history[i]];
    let opp = 1 - seat;
    let hole = (card(2 * seat), card(2 * seat + 1));
    let mut hand = Hand::new(ctx, game, seat, hole, (card(2 * opp), card(2 * opp + 1)));
    for &a in history {
        match hand.state.turn() {
            Turn::Terminal => break,
            Turn::Chance => hand.deal(a),
            Turn::Player(p) if p == seat => {
                hand.prepare_decision()?;
                hand.state.apply(a);
            }
            Turn::Player(_) => hand.opponent_acts(a)?,
        }
    }
    assert_eq!(
        hand.state.turn(),
        Turn::Player(seat),
        "decision_at: LBR is not to move after the history"
    );
    hand.decide(rng)
}
