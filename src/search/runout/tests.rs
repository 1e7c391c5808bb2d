//! Run-out leaf values against a brute force over hand pairs and run-outs.

use super::*;
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::tree::poker::PokerLayout;

/// No-limit FCPA on 12 cards with a flop and a turn: pre-flop all-ins leave four cards to
/// come (495 run-outs), flop all-ins one.
const GAME: &str = "universal_poker(betting=nolimit,numPlayers=2,numRounds=3,blind=100 50,\
    firstPlayer=2 1 1,numSuits=3,numRanks=4,numHoleCards=2,numBoardCards=0 3 1,\
    stack=2000 2000,bettingAbstraction=fcpa)";

/// Values every leaf `n` as `(n + 1) · r_opp`: shows which leaves were passed through.
struct Marker;

impl PokerLeaves for Marker {
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2] {
        let p = layout.num_hands();
        std::array::from_fn(|i| {
            (0..leaves.len() * p)
                .map(|j| f64::from(leaves[j / p] + 1) * ranges[1 - i][j])
                .collect()
        })
    }
}

/// The leaves of `layout` (in [`PokerLayout::leaves`] order): the run-outs and the others.
fn split(layout: &PokerLayout, cfg: &Config) -> (Vec<u32>, Vec<u32>) {
    layout
        .leaves()
        .into_iter()
        .partition(|&n| is_runout(layout, cfg, n))
}

/// `weight · stake · Σ_y r(y) · E[sign(x vs y) | x, y]` by enumerating every run-out of
/// every compatible pair.
fn brute_force(layout: &PokerLayout, cfg: &Config, n: u32, opp: &[f64]) -> Vec<f64> {
    let node = &layout.nodes[n as usize];
    let k = cfg.total_board - node.board.len();
    let stake = node.spent[0].min(node.spent[1]) as f64;
    layout
        .hands
        .iter()
        .zip(&layout.hand_masks)
        .map(|(&(a, b), &xm)| {
            if xm & node.board_mask != 0 {
                return 0.0;
            }
            let mut v = 0.0;
            for ((&(c, d), &ym), &r) in layout.hands.iter().zip(&layout.hand_masks).zip(opp) {
                if ym & (xm | node.board_mask) != 0 {
                    continue;
                }
                let left: Vec<u8> = cfg.deck[..cfg.deck_size]
                    .iter()
                    .copied()
                    .filter(|&e| (xm | ym | node.board_mask) >> e & 1 == 0)
                    .collect();
                let runouts = subsets(&left, k);
                let mut sum = 0.0;
                for s in &runouts {
                    let full: Vec<u8> = node.board.iter().chain(s).copied().collect();
                    let (rx, ry) = (
                        hand_rank(cfg, &[a, b], &full),
                        hand_rank(cfg, &[c, d], &full),
                    );
                    sum += f64::from(i8::from(rx > ry) - i8::from(rx < ry));
                }
                v += r * sum / runouts.len() as f64;
            }
            node.weight * stake * v
        })
        .collect()
}

fn ranges(layout: &PokerLayout, leaves: usize, seed: u64) -> [Vec<f64>; 2] {
    let mut rng = crate::util::SplitMix64::new(seed);
    std::array::from_fn(|_| {
        (0..leaves * layout.num_hands())
            .map(|_| rng.next_f64())
            .collect()
    })
}

/// The pre-flop layout and one rooted at a flop after both players checked pre-flop.
fn layouts() -> (Config, Vec<PokerLayout>) {
    let game = UniversalPokerGame::from_string(GAME).unwrap();
    let cfg = game.config().clone();
    let root = game.initial_state();
    let mut flop: UniversalPokerState = root.clone();
    for c in [0u8, 1, 2, 3] {
        flop.apply(cfg.outcome_of(4 * c).unwrap());
    }
    flop.apply(1);
    flop.apply(1);
    for c in [5u8, 6, 9] {
        flop.apply(cfg.outcome_of(c).unwrap());
    }
    let layouts = [root, flop]
        .iter()
        .map(|s| PokerLayout::from_state_limited(s, 100_000, true).unwrap())
        .collect();
    (cfg, layouts)
}

