//! One pass of the solver: the sampled walk down a public path and the node updates on the
//! way back up.

use super::PathStep;
use super::PosOptions;
use super::Sampling;
use super::tables::Extras;
use super::tables::NONE_USIZE;
use super::tables::NodeScratch;
use super::tables::PassScratch;
use super::tables::Sink;
use super::tables::zeroed;
use super::values::PredictiveHit;
use super::values::baseline_of;
use super::values::exact_history_values;
use super::values::predictive_hit_values;
use super::values::propagate_reach;
use super::values::successor_towards;
use super::values::values_and_fill;
use crate::cfr::ROUNDING_NOISE;
use crate::cfr::RegretRule;
use crate::cfr::baseline::Baseline;
use crate::cfr::deferred::Slot;
use crate::cfr::expected_value;
use crate::tree::NodeKind;
use crate::tree::PublicTree;
use crate::tree::history::HistoryKind;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;

/// One pass: the trees and options, where its updates go, and its scratch.
pub(super) struct Pass<'a, S: Sink> {
    pub(super) tree: &'a PublicTree,
    pub(super) ht: &'a HistoryTree,
    pub(super) opts: PosOptions,
    pub(super) sink: S,
    pub(super) sc: &'a mut PassScratch,
    pub(super) extras: &'a mut Extras,
    pub(super) target: Option<u32>,
}

