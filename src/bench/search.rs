//! Student of Games throughput (the workloads behind `armac-bench search`;
//! `scripts/bench_search.sh` wraps it): GT-CFR searches per second one at a time (B = 1) and
//! `B` in lock-step ([`crate::search::run_lockstep`], one CVPN forward per single update for
//! all of them), interleaved repetitions with medians and their ratio, and where each side's
//! time went (`search_profile` lines: layout, CFR updates, query gathering, feature encoding,
//! CVPN forward, decoding, simulations); self-play games one by one against groups of `B`
//! ([`crate::rl::sog::play_games`]); query re-solves per second
//! ([`crate::search::solve_pbs`] with the CVPN at the frontier); CVPN learner steps per
//! second.
//!
//! The lines above are the scalar `f64` regret engine's ([`crate::search::ScalarEngine`]). The
//! `search_engines` lines compare it with the tensor engine
//! ([`crate::nn::public::engine::TensorEngine`], on `--engine-device`: flex `f64` by default,
//! `f32` on a GPU backend): the same searches at
//! B = 1 and in lock-step on each engine, interleaved repetitions, medians and the
//! tensor/scalar ratio of searches per second. The `grown_update` lines time one iteration of
//! each engine on a grown tree (the game's whole tree, every node expanded, so no frontier)
//! against one [`crate::nn::public::cfr::BatchedCfr`] iteration (B = 1, the same layout and
//! rule, on the tensor engine's device), the ratio a grown-tree update is meant to keep
//! under 2. `--device` puts the CVPN on a backend of its own (flex by default).

use super::poker::{load_average, process_cpu_seconds};
use super::{Result, median};
use crate::nn::cvpn::{Cvpn, CvpnConfig, CvpnLeaves, CvpnSnapshot};
use crate::nn::public::cfr::BatchedCfr;
use crate::nn::public::engine::{TensorEngine, TensorEngineBuilder};
use crate::nn::public::{Ctx, Precision};
use crate::rl::sog::{SelfPlayConfig, play_games};
use crate::search::{
    EngineBuilder, GtCfr, GtCfrConfig, LayoutCache, NoLeaves, Pbs, PbsEncoder, PhaseTimes,
    RegretEngine, ResolverConfig, ScalarEngine, gtcfr::layout_for, run_lockstep, solve_pbs,
};
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
    /// Self-play games per timed block: one by one against groups of `batch` (their searches
    /// in lock-step, `[sog.search] batch`); 0 skips this part.
    #[arg(long, default_value_t = 32)]
    pub games: usize,
    /// Searches per timed block of the engine comparison (scalar against tensor, B = 1 and
    /// in lock-step); 0 skips it.
    #[arg(long, default_value_t = 64)]
    pub engine_batch: usize,
    /// Iterations per timed block of the grown-tree update against `BatchedCfr` (both on the
    /// game's whole tree, every node expanded); 0 skips it.
    #[arg(long, default_value_t = 50)]
    pub update_iterations: usize,
    /// Burn device of the CVPN (`flex`, `wgpu`, `cuda`): on a GPU a forward's cost barely
    /// grows with its batch, which is where lock-step pays.
    #[arg(long, default_value = "flex")]
    pub device: String,
    /// Burn device of the tensor engine in the engine comparison and the grown-tree update
    /// (`f64` on `flex`, `f32` on a GPU backend, whose shaders have no `f64`).
    #[arg(long, default_value = "flex")]
    pub engine_device: String,
}

/// What every part of `armac-bench search` shares: the game, the root PBS of a chain's first
/// search, the layout cache and the network's inference snapshot.
struct Bench<'a> {
    args: &'a SearchArgs,
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    /// The root PBS of the game with every private state possible (a chain's first search).
    root: Pbs,
    /// Both sides share one layout per root node, as self-play chains do.
    layouts: LayoutCache,
    /// Searches see the network as self-play actors do: an inference snapshot.
    snap: CvpnSnapshot,
    /// Searches in lock-step (B).
    b: usize,
}

impl Bench<'_> {
    /// The search settings of the `k`-th search.
    fn search_cfg(&self, k: usize) -> GtCfrConfig {
        GtCfrConfig {
            simulations: self.args.simulations,
            seed: 1000 + k as u64,
            ..GtCfrConfig::default()
        }
    }
}

