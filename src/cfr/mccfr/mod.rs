//! Monte-Carlo CFR over the explicit [`HistoryTree`]: chance sampling (`cs-mccfr`), external
//! sampling (`es-mccfr`), outcome sampling with baseline-corrected values (`os-mccfr`) and
//! average strategy sampling (`as-mccfr`).
//!
//! # Conventions (shared by the four samplers)
//! * Alternating updates: iteration `t` (starting at 1) walks the tree once for player 0, then
//!   once for player 1; a walk updates only the walking ("updating") player's regrets.
//! * The random numbers of the walk of player `p` in iteration `t` come from a stream seeded by
//!   `(seed, t, p)`, so a run resumed from a snapshot repeats an uninterrupted one exactly.
//! * The current policy is regret matching on the cumulative regrets, kept up to date after
//!   every regret update (an infoset met twice in one walk sees its first update). With
//!   `regret = "plus"` an infoset's regrets are clamped at zero right after each update
//!   (CFR+ style). `averaging = "linear"` multiplies every average-policy increment by `t`.
//! * `nodes_touched` counts every history a walk enters (OpenSpiel's measure).
//! * Values flow in player 0's utility; the regrets of player 1 use the negation.
//!
//! # The samplers
//! * **CS** (Zinkevich et al. / Lanctot et al. 2009): chance sampled once per walk, both
//!   players' actions walked in full. Regret increments `π_{-p}(h) (v(ha) - v(h))` with the
//!   opponent's reach (the chance reach cancels against its sampling probability); average
//!   increments `π_p(h) σ(h, ·)` at the updating player's histories.
//! * **ES**: chance and the opponent sampled on-policy, the updating player's actions walked in
//!   full; increments `v(ha) - v(h)`. The average policy uses OpenSpiel's "simple" averaging:
//!   at the opponent's sampled histories `S(I, ·) += σ(I, ·)`.
//! * **OS** (Lanctot et al. 2009; baselines: Davis, Schmid & Bowling 2019, Algorithms 1-2):
//!   one terminal sampled per walk. Sampling at the updating player's histories:
//!   `sampling = "epsilon"` (OpenSpiel's scheme, `ε·uniform + (1-ε)·σ`), `"uniform"`
//!   (uniform at every player history, both players), `"opponent-on-policy"` (uniform at the
//!   updating player's, on-policy at the opponent's: the paper's second scheme). With
//!   `"epsilon"` the opponent is sampled on-policy. Chance is always sampled with its own
//!   probabilities. Baseline-corrected values (the paper's Eqs. 4-5), at every history on the
//!   sampled path including chance histories:
//!   `û(h,a) = b(h,a) + 1[a sampled] (û(ha) - b(h,a)) / q(h,a)`, `û(h) = Σ_a σ(h,a) û(h,a)`.
//!   Regret increments `π_{-p}(h)/π_q(h) (û(h,a) - û(h))`; average increments (OpenSpiel's
//!   stochastically weighted averaging) `π_p(h) σ(h,a) / π_q(h)` at the updating player's
//!   sampled histories. Baselines: see [`Baseline`].
//! * **AS** (Gibson et al. 2012, Algorithm 1): chance and opponent sampled on-policy; at the
//!   updating player's histories each action `a` is walked independently with probability
//!   `ρ = max(ε, (β + τ s(I,a)) / (β + Σ_b s(I,b)))` (always when `ρ ≥ 1` or the denominator is
//!   0), where `s` is the player's cumulative average-policy table; terminals return `u / q`
//!   with `q` the product of the `min(1, ρ)` taken; at opponent histories `s(I,·) += σ(I,·)/q`.
//!
//! # Parallel walks (`walks`, `threads`)
//! With `walks = 1` (the default when `threads = 1`) an iteration is one walk per player and a
//! walk updates the tables as it goes: the sequential algorithm above, bit for bit.
//! With `walks = W > 1` an iteration runs, per player (still alternating), `W` independent walks
//! that all read the tables as they stood when the player's turn began. Walk `k` draws from a
//! stream seeded by `(seed, t, p, k)` (walk 0's is the sequential stream). The walks do not
//! write the tables: each records its regret, average and baseline updates in a log, bucketed
//! as it is written by shard of the tables ([`crate::cfr::team::shard_of`]: regret, policy and
//! average entries by the first action of their infoset, baseline entries by their slot). The
//! `W` walks are split into contiguous chunks, one per worker of a persistent
//! [`crate::cfr::team::Team`] (one dispatch per player); after a barrier each worker applies,
//! in walk order, the entries of its own shard from every chunk's log, then regret matching
//! refreshes its changed infosets.
//! Every table entry therefore receives the same floating-point operations in the same order
//! whatever the number of threads: **results are bit-identical for a given `(seed, walks)`
//! across thread counts**, and `threads` is not part of a run's meaning. A walk does not see
//! its own earlier updates (with the predictive baseline it does see the policy it just
//! computed at the infoset it is leaving, as the sequential walk does), so `walks > 1` is a
//! different, mini-batched algorithm: `W` samples per iteration from one policy. Default
//! `walks` with more than one thread: [`crate::cfr::PARALLEL_WALKS_PER_THREAD`]` × threads`.

