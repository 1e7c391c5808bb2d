use super::cfr::BatchedCfr;
use super::pos::BatchedPos;
use super::{Ctx, Precision};
use crate::cfr::pos::{PosSolver, PosSpec};
use crate::cfr::{SolverSpec, TabularSolver, TreeSolver, Updates};
use crate::games::registry::load_game;
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::TensorTree;
use burn::tensor::Device;
use std::sync::Arc;

pub(super) fn setup(name: &str) -> (Arc<PublicTree>, Arc<HistoryTree>, Arc<TensorTree>) {
    let game = load_game(name).unwrap();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    let layout = Arc::new(TensorTree::build(&tree, &ht, 0, None).unwrap());
    (tree, ht, layout)
}

pub(super) fn max_diff(a: &[Vec<f64>; 2], b: &[Vec<f64>; 2]) -> f64 {
    (0..2)
        .flat_map(|i| a[i].iter().zip(&b[i]).map(|(x, y)| (x - y).abs()))
        .fold(0.0, f64::max)
}

fn cpu(precision: Precision) -> Ctx {
    Ctx::new(&Device::flex(), precision)
}

/// Runs batched and tabular CFR side by side; returns the largest average-policy difference
/// over the batch elements.
pub(super) fn cfr_gap(name: &str, spec_name: &str, iters: usize, ctx: &Ctx) -> f64 {
    let (tree, _, layout) = setup(name);
    let spec = SolverSpec::named(spec_name).unwrap();
    let mut tab = TabularSolver::new(tree.clone(), spec);
    let mut bat = BatchedCfr::new(tree.clone(), layout, spec, 2, None, None, ctx).unwrap();
    for _ in 0..iters {
        tab.iterate();
        bat.iterate();
    }
    let base = crate::tree::uniform_tree_policy(&tree);
    (0..2)
        .map(|b| max_diff(&tab.average_policy(), &bat.average_policy(b, &base)))
        .fold(0.0, f64::max)
}

#[test]
fn batched_cfr_in_f64_matches_the_tabular_solver() {
    for (name, iters) in [("kuhn_poker", 100), ("leduc_poker", 60), ("liars_dice", 10)] {
        for spec_name in ["cfr", "cfr+", "dcfr"] {
            let d = cfr_gap(name, spec_name, iters, &cpu(Precision::F64));
            eprintln!("f64 {name} {spec_name} {iters} iterations: {d:.2e}");
            // DCFR's t² averaging and halving of negative regrets amplify rounding more.
            let tol = if spec_name == "dcfr" { 1e-7 } else { 1e-9 };
            assert!(d < tol, "{name} {spec_name}: average policy differs by {d}");
        }
    }
}

#[test]
fn batched_cfr_in_f32_matches_the_tabular_solver() {
    // f32 rounding (≈1e-7 relative) is amplified by the regret dynamics, so the f32 solver
    // matches to 1e-5 only over the first iterations: on Leduc the average policies drift
    // apart by 1.4e-6 (CFR) and 6e-5 (CFR+) after 30 iterations, on Liar's Dice by 5e-5
    // (CFR) after 5. NashConv curves still agree (tests/batched_solvers.rs).
    for (name, iters) in [("kuhn_poker", 50), ("leduc_poker", 10), ("liars_dice", 2)] {
        for spec_name in ["cfr", "cfr+"] {
            let d = cfr_gap(name, spec_name, iters, &cpu(Precision::F32));
            eprintln!("f32 {name} {spec_name} {iters} iterations: {d:.2e}");
            assert!(
                d < 1e-5,
                "{name} {spec_name}: average policy differs by {d}"
            );
        }
    }
}

pub(super) fn pos_gap(name: &str, iters: usize, updates: Updates, ctx: &Ctx) -> f64 {
    let spec = PosSpec {
        updates,
        ..PosSpec::default()
    };
    pos_spec_gap(name, iters, spec, ctx)
}