/// Searches per second (wall and CPU) one by one and in lock-step, and what each side did.
#[derive(Default)]
struct Lockstep {
    one: Vec<f64>,
    many: Vec<f64>,
    one_cpu: Vec<f64>,
    many_cpu: Vec<f64>,
    fwd_one: u64,
    fwd_many: u64,
}

/// Runs `armac-bench search` (see [`SearchArgs`]): one JSON line per repetition and a summary.
pub fn search(args: &SearchArgs) -> Result<Vec<Value>> {
    let game = crate::games::load_game(&args.game)?;
    let tree = Arc::new(PublicTree::build_with_limit(game.as_ref(), 1_000_000)?);
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree)?);
    let mut enc = PbsEncoder::new(game.clone(), tree.clone(), ht.clone())?;
    let device = crate::nn::select_device(&args.device)?;
    let engine_device = crate::nn::select_device(&args.engine_device)?;
    // GPU shaders have no f64; policies then agree with the scalar f64 engine to f32 rounding.
    let (precision, engine_tol) = if args.engine_device == "flex" {
        (Precision::F64, 1e-6)
    } else {
        (Precision::F32, 1e-3)
    };
    let cfg = CvpnConfig {
        game: game.load_string(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: game.num_distinct_actions(),
        hidden: args.hidden,
        layers: args.layers,
    };
    let mut net = Cvpn::new(cfg, &device, 1e-3, 7)?;
    let layout = crate::tree::tensor::TensorTree::build(&tree, &ht, 0, Some(0))?;
    let root = Pbs {
        node: 0,
        ranges: std::array::from_fn(|i| {
            (0..layout.p)
                .map(|x| f64::from(u8::from(layout.valid[i][x])))
                .collect()
        }),
    };
    let bench = Bench {
        args,
        tree,
        ht,
        root,
        layouts: LayoutCache::new(16),
        snap: net.snapshot(),
        b: args.batch.max(1),
    };
    let mut lines = Vec::new();
    let ls = bench_lockstep(&bench, &mut enc, &mut lines)?;
    let ctx = Ctx::new(&engine_device, precision);
    let (eng, engines_agree) = bench_engines(&bench, &mut enc, &ctx, engine_tol, &mut lines)?;
    bench_grown_update(&bench, &ctx, &mut lines)?;
    let med = |v: &Vec<f64>| median(v.clone());
    // Query re-solves with the CVPN at the frontier (random PBSs at random public nodes).
    let mut rng = SplitMix64::new(3);
    let (mut solve_rates, mut solve_cpu) = (Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        let qs = enc.random_queries(&mut rng, args.solves.max(1));
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut leaves = CvpnLeaves::new(&bench.snap, &mut enc);
        for q in &qs {
            solve_pbs(&bench.tree, &bench.ht, q, &bench.search_cfg(0), &mut leaves)?;
        }
        solve_rates.push(qs.len() as f64 / t.elapsed().as_secs_f64());
        solve_cpu.extend(cpu_since(c).map(|c| qs.len() as f64 / c));
    }
    let sp = bench_selfplay(&bench, &mut enc, &mut lines)?;
    let (step_rates, step_cpu) = bench_learner(args, &mut net, &mut enc, &mut rng)?;
    let b = bench.b;
    let eb = args.engine_batch;
    let (m1, mb) = (median(ls.one), median(ls.many));
    let (c1, cb) = (median(ls.one_cpu), median(ls.many_cpu));
    let mut summary = json!({"bench": "search", "summary": true, "game": game.load_string(),
        "engine": "scalar", "engine_searches": eb,
        "scalar_b1_searches_per_second": med(&eng[0][0]),
        "tensor_b1_searches_per_second": med(&eng[1][0]),
        "scalar_lockstep_searches_per_second": med(&eng[0][1]),
        "tensor_lockstep_searches_per_second": med(&eng[1][1]),
        "tensor_over_scalar_b1": med(&eng[1][0]) / med(&eng[0][0]),
        "tensor_over_scalar_lockstep": med(&eng[1][1]) / med(&eng[0][1]),
        "engines_same_policies": engines_agree,
        "simulations": args.simulations, "batch": b, "repeats": args.repeats,
        "cvpn_input_size": enc.input_size(), "cvpn_hidden": args.hidden,
        "cvpn_layers": args.layers, "cvpn_value_outputs": 2 * enc.private_states(),
        "b1_searches_per_second": m1, "lockstep_searches_per_second": mb,
        "lockstep_over_b1": mb / m1,
        "b1_searches_per_cpu_second": c1, "lockstep_searches_per_cpu_second": cb,
        "lockstep_over_b1_cpu": cb / c1,
        "forwards_per_search_b1": ls.fwd_one as f64 / b as f64,
        "forwards_per_search_lockstep": ls.fwd_many as f64 / b as f64,
        "queries_solved_per_second": median(solve_rates),
        "queries_solved_per_cpu_second": median(solve_cpu),
        "learner_steps_per_second": median(step_rates),
        "learner_steps_per_cpu_second": median(step_cpu),
        "learner_batch": args.learner_batch,
        "selfplay_games": args.games, "selfplay_searches_per_game": sp.searches_per_game,
        "selfplay_b1_games_per_second": median(sp.one.clone()),
        "selfplay_group_games_per_second": median(sp.many.clone()),
        "selfplay_group_over_b1": median(sp.many) / median(sp.one),
        "selfplay_group_over_b1_cpu": median(sp.many_cpu) / median(sp.one_cpu),
        "load_average": load_average()});
    let bits = if precision == Precision::F64 {
        "f64"
    } else {
        "f32"
    };
    summary["tensor_engine"] = json!(format!(
        "{} {bits} (search_engines lines)",
        args.engine_device
    ));
    summary["cvpn_device"] = json!(args.device);
    summary["engine_policy_tolerance"] = json!(engine_tol);
    lines.push(summary);
    Ok(lines)
}

