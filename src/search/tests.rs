use super::Pbs;
use super::engine::{Gadget, NoLeaves, RegretEngine, ScalarEngine};
use super::gtcfr::{GtCfr, GtCfrConfig};
use super::oracle::SubgameOracle;
use crate::cfr::{SolverSpec, TabularSolver};
use crate::eval::nash_conv;
use crate::games::load_game;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::TensorTree;
use crate::tree::{NodeKind, PublicTree, TreePolicy};
use std::sync::Arc;

struct Game {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
}

fn compile(name: &str) -> Game {
    let game = load_game(name).unwrap();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    Game { tree, ht }
}

fn cfr_plus() -> SolverSpec {
    SolverSpec::named("cfr+").unwrap()
}

/// Ones on every valid private state of public node `node`.
fn full_ranges(g: &Game, node: u32) -> [Vec<f64>; 2] {
    let l = TensorTree::build(&g.tree, &g.ht, node, Some(0)).unwrap();
    std::array::from_fn(|i| {
        (0..l.p)
            .map(|x| if l.valid[i][x] { 1.0 } else { 0.0 })
            .collect()
    })
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn scatter(tree: &PublicTree, l: &TensorTree, blocks: &[Vec<f64>; 2]) -> TreePolicy {
    std::array::from_fn(|i| {
        let mut out = vec![f64::NAN; tree.infosets[i].num_actions_total()];
        l.scatter_blocks(tree, i, &blocks[i], &mut out);
        out
    })
}

/// The same for the other schedules of `cfr::Iteration`: simultaneous updates (CFR) and an
/// alternating rule with its own averaging weights (DCFR), fully expanded on Leduc.
#[test]
fn fully_expanded_gtcfr_follows_tabular_schedules_iterate_for_iterate() {
    use crate::cfr::Updates;
    let g = compile("leduc_poker");
    let pbs = Pbs {
        node: 0,
        ranges: full_ranges(&g, 0),
    };
    for spec in [
        SolverSpec::named("cfr")
            .unwrap()
            .with_updates(Updates::Simultaneous),
        SolverSpec::named("dcfr").unwrap(),
    ] {
        let cfg = GtCfrConfig {
            spec,
            ..GtCfrConfig::default()
        };
        let mut search = GtCfr::new(&g.tree, &g.ht, &pbs, cfg).unwrap();
        search.engine_mut().expand_all();
        let mut solver = TabularSolver::new(g.tree.clone(), spec);
        let l = search.engine().layout().clone();
        for t in 1..=30 {
            search.engine_mut().iterate(&mut NoLeaves).unwrap();
            solver.iterate();
            let cur = scatter(&g.tree, &l, &search.engine().current_blocks());
            let avg = scatter(&g.tree, &l, &search.engine().average_blocks());
            let want_avg = solver.average_policy();
            for p in 0..2 {
                let dc = max_diff(&cur[p], &solver.current_policy()[p]);
                let da = max_diff(&avg[p], &want_avg[p]);
                assert!(
                    dc < 1e-9 && da < 1e-9,
                    "{spec:?} iteration {t} player {p}: current {dc:e}, average {da:e}"
                );
            }
        }
    }
}

#[test]
fn fully_expanded_gtcfr_is_tabular_cfr_plus_iterate_for_iterate() {
    for name in ["kuhn_poker", "leduc_poker"] {
        let g = compile(name);
        let pbs = Pbs {
            node: 0,
            ranges: full_ranges(&g, 0),
        };
        let mut search = GtCfr::new(&g.tree, &g.ht, &pbs, GtCfrConfig::default()).unwrap();
        search.engine_mut().expand_all();
        let mut solver = TabularSolver::new(g.tree.clone(), cfr_plus());
        let l = search.engine().layout().clone();
        for t in 1..=60 {
            search.engine_mut().iterate(&mut NoLeaves).unwrap();
            solver.iterate();
            let regrets = scatter(
                &g.tree,
                &l,
                &[
                    search.engine().regret_blocks(0).to_vec(),
                    search.engine().regret_blocks(1).to_vec(),
                ],
            );
            let cur = scatter(&g.tree, &l, &search.engine().current_blocks());
            let avg = scatter(&g.tree, &l, &search.engine().average_blocks());
            let want_avg = solver.average_policy();
            for p in 0..2 {
                let dr = max_diff(&regrets[p], &solver.state().regrets[p]);
                let dc = max_diff(&cur[p], &solver.current_policy()[p]);
                let da = max_diff(&avg[p], &want_avg[p]);
                assert!(
                    dr < 1e-9 && dc < 1e-9 && da < 1e-9,
                    "{name} iteration {t} player {p}: regrets {dr:e}, current {dc:e}, average {da:e}"
                );
            }
        }
        // The root value under the average policies is the tabular one.
        let avg = search.engine().average_blocks();
        let v = search
            .engine_mut()
            .values_under(&avg, &mut NoLeaves)
            .unwrap();
        let want = crate::eval::on_policy_values(&g.tree, &solver.average_policy())[0];
        let got = search.engine().root_value(&v[0]);
        assert!((got - want).abs() < 1e-9, "{name}: {got} vs {want}");
    }
}

fn solved(g: &Game, iterations: usize) -> TreePolicy {
    let mut solver = TabularSolver::new(g.tree.clone(), cfr_plus());
    for _ in 0..iterations {
        solver.iterate();
    }
    solver.average_policy()
}

/// Round-2 roots of Leduc: decision nodes right after the public card (their parent is a
/// chance node below a decision).
fn round_two_roots(g: &Game) -> Vec<u32> {
    let nodes = &g.tree.nodes;
    (0..nodes.len() as u32)
        .filter(|&n| {
            let node = &nodes[n as usize];
            if !matches!(node.kind, NodeKind::Decision(_)) || node.parent == crate::tree::NONE {
                return false;
            }
            let par = &nodes[node.parent as usize];
            par.kind == NodeKind::Chance
                && par.parent != crate::tree::NONE
                && matches!(nodes[par.parent as usize].kind, NodeKind::Decision(_))
        })
        .collect()
}

/// Both players' root ranges at public node `node` under `policy`.
fn ranges_at(g: &Game, node: u32, policy: &TreePolicy) -> [Vec<f64>; 2] {
    let l = TensorTree::build(&g.tree, &g.ht, node, Some(0)).unwrap();
    std::array::from_fn(|i| l.ranges(&g.tree, policy, i)[..l.p].to_vec())
}

/// Root value and both players' root CFVs of a full-depth CFR+ solve of `pbs`.
fn full_depth(g: &Game, pbs: &Pbs, iterations: usize) -> (f64, [Vec<f64>; 2]) {
    let (layout, ranges) = super::gtcfr::layout_for(&g.tree, &g.ht, pbs).unwrap();
    let mut e = ScalarEngine::new(layout, cfr_plus(), ranges).unwrap();
    e.expand_all();
    for _ in 0..iterations {
        e.iterate(&mut NoLeaves).unwrap();
    }
    let avg = e.average_blocks();
    let v = e.values_under(&avg, &mut NoLeaves).unwrap();
    (e.root_value(&v[0]), v)
}

/// The per-private-state split of an equilibrium's counterfactual values is not unique (an
/// opponent equilibrium may leave one hand more and another less to gain at equal total), so
/// the hard checks are the root value and each player's range-weighted total; the largest
/// per-state difference is printed (measured: 2.5e-4 .. 3.6e-2 over six roots).
#[test]
fn gtcfr_with_an_exact_oracle_at_the_frontier_matches_a_full_depth_solve_on_leduc() {
    let g = compile("leduc_poker");
    let star = solved(&g, 300);
    let roots = round_two_roots(&g);
    assert!(!roots.is_empty());
    let mut checked = 0;
    let (mut worst_seen, mut worst_avg_seen) = (0.0f64, 0.0f64);
    for &root in roots.iter().step_by(5) {
        let pbs = Pbs {
            node: root,
            ranges: ranges_at(&g, root, &star),
        };
        let (want_value, want) = full_depth(&g, &pbs, 2000);
        let config = GtCfrConfig {
            simulations: 3,
            expansions_per_update: 1.0 / 60.0,
            seed: 7 + root as u64,
            ..GtCfrConfig::default()
        };
        let mut search = GtCfr::new(&g.tree, &g.ht, &pbs, config).unwrap();
        let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), 400).unwrap();
        let t0 = std::time::Instant::now();
        search.run(&mut oracle).unwrap();
        let frontier = search.engine().frontier().len();
        assert!(
            frontier > 0,
            "node {root}: the budget must leave a frontier"
        );
        let layout = search.engine().layout().clone();
        let avg = search.policy_blocks();
        let v = search.engine_mut().values_under(&avg, &mut oracle).unwrap();
        let got = search.engine().root_value(&v[0]);
        let mut worst = 0.0f64;
        let mut worst_avg = 0.0f64;
        for i in 0..2 {
            let avg_cfv = search.engine().average_root_cfvs(i);
            for x in 0..layout.p {
                if pbs.ranges[i][x] > 0.0 {
                    worst = worst.max((v[i][x] - want[i][x]).abs());
                    worst_avg = worst_avg.max((avg_cfv[x] - want[i][x]).abs());
                }
            }
            // Range-weighted totals are each player's value: unique, unlike the split over x.
            let total =
                |vals: &[f64]| -> f64 { pbs.ranges[i].iter().zip(vals).map(|(r, v)| r * v).sum() };
            let (tg, tw) = (total(&v[i]), total(&want[i]));
            assert!(
                (tg - tw).abs() <= 2e-3,
                "node {root}: player {i}'s range-weighted CFVs {tg} vs {tw}"
            );
        }
        eprintln!(
            "node {root}: {} iterations, {} expansions, frontier {frontier}, {} oracle solves, {:.2} s; root value {got:.6} vs {want_value:.6}; worst CFV diff {worst:.2e}",
            search.engine().iteration(),
            search.expansions(),
            oracle.solves(),
            t0.elapsed().as_secs_f64()
        );
        assert!(
            (got - want_value).abs() <= 2e-3,
            "node {root}: root value {got} vs {want_value}"
        );
        worst_seen = worst_seen.max(worst);
        worst_avg_seen = worst_avg_seen.max(worst_avg);
        checked += 1;
    }
    eprintln!(
        "{checked} roots; worst per-private-state CFV difference {worst_seen:.2e} (under the average), {worst_avg_seen:.2e} (iterate average)"
    );
    assert!(checked >= 3);
}

