//! Full-width tabular solvers over the compiled public tree: CFR, CFR+, Linear CFR and
//! Discounted CFR.
//!
//! One iteration is a handful of linear sweeps over range vectors ([`crate::tree`]): sequence
//! reaches top-down, terminal counterfactual values, then a bottom-up sweep over the updating
//! player's infosets that forms action values and accumulates regrets and the average strategy.
//!
//! # Conventions (identical to OpenSpiel's, so NashConv curves match it to rounding)
//! * The iteration counter `t` starts at 1.
//! * **Alternating updates** (OpenSpiel's default): for `p` in 0, 1: sweep with the current
//!   policies, update `p`'s regrets and average, then (CFR+) clamp `p`'s regrets at 0 or (LCFR,
//!   DCFR) discount them, and recompute `p`'s current policy by regret matching. Player 1's sweep
//!   in iteration `t` therefore sees player 0's updated policy.
//! * **Simultaneous updates**: both players' regrets and averages are updated from one sweep with
//!   the iteration-`t` policies, then both policies are recomputed.
//! * Regret update: `R[I,a] += v(I,a) − v(I)` with counterfactual values (opponent and chance
//!   reach included). Average update: `S[I,a] += w_t · π_p(I) · σ(I,a)` with the player's own
//!   reach; `w_t` = 1 (CFR), `t` (CFR+ linear averaging, LCFR), `t^γ` (DCFR).
//! * Regret matching: `σ(a) = R⁺(a) / Σ R⁺` or uniform when `Σ R⁺ = 0`.
//! * LCFR and DCFR follow OpenSpiel's `discounted_cfr.py`: after `p`'s sweep, `p`'s cumulative
//!   regrets are multiplied by `t^α/(t^α+1)` where non-negative and `t^β/(t^β+1)` where negative
//!   (Brown & Sandholm 2019; LCFR is α = β = γ = 1, DCFR defaults to α = 1.5, β = 0, γ = 2).

use super::rules::{Averaging, Iteration, RegretRule, Updates};
use super::{
    ROUNDING_NOISE, SolverSnapshot, TreeSolver, expected_value, normalized_average, regret_matching,
};
use crate::tree::{PublicTree, TreePolicy};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A complete description of a tabular solver.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolverSpec {
    pub regrets: RegretRule,
    pub averaging: Averaging,
    pub updates: Updates,
}

/// Algorithm names understood by [`SolverSpec::named`].
pub const ALGORITHMS: &[&str] = &["cfr", "cfr+", "lcfr", "dcfr"];

impl SolverSpec {
    /// The defaults of a named algorithm, with OpenSpiel's conventions: `cfr` (plain regrets,
    /// uniform averaging), `cfr+` (regret matching+, linear averaging), `lcfr` (α = β = γ = 1),
    /// `dcfr` (α = 1.5, β = 0, γ = 2); all with alternating updates.
    pub fn named(name: &str) -> Option<SolverSpec> {
        let (regrets, averaging) = match name {
            "cfr" => (RegretRule::Plain, Averaging::Uniform),
            "cfr+" => (RegretRule::Plus, Averaging::Linear),
            "lcfr" => (
                RegretRule::Discounted {
                    alpha: 1.0,
                    beta: 1.0,
                },
                Averaging::Power(1.0),
            ),
            "dcfr" => (
                RegretRule::Discounted {
                    alpha: 1.5,
                    beta: 0.0,
                },
                Averaging::Power(2.0),
            ),
            _ => return None,
        };
        Some(SolverSpec {
            regrets,
            averaging,
            updates: Updates::Alternating,
        })
    }

    /// Discounted CFR with explicit parameters.
    pub fn dcfr(alpha: f64, beta: f64, gamma: f64) -> SolverSpec {
        SolverSpec {
            regrets: RegretRule::Discounted { alpha, beta },
            averaging: Averaging::Power(gamma),
            updates: Updates::Alternating,
        }
    }

    /// The same solver with other updates.
    pub fn with_updates(mut self, updates: Updates) -> SolverSpec {
        self.updates = updates;
        self
    }
}

/// The mutable part of a solver: enough to resume exactly where it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolverState {
    pub iteration: u64,
    pub regrets: [Vec<f64>; 2],
    pub cumulative_policy: [Vec<f64>; 2],
    pub current: [Vec<f64>; 2],
}

/// A tabular CFR-family solver bound to one compiled tree.
pub struct TabularSolver {
    tree: Arc<PublicTree>,
    spec: SolverSpec,
    state: SolverState,
    // Scratch buffers, reused every sweep.
    reach: [Vec<f64>; 2],
    values: Vec<f64>,
}

impl TabularSolver {
    /// A solver at iteration 0 with uniform current policies.
    pub fn new(tree: Arc<PublicTree>, spec: SolverSpec) -> Self {
        let current = crate::tree::uniform_tree_policy(&tree);
        let zeros = |p: usize| vec![0.0; tree.infosets[p].num_actions_total()];
        let state = SolverState {
            iteration: 0,
            regrets: [zeros(0), zeros(1)],
            cumulative_policy: [zeros(0), zeros(1)],
            current,
        };
        let reach = [
            vec![0.0; tree.num_sequences(0)],
            vec![0.0; tree.num_sequences(1)],
        ];
        let max_seqs = tree.num_sequences(0).max(tree.num_sequences(1));
        TabularSolver {
            tree,
            spec,
            state,
            reach,
            values: vec![0.0; max_seqs],
        }
    }