/// The `search` lines: B searches one by one (one forward per update each) against the same
/// searches in lock-step (one forward per update for all), interleaved repetitions, then the
/// `search_profile` line of each side.
fn bench_lockstep(bench: &Bench, enc: &mut PbsEncoder, lines: &mut Vec<Value>) -> Result<Lockstep> {
    let b = bench.b;
    let make = |k: usize| {
        GtCfr::new_cached(
            &bench.tree,
            &bench.ht,
            &bench.root,
            bench.search_cfg(k),
            Some(&bench.layouts),
        )
    };
    let mut out = Lockstep::default();
    let (mut prof_one, mut prof_many) = (Profile::default(), Profile::default());
    for rep in 0..bench.args.repeats.max(1) {
        // B = 1: the B searches one after the other, one forward per update each.
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut leaves = CvpnLeaves::new(&bench.snap, enc);
        let mut check = Vec::with_capacity(b);
        let mut times = PhaseTimes::default();
        let mut layout_s = 0.0;
        for k in 0..b {
            let tl = Instant::now();
            let mut s = make(k)?;
            layout_s += tl.elapsed().as_secs_f64();
            s.run(&mut leaves)?;
            times.add(&s.times());
            check.push(s.policy_blocks());
        }
        let (w1, c1) = (t.elapsed().as_secs_f64(), cpu_since(c));
        out.fwd_one = leaves.forwards;
        prof_one.add(w1, layout_s, &times, &leaves, b);
        // B in lock-step: the same searches, one forward per update for all.
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut leaves = CvpnLeaves::new(&bench.snap, enc);
        let mut batch: Vec<_> = (0..b).map(make).collect::<std::result::Result<_, _>>()?;
        let layout_s = t.elapsed().as_secs_f64();
        let stats = run_lockstep(&mut batch, &mut leaves)?;
        let (wb, cb) = (t.elapsed().as_secs_f64(), cpu_since(c));
        out.fwd_many = leaves.forwards;
        prof_many.add(wb, layout_s, &stats.times, &leaves, b);
        let same = batch.iter().zip(&check).all(|(s, p)| {
            let q = s.policy_blocks();
            q.iter()
                .zip(p)
                .all(|(x, y)| x.iter().zip(y).all(|(u, v)| (u - v).abs() < 1e-5))
        });
        out.one.push(b as f64 / w1);
        out.many.push(b as f64 / wb);
        out.one_cpu.extend(c1.map(|c| b as f64 / c));
        out.many_cpu.extend(cb.map(|c| b as f64 / c));
        lines.push(json!({"bench": "search", "rep": rep, "engine": "scalar",
            "b1_searches_per_second": b as f64 / w1,
            "lockstep_searches_per_second": b as f64 / wb,
            "same_policies_1e-5": same}));
    }
    for (side, p) in [("b1", &prof_one), ("lockstep", &prof_many)] {
        lines.push(p.line(side, b));
    }
    Ok(out)
}

