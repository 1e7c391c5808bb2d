//! The CFR family: every solver whose strategies live on a compiled [`PublicTree`] and that
//! minimises counterfactual regret, full-width or sampled.
//!
//! * [`full_width`]: CFR, CFR+, Linear and Discounted CFR over range vectors;
//! * [`mccfr`]: Monte-Carlo CFR (chance, external, outcome and average-strategy sampling);
//! * [`pos`]: public outcome sampling with baselines;
//! * [`sfo`]: stochastic FTRL / OMD with the dilated entropy;
//! * [`rules`] and [`baseline`]: the vocabulary they share (regret rules, averaging, update
//!   order; control-variate baselines).
//!
//! Every solver implements [`TreeSolver`], so one driver runs them all; this module also holds
//! the kernels they share (regret matching, average normalisation).

pub mod baseline;
pub(crate) mod deferred;
pub mod full_width;
pub mod mccfr;
pub mod pos;
pub mod rules;
pub mod sfo;
pub mod team;

pub use crate::tree::expected_value;
pub use full_width::{ALGORITHMS, SolverSpec, SolverState, TabularSolver};
pub use rules::{Averaging, Iteration, RegretRule, Updates};

use crate::tree::{PublicTree, TreePolicy};

/// Relative size below which an instantaneous regret `q(a) − v` is rounding noise and counts as
/// zero. Action values that are equal in exact arithmetic but summed in different orders differ
/// by a few ulps; without this, regret matching (discontinuous at zero regret) would turn such a
/// 1e-17 residue into a pure strategy where OpenSpiel, which subtracts per history, gets exactly
/// zero. Measured on Goofspiel 5 after one CFR iteration: 44 infosets flipped without it.
pub const ROUNDING_NOISE: f64 = 1e-12;

/// `σ(a) = R⁺(a) / Σ R⁺` per infoset, uniform where no regret is positive.
pub fn regret_matching(tree: &PublicTree, p: usize, regrets: &[f64], out: &mut [f64]) {
    let inf = &tree.infosets[p];
    for i in 0..inf.len() {
        let r = inf.range(i);
        regret_match_infoset(&regrets[r.clone()], &mut out[r]);
    }
}

/// Regret matching of one infoset's actions (the arithmetic every solver shares, so a policy
/// recomputed from restored regrets equals the one kept during a run).
#[inline]
pub fn regret_match_infoset(regrets: &[f64], out: &mut [f64]) {
    let total: f64 = regrets.iter().map(|x| x.max(0.0)).sum();
    regret_match_with_total(regrets, total, out);
}

/// [`regret_match_infoset`] given `total`, the sum of the positive regrets in action order
/// (`Σ_a max(r_a, 0)`, as `Iterator::sum` adds), for callers that sum while they update.
/// One division per infoset: each positive regret is multiplied by `1 / total` (which may
/// differ from `r / total` in the last bit; every solver and restore path shares this rule).
#[inline]
pub fn regret_match_with_total(regrets: &[f64], total: f64, out: &mut [f64]) {
    if total > 0.0 {
        let inv = 1.0 / total;
        for (o, r) in out.iter_mut().zip(regrets) {
            *o = r.max(0.0) * inv;
        }
    } else {
        out.fill(1.0 / regrets.len() as f64);
    }
}

/// Normalises cumulative (average-strategy) weights per infoset into a behavioural policy,
/// uniform where an infoset accumulated nothing.
pub fn normalized_average(tree: &PublicTree, cumulative: &[Vec<f64>; 2]) -> TreePolicy {
    std::array::from_fn(|p| {
        let inf = &tree.infosets[p];
        let cum = &cumulative[p];
        let mut out = vec![0.0; cum.len()];
        for i in 0..inf.len() {
            let r = inf.range(i);
            let total: f64 = cum[r.clone()].iter().sum();
            let n = r.len() as f64;
            for k in r {
                out[k] = if total > 0.0 { cum[k] / total } else { 1.0 / n };
            }
        }
        out
    })
}