/// Runs batched and tabular POS (`spec`, three elements) side by side; returns the largest
/// average-policy difference.
fn pos_spec_gap(name: &str, iters: usize, spec: PosSpec, ctx: &Ctx) -> f64 {
    let (tree, ht, layout) = setup(name);
    let seed = 11;
    let mut bat = BatchedPos::new(tree.clone(), layout, spec, seed, 3, ctx).unwrap();
    let mut tabs: Vec<PosSolver> = (0..3)
        .map(|b| {
            PosSolver::new(
                tree.clone(),
                ht.clone(),
                spec,
                BatchedPos::element_seed(seed, b),
            )
        })
        .collect();
    for _ in 0..iters {
        bat.iterate();
        tabs.iter_mut().for_each(|t| t.iterate());
    }
    tabs.iter()
        .enumerate()
        .map(|(b, tab)| max_diff(&tab.average_policy(), &bat.average_policy(b)))
        .fold(0.0, f64::max)
}

#[test]
fn batched_pos_matches_the_tabular_solver_sample_for_sample() {
    for (name, iters) in [
        ("kuhn_poker", 200),
        ("leduc_poker", 200),
        ("liars_dice", 50),
    ] {
        for updates in [Updates::Alternating, Updates::Simultaneous] {
            let d = pos_gap(name, iters, updates, &cpu(Precision::F32));
            eprintln!("f32 pos {name} {updates:?} {iters} iterations: {d:.2e}");
            assert!(
                d < 1e-5,
                "{name} {updates:?} f32: average policy differs by {d}"
            );
            let d = pos_gap(name, iters, updates, &cpu(Precision::F64));
            assert!(
                d < 1e-9,
                "{name} {updates:?} f64: average policy differs by {d}"
            );
        }
    }
}

#[test]
fn batched_on_policy_pos_samples_the_tabular_solvers_paths() {
    // On-policy public sampling: every element's successor probabilities q(S, S') come from
    // its strategies read back once per pass; the paths, importance weights 1/q and hence all
    // updates must be the tabular solver's (whose estimator is tested unbiased under this
    // sampling: cfr::pos tests, Theorem 1). A wrong q or a path drawn from stale strategies
    // changes the regrets and the average policy at once.
    use crate::cfr::pos::{PosOptions, Sampling};
    for (name, iters) in [
        ("kuhn_poker", 300),
        ("leduc_poker", 200),
        ("liars_dice", 40),
    ] {
        for updates in [Updates::Alternating, Updates::Simultaneous] {
            let spec = PosSpec {
                updates,
                options: PosOptions {
                    sampling: Sampling::OnPolicy,
                    exploration: 0.5,
                    ..PosOptions::default()
                },
                ..PosSpec::default()
            };
            let d = pos_spec_gap(name, iters, spec, &cpu(Precision::F64));
            eprintln!("f64 on-policy pos {name} {updates:?} {iters} iterations: {d:.2e}");
            assert!(
                d < 1e-9,
                "{name} {updates:?} on-policy f64: average policy differs by {d}"
            );
        }
    }
}

#[test]
fn a_wrong_batch_or_missing_evaluator_is_refused() {
    let (tree, ht, _) = setup("kuhn_poker");
    let cut = Arc::new(TensorTree::build(&tree, &ht, 0, Some(3)).unwrap());
    let spec = SolverSpec::named("cfr+").unwrap();
    let ctx = cpu(Precision::F32);
    let e = BatchedCfr::new(tree.clone(), cut.clone(), spec, 1, None, None, &ctx)
        .err()
        .unwrap();
    assert!(e.to_string().contains("leaf evaluator"), "{e}");
    let e = BatchedCfr::new(tree.clone(), cut, spec, 0, None, None, &ctx)
        .err()
        .unwrap();
    assert!(e.to_string().contains("batch"), "{e}");
}

/// Player 0's expected value, chance included, of the histories of public node `node` under
/// `policy`: `Σ_h π_0(h) π_1(h) P_chance(h) u(h)`.
fn node_value(tree: &PublicTree, ht: &HistoryTree, policy: &[Vec<f64>; 2], node: usize) -> f64 {
    let mut u = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut u);
    let seq: [Vec<f64>; 2] = std::array::from_fn(|i| {
        let mut r = vec![0.0; tree.num_sequences(i)];
        tree.reach(i, &policy[i], &mut r);
        r
    });
    ht.node_histories(node)
        .iter()
        .map(|&h| {
            let h = h as usize;
            let [s0, s1] = ht.seq[h];
            seq[0][s0 as usize] * seq[1][s1 as usize] * ht.chance_reach[h] * u[h]
        })
        .sum()
}