/// The `search_engines` lines: the scalar f64 engine against the tensor one (on `ctx`) on the
/// same searches, B = 1 and in lock-step, interleaved (scalar then tensor in every
/// repetition). Returns searches per second by [engine][B = 1, lock-step] and whether the
/// engines' policies agreed within `engine_tol`.
fn bench_engines(
    bench: &Bench,
    enc: &mut PbsEncoder,
    ctx: &Ctx,
    engine_tol: f64,
    lines: &mut Vec<Value>,
) -> Result<([[Vec<f64>; 2]; 2], bool)> {
    let tensor: Arc<dyn EngineBuilder> = Arc::new(TensorEngineBuilder::new(ctx.clone()));
    let eb = bench.args.engine_batch;
    let mk = |k: usize, t: bool| {
        let cfg = GtCfrConfig {
            engine: t.then(|| tensor.clone()),
            ..bench.search_cfg(k)
        };
        GtCfr::new_any(
            &bench.tree,
            &bench.ht,
            &bench.root,
            cfg,
            Some(&bench.layouts),
        )
    };
    let mut eng: [[Vec<f64>; 2]; 2] = Default::default();
    let mut engines_agree = true;
    for rep in 0..if eb > 0 { bench.args.repeats.max(1) } else { 0 } {
        let mut pols = Vec::new();
        let mut rates = [[0.0; 2]; 2];
        for (e, t) in [false, true].into_iter().enumerate() {
            let start = Instant::now();
            let mut leaves = CvpnLeaves::new(&bench.snap, enc);
            let mut pol = Vec::with_capacity(eb);
            for k in 0..eb {
                let mut s = mk(k, t)?;
                s.run(&mut leaves)?;
                pol.push(s.policy_blocks());
            }
            rates[e][0] = eb as f64 / start.elapsed().as_secs_f64();
            let start = Instant::now();
            let mut leaves = CvpnLeaves::new(&bench.snap, enc);
            let mut batch: Vec<_> = (0..eb)
                .map(|k| mk(k, t))
                .collect::<std::result::Result<_, _>>()?;
            run_lockstep(&mut batch, &mut leaves)?;
            rates[e][1] = eb as f64 / start.elapsed().as_secs_f64();
            pols.push(pol);
        }
        let same = pols[0].iter().zip(&pols[1]).all(|(x, y)| {
            x.iter()
                .zip(y)
                .all(|(u, v)| u.iter().zip(v).all(|(a, b)| (a - b).abs() < engine_tol))
        });
        engines_agree &= same;
        for e in 0..2 {
            for side in 0..2 {
                eng[e][side].push(rates[e][side]);
            }
        }
        lines.push(
            json!({"bench": "search_engines", "rep": rep, "searches": eb,
            "scalar_b1_searches_per_second": rates[0][0],
            "tensor_b1_searches_per_second": rates[1][0],
            "scalar_lockstep_searches_per_second": rates[0][1],
            "tensor_lockstep_searches_per_second": rates[1][1],
            "same_policies": same, "policy_tolerance": engine_tol}),
        );
    }
    Ok((eng, engines_agree))
}

