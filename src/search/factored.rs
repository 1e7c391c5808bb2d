//! Full-width CFR on a factored Hold'em subgame ([`PokerLayout`]), on the host in `f64`.
//!
//! Per public node each player has one `[P]` range over all hole-card hands (`P = C(D, 2)`,
//! 1326 for a full deck); there are no joint (hand, hand) slots, so memory and time grow
//! with `nodes · P`, not `nodes · P²`. Terminal values come from [`HandSweep`] (the host form
//! of the tensor showdown in `nn::public::showdown`): a fold multiplies the stake by the opponent mass sharing no card
//! with the hand, a showdown by the mass it beats minus the mass it loses to, both in `O(P)`
//! per terminal after one sort per board. Chance nodes only mask ranges (card removal) and
//! sum values; the constant chance probability of a compatible deal is the node's
//! [`crate::tree::poker::PokerNode::weight`].
//!
//! One iteration follows [`crate::cfr::TabularSolver`]'s arithmetic and order (alternating or
//! simultaneous updates, regret rules, averaging weights, the same rounding-noise rule for
//! instantaneous regrets), so on a whole hand it reproduces the tabular solver on the compiled
//! game tree iterate for iterate (tests/holdem_factored.rs). Strategy, regret and average
//! arrays are `[decision][action][hand]` rows (offsets in [`PokerLayout::offsets`]).

use super::Gadget;
use super::hand_sweep::HandSweep;
use crate::cfr::{Iteration, ROUNDING_NOISE, SolverSpec, regret_match_infoset};
use crate::tree::expected_value;
use crate::tree::poker::{PokerKind, PokerLayout};
use std::collections::HashMap;
use std::sync::Arc;

/// Errors setting up a [`FactoredCfr`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FactoredError {
    #[error("player {player}'s root range has {got} entries; the layout has {want} hands")]
    RangeLength {
        player: usize,
        got: usize,
        want: usize,
    },
    #[error(
        "player {player}'s root range entry {hand} is {value}; entries must be finite and >= 0"
    )]
    RangeEntry {
        player: usize,
        hand: usize,
        value: f64,
    },
    #[error("player {player}'s root range has no mass on hands possible at the root")]
    RangeEmpty { player: usize },
    #[error("the layout has {0} depth-limit leaves but no leaf evaluator was given")]
    MissingLeafEvaluator(usize),
    #[error("player {player}'s {what} has {got} entries; the layout needs {want}")]
    Length {
        player: usize,
        what: &'static str,
        got: usize,
        want: usize,
    },
}

/// Values at the depth-limit leaves of a [`PokerLayout`] (a value network, or an exact
/// solver in tests).
pub trait PokerLeaves: Send {
    /// `ranges[i]` holds player `i`'s reach of every hand at each leaf, `[L·P]` in the order of
    /// `leaves`; the answer is each player's counterfactual values in the same shape, on the
    /// scale of terminal values: `weight(leaf) · Σ_y compatible r_opp(y) · E[u_i | x, y, below]`
    /// (see [`crate::tree::poker::PokerNode::weight`]).
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2];

    /// Player `p`'s part of [`PokerLeaves::evaluate`] (all a CFR pass updating `p` needs); an
    /// evaluator whose players' values cost separately overrides it to compute only `p`'s.
    fn evaluate_player(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
        p: usize,
    ) -> Vec<f64> {
        let [v0, v1] = self.evaluate(layout, leaves, ranges);
        if p == 0 { v0 } else { v1 }
    }
}

