//! The solver: construction, iterations (one pass or parallel walks), accessors and snapshots.

use super::PathStep;
use super::PosSpec;
use super::pass::Pass;
use super::tables::Deferred;
use super::tables::Extras;
use super::tables::InPlace;
use super::tables::Log;
use super::tables::PassScratch;
use super::tables::Tables;
use super::values::stream;
use super::values::walk_stream;
use crate::cfr::Iteration;
use crate::cfr::SolverSnapshot;
use crate::cfr::TreeSolver;
use crate::cfr::deferred::parallel_turn;
use crate::cfr::team::Team;
use crate::game::Game;
use crate::tree::PublicTree;
use crate::tree::TreeError;
use crate::tree::TreePolicy;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;
use crossbeam::utils::CachePadded;
use std::sync::Arc;
use std::sync::RwLock;

/// Public Outcome Sampling MCCFR (see the module docs).
pub struct PosSolver {
    pub(super) tree: Arc<PublicTree>,
    pub(super) ht: Arc<HistoryTree>,
    pub(super) spec: PosSpec,
    pub(super) seed: u64,
    pub(super) iteration: u64,
    pub(super) touched: u64,
    pub(super) tab: Tables,
    /// The sequential pass's scratch.
    pub(super) sc: PassScratch,
    pub(super) extras: Extras,
    /// When set, passes follow the path to this terminal public node instead of sampling (the
    /// importance weights stay those of the sampling distribution): enumerates outcomes.
    pub(super) target: Option<u32>,
    /// Resolved `walks`.
    pub(super) walks: usize,
    /// With `walks > 1`: one scratch and update log per chunk of walks, kept between
    /// iterations (each worker writes its own during the walks, then reads every log to apply
    /// its shard).
    /// Each on its own cache lines (the passes write their scratch all the time; workers
    /// sharing a line slow each other down).
    pub(super) workers: Vec<CachePadded<RwLock<(PassScratch, Log)>>>,
    /// With `threads > 1` (and `walks > 1`): the workers.
    pub(super) team: Option<Team>,
    /// Apply the parallel walks' logs on the calling thread, shard after shard, instead of on
    /// the workers (for the tests that compare the two).
    pub(super) serial_apply: bool,
}

impl PosSolver {
    /// A solver at iteration 0 (uniform strategies, zero baselines); builds the history tree
    /// grouped by public node ([`HistoryTree::build_grouped`]).
    pub fn from_game(
        game: &dyn Game,
        tree: Arc<PublicTree>,
        spec: PosSpec,
        seed: u64,
    ) -> Result<PosSolver, TreeError> {
        let ht = Arc::new(HistoryTree::build_grouped(game, &tree)?);
        Ok(PosSolver::new(tree, ht, spec, seed))
    }

    /// A solver at iteration 0 on an existing history tree of `tree`'s game. `spec`'s
    /// `threads` and `walks` are resolved here (invalid values fall back to one sequential
    /// walk; `PosOptions::validate` reports them).
    pub fn new(tree: Arc<PublicTree>, ht: Arc<HistoryTree>, spec: PosSpec, seed: u64) -> Self {
        let zeros = |p: usize| vec![0.0; tree.infosets[p].num_actions_total()];
        let n = ht.len();
        let (threads, walks) = spec.options.parallel().unwrap_or((1, 1));
        PosSolver {
            tab: Tables {
                regrets: [zeros(0), zeros(1)],
                cumulative: [zeros(0), zeros(1)],
                current: crate::tree::uniform_tree_policy(&tree),
                base_sum: vec![0.0; n],
                base_w: vec![0.0; n],
                inf_sum: [zeros(0), zeros(1)],
                inf_w: [zeros(0), zeros(1)],
            },
            sc: PassScratch::new(n),
            extras: Extras {
                exact: if spec.options.measure_variance {
                    vec![0.0; n]
                } else {
                    Vec::new()
                },
                ..Extras::default()
            },
            target: None,
            walks,
            workers: Vec::new(),
            team: (walks > 1 && threads.min(walks) > 1).then(|| Team::new(threads.min(walks))),
            serial_apply: false,
            tree,
            ht,
            spec,
            seed,
            iteration: 0,
            touched: 0,
        }
    }

    /// The solver's description.
    pub fn spec(&self) -> &PosSpec {
        &self.spec
    }

    /// The history tree it walks.
    pub fn history_tree(&self) -> &Arc<HistoryTree> {
        &self.ht
    }

    /// Cumulative regrets of player `p` (per global action index).
    pub fn regrets(&self, p: usize) -> &[f64] {
        &self.tab.regrets[p]
    }