impl<S: Sink> Pass<'_, S> {
    /// Samples a public path top-down (reaches of every history on it), then evaluates and
    /// updates it bottom-up.
    pub(super) fn run(
        &mut self,
        players: [bool; 2],
        rng: &mut SplitMix64,
        weight: f64,
        learn: bool,
    ) {
        let (tree, ht) = (self.tree, self.ht);
        if learn && self.opts.measure_variance {
            exact_history_values(tree, ht, &self.sink.tab().current, &mut self.extras.exact);
        }
        self.sc.path.clear();
        let mut node = ht.node[0];
        self.sc.reach[0] = [1.0, 1.0];
        let mut reach_q = 1.0;
        let mut mass = std::mem::take(&mut self.sc.node.mass);
        mass.clear();
        loop {
            let hs = ht.node_histories(node as usize);
            if learn {
                self.sc.touched += hs.len() as u64;
            }
            let pnode = &tree.nodes[node as usize];
            if pnode.kind == NodeKind::Terminal {
                self.sc.path.push(PathStep {
                    node,
                    reach_q,
                    q_next: 1.0,
                    child_index: crate::tree::NONE,
                });
                break;
            }
            let succ = &pnode.children;
            let (k, q) = if succ.len() == 1 {
                (0, 1.0)
            } else {
                match self.opts.sampling {
                    Sampling::Uniform => (rng.below(succ.len()), 1.0 / succ.len() as f64),
                    Sampling::OnPolicy => {
                        self.successor_mass(node, &mut mass);
                        let total: f64 = mass.iter().sum();
                        let eps = self.opts.exploration;
                        let u = 1.0 / succ.len() as f64;
                        if total > 0.0 {
                            mass.iter_mut()
                                .for_each(|m| *m = (1.0 - eps) * *m / total + eps * u);
                            let k = rng.weighted(&mass);
                            (k, mass[k])
                        } else {
                            (rng.below(succ.len()), u)
                        }
                    }
                }
            };
            let (k, q) = match self.target {
                None => (k, q),
                Some(t) => {
                    let k = successor_towards(tree, node, t);
                    let q = match self.opts.sampling {
                        _ if succ.len() == 1 => 1.0,
                        Sampling::Uniform => 1.0 / succ.len() as f64,
                        Sampling::OnPolicy => {
                            let total: f64 = mass.iter().sum();
                            if total > 0.0 {
                                mass[k]
                            } else {
                                1.0 / succ.len() as f64
                            }
                        }
                    };
                    (k, q)
                }
            };
            let next = succ[k];
            // Reaches of the histories of the sampled successor: they are exactly the children
            // of `node`'s histories that lie in `next`.
            let current = &self.sink.tab().current;
            let reach = &mut self.sc.reach;
            let next_hs = ht.node_histories(next as usize);
            let mut child_index = match next_hs.first() {
                Some(&c) => c - ht.steps[ht.parent[c as usize] as usize].first_child,
                None => crate::tree::NONE,
            };
            // Every history of `node` has the node's kind (the tree build checks it), so the
            // acting player is known once for all of them.
            let actor = match pnode.kind {
                NodeKind::Decision(p) => Some(p),
                _ => None,
            };
            match actor {
                Some(0) => propagate_reach(ht, next_hs, reach, &mut child_index, |[r0, r1], g| {
                    [r0 * current[0][g], r1]
                }),
                Some(_) => propagate_reach(ht, next_hs, reach, &mut child_index, |[r0, r1], g| {
                    [r0, r1 * current[1][g]]
                }),
                None => propagate_reach(ht, next_hs, reach, &mut child_index, |r, _| r),
            }
            if next_hs.len() != hs.len() {
                child_index = crate::tree::NONE;
            }
            self.sc.path.push(PathStep {
                node,
                reach_q,
                q_next: q,
                child_index,
            });
            reach_q *= q;
            node = next;
        }
        self.sc.node.mass = mass;
        // Bottom-up.
        let last = self.sc.path.last().expect("path has a terminal node").node as usize;
        for &h in ht.node_histories(last) {
            self.sc.values[h as usize] = ht.utility[h as usize];
            self.sc.next_values[h as usize] = ht.utility[h as usize];
        }
        for s in (0..self.sc.path.len() - 1).rev() {
            let step = self.sc.path[s];
            let next = self.sc.path[s + 1].node;
            self.update_node(step, next, players, weight, learn);
        }
    }

    /// Probability mass flowing into each successor of `node` (in `children` order) under the
    /// current strategies and chance.
    pub(super) fn successor_mass(&self, node: u32, mass: &mut Vec<f64>) {
        let (tree, ht) = (self.tree, self.ht);
        let current = &self.sink.tab().current;
        let succ = &tree.nodes[node as usize].children;
        mass.clear();
        mass.resize(succ.len(), 0.0);
        for &h in ht.node_histories(node as usize) {
            let h = h as usize;
            let r = self.sc.reach[h][0] * self.sc.reach[h][1] * ht.chance_reach[h];
            if r == 0.0 {
                continue;
            }
            for (j, c) in ht.children(h).enumerate() {
                let p = match ht.kind[h] {
                    HistoryKind::Decision(p) => {
                        let g = tree.infosets[p].offset[ht.infoset[h] as usize] as usize + j;
                        current[p][g]
                    }
                    _ => ht.chance_prob[c],
                };
                let slot = succ
                    .iter()
                    .position(|&s| s == ht.node[c])
                    .expect("child node");
                mass[slot] += r * p;
            }
        }
    }

    /// The per-public-state update (Algorithms 3/4, lines 9-33) of `step.node`, whose sampled
    /// successor `next` already holds its values `û(h'|σ_t)` (and `û(h'|σ_{t+1})` for the
    /// predictive baseline). Touches only the histories of the node and its children and the
    /// action range of its infosets.
    pub(super) fn update_node(
        &mut self,
        step: PathStep,
        next: u32,
        players: [bool; 2],
        weight: f64,
        learn: bool,
    ) {
        let (tree, ht) = (self.tree, self.ht);
        let node = step.node as usize;
        let hs = ht.node_histories(node);
        let opts = self.opts;
        let actor = match tree.nodes[node].kind {
            NodeKind::Decision(p) => Some(p),
            _ => None,
        };
        // Where σ_{t+1} = σ_t at this node (chance, or a player this pass does not update) and
        // a public action was sampled, the predictive baseline's value `û(h | σ_{t+1})` of step
        // 4 is computed in step 1's loop over the children (in place only: a deferred pass
        // reads its baselines differently).
        let fuse_next = !S::DEFERRED
            && learn
            && opts.baseline == Baseline::Predictive
            && step.child_index != crate::tree::NONE
            && !actor.is_some_and(|p| players[p]);
        // 1. Baseline-corrected action values and history values under σ_t (Eq. 15/16).
        self.history_values(&step, next, actor, players, fuse_next);
        let Some(p) = actor else {
            // Chance node: only baselines learn.
            if learn {
                self.learn_baselines(hs, next, None, fuse_next);
            }
            return;
        };
        let (lo, hi) = tree.nodes[node].infoset_range;
        let inf = &tree.infosets[p];
        let nodes = NodeInfosets {
            p,
            lo: lo as usize,
            hi: hi as usize,
            g0: inf.offset[lo as usize] as usize,
            g1: inf.offset[hi as usize] as usize,
        };
        let updating = players[p];
        let sign = if p == 0 { 1.0 } else { -1.0 };
        let measure = learn && updating && opts.measure_variance;
        // 2. Counterfactual action values of the node's infosets (local slices).
        self.counterfactual_values(hs, &nodes, updating, measure);
        if updating && !learn && !self.extras.cf_sample.is_empty() {
            let cfq = &self.sc.node.cfq;
            for (k, v) in cfq.iter().enumerate() {
                self.extras.cf_sample[nodes.g0 + k] = sign * v / step.reach_q;
            }
        }
        // 3. Average strategy (σ_t), regrets, next strategy σ_{t+1}.
        self.update_infosets(&step, &nodes, learn && updating, measure, weight);
        // 4. Baselines.
        if learn {
            self.learn_baselines(hs, next, Some(p), fuse_next);
        }
    }

    /// Step 1 of a node update: the baseline-corrected action values and the history values
    /// under σ_t (Eq. 15/16) of every history at `step`'s node, whose sampled successor is
    /// `next` (`actor`: the acting player, `None` at chance).
    fn history_values(
        &mut self,
        step: &PathStep,
        next: u32,
        actor: Option<usize>,
        players: [bool; 2],
        fuse_next: bool,
    ) {
        let ht = self.ht;
        let hs = ht.node_histories(step.node as usize);
        let q = step.q_next;
        let opts = self.opts;
        let tab = self.sink.tab();
        let sc = &mut *self.sc;
        let hit = step.child_index as usize;
        let predictive_hit = opts.baseline == Baseline::Predictive && hit != NONE_USIZE;
        if predictive_hit {
            predictive_hit_values(
                PredictiveHit {
                    ht,
                    weights: match actor {
                        Some(p) => &tab.current[p],
                        None => &ht.chance_prob,
                    },
                    decision: actor.is_some(),
                    base_sum: &tab.base_sum,
                    hit,
                    q,
                    // Only the updating player's node update (step 2) reads the action values.
                    write_actions: actor.is_some_and(|p| players[p]),
                    fuse_next,
                },
                hs,
                sc,
            );
        }
        let hs_general = if predictive_hit { &[][..] } else { hs };
        for &h in hs_general {
            let h = h as usize;
            let st = ht.steps[h];
            let kids = st.children();
            let base = actor.map(|p| (p, st.action_base as usize));
            // The history baselines (none, predictive) are slices, and the node's value is
            // accumulated in the same pass; the learned ones go through `baseline_of` per
            // action.
            let weights = match base {
                Some((p, g)) => &tab.current[p][g..g + kids.len()],
                None => &ht.chance_prob[kids.clone()],
            };
            let av = &mut sc.action_values[kids.clone()];
            let vals = &sc.values[kids.clone()];
            let nodes = &ht.node[kids.clone()];
            let corrected = |b: f64, v: f64, nd: u32| if nd == next { b + (v - b) / q } else { b };
            let fused = match opts.baseline {
                Baseline::None | Baseline::Static if hit != NONE_USIZE => {
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        if j == hit { 0.0 + vals[j] / q } else { 0.0 }
                    }))
                }
                Baseline::None | Baseline::Static => {
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        corrected(0.0, vals[j], nodes[j])
                    }))
                }
                // (Predictive with a public action sampled: `predictive_hit_values` above.)
                Baseline::Predictive => {
                    let bs = &tab.base_sum[kids.clone()];
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        corrected(bs[j], vals[j], nodes[j])
                    }))
                }
                Baseline::LearnedHistory | Baseline::LearnedInfoset => None,
            };
            sc.values[h] = match fused {
                Some(v) => v,
                None => {
                    for (j, c) in kids.clone().enumerate() {
                        let b = baseline_of(&opts, tab, c, base.map(|(p, g)| (p, g + j)));
                        sc.action_values[c] = if ht.node[c] == next {
                            b + (sc.values[c] - b) / q
                        } else {
                            b
                        };
                    }
                    match base {
                        Some((p, g)) => expected_value(
                            &tab.current[p][g..g + kids.len()],
                            &sc.action_values[kids],
                        ),
                        None => kids.map(|c| ht.chance_prob[c] * sc.action_values[c]).sum(),
                    }
                }
            };
        }
    }

    /// Step 2 of a decision node's update: the counterfactual action values of its infosets
    /// (`cfq`, local slices from `nodes.g0`), the reaches `cf_reach` and `own_reach`, and with
    /// `measure` the action values' errors against the exact ones.
    fn counterfactual_values(
        &mut self,
        hs: &[u32],
        nodes: &NodeInfosets,
        updating: bool,
        measure: bool,
    ) {
        let ht = self.ht;
        let NodeInfosets { p, lo, hi, g0, g1 } = *nodes;
        let sc = &mut *self.sc;
        let NodeScratch {
            cfq,
            err,
            cf_reach,
            own_reach,
            ..
        } = &mut sc.node;
        zeroed(cfq, g1 - g0);
        zeroed(err, if measure { g1 - g0 } else { 0 });
        zeroed(cf_reach, hi - lo);
        zeroed(own_reach, hi - lo);
        if updating {
            // The tables as slices for the whole loop (their headers are read once).
            let (cfq, cf_reach, own_reach) = (&mut cfq[..], &mut cf_reach[..], &mut own_reach[..]);
            let (reach, action_values) = (&sc.reach[..], &sc.action_values[..]);
            let (infoset, chance_reach, steps) =
                (&ht.infoset[..], &ht.chance_reach[..], &ht.steps[..]);
            for &h in hs {
                let h = h as usize;
                let i = infoset[h] as usize;
                let w = reach[h][1 - p] * chance_reach[h];
                own_reach[i - lo] = reach[h][p];
                cf_reach[i - lo] += w;
                if w == 0.0 {
                    continue;
                }
                // A decision history's `action_base` is its infoset's offset.
                let st = steps[h];
                let g = st.action_base as usize - g0;
                let kids = st.children();
                let av = &action_values[kids.clone()];
                for (q, &a) in cfq[g..g + av.len()].iter_mut().zip(av) {
                    *q += w * a;
                }
                if measure {
                    let exact = &self.extras.exact[kids];
                    for ((e, &a), &x) in err[g..g + av.len()].iter_mut().zip(av).zip(exact) {
                        *e += w * (a - x);
                    }
                }
            }
        }
    }

    /// Step 3 of a decision node's update: the average strategy (σ_t), the regrets and the
    /// next strategy σ_{t+1} of its infosets, from the values of step 2 (`learning`: the
    /// node's player is updated by a learning pass).
    fn update_infosets(
        &mut self,
        step: &PathStep,
        nodes: &NodeInfosets,
        learning: bool,
        measure: bool,
        weight: f64,
    ) {
        let NodeInfosets { p, lo, hi, g0, g1 } = *nodes;
        let opts = self.opts;
        let inf = &self.tree.infosets[p];
        let sign = if p == 0 { 1.0 } else { -1.0 };
        let NodeScratch {
            cfq,
            err,
            cf_reach,
            own_reach,
            ..
        } = &self.sc.node;
        self.sink
            .begin_node(p, if learning { g0..g1 } else { g0..g0 });
        if learning {
            let plus = opts.regret == RegretRule::Plus;
            for i in lo..hi {
                let r = inf.range(i);
                let local = r.start - g0..r.end - g0;
                let own = own_reach[i - lo];
                if own > 0.0 {
                    let wr = weight * own / step.reach_q;
                    self.sink.add_avg(p, r.clone(), wr);
                }
                if measure && cf_reach[i - lo] > 0.0 {
                    for e in &err[local.clone()] {
                        self.extras.var_stats[0] += e * e;
                        self.extras.var_stats[1] += 1.0;
                    }
                }
                let qv = &cfq[local];
                let v = expected_value(&self.sink.tab().current[p][r.clone()], qv);
                let noise = ROUNDING_NOISE * qv.iter().fold(v.abs(), |m, x| m.max(x.abs()));
                let reach_q = step.reach_q;
                self.sink.update_regrets(
                    p,
                    r,
                    |k| {
                        let d = qv[k] - v;
                        (d.abs() > noise).then(|| sign * d / reach_q)
                    },
                    plus,
                );
            }
        }
    }

    /// Baseline updates at a node whose successor `next` was sampled (`actor`: the acting
    /// player, `None` at chance), and for the predictive baseline the values under σ_{t+1}
    /// (unless `next_done`: the node update computed them).
    pub(super) fn learn_baselines(
        &mut self,
        hs: &[u32],
        next: u32,
        actor: Option<usize>,
        next_done: bool,
    ) {
        let (tree, ht) = (self.tree, self.ht);
        let opts = self.opts;
        let history_samples = |pass: &mut Self| {
            for &h in hs {
                for c in ht.children(h as usize) {
                    if ht.node[c] == next {
                        let x = pass.sc.values[c];
                        pass.sink.learn(Slot::History(c as u32), x, &opts);
                    }
                }
            }
        };
        match opts.baseline {
            Baseline::None | Baseline::Static => {}
            Baseline::LearnedHistory => history_samples(self),
            Baseline::LearnedInfoset => match actor {
                None => history_samples(self),
                Some(p) => {
                    // Σ_h π_{-p}(h) û(ha) / Σ_h π_{-p}(h) per (I, a) of the sampled actions.
                    let node = ht.node[hs[0] as usize] as usize;
                    let (lo, hi) = tree.nodes[node].infoset_range;
                    let inf = &tree.infosets[p];
                    let g0 = inf.offset[lo as usize] as usize;
                    let g1 = inf.offset[hi as usize] as usize;
                    let sc = &mut *self.sc;
                    let (num, den) = (&mut sc.node.cfq, &mut sc.node.err);
                    zeroed(num, g1 - g0);
                    zeroed(den, g1 - g0);
                    for &h in hs {
                        let h = h as usize;
                        let w = sc.reach[h][1 - p] * ht.chance_reach[h];
                        let g = inf.offset[ht.infoset[h] as usize] as usize - g0;
                        for (j, c) in ht.children(h).enumerate() {
                            if ht.node[c] == next {
                                num[g + j] += w * sc.values[c];
                                den[g + j] += w;
                            }
                        }
                    }
                    for k in 0..g1 - g0 {
                        if den[k] > 0.0 {
                            let slot = Slot::Infoset(p as u8, (g0 + k) as u32);
                            self.sink.learn(slot, num[k] / den[k], &opts);
                        }
                    }
                }
            },
            Baseline::Predictive => {
                // b_{t+1}(h,a) = û((ha)|σ_{t+1}) for the sampled children, then
                // û(h|σ_{t+1}) = Σ_a σ_{t+1}(h,a) b_{t+1}(h,a).
                self.sink.set_predictive(
                    ht.node_histories(next as usize),
                    &self.sc.next_values,
                    &opts,
                );
                if next_done {
                    return;
                }
                let sc = &mut *self.sc;
                if !S::DEFERRED {
                    // In place: the policy is σ_{t+1} and `base_sum` holds the new values;
                    // the tables as slices for the whole loop.
                    let tab = self.sink.tab();
                    let base_sum = &tab.base_sum[..];
                    let cur: &[f64] = match actor {
                        Some(p) => &tab.current[p],
                        None => &[],
                    };
                    let next_values = &mut sc.next_values[..];
                    let (steps, chance_prob) = (&ht.steps[..], &ht.chance_prob[..]);
                    for &h in hs {
                        let h = h as usize;
                        let st = steps[h];
                        let kids = st.children();
                        let base = &base_sum[kids.clone()];
                        next_values[h] = match actor {
                            Some(_) => {
                                let g = st.action_base as usize;
                                expected_value(&cur[g..g + kids.len()], base)
                            }
                            None => chance_prob[kids]
                                .iter()
                                .zip(base)
                                .map(|(&c, &b)| c * b)
                                .sum(),
                        };
                    }
                    return;
                }
                for &h in hs {
                    let h = h as usize;
                    let st = ht.steps[h];
                    let kids = st.children();
                    // Deferred (the in-place pass returned above): the new values of the
                    // sampled children are in `next_values`, the others in the fixed tables.
                    let base = {
                        let tab = self.sink.tab();
                        let b = &mut sc.node.kids;
                        b.clear();
                        b.extend(kids.clone().map(|c| {
                            if ht.node[c] == next {
                                sc.next_values[c]
                            } else {
                                tab.base_sum[c]
                            }
                        }));
                        &b[..]
                    };
                    sc.next_values[h] = match actor {
                        Some(p) => {
                            let g = st.action_base as usize;
                            expected_value(self.sink.cur_next(p, g..g + kids.len()), base)
                        }
                        None => kids.zip(base).map(|(c, &b)| ht.chance_prob[c] * b).sum(),
                    };
                }
            }
        }
    }
}

/// A decision node's infosets: player `p`'s infosets `lo..hi`, whose actions are `g0..g1` of
/// the player's tables.
#[derive(Clone, Copy)]
struct NodeInfosets {
    p: usize,
    lo: usize,
    hi: usize,
    g0: usize,
    g1: usize,
}