/// How the re-solver's opponent enters a round-2 subgame.
#[derive(Clone, Copy)]
enum Opponent {
    Gadget(f64),
    Uniform,
}

/// Re-solves the subgame at `pbs` for player `i` from its range and the opponent's values `w`
/// with `iterations` of CFR+; returns the engine.
fn resolve(
    layout: &Arc<TensorTree>,
    ranges: &[Vec<f64>; 2],
    i: usize,
    w: &[f64],
    how: Opponent,
    iterations: usize,
) -> ScalarEngine {
    let o = 1 - i;
    let mut r = ranges.clone();
    if let Opponent::Uniform = how {
        r[o] = (0..layout.p)
            .map(|y| if layout.valid[o][y] { 1.0 } else { 0.0 })
            .collect();
    }
    let mut e = ScalarEngine::new(layout.clone(), cfr_plus(), r).unwrap();
    e.expand_all();
    if let Opponent::Gadget(alpha) = how {
        e.set_gadget(Gadget::new(o, w.to_vec(), ranges[o].clone(), alpha).unwrap())
            .unwrap();
    }
    for _ in 0..iterations {
        e.iterate(&mut NoLeaves).unwrap();
    }
    e
}

/// Largest `(BR_o(y) − w(y)) / m(y)` over opponent states with chance-weighted mass `m(y)`
/// of the re-solver's range: how much more than promised a best-responding opponent gets, in
/// chips per reached hand.
fn excess(e: &mut ScalarEngine, i: usize, w: &[f64], ranges: &[Vec<f64>; 2]) -> f64 {
    let o = 1 - i;
    let l = e.layout().clone();
    let p = l.p;
    let blocks = e.average_blocks();
    let br = e.best_response_values(o, &blocks, &mut NoLeaves).unwrap();
    let mut worst = f64::NEG_INFINITY;
    for y in 0..p {
        let m: f64 = (0..p)
            .map(|x| {
                let js = if i == 0 { x * p + y } else { y * p + x };
                if l.joint_valid[js] {
                    ranges[i][x] * l.chance_reach[js]
                } else {
                    0.0
                }
            })
            .sum();
        if m > 1e-9 {
            worst = worst.max((br[y] - w[y]) / m);
        }
    }
    worst
}