/// CFR-family solver on a [`PokerLayout`] (see the module docs).
pub struct FactoredCfr {
    layout: Arc<PokerLayout>,
    spec: SolverSpec,
    root: [Vec<f64>; 2],
    iteration: u64,
    regrets: [Vec<f64>; 2],
    cumulative: [Vec<f64>; 2],
    current: [Vec<f64>; 2],
    sweeps: Vec<HandSweep>,
    /// Per node: its terminal sweep (`u32::MAX` for non-terminals).
    sweep_of: Vec<u32>,
    /// Per player `[N·P]` reaches, valid while `fresh[p]`.
    reach: [Vec<f64>; 2],
    fresh: [bool; 2],
    /// `[N·P]` values of the player last evaluated.
    values: Vec<f64>,
    /// Depth-limit leaves and their evaluator.
    leaves: Vec<u32>,
    evaluator: Option<Box<dyn PokerLeaves>>,
    /// `[N·P]`: the size of what those values cancel (weight · |stake| · the opponent's whole
    /// mass on possible hands, summed over the terminals below), the scale of their rounding
    /// noise: a sweep subtracts per-card sums from totals, so a hand whose compatible mass is 0
    /// gets a residue of that size.
    mags: Vec<f64>,
    /// The CFR-D re-solving gadget that sets its player's root range, if any.
    gadget: Option<Gadget>,
    /// Per player, the iteration-weighted sum of its `[N·P]` values and the weights' sum
    /// (kept only after [`FactoredCfr::track_average_cfvs`]).
    cfv_sum: Option<[Vec<f64>; 2]>,
    cfv_weight: [f64; 2],
}

impl FactoredCfr {
    /// A solver at iteration 0 with uniform strategies. `root` gives both players' ranges at
    /// the root (`None`: [`PokerLayout::uniform_root_range`], the start of a hand); entries of
    /// hands that collide with the root's board are ignored.
    pub fn new(
        layout: Arc<PokerLayout>,
        spec: SolverSpec,
        root: Option<[Vec<f64>; 2]>,
    ) -> Result<FactoredCfr, FactoredError> {
        Self::with_leaves(layout, spec, root, None)
    }

    /// As [`FactoredCfr::new`] for a depth-limited layout: `evaluator` values its leaves
    /// (required when there are any).
    pub fn with_leaves(
        layout: Arc<PokerLayout>,
        spec: SolverSpec,
        root: Option<[Vec<f64>; 2]>,
        evaluator: Option<Box<dyn PokerLeaves>>,
    ) -> Result<FactoredCfr, FactoredError> {
        let leaves = layout.leaves();
        if !leaves.is_empty() && evaluator.is_none() {
            return Err(FactoredError::MissingLeafEvaluator(leaves.len()));
        }
        let p = layout.num_hands();
        let root =
            root.unwrap_or_else(|| [layout.uniform_root_range(), layout.uniform_root_range()]);
        for (player, r) in root.iter().enumerate() {
            check_root_range(&layout, player, r)?;
        }
        let root = root.map(|r| {
            (0..p)
                .map(|x| if layout.possible(0, x) { r[x] } else { 0.0 })
                .collect()
        });
        // One sweep per terminal board (with ranks where a showdown uses the board).
        let ranks: HashMap<u64, &Vec<u16>> = layout.ranks.iter().map(|(m, r)| (*m, r)).collect();
        let mut index: HashMap<u64, u32> = HashMap::new();
        let mut sweeps = Vec::new();
        let mut sweep_of = vec![u32::MAX; layout.len()];
        for (n, node) in layout.nodes.iter().enumerate() {
            if matches!(node.kind, PokerKind::Fold(_) | PokerKind::Showdown) {
                let m = node.board_mask;
                sweep_of[n] = *index.entry(m).or_insert_with(|| {
                    sweeps.push(HandSweep::new(
                        &layout.hands,
                        m,
                        ranks.get(&m).map(|r| r.as_slice()),
                    ));
                    sweeps.len() as u32 - 1
                });
            }
        }
        let zeros = |i: usize| vec![0.0; *layout.offsets[i].last().unwrap()];
        let current = std::array::from_fn(|i| {
            let mut c = zeros(i);
            for (d, &node) in layout.decisions[i].iter().enumerate() {
                let na = layout.nodes[node as usize].actions.len();
                c[layout.offsets[i][d]..layout.offsets[i][d + 1]].fill(1.0 / na as f64);
            }
            c
        });
        let slots = layout.num_slots();
        Ok(FactoredCfr {
            spec,
            root,
            iteration: 0,
            regrets: [zeros(0), zeros(1)],
            cumulative: [zeros(0), zeros(1)],
            current,
            sweeps,
            sweep_of,
            reach: [vec![0.0; slots], vec![0.0; slots]],
            fresh: [false; 2],
            values: vec![0.0; slots],
            mags: vec![0.0; slots],
            gadget: None,
            cfv_sum: None,
            cfv_weight: [0.0; 2],
            leaves,
            evaluator,
            layout,
        })
    }

