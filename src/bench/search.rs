//! Student of Games throughput (the workloads behind `armac-bench search`;
//! `scripts/bench_search.sh` wraps it): GT-CFR searches per second one at a time (B = 1) and
//! `B` in lock-step ([`crate::search::run_lockstep`], one CVPN forward per single update for
//! all of them), interleaved repetitions with medians and their ratio; query re-solves per
//! second ([`crate::search::solve_pbs`] with the CVPN at the frontier); CVPN learner steps
//! per second.
//!
//! Only the scalar `f64` regret engine exists ([`crate::search::ScalarEngine`]); there is no
//! tensor engine to compare yet, so the lines say `"engine": "scalar"`.

use super::poker::{load_average, process_cpu_seconds};
use super::{Result, median};
use crate::nn::cvpn::{Cvpn, CvpnConfig, CvpnLeaves};
use crate::search::{GtCfr, GtCfrConfig, Pbs, PbsEncoder, run_lockstep, solve_pbs};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// `armac-bench search`.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    #[arg(long, default_value = "leduc_poker")]
    pub game: String,
    /// Searches in lock-step (B); the B = 1 side runs the same searches one by one.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Expansion simulations per search (`s`).
    #[arg(long, default_value_t = 20)]
    pub simulations: usize,
    /// Interleaved repetitions of each side (medians reported).
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Queries re-solved per timed block of the solver measurement.
    #[arg(long, default_value_t = 64)]
    pub solves: usize,
    /// Learner steps per timed block and the learner's batch.
    #[arg(long, default_value_t = 50)]
    pub steps: usize,
    #[arg(long, default_value_t = 128)]
    pub learner_batch: usize,
    /// CVPN width and depth (the SoG configs' defaults).
    #[arg(long, default_value_t = 128)]
    pub hidden: usize,
    #[arg(long, default_value_t = 2)]
    pub layers: usize,
}