mod options;
mod store;
#[cfg(test)]
mod tests;
mod walks;

use crate::cfr::baseline::{self, Baseline, BaselineAveraging};
use crate::cfr::deferred::parallel_turn;
use crate::cfr::team::Team;
use crate::cfr::{Averaging, Iteration, SolverSnapshot, TreeSolver, Updates};
use crate::game::Game;
use crate::tree::TreePolicy;
use crate::tree::history::HistoryTree;
use crate::tree::{PublicTree, TreeError};
use crossbeam::utils::CachePadded;
pub use options::{MccfrOptions, OptionError};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

/// Algorithm names of this module, as `[solver] algorithm` spells them.
pub const NAMES: &[&str] = &["cs-mccfr", "es-mccfr", "os-mccfr", "as-mccfr"];

/// Which MCCFR sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    Chance,
    External,
    Outcome,
    AverageStrategy,
}

impl Sampler {
    /// The sampler of an algorithm name of [`NAMES`].
    pub fn named(name: &str) -> Option<Sampler> {
        Some(match name {
            "cs-mccfr" => Sampler::Chance,
            "es-mccfr" => Sampler::External,
            "os-mccfr" => Sampler::Outcome,
            "as-mccfr" => Sampler::AverageStrategy,
            _ => return None,
        })
    }
}

/// How outcome sampling draws actions at player histories (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsSampling {
    Epsilon,
    Uniform,
    OpponentOnPolicy,
}

/// A validated MCCFR configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MccfrSpec {
    pub sampler: Sampler,
    /// Clamp regrets at zero after each update (CFR+ style).
    pub plus: bool,
    /// `Uniform` or `Linear` only.
    pub averaging: Averaging,
    /// OS: exploration of the `epsilon` scheme; AS: the floor ε of ρ.
    pub epsilon: f64,
    pub sampling: OsSampling,
    pub baseline: Baseline,
    pub baseline_averaging: BaselineAveraging,
    /// Decay α of exponential baseline averaging.
    pub baseline_alpha: f64,
    /// AS threshold τ.
    pub tau: f64,
    /// AS bonus β.
    pub beta: f64,
    /// Walks per player per iteration (see "Parallel walks" in the module docs); 1 is the
    /// sequential algorithm.
    pub walks: usize,
    /// Worker threads running an iteration's walks; never changes the results.
    pub threads: usize,
}

impl MccfrSpec {
    /// The defaults of a sampler: plain regrets, uniform averaging; OS: ε = 0.6, `epsilon`
    /// sampling, no baseline; AS: ε = 0.05, τ = 1000, β = 10⁶ (Gibson et al.'s values).
    pub fn new(sampler: Sampler) -> MccfrSpec {
        MccfrSpec {
            sampler,
            plus: false,
            averaging: Averaging::Uniform,
            epsilon: if sampler == Sampler::AverageStrategy {
                0.05
            } else {
                0.6
            },
            sampling: OsSampling::Epsilon,
            baseline: Baseline::None,
            baseline_averaging: BaselineAveraging::Simple,
            baseline_alpha: 0.5,
            tau: 1000.0,
            beta: 1e6,
            walks: 1,
            threads: 1,
        }
    }
}

