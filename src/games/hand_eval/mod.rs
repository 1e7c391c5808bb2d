//! Poker hand evaluation (best five of five to seven cards) and showdowns against ranges.
//!
//! # Ranks
//!
//! Every 5-card poker hand falls in one of the 7462 equivalence classes of standard
//! poker. A hand's *rank* is its class number `1..=7462`, **higher is stronger**, equal
//! ranks tie: 1 is 7-5-4-3-2 offsuit (the worst high card) and 7462 is the royal flush.
//! The rank of five to seven cards is the rank of their best five-card hand. The
//! category boundaries are fixed (see [`category`]).
//!
//! Cards use the encoding of [`crate::games::cards`] (`rank * 4 + suit`).
//!
//! # Method
//!
//! * [`evaluate_simple`] is the reference: it scores every 5-card subset directly from the
//!   poker rules (category, then the card ranks that break ties, most significant first)
//!   and maps the best score to its class number by binary search in the sorted list of
//!   all 7462 scores. Slow but obviously correct; everything else is checked against it.
//! * [`evaluate7`], [`evaluate6`], [`evaluate5`], [`evaluate`] and [`HandKey`] evaluate
//!   single hands with two small computations and one table lookup. Each card adds a
//!   64-bit key: a per-rank constant (chosen so that every multiset of at most seven
//!   ranks has its own sum) in the low half and a one in its suit's 4-bit counter in the
//!   high half; each card also ORs its bit into a per-suit 13-bit rank mask. A suit
//!   counter of 5 or more means a flush, which with at most seven cards beats anything
//!   but a straight flush, and the flush suit's rank mask indexes an 8192-entry table;
//!   otherwise the rank sum indexes a table of the best unsuited rank (about 37 MB, only
//!   sparsely filled). Both tables are filled from the reference evaluator on first use
//!   (about 0.1 s in release).
//! * [`HandStateMachine`] enumerates hands in nested loops (the "two plus two" idea):
//!   each state is a partial hand, and its row of 52 entries gives the state after each
//!   next card, so each new card costs one lookup and the seventh card's row holds final
//!   ranks directly. States keep only what can still matter: rank counts, and the rank
//!   mask of each suit that can still reach five cards by the seventh. About 614,000
//!   states (91 MB), built on first use in about half a second (release). Enumerating
//!   all 133,784,560 seven-card hands reads contiguous rows: well over 10^9 hands/s.
//! * [`BoardShowdown`] turns a board and an opponent range into the showdown value of
//!   each of our 1326 hands with one sorted sweep and per-card sums (card removal by
//!   inclusion-exclusion), instead of 1326 x 1326 comparisons.
//!
//! All tables are built lazily, once, behind [`OnceLock`]s, by this module's own code.

use std::sync::OnceLock;

use super::cards::{rank as card_rank, suit as card_suit};

/// Number of distinct hand ranks (equivalence classes of five-card hands).
pub const NUM_HAND_RANKS: u16 = 7462;

/// The nine poker hand categories, weakest first (so `as u8` orders them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HandCategory {
    /// No pair, straight or flush.
    HighCard = 0,
    /// One pair.
    OnePair = 1,
    /// Two pairs.
    TwoPair = 2,
    /// Three of a kind (trips or a set).
    ThreeOfAKind = 3,
    /// Five ranks in sequence (the wheel A-2-3-4-5 is the lowest).
    Straight = 4,
    /// Five cards of one suit.
    Flush = 5,
    /// Three of a kind plus a pair.
    FullHouse = 6,
    /// Four of a kind.
    FourOfAKind = 7,
    /// A straight in one suit (the royal flush is the highest).
    StraightFlush = 8,
}

impl HandCategory {
    /// All categories, weakest first.
    pub const ALL: [HandCategory; 9] = [
        HandCategory::HighCard,
        HandCategory::OnePair,
        HandCategory::TwoPair,
        HandCategory::ThreeOfAKind,
        HandCategory::Straight,
        HandCategory::Flush,
        HandCategory::FullHouse,
        HandCategory::FourOfAKind,
        HandCategory::StraightFlush,
    ];