/// The `grown_update` line: a grown-tree update (every node expanded) against a BatchedCfr
/// iteration on the same layout: scalar engine, tensor engine, BatchedCfr, interleaved,
/// seconds per iteration.
fn bench_grown_update(bench: &Bench, ctx: &Ctx, lines: &mut Vec<Value>) -> Result<()> {
    let mut upd: [Vec<f64>; 3] = Default::default();
    let ui = bench.args.update_iterations;
    if ui == 0 {
        return Ok(());
    }
    let (grown, ranges) = layout_for(&bench.tree, &bench.ht, &bench.root)?;
    let spec = bench.search_cfg(0).spec;
    for _ in 0..bench.args.repeats.max(1) {
        let mut s = ScalarEngine::new(grown.clone(), spec, ranges.clone())?;
        s.expand_all();
        let t = Instant::now();
        for _ in 0..ui {
            s.iterate(&mut NoLeaves)?;
        }
        upd[0].push(t.elapsed().as_secs_f64() / ui as f64);
        let mut e = TensorEngine::new(grown.clone(), spec, ranges.clone(), ctx)?;
        RegretEngine::expand_all(&mut e);
        let t = Instant::now();
        for _ in 0..ui {
            e.iterate(&mut NoLeaves)?;
        }
        // Reading a row forces the device work (and the host mirror) to finish.
        let _ = e.root_cfvs(0).first().copied();
        upd[1].push(t.elapsed().as_secs_f64() / ui as f64);
        let mut bc = BatchedCfr::new(bench.tree.clone(), grown.clone(), spec, 1, None, None, ctx)?;
        let t = Instant::now();
        for _ in 0..ui {
            bc.iterate();
        }
        upd[2].push(t.elapsed().as_secs_f64() / ui as f64);
    }
    lines.push(
        json!({"bench": "grown_update", "iterations": ui, "nodes": grown.len(),
        "scalar_seconds_per_iteration": median(upd[0].clone()),
        "tensor_seconds_per_iteration": median(upd[1].clone()),
        "batched_cfr_seconds_per_iteration": median(upd[2].clone()),
        "tensor_over_batched_cfr": median(upd[1].clone()) / median(upd[2].clone()),
        "scalar_over_batched_cfr": median(upd[0].clone()) / median(upd[2].clone())}),
    );
    Ok(())
}

/// Self-play games per second (wall and CPU), one by one and in groups of B.
#[derive(Default)]
struct SelfPlayRates {
    one: Vec<f64>,
    many: Vec<f64>,
    one_cpu: Vec<f64>,
    many_cpu: Vec<f64>,
    searches_per_game: f64,
}

/// The `search_selfplay` lines: self-play games (ε = 0.1, both chains searching with the
/// CVPN) one by one against groups of B, interleaved; the records must agree.
fn bench_selfplay(
    bench: &Bench,
    enc: &mut PbsEncoder,
    lines: &mut Vec<Value>,
) -> Result<SelfPlayRates> {
    let mut out = SelfPlayRates::default();
    let args = bench.args;
    if args.games == 0 {
        return Ok(out);
    }
    let (tree, ht) = (&bench.tree, &bench.ht);
    let sp_cfg = SelfPlayConfig {
        resolver: ResolverConfig {
            search: bench.search_cfg(0),
            ..ResolverConfig::default()
        },
        epsilon: 0.1,
        queries_per_search: 10,
    };
    let game_layouts = Arc::new(LayoutCache::new(4096));
    for rep in 0..args.repeats.max(1) {
        let seeds: Vec<u64> = (0..args.games as u64)
            .map(|g| g + 7919 * rep as u64)
            .collect();
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut leaves = CvpnLeaves::new(&bench.snap, enc);
        let mut alone = Vec::new();
        for &seed in &seeds {
            alone.extend(play_games(
                tree,
                ht,
                &sp_cfg,
                &[seed],
                &game_layouts,
                &mut leaves,
            )?);
        }
        let (w1, c1) = (t.elapsed().as_secs_f64(), cpu_since(c));
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut leaves = CvpnLeaves::new(&bench.snap, enc);
        let mut grouped = Vec::new();
        for group in seeds.chunks(bench.b) {
            grouped.extend(play_games(
                tree,
                ht,
                &sp_cfg,
                group,
                &game_layouts,
                &mut leaves,
            )?);
        }
        let (wb, cb) = (t.elapsed().as_secs_f64(), cpu_since(c));
        let n = seeds.len() as f64;
        out.searches_per_game = alone.iter().map(|g| g.searches).sum::<usize>() as f64 / n;
        let same = alone.len() == grouped.len()
            && alone
                .iter()
                .zip(&grouped)
                .all(|(a, g)| a.decisions == g.decisions);
        out.one.push(n / w1);
        out.many.push(n / wb);
        out.one_cpu.extend(c1.map(|c| n / c));
        out.many_cpu.extend(cb.map(|c| n / c));
        lines.push(
            json!({"bench": "search_selfplay", "rep": rep, "games": seeds.len(),
            "group": bench.b, "b1_games_per_second": n / w1, "group_games_per_second": n / wb,
            "same_game_lengths": same}),
        );
    }
    Ok(out)
}