    /// The public path of the last sequential pass.
    pub fn last_path(&self) -> &[PathStep] {
        &self.sc.path
    }

    /// Mean squared counterfactual-value error of the last iteration (needs
    /// `measure_variance`; 0 otherwise).
    pub fn last_cfv_variance(&self) -> f64 {
        let v = &self.extras.var_stats;
        if v[1] > 0.0 { v[0] / v[1] } else { 0.0 }
    }

    /// One sampled estimate of player `p`'s counterfactual action values under the current
    /// strategy and baselines, without learning anything: `1/π_q(S) · Σ_{h∈I} π_{-p}(h)
    /// û(h,a)` at the infosets of the sampled path, 0 elsewhere (an unbiased estimate of
    /// `exact_cf_values` by Theorem 1). `draw` picks the random stream.
    pub fn sample_cf_values(&mut self, p: usize, draw: u64) -> Vec<f64> {
        let mut rng = stream(self.seed ^ 0x5EED_0FC0_FFEE, draw);
        self.extras.cf_sample = vec![0.0; self.tree.infosets[p].num_actions_total()];
        let players = [p == 0, p == 1];
        self.pass(players, &mut rng, 0.0, false);
        std::mem::take(&mut self.extras.cf_sample)
    }

    /// Runs one iteration: one pass per player (alternating) or one pass for both; with
    /// `walks > 1`, that many passes per turn (see the module docs).
    pub fn step(&mut self) {
        if self.walks > 1 {
            self.step_walks();
            return;
        }
        self.iteration += 1;
        let it = Iteration::new(self.iteration, self.spec.updates, self.spec.averaging);
        let mut rng = stream(self.seed, self.iteration);
        self.extras.var_stats[0] = 0.0;
        self.extras.var_stats[1] = 0.0;
        for &players in it.turns {
            self.pass(players, &mut rng, it.weight, true);
        }
        if self.spec.options.measure_variance {
            let v = self.last_cfv_variance();
            self.extras.var_stats[2] = if self.iteration == 1 {
                v
            } else {
                0.98 * self.extras.var_stats[2] + 0.02 * v
            };
        }
    }

    /// One sequential pass updating the tables in place.
    pub(super) fn pass(
        &mut self,
        players: [bool; 2],
        rng: &mut SplitMix64,
        weight: f64,
        learn: bool,
    ) {
        let mut pass = Pass {
            tree: &self.tree,
            ht: &self.ht,
            opts: self.spec.options,
            sink: InPlace { tab: &mut self.tab },
            sc: &mut self.sc,
            extras: &mut self.extras,
            target: self.target,
        };
        pass.run(players, rng, weight, learn);
        self.touched += std::mem::take(&mut self.sc.touched);
    }

    /// One iteration with `walks > 1`: per turn, the walks read the tables as they stand, run
    /// in contiguous chunks over the workers (one dispatch of the team per turn), and after a
    /// barrier each worker applies its shard of every log, in walk order.
    pub(super) fn step_walks(&mut self) {
        self.iteration += 1;
        let it = Iteration::new(self.iteration, self.spec.updates, self.spec.averaging);
        let (t, weight) = (it.t, it.weight);
        let walks = self.walks;
        let chunks = self.team.as_ref().map_or(1, Team::size);
        let n = self.ht.len();
        self.workers.resize_with(chunks, || {
            CachePadded::new(RwLock::new((PassScratch::new(n), Log::default())))
        });
        for (turn, &players) in it.turns.iter().enumerate() {
            let PosSolver {
                tree,
                ht,
                spec,
                tab,
                workers,
                team,
                seed,
                target,
                serial_apply,
                ..
            } = self;
            let parallel_apply = !*serial_apply;
            let walk_chunk = |c: usize, tab: &Tables, worker: &mut (PassScratch, Log)| {
                let (sc, log) = worker;
                log.next.clear();
                let mut extras = Extras::default();
                for k in c * walks / chunks..(c + 1) * walks / chunks {
                    let mut rng = walk_stream(*seed, t, turn, k);
                    let mut pass = Pass {
                        tree,
                        ht,
                        opts: spec.options,
                        sink: Deferred { tab, log },
                        sc,
                        extras: &mut extras,
                        target: *target,
                    };
                    pass.run(players, &mut rng, weight, true);
                }
            };
            parallel_turn(
                team.as_ref(),
                parallel_apply,
                tab,
                workers,
                &spec.options,
                &|| false,
                &walk_chunk,
            );
            for w in workers {
                let mut guard = w.write().unwrap_or_else(|e| e.into_inner());
                self.touched += std::mem::take(&mut guard.0.touched);
            }
        }
    }