/// A near-equilibrium of the whole game from the tabular CFR+ solver.
fn equilibrium(tree: &Arc<PublicTree>, iters: usize) -> [Vec<f64>; 2] {
    let mut tab = TabularSolver::new(tree.clone(), SolverSpec::named("cfr+").unwrap());
    for _ in 0..iters {
        tab.iterate();
    }
    tab.average_policy()
}

#[test]
fn depth_limited_solve_with_exact_leaf_values_recovers_the_equilibrium() {
    use super::MatrixLeaves;
    let (tree, ht, _) = setup("leduc_poker");
    let star = equilibrium(&tree, 2000);
    let star_conv = crate::eval::nash_conv(&tree, &star).nash_conv;
    let mut below = vec![0.0; ht.len()];
    ht.values_into(&tree, &star, &mut below);
    let ctx = cpu(Precision::F64);
    for depth in [4, 6] {
        let cut = Arc::new(TensorTree::build(&tree, &ht, 0, Some(depth)).unwrap());
        assert!(!cut.leaves.is_empty());
        let oracle = MatrixLeaves::new(&cut, &ht, &below, &ctx);
        let spec = SolverSpec::named("cfr+").unwrap();
        let mut solver = BatchedCfr::new(
            tree.clone(),
            cut,
            spec,
            1,
            None,
            Some(Box::new(oracle)),
            &ctx,
        )
        .unwrap();
        for _ in 0..1500 {
            solver.iterate();
        }
        // The trunk's average strategy over σ* below the depth limit. Leaf values fixed by σ*
        // make a trunk game whose equilibria all have σ*'s value and are interchangeable with
        // σ*'s trunk strategies; they need not be equilibria of the whole game (a best
        // response may also change the play below the leaves — why search needs leaf values
        // that respond to the ranges, as a counterfactual value network gives).
        let trunk = solver.average_policy(0, &star);
        let value = |pol: &[Vec<f64>; 2]| crate::eval::on_policy_values(&tree, pol)[0];
        let mixed = |a: &[Vec<f64>; 2], b: &[Vec<f64>; 2]| [a[0].clone(), b[1].clone()];
        let v_star = value(&star);
        let got = [
            value(&trunk),
            value(&mixed(&trunk, &star)),
            value(&mixed(&star, &trunk)),
        ];
        eprintln!("depth {depth}: values {got:?}, σ* {v_star:.6} (NashConv {star_conv:.5})");
        for v in got {
            assert!(
                (v - v_star).abs() < 2e-3,
                "depth {depth}: value {v} vs {v_star}"
            );
        }
        // A uniform trunk over the same leaves fails the same check.
        let uniform_trunk = {
            let u = crate::tree::uniform_tree_policy(&tree);
            let mut p = star.clone();
            let l = solver.layout();
            for i in 0..2 {
                let blocks = l.gather_blocks(&tree, i, &u[i]);
                l.scatter_blocks(&tree, i, &blocks, &mut p[i]);
            }
            p
        };
        let worst = [
            value(&uniform_trunk),
            value(&mixed(&uniform_trunk, &star)),
            value(&mixed(&star, &uniform_trunk)),
        ]
        .iter()
        .map(|v| (v - v_star).abs())
        .fold(0.0, f64::max);
        assert!(worst > 0.05, "uniform trunk passes the check ({worst})");
    }
}

#[test]
fn resolving_a_subgame_from_given_ranges_matches_the_equilibrium_value() {
    let (tree, ht, full) = setup("leduc_poker");
    let star = equilibrium(&tree, 2000);
    // The first round-2 decision node on the check-check line (first chance child's child).
    let s = (0..full.len())
        .find(|&l| {
            let par = full.parent[l];
            par != crate::tree::NONE
                && full.kind[par as usize] == crate::tree::tensor::TensorKind::Chance
                && l > 2
                && matches!(full.kind[l], crate::tree::tensor::TensorKind::Decision(_))
        })
        .unwrap();
    let s_pub = full.public_node[s];
    let sub = Arc::new(TensorTree::build(&tree, &ht, s_pub, None).unwrap());
    let p = sub.p;
    // Element 0: σ*'s ranges at s; element 1: the same with player 1's range halved.
    let ranges: [Vec<f64>; 2] = std::array::from_fn(|i| sub.ranges(&tree, &star, i)[..p].to_vec());
    let half: Vec<f64> = ranges[1].iter().map(|r| 0.5 * r).collect();
    let roots = [
        [ranges[0].clone(), ranges[0].clone()].concat(),
        [ranges[1].clone(), half].concat(),
    ];
    let ctx = cpu(Precision::F64);
    let spec = SolverSpec::named("cfr+").unwrap();
    let mut solver = BatchedCfr::new(tree.clone(), sub, spec, 2, Some(roots), None, &ctx).unwrap();
    for _ in 0..1000 {
        solver.iterate();
    }
    let want = node_value(&tree, &ht, &star, s_pub as usize);
    let resolved = solver.average_policy(0, &star);
    let got = node_value(&tree, &ht, &resolved, s_pub as usize);
    eprintln!("subgame at public node {s_pub}: re-solved value {got:.6}, σ* value {want:.6}");
    assert!(want.abs() > 1e-4, "the subgame must matter");
    assert!(
        (got - want).abs() < 2e-3 * (1.0 + want.abs()),
        "{got} vs {want}"
    );
    // Halving one player's range halves the counterfactual weights: same strategies.
    let other = solver.average_policy(1, &star);
    let d = max_diff(&resolved, &other);
    assert!(d < 1e-9, "element 1 differs by {d}");
}