#[test]
fn gadget_resolving_of_leduc_round_two_keeps_the_opponent_at_its_values() {
    let g = compile("leduc_poker");
    let star = solved(&g, 2000);
    let base_nc = nash_conv(&g.tree, &star).nash_conv;
    let roots = round_two_roots(&g);
    assert!(roots.len() >= 10, "{} round-2 roots", roots.len());
    let (mut gadget_worst, mut plain_worst, mut uniform_worst) =
        (f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut patched = [star.clone(), star.clone()];
    for &root in &roots {
        let pbs = Pbs {
            node: root,
            ranges: ranges_at(&g, root, &star),
        };
        let (layout, ranges) = super::gtcfr::layout_for(&g.tree, &g.ht, &pbs).unwrap();
        let star_blocks = [0, 1].map(|i| layout.gather_blocks(&g.tree, i, &star[i]));
        for i in 0..2 {
            let o = 1 - i;
            if ranges[i].iter().sum::<f64>() <= 0.0 {
                continue;
            }
            // The opponent's values: its best response to σ*'s re-solver in this subgame
            // (what σ* itself concedes, so the gadget can keep every one of them).
            let mut e = ScalarEngine::new(layout.clone(), cfr_plus(), ranges.clone()).unwrap();
            e.expand_all();
            let w = e
                .best_response_values(o, &star_blocks, &mut NoLeaves)
                .unwrap()[..layout.p]
                .to_vec();
            let mut sog = resolve(&layout, &ranges, i, &w, Opponent::Gadget(0.5), 1000);
            gadget_worst = gadget_worst.max(excess(&mut sog, i, &w, &ranges));
            let mut plain = resolve(&layout, &ranges, i, &w, Opponent::Gadget(1.0), 1000);
            plain_worst = plain_worst.max(excess(&mut plain, i, &w, &ranges));
            let mut uni = resolve(&layout, &ranges, i, &w, Opponent::Uniform, 1000);
            uniform_worst = uniform_worst.max(excess(&mut uni, i, &w, &ranges));
            layout.scatter_blocks(&g.tree, i, &sog.average_blocks()[i], &mut patched[i][i]);
        }
    }
    let nc: Vec<f64> = patched
        .iter()
        .map(|p| nash_conv(&g.tree, p).nash_conv)
        .collect();
    eprintln!(
        "{} roots: worst excess gadget(α=0.5) {gadget_worst:.2e}, plain gadget {plain_worst:.2e}, uniform range {uniform_worst:.2e}; NashConv σ* {base_nc:.5}, re-solved P0 {:.5}, P1 {:.5}",
        roots.len(),
        nc[0],
        nc[1]
    );
    assert!(
        gadget_worst <= 0.01,
        "α = 0.5 gadget concedes {gadget_worst}"
    );
    assert!(plain_worst <= 0.01, "plain gadget concedes {plain_worst}");
    assert!(
        uniform_worst > 0.01,
        "a uniform opponent range should be exploitable somewhere, worst {uniform_worst}"
    );
    for (i, v) in nc.iter().enumerate() {
        assert!(
            *v <= base_nc + 5e-3,
            "re-solving player {i}: NashConv {v} vs σ* {base_nc}"
        );
    }
}

/// α = 1 is the plain CFR-D gadget: the engine's built-in gadget equals a follow/terminate
/// regret-matching+ loop driven from outside through `update_player` and `set_root_range`.
#[test]
fn alpha_one_is_the_plain_gadget() {
    let g = compile("leduc_poker");
    let star = solved(&g, 200);
    let root = round_two_roots(&g)[3];
    let pbs = Pbs {
        node: root,
        ranges: ranges_at(&g, root, &star),
    };
    let (layout, ranges) = super::gtcfr::layout_for(&g.tree, &g.ht, &pbs).unwrap();
    let p = layout.p;
    let (i, o) = (0, 1);
    let w: Vec<f64> = (0..p).map(|y| 0.01 * y as f64 - 0.02).collect();
    let built = resolve(&layout, &ranges, i, &w, Opponent::Gadget(1.0), 300);
    let mut by_hand = ScalarEngine::new(layout.clone(), cfr_plus(), ranges.clone()).unwrap();
    by_hand.expand_all();
    let mut regret = vec![(0.0f64, 0.0f64); p];
    let follow = |r: &[(f64, f64)]| -> Vec<f64> {
        r.iter()
            .map(|&(f, t)| if f + t > 0.0 { f / (f + t) } else { 0.5 })
            .collect()
    };
    by_hand.set_root_range(o, follow(&regret)).unwrap();
    for _ in 0..300 {
        for pl in 0..2 {
            by_hand.update_player(pl, &mut NoLeaves).unwrap();
            if pl == o {
                let pf = follow(&regret);
                let vf = by_hand.root_cfvs(o).to_vec();
                for y in 0..p {
                    let u = pf[y] * vf[y] + (1.0 - pf[y]) * w[y];
                    regret[y].0 = (regret[y].0 + vf[y] - u).max(0.0);
                    regret[y].1 = (regret[y].1 + w[y] - u).max(0.0);
                }
                by_hand.set_root_range(o, follow(&regret)).unwrap();
            }
        }
    }
    let (a, b) = (built.average_blocks(), by_hand.average_blocks());
    for pl in 0..2 {
        let d = max_diff(&a[pl], &b[pl]);
        assert!(d < 1e-12, "player {pl}: {d:e}");
    }
    assert_eq!(built.root_range(o), by_hand.root_range(o));
    // The gadget moved away from its start somewhere (the test is not vacuous).
    assert!(built.root_range(o).iter().any(|&f| (f - 0.5).abs() > 1e-3));
}

#[test]
fn bad_settings_and_ranges_are_errors_naming_the_culprit() {
    let g = compile("kuhn_poker");
    let pbs = Pbs {
        node: 0,
        ranges: full_ranges(&g, 0),
    };
    let with = |f: fn(&mut GtCfrConfig)| {
        let mut c = GtCfrConfig::default();
        f(&mut c);
        GtCfr::new(&g.tree, &g.ht, &pbs, c)
            .err()
            .map(|e| e.to_string())
    };
    assert!(with(|c| c.simulations = 0).unwrap().contains("`s`"));
    assert!(
        with(|c| c.expansions_per_update = 0.0)
            .unwrap()
            .contains("`c`")
    );
    assert!(
        with(|c| c.expansions_per_update = f64::NAN)
            .unwrap()
            .contains("`c`")
    );
    assert!(with(|c| c.puct = -1.0).unwrap().contains("`puct`"));
    assert!(with(|_| {}).is_none());
    let zero = Pbs {
        node: 0,
        ranges: [vec![0.0; 3], vec![1.0; 3]],
    };
    let e = GtCfr::new(&g.tree, &g.ht, &zero, GtCfrConfig::default()).err();
    assert!(e.unwrap().to_string().contains("player 0"));
    let nan = Pbs {
        node: 0,
        ranges: [vec![1.0; 3], vec![f64::NAN; 3]],
    };
    assert!(GtCfr::new(&g.tree, &g.ht, &nan, GtCfrConfig::default()).is_err());
    let e = Gadget::new(1, vec![0.0; 3], vec![1.0; 3], 1.5).unwrap_err();
    assert!(e.to_string().contains("`alpha`"));
    // A frontier without an evaluator is an error, not a panic.
    let mut s = GtCfr::new(&g.tree, &g.ht, &pbs, GtCfrConfig::default()).unwrap();
    assert!(s.run(&mut NoLeaves).is_err());
}

#[test]
fn simulations_grow_the_tree_reproducibly_from_the_seed() {
    let g = compile("leduc_poker");
    let pbs = Pbs {
        node: 0,
        ranges: full_ranges(&g, 0),
    };
    let run = |seed: u64| {
        let config = GtCfrConfig {
            simulations: 40,
            seed,
            ..GtCfrConfig::default()
        };
        let mut s = GtCfr::new(&g.tree, &g.ht, &pbs, config).unwrap();
        let before = s.engine().frontier().len();
        let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), 5).unwrap();
        s.run(&mut oracle).unwrap();
        let n = s.engine().layout().len();
        let expanded: Vec<bool> = (0..n).map(|k| s.engine().is_expanded(k)).collect();
        assert_eq!(s.simulations(), 40);
        assert_eq!(
            s.engine().iteration(),
            41,
            "c = 1: one update per simulation, plus the last"
        );
        assert!(s.expansions() > 10, "only {} expansions", s.expansions());
        assert!(before > 0);
        // The tree is connected: every expanded node is in the tree.
        assert!((0..n).all(|k| !expanded[k] || s.engine().in_tree(k)));
        (expanded, s.policy_blocks())
    };
    let (a, pa) = run(3);
    let (b, pb) = run(3);
    let (c, _) = run(4);
    assert_eq!(a, b);
    assert_eq!(pa, pb);
    assert_ne!(a, c, "another seed should grow another tree");
}

