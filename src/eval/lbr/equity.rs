//! Equity of one hand against a range: river sweeps, turn and flop enumeration, preflop sampling.

use super::deck::Deck;
use crate::games::cards::CardSet;
use crate::games::cards::HOLE_CARDS;
use crate::games::cards::HOLE_MASKS;
use crate::games::cards::NUM_CARDS;
use crate::games::cards::NUM_HOLE_HANDS;
use crate::games::hand_eval::HandKey;
use crate::games::hand_eval::HandStateMachine;
use crate::games::hand_eval::evaluate;
use crate::util::SplitMix64;

/// Twice the showdown result of ranks `ours` vs `theirs`: 2 win, 1 tie, 0 loss.
#[inline(always)]
fn pair_score(ours: u16, theirs: u16) -> u32 {
    2 * (ours > theirs) as u32 + (ours == theirs) as u32
}

/// `Σ_r valid[r] * pair_score(ours[r], theirs[r])` over the 52 river cards.
#[inline(always)]
fn row_score(ours: &[u16; 52], theirs: &[u16; 52], valid: &[u16; 52]) -> u32 {
    let mut s = 0u32;
    for r in 0..NUM_CARDS {
        let v = valid[r] as u32;
        s += v * (2 * (ours[r] > theirs[r]) as u32 + (ours[r] == theirs[r]) as u32);
    }
    s
}

fn machine_state(m: &HandStateMachine, cards: &[u8]) -> usize {
    cards
        .iter()
        .fold(HandStateMachine::ROOT, |s, &c| m.step(s, c))
}

fn row52(row: &[u16]) -> &[u16; 52] {
    row.try_into().expect("state machine rows have 52 entries")
}

/// LBR's probability `wp` of winning a checked-down showdown (ties one half) with `hole`
/// on `board` (0, 3, 4 or 5 cards) against the opponent range `range` (1326 weights, need
/// not be normalised; hands colliding with `hole` or `board` are ignored). Exact from the
/// flop on; pre-flop estimated from `preflop_samples` sampled (hand, board) pairs drawn with
/// `rng` (see the module docs). Returns 0.5 when no hand of the range is compatible.
pub fn win_probability(
    hole: (u8, u8),
    board: &[u8],
    range: &[f64],
    preflop_samples: usize,
    rng: &mut SplitMix64,
) -> f64 {
    assert_eq!(range.len(), NUM_HOLE_HANDS, "a range has 1326 weights");
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let m = HandStateMachine::get();
    let mut valid = [0u16; 52];
    for (c, v) in valid.iter_mut().enumerate() {
        *v = (!dead.contains(c as u8)) as u16;
    }
    let alive: Vec<u8> = (0..NUM_CARDS as u8)
        .filter(|&c| !dead.contains(c))
        .collect();
    // Numerator and denominator of Σ r(h) eq(h) / Σ r(h).
    let (mut num, mut den) = (0.0f64, 0.0f64);
    let compatible = |h: usize| range[h] > 0.0 && HOLE_MASKS[h] & dead.0 == 0;
    match board.len() {
        5 => {
            let s5 = machine_state(m, board);
            let ours = m.rank7(m.step(s5, hole.0), hole.1);
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let theirs = m.rank7(m.step(s5, a), b);
                num += range[h] * pair_score(ours, theirs) as f64 / 2.0;
                den += range[h];
            }
        }
        4 => {
            let s4 = machine_state(m, board);
            let ours = row52(m.rank7_row(m.step(m.step(s4, hole.0), hole.1)));
            let rivers = (alive.len() - 2) as f64; // 44
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let theirs = row52(m.rank7_row(m.step(m.step(s4, a), b)));
                let mut s = row_score(ours, theirs, &valid);
                for r in [a, b] {
                    s -= pair_score(ours[r as usize], theirs[r as usize]);
                }
                num += range[h] * s as f64 / (2.0 * rivers);
                den += range[h];
            }
        }
        3 => {
            let s3 = machine_state(m, board);
            let s5 = m.step(m.step(s3, hole.0), hole.1);
            let mut ours = vec![[0u16; 52]; NUM_CARDS];
            for &t in &alive {
                ours[t as usize] = *row52(m.rank7_row(m.step(s5, t)));
            }
            let runouts = ((alive.len() - 2) * (alive.len() - 3)) as f64; // 45 * 44
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let sh = m.step(m.step(s3, a), b);
                let mut s = 0u32;
                for &t in &alive {
                    if t == a || t == b {
                        continue;
                    }
                    let o = &ours[t as usize];
                    let theirs = row52(m.rank7_row(m.step(sh, t)));
                    s += row_score(o, theirs, &valid);
                    for r in [a, b, t] {
                        s -= pair_score(o[r as usize], theirs[r as usize]);
                    }
                }
                num += range[h] * s as f64 / (2.0 * runouts);
                den += range[h];
            }
        }
        0 => return preflop_win_probability(hole, range, preflop_samples, rng),
        n => panic!("win_probability: a board has 0, 3, 4 or 5 cards, not {n}"),
    }
    if den > 0.0 { num / den } else { 0.5 }
}

