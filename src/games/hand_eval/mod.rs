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

use super::cards::{
    CardSet, HOLE_CARDS, HOLE_MASKS, NUM_HOLE_HANDS, rank as card_rank, suit as card_suit,
};

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

// ---------------------------------------------------------------------------------------
// Enumeration: a state machine over cards.
// ---------------------------------------------------------------------------------------

/// A partial hand of `k` cards as the state machine sees it: the rank counts (3 bits per
/// rank) and, per suit, a 16-bit field that holds the suit's 13-bit rank mask while the
/// suit can still make a flush by the seventh card, or [`DEAD_SUIT`] once it cannot.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct MachineState {
    counts: u64,
    suits: u64,
}

/// Suit field of a suit that can no longer reach five cards.
const DEAD_SUIT: u64 = 0x8000;

impl MachineState {
    /// The state after adding card `c` to this state of `k` cards, or `None` if `c`
    /// cannot be added (a fifth card of a rank, or a card already in a live suit).
    fn child(self, k: usize, c: u8) -> Option<MachineState> {
        let (r, s) = (card_rank(c) as u64, card_suit(c) as u64);
        if (self.counts >> (3 * r)) & 7 == 4 {
            return None;
        }
        let field = (self.suits >> (16 * s)) & 0xffff;
        let mut suits = self.suits;
        if field != DEAD_SUIT {
            if field >> r & 1 == 1 {
                return None;
            }
            suits |= 1 << (16 * s + r);
        }
        let remaining = 7 - (k as u32 + 1);
        for t in 0..4 {
            let f = (suits >> (16 * t)) & 0xffff;
            if f != DEAD_SUIT && f.count_ones() + remaining < 5 {
                suits = (suits & !(0xffff << (16 * t))) | DEAD_SUIT << (16 * t);
            }
        }
        Some(MachineState {
            counts: self.counts + (1 << (3 * r)),
            suits,
        })
    }

    /// The rank of a state of seven cards.
    fn rank7(self, tables: &RankTables) -> u16 {
        for t in 0..4 {
            let f = (self.suits >> (16 * t)) & 0xffff;
            if f != DEAD_SUIT && f.count_ones() >= 5 {
                return tables.flush[f as usize];
            }
        }
        let mut sum = 0usize;
        for (r, &key) in RANK_KEYS.iter().enumerate() {
            sum += ((self.counts >> (3 * r)) & 7) as usize * key as usize;
        }
        tables.unsuited[sum]
    }
}

/// A small multiplicative hasher for the builder's maps (keys are already well spread).
#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (x >> 32)
    }
}

type StateMap =
    std::collections::HashMap<MachineState, u32, std::hash::BuildHasherDefault<MixHasher>>;

/// The enumeration state machine. State `s` of 0 to 5 cards owns the row
/// `next[52 * s..52 * s + 52]`, indexed by the next card: for 0 to 4 cards the entry is
/// the row offset (`52 * id`) of the child state in `next`; for 5 cards it is the row
/// offset of the child in `last`, whose entries are the final seven-card ranks. Entries
/// for impossible cards (a card already held) are 0 and meaningless. The root (no cards)
/// is at offset 0. Cards can be added in any order.
pub struct HandStateMachine {
    next: Vec<u32>,
    last: Vec<u16>,
    states_per_level: [usize; 7],
}

