//! The scalar `f64` regret engine: sweeps over the in-tree nodes of the union layout.

use super::super::LeafValues;
use super::super::Pbs;
use super::super::SearchError;
use super::super::check_range;
use super::RegretEngine;
use super::blocks::average_blocks;
use super::blocks::live_rows;
use super::blocks::row_span;
use super::blocks::slot_means;
use super::blocks::weighted_means;
use super::gadget::Gadget;
use crate::cfr::ROUNDING_NOISE;
use crate::cfr::RegretRule;
use crate::cfr::SolverSpec;
use crate::cfr::regret_match_infoset;
use crate::cfr::{Iteration, Updates};
use crate::game::Player;
use crate::tree::NONE;
use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use crate::tree::expected_value;
use crate::tree::tensor::TensorKind;
use crate::tree::tensor::TensorTree;
use std::sync::Arc;

/// The scalar `f64` regret engine (see the [`crate::search::engine`] docs).
#[derive(Clone, Debug)]
pub struct ScalarEngine {
    layout: Arc<TensorTree>,
    spec: SolverSpec,
    /// Number of root nodes (`layout.levels[0]`).
    roots: usize,
    root_range: [Vec<f64>; 2],
    expanded: Vec<bool>,
    /// The in-tree nodes in ascending order (the layout is level-ordered, so parents come
    /// before children): sweeps visit these only, so an update costs what the grown tree
    /// holds, not the whole union layout. Slots of nodes outside the tree are never written
    /// and stay 0.
    active: Vec<u32>,
    /// Per player, the expanded decisions (indices into `layout.decisions[p]`): the rows
    /// updates touch (the others keep zero regrets and uniform strategies).
    active_decisions: [Vec<u32>; 2],
    /// Buffers of the previous values and action values, reused by the next sweep (only their
    /// in-tree entries are ever written, so only those need clearing).
    spare_v: Vec<f64>,
    spare_q: [Vec<f64>; 2],
    iteration: u64,
    regrets: [Vec<f64>; 2],
    cumulative: [Vec<f64>; 2],
    current: [Vec<f64>; 2],
    reach: [Vec<f64>; 2],
    values: [Vec<f64>; 2],
    q: [Vec<f64>; 2],
    cfv_sum: [Vec<f64>; 2],
    cfv_weight: [f64; 2],
    /// Per player: weighted sums of counterfactual values at every slot while its node was in
    /// the tree (`[node x P]`), and the weight each node collected.
    slot_cfv_sum: [Vec<f64>; 2],
    slot_cfv_weight: [Vec<f64>; 2],
    gadget: Option<Gadget>,
    leaf_queries: u64,
    /// `reach` holds the reaches of the current strategies, computed by
    /// [`Self::pending_queries`] and not invalidated since: the next single update uses them.
    reaches_fresh: bool,
}

impl ScalarEngine {
    /// An engine at iteration 0 (uniform strategies) on `layout` with root ranges
    /// `root_range[i]` (`R x P` entries, `R` the layout's roots); only the roots are expanded.
    pub fn new(
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
    ) -> Result<ScalarEngine, SearchError> {
        let (p, a, n) = (layout.p, layout.a, layout.len());
        let roots = layout.levels[0].1 as usize;
        for (i, r) in root_range.iter().enumerate() {
            if r.len() != roots * p {
                return Err(SearchError::BadRange {
                    player: i,
                    reason: format!("{} entries; the layout needs {}", r.len(), roots * p),
                });
            }
            check_range(i, r, &layout.valid[i][..roots * p])?;
        }
        let blocks = |i: usize| layout.decisions[i].len() * p * a;
        let mut current = [vec![0.0; blocks(0)], vec![0.0; blocks(1)]];
        for (i, cur) in current.iter_mut().enumerate() {
            for d in 0..layout.decisions[i].len() {
                let na = layout.num_actions[i][d] as usize;
                for (_, row) in live_rows(&layout, i, d) {
                    cur[row..row + na].fill(1.0 / na as f64);
                }
            }
        }
        let mut expanded = vec![false; n];
        for (e, k) in expanded.iter_mut().zip(&layout.kind).take(roots) {
            *e = matches!(k, TensorKind::Chance | TensorKind::Decision(_));
        }
        let mut engine = ScalarEngine {
            spec,
            roots,
            root_range,
            expanded,
            active: Vec::new(),
            active_decisions: [Vec::new(), Vec::new()],
            spare_v: Vec::new(),
            spare_q: [Vec::new(), Vec::new()],
            iteration: 0,
            regrets: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            cumulative: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            current,
            reach: [vec![0.0; n * p], vec![0.0; n * p]],
            values: [vec![0.0; n * p], vec![0.0; n * p]],
            q: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            cfv_sum: [vec![0.0; roots * p], vec![0.0; roots * p]],
            cfv_weight: [0.0; 2],
            slot_cfv_sum: [vec![0.0; n * p], vec![0.0; n * p]],
            slot_cfv_weight: [vec![0.0; n], vec![0.0; n]],
            gadget: None,
            leaf_queries: 0,
            reaches_fresh: false,
            layout,
        };
        engine.rebuild_active();
        Ok(engine)
    }

