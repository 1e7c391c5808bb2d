//! Showdowns against a range: per-hand ranks on a board and one-sweep showdown values.

use super::super::cards::CardSet;
use super::super::cards::HOLE_CARDS;
use super::super::cards::HOLE_MASKS;
use super::super::cards::NUM_HOLE_HANDS;
use super::HandKey;
use super::rank_from_key;
use super::rank_tables;

/// The rank of each of the 1326 hole-card hands (in [`crate::games::cards::hole_index`]
/// order) with a five-card board; 0 for hands that share a card with the board.
pub fn hand_ranks_on_board(board: &[u8; 5]) -> Vec<u16> {
    let board_mask = CardSet::from_cards(board).0;
    let board_key = HandKey::from_cards(board);
    let tables = rank_tables();
    HOLE_CARDS
        .iter()
        .zip(HOLE_MASKS.iter())
        .map(|(&(a, b), &m)| {
            if m & board_mask != 0 {
                0
            } else {
                let h = board_key.with(a).with(b);
                rank_from_key(tables, h.key, h.bits)
            }
        })
        .collect()
}

/// The hole-card hands on one five-card board sorted by strength, ready to compute
/// showdown values against any number of opponent ranges.
///
/// # Method
///
/// For our hand `h = {a, b}` of rank `r`, the opponent mass we beat is the mass of hands
/// ranked below `r` that share no card with `h`. By inclusion-exclusion over cards, that
/// is `below - below_with[a] - below_with[b]`, where `below` is the mass of all hands
/// ranked below `r` and `below_with[c]` the mass of those holding card `c` (no hand
/// ranked below `r` holds both `a` and `b`, as the only such hand is `h` itself). The
/// mass we lose to is the same with "above" for "below". One sweep over the hands in
/// rank order, keeping `below` and the 52 `below_with[c]`, gives every value: O(1326)
/// per range after an O(1326 log 1326) sort per board.
#[derive(Clone, Debug)]
pub struct BoardShowdown {
    board: [u8; 5],
    ranks: Vec<u16>,
    /// Hands not colliding with the board, weakest first.
    order: Vec<u16>,
    /// Start of each group of equal rank in `order`, then `order.len()`.
    group_starts: Vec<u16>,
}

impl BoardShowdown {
    /// Ranks and sorts the 1326 hands on `board` (five distinct cards).
    pub fn new(board: &[u8; 5]) -> BoardShowdown {
        let ranks = hand_ranks_on_board(board);
        let mut order: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
            .filter(|&h| ranks[h as usize] != 0)
            .collect();
        order.sort_unstable_by_key(|&h| ranks[h as usize]);
        let mut group_starts = Vec::new();
        for (i, &h) in order.iter().enumerate() {
            if i == 0 || ranks[order[i - 1] as usize] != ranks[h as usize] {
                group_starts.push(i as u16);
            }
        }
        group_starts.push(order.len() as u16);
        BoardShowdown {
            board: *board,
            ranks,
            order,
            group_starts,
        }
    }

    /// The board.
    pub fn board(&self) -> &[u8; 5] {
        &self.board
    }

    /// The rank of each hole-card hand on this board (0 where it collides with the board).
    pub fn ranks(&self) -> &[u16] {
        &self.ranks
    }

    /// The hands that do not collide with the board (1081 of them), weakest first.
    pub fn order(&self) -> &[u16] {
        &self.order
    }

    /// Writes into `out[h]`, for each of our hole-card hands `h`, the opponent mass we
    /// beat minus the mass we lose to: `sum over o of opp_range[o] * sign(rank(h) -
    /// rank(o))` over opponent hands `o` sharing no card with `h` or the board (ties count
    /// 0). `opp_range` need not be normalised; its entries for hands colliding with the
    /// board are ignored. `out[h]` is 0 for hands colliding with the board. Divide by
    /// [`BoardShowdown::compatible_mass`] for the expected result given the opponent's
    /// hand is compatible with ours. Panics unless both slices have length 1326.
    pub fn values_into(&self, opp_range: &[f64], out: &mut [f64]) {
        assert_eq!(opp_range.len(), NUM_HOLE_HANDS);
        assert_eq!(out.len(), NUM_HOLE_HANDS);
        out.fill(0.0);
        let mut total = 0.0;
        let mut total_with = [0.0f64; 52];
        for &h in &self.order {
            let p = opp_range[h as usize];
            let (a, b) = HOLE_CARDS[h as usize];
            total += p;
            total_with[a as usize] += p;
            total_with[b as usize] += p;
        }
        let mut below = 0.0;
        let mut below_with = [0.0f64; 52];
        for g in self.group_starts.windows(2) {
            let group = &self.order[g[0] as usize..g[1] as usize];
            for &h in group {
                let (a, b) = HOLE_CARDS[h as usize];
                out[h as usize] = below - below_with[a as usize] - below_with[b as usize];
            }
            for &h in group {
                let p = opp_range[h as usize];
                let (a, b) = HOLE_CARDS[h as usize];
                below += p;
                below_with[a as usize] += p;
                below_with[b as usize] += p;
            }
            // `below` now counts the group too: what is left is strictly above.
            for &h in group {
                let (a, b) = (
                    HOLE_CARDS[h as usize].0 as usize,
                    HOLE_CARDS[h as usize].1 as usize,
                );
                let above = (total - below)
                    - (total_with[a] - below_with[a])
                    - (total_with[b] - below_with[b]);
                out[h as usize] -= above;
            }
        }
    }

    /// [`BoardShowdown::values_into`] into a new vector.
    pub fn values(&self, opp_range: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; NUM_HOLE_HANDS];
        self.values_into(opp_range, &mut out);
        out
    }

    /// For each of our hands `h`, the opponent mass on hands sharing no card with `h` or
    /// the board (0 for `h` colliding with the board).
    pub fn compatible_mass(&self, opp_range: &[f64]) -> Vec<f64> {
        assert_eq!(opp_range.len(), NUM_HOLE_HANDS);
        let mut total = 0.0;
        let mut total_with = [0.0f64; 52];
        for &h in &self.order {
            let p = opp_range[h as usize];
            let (a, b) = HOLE_CARDS[h as usize];
            total += p;
            total_with[a as usize] += p;
            total_with[b as usize] += p;
        }
        let mut out = vec![0.0; NUM_HOLE_HANDS];
        for &h in &self.order {
            let (a, b) = HOLE_CARDS[h as usize];
            // The hand h itself was subtracted twice.
            out[h as usize] =
                total - total_with[a as usize] - total_with[b as usize] + opp_range[h as usize];
        }
        out
    }
}

/// Showdown values of our 1326 hole-card hands on `board` against the opponent range
/// `opp_range` (1326 non-negative weights; see [`BoardShowdown::values_into`]):
/// `out[h] = sum over compatible o of opp_range[o] * sign(rank(h) - rank(o))`.
/// For many ranges on one board, build a [`BoardShowdown`] once instead.
pub fn showdown_values(board: &[u8; 5], opp_range: &[f64]) -> Vec<f64> {
    BoardShowdown::new(board).values(opp_range)
}