/// Exact NashConv of the whole-game continual re-solving policy with the exact oracle at the
/// frontier (`oracle_iterations` CFR+ iterations per leaf solve), the policy, and the seconds
/// the walk took.
fn search_policy_nash_conv(
    g: &Game,
    config: &super::ResolverConfig,
    oracle_iterations: usize,
) -> (f64, super::SearchPolicy, f64) {
    let t0 = std::time::Instant::now();
    let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), oracle_iterations).unwrap();
    let sp = super::SearchPolicy::build(g.tree.clone(), g.ht.clone(), config, &mut oracle).unwrap();
    (sp.nash_conv().nash_conv, sp, t0.elapsed().as_secs_f64())
}

fn resolver_config(simulations: usize) -> super::ResolverConfig {
    super::ResolverConfig {
        search: GtCfrConfig {
            simulations,
            ..GtCfrConfig::default()
        },
        ..super::ResolverConfig::default()
    }
}

/// Measurement helper (not a check): `SOG_GAMES`, `SOG_BUDGETS`, `SOG_ORACLE`, `SOG_ALPHA`,
/// `SOG_C`, `SOG_W` (average|br|profile), `SOG_FULL` pick the runs.
#[test]
#[ignore = "measurement: prints search-policy NashConv over budgets"]
fn measure_search_policy_budgets() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.into());
    let oracle: usize = env("SOG_ORACLE", "200").parse().unwrap();
    for name in env("SOG_GAMES", "kuhn_poker").split(',') {
        let g = compile(name);
        for s in env("SOG_BUDGETS", "50,200,800").split(',') {
            let mut config = resolver_config(s.parse().unwrap());
            config.alpha = env("SOG_ALPHA", "0.5").parse().unwrap();
            config.search.expansions_per_update = env("SOG_C", "1").parse().unwrap();
            config.full_depth = std::env::var("SOG_FULL").is_ok();
            config.opponent_values = match env("SOG_W", "average").as_str() {
                "br" => super::OpponentValues::BestResponse,
                "profile" => super::OpponentValues::Profile,
                _ => super::OpponentValues::Average,
            };
            let (nc, sp, secs) = search_policy_nash_conv(&g, &config, oracle);
            eprintln!(
                "{name} s={s} oracle={oracle}: NashConv {nc:.5} ({secs:.2} s) {:?}",
                sp.stats()
            );
        }
    }
}