/// The GPU code path: the same exactness checks on the wgpu backend (in CI on Mesa's lavapipe,
/// a software Vulkan driver): `cargo test --release --features wgpu --lib wgpu -- --ignored`.
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan device (lavapipe in CI)"]
fn batched_solvers_on_wgpu_match_the_tabular_solvers() {
    let ctx = Ctx::f32(&crate::nn::select_device("wgpu").unwrap());
    for (name, iters) in [("kuhn_poker", 30), ("leduc_poker", 10)] {
        for spec_name in ["cfr", "cfr+"] {
            let d = cfr_gap(name, spec_name, iters, &ctx);
            eprintln!("wgpu {name} {spec_name} {iters} iterations: {d:.2e}");
            assert!(d < 1e-5, "wgpu {name} {spec_name}: {d}");
        }
    }
    for (name, iters) in [("kuhn_poker", 100), ("leduc_poker", 60)] {
        let d = pos_gap(name, iters, Updates::Alternating, &ctx);
        eprintln!("wgpu pos {name} {iters} iterations: {d:.2e}");
        assert!(d < 1e-5, "wgpu pos {name}: {d}");
    }
}

#[test]
fn a_forest_of_public_states_is_resolved_in_one_pass() {
    let (tree, ht, full) = setup("leduc_poker");
    let star = equilibrium(&tree, 2000);
    // Round-2 roots: decision nodes whose parent is the board-card chance node, on two
    // different betting lines / boards.
    let roots: Vec<u32> = (3..full.len())
        .filter(|&l| {
            let par = full.parent[l];
            par != crate::tree::NONE
                && full.kind[par as usize] == crate::tree::tensor::TensorKind::Chance
                && matches!(full.kind[l], crate::tree::tensor::TensorKind::Decision(_))
        })
        .map(|l| full.public_node[l])
        .step_by(7)
        .take(3)
        .collect();
    assert_eq!(roots.len(), 3);
    let forest = Arc::new(TensorTree::build_forest(&tree, &ht, &roots, None).unwrap());
    assert_eq!(forest.levels[0], (0, 3));
    let rp = 3 * forest.p;
    let ranges: [Vec<f64>; 2] =
        std::array::from_fn(|i| forest.ranges(&tree, &star, i)[..rp].to_vec());
    let ctx = cpu(Precision::F64);
    let spec = SolverSpec::named("cfr+").unwrap();
    let mut solver =
        BatchedCfr::new(tree.clone(), forest, spec, 1, Some(ranges), None, &ctx).unwrap();
    for _ in 0..1000 {
        solver.iterate();
    }
    let resolved = solver.average_policy(0, &star);
    for &s in &roots {
        let want = node_value(&tree, &ht, &star, s as usize);
        let got = node_value(&tree, &ht, &resolved, s as usize);
        eprintln!("forest root {s}: re-solved {got:.6}, σ* {want:.6}");
        assert!(
            (got - want).abs() < 2e-3 * (1.0 + want.abs()),
            "{s}: {got} vs {want}"
        );
    }
    // Nested roots are refused.
    let child = tree.nodes[roots[0] as usize].children[0];
    let e = TensorTree::build_forest(&tree, &ht, &[roots[0], child], None).unwrap_err();
    assert!(e.to_string().contains("below"), "{e}");
}