    /// The lowest rank of this category.
    pub const fn min_rank(self) -> u16 {
        CATEGORY_MIN_RANK[self as usize]
    }

    /// The highest rank of this category.
    pub const fn max_rank(self) -> u16 {
        if (self as usize) == 8 {
            NUM_HAND_RANKS
        } else {
            CATEGORY_MIN_RANK[self as usize + 1] - 1
        }
    }

    /// A human-readable name, e.g. `"Full house"`.
    pub const fn name(self) -> &'static str {
        match self {
            HandCategory::HighCard => "High card",
            HandCategory::OnePair => "One pair",
            HandCategory::TwoPair => "Two pair",
            HandCategory::ThreeOfAKind => "Three of a kind",
            HandCategory::Straight => "Straight",
            HandCategory::Flush => "Flush",
            HandCategory::FullHouse => "Full house",
            HandCategory::FourOfAKind => "Four of a kind",
            HandCategory::StraightFlush => "Straight flush",
        }
    }
}

/// The lowest rank of each category (classes per category: 1277 high card, 2860 one pair,
/// 858 two pair, 858 trips, 10 straights, 1277 flushes, 156 full houses, 156 quads,
/// 10 straight flushes).
pub const CATEGORY_MIN_RANK: [u16; 9] = [1, 1278, 4138, 4996, 5854, 5864, 7141, 7297, 7453];

/// The category of a hand rank (`1..=7462`).
#[inline]
pub fn category(rank: u16) -> HandCategory {
    debug_assert!((1..=NUM_HAND_RANKS).contains(&rank), "bad hand rank {rank}");
    let mut c = 0;
    while c < 8 && rank >= CATEGORY_MIN_RANK[c + 1] {
        c += 1;
    }
    HandCategory::ALL[c]
}

// ---------------------------------------------------------------------------------------
// Reference evaluator.
// ---------------------------------------------------------------------------------------

/// Score of five cards given their ranks (`0..13`, any order, multiplicity at most 4) and
/// whether they are all one suit: `category << 20` plus the tie-breaking ranks, most
/// significant first, four bits each (the groups sorted by size then rank; for straights
/// just the top card, 3 for the wheel). Larger score = stronger hand.
fn score5(ranks: [u8; 5], flush: bool) -> u32 {
    let mut counts = [0u8; 13];
    for r in ranks {
        counts[r as usize] += 1;
    }
    // (count, rank) for each rank present, biggest group first, then highest rank.
    let mut group_buf = [(0u8, 0u8); 5];
    let mut n = 0;
    for r in 0..13u8 {
        if counts[r as usize] > 0 {
            group_buf[n] = (counts[r as usize], r);
            n += 1;
        }
    }
    let groups = &mut group_buf[..n];
    groups.sort_unstable_by(|a, b| b.cmp(a));
    let straight_top = if groups.len() == 5 {
        let (hi, lo) = (groups[0].1, groups[4].1);
        if hi - lo == 4 {
            Some(hi)
        } else if hi == 12 && groups[1].1 == 3 {
            Some(3) // A-2-3-4-5: the five is the top card
        } else {
            None
        }
    } else {
        None
    };
    let mut shape_buf = [0u8; 5];
    for (i, g) in groups.iter().enumerate() {
        shape_buf[i] = g.0;
    }
    let cat = match (straight_top, flush, &shape_buf[..n]) {
        (Some(_), true, _) => HandCategory::StraightFlush,
        (_, _, [4, 1]) => HandCategory::FourOfAKind,
        (_, _, [3, 2]) => HandCategory::FullHouse,
        (_, true, _) => HandCategory::Flush,
        (Some(_), false, _) => HandCategory::Straight,
        (_, _, [3, 1, 1]) => HandCategory::ThreeOfAKind,
        (_, _, [2, 2, 1]) => HandCategory::TwoPair,
        (_, _, [2, 1, 1, 1]) => HandCategory::OnePair,
        (_, _, [1, 1, 1, 1, 1]) => HandCategory::HighCard,
        _ => panic!("impossible five-card hand {ranks:?}"),
    };
    let mut score = (cat as u32) << 20;
    match straight_top {
        Some(top) => score |= (top as u32) << 16,
        None => {
            for (i, g) in groups.iter().enumerate() {
                score |= (g.1 as u32) << (16 - 4 * i);
            }
        }
    }
    score
}