/// Runs `armac-bench search` (see [`SearchArgs`]): one JSON line per repetition and a summary.
pub fn search(args: &SearchArgs) -> Result<Vec<Value>> {
    let game = crate::games::load_game(&args.game)?;
    let tree = Arc::new(PublicTree::build_with_limit(game.as_ref(), 1_000_000)?);
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree)?);
    let mut enc = PbsEncoder::new(game.clone(), tree.clone(), ht.clone())?;
    let device = crate::nn::select_device("flex")?;
    let cfg = CvpnConfig {
        game: game.load_string(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: game.num_distinct_actions(),
        hidden: args.hidden,
        layers: args.layers,
    };
    let mut net = Cvpn::new(cfg, &device, 1e-3, 7)?;
    let b = args.batch.max(1);
    // The root PBS of the game with every private state possible (a chain's first search).
    let layout = crate::tree::tensor::TensorTree::build(&tree, &ht, 0, Some(0))?;
    let root = Pbs {
        node: 0,
        ranges: std::array::from_fn(|i| {
            (0..layout.p)
                .map(|x| f64::from(u8::from(layout.valid[i][x])))
                .collect()
        }),
    };
    let search_cfg = |k: usize| GtCfrConfig {
        simulations: args.simulations,
        seed: 1000 + k as u64,
        ..GtCfrConfig::default()
    };
    let make = |k: usize| GtCfr::new(&tree, &ht, &root, search_cfg(k));
    let mut lines = Vec::new();
    let (mut one, mut many) = (Vec::new(), Vec::new());
    let (mut one_cpu, mut many_cpu) = (Vec::new(), Vec::new());
    let (mut fwd_one, mut fwd_many) = (0, 0);
    for rep in 0..args.repeats.max(1) {
        // B = 1: the B searches one after the other, one forward per update each.
        let (t, c) = (Instant::now(), process_cpu_seconds());
        let mut leaves = CvpnLeaves::new(&net, &mut enc);
        let mut check = Vec::with_capacity(b);
        for k in 0..b {
            let mut s = make(k)?;
            s.run(&mut leaves)?;
            check.push(s.policy_blocks());
        }
        let (w1, c1) = (t.elapsed().as_secs_f64(), cpu_since(c));
        fwd_one = leaves.forwards;
        // B in lock-step: the same searches, one forward per update for all.
        let (t, c) = (Instant::now(), process_cpu_seconds());
        let mut leaves = CvpnLeaves::new(&net, &mut enc);
        let mut batch: Vec<_> = (0..b).map(make).collect::<std::result::Result<_, _>>()?;
        run_lockstep(&mut batch, &mut leaves)?;
        let (wb, cb) = (t.elapsed().as_secs_f64(), cpu_since(c));
        fwd_many = leaves.forwards;
        let same = batch.iter().zip(&check).all(|(s, p)| {
            let q = s.policy_blocks();
            q.iter()
                .zip(p)
                .all(|(x, y)| x.iter().zip(y).all(|(u, v)| (u - v).abs() < 1e-5))
        });
        one.push(b as f64 / w1);
        many.push(b as f64 / wb);
        one_cpu.extend(c1.map(|c| b as f64 / c));
        many_cpu.extend(cb.map(|c| b as f64 / c));
        lines.push(json!({"bench": "search", "rep": rep, "engine": "scalar",
            "b1_searches_per_second": b as f64 / w1,
            "lockstep_searches_per_second": b as f64 / wb,
            "same_policies_1e-5": same}));
    }
    // Query re-solves with the CVPN at the frontier (random PBSs at random public nodes).
    let mut rng = SplitMix64::new(3);
    let (mut solve_rates, mut solve_cpu) = (Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        let qs = enc.random_queries(&mut rng, args.solves.max(1));
        let (t, c) = (Instant::now(), process_cpu_seconds());
        let mut leaves = CvpnLeaves::new(&net, &mut enc);
        for q in &qs {
            solve_pbs(&tree, &ht, q, &search_cfg(0), &mut leaves)?;
        }
        solve_rates.push(qs.len() as f64 / t.elapsed().as_secs_f64());
        solve_cpu.extend(cpu_since(c).map(|c| qs.len() as f64 / c));
    }
    // Learner steps on value examples of random queries (targets: the untrained net's own
    // answers; the step's cost does not depend on them).
    let qs = enc.random_queries(&mut rng, args.learner_batch.max(1));
    let mut batch = crate::nn::cvpn::CvpnBatch::default();
    let p2 = 2 * enc.private_states();
    for q in &qs {
        let e = enc.encode(q)?;
        batch.input.extend_from_slice(&e.input);
        batch
            .values
            .extend((0..p2).map(|_| rng.next_f64() as f32 - 0.5));
        batch.value_mask.extend(std::iter::repeat_n(1.0, p2));
    }
    let (mut step_rates, mut step_cpu) = (Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        let (t, c) = (Instant::now(), process_cpu_seconds());
        for _ in 0..args.steps.max(1) {
            net.train_step(&batch)?;
        }
        step_rates.push(args.steps.max(1) as f64 / t.elapsed().as_secs_f64());
        step_cpu.extend(cpu_since(c).map(|c| args.steps.max(1) as f64 / c));
    }
    let (m1, mb) = (median(one), median(many));
    let (c1, cb) = (median(one_cpu), median(many_cpu));
    lines.push(
        json!({"bench": "search", "summary": true, "game": game.load_string(),
        "engine": "scalar", "tensor_engine": "none (only the scalar f64 engine exists)",
        "simulations": args.simulations, "batch": b, "repeats": args.repeats,
        "b1_searches_per_second": m1, "lockstep_searches_per_second": mb,
        "lockstep_over_b1": mb / m1,
        "b1_searches_per_cpu_second": c1, "lockstep_searches_per_cpu_second": cb,
        "lockstep_over_b1_cpu": cb / c1,
        "forwards_per_search_b1": fwd_one as f64 / b as f64,
        "forwards_per_search_lockstep": fwd_many as f64 / b as f64,
        "queries_solved_per_second": median(solve_rates),
        "queries_solved_per_cpu_second": median(solve_cpu),
        "learner_steps_per_second": median(step_rates),
        "learner_steps_per_cpu_second": median(step_cpu),
        "learner_batch": args.learner_batch,
        "load_average": load_average()}),
    );
    Ok(lines)
}

fn cpu_since(start: Option<f64>) -> Option<f64> {
    Some(process_cpu_seconds()? - start?).filter(|&c| c > 0.0)
}