/// What an iterative solver saves to resume exactly where it stopped: the iteration count,
/// integer counters and flat `f64` arrays (their meaning is the solver's business). Solvers that
/// sample draw their random numbers from streams seeded by `(seed, iteration)`, so no generator
/// state needs saving.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolverSnapshot {
    pub iteration: u64,
    pub counters: Vec<u64>,
    pub arrays: Vec<Vec<f64>>,
}

/// An iterative solver whose strategies live on a compiled [`PublicTree`]: full-width CFR
/// ([`TabularSolver`]) and the sampling algorithms. The run driver needs nothing else.
pub trait TreeSolver: Send {
    /// Runs one iteration (both players).
    fn iterate(&mut self);
    /// [`TreeSolver::iterate`], abandoned part-way once `stop` returns true (a time limit or
    /// a signal; solvers whose iterations have long parts ask between them: the tree passes
    /// of the full-width solvers, the walks of parallel MCCFR). Returns false when abandoned:
    /// the solver's state is then part-updated, fit only to be dropped (a run resumes from its
    /// last checkpoint). The others ask only before starting.
    fn iterate_until(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        if stop() {
            return false;
        }
        self.iterate();
        true
    }
    /// Iterations done so far.
    fn iteration(&self) -> u64;
    /// The average policy (the one that converges), uniform where nothing was accumulated.
    fn average_policy(&self) -> TreePolicy;
    /// The current policy.
    fn current_policy(&self) -> TreePolicy;
    /// Histories visited so far, counted as OpenSpiel's samplers count them (one per history
    /// entered by a traversal); the measure of work of sampling algorithms.
    fn nodes_touched(&self) -> u64;
    /// Extra scalars to log (name, value), e.g. variance estimates.
    fn scalars(&self) -> Vec<(String, f64)> {
        Vec::new()
    }
    /// The resumable state.
    fn snapshot(&self) -> SolverSnapshot;
    /// Restores [`TreeSolver::snapshot`]'s output; fails (with the reason) if it does not fit.
    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String>;
}

/// Most walks per player of one iteration (`walks`): their updates are logged in memory
/// until the iteration applies them.
pub const MAX_WALKS: usize = 1 << 18;

/// The default of the sampling solvers' `threads` key: every core the OS grants this process.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A pool of `threads` workers for a solver's parallel walks; `None` for one thread (the
/// walks then run on the caller's thread). Falls back to `None` if the OS refuses threads.
pub fn worker_pool(threads: usize) -> Option<std::sync::Arc<rayon::ThreadPool>> {
    if threads <= 1 {
        return None;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("armac-walk-{i}"))
        .build()
        .ok()
        .map(std::sync::Arc::new)
}

/// Default walks (or samples) per thread of one parallel iteration: enough work per thread
/// that the per-iteration synchronisation costs little, few enough that the policy is
/// refreshed often.
pub const PARALLEL_WALKS_PER_THREAD: usize = 64;

/// Resolves the sampling solvers' `threads` and `walks` keys: `threads` defaults to
/// [`default_threads`]; `walks` to 1 with one thread (the sequential algorithm) and to
/// [`PARALLEL_WALKS_PER_THREAD`]` × threads` otherwise. Both must be at least 1 (the error
/// names the key).
pub fn resolve_parallel(
    threads: Option<usize>,
    walks: Option<usize>,
) -> Result<(usize, usize), (&'static str, String)> {
    let threads = threads.unwrap_or_else(default_threads);
    if threads == 0 || threads > 4096 {
        return Err(("threads", format!("{threads} must lie in 1..=4096")));
    }
    let walks = walks.unwrap_or(if threads == 1 {
        1
    } else {
        PARALLEL_WALKS_PER_THREAD * threads
    });
    if walks == 0 || walks > MAX_WALKS {
        return Err(("walks", format!("{walks} must lie in 1..={MAX_WALKS}")));
    }
    Ok((threads, walks))
}