/// Read-only data the walks need besides the trees.
struct Fixed {
    /// Static baseline: `static_values[c]` = value of child history `c` (player 0's utility)
    /// under the default policy; empty unless the baseline is `static`.
    static_values: Vec<f64>,
    /// Learned infoset baseline: per player, the first slot of history `h`'s (augmented
    /// infoset of that player, action) block; empty unless the baseline is `learned-infoset`.
    islot: [Vec<u32>; 2],
}

/// The mutable tables (everything a snapshot saves, plus the current policy).
#[derive(Clone, Debug, PartialEq)]
struct Tables {
    regrets: [Vec<f64>; 2],
    avg: [Vec<f64>; 2],
    /// Regret matching of `regrets`, kept in step.
    cur: [Vec<f64>; 2],
    /// Per child history `c = (h a)`: the history baseline (learned-history, predictive).
    base: Vec<f64>,
    /// Sample counts of `base` (learned-history).
    base_n: Vec<f64>,
    /// Per player: learned infoset baseline values and sample counts.
    ibase: [Vec<f64>; 2],
    ibase_n: [Vec<f64>; 2],
}

/// An MCCFR solver (any [`Sampler`]) on one compiled tree.
pub struct MccfrSolver {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    spec: MccfrSpec,
    seed: u64,
    iteration: u64,
    touched: u64,
    fixed: Fixed,
    tab: Tables,
    /// The walks' scratch stack, kept between iterations (no allocation per walk).
    scratch: Vec<f64>,
    /// With `walks > 1`: one update log per worker, kept between iterations (each worker
    /// writes its own during the walks, then reads all of them to apply its shard).
    /// Each on its own cache lines: a walk pushes onto its log's frame stack all the time, and
    /// logs sharing a line made two threads slower than one (false sharing).
    logs: Vec<CachePadded<RwLock<store::Log>>>,
    /// With `threads > 1` (and `walks > 1`): the workers.
    team: Option<Team>,
    /// Apply the parallel walks' logs on the calling thread, shard after shard, instead of
    /// on the workers (for the tests that compare the two).
    serial_apply: bool,
    /// Outcome sampling without a baseline takes the general walk, not its fast path (for the
    /// tests that compare the two).
    general_os: bool,
}

/// SplitMix64's finaliser: a bijective 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random stream of player `p`'s walk in iteration `t`.
fn stream(seed: u64, t: u64, p: usize) -> crate::util::SplitMix64 {
    walk_stream(seed, t, p, 0)
}

/// The random stream of player `p`'s walk `k` in iteration `t` (walk 0's is [`stream`]'s).
fn walk_stream(seed: u64, t: u64, p: usize, k: usize) -> crate::util::SplitMix64 {
    let s = mix(seed ^ mix(t.wrapping_mul(2).wrapping_add(p as u64)));
    crate::util::SplitMix64::new(if k == 0 {
        s
    } else {
        mix(s ^ mix((k as u64).wrapping_add(0x5851_F42D_4C95_7F2D)))
    })
}

impl MccfrSolver {
    /// A solver at iteration 0 (uniform current policy, zero tables). Builds the history tree
    /// of `game` (which must be the game `tree` was compiled from).
    pub fn new(
        spec: MccfrSpec,
        seed: u64,
        game: &dyn Game,
        tree: Arc<PublicTree>,
    ) -> Result<MccfrSolver, TreeError> {
        let ht = Arc::new(HistoryTree::build(game, &tree)?);
        Ok(MccfrSolver::with_history_tree(
            spec,
            seed,
            &game.load_string(),
            tree,
            ht,
        ))
    }