    /// Recomputes the in-tree node list and the expanded decisions from `expanded`.
    fn rebuild_active(&mut self) {
        let l = &*self.layout;
        self.active = (0..l.len())
            .filter(|&n| n < self.roots || self.expanded[l.parent[n] as usize])
            .map(|n| n as u32)
            .collect();
        self.active_decisions = std::array::from_fn(|p| {
            l.decisions[p]
                .iter()
                .enumerate()
                .filter(|&(_, &n)| self.expanded[n as usize])
                .map(|(d, _)| d as u32)
                .collect()
        });
    }

    /// Installs the re-solving gadget: from now on the gadget sets its player's root range.
    pub fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        if gadget.cfvs.len() != self.roots * self.layout.p {
            return Err(SearchError::BadRange {
                player: gadget.player,
                reason: format!(
                    "gadget has {} values; the root has {} slots",
                    gadget.cfvs.len(),
                    self.roots * self.layout.p
                ),
            });
        }
        self.root_range[gadget.player] = gadget.range();
        self.gadget = Some(gadget);
        self.reaches_fresh = false;
        Ok(())
    }

    /// The gadget, if any.
    pub fn gadget(&self) -> Option<&Gadget> {
        self.gadget.as_ref()
    }

    /// Replaces player `p`'s root range (e.g. a caller-driven gadget).
    pub fn set_root_range(&mut self, p: Player, range: Vec<f64>) -> Result<(), SearchError> {
        if range.len() != self.roots * self.layout.p {
            return Err(SearchError::BadRange {
                player: p,
                reason: format!(
                    "{} entries; the root has {}",
                    range.len(),
                    self.root_range[p].len()
                ),
            });
        }
        self.root_range[p] = range;
        self.reaches_fresh = false;
        Ok(())
    }

    /// Expands every node of the layout (a full-depth solve).
    pub fn expand_all(&mut self) {
        self.reaches_fresh = false;
        for (e, k) in self.expanded.iter_mut().zip(&self.layout.kind) {
            *e = matches!(k, TensorKind::Chance | TensorKind::Decision(_));
        }
        self.rebuild_active();
    }

    /// Frontier nodes (layout ids): in the tree, not expanded, not terminal.
    pub fn frontier(&self) -> Vec<usize> {
        self.active
            .iter()
            .map(|&n| n as usize)
            .filter(|&n| !self.expanded[n] && self.layout.kind[n] != TensorKind::Terminal)
            .collect()
    }

    /// Leaf queries answered so far (one per frontier node per evaluation).
    pub fn leaf_queries(&self) -> u64 {
        self.leaf_queries
    }

    /// Player `p`'s single update (half an alternating iteration): sweep with the current
    /// strategies, update `p`'s regrets and average, regret-match `p`. Advances the
    /// iteration counter when `p == 0`. Drives the gadget after its player's update.
    pub fn update_player(
        &mut self,
        p: Player,
        leaves: &mut dyn LeafValues,
    ) -> Result<(), SearchError> {
        let it = Iteration::single(&mut self.iteration, p, self.spec.averaging);
        self.turn(&[p], it.t as f64, it.weight, leaves)
    }

    /// One turn of an iteration (`cfr::Iteration`): sweep with the current strategies (the
    /// reaches of [`Self::pending_queries`] when fresh), then update each of `players`' regrets
    /// and average, regret-match them, and drive the gadget.
    fn turn(
        &mut self,
        players: &[Player],
        t: f64,
        weight: f64,
        leaves: &mut dyn LeafValues,
    ) -> Result<(), SearchError> {
        let strat = std::mem::take(&mut self.current);
        let r = if std::mem::take(&mut self.reaches_fresh) {
            Ok(())
        } else {
            self.compute_reaches(&strat)
        };
        let out = r.and_then(|_| {
            players
                .iter()
                .map(|&p| self.compute_values(p, &strat, leaves, false))
                .collect::<Result<Vec<_>, SearchError>>()
        });
        self.current = strat;
        let values = out?;
        for (&p, (_, q)) in players.iter().zip(&values) {
            self.accumulate(p, q, weight);
        }
        for &p in players {
            self.finish(p, t);
        }
        for (&p, (v, q)) in players.iter().zip(values) {
            self.record(p, v, q, weight);
        }
        Ok(())
    }

    /// The frontier queries the next single update ([`Self::update_player`]) will ask its
    /// evaluator, in order: the reaches under the current strategies at every frontier node.
    /// Lock-step batches (`super::gtcfr::run_lockstep`) gather them from many searches,
    /// answer them with one evaluation and hand each search its answers.
    pub fn pending_queries(&mut self) -> Vec<Pbs> {
        let strat = std::mem::take(&mut self.current);
        self.compute_reaches(&strat)
            .expect("computing reaches cannot fail");
        self.current = strat;
        self.reaches_fresh = true;
        let pp = self.layout.p;
        self.frontier()
            .into_iter()
            .map(|n| Pbs {
                node: self.layout.public_node[n],
                ranges: std::array::from_fn(|i| self.reach[i][n * pp..(n + 1) * pp].to_vec()),
            })
            .collect()
    }

    /// Whether the engine alternates the players' updates (the lock-step batch needs it).
    pub fn alternating(&self) -> bool {
        matches!(self.spec.updates, Updates::Alternating)
    }

    /// Both players' counterfactual values at every slot (`[node x P]`) when both play
    /// `blocks` (e.g. [`RegretEngine::average_blocks`]); no state changes but the leaf counter.
    pub fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        let saved = self.reach.clone();
        let out = (|| {
            self.compute_reaches(blocks)?;
            let (v0, _) = self.compute_values(0, blocks, leaves, false)?;
            let (v1, _) = self.compute_values(1, blocks, leaves, false)?;
            Ok([v0, v1])
        })();
        self.reach = saved;
        out
    }

    /// Both players' reaches at every slot (`[node x P]`, the root ranges times each player's
    /// own action probabilities in `blocks`, in-tree nodes only); no state changes.
    pub fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        let saved = self.reach.clone();
        self.compute_reaches(blocks)
            .expect("computing reaches cannot fail");
        std::mem::replace(&mut self.reach, saved)
    }

    /// Player `p`'s best-response counterfactual values at every slot (`[node x P]`) against
    /// the opponent's strategy in `blocks` (and the root ranges); `p`'s own entries of
    /// `blocks` are ignored. At frontier nodes the evaluator's values stand in.
    pub fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        let saved = self.reach.clone();
        let out = (|| {
            self.compute_reaches(blocks)?;
            Ok(self.compute_values(p, blocks, leaves, true)?.0)
        })();
        self.reach = saved;
        out
    }

    /// Player 0's root value `Σ_x r_0(x) v_0(x)` from given slot values.
    pub fn root_value(&self, values0: &[f64]) -> f64 {
        self.root_range[0]
            .iter()
            .zip(values0)
            .map(|(r, v)| r * v)
            .sum()
    }

    /// Writes `blocks` of player `i` into a whole-game policy (entries outside the layout keep
    /// `base`'s values).
    pub fn to_policy(
        &self,
        tree: &PublicTree,
        blocks: &[Vec<f64>; 2],
        base: &TreePolicy,
    ) -> TreePolicy {
        std::array::from_fn(|i| {
            let mut out = base[i].clone();
            self.layout.scatter_blocks(tree, i, &blocks[i], &mut out);
            out
        })
    }

    /// Player `p`'s counterfactual values at every slot (`[node x P]`) averaged over the
    /// iterations its node spent in the tree, with the solver's averaging weights (0 for nodes
    /// never in the tree): DeepStack's carried opponent values.
    pub fn average_cfvs(&self, p: Player) -> Vec<f64> {
        slot_means(
            &self.slot_cfv_sum[p],
            &self.slot_cfv_weight[p],
            self.layout.p,
        )
    }

    /// Player `p`'s cumulative regrets as blocks.
    pub fn regret_blocks(&self, p: Player) -> &[f64] {
        &self.regrets[p]
    }

    fn compute_reaches(&mut self, strat: &[Vec<f64>; 2]) -> Result<(), SearchError> {
        self.reaches_fresh = false;
        let l = &*self.layout;
        let (pp, a) = (l.p, l.a);
        for (i, reach) in self.reach.iter_mut().enumerate() {
            let rs = self.roots * pp;
            for ((r, &v), &x) in reach[..rs]
                .iter_mut()
                .zip(&l.valid[i][..rs])
                .zip(&self.root_range[i][..rs])
            {
                if v {
                    *r = x;
                }
            }
            for &n in &self.active[self.roots..] {
                let n = n as usize;
                let par = l.parent[n] as usize;
                for x in 0..pp {
                    let s = n * pp + x;
                    let up = l.up[i][s];
                    if up == NONE {
                        continue;
                    }
                    let f = match l.kind[par] {
                        TensorKind::Decision(actor) if actor == i => {
                            let d = l.decision_index[par] as usize;
                            let xp = up as usize - par * pp;
                            strat[i][(d * pp + xp) * a + l.action_index[n] as usize]
                        }
                        _ => 1.0,
                    };
                    reach[s] = reach[up as usize] * f;
                }
            }
        }
        Ok(())
    }

    /// Player `p`'s values at every slot and action values of its rows under `strat` (the
    /// reaches must be current).
    fn compute_values(
        &mut self,
        p: Player,
        strat: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
        best_response: bool,
    ) -> Result<(Vec<f64>, Vec<f64>), SearchError> {
        let mut v = std::mem::take(&mut self.spare_v);
        let mut q = std::mem::take(&mut self.spare_q[p]);
        let l = &*self.layout;
        let (pp, a, n_nodes) = (l.p, l.a, l.len());
        if v.len() == n_nodes * pp {
            for &n in &self.active {
                let n = n as usize;
                v[n * pp..(n + 1) * pp].fill(0.0);
            }
        } else {
            v = vec![0.0; n_nodes * pp];
        }
        if q.len() == l.decisions[p].len() * pp * a {
            for &d in &self.active_decisions[p] {
                let d = d as usize;
                q[d * pp * a..(d + 1) * pp * a].fill(0.0);
            }
        } else {
            q = vec![0.0; l.decisions[p].len() * pp * a];
        }
        let frontier = self.frontier();
        if !frontier.is_empty() {
            let queries: Vec<Pbs> = frontier
                .iter()
                .map(|&n| Pbs {
                    node: l.public_node[n],
                    ranges: std::array::from_fn(|i| self.reach[i][n * pp..(n + 1) * pp].to_vec()),
                })
                .collect();
            let answers = leaves.evaluate(&queries)?;
            self.leaf_queries += queries.len() as u64;
            if answers.len() != queries.len() {
                return Err(SearchError::Leaf(format!(
                    "{} answers for {} queries",
                    answers.len(),
                    queries.len()
                )));
            }
            for (&n, ans) in frontier.iter().zip(&answers) {
                if ans[p].len() != pp || ans[p].iter().any(|x| !x.is_finite()) {
                    return Err(SearchError::Leaf(format!(
                        "public node {}: values must be {pp} finite numbers",
                        l.public_node[n]
                    )));
                }
                for x in 0..pp {
                    if l.valid[p][n * pp + x] {
                        v[n * pp + x] = ans[p][x];
                    }
                }
            }
        }
        let opp = &self.reach[1 - p];
        for &n in &self.active {
            let n = n as usize;
            if l.kind[n] != TensorKind::Terminal {
                continue;
            }
            for x0 in 0..pp {
                for x1 in 0..pp {
                    let js = (n * pp + x0) * pp + x1;
                    if !l.joint_valid[js] {
                        continue;
                    }
                    let w = l.chance_reach[js] * l.utility[js];
                    if p == 0 {
                        v[n * pp + x0] += w * opp[n * pp + x1];
                    } else {
                        v[n * pp + x1] -= w * opp[n * pp + x0];
                    }
                }
            }
        }
        for &n in self.active.iter().rev() {
            let n = n as usize;
            if !self.expanded[n] {
                continue;
            }
            let c0 = l.first_child[n] as usize;
            let kids = c0..c0 + l.num_children[n] as usize;
            match l.kind[n] {
                TensorKind::Decision(actor) if actor == p => {
                    let d = l.decision_index[n] as usize;
                    for c in kids {
                        let k = l.action_index[c] as usize;
                        for x in 0..pp {
                            let up = l.up[p][c * pp + x];
                            if up != NONE {
                                let xp = up as usize - n * pp;
                                q[(d * pp + xp) * a + k] += v[c * pp + x];
                            }
                        }
                    }
                    let na = l.num_actions[p][d] as usize;
                    for (x, row) in live_rows(l, p, d) {
                        let qr = &q[row..row + na];
                        v[n * pp + x] = if best_response {
                            qr.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        } else {
                            expected_value(&strat[p][row..row + na], qr)
                        };
                    }
                }
                _ => {
                    for c in kids {
                        for x in 0..pp {
                            let up = l.up[p][c * pp + x];
                            if up != NONE {
                                v[up as usize] += v[c * pp + x];
                            }
                        }
                    }
                }
            }
        }
        Ok((v, q))
    }

    /// Regret and average-strategy accumulation of player `p` (expanded decisions only).
    fn accumulate(&mut self, p: Player, q: &[f64], weight: f64) {
        let l = &*self.layout;
        let pp = l.p;
        for &d in &self.active_decisions[p] {
            let d = d as usize;
            let n = l.decisions[p][d] as usize;
            let na = l.num_actions[p][d] as usize;
            for (x, row) in live_rows(l, p, d) {
                let sigma = &self.current[p][row..row + na];
                let qr = &q[row..row + na];
                let v = expected_value(sigma, qr);
                let noise = ROUNDING_NOISE * qr.iter().fold(v.abs(), |m, y| m.max(y.abs()));
                let wr = weight * self.reach[p][n * pp + x];
                for k in 0..na {
                    let dk = qr[k] - v;
                    if dk.abs() > noise {
                        self.regrets[p][row + k] += dk;
                    }
                    self.cumulative[p][row + k] += wr * sigma[k];
                }
            }
        }
    }

    /// Regret rule and regret matching of player `p`.
    fn finish(&mut self, p: Player, t: f64) {
        // Rows of decisions outside the tree hold zero regrets (no rule changes them) and
        // uniform strategies (what regret matching of zeros gives): only the expanded
        // decisions' rows need the work.
        let l = &*self.layout;
        let rule = self.spec.regrets;
        let (dp, dn) = match rule {
            RegretRule::Discounted { alpha, beta } => {
                let (ta, tb) = (t.powf(alpha), t.powf(beta));
                (ta / (ta + 1.0), tb / (tb + 1.0))
            }
            _ => (1.0, 1.0),
        };
        for &d in &self.active_decisions[p] {
            let d = d as usize;
            let na = l.num_actions[p][d] as usize;
            for (_, row) in live_rows(l, p, d) {
                let r = &mut self.regrets[p][row..row + na];
                match rule {
                    RegretRule::Plain => {}
                    RegretRule::Plus => r.iter_mut().for_each(|r| *r = r.max(0.0)),
                    RegretRule::Discounted { .. } => r
                        .iter_mut()
                        .for_each(|r| *r *= if *r >= 0.0 { dp } else { dn }),
                }
                regret_match_infoset(r, &mut self.current[p][row..row + na]);
            }
        }
    }

    /// Keeps `p`'s latest values, averages its root CFVs and drives the gadget.
    fn record(&mut self, p: Player, v: Vec<f64>, q: Vec<f64>, weight: f64) {
        let rs = self.roots * self.layout.p;
        for (s, x) in self.cfv_sum[p].iter_mut().zip(&v[..rs]) {
            *s += weight * x;
        }
        self.cfv_weight[p] += weight;
        let pp = self.layout.p;
        for &n in &self.active {
            let n = n as usize;
            self.slot_cfv_weight[p][n] += weight;
            let sl = n * pp..(n + 1) * pp;
            for (s, x) in self.slot_cfv_sum[p][sl.clone()].iter_mut().zip(&v[sl]) {
                *s += weight * x;
            }
        }
        if let Some(g) = self.gadget.as_mut()
            && g.player == p
        {
            g.update(&v[..rs]);
            self.root_range[p] = g.range();
        }
        self.spare_v = std::mem::replace(&mut self.values[p], v);
        self.spare_q[p] = std::mem::replace(&mut self.q[p], q);
    }
}