/// `n` and its ancestors up to the root.
fn ancestors(tree: &PublicTree, mut n: u32) -> Vec<u32> {
    let mut out = Vec::new();
    while n != crate::tree::NONE {
        out.push(n);
        n = tree.nodes[n as usize].parent;
    }
    out
}

/// Decision nodes of `player` below `from` with no decision of `player` in between: the
/// candidates for its next decision.
fn next_decisions(tree: &PublicTree, from: u32, player: usize) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack: Vec<u32> = tree.nodes[from as usize].children.clone();
    while let Some(n) = stack.pop() {
        match tree.nodes[n as usize].kind {
            NodeKind::Decision(p) if p == player => out.push(n),
            _ => stack.extend(tree.nodes[n as usize].children.iter().copied()),
        }
    }
    out.sort_unstable();
    out
}

/// Every node of a search tree lies on the path from the search root to `current`, is a child
/// of a node on it (an off-path frontier or terminal node), or lies below `current`.
fn grown_only_below(tree: &PublicTree, nodes: &[u32], root: u32, current: u32) -> bool {
    let path = ancestors(tree, current);
    let root_pos = path
        .iter()
        .position(|&n| n == root)
        .expect("root above current");
    let path = &path[..=root_pos];
    nodes.iter().all(|&n| {
        path.contains(&n)
            || path.contains(&tree.nodes[n as usize].parent)
            || ancestors(tree, n).contains(&current)
    })
}

