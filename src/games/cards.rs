//! Playing cards for the Hold'em games: card ids, card sets and the 1326 two-card hands.
//!
//! # Encoding
//!
//! A card is a `u8` id `rank * 4 + suit` (OpenSpiel's `universal_poker` encoding), with
//! rank `0..13` meaning `2, 3, ..., 9, T, J, Q, K, A` and suit `0..4` meaning `c, d, h, s`.
//! So `"2c"` is 0, `"2s"` is 3 and `"As"` is 51.
//!
//! # Two-card hands
//!
//! The 1326 unordered hole-card pairs are numbered lexicographically by `(low, high)` card
//! id: index 0 is `(0, 1)`, index 1 is `(0, 2)`, ..., index 50 is `(0, 51)`, index 51 is
//! `(1, 2)`, ..., index 1325 is `(50, 51)`. This is the order of the natural nested loop
//! `for a in 0..52 { for b in a + 1..52 { ... } }`. [`hole_index`] maps a pair (in either
//! order) to its index, [`HOLE_CARDS`] maps back, and [`HOLE_MASKS`] gives each pair as a
//! [`CardSet`] bitmask for fast collision tests against a board.

/// Number of cards in the deck.
pub const NUM_CARDS: usize = 52;
/// Number of ranks (2 through ace).
pub const NUM_RANKS: usize = 13;
/// Number of suits.
pub const NUM_SUITS: usize = 4;
/// Number of unordered two-card hands, `C(52, 2)`.
pub const NUM_HOLE_HANDS: usize = 1326;

/// Rank characters, indexed by rank.
pub const RANK_CHARS: [char; NUM_RANKS] = [
    '2', '3', '4', '5', '6', '7', '8', '9', 'T', 'J', 'Q', 'K', 'A',
];
/// Suit characters, indexed by suit.
pub const SUIT_CHARS: [char; NUM_SUITS] = ['c', 'd', 'h', 's'];

/// The rank `0..13` (2 = 0, ace = 12) of card `c`.
#[inline(always)]
pub const fn rank(c: u8) -> u8 {
    c >> 2
}

/// The suit `0..4` (c, d, h, s) of card `c`.
#[inline(always)]
pub const fn suit(c: u8) -> u8 {
    c & 3
}

/// The card with the given rank (`0..13`) and suit (`0..4`).
#[inline(always)]
pub const fn make_card(rank: u8, suit: u8) -> u8 {
    rank * 4 + suit
}

/// The two-character name of card `c`, e.g. `"As"`. Panics if `c >= 52`.
pub fn card_to_string(c: u8) -> String {
    assert!((c as usize) < NUM_CARDS, "card id {c} out of range");
    let mut s = String::with_capacity(2);
    s.push(RANK_CHARS[rank(c) as usize]);
    s.push(SUIT_CHARS[suit(c) as usize]);
    s
}

/// Cards concatenated without separators, e.g. `"AsKd"` (the universal_poker style).
pub fn cards_to_string(cards: &[u8]) -> String {
    cards.iter().map(|&c| card_to_string(c)).collect()
}

/// Parses a two-character card name such as `"As"`, `"td"` or `"2C"` (rank and suit are
/// case-insensitive; `"10"` is not accepted, use `"T"`). Returns `None` if malformed.
pub fn parse_card(s: &str) -> Option<u8> {
    let mut chars = s.chars();
    let r = chars.next()?.to_ascii_uppercase();
    let su = chars.next()?.to_ascii_lowercase();
    if chars.next().is_some() {
        return None;
    }
    let r = RANK_CHARS.iter().position(|&x| x == r)? as u8;
    let su = SUIT_CHARS.iter().position(|&x| x == su)? as u8;
    Some(make_card(r, su))
}

/// Parses a run of concatenated card names such as `"AsKd7h"` (whitespace is ignored).
/// Returns `None` if any card is malformed.
pub fn parse_cards(s: &str) -> Option<Vec<u8>> {
    let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    if !chars.len().is_multiple_of(2) {
        return None;
    }
    chars
        .chunks(2)
        .map(|pair| parse_card(&pair.iter().collect::<String>()))
        .collect()
}

/// A set of cards as a 52-bit mask (bit `c` set iff card `c` is in the set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CardSet(pub u64);

impl CardSet {
    /// The empty set.
    pub const EMPTY: CardSet = CardSet(0);
    /// All 52 cards.
    pub const FULL: CardSet = CardSet((1u64 << NUM_CARDS) - 1);

    /// The set holding just card `c`.
    #[inline(always)]
    pub const fn single(c: u8) -> CardSet {
        CardSet(1u64 << c)
    }

    /// The set of the given cards (duplicates collapse).
    pub fn from_cards(cards: &[u8]) -> CardSet {
        CardSet(cards.iter().fold(0u64, |m, &c| m | (1u64 << c)))
    }

    /// Whether card `c` is in the set.
    #[inline(always)]
    pub const fn contains(self, c: u8) -> bool {
        self.0 >> c & 1 != 0
    }

    /// The set with card `c` added.
    #[inline(always)]
    pub const fn with(self, c: u8) -> CardSet {
        CardSet(self.0 | (1u64 << c))
    }

    /// Adds card `c` in place.
    #[inline(always)]
    pub fn insert(&mut self, c: u8) {
        self.0 |= 1u64 << c;
    }

