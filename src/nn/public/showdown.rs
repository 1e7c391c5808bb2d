//! Factored river showdowns: the `[1326 x 1326]` payoff matrix of a Hold'em showdown replaced
//! by sorted prefix sums, as tensor operations (any batch `B`, any backend, `f32` or `f64`).
//!
//! # What it computes
//!
//! For an opponent range `r` over the 1326 hole-card pairs (in
//! [`crate::games::cards::hole_index`] order) and a fixed five-card board,
//! [`Showdown::values`] gives for every hand `x`
//!
//! ```text
//! v(x) = Σ_y r(y) · [x and y share no card] · sign(strength(x) − strength(y))
//! ```
//!
//! (win +1, tie 0, loss −1), and [`Showdown::fold_values`] gives `f(x) = Σ_y r(y) · [x and y
//! share no card]`. Hands colliding with the board get 0 and their range entries are ignored.
//!
//! # Method
//!
//! Setup (host loops, once per board) ranks every hand with
//! [`crate::games::hand_eval::evaluate7`], sorts all 1326 hands by strength (colliding ones
//! have zero mass, their place is irrelevant) and, per card `c`, lists the 51 hands holding `c`
//! in the same order. For each hand `x` it stores the start and end of its tie group in the
//! global order and in the lists of its two cards.
//!
//! `values` then needs, per batch row: the exclusive prefix sums `W` of the sorted range (mass
//! strictly weaker than `x` is `W[lo(x)]`, strictly stronger is `total − W[hi(x)]`) and the same
//! prefix sums inside each card's list (`[B, 52, 51]`). By inclusion-exclusion over `x`'s two
//! cards `a, b`, the disjoint mass strictly weaker than `x` is
//! `weaker − weaker_a − weaker_b + weaker_ab`, where the last term is the mass of hands holding
//! both `a` and `b` — only `x` itself, which is not strictly weaker than itself, so it is 0;
//! likewise for stronger. Ties fall in neither set and contribute 0. For `fold_values` the
//! hand `x` lies in both card lists, so it is subtracted twice and added back once:
//! `total − T_a − T_b + r(x)`. Cost: `O(B · 1326)` (two `cumsum`s and a few `select`s), against
//! `O(B · 1326²)` for the dense matrix product.
//!
//! [`crate::games::hand_eval::BoardShowdown`] is the host (`f64`, one range) version of the
//! same sweep; this module is its tensor form for the batched public-tree solvers.
//!
//! # Plugging into a Hold'em river terminal
//!
//! At a showdown terminal where each player has put `pot / 2` in, player `i`'s counterfactual
//! value of `x` is `(pot / 2) · values(r_{−i})(x)` — the winner gains the opponent's stake, a
//! tie returns both — where `r_{−i}` is the opponent's reach (including chance's: if the deal
//! of hole cards is part of the reach, multiply the range by the chance probability of each
//! opponent hand first, or scale the result by the constant deal probability). At a fold
//! terminal where the folding player loses `stake`, the winner's value is
//! `stake · fold_values(r_{−i})(x)` and the folder's `−stake · fold_values(...)`. Both replace
//! `range_times(r, payoff)` of `super::range_times` for `P = 1326` private states, with a
//! `[B, T, 1326]` range reshaped to `[B·T, 1326]` when a level holds `T` terminals on the same
//! board (boards differ per terminal: one `Showdown` per board).

use super::{Ctx, floats, ints};
use crate::games::cards::{HOLE_CARDS, HOLE_MASKS, NUM_CARDS, NUM_HOLE_HANDS};
use crate::games::hand_eval::evaluate7;
use burn::tensor::{Int, Tensor};

/// Hands holding one given card: 51 per card.
const PER_CARD: usize = NUM_CARDS - 1;