#[test]
fn resolver_restarts_at_the_deepest_node_of_its_last_tree_and_grows_below_the_current_state() {
    use super::{Resolver, ResolverConfig};
    let g = compile("leduc_poker");
    let config = ResolverConfig {
        search: GtCfrConfig {
            simulations: 8,
            ..GtCfrConfig::default()
        },
        ..ResolverConfig::default()
    };
    let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), 50).unwrap();
    let mut r = Resolver::new(0, g.tree.clone(), g.ht.clone(), config).unwrap();
    let first = next_decisions(&g.tree, 0, 0)[0];
    let p1_node = next_decisions(&g.tree, first, 1)[0];
    let e = r.act(p1_node, 1, &mut oracle).unwrap_err().to_string();
    assert!(e.contains("`node`") && e.contains("player 0"), "{e}");
    assert!(!r.has_summary());
    let a = r.act(first, 1, &mut oracle).unwrap();
    assert!(a.searched && !a.gadget, "{a:?}");
    assert_eq!(a.root, 0, "the first search is rooted at the game's root");
    for row in a.rows.iter().filter(|r| !r.is_empty()) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{row:?}");
    }
    let t1 = r.last_tree();
    assert!(a.expansions > 0 && t1.len() > 4, "{a:?}");
    assert!(grown_only_below(&g.tree, &t1, 0, first));
    // The next decisions: some inside the last tree, some beyond its frontier.
    let next = next_decisions(&g.tree, first, 0);
    let inside = *next.iter().find(|n| t1.contains(n)).expect("one inside");
    let outside = *next
        .iter()
        .find(|n| !t1.contains(n))
        .expect("one beyond the frontier (the budget is small)");
    let mut r_in = r.clone();
    let b = r_in.act(inside, 2, &mut oracle).unwrap();
    assert!(b.searched && b.gadget, "{b:?}");
    assert_eq!(b.root, inside, "the current state was in the last tree");
    assert!(grown_only_below(&g.tree, &r_in.last_tree(), inside, inside));
    let want_root = *ancestors(&g.tree, outside)
        .iter()
        .find(|n| t1.contains(n))
        .unwrap();
    assert_ne!(want_root, outside);
    let mut r_out = r.clone();
    let c = r_out.act(outside, 3, &mut oracle).unwrap();
    assert!(c.gadget, "{c:?}");
    assert_eq!(c.root, want_root, "deepest ancestor in the last tree");
    let t2 = r_out.last_tree();
    assert!(t2.contains(&want_root) && t2.contains(&outside));
    assert!(grown_only_below(&g.tree, &t2, want_root, outside));
    // A node above the last search's root does not follow it.
    let e = r_out.act(first, 4, &mut oracle).unwrap_err().to_string();
    assert!(e.contains("does not follow"), "{e}");
}