    /// The layout it solves.
    pub fn layout(&self) -> &Arc<PokerLayout> {
        &self.layout
    }

    /// Iterations done so far.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Player `p`'s current strategy, `[decision][action][hand]` (offsets in
    /// [`PokerLayout::offsets`]).
    pub fn current(&self, p: usize) -> &[f64] {
        &self.current[p]
    }

    /// Player `p`'s cumulative regrets in the same layout.
    pub fn regrets(&self, p: usize) -> &[f64] {
        &self.regrets[p]
    }

    /// Player `p`'s average strategy in the same layout: cumulative weights normalised per
    /// (decision, hand), uniform where nothing accumulated.
    pub fn average(&self, p: usize) -> Vec<f64> {
        let l = &*self.layout;
        let np = l.num_hands();
        let cum = &self.cumulative[p];
        let mut out = vec![0.0; cum.len()];
        for (d, &node) in l.decisions[p].iter().enumerate() {
            let na = l.nodes[node as usize].actions.len();
            let o = l.offsets[p][d];
            for x in 0..np {
                let total: f64 = (0..na).map(|a| cum[o + a * np + x]).sum();
                for a in 0..na {
                    out[o + a * np + x] = if total > 0.0 {
                        cum[o + a * np + x] / total
                    } else {
                        1.0 / na as f64
                    };
                }
            }
        }
        out
    }

    /// Runs one iteration.
    pub fn iterate(&mut self) {
        self.iteration += 1;
        let it = Iteration::new(self.iteration, self.spec.updates, self.spec.averaging);
        let t = it.t as f64;
        for &turn in it.turns {
            self.refresh_reaches();
            for p in Iteration::updating(turn) {
                self.compute_values(p);
                self.accumulate(p, it.weight);
                self.record(p, it.weight);
            }
            for p in Iteration::updating(turn) {
                self.finish_player(p, t);
            }
        }
    }

    /// After player `p`'s values of an iteration: adds them to the averaged CFVs (if kept)
    /// and drives the gadget when `p` is its player (its new range applies from the next
    /// sweep on).
    fn record(&mut self, p: usize, weight: f64) {
        if let Some(sum) = self.cfv_sum.as_mut() {
            for (s, v) in sum[p].iter_mut().zip(&self.values) {
                *s += weight * v;
            }
            self.cfv_weight[p] += weight;
        }
        let np = self.layout.num_hands();
        if let Some(g) = self.gadget.as_mut()
            && g.player() == p
        {
            g.update(&self.values[..np]);
            let r = g.range();
            self.root[p] = self.masked_root(&r);
        }
    }

    /// `r` with the entries of hands impossible at the root set to 0.
    fn masked_root(&self, r: &[f64]) -> Vec<f64> {
        let l = &*self.layout;
        (0..l.num_hands())
            .map(|x| if l.possible(0, x) { r[x] } else { 0.0 })
            .collect()
    }

    /// Installs the CFR-D re-solving gadget ([`Gadget`], one slot per hand): from now on it
    /// sets its player's root range, `α · follow + (1 − α) · r_prev`, after each of that
    /// player's updates.
    pub fn set_gadget(&mut self, gadget: Gadget) -> Result<(), FactoredError> {
        let p = gadget.player();
        let np = self.layout.num_hands();
        let got = gadget.terminate_values().len();
        if got != np {
            return Err(FactoredError::Length {
                player: p,
                what: "gadget",
                got,
                want: np,
            });
        }
        let r = gadget.range();
        self.root[p] = self.masked_root(&r);
        self.fresh[p] = false;
        self.gadget = Some(gadget);
        Ok(())
    }