/// A river board's showdown, precomputed for [`Showdown::values`] and
/// [`Showdown::fold_values`]. See the module docs.
#[derive(Clone, Debug)]
pub struct Showdown {
    /// `[1, 1326]`: 1 for hands not colliding with the board.
    valid: Tensor<2>,
    /// The 1326 hands sorted by strength, weakest first.
    order: Tensor<1, Int>,
    /// The 52 card lists, `[52·51]`: card `c`'s hands at `c·51 ..`, weakest first.
    card_lists: Tensor<1, Int>,
    /// Per hand, where its tie group starts and ends (exclusive) in `order`: `[2·1326]`
    /// (starts, then ends), indices into the `[B, 1327]` exclusive prefix sums.
    global_bounds: Tensor<1, Int>,
    /// Per hand, the tie group bounds in the lists of its low and high card and the end of
    /// those lists: `[6·1326]` indices into the `[B, 52·52]` per-card exclusive prefix sums,
    /// in the order (low start, high start, low end, high end, low total, high total).
    card_bounds: Tensor<1, Int>,
    /// Each hand's 7-card strength (0 where it collides with the board).
    strength: Vec<u16>,
    ctx: Ctx,
}

impl Showdown {
    /// Ranks and sorts the hands on `board` (five distinct cards `< 52`) and uploads the index
    /// tables to `ctx`'s device.
    pub fn new(board: &[u8; 5], ctx: &Ctx) -> Showdown {
        let mut board_mask = 0u64;
        for &c in board {
            assert!((c as usize) < NUM_CARDS, "board card {c} out of range");
            assert!(board_mask & (1u64 << c) == 0, "board card {c} repeated");
            board_mask |= 1u64 << c;
        }
        let n = NUM_HOLE_HANDS;
        let valid: Vec<bool> = (0..n).map(|h| HOLE_MASKS[h] & board_mask == 0).collect();
        let strength: Vec<u16> = (0..n)
            .map(|h| {
                if !valid[h] {
                    return 0;
                }
                let (a, b) = HOLE_CARDS[h];
                evaluate7(&[a, b, board[0], board[1], board[2], board[3], board[4]])
            })
            .collect();

        // Global order and tie groups.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&h| (strength[h as usize], h));
        let (lo, hi) = tie_bounds(&order, &strength);
        let mut global = vec![0u32; 2 * n];
        for (pos, &h) in order.iter().enumerate() {
            global[h as usize] = lo[pos];
            global[n + h as usize] = hi[pos];
        }

        // Per-card lists in the same order, and each hand's place in its two lists.
        let mut lists: Vec<Vec<u32>> = (0..NUM_CARDS)
            .map(|_| Vec::with_capacity(PER_CARD))
            .collect();
        for &h in &order {
            let (a, b) = HOLE_CARDS[h as usize];
            lists[a as usize].push(h);
            lists[b as usize].push(h);
        }
        // Row width of the per-card exclusive prefix sums.
        let w = (PER_CARD + 1) as u32;
        let mut card_bounds = vec![0u32; 6 * n];
        for (c, list) in lists.iter().enumerate() {
            debug_assert_eq!(list.len(), PER_CARD);
            let (lo, hi) = tie_bounds(list, &strength);
            for (pos, &h) in list.iter().enumerate() {
                let (a, _) = HOLE_CARDS[h as usize];
                let which = usize::from(a as usize != c); // 0: low card, 1: high card
                let base = c as u32 * w;
                card_bounds[which * n + h as usize] = base + lo[pos];
                card_bounds[(2 + which) * n + h as usize] = base + hi[pos];
                card_bounds[(4 + which) * n + h as usize] = base + PER_CARD as u32;
            }
        }
        let card_lists: Vec<u32> = lists.concat();

        let valid_f: Vec<f64> = valid.iter().map(|&v| f64::from(u8::from(v))).collect();
        Showdown {
            valid: floats(&valid_f, [1, n], ctx),
            order: ints(&order, &ctx.device),
            card_lists: ints(&card_lists, &ctx.device),
            global_bounds: ints(&global, &ctx.device),
            card_bounds: ints(&card_bounds, &ctx.device),
            strength,
            ctx: ctx.clone(),
        }
    }

