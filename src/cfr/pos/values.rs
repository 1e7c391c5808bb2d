//! Exact values, the value sums of a node update, and the random streams of the walks.

use super::PosOptions;
use super::tables::PassScratch;
use super::tables::Tables;
use crate::cfr::baseline::Baseline;
use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use crate::tree::history::HistoryKind;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;

/// Exact expected value (player 0) of every history under `policy`, children before parents.
pub fn exact_history_values(
    tree: &PublicTree,
    ht: &HistoryTree,
    policy: &TreePolicy,
    out: &mut [f64],
) {
    ht.values_into(tree, policy, out);
}

/// Exact counterfactual action values `v(I,a) = Σ_{h∈I} π_{-p}(h) u(ha)` of player `p` (in
/// `p`'s own terms) under `policy`, per global action index.
pub fn exact_cf_values(
    tree: &PublicTree,
    ht: &HistoryTree,
    policy: &TreePolicy,
    p: usize,
) -> Vec<f64> {
    let mut u = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut u);
    let r = ht.opponent_reach(tree, policy, p);
    let sign = if p == 0 { 1.0 } else { -1.0 };
    let mut out = vec![0.0; tree.infosets[p].num_actions_total()];
    for (h, &reach) in r.iter().enumerate() {
        if ht.kind[h] == HistoryKind::Decision(p) {
            let base = tree.infosets[p].offset[ht.infoset[h] as usize] as usize;
            for (k, c) in ht.children(h).enumerate() {
                out[base + k] += sign * reach * u[c];
            }
        }
    }
    out
}

/// Writes `out[j] = value(j)` and returns, in the same pass, the history value a node update
/// needs: with `decision`, [`expected_value`]`(weights, out)` (the first value when all are
/// equal, else the dot product); at chance, `Σ_j weights[j] out[j]` — the same sums, in the same
/// order, as computing `out` first.
#[inline]
pub(super) fn values_and_fill(
    weights: &[f64],
    out: &mut [f64],
    decision: bool,
    value: impl Fn(usize) -> f64,
) -> f64 {
    let first = value(0);
    let mut equal = true;
    let dot: f64 = out
        .iter_mut()
        .zip(weights)
        .enumerate()
        .map(|(j, (o, &w))| {
            let x = if j == 0 { first } else { value(j) };
            *o = x;
            equal &= x == first;
            w * x
        })
        .sum();
    if decision && equal { first } else { dot }
}

/// Sets `reach[c]` for the histories `c` of `next_hs` to `step(reach[parent], g)`, where `g` is
/// the global action index of the edge into `c`; clears `child_index` unless every `c` is the
/// `child_index`-th child of its parent.
#[inline(always)]
pub(super) fn propagate_reach(
    ht: &HistoryTree,
    next_hs: &[u32],
    reach: &mut [[f64; 2]],
    child_index: &mut u32,
    step: impl Fn([f64; 2], usize) -> [f64; 2],
) {
    for &c in next_hs {
        let c = c as usize;
        let h = ht.parent[c] as usize;
        let st = ht.steps[h];
        let j = c - st.first_child as usize;
        if j as u32 != *child_index {
            *child_index = crate::tree::NONE;
        }
        reach[c] = step(reach[h], st.action_base as usize + j);
    }
}

/// What [`predictive_hit_values`] reads: the node's weights table (the acting player's
/// current policy, or the chance probabilities indexed by child), the baselines, the sampled
/// child index `hit` and its probability `q`.
pub(super) struct PredictiveHit<'a> {
    pub(super) ht: &'a HistoryTree,
    pub(super) weights: &'a [f64],
    pub(super) decision: bool,
    pub(super) base_sum: &'a [f64],
    pub(super) hit: usize,
    pub(super) q: f64,
    /// Store each child's corrected action value in `action_values` (step 2 reads them).
    pub(super) write_actions: bool,
    /// Also compute the values under σ_{t+1} into `next_values` (see `update_node`).
    pub(super) fuse_next: bool,
}

/// Step 1 of the node update for the predictive baseline when every history of the node has
/// its `hit`-th child in the sampled successor: the same arithmetic as the general loop, with
/// the tables borrowed once as slices for the whole node (so their headers are not reloaded
/// per history) and the action values stored only where a later step reads them.
#[inline(always)]
pub(super) fn predictive_hit_values(a: PredictiveHit<'_>, hs: &[u32], sc: &mut PassScratch) {
    let PredictiveHit {
        ht,
        weights,
        decision,
        base_sum,
        hit,
        q,
        write_actions,
        fuse_next,
    } = a;
    let steps = &ht.steps[..];
    let values = &mut sc.values[..];
    let next_values = &mut sc.next_values[..];
    let action_values = &mut sc.action_values[..];
    for &h in hs {
        let h = h as usize;
        let st = steps[h];
        let kids = st.children();
        let w0 = if decision {
            st.action_base as usize
        } else {
            kids.start
        };
        let w = &weights[w0..w0 + kids.len()];
        let bs = &base_sum[kids.clone()];
        let c = kids.start + hit;
        let b = bs[hit];
        let x = b + (values[c] - b) / q;
        if fuse_next {
            let xn = next_values[c];
            let (v, vn) = values_and_next(w, decision, hit, x, xn, bs);
            values[h] = v;
            next_values[h] = vn;
        } else if write_actions {
            let av = &mut action_values[kids];
            values[h] = values_and_fill(w, av, decision, |j| if j == hit { x } else { bs[j] });
        } else {
            values[h] = value_with_hit(w, decision, hit, x, bs);
        }
    }
}

