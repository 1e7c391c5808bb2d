//! The tensor engine against the scalar one, iterate for iterate.

use super::TensorEngine;
use crate::cfr::{SolverSpec, Updates};
use crate::nn::public::{Ctx, Precision};
use crate::search::gtcfr::layout_for;
use crate::search::{
    Gadget, GtCfr, GtCfrConfig, LeafValues, NoLeaves, Pbs, RegretEngine, ScalarEngine, SearchError,
    run_lockstep,
};
use crate::tree::NONE;
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::{TensorKind, TensorTree};
use burn::tensor::Device;
use std::sync::Arc;

struct Game {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
}

fn compile(name: &str) -> Game {
    let game = crate::games::load_game(name).unwrap();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    Game { tree, ht }
}

fn f64_ctx() -> Ctx {
    Ctx::new(&Device::flex(), Precision::F64)
}

/// Ones on every valid private state of public node `node`.
fn full_pbs(g: &Game, node: u32) -> Pbs {
    let l = TensorTree::build(&g.tree, &g.ht, node, Some(0)).unwrap();
    Pbs {
        node,
        ranges: std::array::from_fn(|i| {
            (0..l.p)
                .map(|x| if l.valid[i][x] { 1.0 } else { 0.0 })
                .collect()
        }),
    }
}

fn spec(name: &str, updates: Updates) -> SolverSpec {
    SolverSpec {
        updates,
        ..SolverSpec::named(name).unwrap()
    }
}

/// Both engines on the same search root.
fn pair(g: &Game, pbs: &Pbs, spec: SolverSpec, ctx: &Ctx) -> (ScalarEngine, TensorEngine) {
    let (layout, ranges) = layout_for(&g.tree, &g.ht, pbs).unwrap();
    let s = ScalarEngine::new(layout.clone(), spec, ranges.clone()).unwrap();
    let t = TensorEngine::new(layout, spec, ranges, ctx).unwrap();
    (s, t)
}

fn diff(what: &str, a: &[f64], b: &[f64]) -> (f64, String) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    (d, what.to_string())
}

/// The largest difference between everything the engines expose (and its name).
fn gap<S: RegretEngine, T: RegretEngine>(s: &S, t: &T) -> (f64, String) {
    assert_eq!(s.iteration(), t.iteration());
    let l = s.layout().clone();
    let mut all = Vec::new();
    let (cs, ct) = (s.current_blocks(), t.current_blocks());
    let (avs, avt) = (s.average_blocks(), t.average_blocks());
    for p in 0..2 {
        all.push(diff(&format!("current {p}"), &cs[p], &ct[p]));
        all.push(diff(&format!("average {p}"), &avs[p], &avt[p]));
        all.push(diff(&format!("reach {p}"), s.reach(p), t.reach(p)));
        all.push(diff(
            &format!("root range {p}"),
            s.root_range(p),
            t.root_range(p),
        ));
        all.push(diff(
            &format!("root cfvs {p}"),
            s.root_cfvs(p),
            t.root_cfvs(p),
        ));
        all.push(diff(
            &format!("average root cfvs {p}"),
            &s.average_root_cfvs(p),
            &t.average_root_cfvs(p),
        ));
        all.push(diff(
            &format!("average cfvs {p}"),
            &s.average_cfvs(p),
            &t.average_cfvs(p),
        ));
        let mut qs = Vec::new();
        let mut qt = Vec::new();
        for d in 0..l.decisions[p].len() {
            for x in 0..l.p {
                if l.infoset[p][d * l.p + x] != NONE {
                    qs.extend_from_slice(s.action_values(p, d, x));
                    qt.extend_from_slice(t.action_values(p, d, x));
                    assert_eq!(s.current_row(p, d, x).len(), t.current_row(p, d, x).len());
                }
            }
        }
        all.push(diff(&format!("action values {p}"), &qs, &qt));
    }
    for n in 0..l.len() {
        assert_eq!(s.is_expanded(n), t.is_expanded(n));
        assert_eq!(s.in_tree(n), t.in_tree(n));
    }
    assert_eq!(s.frontier(), t.frontier());
    all.into_iter()
        .fold((0.0, String::new()), |m, x| if x.0 > m.0 { x } else { m })
}

fn assert_close(s: &ScalarEngine, t: &TensorEngine, tol: f64, what: &str) {
    let (d, name) = gap(s, t);
    assert!(d <= tol, "{what}: {name} differs by {d:e}");
    let r = (0..2)
        .map(|p| diff("regrets", s.regret_blocks(p), &t.regret_blocks(p)).0)
        .fold(0.0, f64::max);
    assert!(r <= tol, "{what}: regrets differ by {r:e}");
}

/// Counterfactual values linear in the opponent's range (like true ones), different per node:
/// a cheap deterministic stand-in for a value network.
struct ToyLeaves;

