//! Strategy-block arithmetic shared by the regret engines: the scalar engine of this module
//! and the tensor engine of `nn::public::engine` both index, average and read their
//! `[decision x P x A]` blocks through these functions.

use crate::game::Player;
use crate::tree::NONE;
use crate::tree::tensor::TensorTree;
use std::ops::Range;

/// The live rows of player `p`'s decision `d` (private states `x` that belong to an
/// infoset), in ascending `x`, each as `(x, offset of the row in the blocks)`.
pub fn live_rows(l: &TensorTree, p: Player, d: usize) -> impl Iterator<Item = (usize, usize)> {
    let (pp, a) = (l.p, l.a);
    let infoset = &l.infoset[p][d * pp..(d + 1) * pp];
    (0..pp)
        .filter(move |&x| infoset[x] != NONE)
        .map(move |x| (x, (d * pp + x) * a))
}

/// The entries of row `(d, x)` of player `p` in the blocks: one per legal action.
pub fn row_span(l: &TensorTree, p: Player, d: usize, x: usize) -> Range<usize> {
    let row = (d * l.p + x) * l.a;
    row..row + l.num_actions[p][d] as usize
}

/// Player `p`'s average strategy as blocks: every live row of `cumulative` normalised to sum
/// to 1 (uniform where it sums to 0); the other entries are those of `current`.
pub fn average_blocks(
    l: &TensorTree,
    p: Player,
    cumulative: &[f64],
    mut current: Vec<f64>,
) -> Vec<f64> {
    for d in 0..l.decisions[p].len() {
        let na = l.num_actions[p][d] as usize;
        for (_, row) in live_rows(l, p, d) {
            let c = &cumulative[row..row + na];
            let total: f64 = c.iter().sum();
            for k in 0..na {
                current[row + k] = if total > 0.0 {
                    c[k] / total
                } else {
                    1.0 / na as f64
                };
            }
        }
    }
    current
}

/// `sum / weight` per entry (0 when the weight is 0): averaged root values.
pub fn weighted_means(sum: &[f64], weight: f64) -> Vec<f64> {
    sum.iter()
        .map(|s| if weight > 0.0 { s / weight } else { 0.0 })
        .collect()
}

/// `sum[s] / weights[s / pp]` per slot (0 where the node's weight is 0): averaged slot
/// values of `[node x P]` sums with one weight per node.
pub fn slot_means(sum: &[f64], weights: &[f64], pp: usize) -> Vec<f64> {
    sum.iter()
        .enumerate()
        .map(|(s, x)| {
            let w = weights[s / pp];
            if w > 0.0 { x / w } else { 0.0 }
        })
        .collect()
}
