//! An exact public-belief-state oracle: the counterfactual values of a frontier PBS obtained by
//! solving the whole subgame below it for the given ranges (CFR+ on the scalar engine, values
//! of both players under the average strategies). It stands in for a value network in tests
//! and in exact evaluations of search.

use super::engine::{NoLeaves, RegretEngine, ScalarEngine};
use super::{LeafValues, Pbs, SearchError};
use crate::cfr::SolverSpec;
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::TensorTree;
use std::collections::HashMap;
use std::sync::Arc;

/// Solves each queried subgame from scratch with `iterations` CFR+ iterations.
pub struct SubgameOracle {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    iterations: usize,
    layouts: HashMap<u32, Arc<TensorTree>>,
    solves: u64,
}

impl SubgameOracle {
    /// An oracle over the compiled game (`tree`, `ht`) running `iterations` (≥ 1) per query.
    pub fn new(
        tree: Arc<PublicTree>,
        ht: Arc<HistoryTree>,
        iterations: usize,
    ) -> Result<SubgameOracle, SearchError> {
        if iterations == 0 {
            return Err(SearchError::BadSetting {
                key: "oracle.iterations",
                value: "0".into(),
                reason: "at least one iteration".into(),
            });
        }
        Ok(SubgameOracle {
            tree,
            ht,
            iterations,
            layouts: HashMap::new(),
            solves: 0,
        })
    }

    /// Subgames solved so far.
    pub fn solves(&self) -> u64 {
        self.solves
    }

    fn layout(&mut self, node: u32) -> Result<Arc<TensorTree>, SearchError> {
        if let Some(l) = self.layouts.get(&node) {
            return Ok(l.clone());
        }
        if node as usize >= self.tree.nodes.len() {
            return Err(SearchError::Leaf(format!(
                "public node {node} does not exist"
            )));
        }
        let l = Arc::new(TensorTree::build(&self.tree, &self.ht, node, None)?);
        self.layouts.insert(node, l.clone());
        Ok(l)
    }

    /// Values of one query (see [`LeafValues`]).
    fn solve(&mut self, q: &Pbs) -> Result<[Vec<f64>; 2], SearchError> {
        let layout = self.layout(q.node)?;
        let p = layout.p;
        let mut ranges: [Vec<f64>; 2] = std::array::from_fn(|i| {
            (0..p)
                .map(|x| {
                    if layout.valid[i][x] {
                        q.ranges[i].get(x).copied().unwrap_or(0.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        });
        // A player without mass gives the opponent zero values whatever is played; solve with a
        // uniform range in its place (the opponent's values then follow that range's
        // equilibrium) and zero the values that depend on the missing mass.
        let empty: [bool; 2] = std::array::from_fn(|i| ranges[i].iter().all(|&r| r <= 0.0));
        for i in 0..2 {
            if empty[i] {
                ranges[i] = (0..p)
                    .map(|x| if layout.valid[i][x] { 1.0 } else { 0.0 })
                    .collect();
            }
        }
        let spec = SolverSpec::named("cfr+").expect("known algorithm");
        let mut engine = ScalarEngine::new(layout, spec, ranges)?;
        engine.expand_all();
        for _ in 0..self.iterations {
            engine.iterate(&mut NoLeaves)?;
        }
        let avg = engine.average_blocks();
        let v = engine.values_under(&avg, &mut NoLeaves)?;
        self.solves += 1;
        Ok(std::array::from_fn(|i| {
            let len = q.ranges[i].len().max(p);
            let mut out = vec![0.0; len];
            if !empty[1 - i] {
                out[..p].copy_from_slice(&v[i][..p]);
            }
            out.truncate(q.ranges[i].len());
            out
        }))
    }
}

impl LeafValues for SubgameOracle {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        queries.iter().map(|q| self.solve(q)).collect()
    }
}