    /// Removes card `c` in place.
    #[inline(always)]
    pub fn remove(&mut self, c: u8) {
        self.0 &= !(1u64 << c);
    }

    /// Number of cards in the set.
    #[inline(always)]
    pub const fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the two sets share a card.
    #[inline(always)]
    pub const fn intersects(self, other: CardSet) -> bool {
        self.0 & other.0 != 0
    }

    /// Set union.
    #[inline(always)]
    pub const fn union(self, other: CardSet) -> CardSet {
        CardSet(self.0 | other.0)
    }

    /// The cards in increasing id order.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        let mut m = self.0;
        std::iter::from_fn(move || {
            if m == 0 {
                None
            } else {
                let c = m.trailing_zeros() as u8;
                m &= m - 1;
                Some(c)
            }
        })
    }

    /// The cards in increasing id order, collected.
    pub fn to_vec(self) -> Vec<u8> {
        self.iter().collect()
    }
}

/// Number of two-card hands whose lower card is less than `a` (the start of row `a`).
const fn row_start(a: usize) -> usize {
    a * (2 * NUM_CARDS - 1 - a) / 2
}

/// The index `0..1326` of the unordered pair `{c1, c2}` (either order; `c1 != c2`, both
/// `< 52`). See the module docs for the ordering.
#[inline(always)]
pub const fn hole_index(c1: u8, c2: u8) -> usize {
    let (a, b) = if c1 < c2 {
        (c1 as usize, c2 as usize)
    } else {
        (c2 as usize, c1 as usize)
    };
    debug_assert!(a != b && b < NUM_CARDS);
    row_start(a) + (b - a - 1)
}

const fn build_hole_cards() -> [(u8, u8); NUM_HOLE_HANDS] {
    let mut out = [(0u8, 0u8); NUM_HOLE_HANDS];
    let mut i = 0;
    let mut a = 0;
    while a < NUM_CARDS {
        let mut b = a + 1;
        while b < NUM_CARDS {
            out[i] = (a as u8, b as u8);
            i += 1;
            b += 1;
        }
        a += 1;
    }
    out
}

const fn build_hole_masks() -> [u64; NUM_HOLE_HANDS] {
    let mut out = [0u64; NUM_HOLE_HANDS];
    let mut i = 0;
    while i < NUM_HOLE_HANDS {
        let (a, b) = HOLE_CARDS[i];
        out[i] = (1u64 << a) | (1u64 << b);
        i += 1;
    }
    out
}

/// The two cards `(low, high)` of each hole-card index (inverse of [`hole_index`]).
pub static HOLE_CARDS: [(u8, u8); NUM_HOLE_HANDS] = build_hole_cards();

/// The two cards of each hole-card index as a raw [`CardSet`] bitmask
/// (`HOLE_MASKS[i] & board.0 != 0` iff hand `i` collides with `board`).
pub static HOLE_MASKS: [u64; NUM_HOLE_HANDS] = build_hole_masks();

/// The two cards of hole-card index `i`, `(low, high)`.
#[inline(always)]
pub fn hole_cards(i: usize) -> (u8, u8) {
    HOLE_CARDS[i]
}

/// The two cards of hole-card index `i` as a [`CardSet`].
#[inline(always)]
pub fn hole_mask(i: usize) -> CardSet {
    CardSet(HOLE_MASKS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_universal_poker() {
        assert_eq!(parse_card("2c"), Some(0));
        assert_eq!(parse_card("2s"), Some(3));
        assert_eq!(parse_card("As"), Some(51));
        assert_eq!(parse_card("Td"), Some(8 * 4 + 1));
        assert_eq!(parse_card("ah"), Some(50));
        assert_eq!(parse_card("1c"), None);
        assert_eq!(parse_card("A"), None);
        assert_eq!(parse_card("Asx"), None);
        assert_eq!(card_to_string(51), "As");
        assert_eq!(card_to_string(0), "2c");
        for c in 0..52u8 {
            assert_eq!(parse_card(&card_to_string(c)), Some(c));
            assert_eq!(make_card(rank(c), suit(c)), c);
        }
        assert_eq!(parse_cards("AsKd 2c"), Some(vec![51, 11 * 4 + 1, 0]));
        assert_eq!(cards_to_string(&[51, 0]), "As2c");
        assert_eq!(parse_cards("AsK"), None);
    }

    #[test]
    fn hole_index_roundtrip() {
        let mut i = 0;
        for a in 0..52u8 {
            for b in a + 1..52u8 {
                assert_eq!(hole_index(a, b), i);
                assert_eq!(hole_index(b, a), i);
                assert_eq!(HOLE_CARDS[i], (a, b));
                assert_eq!(hole_mask(i), CardSet::from_cards(&[a, b]));
                i += 1;
            }
        }
        assert_eq!(i, NUM_HOLE_HANDS);
    }

    #[test]
    fn card_set_ops() {
        let mut s = CardSet::EMPTY;
        assert!(s.is_empty());
        s.insert(5);
        s.insert(51);
        assert_eq!(s.len(), 2);
        assert!(s.contains(51) && !s.contains(4));
        assert_eq!(s.to_vec(), vec![5, 51]);
        assert!(s.intersects(CardSet::single(5)));
        s.remove(5);
        assert_eq!(s, CardSet::single(51));
        assert_eq!(CardSet::FULL.len(), 52);
        assert_eq!(CardSet::EMPTY.with(3).union(CardSet::single(4)).len(), 2);
    }
}