/// Pre-flop `wp` by sampling (opponent hand ~ range, board uniform): see the module docs.
fn preflop_win_probability(
    hole: (u8, u8),
    range: &[f64],
    samples: usize,
    rng: &mut SplitMix64,
) -> f64 {
    let ours_mask = CardSet::EMPTY.with(hole.0).with(hole.1);
    let mut hands = Vec::with_capacity(NUM_HOLE_HANDS);
    let mut weights = Vec::with_capacity(NUM_HOLE_HANDS);
    for h in 0..NUM_HOLE_HANDS {
        if range[h] > 0.0 && HOLE_MASKS[h] & ours_mask.0 == 0 {
            hands.push(h as u16);
            weights.push(range[h]);
        }
    }
    if hands.is_empty() || samples == 0 {
        return 0.5;
    }
    let alias = AliasTable::new(&weights);
    // Keys are drawn in batches and ranked in a second loop, so that the rank-table look-ups
    // (cache misses in a 37 MB table) of a batch overlap instead of waiting on each other.
    const BATCH: usize = 64;
    let mut keys = [(HandKey::EMPTY, HandKey::EMPTY); BATCH];
    let mut score = 0u64;
    let mut done = 0;
    while done < samples {
        let n = BATCH.min(samples - done);
        for k in &mut keys[..n] {
            let (a, b) = HOLE_CARDS[hands[alias.sample(rng)] as usize];
            let mut dead = ours_mask.with(a).with(b);
            let mut board = HandKey::EMPTY;
            for _ in 0..5 {
                let c = loop {
                    let c = rng.below(NUM_CARDS) as u8;
                    if !dead.contains(c) {
                        break c;
                    }
                };
                dead.insert(c);
                board = board.with(c);
            }
            *k = (board.with(hole.0).with(hole.1), board.with(a).with(b));
        }
        for &(ours, theirs) in &keys[..n] {
            score += pair_score(ours.rank(), theirs.rank()) as u64;
        }
        done += n;
    }
    score as f64 / (2.0 * samples as f64)
}

