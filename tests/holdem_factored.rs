//! The factored Hold'em layout: CFR on [`PokerLayout`] — one range over the
//! 45 hole-card hands per player and node, terminals through sorted prefix sums with card
//! removal, no joint slots — equals the tabular solver on the whole compiled game tree
//! (5.6M histories, one infoset per OpenSpiel infostate) iterate for iterate.

use armac::cfr::{SolverSpec, TabularSolver, Updates};
use armac::game::State;
use armac::games::universal_poker::UniversalPokerGame;
use armac::nn::public::factored::{FactoredCfr, FactoredError};
use armac::tree::poker::{PokerEdge, PokerKind, PokerLayout};
use armac::tree::{PublicTree, TreeOptions, TreePolicy};
use std::sync::Arc;
use std::time::Instant;

#[path = "common/holdem_rows.rs"]
mod holdem_rows;
use holdem_rows::{Row, TINY, map_rows};

/// Largest difference between the factored rows and the tree policy.
fn policy_gap(
    rows: &[Row],
    layout: &PokerLayout,
    factored: &[Vec<f64>; 2],
    tree: &PublicTree,
    policy: &TreePolicy,
) -> f64 {
    let np = layout.num_hands();
    let mut gap: f64 = 0.0;
    for r in rows {
        let inf = &tree.infosets[r.player];
        for (k, g) in inf.range(r.infoset).enumerate() {
            let f = factored[r.player][r.entry + k * np];
            gap = gap.max((f - policy[r.player][g]).abs());
        }
    }
    gap
}

fn tabular_root_value(tree: &PublicTree, policy: &TreePolicy) -> f64 {
    let mut r = [
        vec![0.0; tree.num_sequences(0)],
        vec![0.0; tree.num_sequences(1)],
    ];
    for p in 0..2 {
        tree.reach(p, &policy[p], &mut r[p]);
    }
    tree.expected_value(&r[0], &r[1])
}

#[test]
fn factored_cfr_equals_tabular_cfr_on_tiny_holdem() {
    let game = UniversalPokerGame::from_string(TINY).unwrap();
    let t0 = Instant::now();
    let tree = Arc::new(
        PublicTree::build_with_options(
            &game,
            TreeOptions {
                merge_chance: true,
                ..TreeOptions::default()
            },
        )
        .unwrap(),
    );
    let t_tree = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let layout = Arc::new(PokerLayout::from_state(&game.initial_state(), 100_000).unwrap());
    let t_layout = t0.elapsed().as_secs_f64();
    // Root, p0's check, 120 flops with 9 betting nodes each, p1's fold.
    assert_eq!(layout.num_hands(), 45);
    let rows = map_rows(&game, &layout, &tree);
    eprintln!(
        "tree: {} histories, {:?} infosets ({t_tree:.1} s); layout: {} nodes x {} hands ({t_layout:.3} s), {} rows",
        tree.stats.histories,
        tree.num_infosets(),
        layout.len(),
        layout.num_hands(),
        rows.len()
    );
    let specs = [
        ("cfr", SolverSpec::named("cfr").unwrap(), 40),
        ("cfr+", SolverSpec::named("cfr+").unwrap(), 40),
        (
            "dcfr simultaneous",
            SolverSpec::named("dcfr")
                .unwrap()
                .with_updates(Updates::Simultaneous),
            10,
        ),
    ];
    for (name, spec, iters) in specs {
        let mut tab = TabularSolver::new(tree.clone(), spec);
        let mut fac = FactoredCfr::new(layout.clone(), spec, None).unwrap();
        let (mut t_tab, mut t_fac) = (0.0, 0.0);
        let mut worst = [0.0f64; 3];
        for it in 1..=iters {
            let t0 = Instant::now();
            tab.iterate();
            t_tab += t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            fac.iterate();
            t_fac += t0.elapsed().as_secs_f64();
            let cur = [fac.current(0).to_vec(), fac.current(1).to_vec()];
            let avg = [fac.average(0), fac.average(1)];
            let gaps = [
                policy_gap(&rows, &layout, &cur, &tree, tab.current_policy()),
                policy_gap(&rows, &layout, &avg, &tree, &tab.average_policy()),
                (fac.root_value() - tabular_root_value(&tree, tab.current_policy())).abs(),
            ];
            for (w, g) in worst.iter_mut().zip(gaps) {
                *w = w.max(g);
            }
            assert!(
                gaps.iter().all(|&g| g <= 1e-6),
                "{name} iteration {it}: current, average, root value gaps {gaps:?}"
            );
        }
        eprintln!(
            "{name}: {iters} iterations, largest gaps: current {:.1e}, average {:.1e}, root value {:.1e}; \
             tabular {:.1} ms/it, factored {:.2} ms/it",
            worst[0],
            worst[1],
            worst[2],
            1e3 * t_tab / iters as f64,
            1e3 * t_fac / iters as f64
        );
    }
}

