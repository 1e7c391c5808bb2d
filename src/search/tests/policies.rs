//! Search policies: NashConv falling with the budget, continual re-solving restarting below
//! its last tree, lockstep searches, and top-k selection.

use super::*;

/// Exact NashConv of the whole-game continual re-solving policy with the exact oracle at the
/// frontier (`oracle_iterations` CFR+ iterations per leaf solve), the policy, and the seconds
/// the walk took.
fn search_policy_nash_conv(
    g: &Game,
    config: &crate::search::ResolverConfig,
    oracle_iterations: usize,
) -> (f64, crate::search::SearchPolicy, f64) {
    let t0 = std::time::Instant::now();
    let mut oracle = SubgameOracle::new(g.tree.clone(), g.ht.clone(), oracle_iterations).unwrap();
    let sp = crate::search::SearchPolicy::build(g.tree.clone(), g.ht.clone(), config, &mut oracle)
        .unwrap();
    (sp.nash_conv().nash_conv, sp, t0.elapsed().as_secs_f64())
}

fn resolver_config(simulations: usize) -> crate::search::ResolverConfig {
    crate::search::ResolverConfig {
        search: GtCfrConfig {
            simulations,
            ..GtCfrConfig::default()
        },
        ..crate::search::ResolverConfig::default()
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
                "br" => crate::search::OpponentValues::BestResponse,
                "profile" => crate::search::OpponentValues::Profile,
                _ => crate::search::OpponentValues::Average,
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
    use crate::search::{Resolver, ResolverConfig};
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
    let run = |s: usize, w: crate::search::OpponentValues| {
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
        .map(|&s| run(s, crate::search::OpponentValues::Average))
        .collect();
    assert!(avg[0] > avg[1] && avg[1] > avg[2], "{avg:?}");
    assert!(avg[2] <= 2e-3, "{avg:?}");
    let profile = run(800, crate::search::OpponentValues::Profile);
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
    inner: &'a mut dyn crate::search::LeafValues,
    calls: u64,
    queries: u64,
}

impl crate::search::LeafValues for Counting<'_> {
    fn evaluate(&mut self, q: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, crate::search::SearchError> {
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
    let calls = crate::search::run_lockstep(&mut batch, &mut counting)
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
    use crate::search::gtcfr::top_k_mask;
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