    /// Replaces player `p`'s root range (validated as in [`FactoredCfr::new`]).
    pub fn set_root_range(&mut self, p: usize, range: &[f64]) -> Result<(), FactoredError> {
        check_root_range(&self.layout, p, range)?;
        self.root[p] = self.masked_root(range);
        self.fresh[p] = false;
        Ok(())
    }

    /// Replaces player `p`'s current strategy (`[decision][action][hand]`, e.g. a fixed
    /// profile to evaluate with [`FactoredCfr::root_cfvs`]).
    pub fn set_current(&mut self, p: usize, strategy: &[f64]) -> Result<(), FactoredError> {
        let want = self.current[p].len();
        if strategy.len() != want {
            return Err(FactoredError::Length {
                player: p,
                what: "strategy",
                got: strategy.len(),
                want,
            });
        }
        self.current[p].copy_from_slice(strategy);
        self.fresh[p] = false;
        Ok(())
    }

    /// From now on, keeps each player's counterfactual values at every (node, hand) averaged
    /// over the iterations with the solver's averaging weights (what continual re-solving
    /// carries to the next search, as DeepStack does).
    pub fn track_average_cfvs(&mut self) {
        if self.cfv_sum.is_none() {
            let slots = self.layout.num_slots();
            self.cfv_sum = Some([vec![0.0; slots], vec![0.0; slots]]);
        }
    }

    /// Player `p`'s averaged `[N·P]` values ([`FactoredCfr::track_average_cfvs`]); `None`
    /// if they are not kept or no iteration ran since.
    pub fn average_cfvs(&self, p: usize) -> Option<Vec<f64>> {
        let sum = self.cfv_sum.as_ref()?;
        let w = self.cfv_weight[p];
        (w > 0.0).then(|| sum[p].iter().map(|s| s / w).collect())
    }

    /// Player `p`'s root range (the gadget's latest for the gadget's player).
    pub fn root_range(&self, p: usize) -> &[f64] {
        &self.root[p]
    }

    /// Both players' `[N·P]` reaches when they play `strategies` (`[decision][action][hand]`
    /// each) from the current root ranges.
    pub fn reaches_under(&self, strategies: [&[f64]; 2]) -> [Vec<f64>; 2] {
        std::array::from_fn(|i| {
            let mut r = vec![0.0; self.layout.num_slots()];
            reach_into(&self.layout, i, &self.root[i], strategies[i], &mut r);
            r
        })
    }

    /// Player 0's expected payoff at the root under the current strategies (chance included):
    /// `Σ_x r₀(x) · v₀(root, x)`.
    pub fn root_value(&mut self) -> f64 {
        self.root_cfvs(0)
            .iter()
            .zip(&self.root[0])
            .map(|(v, r)| v * r)
            .sum()
    }

    /// Player `p`'s counterfactual value of every hand at the root under the current
    /// strategies (opponent reach and chance included).
    pub fn root_cfvs(&mut self, p: usize) -> Vec<f64> {
        self.refresh_reaches();
        self.compute_values(p);
        self.values[..self.layout.num_hands()].to_vec()
    }

    /// Player `p`'s counterfactual values of every hand at node `n` under the current
    /// strategies.
    pub fn node_cfvs(&mut self, p: usize, n: usize) -> Vec<f64> {
        self.refresh_reaches();
        self.compute_values(p);
        let np = self.layout.num_hands();
        self.values[n * np..(n + 1) * np].to_vec()
    }

    /// Player `p`'s reach of every hand at node `n` under the current strategies (root range
    /// and card removal included).
    pub fn node_reach(&mut self, p: usize, n: usize) -> Vec<f64> {
        self.refresh_reaches();
        let np = self.layout.num_hands();
        self.reach[p][n * np..(n + 1) * np].to_vec()
    }

    fn refresh_reaches(&mut self) {
        for i in 0..2 {
            if !self.fresh[i] {
                self.compute_reach(i);
                self.fresh[i] = true;
            }
        }
    }