impl RegretEngine for ScalarEngine {
    fn layout(&self) -> &Arc<TensorTree> {
        &self.layout
    }

    fn is_expanded(&self, n: usize) -> bool {
        self.expanded[n]
    }

    fn in_tree(&self, n: usize) -> bool {
        n < self.roots || self.expanded[self.layout.parent[n] as usize]
    }

    fn expand(&mut self, n: usize) -> bool {
        if n >= self.layout.len()
            || self.expanded[n]
            || !self.in_tree(n)
            || !matches!(
                self.layout.kind[n],
                TensorKind::Chance | TensorKind::Decision(_)
            )
        {
            return false;
        }
        self.expanded[n] = true;
        self.reaches_fresh = false;
        // The children join the tree: one contiguous id range, kept in ascending order.
        let l = &*self.layout;
        let c0 = l.first_child[n];
        let kids = c0..c0 + l.num_children[n];
        let at = self.active.partition_point(|&x| x < c0);
        self.active.splice(at..at, kids);
        if let TensorKind::Decision(actor) = l.kind[n] {
            self.active_decisions[actor].push(l.decision_index[n]);
        }
        true
    }

    fn iterate(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        let it = Iteration::new(self.iteration + 1, self.spec.updates, self.spec.averaging);
        self.iteration = it.t;
        for &turn in it.turns {
            let players: Vec<Player> = Iteration::updating(turn).collect();
            self.turn(&players, it.t as f64, it.weight, leaves)?;
        }
        Ok(())
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn current_row(&self, p: Player, d: usize, x: usize) -> &[f64] {
        &self.current[p][row_span(&self.layout, p, d, x)]
    }

    fn action_values(&self, p: Player, d: usize, x: usize) -> &[f64] {
        &self.q[p][row_span(&self.layout, p, d, x)]
    }

    fn reach(&self, p: Player) -> &[f64] {
        &self.reach[p]
    }

    fn root_range(&self, p: Player) -> &[f64] {
        &self.root_range[p]
    }

    fn root_cfvs(&self, p: Player) -> &[f64] {
        &self.values[p][..self.roots * self.layout.p]
    }

    fn average_root_cfvs(&self, p: Player) -> Vec<f64> {
        weighted_means(&self.cfv_sum[p], self.cfv_weight[p])
    }

    fn average_blocks(&self) -> [Vec<f64>; 2] {
        std::array::from_fn(|i| {
            average_blocks(
                &self.layout,
                i,
                &self.cumulative[i],
                self.current[i].clone(),
            )
        })
    }

    fn current_blocks(&self) -> [Vec<f64>; 2] {
        self.current.clone()
    }

    fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        ScalarEngine::set_gadget(self, gadget)
    }

    fn expand_all(&mut self) {
        ScalarEngine::expand_all(self)
    }

    fn frontier(&self) -> Vec<usize> {
        ScalarEngine::frontier(self)
    }

    fn alternating(&self) -> bool {
        ScalarEngine::alternating(self)
    }

    fn update_player(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        ScalarEngine::update_player(self, p, leaves)
    }

    fn pending_queries(&mut self) -> Vec<Pbs> {
        ScalarEngine::pending_queries(self)
    }

    fn average_cfvs(&self, p: Player) -> Vec<f64> {
        ScalarEngine::average_cfvs(self, p)
    }

    fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        ScalarEngine::reaches_under(self, blocks)
    }

    fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        ScalarEngine::values_under(self, blocks, leaves)
    }

    fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        ScalarEngine::best_response_values(self, p, blocks, leaves)
    }
}