/// Checks the layouts numbered `which` (0: pre-flop, 1: flop): run-out leaves against the
/// brute force (`exact`: to rounding; else sampled, near it), the others passed through.
fn check(boards: usize, exact: bool, which: &[usize]) -> f64 {
    let (cfg, layouts) = layouts();
    let mut worst = 0.0f64;
    for layout in which.iter().map(|&w| &layouts[w]) {
        let (runouts, others) = split(layout, &cfg);
        assert!(
            !runouts.is_empty(),
            "every root here can be followed by an all-in call"
        );
        let leaves = layout.leaves();
        let mut cache = RunoutCache::new(boards);
        let mut eval = RunoutLeaves::new(layout, &cfg, &mut cache, |inner| {
            assert_eq!(inner, others, "the inner evaluator gets the other leaves");
            Ok::<_, ()>(Box::new(Marker) as Box<dyn PokerLeaves>)
        })
        .unwrap();
        assert_eq!(eval.num_runouts(), runouts.len());
        let r = ranges(layout, leaves.len(), 7);
        let got = eval.evaluate(layout, &leaves, [&r[0], &r[1]]);
        let p = layout.num_hands();
        let (mut gap, mut scale) = (0.0f64, 0.0f64);
        for (k, &n) in leaves.iter().enumerate() {
            for i in 0..2 {
                let opp = &r[1 - i][k * p..(k + 1) * p];
                let want: Vec<f64> = if others.contains(&n) {
                    opp.iter().map(|&y| f64::from(n + 1) * y).collect()
                } else {
                    brute_force(layout, &cfg, n, opp)
                };
                for (g, w) in got[i][k * p..(k + 1) * p].iter().zip(&want) {
                    if others.contains(&n) {
                        assert_eq!(g, w, "leaf {n} goes to the inner evaluator unchanged");
                    } else {
                        gap += (g - w).abs();
                        scale += w.abs();
                    }
                }
            }
        }
        assert!(scale > 0.0);
        if exact {
            assert!(gap <= 1e-9 * scale, "exact run-outs: gap {gap} of {scale}");
        } else {
            assert!(
                gap > 1e-6 * scale,
                "sampled run-outs differ from the exact mean"
            );
        }
        worst = worst.max(gap / scale);
    }
    worst
}

#[test]
fn enumerated_runouts_equal_the_brute_force_mean() {
    check(1_000, true, &[0, 1]);
}

#[test]
fn sampled_runouts_approximate_the_mean() {
    // The pre-flop leaves have 495 run-outs: 40 and 400 of them are drawn. A pair of hands
    // meets 70 of the 495, so 400 draws give it about 57 and 40 draws about 6.
    let (cfg, layouts) = layouts();
    let pre = &layouts[0];
    let n = split(pre, &cfg).0[0];
    let k = cfg.total_board - pre.nodes[n as usize].board.len();
    assert_eq!(choose(cfg.deck_size, k), 495.0);
    let few = check(40, false, &[0]);
    let many = check(400, false, &[0]);
    assert!(many < 0.25, "400 of 495 run-outs: relative gap {many}");
    assert!(
        many < few,
        "more run-outs, closer to the mean: {many} against {few}"
    );
}

