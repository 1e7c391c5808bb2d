use super::engine::{Gadget, NoLeaves, RegretEngine, ScalarEngine};
use super::gtcfr::{GtCfr, GtCfrConfig};
use super::oracle::SubgameOracle;
use super::{Pbs, SearchError};
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
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

fn scatter(tree: &PublicTree, l: &TensorTree, blocks: &[Vec<f64>; 2]) -> TreePolicy {
    std::array::from_fn(|i| {
        let mut out = vec![f64::NAN; tree.infosets[i].num_actions_total()];
        l.scatter_blocks(tree, i, &blocks[i], &mut out);
        out
    })
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