    /// Each hand's 7-card strength on this board (higher is stronger; 0 for hands colliding
    /// with the board).
    pub fn strengths(&self) -> &[u16] {
        &self.strength
    }

    /// `[B, 1326]` opponent ranges in, `[B, 1326]` showdown values out: `Σ_y r(y) · [x, y
    /// disjoint] · sign(strength(x) − strength(y))` (see the module docs).
    pub fn values(&self, opp_range: Tensor<2>) -> Tensor<2> {
        let (r, b) = self.masked(opp_range);
        let n = NUM_HOLE_HANDS;
        let w = PER_CARD + 1;

        // Global exclusive prefix sums over the sorted range, [B, 1327].
        let sorted = r.clone().select(1, self.order.clone());
        let prefix = exclusive_cumsum(sorted, &self.ctx);
        let total = prefix.clone().slice([0..b, n..n + 1]);
        let g = prefix.select(1, self.global_bounds.clone());
        let weaker = g.clone().slice([0..b, 0..n]);
        let not_stronger = g.slice([0..b, n..2 * n]);

        // Per-card exclusive prefix sums, [B, 52·52].
        let pc = self.card_prefix(r, b, w);
        let c = pc.select(1, self.card_bounds.clone());
        let part = |k: usize| c.clone().slice([0..b, k * n..(k + 1) * n]);
        let weaker_cards = part(0) + part(1);
        let not_stronger_cards = part(2) + part(3);
        let total_cards = part(4) + part(5);

        // Disjoint weaker mass minus disjoint stronger mass.
        let weaker_disjoint = weaker - weaker_cards;
        let stronger_disjoint =
            (total.expand([b, n]) - not_stronger) - (total_cards - not_stronger_cards);
        (weaker_disjoint - stronger_disjoint) * self.valid.clone().expand([b, n])
    }

    /// `[B, 1326]` opponent ranges in, `[B, 1326]` out: the opponent mass sharing no card with
    /// each hand, `Σ_y r(y) · [x, y disjoint]` (what a fold terminal multiplies by the stake).
    pub fn fold_values(&self, opp_range: Tensor<2>) -> Tensor<2> {
        let (r, b) = self.masked(opp_range);
        let n = NUM_HOLE_HANDS;
        let w = PER_CARD + 1;
        let total = r.clone().sum_dim(1).expand([b, n]);
        let pc = self.card_prefix(r.clone(), b, w);
        let c = pc.select(1, self.card_bounds.clone().slice(4 * n..6 * n));
        let total_cards = c.clone().slice([0..b, 0..n]) + c.slice([0..b, n..2 * n]);
        // `x` itself holds both of its cards: subtracted twice, added back once.
        (total - total_cards + r) * self.valid.clone().expand([b, n])
    }

    /// The range with hands colliding with the board zeroed, and the batch size.
    fn masked(&self, opp_range: Tensor<2>) -> (Tensor<2>, usize) {
        let [b, n] = opp_range.dims();
        assert_eq!(n, NUM_HOLE_HANDS, "showdown ranges are [B, 1326]");
        (opp_range * self.valid.clone().expand([b, n]), b)
    }

    /// Exclusive prefix sums of the range inside each card's list: `[B, 52·52]` (row `c` holds
    /// card `c`'s 52 prefix sums).
    fn card_prefix(&self, r: Tensor<2>, b: usize, w: usize) -> Tensor<2> {
        let lists = r
            .select(1, self.card_lists.clone())
            .reshape([b * NUM_CARDS, PER_CARD]);
        exclusive_cumsum(lists, &self.ctx).reshape([b, NUM_CARDS * w])
    }
}

pub use crate::search::hand_sweep::HandSweep;