/// Learner steps per second (wall and CPU) on value examples of random queries (targets: the
/// untrained net's own answers; the step's cost does not depend on them).
fn bench_learner(
    args: &SearchArgs,
    net: &mut Cvpn,
    enc: &mut PbsEncoder,
    rng: &mut SplitMix64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let qs = enc.random_queries(rng, args.learner_batch.max(1));
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
        let (t, c) = (Instant::now(), cpu_seconds());
        for _ in 0..args.steps.max(1) {
            net.train_step(&batch)?;
        }
        step_rates.push(args.steps.max(1) as f64 / t.elapsed().as_secs_f64());
        step_cpu.extend(cpu_since(c).map(|c| args.steps.max(1) as f64 / c));
    }
    Ok((step_rates, step_cpu))
}

fn cpu_since(start: Option<f64>) -> Option<f64> {
    Some(cpu_seconds()? - start?).filter(|&c| c > 0.0)
}

/// CPU seconds of the whole process (every thread, the tensor library's workers included), in
/// nanoseconds from `/proc/self/task/*/schedstat` where it exists (the clock-tick counters
/// of `/proc/self/stat` resolve only 10 ms; one search takes about that). Threads that ended
/// drop out of the sum, so only deltas over spans in which no thread ends are exact (the
/// tensor library's pool lives as long as the process).
fn cpu_seconds() -> Option<f64> {
    let fine = || -> Option<f64> {
        let mut ns = 0u64;
        for t in std::fs::read_dir("/proc/self/task").ok()? {
            let stat = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
            ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(ns as f64 * 1e-9)
    };
    fine().or_else(process_cpu_seconds)
}

/// Where a side's time went, summed over repetitions: wall-clock seconds per phase.
#[derive(Default)]
struct Profile {
    total: f64,
    layout: f64,
    times: PhaseTimes,
    encode: f64,
    forward: f64,
    decode: f64,
    forwards: u64,
    queries: u64,
    max_batch: usize,
    searches: usize,
}

impl Profile {
    fn add(&mut self, total: f64, layout: f64, t: &PhaseTimes, l: &CvpnLeaves, b: usize) {
        self.total += total;
        self.layout += layout;
        self.times.add(t);
        self.encode += l.encode_seconds;
        self.forward += l.forward_seconds;
        self.decode += l.decode_seconds;
        self.forwards += l.forwards;
        self.queries += l.queries;
        self.max_batch = self.max_batch.max(l.max_batch);
        self.searches += b;
    }

    /// One JSON line: microseconds per search in each phase and the share of the total. The
    /// CFR update time excludes leaf evaluation (which a search run alone does inside its
    /// updates).
    fn line(&self, side: &str, b: usize) -> Value {
        let leaf = self.encode + self.forward + self.decode;
        let cfr = if self.times.evaluate > 0.0 {
            self.times.updates
        } else {
            self.times.updates - leaf
        };
        let other =
            self.total - self.layout - cfr - leaf - self.times.gather - self.times.simulations;
        let n = self.searches.max(1) as f64;
        let us = |x: f64| (1e6 * x / n * 10.0).round() / 10.0;
        let share = |x: f64| (1000.0 * x / self.total.max(1e-12)).round() / 1000.0;
        let phases = [
            ("layout_build", self.layout),
            ("cfr_updates", cfr),
            ("gather_queries", self.times.gather),
            ("encode_features", self.encode),
            ("cvpn_forward", self.forward),
            ("decode_values", self.decode),
            ("simulations", self.times.simulations),
            ("other", other),
        ];
        let mut per = serde_json::Map::new();
        let mut frac = serde_json::Map::new();
        for (k, x) in phases {
            per.insert(k.into(), json!(us(x)));
            frac.insert(k.into(), json!(share(x)));
        }
        json!({"bench": "search_profile", "side": side, "batch": b,
            "us_per_search_total": us(self.total), "us_per_search": per, "share": frac,
            "forwards": self.forwards, "queries": self.queries,
            "mean_queries_per_forward": self.queries as f64 / self.forwards.max(1) as f64,
            "max_queries_per_forward": self.max_batch,
            "us_per_forward": (1e6 * self.forward / self.forwards.max(1) as f64).round()})
    }
}