    /// As [`MccfrSolver::new`] with a prebuilt history tree; `game_name` picks the static
    /// baseline's default policy.
    pub fn with_history_tree(
        spec: MccfrSpec,
        seed: u64,
        game_name: &str,
        tree: Arc<PublicTree>,
        ht: Arc<HistoryTree>,
    ) -> MccfrSolver {
        let zeros = |p: usize| vec![0.0; tree.infosets[p].num_actions_total()];
        let n = ht.len();
        let history_base = matches!(
            spec.baseline,
            Baseline::LearnedHistory | Baseline::Predictive
        ) && spec.sampler == Sampler::Outcome;
        let mut fixed = Fixed {
            static_values: Vec::new(),
            islot: [Vec::new(), Vec::new()],
        };
        let mut ibase: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        if spec.sampler == Sampler::Outcome {
            match spec.baseline {
                Baseline::Static => {
                    let policy = baseline::default_policy(game_name, &ht, &tree);
                    fixed.static_values = baseline::history_values(&ht, &tree, &policy);
                }
                Baseline::LearnedInfoset => {
                    for (p, (slot, values)) in fixed.islot.iter_mut().zip(&mut ibase).enumerate() {
                        let (slots, len) = infoset_slots(&ht, p);
                        *slot = slots;
                        *values = vec![0.0; len];
                    }
                }
                _ => {}
            }
        }
        let ibase_n = ibase.clone();
        let tab = Tables {
            regrets: [zeros(0), zeros(1)],
            avg: [zeros(0), zeros(1)],
            cur: crate::tree::uniform_tree_policy(&tree),
            base: if history_base {
                vec![0.0; n]
            } else {
                Vec::new()
            },
            base_n: if history_base && spec.baseline == Baseline::LearnedHistory {
                vec![0.0; n]
            } else {
                Vec::new()
            },
            ibase,
            ibase_n,
        };
        MccfrSolver {
            tree,
            ht,
            spec,
            seed,
            iteration: 0,
            touched: 0,
            fixed,
            tab,
            scratch: Vec::with_capacity(256),
            logs: Vec::new(),
            team: (spec.threads.min(spec.walks) > 1)
                .then(|| Team::new(spec.threads.min(spec.walks))),
            serial_apply: false,
            general_os: false,
        }
    }

    /// The configuration.
    pub fn spec(&self) -> &MccfrSpec {
        &self.spec
    }

    /// The history tree the walks use.
    pub fn history_tree(&self) -> &Arc<HistoryTree> {
        &self.ht
    }

    /// Replaces player `p`'s cumulative regrets (the current policy follows by regret
    /// matching). For experiments and tests that need a chosen current strategy.
    pub fn set_regrets(&mut self, p: usize, regrets: Vec<f64>) {
        assert_eq!(
            regrets.len(),
            self.tab.regrets[p].len(),
            "regret vector size"
        );
        self.tab.regrets[p] = regrets;
        crate::cfr::regret_matching(&self.tree, p, &self.tab.regrets[p], &mut self.tab.cur[p]);
    }

    /// One outcome-sampling walk for player `p` that changes no regret or average (the
    /// baselines still learn as in training) and returns the baseline-corrected estimate of
    /// the root value (player 0's utility) under the current policy. If `probe` names one of
    /// `p`'s infosets, the walk's sampled regret increments there are added to `probe_out`
    /// (indexed by the infoset's actions). Draws from the stream `(seed, sample)`.
    pub fn os_estimate(
        &mut self,
        p: usize,
        sample: u64,
        probe: Option<usize>,
        probe_out: &mut [f64],
    ) -> f64 {
        let rng = stream(self.seed, sample, p);
        let mut w = walks::Walk::new(self, p, rng, false);
        w.probe = probe.map(|i| (i, probe_out.to_vec()));
        let (v, _) = w.os(0, 1.0, 1.0, 1.0);
        let touched = w.touched;
        if let Some((_, acc)) = w.probe.take() {
            probe_out.copy_from_slice(&acc);
        }
        self.touched += touched;
        v
    }