#[test]
fn factored_subgame_from_a_flop_state_uses_card_removal_and_given_ranges() {
    let game = UniversalPokerGame::from_string(TINY).unwrap();
    let whole = Arc::new(PokerLayout::from_state(&game.initial_state(), 100_000).unwrap());
    // A flop state: holes dealt, p1 calls, p0 checks, flop dealt.
    let mut s = game.initial_state();
    for o in 0..4 {
        s.apply(o);
    }
    s.apply(1);
    s.apply(1);
    for o in 4..7 {
        s.apply(o);
    }
    let sub = Arc::new(PokerLayout::from_state(&s, 100_000).unwrap());
    let board: Vec<u8> = s.board_cards().to_vec();
    let flop = (0..whole.len())
        .find(|&n| {
            let mut b = whole.nodes[n].board.clone();
            let mut want = board.clone();
            b.sort_unstable();
            want.sort_unstable();
            b == want && matches!(whole.nodes[n].kind, PokerKind::Decision(_))
        })
        .expect("the flop node of the whole layout");
    assert_eq!(sub.nodes[0].kind, whole.nodes[flop].kind);
    assert_eq!(sub.len(), 1 + count_below(&whole, flop));
    // Hands holding a flop card are impossible at the subgame root.
    let impossible = (0..sub.num_hands())
        .filter(|&x| !sub.possible(0, x))
        .count();
    assert_eq!(impossible, 45 - 21); // C(7, 2) hands avoid the 3 board cards
    // Uniform strategies: the whole hand's reaches at the flop node, given to the subgame as
    // root ranges, give the whole hand's values there, scaled by the ratio of the weights
    // (one compatible deal from the flop on, against one from the start of the hand).
    let spec = SolverSpec::named("cfr+").unwrap();
    let mut full = FactoredCfr::new(whole.clone(), spec, None).unwrap();
    let ranges = [full.node_reach(0, flop), full.node_reach(1, flop)];
    let mut part = FactoredCfr::new(sub.clone(), spec, Some(ranges)).unwrap();
    let ratio = whole.nodes[flop].weight / sub.nodes[0].weight;
    assert!((ratio * 120.0 - 1.0).abs() < 1e-12);
    for p in 0..2 {
        let (a, b) = (full.node_cfvs(p, flop), part.root_cfvs(p));
        let gap = a
            .iter()
            .zip(&b)
            .map(|(a, b)| (a - b * ratio).abs())
            .fold(0.0, f64::max);
        assert!(gap < 1e-12, "player {p}: gap {gap}");
        assert!(a.iter().any(|v| v.abs() > 1e-6));
        for x in (0..np_of(&sub)).filter(|&x| !sub.possible(0, x)) {
            assert_eq!(b[x], 0.0, "impossible hand {x} has a value");
        }
    }
    // The subgame solves on its own.
    for _ in 0..20 {
        part.iterate();
    }
    assert!(part.root_value().is_finite());
    // Errors: wrong length, negative entries, no mass where possible.
    let np = sub.num_hands();
    let bad = |r: [Vec<f64>; 2]| FactoredCfr::new(sub.clone(), spec, Some(r)).err().unwrap();
    assert_eq!(
        bad([vec![1.0; 3], vec![1.0; np]]),
        FactoredError::RangeLength {
            player: 0,
            got: 3,
            want: np
        }
    );
    let mut neg = vec![1.0; np];
    neg[7] = -1.0;
    assert!(matches!(
        bad([vec![1.0; np], neg]),
        FactoredError::RangeEntry {
            player: 1,
            hand: 7,
            ..
        }
    ));
    let only_impossible: Vec<f64> = (0..np)
        .map(|x| f64::from(u8::from(!sub.possible(0, x))))
        .collect();
    assert_eq!(
        bad([only_impossible, vec![1.0; np]]),
        FactoredError::RangeEmpty { player: 0 }
    );
    let err = bad([vec![f64::NAN; np], vec![1.0; np]]).to_string();
    assert!(
        err.contains("player 0's root range entry 0 is NaN"),
        "{err}"
    );
}