    /// Player `i`'s reach of every (node, hand), top-down.
    fn compute_reach(&mut self, i: usize) {
        reach_into(
            &self.layout,
            i,
            &self.root[i],
            &self.current[i],
            &mut self.reach[i],
        );
    }

    /// Player `p`'s counterfactual values of every (node, hand), bottom-up, into `values`.
    fn compute_values(&mut self, p: usize) {
        let l = &*self.layout;
        let np = l.num_hands();
        if let Some(eval) = self.evaluator.as_mut().filter(|_| !self.leaves.is_empty()) {
            let gather = |r: &[f64]| -> Vec<f64> {
                self.leaves
                    .iter()
                    .flat_map(|&n| r[n as usize * np..(n as usize + 1) * np].iter().copied())
                    .collect()
            };
            let ranges = [gather(&self.reach[0]), gather(&self.reach[1])];
            let lv = eval.evaluate_player(l, &self.leaves, [&ranges[0], &ranges[1]], p);
            assert_eq!(
                lv.len(),
                self.leaves.len() * np,
                "a leaf evaluator returns one value per leaf and hand"
            );
            for (k, &n) in self.leaves.iter().enumerate() {
                let n = n as usize;
                for x in 0..np {
                    let val = lv[k * np + x];
                    self.values[n * np + x] = val;
                    self.mags[n * np + x] = val.abs();
                }
            }
        }
        let opp = &self.reach[1 - p];
        let v = &mut self.values;
        let mags = &mut self.mags;
        let mut q = Vec::new();
        let mut sig = Vec::new();
        for n in (0..l.len()).rev() {
            let node = &l.nodes[n];
            let (head, tail) = v.split_at_mut((n + 1) * np);
            let out = &mut head[n * np..];
            let (mhead, mtail) = mags.split_at_mut((n + 1) * np);
            let mag = &mut mhead[n * np..];
            let kids = l.children(n);
            let below = |c: usize| &tail[(c - n - 1) * np..(c - n) * np];
            match node.kind {
                PokerKind::Fold(f) => {
                    let sweep = &self.sweeps[self.sweep_of[n] as usize];
                    sweep.fold_into(&opp[n * np..(n + 1) * np], out);
                    let u = if f == p {
                        -node.spent[p]
                    } else {
                        node.spent[f]
                    };
                    let scale = node.weight * u as f64;
                    out.iter_mut().for_each(|x| *x *= scale);
                    mag.fill((scale * sweep.mass(&opp[n * np..(n + 1) * np])).abs());
                }
                PokerKind::Showdown => {
                    let sweep = &self.sweeps[self.sweep_of[n] as usize];
                    let r = &opp[n * np..(n + 1) * np];
                    sweep.showdown_into(r, out);
                    let stake = node.spent[0].min(node.spent[1]);
                    let scale = node.weight * stake as f64;
                    out.iter_mut().for_each(|x| *x *= scale);
                    mag.fill((scale * sweep.mass(r)).abs());
                }
                PokerKind::Leaf => {}
                PokerKind::Decision(j) if j == p => {
                    let d = node.decision as usize;
                    let o = self.layout.offsets[p][d];
                    let na = kids.len();
                    let cur = &self.current[p];
                    for x in 0..np {
                        q.clear();
                        sig.clear();
                        for (k, c) in kids.clone().enumerate() {
                            q.push(below(c)[x]);
                            sig.push(cur[o + k * np + x]);
                        }
                        out[x] = expected_value(&sig[..na], &q[..na]);
                    }
                    sum_children(mag, mtail, n, kids, np);
                }
                _ => {
                    out.fill(0.0);
                    for c in kids.clone() {
                        let b = below(c);
                        for x in 0..np {
                            out[x] += b[x];
                        }
                    }
                    sum_children(mag, mtail, n, kids, np);
                }
            }
        }
    }