    /// The current baseline `b(h, a)` of child history `c = (h a)` as the walks of player `p`
    /// see it (player 0's utility).
    pub fn baseline_value(&self, p: usize, c: usize) -> f64 {
        let h = self.ht.parent[c] as usize;
        let k = c - self.ht.first_child[h] as usize;
        walks::baseline_of(&self.spec, &self.fixed, &self.tab, p, h, k, c)
    }

    /// Overwrites the history baseline (learned-history, predictive) with `values[c]` for every
    /// child history `c`. For tests of the zero-variance property.
    pub fn set_history_baseline(&mut self, values: &[f64]) {
        assert_eq!(values.len(), self.tab.base.len(), "history baseline size");
        self.tab.base.copy_from_slice(values);
    }
}

/// Slots of the learned infoset baseline of player `p`: histories with equal (public node,
/// `p`'s private state, number of children) share one block of `num_children` slots.
fn infoset_slots(ht: &HistoryTree, p: usize) -> (Vec<u32>, usize) {
    let mut index: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut slots = vec![crate::tree::NONE; ht.len()];
    let mut len = 0usize;
    for (h, out) in slots.iter_mut().enumerate() {
        let n = ht.num_children[h];
        if n == 0 {
            continue;
        }
        let key = (ht.node[h], ht.private[h][p], n);
        let slot = *index.entry(key).or_insert_with(|| {
            let s = len as u32;
            len += n as usize;
            s
        });
        *out = slot;
    }
    (slots, len)
}

impl MccfrSolver {
    /// The next iteration's schedule: MCCFR always alternates (MCCFR specs only hold uniform
    /// or linear averaging).
    fn schedule(&self) -> Iteration {
        Iteration::new(
            self.iteration + 1,
            Updates::Alternating,
            self.spec.averaging,
        )
    }

    /// One iteration of `walks > 1` walks per player: per player, the walks read the tables as
    /// they stand, run split into contiguous chunks over the workers (one dispatch of the
    /// team per player), and after a barrier each worker applies the logged updates of its
    /// shard of the tables, in walk order. `stop` is asked before each player's turn and every
    /// 64 walks of each worker; once it returns true the walks end early, their logged updates
    /// are dropped unapplied, no further turn starts and the iteration is abandoned (false).
    fn iterate_parallel(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        let stopped = std::sync::atomic::AtomicBool::new(false);
        let it = self.schedule();
        let (t, weight) = (it.t, it.weight);
        let walks = self.spec.walks;
        let chunks = self.team.as_ref().map_or(1, Team::size);
        self.logs.resize_with(chunks, Default::default);
        for p in it.turns.iter().flat_map(|&turn| Iteration::updating(turn)) {
            if stop() {
                return false;
            }
            let MccfrSolver {
                tree,
                ht,
                spec,
                fixed,
                tab,
                logs,
                team,
                seed,
                general_os,
                serial_apply,
                ..
            } = self;
            let general = *general_os;
            let parallel_apply = !*serial_apply;
            let predictive = spec.baseline == Baseline::Predictive;
            let spec: &MccfrSpec = spec;
            let walk_chunk = |c: usize, tab: &Tables, log: &mut store::Log| {
                let mut touched = 0;
                for k in c * walks / chunks..(c + 1) * walks / chunks {
                    if k % 64 == 0 && (stopped.load(Ordering::Relaxed) || stop()) {
                        stopped.store(true, Ordering::Relaxed);
                        break;
                    }
                    let (store, stack) = store::Deferred::new(tab, log, predictive);
                    let parts = walks::Parts {
                        tree,
                        ht,
                        spec,
                        fixed,
                    };
                    let rng = walk_stream(*seed, t, p, k);
                    let mut w = walks::Walk::with_store(parts, store, stack, p, rng, true);
                    w.weight = weight;
                    w.general = general;
                    w.run();
                    touched += w.touched;
                }
                log.touched = touched;
            };
            // Set by the walks only, so read after all of them have returned.
            let skip_apply = || stopped.load(Ordering::Relaxed);
            parallel_turn(
                team.as_ref(),
                parallel_apply,
                tab,
                logs,
                spec,
                &skip_apply,
                &walk_chunk,
            );
            for log in logs {
                self.touched += log.read().unwrap_or_else(|e| e.into_inner()).touched;
            }
            if stopped.load(Ordering::Relaxed) {
                return false;
            }
        }
        self.iteration = t;
        true
    }
}