impl LeafValues for ToyLeaves {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        Ok(queries
            .iter()
            .map(|q| {
                let p = q.ranges[0].len();
                let c = |x: usize, y: usize| {
                    (q.node as f64 * 0.37 + x as f64 * 1.3 - y as f64 * 0.7).sin()
                };
                let v0 = (0..p)
                    .map(|x| (0..p).map(|y| q.ranges[1][y] * c(x, y)).sum())
                    .collect();
                let v1 = (0..p)
                    .map(|y| -(0..p).map(|x| q.ranges[0][x] * c(x, y)).sum::<f64>())
                    .collect();
                [v0, v1]
            })
            .collect())
    }
}

/// Every node expanded before the first update: the engines agree iterate for iterate, for
/// CFR+ with alternating updates (GT-CFR's default) and the other rules (Liar's Dice: CFR+).
#[test]
fn tensor_engine_equals_scalar_fully_expanded_on_kuhn_and_leduc() {
    let ctx = f64_ctx();
    let cases = [
        ("kuhn_poker", "cfr+", Updates::Alternating, 60),
        ("leduc_poker", "cfr+", Updates::Alternating, 40),
        ("kuhn_poker", "dcfr", Updates::Alternating, 30),
        ("leduc_poker", "cfr", Updates::Simultaneous, 20),
        ("leduc_poker", "lcfr", Updates::Alternating, 20),
        ("liars_dice", "cfr+", Updates::Alternating, 5),
    ];
    for (name, alg, updates, iters) in cases {
        let g = compile(name);
        let (mut s, mut t) = pair(&g, &full_pbs(&g, 0), spec(alg, updates), &ctx);
        s.expand_all();
        RegretEngine::expand_all(&mut t);
        assert_close(&s, &t, 0.0, &format!("{name} {alg} before"));
        for it in 1..=iters {
            s.iterate(&mut NoLeaves).unwrap();
            t.iterate(&mut NoLeaves).unwrap();
            assert_close(&s, &t, 1e-9, &format!("{name} {alg} iteration {it}"));
        }
        // GtCfr on top: the answered policy is the same.
        let cfg = GtCfrConfig::default();
        let a = GtCfr::from_engine(s, cfg.clone()).unwrap().policy_blocks();
        let b = GtCfr::from_engine(t, cfg).unwrap().policy_blocks();
        for p in 0..2 {
            assert!(diff("policy", &a[p], &b[p]).0 <= 1e-9);
        }
    }
}

/// Searches rooted anywhere in Kuhn (some subtrees hold no decision of one player).
#[test]
fn tensor_engine_equals_scalar_at_every_kuhn_subgame_root() {
    let ctx = f64_ctx();
    let g = compile("kuhn_poker");
    let mut one_sided = 0;
    for node in 0..g.tree.nodes.len() as u32 {
        if g.tree.nodes[node as usize].kind == crate::tree::NodeKind::Terminal {
            continue;
        }
        let (mut s, mut t) = pair(
            &g,
            &full_pbs(&g, node),
            spec("cfr+", Updates::Alternating),
            &ctx,
        );
        let l = s.layout().clone();
        one_sided += (l.decisions[0].is_empty() || l.decisions[1].is_empty()) as usize;
        s.expand_all();
        RegretEngine::expand_all(&mut t);
        for it in 1..=10 {
            s.iterate(&mut NoLeaves).unwrap();
            t.iterate(&mut NoLeaves).unwrap();
            assert_close(&s, &t, 1e-9, &format!("kuhn node {node} iteration {it}"));
        }
    }
    assert!(
        one_sided > 0,
        "some subtree has decisions of one player only"
    );
}

/// A re-solve of a Leduc round-two subgame through the CFR-D gadget (α = 0.5 and 1).
#[test]
fn tensor_engine_equals_scalar_with_a_gadget_on_leduc() {
    let ctx = f64_ctx();
    let g = compile("leduc_poker");
    let whole = TensorTree::build(&g.tree, &g.ht, 0, None).unwrap();
    // A round-two root: a decision whose parent is a chance node below a decision.
    let root = (1..whole.len())
        .find(|&n| {
            let par = whole.parent[n] as usize;
            matches!(whole.kind[n], TensorKind::Decision(_))
                && whole.kind[par] == TensorKind::Chance
                && par != 0
        })
        .map(|n| whole.public_node[n])
        .unwrap();
    let pbs = full_pbs(&g, root);
    let cfr_plus = spec("cfr+", Updates::Alternating);
    // Opponent values to promise: a short full-depth solve's.
    let (mut s0, _) = pair(&g, &pbs, cfr_plus, &ctx);
    s0.expand_all();
    for _ in 0..20 {
        s0.iterate(&mut NoLeaves).unwrap();
    }
    for (me, alpha) in [(0usize, 0.5), (1, 1.0)] {
        let opp = 1 - me;
        let w: Vec<f64> = s0.average_root_cfvs(opp).iter().map(|v| v * 0.9).collect();
        let gadget = Gadget::new(opp, w, pbs.ranges[opp].clone(), alpha).unwrap();
        let (mut s, mut t) = pair(&g, &pbs, cfr_plus, &ctx);
        s.set_gadget(gadget.clone()).unwrap();
        RegretEngine::set_gadget(&mut t, gadget).unwrap();
        s.expand_all();
        RegretEngine::expand_all(&mut t);
        for it in 1..=40 {
            s.iterate(&mut NoLeaves).unwrap();
            t.iterate(&mut NoLeaves).unwrap();
            assert_close(&s, &t, 1e-9, &format!("gadget α {alpha} iteration {it}"));
        }
        // The gadget moved the opponent's range away from the previous one.
        assert!(diff("range", s.root_range(opp), &pbs.ranges[opp]).0 > 1e-3);
    }
}