/// Walker's alias method: O(1) draws from a fixed discrete distribution.
pub(super) struct AliasTable {
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl AliasTable {
    /// A table for non-negative `weights` with a positive sum.
    pub(super) fn new(weights: &[f64]) -> AliasTable {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) =
            (0..n as u32).partition(|&i| prob[i as usize] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            alias[s as usize] = l;
            prob[l as usize] -= 1.0 - prob[s as usize];
            if prob[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Leftovers are 1 up to rounding.
        for i in small.into_iter().chain(large) {
            prob[i as usize] = 1.0;
        }
        AliasTable { prob, alias }
    }

    /// An index drawn with probability proportional to its weight.
    #[inline]
    pub(super) fn sample(&self, rng: &mut SplitMix64) -> usize {
        let x = rng.next_f64() * self.prob.len() as f64;
        let i = (x as usize).min(self.prob.len() - 1);
        if x - (i as f64) < self.prob[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }
}

/// Most (opponent hand, board completion) pairs [`general_win_probability`] enumerates
/// exactly; beyond it the equity is sampled.
pub(super) const EXACT_EQUITY_PAIRS: usize = 1 << 20;

/// `wp` on any deck and board schedule (the path of games other than full Hold'em): the
/// board is completed to `deck.total_board` cards with every subset of the cards left, for
/// every compatible opponent hand, when that is at most [`EXACT_EQUITY_PAIRS`] pairs; with
/// more, `samples` pairs (hand `h ~ r`, completion uniform) are drawn from `rng` as on the
/// Hold'em pre-flop. Showdowns are ranked by the game's evaluator (5 to 7 cards). Returns
/// 0.5 when no hand of the range is compatible (or nothing is sampled).
pub(super) fn general_win_probability(
    deck: &Deck,
    hole: (u8, u8),
    board: &[u8],
    range: &[f64],
    samples: usize,
    rng: &mut SplitMix64,
) -> f64 {
    assert_eq!(range.len(), NUM_HOLE_HANDS, "a range has 1326 weights");
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let mut hands = Vec::new();
    let mut weights = Vec::new();
    for h in 0..NUM_HOLE_HANDS {
        let m = HOLE_MASKS[h];
        if range[h] > 0.0 && m & dead.0 == 0 && m & !deck.set.0 == 0 {
            hands.push(h);
            weights.push(range[h]);
        }
    }
    let alive: Vec<u8> = deck
        .cards
        .iter()
        .copied()
        .filter(|&c| !dead.contains(c))
        .collect();
    let need = deck.total_board - board.len();
    if hands.is_empty() || alive.len() < need + 2 {
        return 0.5;
    }
    // Both players' cards: the hole pair, the board so far, then the completion.
    let n = 2 + deck.total_board;
    let mut ours = [0u8; 7];
    let mut theirs = [0u8; 7];
    ours[..2].copy_from_slice(&[hole.0, hole.1]);
    ours[2..2 + board.len()].copy_from_slice(board);
    theirs[2..2 + board.len()].copy_from_slice(board);
    let rank_pair = |ours: &mut [u8; 7], theirs: &mut [u8; 7], extra: &[u8]| {
        ours[n - need..n].copy_from_slice(extra);
        theirs[n - need..n].copy_from_slice(extra);
        pair_score(evaluate(&ours[..n]), evaluate(&theirs[..n]))
    };
    let completions = binomial(alive.len() - 2, need);
    if completions.saturating_mul(hands.len()) <= EXACT_EQUITY_PAIRS {
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for (&h, &w) in hands.iter().zip(&weights) {
            let (a, b) = HOLE_CARDS[h];
            theirs[..2].copy_from_slice(&[a, b]);
            let left: Vec<u8> = alive
                .iter()
                .copied()
                .filter(|&c| c != a && c != b)
                .collect();
            let mut score = 0u64;
            for_each_subset(&left, need, &mut |extra| {
                score += rank_pair(&mut ours, &mut theirs, extra) as u64;
            });
            num += w * score as f64 / (2.0 * completions as f64);
            den += w;
        }
        return num / den;
    }
    if samples == 0 {
        return 0.5;
    }
    let alias = AliasTable::new(&weights);
    let mut score = 0u64;
    let mut extra = [0u8; 7];
    for _ in 0..samples {
        let (a, b) = HOLE_CARDS[hands[alias.sample(rng)]];
        theirs[..2].copy_from_slice(&[a, b]);
        let mut used = dead.with(a).with(b);
        for e in &mut extra[..need] {
            *e = loop {
                let c = deck.cards[rng.below(deck.cards.len())];
                if !used.contains(c) {
                    break c;
                }
            };
            used.insert(*e);
        }
        score += rank_pair(&mut ours, &mut theirs, &extra[..need]) as u64;
    }
    score as f64 / (2.0 * samples as f64)
}

/// `C(n, k)` (saturating).
fn binomial(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    (0..k).fold(1usize, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// Calls `f` with every `k`-element subset of `items` (in lexicographic order of positions).
fn for_each_subset(items: &[u8], k: usize, f: &mut dyn FnMut(&[u8])) {
    fn rec(items: &[u8], k: usize, start: usize, buf: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])) {
        if buf.len() == k {
            f(buf);
            return;
        }
        for i in start..=items.len() - (k - buf.len()) {
            buf.push(items[i]);
            rec(items, k, i + 1, buf, f);
            buf.pop();
        }
    }
    rec(items, k, 0, &mut Vec::with_capacity(k), f);
}