fn count_below(l: &PokerLayout, n: usize) -> usize {
    l.children(n).map(|c| 1 + count_below(l, c)).sum()
}

fn np_of(l: &PokerLayout) -> usize {
    l.num_hands()
}

/// Plays chance outcomes (card names) and actions (ids) from the root of `game`.
fn play(
    game: &UniversalPokerGame,
    moves: &[&str],
) -> armac::games::universal_poker::UniversalPokerState {
    let mut s = game.initial_state();
    for m in moves {
        let a = match armac::games::cards::parse_card(m) {
            Some(c) if s.turn() == armac::game::Turn::Chance => {
                game.config().outcome_of(c).unwrap()
            }
            _ => m.parse::<usize>().unwrap(),
        };
        s.apply(a);
    }
    s
}

#[test]
fn hunl_fcpa_river_and_turn_subgames_use_1326_hands_without_joint_slots() {
    let game = UniversalPokerGame::hunl_fcpa();
    // Limped preflop, checked flop and turn: a river subgame.
    let pre = [
        "As", "Ks", "7c", "2d", "1", "1", "Th", "4c", "9d", "1", "1", "Qh",
    ];
    let turn = play(&game, &pre);
    let mut river_moves = pre.to_vec();
    river_moves.extend(["1", "1", "3s"]);
    let river = play(&game, &river_moves);
    let t0 = Instant::now();
    let layout = Arc::new(PokerLayout::from_state(&river, 100_000).unwrap());
    let t_build = t0.elapsed().as_secs_f64();
    assert_eq!(layout.num_hands(), 1326);
    assert!(layout.nodes.iter().all(|n| n.kind != PokerKind::Chance));
    let possible = (0..1326).filter(|&x| layout.possible(0, x)).count();
    assert_eq!(possible, 1081, "C(47, 2) hands avoid a 5-card board");
    let spec = SolverSpec::named("cfr+").unwrap();
    let mut solver = FactoredCfr::new(layout.clone(), spec, None).unwrap();
    let t0 = Instant::now();
    let iters = 50;
    for _ in 0..iters {
        solver.iterate();
    }
    let ms = 1e3 * t0.elapsed().as_secs_f64() / iters as f64;
    let v = solver.root_value();
    // Equal uniform ranges in a 200-chip pot: the value is a few chips either way.
    assert!(v.is_finite() && v.abs() < 400.0, "root value {v}");
    let avg = solver.average(0);
    let np = layout.num_hands();
    let na = layout.nodes[layout.decisions[0][0] as usize].actions.len();
    for x in 0..np {
        let s: f64 = (0..na).map(|a| avg[a * np + x]).sum();
        assert!((s - 1.0).abs() < 1e-9);
    }
    eprintln!(
        "river: {} nodes x 1326 hands (built in {:.3} s), cfr+ {ms:.2} ms/iteration, root value {v:.3} chips",
        layout.len(),
        t_build
    );
    // The turn subgame deals 48 rivers: nodes x 1326 slots, never nodes x 1326².
    let t0 = Instant::now();
    let layout = Arc::new(PokerLayout::from_state(&turn, 100_000).unwrap());
    let t_build = t0.elapsed().as_secs_f64();
    let chance: Vec<usize> = (0..layout.len())
        .filter(|&n| layout.nodes[n].kind == PokerKind::Chance)
        .collect();
    assert!(!chance.is_empty());
    assert!(chance.iter().all(|&n| layout.children(n).len() == 48));
    // Solving it needs 4 arrays of `nodes x 1326` f64s (580 MB here): measured once, not run
    // in the tests.
    eprintln!(
        "turn: {} nodes ({} chance) x 1326 hands = {:.1}M slots (built in {t_build:.2} s)",
        layout.len(),
        chance.len(),
        layout.num_slots() as f64 / 1e6
    );
}

