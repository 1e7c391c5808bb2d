//! Seeded random playouts of the FCPA game, for benchmarks against pyspiel: through the
//! concrete state's bit masks ([`random_playouts`]) and through the `Box<dyn State>` API
//! ([`random_playouts_dyn`]).

use super::UniversalPokerGame;
use crate::game::{Action, Game, Turn};
use crate::util::SplitMix64;

/// `SELECT_IN_BYTE[b][k]`: position of the `k`-th set bit of byte `b`.
static SELECT_IN_BYTE: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 == 1 {
                t[b][k] = i as u8;
                k += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// Index of the `k`-th (from 0) set bit of `m`, which must have more than `k` set bits.
/// Branch-free apart from the table look-up: byte popcounts, their prefix sums, the first
/// byte whose prefix exceeds `k`, then a select within that byte.
#[inline]
pub(super) fn select_bit(m: u64, k: u32) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut c = m - ((m >> 1) & 0x5555_5555_5555_5555);
    c = (c & 0x3333_3333_3333_3333) + ((c >> 2) & 0x3333_3333_3333_3333);
    c = (c + (c >> 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // Byte i of `prefix` counts the set bits in bytes 0..=i (at most 64, so no carries).
    let prefix = c.wrapping_mul(ONES);
    // High bit of byte i set iff prefix_i > k.
    let over = ((prefix | HIGHS) - ONES * (k as u64 + 1)) & HIGHS;
    let byte = over.trailing_zeros() / 8;
    let before = ((prefix << 8) >> (8 * byte)) as u8 as u32;
    let bits = (m >> (8 * byte)) as u8;
    8 * byte + SELECT_IN_BYTE[bits as usize][(k - before) as usize] as u32
}

/// Plays `n` uniformly random FCPA hands (chance by its probabilities, players uniform over
/// legal actions) with a seeded generator and returns a checksum of the histories and
/// returns; for benchmarks against pyspiel. Uses the concrete state's fast paths.
pub fn random_playouts(n: usize, seed: u64) -> u64 {
    let game = UniversalPokerGame::hunl_fcpa();
    let mut rng = SplitMix64::new(seed);
    let mut state = game.initial_state();
    let mut checksum = 0u64;
    for _ in 0..n {
        state.reset();
        loop {
            let action = match state.core.turn {
                Turn::Terminal => break,
                Turn::Chance => {
                    let m = state.core.deck;
                    select_bit(m, rng.below(m.count_ones() as usize) as u32) as Action
                }
                Turn::Player(_) => {
                    let m = state.core.legal as u64;
                    select_bit(m, rng.below(m.count_ones() as usize) as u32) as Action
                }
            };
            state.apply(action);
        }
        let r = state.core.returns[0] as i64 as u64;
        checksum = checksum
            .rotate_left(7)
            .wrapping_add(r ^ (state.history.len as u64) << 32);
    }
    checksum
}

/// Like [`random_playouts`] but through the generic `Box<dyn State>` API (vectors of legal
/// actions and chance outcomes), to measure what algorithms written against the trait see.
pub fn random_playouts_dyn(n: usize, seed: u64) -> u64 {
    let game = UniversalPokerGame::hunl_fcpa();
    let mut rng = SplitMix64::new(seed);
    let mut checksum = 0u64;
    for _ in 0..n {
        let mut state = game.new_initial_state();
        loop {
            let action = match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    let outcomes = state.chance_outcomes();
                    outcomes[rng.below(outcomes.len())].0
                }
                Turn::Player(_) => {
                    let legal = state.legal_actions();
                    legal[rng.below(legal.len())]
                }
            };
            state.apply_action(action);
        }
        let r = state.returns()[0] as i64 as u64;
        checksum = checksum
            .rotate_left(7)
            .wrapping_add(r ^ (state.history().len() as u64) << 32);
    }
    checksum
}