/// The tree grows between iterations (frontier values from an evaluator): regrets and
/// averages accumulated before an expansion are kept, on both engines alike.
#[test]
fn tensor_engine_equals_scalar_on_a_growing_tree() {
    let ctx = f64_ctx();
    for (name, alg, min_grown) in [("kuhn_poker", "cfr+", 4), ("leduc_poker", "cfr+", 30)] {
        let g = compile(name);
        let (mut s, mut t) = pair(&g, &full_pbs(&g, 0), spec(alg, Updates::Alternating), &ctx);
        let mut grown = 0;
        for round in 0..40 {
            for _ in 0..2 {
                s.iterate(&mut ToyLeaves).unwrap();
                t.iterate(&mut ToyLeaves).unwrap();
                assert_close(&s, &t, 1e-9, &format!("{name} round {round}"));
            }
            // Expand the frontier node the round picks (deterministic, both engines).
            let f = s.frontier();
            if let Some(&n) = f.get((round * 7) % f.len().max(1)) {
                assert_eq!(s.expand(n), t.expand(n));
                grown += 1;
            }
        }
        assert!(grown >= min_grown, "{name}: only {grown} expansions");
        assert_eq!(s.leaf_queries(), t.leaf_queries());
        assert!(s.leaf_queries() > 0);
    }
}

/// GT-CFR runs (simulations pick the expansions from the engines' mirrors) and lock-step
/// batches give the same searches on both engines.
#[test]
fn gtcfr_on_the_tensor_engine_equals_the_scalar_one() {
    let ctx = f64_ctx();
    let g = compile("leduc_poker");
    let pbs = full_pbs(&g, 0);
    let cfg = |seed| GtCfrConfig {
        simulations: 30,
        expansions_per_update: 0.5,
        seed,
        ..GtCfrConfig::default()
    };
    let build = |seed| {
        let (s, t) = pair(&g, &pbs, cfg(seed).spec, &ctx);
        (
            GtCfr::from_engine(s, cfg(seed)).unwrap(),
            GtCfr::from_engine(t, cfg(seed)).unwrap(),
        )
    };
    let (mut a, mut b) = build(3);
    a.run(&mut ToyLeaves).unwrap();
    b.run(&mut ToyLeaves).unwrap();
    assert_eq!(a.expansions(), b.expansions());
    assert!(a.expansions() > 5);
    assert_close(a.engine(), b.engine(), 1e-9, "run");
    let (mut sa, mut tb): (Vec<_>, Vec<_>) = (0..4).map(|k| build(10 + k)).unzip();
    let st = run_lockstep(&mut sa, &mut ToyLeaves).unwrap();
    let tt = run_lockstep(&mut tb, &mut ToyLeaves).unwrap();
    assert_eq!((st.calls, st.queries), (tt.calls, tt.queries));
    for (x, y) in sa.iter().zip(&tb) {
        assert_close(x.engine(), y.engine(), 1e-9, "lock-step");
    }
}

/// The same on the wgpu backend in `f32` (CI: Mesa's lavapipe).
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan device (lavapipe in CI)"]
fn tensor_engine_on_wgpu_matches_the_scalar_one() {
    let ctx = Ctx::f32(&crate::nn::select_device("wgpu").unwrap());
    for (name, iters) in [("kuhn_poker", 20), ("leduc_poker", 8)] {
        let g = compile(name);
        let (mut s, mut t) = pair(
            &g,
            &full_pbs(&g, 0),
            spec("cfr+", Updates::Alternating),
            &ctx,
        );
        s.expand_all();
        RegretEngine::expand_all(&mut t);
        for it in 1..=iters {
            s.iterate(&mut NoLeaves).unwrap();
            t.iterate(&mut NoLeaves).unwrap();
            let (d, what) = gap(&s, &t);
            assert!(
                d < 1e-4,
                "wgpu {name} iteration {it}: {what} differs by {d:e}"
            );
        }
    }
}