/// All 7462 class scores, ascending: `rank = index + 1`.
fn class_scores() -> &'static [u32] {
    static SCORES: OnceLock<Vec<u32>> = OnceLock::new();
    SCORES.get_or_init(|| {
        let mut v = Vec::with_capacity(NUM_HAND_RANKS as usize);
        // Every multiset of five ranks (at most four of a kind), unsuited...
        for_each_rank_multiset(5, |counts| {
            let ranks = counts_to_ranks5(counts);
            v.push(score5(ranks, false));
            // ...and, if all ranks differ, also as a flush.
            if counts.iter().all(|&c| c <= 1) {
                v.push(score5(ranks, true));
            }
        });
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), NUM_HAND_RANKS as usize);
        v
    })
}

fn counts_to_ranks5(counts: &[u8; 13]) -> [u8; 5] {
    let mut ranks = [0u8; 5];
    let mut n = 0;
    for (r, &c) in counts.iter().enumerate() {
        for _ in 0..c {
            ranks[n] = r as u8;
            n += 1;
        }
    }
    assert_eq!(n, 5);
    ranks
}

/// Calls `f` with the count vector of every multiset of `size` ranks with each rank at
/// most four times.
fn for_each_rank_multiset(size: u8, mut f: impl FnMut(&[u8; 13])) {
    fn rec(r: usize, left: u8, counts: &mut [u8; 13], f: &mut dyn FnMut(&[u8; 13])) {
        if r == 13 {
            if left == 0 {
                f(counts);
            }
            return;
        }
        for c in 0..=left.min(4) {
            counts[r] = c;
            rec(r + 1, left - c, counts, f);
        }
        counts[r] = 0;
    }
    rec(0, size, &mut [0u8; 13], &mut f);
}

/// The rank `1..=7462` of a score from [`score5`].
fn score_to_rank(score: u32) -> u16 {
    let i = class_scores()
        .binary_search(&score)
        .expect("score of a valid hand");
    i as u16 + 1
}

/// Rank of exactly five distinct cards by the reference method.
fn evaluate5_simple(cards: [u8; 5]) -> u16 {
    let ranks = cards.map(card_rank);
    let flush = cards.iter().all(|&c| card_suit(c) == card_suit(cards[0]));
    score_to_rank(score5(ranks, flush))
}

/// Reference evaluator: the rank of the best 5-card hand among 5 to 7 distinct cards,
/// trying every 5-card subset. Slow (for tests and as the specification), but obviously
/// correct. Panics on fewer than 5 or more than 7 cards.
pub fn evaluate_simple(cards: &[u8]) -> u16 {
    let n = cards.len();
    assert!((5..=7).contains(&n), "need 5 to 7 cards, got {n}");
    debug_assert!(cards.iter().all(|&c| c < 52));
    let mut best = 0;
    // Choose the (n - 5) cards to leave out.
    for skip1 in 0..n {
        for skip2 in skip1..n {
            if (n == 5 && (skip1 > 0 || skip2 > 0))
                || (n == 6 && skip2 != skip1)
                || (n == 7 && skip2 == skip1)
            {
                continue;
            }
            let mut five = [0u8; 5];
            let mut k = 0;
            for (i, &c) in cards.iter().enumerate() {
                if n > 5 && (i == skip1 || i == skip2) {
                    continue;
                }
                five[k] = c;
                k += 1;
            }
            best = best.max(evaluate5_simple(five));
        }
    }
    best
}