/// `[R, K]` in, `[R, K + 1]` out: `out[.., k] = Σ_{j<k} in[.., j]`.
fn exclusive_cumsum(t: Tensor<2>, ctx: &Ctx) -> Tensor<2> {
    let [rows, _] = t.dims();
    let zero = Tensor::zeros([rows, 1], ctx);
    Tensor::cat(vec![zero, t.cumsum(1)], 1)
}

/// For hands listed weakest first, the start and (exclusive) end of each position's tie group.
fn tie_bounds(list: &[u32], strength: &[u16]) -> (Vec<u32>, Vec<u32>) {
    let mut lo = vec![0u32; list.len()];
    let mut hi = vec![0u32; list.len()];
    let mut start = 0;
    while start < list.len() {
        let s = strength[list[start] as usize];
        let mut end = start;
        while end < list.len() && strength[list[end] as usize] == s {
            end += 1;
        }
        for k in start..end {
            lo[k] = start as u32;
            hi[k] = end as u32;
        }
        start = end;
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::super::{Precision, range_times, to_f64};
    use super::*;
    use crate::games::cards::parse_cards;
    use crate::util::SplitMix64;
    use burn::tensor::Device;
    use std::time::Instant;

    fn cpu(precision: Precision) -> Ctx {
        Ctx::new(&Device::flex(), precision)
    }

    fn random_board(rng: &mut SplitMix64) -> [u8; 5] {
        let mut cards: Vec<u8> = Vec::new();
        while cards.len() < 5 {
            let c = rng.below(NUM_CARDS) as u8;
            if !cards.contains(&c) {
                cards.push(c);
            }
        }
        cards.try_into().unwrap()
    }

    fn board(s: &str) -> [u8; 5] {
        parse_cards(s).unwrap().try_into().unwrap()
    }

    /// `B` ranges: uniform random entries, a fraction of them zero, colliding hands non-zero
    /// too (they must be ignored).
    fn random_ranges(rng: &mut SplitMix64, b: usize, zero_frac: f64) -> Vec<f64> {
        (0..b * NUM_HOLE_HANDS)
            .map(|_| {
                if rng.next_f64() < zero_frac {
                    0.0
                } else {
                    rng.next_f64()
                }
            })
            .collect()
    }

    fn disjoint(x: usize, y: usize) -> bool {
        HOLE_MASKS[x] & HOLE_MASKS[y] == 0
    }

    /// Host loops over all pairs: (showdown values, fold values), `[B, 1326]` each.
    fn dense_reference(board: &[u8; 5], r: &[f64], b: usize) -> (Vec<f64>, Vec<f64>) {
        let n = NUM_HOLE_HANDS;
        let bm: u64 = board.iter().map(|&c| 1u64 << c).sum();
        let ok = |h: usize| HOLE_MASKS[h] & bm == 0;
        let st = |h: usize| {
            let (a, c) = HOLE_CARDS[h];
            evaluate7(&[a, c, board[0], board[1], board[2], board[3], board[4]])
        };
        let strength: Vec<u16> = (0..n).map(|h| if ok(h) { st(h) } else { 0 }).collect();
        let mut v = vec![0.0; b * n];
        let mut f = vec![0.0; b * n];
        for bi in 0..b {
            for x in (0..n).filter(|&x| ok(x)) {
                for y in (0..n).filter(|&y| ok(y) && disjoint(x, y)) {
                    let ry = r[bi * n + y];
                    f[bi * n + x] += ry;
                    v[bi * n + x] += match strength[x].cmp(&strength[y]) {
                        std::cmp::Ordering::Greater => ry,
                        std::cmp::Ordering::Less => -ry,
                        std::cmp::Ordering::Equal => 0.0,
                    };
                }
            }
        }
        (v, f)
    }

    /// Largest absolute difference between the tensor results and the dense reference, and
    /// the scale (largest range mass of a row) for relative comparisons.
    fn gaps(board: &[u8; 5], r: &[f64], b: usize, ctx: &Ctx) -> (f64, f64, f64) {
        let sd = Showdown::new(board, ctx);
        let rt = floats(r, [b, NUM_HOLE_HANDS], ctx);
        let v = to_f64(sd.values(rt.clone()));
        let f = to_f64(sd.fold_values(rt));
        let (rv, rf) = dense_reference(board, r, b);
        let gap = |a: &[f64], e: &[f64]| {
            a.iter()
                .zip(e)
                .map(|(a, e)| (a - e).abs())
                .fold(0.0, f64::max)
        };
        let scale = r
            .chunks(NUM_HOLE_HANDS)
            .map(|row| row.iter().sum::<f64>())
            .fold(0.0, f64::max);
        (gap(&v, &rv), gap(&f, &rf), scale)
    }

    fn boards() -> Vec<[u8; 5]> {
        let mut rng = SplitMix64::new(0x5d0e);
        let mut out: Vec<[u8; 5]> = (0..4).map(|_| random_board(&mut rng)).collect();
        // Royal flush on the board: every hand ties.
        out.push(board("AsKsQsJsTs"));
        // Four aces and a king: no hole card beats the king kicker, every hand ties.
        out.push(board("AcAdAhAsKc"));
        // A board straight: ties unless a hand improves it.
        out.push(board("5c6d7h8s9c"));
        // A paired board.
        out.push(board("2c2d7h7sKc"));
        out
    }

    #[test]
    fn royal_flush_board_is_all_ties() {
        let ctx = cpu(Precision::F64);
        let sd = Showdown::new(&board("AsKsQsJsTs"), &ctx);
        let mut rng = SplitMix64::new(7);
        let r = random_ranges(&mut rng, 3, 0.2);
        let v = to_f64(sd.values(floats(&r, [3, NUM_HOLE_HANDS], &ctx)));
        assert!(v.iter().all(|x| x.abs() < 1e-12), "all hands tie");
        let f = to_f64(sd.fold_values(floats(&r, [3, NUM_HOLE_HANDS], &ctx)));
        assert!(f.iter().any(|&x| x > 1.0), "fold values are not zero");
    }

    #[test]
    fn values_match_dense_reference_f64() {
        let ctx = cpu(Precision::F64);
        let mut rng = SplitMix64::new(11);
        for (k, bd) in boards().iter().enumerate() {
            // Row densities: mostly zeros, some zeros, none.
            let zero_frac = [0.9, 0.3, 0.0][k % 3];
            let r = random_ranges(&mut rng, 3, zero_frac);
            let (gv, gf, _) = gaps(bd, &r, 3, &ctx);
            assert!(gv < 1e-9, "board {k}: showdown gap {gv}");
            assert!(gf < 1e-9, "board {k}: fold gap {gf}");
        }
    }

    #[test]
    fn values_match_dense_reference_f32() {
        let ctx = cpu(Precision::F32);
        let mut rng = SplitMix64::new(12);
        for (k, bd) in boards().iter().enumerate().step_by(2) {
            let r = random_ranges(&mut rng, 3, 0.3);
            let (gv, gf, scale) = gaps(bd, &r, 3, &ctx);
            assert!(
                gv <= 1e-4 * scale,
                "board {k}: showdown gap {gv} (scale {scale})"
            );
            assert!(
                gf <= 1e-4 * scale,
                "board {k}: fold gap {gf} (scale {scale})"
            );
        }
    }

    #[test]
    fn single_hand_range_gives_its_sign_and_card_removal() {
        // The opponent holds exactly one hand y: v(x) = ±1 or 0 for disjoint x, 0 otherwise.
        let ctx = cpu(Precision::F64);
        let bd = board("2c7d9hJsKs");
        let sd = Showdown::new(&bd, &ctx);
        let y = crate::games::cards::hole_index(50, 51); // AhAs
        let mut r = vec![0.0; NUM_HOLE_HANDS];
        r[y] = 1.0;
        let v = to_f64(sd.values(floats(&r, [1, NUM_HOLE_HANDS], &ctx)));
        let s = sd.strengths();
        let bm: u64 = bd.iter().map(|&c| 1u64 << c).sum();
        for x in 0..NUM_HOLE_HANDS {
            let expect = if !disjoint(x, y) || HOLE_MASKS[x] & bm != 0 {
                0.0
            } else {
                s[x].cmp(&s[y]) as i32 as f64
            };
            assert_eq!(v[x], expect, "hand {x}");
        }
    }

    #[test]
    fn host_sweep_matches_pairwise_sums_on_a_small_deck() {
        // 10 cards (ids of 2 suits x 5 ranks), random strengths with many ties, random boards.
        let deck: Vec<u8> = (0..5u8)
            .flat_map(|r| (0..2u8).map(move |s| r * 4 + s))
            .collect();
        let mut hands = Vec::new();
        for (i, &a) in deck.iter().enumerate() {
            for &b in &deck[i + 1..] {
                hands.push((a, b));
            }
        }
        let n = hands.len();
        let mut rng = SplitMix64::new(41);
        for trial in 0..20 {
            let board: u64 = (0..trial % 4)
                .map(|_| 1u64 << deck[rng.below(deck.len())])
                .fold(0, |m, b| m | b);
            let strength: Vec<u16> = (0..n).map(|_| rng.below(6) as u16).collect();
            let r: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            let sweep = HandSweep::new(&hands, board, Some(&strength));
            let (mut v, mut f) = (vec![0.0; n], vec![0.0; n]);
            sweep.showdown_into(&r, &mut v);
            sweep.fold_into(&r, &mut f);
            let bits = |h: (u8, u8)| 1u64 << h.0 | 1u64 << h.1;
            for x in 0..n {
                let (mut ev, mut ef) = (0.0, 0.0);
                if bits(hands[x]) & board == 0 {
                    for y in 0..n {
                        if bits(hands[y]) & (board | bits(hands[x])) == 0 {
                            ef += r[y];
                            ev += r[y] * strength[x].cmp(&strength[y]) as i32 as f64;
                        }
                    }
                }
                assert!(
                    (v[x] - ev).abs() < 1e-12,
                    "trial {trial} hand {x}: {} vs {ev}",
                    v[x]
                );
                assert!(
                    (f[x] - ef).abs() < 1e-12,
                    "trial {trial} hand {x}: {} vs {ef}",
                    f[x]
                );
            }
        }
    }

    fn time_it(mut f: impl FnMut(), reps: usize) -> f64 {
        f();
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        t.elapsed().as_secs_f64() / reps as f64
    }

    /// `cargo test --release --lib nn::public::showdown -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_factored_vs_dense() {
        let ctx = cpu(Precision::F32);
        let mut rng = SplitMix64::new(3);
        let bd = random_board(&mut rng);
        let sd = Showdown::new(&bd, &ctx);
        let n = NUM_HOLE_HANDS;
        let dense = {
            let mut m = vec![0.0; n * n];
            let s = sd.strengths();
            for x in 0..n {
                for y in 0..n {
                    if disjoint(x, y) {
                        m[x * n + y] = (s[x] as f64 - s[y] as f64).signum();
                    }
                }
            }
            floats(&m, [1, 1, n, n], &ctx)
        };
        for b in [1usize, 64] {
            let r = floats(&random_ranges(&mut rng, b, 0.0), [b, n], &ctx);
            let reps = if b == 1 { 50 } else { 10 };
            let tf = time_it(
                || {
                    let _ = to_f64(sd.values(r.clone()));
                },
                reps,
            );
            let td = time_it(
                || {
                    let _ = to_f64(range_times(r.clone().reshape([b, 1, n]), dense.clone()));
                },
                reps,
            );
            println!(
                "B = {b:>2}: factored values {:.3} ms, dense [1326 x 1326] matmul {:.3} ms (x{:.1})",
                tf * 1e3,
                td * 1e3,
                td / tf
            );
        }
    }
}