impl HandStateMachine {
    fn build() -> HandStateMachine {
        let tables = rank_tables();
        let root = MachineState {
            counts: 0,
            suits: 0,
        };
        let mut levels: Vec<Vec<MachineState>> = vec![vec![root]];
        let mut next: Vec<u32> = Vec::new();
        let mut base = 0usize; // first id of the current level among levels 0..=5
        for k in 0..6 {
            let cur = std::mem::take(&mut levels[k]);
            let child_base = if k < 5 { base + cur.len() } else { 0 };
            let mut map = StateMap::default();
            let mut children: Vec<MachineState> = Vec::new();
            next.reserve(cur.len() * 52);
            for &st in &cur {
                for c in 0..52u8 {
                    let entry = match st.child(k, c) {
                        None => 0,
                        Some(ch) => {
                            let id = *map.entry(ch).or_insert_with(|| {
                                children.push(ch);
                                children.len() as u32 - 1
                            });
                            (child_base + id as usize) * 52
                        }
                    };
                    next.push(u32::try_from(entry).expect("state machine too large"));
                }
            }
            levels[k] = cur;
            levels.push(children);
            base += levels[k].len();
        }
        let sixes = &levels[6];
        let mut last = Vec::with_capacity(sixes.len() * 52);
        for &st in sixes {
            for c in 0..52u8 {
                last.push(st.child(6, c).map_or(0, |ch| ch.rank7(tables)));
            }
        }
        let mut states_per_level = [0usize; 7];
        for (n, level) in states_per_level.iter_mut().zip(&levels) {
            *n = level.len();
        }
        HandStateMachine {
            next,
            last,
            states_per_level,
        }
    }