    /// Restores a saved state; fails if its array sizes do not fit this tree.
    pub fn restore(&mut self, state: SolverState) -> Result<(), String> {
        for p in 0..2 {
            let n = self.tree.infosets[p].num_actions_total();
            if state.regrets[p].len() != n
                || state.cumulative_policy[p].len() != n
                || state.current[p].len() != n
            {
                return Err(format!(
                    "solver state does not fit this game: player {p} has {n} infoset actions"
                ));
            }
        }
        self.state = state;
        Ok(())
    }

    /// The resumable state.
    pub fn state(&self) -> &SolverState {
        &self.state
    }

    /// The tree the solver runs on.
    pub fn tree(&self) -> &Arc<PublicTree> {
        &self.tree
    }

    /// The solver's description.
    pub fn spec(&self) -> &SolverSpec {
        &self.spec
    }

    /// Iterations done so far.
    pub fn iteration(&self) -> u64 {
        self.state.iteration
    }

    /// The current (regret-matching) policy.
    pub fn current_policy(&self) -> &TreePolicy {
        &self.state.current
    }

    /// The average policy: normalised cumulative policy, uniform where it is all zero.
    pub fn average_policy(&self) -> TreePolicy {
        normalized_average(&self.tree, &self.state.cumulative_policy)
    }

    /// Runs one iteration.
    pub fn iterate(&mut self) {
        self.iterate_until(&|| false);
    }

    /// [`TabularSolver::iterate`], abandoned between its tree passes once `stop` returns true
    /// (see [`TreeSolver::iterate_until`]); false when abandoned.
    pub fn iterate_until(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        self.state.iteration += 1;
        let it = Iteration::new(self.state.iteration, self.spec.updates, self.spec.averaging);
        let t = it.t as f64;
        for &turn in it.turns {
            if stop() {
                return false;
            }
            self.compute_reaches();
            for p in Iteration::updating(turn) {
                if stop() {
                    return false;
                }
                self.sweep(p, it.weight);
            }
            for p in Iteration::updating(turn) {
                self.finish_player(p, t);
            }
        }
        true
    }

    fn compute_reaches(&mut self) {
        for p in 0..2 {
            self.tree
                .reach(p, &self.state.current[p], &mut self.reach[p]);
        }
    }

    /// Bottom-up sweep for player `p`: regrets and cumulative policy of `p`.
    fn sweep(&mut self, p: usize, weight: f64) {
        let tree = &*self.tree;
        let inf = &tree.infosets[p];
        let values = &mut self.values[..tree.num_sequences(p)];
        tree.terminal_values(p, &self.reach[1 - p], values);
        let own_reach = &self.reach[p];
        let sigma = &self.state.current[p];
        let regrets = &mut self.state.regrets[p];
        let cum = &mut self.state.cumulative_policy[p];
        for i in (0..inf.len()).rev() {
            let r = inf.range(i);
            let parent = inf.parent_seq[i] as usize;
            let q = &values[r.clone()];
            let v = expected_value(&sigma[r.clone()], q);
            let noise = ROUNDING_NOISE * q.iter().fold(v.abs(), |m, x| m.max(x.abs()));
            let wr = weight * own_reach[parent];
            for k in r {
                let d = values[k] - v;
                if d.abs() > noise {
                    regrets[k] += d;
                }
                cum[k] += wr * sigma[k];
            }
            values[parent] += v;
        }
    }

    /// Post-sweep regret transformation and regret matching for player `p`.
    fn finish_player(&mut self, p: usize, t: f64) {
        let regrets = &mut self.state.regrets[p];
        self.spec.regrets.apply(regrets, t);
        regret_matching(&self.tree, p, regrets, &mut self.state.current[p]);
    }
}

impl TreeSolver for TabularSolver {
    fn iterate(&mut self) {
        TabularSolver::iterate(self)
    }

    fn iterate_until(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        TabularSolver::iterate_until(self, stop)
    }

    fn iteration(&self) -> u64 {
        self.state.iteration
    }

    fn average_policy(&self) -> TreePolicy {
        TabularSolver::average_policy(self)
    }

    fn current_policy(&self) -> TreePolicy {
        self.state.current.clone()
    }

    /// Full width: every history once per traversal; alternating updates traverse twice.
    fn nodes_touched(&self) -> u64 {
        let passes = self.spec.updates.turns().len() as u64;
        self.state.iteration * passes * self.tree.stats.histories as u64
    }

    fn snapshot(&self) -> SolverSnapshot {
        let s = &self.state;
        SolverSnapshot {
            iteration: s.iteration,
            counters: Vec::new(),
            arrays: [&s.regrets, &s.cumulative_policy, &s.current]
                .into_iter()
                .flat_map(|a| a.iter().cloned())
                .collect(),
        }
    }

    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String> {
        let [r0, r1, c0, c1, p0, p1]: [Vec<f64>; 6] =
            snapshot.arrays.try_into().map_err(|a: Vec<Vec<f64>>| {
                format!("expected 6 arrays in a CFR checkpoint, found {}", a.len())
            })?;
        TabularSolver::restore(
            self,
            SolverState {
                iteration: snapshot.iteration,
                regrets: [r0, r1],
                cumulative_policy: [c0, c1],
                current: [p0, p1],
            },
        )
    }
}