/// [`values_and_fill`] with `value(j)` = `x` at `hit` and `bs[j]` elsewhere, storing nothing.
#[inline(always)]
pub(super) fn value_with_hit(
    weights: &[f64],
    decision: bool,
    hit: usize,
    x: f64,
    bs: &[f64],
) -> f64 {
    let first = if hit == 0 { x } else { bs[0] };
    let mut equal = true;
    let mut dot = -0.0;
    for (j, (&w, &b)) in weights.iter().zip(bs).enumerate() {
        let y = if j == hit { x } else { b };
        equal &= y == first;
        dot += w * y;
    }
    if decision && equal { first } else { dot }
}

/// [`values_and_fill`] for the predictive baseline when only the child `hit` lies in the
/// sampled successor (`value(j)` = `x` at `hit` and `bs[j]` elsewhere, nothing stored), and
/// with it, in the same loop, the value under σ_{t+1} = `weights` of the baselines after the
/// sampled child's takes `xn` (as `learn_baselines` computes it: [`expected_value`] with
/// `decision`, else `Σ_j weights[j] b_j`). Sums in action order from -0.0, as
/// `Iterator::sum` does.
#[inline(always)]
pub(super) fn values_and_next(
    weights: &[f64],
    decision: bool,
    hit: usize,
    x: f64,
    xn: f64,
    bs: &[f64],
) -> (f64, f64) {
    let (first, first_n) = if hit == 0 { (x, xn) } else { (bs[0], bs[0]) };
    let (mut equal, mut equal_n) = (true, true);
    let (mut dot, mut dot_n) = (-0.0, -0.0);
    for (j, (&w, &b)) in weights.iter().zip(bs).enumerate() {
        let (y, z) = if j == hit { (x, xn) } else { (b, b) };
        equal &= y == first;
        equal_n &= z == first_n;
        dot += w * y;
        dot_n += w * z;
    }
    (
        if decision && equal { first } else { dot },
        if decision && equal_n { first_n } else { dot_n },
    )
}

/// The generator of iteration `t` (or of a measurement stream): a function of `(seed, t)` only.
pub(crate) fn stream(seed: u64, t: u64) -> SplitMix64 {
    let mut mix = SplitMix64::new(seed ^ t.wrapping_mul(0xD1B5_4A32_D192_ED03));
    SplitMix64::new(mix.next_u64())
}

/// The generator of walk `k` of pass `turn` (0, or 1 for player 1's turn of alternating
/// updates) of iteration `t` with `walks > 1`: a function of `(seed, t, turn, k)` only.
pub(super) fn walk_stream(seed: u64, t: u64, turn: usize, k: usize) -> SplitMix64 {
    let id = ((turn as u64) << 32 | k as u64).wrapping_add(1);
    stream(seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15), t)
}

/// Index in `children` of `node`'s successor on the way to public node `target`.
pub(super) fn successor_towards(tree: &PublicTree, node: u32, target: u32) -> usize {
    let nodes = &tree.nodes;
    let mut t = target;
    while nodes[t as usize].parent != node {
        t = nodes[t as usize].parent;
        assert!(
            t != crate::tree::NONE,
            "public node {target} is not below {node}"
        );
    }
    nodes[node as usize]
        .children
        .iter()
        .position(|&c| c == t)
        .unwrap()
}

/// The baseline `b(h, a)` of the edge into history `c` (`decision`: the acting player and
/// the global action index of that edge at decision histories).
#[inline]
pub(super) fn baseline_of(
    opts: &PosOptions,
    tab: &Tables,
    c: usize,
    decision: Option<(usize, usize)>,
) -> f64 {
    let learned = |s: f64, w: f64| if w > 0.0 { s / w } else { 0.0 };
    match opts.baseline {
        Baseline::None | Baseline::Static => 0.0,
        Baseline::Predictive => tab.base_sum[c],
        Baseline::LearnedHistory => learned(tab.base_sum[c], tab.base_w[c]),
        Baseline::LearnedInfoset => match decision {
            Some((p, g)) => learned(tab.inf_sum[p][g], tab.inf_w[p][g]),
            None => learned(tab.base_sum[c], tab.base_w[c]),
        },
    }
}