impl TreeSolver for MccfrSolver {
    fn iterate_until(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        if stop() {
            return false;
        }
        if self.spec.walks > 1 {
            return self.iterate_parallel(stop);
        }
        self.iterate();
        true
    }

    fn iterate(&mut self) {
        if self.spec.walks > 1 {
            self.iterate_parallel(&|| false);
            return;
        }
        let it = self.schedule();
        let (t, weight) = (it.t, it.weight);
        for p in it.turns.iter().flat_map(|&turn| Iteration::updating(turn)) {
            let rng = stream(self.seed, t, p);
            let general = self.general_os;
            let mut w = walks::Walk::new(self, p, rng, true);
            w.weight = weight;
            w.general = general;
            w.run();
            let touched = w.touched;
            self.touched += touched;
        }
        self.iteration = t;
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn average_policy(&self) -> TreePolicy {
        crate::cfr::normalized_average(&self.tree, &self.tab.avg)
    }

    fn current_policy(&self) -> TreePolicy {
        self.tab.cur.clone()
    }

    fn nodes_touched(&self) -> u64 {
        self.touched
    }

    fn snapshot(&self) -> SolverSnapshot {
        let t = &self.tab;
        SolverSnapshot {
            iteration: self.iteration,
            counters: vec![self.touched],
            arrays: vec![
                t.regrets[0].clone(),
                t.regrets[1].clone(),
                t.avg[0].clone(),
                t.avg[1].clone(),
                t.base.clone(),
                t.base_n.clone(),
                t.ibase[0].clone(),
                t.ibase[1].clone(),
                t.ibase_n[0].clone(),
                t.ibase_n[1].clone(),
            ],
        }
    }

    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String> {
        let [r0, r1, a0, a1, b, bn, i0, i1, in0, in1]: [Vec<f64>; 10] =
            snapshot.arrays.try_into().map_err(|a: Vec<Vec<f64>>| {
                format!(
                    "expected 10 arrays in an MCCFR checkpoint, found {}",
                    a.len()
                )
            })?;
        let [touched]: [u64; 1] = snapshot.counters.try_into().map_err(|c: Vec<u64>| {
            format!(
                "expected 1 counter in an MCCFR checkpoint, found {}",
                c.len()
            )
        })?;
        let t = &self.tab;
        let sizes = [
            (r0.len(), t.regrets[0].len()),
            (r1.len(), t.regrets[1].len()),
            (a0.len(), t.avg[0].len()),
            (a1.len(), t.avg[1].len()),
            (b.len(), t.base.len()),
            (bn.len(), t.base_n.len()),
            (i0.len(), t.ibase[0].len()),
            (i1.len(), t.ibase[1].len()),
            (in0.len(), t.ibase_n[0].len()),
            (in1.len(), t.ibase_n[1].len()),
        ];
        if let Some(k) = sizes.iter().position(|(a, b)| a != b) {
            return Err(format!(
                "MCCFR checkpoint array {k} has {} entries, this solver needs {}",
                sizes[k].0, sizes[k].1
            ));
        }
        let mut cur = crate::tree::uniform_tree_policy(&self.tree);
        for (p, r) in [&r0, &r1].into_iter().enumerate() {
            crate::cfr::regret_matching(&self.tree, p, r, &mut cur[p]);
        }
        self.tab = Tables {
            regrets: [r0, r1],
            avg: [a0, a1],
            cur,
            base: b,
            base_n: bn,
            ibase: [i0, i1],
            ibase_n: [in0, in1],
        };
        self.iteration = snapshot.iteration;
        self.touched = touched;
        Ok(())
    }
}