// ---------------------------------------------------------------------------------------
// Fast evaluation of single hands: rank-key sums and a flush table.
// ---------------------------------------------------------------------------------------

/// Per-rank keys such that every multiset of at most seven ranks (each rank at most four
/// times) has its own key sum, whatever its size. Found offline by a greedy search (each
/// key the smallest one above the previous that keeps all sums distinct); the table
/// builder re-checks the property.
const RANK_KEYS: [u32; 13] = [
    1, 5, 24, 112, 521, 2247, 9244, 30823, 103066, 250154, 667453, 1526359, 3453520,
];

/// The largest key sum of seven ranks: four aces and three kings.
const MAX_KEY_SUM: usize = 4 * RANK_KEYS[12] as usize + 3 * RANK_KEYS[11] as usize;

/// Bit where the four 4-bit suit counters start in a card key.
const SUIT_COUNTER_SHIFT: u32 = 32;

const fn build_card_keys() -> [u64; 52] {
    let mut out = [0u64; 52];
    let mut c = 0;
    while c < 52 {
        let (r, s) = (c / 4, c % 4);
        out[c] = RANK_KEYS[r] as u64 | 1u64 << (SUIT_COUNTER_SHIFT + 4 * s as u32);
        c += 1;
    }
    out
}

const fn build_card_bits() -> [u64; 52] {
    let mut out = [0u64; 52];
    let mut c = 0;
    while c < 52 {
        out[c] = 1u64 << (16 * (c % 4) + c / 4);
        c += 1;
    }
    out
}

/// Additive key of each card: its rank key in the low 32 bits plus one in its suit's
/// 4-bit counter at bit `32 + 4 * suit`. Seven cards never overflow a counter.
static CARD_KEYS: [u64; 52] = build_card_keys();

/// OR-able bit of each card: bit `16 * suit + rank`, so the OR of a hand holds the
/// 13-bit rank mask of each suit in its own 16-bit field.
static CARD_BITS: [u64; 52] = build_card_bits();

/// Lookup tables of the single-hand evaluator.
struct RankTables {
    /// Rank of the best flush (or straight flush) among the ranks in a 13-bit mask of
    /// 5 to 7 cards of one suit; 0 for other masks.
    flush: Vec<u16>,
    /// Rank of the best hand, ignoring suits, of a multiset of 5 to 7 ranks, indexed by
    /// its key sum; 0 where no multiset has that sum.
    unsuited: Vec<u16>,
}

/// The best rank among all five-card subsets of `ranks` (5 to 7 ranks, all one suit if
/// `flush`), by the reference scoring.
fn best_subset_rank(ranks: &[u8], flush: bool) -> u16 {
    let n = ranks.len();
    let mut best = 0;
    for sel in 0u32..1 << n {
        if sel.count_ones() != 5 {
            continue;
        }
        let mut five = [0u8; 5];
        let mut k = 0;
        for (i, &r) in ranks.iter().enumerate() {
            if sel >> i & 1 == 1 {
                five[k] = r;
                k += 1;
            }
        }
        best = best.max(score_to_rank(score5(five, flush)));
    }
    best
}

fn rank_tables() -> &'static RankTables {
    static TABLES: OnceLock<RankTables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut flush = vec![0u16; 1 << 13];
        for (mask, slot) in flush.iter_mut().enumerate() {
            if (5..=7).contains(&mask.count_ones()) {
                let ranks: Vec<u8> = (0..13u8).filter(|&r| mask >> r & 1 == 1).collect();
                *slot = best_subset_rank(&ranks, true);
            }
        }
        let mut unsuited = vec![0u16; MAX_KEY_SUM + 1];
        for size in 5..=7 {
            for_each_rank_multiset(size, |counts| {
                let mut ranks = Vec::with_capacity(7);
                let mut sum = 0usize;
                for (r, &c) in counts.iter().enumerate() {
                    for _ in 0..c {
                        ranks.push(r as u8);
                        sum += RANK_KEYS[r] as usize;
                    }
                }
                assert_eq!(unsuited[sum], 0, "rank keys are not collision-free");
                unsuited[sum] = best_subset_rank(&ranks, false);
            });
        }
        RankTables { flush, unsuited }
    })
}