    /// Runs one iteration whose passes all follow the path to the terminal public node
    /// `target` (with the importance weights of the configured sampling): forces outcomes,
    /// e.g. to cover every terminal public state (Theorem 3) or to enumerate them.
    pub fn step_towards(&mut self, target: u32) {
        self.target = Some(target);
        self.step();
        self.target = None;
    }

    /// [`PosSolver::sample_cf_values`] along the path to terminal public node `target`; the
    /// returned probability is that of sampling this path (`π_q` of the terminal node).
    pub fn cf_values_towards(&mut self, p: usize, target: u32) -> (Vec<f64>, f64) {
        self.target = Some(target);
        let v = self.sample_cf_values(p, 0);
        self.target = None;
        (v, self.sc.path.last().map_or(0.0, |s| s.reach_q))
    }

    pub(super) fn average(&self) -> TreePolicy {
        crate::cfr::normalized_average(&self.tree, &self.tab.cumulative)
    }
}

impl TreeSolver for PosSolver {
    fn iterate(&mut self) {
        self.step();
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn average_policy(&self) -> TreePolicy {
        self.average()
    }

    fn current_policy(&self) -> TreePolicy {
        self.tab.current.clone()
    }

    /// Histories evaluated: every history of every public node on the sampled paths.
    fn nodes_touched(&self) -> u64 {
        self.touched
    }

    fn scalars(&self) -> Vec<(String, f64)> {
        if !self.spec.options.measure_variance {
            return Vec::new();
        }
        vec![
            ("cfv_variance".into(), self.last_cfv_variance()),
            ("cfv_variance_ema".into(), self.extras.var_stats[2]),
        ]
    }

    fn snapshot(&self) -> SolverSnapshot {
        let mut arrays: Vec<Vec<f64>> = Vec::new();
        let tab = &self.tab;
        for a in [
            &tab.regrets,
            &tab.cumulative,
            &tab.current,
            &tab.inf_sum,
            &tab.inf_w,
        ] {
            arrays.extend(a.iter().cloned());
        }
        arrays.push(tab.base_sum.clone());
        arrays.push(tab.base_w.clone());
        arrays.push(self.extras.var_stats.to_vec());
        SolverSnapshot {
            iteration: self.iteration,
            // The per-history baselines are indexed by history id: record the numbering.
            counters: vec![self.touched, u64::from(self.ht.grouped)],
            arrays,
        }
    }

    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String> {
        let arrays: [Vec<f64>; 13] = snapshot.arrays.try_into().map_err(|a: Vec<Vec<f64>>| {
            format!(
                "expected 13 arrays in a pos-mccfr checkpoint, found {}",
                a.len()
            )
        })?;
        let n = [
            self.tree.infosets[0].num_actions_total(),
            self.tree.infosets[1].num_actions_total(),
        ];
        let want = [
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            self.ht.len(),
            self.ht.len(),
            3,
        ];
        for (k, (a, w)) in arrays.iter().zip(want).enumerate() {
            if a.len() != w {
                return Err(format!(
                    "pos-mccfr checkpoint array {k} has {} entries; this game needs {w}",
                    a.len()
                ));
            }
        }
        // Checkpoints before the grouped numbering carry one counter (breadth-first ids).
        let (touched, grouped) = match snapshot.counters[..] {
            [touched] => (touched, false),
            [touched, g] => (touched, g == 1),
            _ => return Err("pos-mccfr checkpoint needs one or two counters".into()),
        };
        if grouped != self.ht.grouped {
            return Err(format!(
                "pos-mccfr checkpoint indexes its baselines by the {} history numbering; this \
                 solver uses the {} one (resume with the armac version that wrote it)",
                if grouped { "grouped" } else { "breadth-first" },
                if self.ht.grouped {
                    "grouped"
                } else {
                    "breadth-first"
                },
            ));
        }
        let [r0, r1, c0, c1, p0, p1, s0, s1, w0, w1, bs, bw, vs] = arrays;
        self.tab = Tables {
            regrets: [r0, r1],
            cumulative: [c0, c1],
            current: [p0, p1],
            base_sum: bs,
            base_w: bw,
            inf_sum: [s0, s1],
            inf_w: [w0, w1],
        };
        self.extras.var_stats = [vs[0], vs[1], vs[2]];
        self.iteration = snapshot.iteration;
        self.touched = touched;
        Ok(())
    }
}
