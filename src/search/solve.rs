//! Solving a public belief state with depth-limited search: the "query solver" of Student of
//! Games' training. A frontier query (a PBS) is re-solved by GT-CFR from that PBS with the
//! current value network at the new frontier; the root counterfactual values under the
//! search's average strategy become the network's value targets. Near the end of the game
//! the search reaches terminals and its values are exact; elsewhere they bootstrap from the
//! network, so repeated rounds carry exact values up the tree without any oracle.

use super::gtcfr::{GtCfr, GtCfrConfig};
use super::{LeafValues, Pbs, RegretEngine, SearchError};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;

/// Root CFVs of both players at `q` (each of the length of `q`'s range, the
/// [`LeafValues`] convention) after a GT-CFR search of `config` with `leaves` at its frontier.
///
/// A player without mass in `q` is searched with a uniform range in its place, and the
/// opponent's values, which depend on that missing mass, are returned as zeros (as the exact
/// oracle does).
pub fn solve_pbs(
    tree: &PublicTree,
    ht: &HistoryTree,
    q: &Pbs,
    config: &GtCfrConfig,
    leaves: &mut dyn LeafValues,
) -> Result<[Vec<f64>; 2], SearchError> {
    Ok(solve_pbs_with_frontier(tree, ht, q, config, leaves)?.0)
}

/// [`solve_pbs`], also returning the search's final frontier as public belief states (both
/// players' reaches under the average strategy, nodes neither reaches left out): the
/// *recursive queries* of Student of Games (§4.9). Empty when a player of `q` had no mass
/// (its stand-in uniform range would make them artificial).
pub fn solve_pbs_with_frontier(
    tree: &PublicTree,
    ht: &HistoryTree,
    q: &Pbs,
    config: &GtCfrConfig,
    leaves: &mut dyn LeafValues,
) -> Result<([Vec<f64>; 2], Vec<Pbs>), SearchError> {
    let empty: [bool; 2] = std::array::from_fn(|i| q.ranges[i].iter().all(|&r| r <= 0.0));
    let mut pbs = q.clone();
    for (i, range) in pbs.ranges.iter_mut().enumerate() {
        if empty[i] {
            *range = vec![1.0; q.ranges[i].len().max(1)];
        }
    }
    let mut search = GtCfr::new_any(tree, ht, &pbs, config.clone(), None)?;
    search.run(leaves)?;
    let avg = search.engine().average_blocks();
    let v = search.engine_mut().values_under(&avg, leaves)?;
    let layout = search.engine().layout().clone();
    let p = layout.p;
    let values = std::array::from_fn(|i| {
        let mut out = vec![0.0; q.ranges[i].len()];
        if !empty[1 - i] {
            let n = out.len().min(p);
            out[..n].copy_from_slice(&v[i][..n]);
        }
        out
    });
    let mut frontier = Vec::new();
    if !empty[0] && !empty[1] {
        let engine = search.engine_mut();
        let nodes = engine.frontier();
        let reach = engine.reaches_under(&avg);
        frontier = nodes
            .into_iter()
            .map(|f| Pbs {
                node: layout.public_node[f],
                ranges: std::array::from_fn(|i| reach[i][f * p..(f + 1) * p].to_vec()),
            })
            .filter(|q| q.ranges.iter().any(|r| r.iter().any(|&x| x > 0.0)))
            .collect();
    }
    Ok((values, frontier))
}

/// A [`LeafValues`] that answers every query with [`solve_pbs`] over an inner evaluator:
/// labels for value-network training.
pub struct SearchLabels<'a> {
    pub tree: &'a PublicTree,
    pub ht: &'a HistoryTree,
    pub config: GtCfrConfig,
    /// The evaluator at the searches' frontiers (the current network).
    pub inner: &'a mut dyn LeafValues,
}

impl LeafValues for SearchLabels<'_> {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        queries
            .iter()
            .map(|q| solve_pbs(self.tree, self.ht, q, &self.config, self.inner))
            .collect()
    }
}