/// Continual re-solving without depth limits: every step a full-depth CFR+ re-solve of the
/// restart node's subgame (`s + 1` iterations). With the opponent values averaged over the
/// iterations (DeepStack's choice, the default) the chain's NashConv falls towards 0 with the
/// iterations; with the values of the answered profile it stalls near 0.07, since values below
/// what the opponent can get against the previous answer make the gadget's promise infeasible.
#[test]
fn full_depth_continual_resolving_converges_with_averaged_opponent_values_on_leduc() {
    let g = compile("leduc_poker");
    let run = |s: usize, w: super::OpponentValues| {
        let mut config = resolver_config(s);
        config.full_depth = true;
        config.opponent_values = w;
        let (nc, sp, secs) = search_policy_nash_conv(&g, &config, 1);
        assert_eq!(sp.stats().searches_with_frontier, 0);
        assert_eq!(sp.stats().gadget_searches + 3, sp.stats().searches);
        eprintln!("full depth, {w:?}, s = {s}: NashConv {nc:.5} ({secs:.2} s)");
        nc
    };
    let avg: Vec<f64> = [50, 200, 800]
        .iter()
        .map(|&s| run(s, super::OpponentValues::Average))
        .collect();
    assert!(avg[0] > avg[1] && avg[1] > avg[2], "{avg:?}");
    assert!(avg[2] <= 2e-3, "{avg:?}");
    let profile = run(800, super::OpponentValues::Profile);
    assert!(
        profile > 10.0 * avg[2],
        "profile values {profile} vs average {}",
        avg[2]
    );
}

/// Student of Games' Theorem 2, qualitatively, on Kuhn: the exact NashConv of the whole-game
/// search policy (GT-CFR, c = 1, exact oracle at the frontier) falls strictly over the
/// simulation budgets 50, 200, 800. Also: the policy answers through [`crate::policy::Policy`]
/// exactly as its tree arrays say.
#[test]
fn kuhn_oracle_search_policy_nash_conv_falls_with_the_budget() {
    let g = compile("kuhn_poker");
    let mut ncs = Vec::new();
    for s in [50, 200, 800] {
        let (nc, sp, secs) = search_policy_nash_conv(&g, &resolver_config(s), 200);
        eprintln!(
            "kuhn s = {s}: NashConv {nc:.6} ({secs:.2} s) {:?}",
            sp.stats()
        );
        assert!(
            sp.stats().searches_with_frontier > 0,
            "the oracle must be used"
        );
        if s == 50 {
            let game = load_game("kuhn_poker").unwrap();
            let via_trait = crate::eval::tree_policy(&g.tree, game.as_ref(), &sp).unwrap();
            assert_eq!(&via_trait, sp.tree_policy());
        }
        ncs.push(nc);
    }
    assert!(ncs[0] > ncs[1] && ncs[1] > ncs[2], "{ncs:?}");
    assert!(ncs[2] <= 2e-3, "{ncs:?}");
}

/// NashConv of the Leduc search policy (GT-CFR, c = 1, exact oracle with 200 CFR+ iterations
/// per leaf solve) at `budgets`; asserts a strict fall and returns the values.
fn leduc_search_policy_falls(budgets: &[usize]) -> Vec<f64> {
    let g = compile("leduc_poker");
    let mut ncs = Vec::new();
    for &s in budgets {
        let (nc, sp, secs) = search_policy_nash_conv(&g, &resolver_config(s), 200);
        eprintln!(
            "leduc s = {s}: NashConv {nc:.5} ({secs:.1} s) {:?}",
            sp.stats()
        );
        assert!(
            sp.stats().searches_with_frontier > 0,
            "the oracle must be used"
        );
        ncs.push(nc);
    }
    assert!(ncs.windows(2).all(|w| w[0] > w[1]), "{ncs:?}");
    ncs
}

/// Theorem 2 qualitatively on Leduc at budgets that run in seconds (10, 25, 50 simulations;
/// measured 0.937, 0.398, 0.322 in about 5, 7 and 12 s).
#[test]
fn leduc_oracle_search_policy_nash_conv_falls_with_the_budget() {
    let ncs = leduc_search_policy_falls(&[10, 25, 50]);
    assert!(ncs[2] <= 0.4, "{ncs:?}");
}

