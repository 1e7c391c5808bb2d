//! The LBR decision at one node, the opponent's side, and the play of one hand.

use super::*;

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

/// Everything one LBR hand needs besides the state.
pub(super) struct HandCtx<'a> {
    pub(super) policy: &'a dyn RangePolicy,
    pub(super) variant: LbrVariant,
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
    let allowed = legal & ctx.variant.action_mask(round);
    let c = state.contributions();
    let (c_me, c_opp) = (c[me] as f64, c[1 - me] as f64);
    let pot = c_me + c_opp;
    let asked = c_opp - c_me;
    let wp = win_probability(
        hole,
        state.board_cards(),
        range.weights(),
        ctx.preflop_samples,
        rng,
    );
    let mut raises = Vec::new();
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
    }
    let (u_call, u_raise) = lbr_utilities(pot, asked, wp, &raises);
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
fn needs_range(variant: LbrVariant, state: &UniversalPokerState) -> bool {
    let legal = state.legal_mask();
    let round = state.betting().round as usize;
    legal & (1 << FOLD) != 0
        || legal & variant.action_mask(round) & ((1 << BET) | (1 << ALL_IN)) != 0
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

/// Plays one hand with the dealt cards `cards` (P0's two hole cards, P1's two, then the five
/// board cards in deal order); LBR sits in `seat`. Returns LBR's winnings in chips.
pub(super) fn play_hand(
    ctx: &HandCtx,
    game: &UniversalPokerGame,
    seat: Player,
    cards: &[u8; 9],
    rng: &mut SplitMix64,
) -> Result<f64, LbrError> {
    let mut state = game.initial_state();
    let opp = 1 - seat;
    let hole = (cards[2 * seat], cards[2 * seat + 1]);
    let opp_hand = crate::games::cards::hole_index(cards[2 * opp], cards[2 * opp + 1]) as u16;
    let mut range = Range::uniform(CardSet::EMPTY.with(hole.0).with(hole.1));
    // The opponent's decisions (state, action) not yet folded into the range.
    let mut pending: Vec<(UniversalPokerState, Action)> = Vec::new();
    let mut dealt = 0usize;
    loop {
        match state.turn() {
            Turn::Terminal => return Ok(state.returns()[seat]),
            Turn::Chance => {
                let c = cards[dealt];
                dealt += 1;
                state.apply(c as Action);
                if dealt > 4 {
                    range.remove_cards(CardSet::single(c));
                }
            }
            Turn::Player(p) if p == seat => {
                let a = if needs_range(ctx.variant, &state) {
                    for (s, a) in pending.drain(..) {
                        update_range(ctx, &s, a, opp_hand, &mut range)?;
                    }
                    lbr_action(ctx, &state, seat, hole, &range, rng)?
                } else {
                    CALL
                };
                state.apply(a);
            }
            Turn::Player(_) => {
                let a = opponent_action(ctx, &state, opp_hand, rng)?;
                if ctx.defer {
                    pending.push((state.clone(), a));
                } else {
                    update_range(ctx, &state, a, opp_hand, &mut range)?;
                }
                state.apply(a);
            }
        }
    }
}
