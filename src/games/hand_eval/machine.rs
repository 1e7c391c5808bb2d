//! Enumeration with a card-by-card state machine, and the whole-deck counts and
//! benchmarks built on it.

use super::NUM_HAND_RANKS;
use super::RANK_KEYS;
use super::RankTables;
use super::category;
use super::evaluate7;
use super::rank_tables;
use crate::games::cards::{rank as card_rank, suit as card_suit};
use std::sync::OnceLock;

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

/// The machine, once a build has finished.
static MACHINE: OnceLock<HandStateMachine> = OnceLock::new();

impl HandStateMachine {
    fn build() -> HandStateMachine {
        Self::build_until(&|| false).expect("a build that is never stopped finishes")
    }

    /// [`HandStateMachine::build`], asking `stop` every 4096 states: `None` once it returns
    /// true (the partial tables are dropped).
    fn build_until(stop: &dyn Fn() -> bool) -> Option<HandStateMachine> {
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
            for (i, &st) in cur.iter().enumerate() {
                if i % 4096 == 0 && stop() {
                    return None;
                }
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
        for (i, &st) in sixes.iter().enumerate() {
            if i % 4096 == 0 && stop() {
                return None;
            }
            for c in 0..52u8 {
                last.push(st.child(6, c).map_or(0, |ch| ch.rank7(tables)));
            }
        }
        let mut states_per_level = [0usize; 7];
        for (n, level) in states_per_level.iter_mut().zip(&levels) {
            *n = level.len();
        }
        Some(HandStateMachine {
            next,
            last,
            states_per_level,
        })
    }

    /// The machine, built on first use (about 0.1 GB; a second or two in release).
    pub fn get() -> &'static HandStateMachine {
        MACHINE.get_or_init(HandStateMachine::build)
    }

    /// [`HandStateMachine::get`], with a first build that ends early, giving `None`, once
    /// `stop` returns true (asked every 4096 states; a later call builds again).
    pub fn get_or_stop(stop: &dyn Fn() -> bool) -> Option<&'static HandStateMachine> {
        if let Some(m) = MACHINE.get() {
            return Some(m);
        }
        let built = Self::build_until(stop)?;
        // Another thread may have finished first: either machine is the same.
        Some(MACHINE.get_or_init(|| built))
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