/// A cached board gives the values of a freshly built one, and the cache keeps each board
/// once and at most [`CACHED_BOARDS`] of them.
#[test]
fn cached_runouts_equal_fresh_ones_and_the_cache_is_bounded() {
    let (cfg, layouts) = layouts();
    let values = |layout: &PokerLayout, cache: &mut RunoutCache| {
        let leaves = layout.leaves();
        let mut eval = RunoutLeaves::new(layout, &cfg, cache, |_| {
            Ok::<_, ()>(Box::new(Marker) as Box<dyn PokerLeaves>)
        })
        .unwrap();
        let r = ranges(layout, leaves.len(), 3);
        eval.evaluate(layout, &leaves, [&r[0], &r[1]])
    };
    let mut cache = RunoutCache::new(40);
    assert!(cache.is_empty());
    let first = values(&layouts[0], &mut cache);
    assert_eq!(cache.len(), 1, "the pre-flop leaves share the empty board");
    let again = values(&layouts[0], &mut cache);
    assert_eq!(cache.len(), 1, "the second search reuses the board");
    assert_eq!(first, again);
    let fresh = values(&layouts[0], &mut RunoutCache::new(40));
    assert_eq!(first, fresh, "a cached board values as a fresh one");
    values(&layouts[1], &mut cache);
    assert_eq!(cache.len(), 2, "the flop's all-in leaves add their board");
    // Boards of every flop: more than the cache keeps.
    let deck = &cfg.deck[..cfg.deck_size];
    let mut boards = 0;
    for flop in subsets(deck, 3).into_iter().take(CACHED_BOARDS + 4) {
        cache.get(&layouts[1], &cfg, &flop);
        boards += 1;
        assert!(cache.len() <= CACHED_BOARDS);
    }
    assert_eq!(boards, CACHED_BOARDS + 4);
    assert_eq!(cache.len(), CACHED_BOARDS);
}

/// One player's values are that player's part of both players' values.
#[test]
fn one_players_values_are_its_part_of_both() {
    let (cfg, layouts) = layouts();
    for layout in &layouts {
        let leaves = layout.leaves();
        let mut eval = RunoutLeaves::new(layout, &cfg, &mut RunoutCache::new(30), |_| {
            Ok::<_, ()>(Box::new(Marker) as Box<dyn PokerLeaves>)
        })
        .unwrap();
        let r = ranges(layout, leaves.len(), 5);
        let both = eval.evaluate(layout, &leaves, [&r[0], &r[1]]);
        for (p, want) in both.iter().enumerate() {
            let got = eval.evaluate_player(layout, &leaves, [&r[0], &r[1]], p);
            assert_eq!(&got, want, "player {p}");
        }
    }
}

/// Several ranges in one walk add what one sweep per range gives, with ties and impossible
/// hands.
#[test]
fn one_walk_for_several_ranges_adds_each_ranges_sweep() {
    let deck: Vec<u8> = (0..12).collect();
    let hands: Vec<(u8, u8)> = subsets(&deck, 2).iter().map(|h| (h[0], h[1])).collect();
    let n = hands.len();
    let mut rng = crate::util::SplitMix64::new(9);
    // Few strengths: many ties.
    let strength: Vec<u16> = (0..n).map(|_| rng.below(7) as u16).collect();
    let sweep = HandSweep::new(&hands, 1 << 3 | 1 << 8, Some(&strength));
    let k = 5;
    let opp: Vec<f64> = (0..n * k).map(|_| rng.next_f64()).collect();
    let start: Vec<f64> = (0..n * k).map(|_| rng.next_f64()).collect();
    let mut acc = start.clone();
    let mut scratch = Vec::new();
    sweep.showdown_add_many(&opp, k, &mut acc, &mut scratch);
    let mut one = vec![0.0; n];
    for j in 0..k {
        let r: Vec<f64> = (0..n).map(|x| opp[x * k + j]).collect();
        sweep.showdown_into(&r, &mut one);
        for x in 0..n {
            let want = start[x * k + j] + one[x];
            let got = acc[x * k + j];
            assert!(
                (got - want).abs() <= 1e-12,
                "range {j} hand {x}: {got} against {want}"
            );
            if !sweep.possible(x) {
                assert_eq!(got, start[x * k + j], "an impossible hand gets nothing");
            }
        }
    }
}