    /// Regrets and cumulative strategy of player `p` from `values` and its reaches.
    fn accumulate(&mut self, p: usize, weight: f64) {
        let l = &*self.layout;
        let np = l.num_hands();
        for (d, &node) in l.decisions[p].iter().enumerate() {
            let n = node as usize;
            let kids = l.children(n);
            let o = l.offsets[p][d];
            let own = &self.reach[p][n * np..(n + 1) * np];
            let vn = &self.values[n * np..(n + 1) * np];
            for x in 0..np {
                let v = vn[x];
                let mut scale = v.abs();
                for c in kids.clone() {
                    scale = scale.max(self.values[c * np + x].abs());
                }
                // Terminal sweeps cancel masses (totals against per-card sums, winners against
                // losers), so their rounding residue scales with those, not with the result.
                let noise = ROUNDING_NOISE * scale.max(self.mags[n * np + x]);
                let wr = weight * own[x];
                for (k, c) in kids.clone().enumerate() {
                    let e = o + k * np + x;
                    let dlt = self.values[c * np + x] - v;
                    if dlt.abs() > noise {
                        self.regrets[p][e] += dlt;
                    }
                    self.cumulative[p][e] += wr * self.current[p][e];
                }
            }
        }
    }

    /// Regret transformation and regret matching for player `p`.
    fn finish_player(&mut self, p: usize, t: f64) {
        let l = &*self.layout;
        let np = l.num_hands();
        let regrets = &mut self.regrets[p];
        self.spec.regrets.apply(regrets, t);
        let mut row = Vec::new();
        let mut out = Vec::new();
        for (d, &node) in l.decisions[p].iter().enumerate() {
            let na = l.nodes[node as usize].actions.len();
            let o = l.offsets[p][d];
            for x in 0..np {
                row.clear();
                row.extend((0..na).map(|a| regrets[o + a * np + x]));
                out.resize(na, 0.0);
                regret_match_infoset(&row, &mut out);
                for (a, &q) in out.iter().enumerate() {
                    self.current[p][o + a * np + x] = q;
                }
            }
        }
        self.fresh[p] = false;
    }
}

/// `mag[x] = Σ_children below[c][x]`, with `tail` the slots after node `n`.
/// Checks `player`'s root range: one finite, non-negative entry per hand, and some mass on a
/// hand that is possible at the root.
fn check_root_range(l: &PokerLayout, player: usize, range: &[f64]) -> Result<(), FactoredError> {
    let np = l.num_hands();
    if range.len() != np {
        return Err(FactoredError::RangeLength {
            player,
            got: range.len(),
            want: np,
        });
    }
    if let Some((hand, &value)) = range
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(FactoredError::RangeEntry {
            player,
            hand,
            value,
        });
    }
    if !(0..np).any(|x| l.possible(0, x) && range[x] > 0.0) {
        return Err(FactoredError::RangeEmpty { player });
    }
    Ok(())
}

fn sum_children(mag: &mut [f64], tail: &[f64], n: usize, kids: std::ops::Range<usize>, np: usize) {
    mag.fill(0.0);
    for c in kids {
        let b = &tail[(c - n - 1) * np..(c - n) * np];
        for x in 0..np {
            mag[x] += b[x];
        }
    }
}

/// Player `i`'s reach of every (node, hand) of `l` into `r` (`[N·P]`), top-down from `root`
/// when `i` plays `strategy`.
fn reach_into(l: &PokerLayout, i: usize, root: &[f64], strategy: &[f64], r: &mut [f64]) {
    let np = l.num_hands();
    r[..np].copy_from_slice(root);
    for n in 1..l.len() {
        let par = l.nodes[n].parent as usize;
        let (head, tail) = r.split_at_mut(n * np);
        let src = &head[par * np..(par + 1) * np];
        let dst = &mut tail[..np];
        match l.nodes[par].kind {
            PokerKind::Decision(j) if j == i => {
                let d = l.nodes[par].decision as usize;
                let k = n - l.nodes[par].first_child as usize;
                let o = l.offsets[i][d] + k * np;
                let sigma = &strategy[o..o + np];
                for x in 0..np {
                    dst[x] = src[x] * sigma[x];
                }
            }
            PokerKind::Chance => {
                for x in 0..np {
                    dst[x] = if l.possible(n, x) { src[x] } else { 0.0 };
                }
            }
            _ => dst.copy_from_slice(src),
        }
    }
}