/// The rank from a hand's summed [`CARD_KEYS`] and OR-ed [`CARD_BITS`] (5 to 7 cards).
#[inline(always)]
fn rank_from_key(tables: &RankTables, key: u64, bits: u64) -> u16 {
    // Adding 3 to each suit counter sets its top bit iff the suit has 5 or more cards;
    // with at most 7 cards, at most one suit can.
    let flush = ((key >> SUIT_COUNTER_SHIFT) + 0x3333) & 0x8888;
    if flush != 0 {
        let suit = flush.trailing_zeros() / 4;
        tables.flush[(bits >> (16 * suit)) as usize & 0x1fff]
    } else {
        tables.unsuited[key as u32 as usize]
    }
}

/// Cards accumulated into the fast evaluator's key, so that a shared part (a board) is
/// summed once and completed with different hole cards. Ranking needs 5 to 7 distinct
/// cards in all; adding a card twice gives a meaningless rank or a panic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandKey {
    key: u64,
    bits: u64,
    len: u8,
}

impl HandKey {
    /// No cards.
    pub const EMPTY: HandKey = HandKey {
        key: 0,
        bits: 0,
        len: 0,
    };

    /// The key of the given cards.
    #[inline]
    pub fn from_cards(cards: &[u8]) -> HandKey {
        cards.iter().fold(HandKey::EMPTY, |h, &c| h.with(c))
    }

    /// This key with card `c` added.
    #[inline(always)]
    pub fn with(self, c: u8) -> HandKey {
        HandKey {
            key: self.key + CARD_KEYS[c as usize],
            bits: self.bits | CARD_BITS[c as usize],
            len: self.len + 1,
        }
    }

    /// Number of cards added.
    #[inline(always)]
    pub fn len(self) -> usize {
        self.len as usize
    }

    /// Whether no card was added.
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The rank of the cards (5 to 7 of them; panics otherwise).
    #[inline]
    pub fn rank(self) -> u16 {
        assert!((5..=7).contains(&self.len), "need 5 to 7 cards");
        rank_from_key(rank_tables(), self.key, self.bits)
    }
}

/// Rank (`1..=7462`, higher is stronger) of the best five-card hand among seven distinct
/// cards. Table-driven (two lookups); the tables (about 37 MB) are built on first use.
#[inline]
pub fn evaluate7(cards: &[u8; 7]) -> u16 {
    let mut key = 0u64;
    let mut bits = 0u64;
    for &c in cards {
        key += CARD_KEYS[c as usize];
        bits |= CARD_BITS[c as usize];
    }
    rank_from_key(rank_tables(), key, bits)
}

/// Rank of the best five of six distinct cards.
#[inline]
pub fn evaluate6(cards: &[u8; 6]) -> u16 {
    evaluate(cards)
}

/// Rank of five distinct cards.
#[inline]
pub fn evaluate5(cards: &[u8; 5]) -> u16 {
    evaluate(cards)
}

/// Rank of the best five-card hand among 5 to 7 distinct cards (panics on other counts).
#[inline]
pub fn evaluate(cards: &[u8]) -> u16 {
    assert!(
        (5..=7).contains(&cards.len()),
        "need 5 to 7 cards, got {}",
        cards.len()
    );
    let mut key = 0u64;
    let mut bits = 0u64;
    for &c in cards {
        key += CARD_KEYS[c as usize];
        bits |= CARD_BITS[c as usize];
    }
    rank_from_key(rank_tables(), key, bits)
}

mod machine;
mod showdown;

pub use machine::{
    HandStateMachine, NUM_SEVEN_CARD_HANDS, bench_enumerate_all, bench_random,
    category_counts_7card, random_hands, rank_histogram_7card,
};
pub use showdown::{BoardShowdown, hand_ranks_on_board, showdown_values};

#[cfg(test)]
mod tests;