/// Exact leaf values when both players play uniformly below each leaf: the subgame from a
/// state at the leaf with the leaf's ranges, evaluated before any iteration, rescaled from the
/// subgame's root weight to the leaf's.
struct UniformBelow {
    subgames: Vec<Arc<PokerLayout>>,
}

impl armac::nn::public::factored::PokerLeaves for UniformBelow {
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2] {
        let np = layout.num_hands();
        let mut out = [vec![0.0; leaves.len() * np], vec![0.0; leaves.len() * np]];
        for (k, (&n, sub)) in leaves.iter().zip(&self.subgames).enumerate() {
            let r = [0, 1].map(|i| ranges[i][k * np..(k + 1) * np].to_vec());
            let spec = SolverSpec::named("cfr").unwrap();
            // A player without mass at the leaf: every value is 0.
            let Ok(mut s) = FactoredCfr::new(sub.clone(), spec, Some(r)) else {
                continue;
            };
            let ratio = layout.nodes[n as usize].weight / sub.nodes[0].weight;
            for (i, o) in out.iter_mut().enumerate() {
                let v = s.root_cfvs(i);
                for x in 0..np {
                    o[k * np + x] = v[x] * ratio;
                }
            }
        }
        out
    }
}

#[test]
fn depth_limited_layout_with_exact_leaves_matches_the_full_layout() {
    let game = UniversalPokerGame::from_string(TINY).unwrap();
    let cfg = game.config();
    let limited =
        Arc::new(PokerLayout::from_state_limited(&game.initial_state(), 1000, true).unwrap());
    let whole = Arc::new(PokerLayout::from_state(&game.initial_state(), 100_000).unwrap());
    // Player 1 folds or calls, player 0 checks, then the flop deal is the leaf.
    let leaves = limited.leaves();
    assert_eq!((limited.len(), leaves.len()), (4, 1));
    let subgames = leaves
        .iter()
        .map(|&n| {
            let mut s = game.initial_state();
            for o in 0..4 {
                s.apply(o);
            }
            for e in limited.path(n as usize) {
                match e {
                    PokerEdge::Action(a) => s.apply(a),
                    PokerEdge::Deal(cards) => cards
                        .iter()
                        .for_each(|&c| s.apply(cfg.outcome_of(c).unwrap())),
                    PokerEdge::Root => unreachable!(),
                }
            }
            Arc::new(PokerLayout::from_state(&s, 100_000).unwrap())
        })
        .collect();
    let spec = SolverSpec::named("cfr")
        .unwrap()
        .with_updates(Updates::Simultaneous);
    assert_eq!(
        FactoredCfr::new(limited.clone(), spec, None).err(),
        Some(FactoredError::MissingLeafEvaluator(1))
    );
    let mut lim = FactoredCfr::with_leaves(
        limited.clone(),
        spec,
        None,
        Some(Box::new(UniformBelow { subgames })),
    )
    .unwrap();
    let mut full = FactoredCfr::new(whole.clone(), spec, None).unwrap();
    for p in 0..2 {
        let (a, b) = (lim.root_cfvs(p), full.root_cfvs(p));
        let gap = a
            .iter()
            .zip(&b)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(gap < 1e-12, "player {p}: root CFVs differ by {gap}");
        assert!(b.iter().any(|v| v.abs() > 1e-6));
    }
    // Simultaneous updates: iteration 1 sees uniform play everywhere in both, so player 1's
    // opening decision (the root) gets the same regrets and the same next strategy.
    lim.iterate();
    full.iterate();
    let root_block = |s: &FactoredCfr, l: &PokerLayout| {
        assert_eq!(l.decisions[1][0], 0, "player 1 acts at the root");
        s.current(1)[..l.offsets[1][1]].to_vec()
    };
    let (a, b) = (root_block(&lim, &limited), root_block(&full, &whole));
    assert_eq!(a.len(), b.len());
    let gap = a
        .iter()
        .zip(&b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(gap < 1e-12, "root strategies differ by {gap}");
    assert!(
        a.iter().any(|&q| (q - 0.5).abs() > 1e-3),
        "the root strategy moved"
    );
    for _ in 0..20 {
        lim.iterate();
    }
    assert!(lim.root_value().is_finite());
}

#[test]
fn cvpn_values_the_leaves_of_a_depth_limited_holdem_subgame() {
    use armac::game::Game;
    use armac::nn::cvpn::{Cvpn, CvpnConfig, CvpnPokerLeaves};
    let game = UniversalPokerGame::from_string(TINY).unwrap();
    let root = game.initial_state();
    let limited = Arc::new(PokerLayout::from_state_limited(&root, 1000, true).unwrap());
    let public = game.public_state_tensor_size();
    let cfg = |private_states: usize| CvpnConfig {
        game: game.load_string(),
        input_size: public + 2 * 45,
        private_states,
        num_actions: game.num_distinct_actions(),
        hidden: 16,
        layers: 1,
    };
    let device = burn::tensor::Device::flex();
    let wrong = Cvpn::new(cfg(1326), &device, 1e-3, 7).unwrap();
    let err = CvpnPokerLeaves::new(wrong, &limited, &root)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("1326 private states") && err.contains("45 hands"),
        "{err}"
    );
    let net = Cvpn::new(cfg(45), &device, 1e-3, 7).unwrap();
    let leaves = CvpnPokerLeaves::new(net, &limited, &root).unwrap();
    // The input of the one leaf: the public tensor of a real state there, then two beliefs.
    let leaf = limited.leaves()[0] as usize;
    let mut s = game.initial_state();
    for a in [0, 1, 2, 3, 1, 1] {
        s.apply(a);
    }
    let mut want = vec![0.0; public];
    s.public_state_tensor(&mut want);
    let r: Vec<f64> = (0..45).map(|x| 1.0 + x as f64).collect();
    let (input, mass) = leaves.encode(&limited, 0, [&r, &r]);
    assert_eq!(input.len(), public + 90);
    assert_eq!(&input[..public], want.as_slice());
    for i in 0..2 {
        let b: f32 = input[public + 45 * i..public + 45 * (i + 1)].iter().sum();
        assert!((b - 1.0).abs() < 1e-5, "belief {i} sums to {b}");
        // Opponent mass facing x: the weight times the reach of the 28 hands disjoint from x.
        let x = 0;
        let disjoint: f64 = (0..45)
            .filter(|&y| limited.hand_masks[x] & limited.hand_masks[y] == 0)
            .map(|y| r[y])
            .sum();
        let w = limited.nodes[leaf].weight;
        assert!((mass[i][x] - w * disjoint).abs() < 1e-15);
    }
    // An untrained network drives a few iterations without trouble.
    let mut solver = FactoredCfr::with_leaves(
        limited.clone(),
        SolverSpec::named("cfr+").unwrap(),
        None,
        Some(Box::new(leaves)),
    )
    .unwrap();
    for _ in 0..3 {
        solver.iterate();
    }
    assert!(solver.root_value().is_finite());
}