    /// The machine, built on first use (about 0.1 GB; a second or two in release).
    pub fn get() -> &'static HandStateMachine {
        static MACHINE: OnceLock<HandStateMachine> = OnceLock::new();
        MACHINE.get_or_init(HandStateMachine::build)
    }

    /// Number of distinct states holding 0, 1, ..., 6 cards.
    pub fn states_per_level(&self) -> [usize; 7] {
        self.states_per_level
    }

    /// Memory held by the tables, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.next.len() * 4 + self.last.len() * 2
    }

    /// The root row offset (no cards yet).
    pub const ROOT: usize = 0;

    /// The row offset after adding card `c` to the state at row offset `state` (which
    /// holds 0 to 5 cards). For a 5-card state the result is a row offset for
    /// [`HandStateMachine::rank7`].
    #[inline(always)]
    pub fn step(&self, state: usize, c: u8) -> usize {
        self.next[state + c as usize] as usize
    }

    /// The rank of the 6-card state at row offset `state6` plus card `c`.
    #[inline(always)]
    pub fn rank7(&self, state6: usize, c: u8) -> u16 {
        self.last[state6 + c as usize]
    }

    /// The ranks of the 6-card state at row offset `state6` plus each card `0..52`
    /// (meaningless where the card is already held).
    #[inline(always)]
    pub fn rank7_row(&self, state6: usize) -> &[u16] {
        &self.last[state6..state6 + 52]
    }

    /// Calls `f(row, c6)` for every 6-card combination `c1 < ... < c6`, where
    /// `row[c7]` for `c7 > c6` is the rank of the 7-card hand completed by `c7`.
    #[inline]
    pub fn for_each_six(&self, mut f: impl FnMut(&[u16], usize)) {
        for c1 in 0..46u8 {
            let s1 = self.step(Self::ROOT, c1);
            for c2 in c1 + 1..47 {
                let s2 = self.step(s1, c2);
                for c3 in c2 + 1..48 {
                    let s3 = self.step(s2, c3);
                    for c4 in c3 + 1..49 {
                        let s4 = self.step(s3, c4);
                        for c5 in c4 + 1..50 {
                            let s5 = self.step(s4, c5);
                            for c6 in c5 + 1..51 {
                                let s6 = self.step(s5, c6);
                                f(self.rank7_row(s6), c6 as usize);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Number of seven-card hands, `C(52, 7)`.
pub const NUM_SEVEN_CARD_HANDS: u64 = 133_784_560;

/// The number of seven-card hands in each category (indexed by `HandCategory as usize`),
/// enumerating all 133,784,560 of them with the state machine.
pub fn category_counts_7card() -> [u64; 9] {
    let hist = rank_histogram_7card();
    let mut out = [0u64; 9];
    for (r, &n) in hist.iter().enumerate().skip(1) {
        out[category(r as u16) as usize] += n;
    }
    out
}

/// The number of seven-card hands of each rank (index `0..=7462`; index 0 is always 0),
/// enumerating all 133,784,560 of them with the state machine.
pub fn rank_histogram_7card() -> Vec<u64> {
    let sm = HandStateMachine::get();
    // Two histograms, filled alternately, halve store-to-load dependencies.
    let mut hist = vec![[0u64; 2]; NUM_HAND_RANKS as usize + 1];
    sm.for_each_six(|row, c6| {
        let tail = &row[c6 + 1..];
        let mut pairs = tail.chunks_exact(2);
        for p in &mut pairs {
            hist[p[0] as usize][0] += 1;
            hist[p[1] as usize][1] += 1;
        }
        for &r in pairs.remainder() {
            hist[r as usize][0] += 1;
        }
    });
    hist.iter().map(|h| h[0] + h[1]).collect()
}

/// Benchmark: evaluates all 133,784,560 seven-card hands with the state machine and
/// returns `(hands, sum of ranks)`. Builds the machine first if needed (time it apart).
pub fn bench_enumerate_all() -> (u64, u64) {
    let sm = HandStateMachine::get();
    let mut hands = 0u64;
    let mut checksum = 0u64;
    sm.for_each_six(|row, c6| {
        let tail = &row[c6 + 1..];
        hands += tail.len() as u64;
        checksum += tail.iter().map(|&r| r as u64).sum::<u64>();
    });
    (hands, checksum)
}

/// `n` uniformly random seven-card hands (distinct cards within each hand).
pub fn random_hands(n: usize, seed: u64) -> Vec<[u8; 7]> {
    let mut rng = crate::util::SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let mut used = 0u64;
            let mut hand = [0u8; 7];
            for slot in hand.iter_mut() {
                loop {
                    let c = rng.below(52) as u8;
                    if used >> c & 1 == 0 {
                        used |= 1 << c;
                        *slot = c;
                        break;
                    }
                }
            }
            hand
        })
        .collect()
}

/// Benchmark: evaluates `n` random seven-card hands with [`evaluate7`] and returns the
/// sum of their ranks. The hands come from a pool of `min(n, 2^20)` hands drawn first
/// (so that mostly evaluation is timed) and reused cyclically.
pub fn bench_random(n: usize, seed: u64) -> u64 {
    let pool = random_hands(n.min(1 << 20), seed);
    let _ = rank_tables();
    let mut checksum = 0u64;
    let mut left = n;
    while left > 0 {
        let take = left.min(pool.len());
        for hand in &pool[..take] {
            checksum += evaluate7(hand) as u64;
        }
        left -= take;
    }
    checksum
}

// ---------------------------------------------------------------------------------------
// Showdowns against a range.
// ---------------------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::cards::parse_cards;
    use crate::util::SplitMix64;

    fn ev(s: &str) -> u16 {
        evaluate(&parse_cards(s).unwrap())
    }

    #[test]
    fn five_card_class_counts() {
        let mut counts = [0u64; 9];
        let mut seen = vec![false; NUM_HAND_RANKS as usize + 1];
        for a in 0..52u8 {
            for b in a + 1..52 {
                for c in b + 1..52 {
                    for d in c + 1..52 {
                        for e in d + 1..52 {
                            let r = evaluate5(&[a, b, c, d, e]);
                            counts[category(r) as usize] += 1;
                            seen[r as usize] = true;
                        }
                    }
                }
            }
        }
        assert_eq!(
            counts,
            [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]
        );
        assert!(!seen[0]);
        assert!(seen[1..].iter().all(|&s| s));
    }

    #[test]
    fn known_hands() {
        assert_eq!(ev("7c5d4h3s2c"), 1);
        assert_eq!(ev("AsKsQsJsTs"), 7462);
        assert_eq!(category(ev("AsKsQsJsTs")), HandCategory::StraightFlush);
        // Wheel is the lowest straight, steel wheel the lowest straight flush.
        assert_eq!(ev("Ac2d3h4s5c"), HandCategory::Straight.min_rank());
        assert!(ev("Ac2d3h4s5c") < ev("2c3d4h5s6c"));
        assert_eq!(ev("Ah2h3h4h5h"), HandCategory::StraightFlush.min_rank());
        assert!(ev("Ah2h3h4h5h") > ev("AhKhQhJh9h"));
        assert_eq!(ev("AhKhQhJh9h"), HandCategory::Flush.max_rank());
        // Not a straight: K-A-2-3-4.
        assert_eq!(category(ev("Kc As 2d 3h 4s")), HandCategory::HighCard);
        // Kickers.
        assert!(ev("AcAd Kh Qs 9c") > ev("AhAs Kc Qd 8c"));
        assert_eq!(ev("AcAd Kh Qs 9c"), ev("AhAs Kc Qd 9d"));
        assert!(ev("KcKd 2h 2s Ac") > ev("KhKs 2c 2d Qc"));
        assert!(ev("7c7d7h As Kc") > ev("7c7d7h As Qc"));
        assert!(ev("2c2d2h3s3c") > ev("AcAdKhKsQc QdJs"));
        assert!(ev("3c3d3h2s2c") > ev("2c2d2h As Ac"));
        // Seven cards: best five; the sixth and seventh card do not play.
        assert_eq!(ev("AsKs 2c3d 4h 5s 9c"), ev("2c3d4h5sAd"));
        assert_eq!(ev("AcAd KcKd QcQd Jh"), ev("AcAdKcKdQh"));
        assert_eq!(category(ev("Ac Kc 9c 5c 2c 2d 2h")), HandCategory::Flush);
        assert_eq!(
            category(ev("2c 2d 2h 3c 3d 3h 9s")),
            HandCategory::FullHouse
        );
        for cat in HandCategory::ALL {
            assert_eq!(category(cat.min_rank()), cat);
            assert_eq!(category(cat.max_rank()), cat);
        }
    }

    fn random_cards<const N: usize>(rng: &mut SplitMix64) -> [u8; N] {
        let mut used = 0u64;
        let mut out = [0u8; N];
        for slot in out.iter_mut() {
            loop {
                let c = rng.below(52) as u8;
                if used >> c & 1 == 0 {
                    used |= 1 << c;
                    *slot = c;
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn five_card_class_counts_reference() {
        let mut counts = [0u64; 9];
        for a in 0..52u8 {
            for b in a + 1..52 {
                for c in b + 1..52 {
                    for d in c + 1..52 {
                        for e in d + 1..52 {
                            let r = evaluate_simple(&[a, b, c, d, e]);
                            counts[category(r) as usize] += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(
            counts,
            [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]
        );
    }

    #[test]
    fn fast_matches_reference_on_random_hands() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..300_000 {
            let h: [u8; 7] = random_cards(&mut rng);
            let r = evaluate7(&h);
            assert_eq!(r, evaluate_simple(&h), "{h:?}");
            assert_eq!(r, evaluate(&h));
            assert_eq!(r, HandKey::from_cards(&h).rank());
        }
        for _ in 0..50_000 {
            let h: [u8; 6] = random_cards(&mut rng);
            assert_eq!(evaluate6(&h), evaluate_simple(&h), "{h:?}");
            let h: [u8; 5] = random_cards(&mut rng);
            assert_eq!(evaluate5(&h), evaluate_simple(&h), "{h:?}");
        }
    }

    #[test]
    fn state_machine_matches_fast_path() {
        let sm = HandStateMachine::get();
        let mut rng = SplitMix64::new(11);
        for _ in 0..200_000 {
            let h: [u8; 7] = random_cards(&mut rng);
            let mut s = HandStateMachine::ROOT;
            for &c in &h[..6] {
                s = sm.step(s, c);
            }
            assert_eq!(sm.rank7(s, h[6]), evaluate7(&h), "{h:?}");
        }
        assert_eq!(sm.states_per_level()[0], 1);
        assert_eq!(sm.states_per_level()[1], 52);
        assert_eq!(sm.states_per_level()[2], 1326);
    }

    fn brute_force_showdown(board: &[u8; 5], opp: &[f64]) -> Vec<f64> {
        let board_mask = CardSet::from_cards(board).0;
        let ranks: Vec<u16> = HOLE_CARDS
            .iter()
            .map(|&(a, b)| {
                let m = CardSet::from_cards(&[a, b]).0;
                if m & board_mask != 0 {
                    0
                } else {
                    let mut cards = [0u8; 7];
                    cards[..5].copy_from_slice(board);
                    cards[5] = a;
                    cards[6] = b;
                    evaluate_simple(&cards)
                }
            })
            .collect();
        (0..NUM_HOLE_HANDS)
            .map(|h| {
                if ranks[h] == 0 {
                    return 0.0;
                }
                let mut v = 0.0;
                for o in 0..NUM_HOLE_HANDS {
                    if ranks[o] == 0 || HOLE_MASKS[h] & HOLE_MASKS[o] != 0 {
                        continue;
                    }
                    v += opp[o] * (ranks[h].cmp(&ranks[o]) as i32 as f64);
                }
                v
            })
            .collect()
    }

    #[test]
    fn showdown_values_match_brute_force() {
        let mut rng = SplitMix64::new(3);
        let mut boards: Vec<[u8; 5]> = (0..12).map(|_| random_cards(&mut rng)).collect();
        // Boards with many ties: a board straight flush, board quads, a board full house.
        boards.push([48, 44, 40, 36, 32].map(|c| c + 2)); // Ah Kh Qh Jh Th
        boards.push(parse_cards("7c7d7h7s2c").unwrap().try_into().unwrap());
        boards.push(parse_cards("7c7d7h2s2c").unwrap().try_into().unwrap());
        for (i, board) in boards.iter().enumerate() {
            let sd = BoardShowdown::new(board);
            assert_eq!(sd.order().len(), 1081);
            let opp: Vec<f64> = (0..NUM_HOLE_HANDS)
                .map(|h| {
                    let x = rng.next_f64();
                    // Some exact zeros, and (for odd boards) mass on colliding hands,
                    // which must be ignored.
                    if x < 0.2 || (i % 2 == 0 && HOLE_MASKS[h] & CardSet::from_cards(board).0 != 0)
                    {
                        0.0
                    } else {
                        x / 1000.0
                    }
                })
                .collect();
            let fast = sd.values(&opp);
            let slow = brute_force_showdown(board, &opp);
            for h in 0..NUM_HOLE_HANDS {
                assert!(
                    (fast[h] - slow[h]).abs() < 1e-9,
                    "board {board:?} hand {h}: {} vs {}",
                    fast[h],
                    slow[h]
                );
            }
            assert_eq!(showdown_values(board, &opp), fast);
            let mass = sd.compatible_mass(&opp);
            for h in (0..NUM_HOLE_HANDS).step_by(37) {
                if sd.ranks()[h] == 0 {
                    continue;
                }
                let m: f64 = (0..NUM_HOLE_HANDS)
                    .filter(|&o| sd.ranks()[o] != 0 && HOLE_MASKS[o] & HOLE_MASKS[h] == 0)
                    .map(|o| opp[o])
                    .sum();
                assert!((mass[h] - m).abs() < 1e-9);
            }
        }
    }

    /// The known numbers of seven-card hands per category, by full enumeration; plus an
    /// exhaustive check that the state machine and [`evaluate7`] agree on every hand.
    /// Runs in release builds (`cargo test --release`).
    #[test]
    #[cfg_attr(debug_assertions, ignore)]
    fn seven_card_category_counts() {
        assert_eq!(
            category_counts_7card(),
            [
                23_294_460, 58_627_800, 31_433_400, 6_461_620, 6_180_020, 4_047_644, 3_473_184,
                224_848, 41_584
            ]
        );
        let (hands, checksum) = bench_enumerate_all();
        assert_eq!(hands, NUM_SEVEN_CARD_HANDS);
        let hist = rank_histogram_7card();
        let sum: u64 = hist.iter().enumerate().map(|(r, &n)| r as u64 * n).sum();
        assert_eq!(sum, checksum);
        // Every 7-card hand: state machine == rank-key evaluator.
        let sm = HandStateMachine::get();
        let mut mismatches = 0u64;
        for c1 in 0..46u8 {
            let (s1, k1) = (sm.step(HandStateMachine::ROOT, c1), HandKey::EMPTY.with(c1));
            for c2 in c1 + 1..47 {
                let (s2, k2) = (sm.step(s1, c2), k1.with(c2));
                for c3 in c2 + 1..48 {
                    let (s3, k3) = (sm.step(s2, c3), k2.with(c3));
                    for c4 in c3 + 1..49 {
                        let (s4, k4) = (sm.step(s3, c4), k3.with(c4));
                        for c5 in c4 + 1..50 {
                            let (s5, k5) = (sm.step(s4, c5), k4.with(c5));
                            for c6 in c5 + 1..51 {
                                let (s6, k6) = (sm.step(s5, c6), k5.with(c6));
                                let row = sm.rank7_row(s6);
                                for c7 in c6 + 1..52 {
                                    mismatches += (row[c7 as usize] != k6.with(c7).rank()) as u64;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(mismatches, 0);
    }

    /// Prints timings; run with `cargo test --release --lib games::hand_eval -- --nocapture`.
    #[test]
    #[cfg_attr(debug_assertions, ignore)]
    fn timings() {
        use std::time::Instant;
        let t = Instant::now();
        let _ = rank_tables();
        let t_tables = t.elapsed();
        let t = Instant::now();
        let sm = HandStateMachine::get();
        let t_machine = t.elapsed();
        println!(
            "tables: rank-key {:.3} s; state machine {:.3} s, {:.1} MB, states per level {:?}",
            t_tables.as_secs_f64(),
            t_machine.as_secs_f64(),
            sm.memory_bytes() as f64 / 1e6,
            sm.states_per_level()
        );
        let t = Instant::now();
        let (hands, checksum) = bench_enumerate_all();
        let dt = t.elapsed().as_secs_f64();
        println!(
            "enumerate all (sum of ranks): {hands} hands in {dt:.3} s = {:.0} M/s (checksum {checksum})",
            hands as f64 / dt / 1e6
        );
        let t = Instant::now();
        let counts = category_counts_7card();
        let dt = t.elapsed().as_secs_f64();
        println!(
            "enumerate all (rank histogram): {:.3} s = {:.0} M/s {counts:?}",
            dt,
            NUM_SEVEN_CARD_HANDS as f64 / dt / 1e6
        );
        let n = 50_000_000;
        let t = Instant::now();
        let pool = random_hands(1 << 20, 5);
        let t_pool = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let checksum = bench_random(n, 5);
        let dt = t.elapsed().as_secs_f64() - t_pool;
        println!(
            "random evaluate7: {n} hands in {dt:.3} s = {:.0} M/s (checksum {checksum})",
            n as f64 / dt / 1e6
        );
        let t = Instant::now();
        let mut s = 0u64;
        for h in &pool {
            s += evaluate_simple(h) as u64;
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "reference evaluator: {:.2} M/s ({s})",
            pool.len() as f64 / dt / 1e6
        );
        let boards: Vec<[u8; 5]> = (0..1000)
            .map(|i| pool[i][..5].try_into().unwrap())
            .collect();
        let opp = vec![1.0 / 1326.0; NUM_HOLE_HANDS];
        let mut out = vec![0.0; NUM_HOLE_HANDS];
        let t = Instant::now();
        for b in &boards {
            BoardShowdown::new(b).values_into(&opp, &mut out);
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "showdown (new board + values): {:.1} us each",
            dt / 1000.0 * 1e6
        );
        let sd = BoardShowdown::new(&boards[0]);
        let t = Instant::now();
        for _ in 0..10_000 {
            sd.values_into(&opp, &mut out);
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "showdown values on a prepared board: {:.2} us each",
            dt / 10_000.0 * 1e6
        );
    }
}
