//! Re-solving with the gadget: the opponent kept at its values, and alpha 1 as the plain gadget.

use super::*;

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
        let (layout, ranges) = crate::search::gtcfr::layout_for(&g.tree, &g.ht, &pbs).unwrap();
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
    let (layout, ranges) = crate::search::gtcfr::layout_for(&g.tree, &g.ht, &pbs).unwrap();
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