/// Theorem 2 qualitatively on Leduc at budgets 50, 200, 800 (measured 0.322, 0.175, 0.0549;
/// about 12 s, 50 s and 3 min); the bound at 800 is 0.06, above the measured value.
#[test]
#[ignore = "about 4 minutes"]
fn leduc_oracle_search_policy_nash_conv_at_budgets_50_200_800() {
    let ncs = leduc_search_policy_falls(&[50, 200, 800]);
    assert!(ncs[2] <= 0.06, "{ncs:?}");
}

/// Counts evaluator calls and queries on top of another evaluator.
struct Counting<'a> {
    inner: &'a mut dyn super::LeafValues,
    calls: u64,
    queries: u64,
}

impl super::LeafValues for Counting<'_> {
    fn evaluate(&mut self, q: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, super::SearchError> {
        self.calls += 1;
        self.queries += q.len() as u64;
        self.inner.evaluate(q)
    }
}

/// B searches in lock-step give exactly the B separate searches' policies (bit for bit, the
/// exact oracle answers each query on its own), with one evaluator call per single update
/// for all of them instead of one per search.
#[test]
fn lockstep_searches_equal_separate_searches_with_one_evaluation_per_update() {
    let g = compile("leduc_poker");
    let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), 30).unwrap();
    let roots = [0u32, 0, round_two_roots(&g)[0]];
    let make = |b: usize| {
        let pbs = Pbs {
            node: roots[b],
            ranges: full_ranges(&g, roots[b]),
        };
        let cfg = GtCfrConfig {
            simulations: 6,
            seed: 11 + b as u64,
            ..GtCfrConfig::default()
        };
        GtCfr::new(&g.tree, &g.ht, &pbs, cfg).unwrap()
    };
    let mut separate_calls = 0;
    let mut separate: Vec<[Vec<f64>; 2]> = Vec::new();
    for b in 0..roots.len() {
        let mut s = make(b);
        let mut counting = Counting {
            inner: &mut oracle,
            calls: 0,
            queries: 0,
        };
        s.run(&mut counting).unwrap();
        separate_calls += counting.calls;
        separate.push(s.policy_blocks());
    }
    let mut batch: Vec<_> = (0..roots.len()).map(make).collect();
    let mut counting = Counting {
        inner: &mut oracle,
        calls: 0,
        queries: 0,
    };
    let calls = super::run_lockstep(&mut batch, &mut counting)
        .unwrap()
        .calls;
    assert_eq!(calls, counting.calls);
    // Exactly one call per single update (two per iteration), for all searches together.
    let iterations = batch[0].engine().iteration();
    assert!(batch.iter().all(|s| s.engine().iteration() == iterations));
    assert_eq!(calls, 2 * iterations, "{iterations} iterations");
    for (b, s) in batch.iter().enumerate() {
        assert_eq!(s.policy_blocks(), separate[b], "search {b}");
        assert_eq!(s.simulations(), 6);
    }
    assert!(counting.queries > 0);
    assert!(
        calls < separate_calls && calls * 2 <= separate_calls,
        "lock-step {calls} calls, separate {separate_calls}"
    );
}

/// Top-k selection: the mask keeps the k most probable actions (ties: lower index first); a
/// search with k at least the action count is the unrestricted search bit for bit, k = 1
/// grows another tree (simulations follow the current policy's argmax), k = 0 is refused.
#[test]
fn top_k_restricts_the_simulations_selection() {
    use super::gtcfr::top_k_mask;
    assert_eq!(top_k_mask(&[0.2, 0.5, 0.3], 2), vec![false, true, true]);
    assert_eq!(top_k_mask(&[0.25, 0.25, 0.5], 2), vec![true, false, true]);
    assert_eq!(top_k_mask(&[0.5, 0.5], 1), vec![true, false]);
    let g = compile("leduc_poker");
    let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), 30).unwrap();
    let pbs = Pbs {
        node: 0,
        ranges: full_ranges(&g, 0),
    };
    let mut run = |top_k: Option<usize>| {
        let cfg = GtCfrConfig {
            simulations: 30,
            seed: 5,
            top_k,
            ..GtCfrConfig::default()
        };
        let mut s = GtCfr::new(&g.tree, &g.ht, &pbs, cfg).unwrap();
        s.run(&mut oracle).unwrap();
        (s.policy_blocks(), s.engine().frontier())
    };
    let all = run(None);
    assert_eq!(run(Some(3)), all, "k = 3 covers every Leduc action");
    let one = run(Some(1));
    assert_ne!(one.1, all.1, "k = 1 grows the same tree as no restriction");
    let cfg = GtCfrConfig {
        top_k: Some(0),
        ..GtCfrConfig::default()
    };
    let e = GtCfr::new(&g.tree, &g.ht, &pbs, cfg)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("top_k"), "{e}");
}
