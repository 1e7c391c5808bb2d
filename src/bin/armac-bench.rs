//! `armac-bench`: throughput measurements printed as one JSON object per line, compared with
//! peers by the scripts in `scripts/` (e.g. `scripts/bench_vs_openspiel.sh`).
//! * `cfr --game G --algorithm cfr+ --iterations N`: solver iterations per second.
//! * `nashconv --game G --repeats N`: time of one exact NashConv evaluation.
//! * `lbr --hands N [--threads T] [--seed S] [--per-hand]`: LBR hands per second against
//!   uniform random, one line per variant (LBR-FC, LBR-FCPA, LBR-FC12-FCPA34) on `hunl_fcpa`.
//! * `learner --batch B --input N --actions A --hidden H --layers L`: ARMAC learner optimizer
//!   steps per second (feed-forward network, CPU backend); `scripts/bench_learner.sh` runs the
//!   PyTorch peer beside it and prints the ratio.
//! * `batched --game G --algorithm cfr+|cfr|pos --batch B --iterations N --repeats R`:
//!   throughput of the batched public-tree solvers (`armac::nn::public`) on a burn device;
//!   `scripts/bench_batched.sh` runs it beside the tabular peers and
//!   `scripts/h100_estimate.py` turns its layout sizes into an H100 estimate.

use anyhow::{Result, anyhow};
use armac::cfr::{SolverSpec, TabularSolver};
use armac::eval::nash_conv;
use armac::games::load_game;
use armac::tree::PublicTree;
use clap::{Parser, Subcommand};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(name = "armac-bench", about = "Throughput benchmarks (JSON lines)")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Tabular solver iterations per second (median of --repeats timed blocks).
    Cfr {
        #[arg(long)]
        game: String,
        #[arg(long, default_value = "cfr+")]
        algorithm: String,
        #[arg(long, default_value_t = 200)]
        iterations: u64,
        #[arg(long, default_value_t = 5)]
        repeats: usize,
    },
    /// Seconds per exact NashConv evaluation of a CFR+ average policy (median of --repeats).
    Nashconv {
        #[arg(long)]
        game: String,
        #[arg(long, default_value_t = 20)]
        repeats: usize,
    },
    /// 7-card hand evaluator: all 133,784,560 hands by enumeration, and random hands.
    Eval7 {
        /// Random hands to evaluate.
        #[arg(long, default_value_t = 20_000_000)]
        random: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
    },
    /// Uniform random FCPA playouts per second: the concrete state and `Box<dyn State>`.
    FcpaPlayouts {
        #[arg(long, default_value_t = 200_000)]
        playouts: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
    },
    /// LBR hands per second against the uniform random policy, for each variant.
    Lbr {
        /// Hands per variant (rounded up to a multiple of 4).
        #[arg(long, default_value_t = 400)]
        hands: u64,
        /// Worker threads (0 = one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Only this variant (`fc`, `fcpa`, `fc12-fcpa34`); all by default.
        #[arg(long)]
        variant: Option<String>,
        /// Query the uniform policy hand by hand through the generic `Policy` adapter
        /// (`PerHand`, a replayed state per hand) instead of its batched implementation.
        #[arg(long)]
        per_hand: bool,
    },
    /// Any `[solver]` algorithm (full-width or sampled): iterations/s and nodes touched/s,
    /// median of --repeats timed blocks of --iterations. `--set key=value` sets solver keys.
    Solver {
        #[arg(long)]
        game: String,
        #[arg(long)]
        algorithm: String,
        #[arg(long, default_value_t = 1000)]
        iterations: u64,
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Solver keys, e.g. `--set baseline=predictive` (repeatable).
        #[arg(long = "set")]
        set: Vec<String>,
    },
    /// ARMAC learner: optimizer steps per second of the feed-forward network (all heads and
    /// losses) on the CPU backend, median of --repeats timed blocks of --steps.
    Learner {
        #[arg(long, default_value_t = 2048)]
        batch: usize,
        #[arg(long, default_value_t = 20)]
        steps: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Information-state tensor length (Leduc: 30).
        #[arg(long, default_value_t = 30)]
        input: usize,
        #[arg(long, default_value_t = 3)]
        actions: usize,
        #[arg(long, default_value_t = 128)]
        hidden: usize,
        #[arg(long, default_value_t = 2)]
        layers: usize,
    },
    /// Batched public-tree solvers (`nn::public`): one JSON line with iterations/s of the whole
    /// batch, element-iterations/s, public-node updates/s (and those over the layout's node
    /// count: equivalent full-width CFR iterations/s), the layout sizes and the bytes of
    /// solver state per element (median of --repeats timed blocks after one warm-up iteration).
    Batched(BatchedArgs),
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64())
}

fn main() -> Result<()> {
    match Args::parse().command {
        Command::Batched(args) => bench_batched(args)?,
        Command::Solver {
            game,
            algorithm,
            iterations,
            repeats,
            seed,
            set,
        } => {
            use armac::run::config::{Config, apply_override};
            let mut table: toml::Table = toml::Table::new();
            table.insert("game".into(), toml::Value::String(game.clone()));
            table.insert("seed".into(), toml::Value::Integer(seed as i64));
            let mut solver = toml::Table::new();
            solver.insert("algorithm".into(), toml::Value::String(algorithm.clone()));
            solver.insert("iterations".into(), toml::Value::Integer(iterations as i64));
            table.insert("solver".into(), toml::Value::Table(solver));
            for kv in &set {
                apply_override(&mut table, &format!("solver.{kv}"))?;
            }
            let settings = Config::from_table(table, "armac-bench solver")?.tabular()?;
            let g = load_game(&settings.game)?;
            let tree = Arc::new(PublicTree::build(g.as_ref())?);
            let mut solver = armac::run::solvers::build(&settings.choice, seed, g.as_ref(), tree)?;
            let (mut it_rates, mut node_rates) = (Vec::new(), Vec::new());
            for _ in 0..repeats.max(1) {
                let nodes0 = solver.nodes_touched();
                let t = Instant::now();
                for _ in 0..iterations {
                    solver.iterate();
                }
                let secs = t.elapsed().as_secs_f64();
                it_rates.push(iterations as f64 / secs);
                node_rates.push((solver.nodes_touched() - nodes0) as f64 / secs);
            }
            let its = solver.iteration() as f64;
            println!(
                "{}",
                json!({"bench": "solver", "game": game, "algorithm": algorithm, "options": set,
                       "iterations_per_second": median(it_rates),
                       "nodes_touched_per_second": median(node_rates),
                       "nodes_per_iteration": solver.nodes_touched() as f64 / its})
            );
        }
        Command::Learner {
            batch,
            steps,
            repeats,
            input,
            actions,
            hidden,
            layers,
        } => {
            use armac::bench::learner::bench_train_steps;
            use armac::nn::armac::ArmacNetConfig;
            let cfg = ArmacNetConfig {
                input_size: input,
                num_actions: actions,
                encoder_hidden: hidden,
                encoder_layers: layers,
                head_hidden: hidden,
                recurrent: false,
            };
            let device = armac::nn::select_device("flex")?;
            let rates: Vec<f64> = (0..repeats.max(1))
                .map(|_| bench_train_steps(cfg.clone(), &device, batch, steps))
                .collect();
            println!(
                "{}",
                json!({"bench": "learner", "backend": "flex", "batch": batch,
                       "steps_per_second": median(rates)})
            );
        }
        Command::Eval7 { random, repeats } => {
            use armac::games::hand_eval;
            let _ = hand_eval::bench_random(1000, 0); // build the tables outside the timing
            let _ = hand_eval::bench_enumerate_all();
            let mut enum_rates = Vec::new();
            let mut rand_rates = Vec::new();
            let mut checksum = 0;
            for r in 0..repeats.max(1) {
                let ((hands, sum), secs) = timed(hand_eval::bench_enumerate_all);
                checksum ^= sum;
                enum_rates.push(hands as f64 / secs);
                let (sum, secs) = timed(|| hand_eval::bench_random(random, r as u64));
                checksum ^= sum;
                rand_rates.push(random as f64 / secs);
            }
            println!(
                "{}",
                json!({"bench": "eval7", "enumerate_per_second": median(enum_rates),
                       "random_per_second": median(rand_rates), "checksum": checksum})
            );
        }
        Command::FcpaPlayouts { playouts, repeats } => {
            use armac::games::universal_poker::{random_playouts, random_playouts_dyn};
            let mut fast = Vec::new();
            let mut dynamic = Vec::new();
            for r in 0..repeats.max(1) {
                let (_, secs) = timed(|| random_playouts(playouts, r as u64));
                fast.push(playouts as f64 / secs);
                let (_, secs) = timed(|| random_playouts_dyn(playouts, r as u64));
                dynamic.push(playouts as f64 / secs);
            }
            println!(
                "{}",
                json!({"bench": "fcpa_playouts", "concrete_per_second": median(fast),
                       "dyn_state_per_second": median(dynamic)})
            );
        }
        Command::Cfr {
            game,
            algorithm,
            iterations,
            repeats,
        } => {
            let g = load_game(&game)?;
            let t = Instant::now();
            let tree = Arc::new(PublicTree::build(g.as_ref())?);
            let build = t.elapsed().as_secs_f64();
            let spec = SolverSpec::named(&algorithm)
                .ok_or_else(|| anyhow!("unknown algorithm {algorithm}"))?;
            let mut solver = TabularSolver::new(tree, spec);
            let mut rates = Vec::new();
            for _ in 0..repeats.max(1) {
                let t = Instant::now();
                for _ in 0..iterations {
                    solver.iterate();
                }
                rates.push(iterations as f64 / t.elapsed().as_secs_f64());
            }
            println!(
                "{}",
                json!({"bench": "cfr", "game": game, "algorithm": algorithm, "iterations_per_second": median(rates),
                       "tree_build_seconds": build})
            );
        }
        Command::Nashconv { game, repeats } => {
            let g = load_game(&game)?;
            let t = Instant::now();
            let tree = Arc::new(PublicTree::build(g.as_ref())?);
            let build = t.elapsed().as_secs_f64();
            let mut solver = TabularSolver::new(tree.clone(), SolverSpec::named("cfr+").unwrap());
            for _ in 0..10 {
                solver.iterate();
            }
            let avg = solver.average_policy();
            let mut times = Vec::new();
            let mut value = 0.0;
            for _ in 0..repeats.max(1) {
                let t = Instant::now();
                value = nash_conv(&tree, &avg).nash_conv;
                times.push(t.elapsed().as_secs_f64());
            }
            println!(
                "{}",
                json!({"bench": "nashconv", "game": game, "seconds": median(times), "tree_build_seconds": build,
                       "nash_conv": value})
            );
        }
        Command::Lbr {
            hands,
            threads,
            seed,
            variant,
            per_hand,
        } => bench_lbr(hands, threads, seed, variant.as_deref(), per_hand)?,
    }
    Ok(())
}

fn bench_lbr(
    hands: u64,
    threads: usize,
    seed: u64,
    variant: Option<&str>,
    per_hand: bool,
) -> Result<()> {
    use armac::eval::lbr::{LbrOptions, LbrVariant, PerHand, RangePolicy, run_lbr};
    use armac::games::hand_eval::HandStateMachine;
    use armac::games::universal_poker::UniversalPokerGame;
    use armac::policy::UniformPolicy;
    let variants = match variant {
        None => LbrVariant::ALL.to_vec(),
        Some(v) => vec![
            LbrVariant::parse(v)
                .ok_or_else(|| anyhow!("unknown LBR variant `{v}` (fc, fcpa, fc12-fcpa34)"))?,
        ],
    };
    let game = UniversalPokerGame::hunl_fcpa();
    let policy: Box<dyn RangePolicy> = if per_hand {
        Box::new(PerHand(UniformPolicy))
    } else {
        Box::new(UniformPolicy)
    };
    let t = Instant::now();
    HandStateMachine::get();
    let tables = t.elapsed().as_secs_f64();
    let threads_used = if threads == 0 {
        rayon::current_num_threads()
    } else {
        threads
    };
    for v in variants {
        let mut opts = LbrOptions::new(v, hands);
        opts.seed = seed;
        opts.threads = threads;
        let r = run_lbr(&game, policy.as_ref(), &opts, None)?;
        println!(
            "{}",
            json!({"bench": "lbr", "game": "hunl_fcpa", "policy": "uniform", "per_hand": per_hand, "variant": v.name(),
                   "hands": r.hands, "threads": threads_used, "seconds": r.seconds,
                   "hands_per_second": r.hands as f64 / r.seconds, "mean_mbb": r.mean_mbb,
                   "ci95_mbb": r.ci95_mbb, "table_build_seconds": tables})
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
struct BatchedArgs {
    #[arg(long)]
    game: String,
    /// `cfr`, `cfr+` (any full-width name `SolverSpec::named` knows) or `pos`.
    #[arg(long, default_value = "cfr+")]
    algorithm: String,
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[arg(long, default_value_t = 20)]
    iterations: u64,
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[arg(long, default_value = "flex")]
    device: String,
    /// `f32` or `f64`.
    #[arg(long, default_value = "f32")]
    precision: String,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Skip (print a `skipped` line) when the estimated state of the whole batch exceeds
    /// this many bytes.
    #[arg(long, default_value_t = 2_000_000_000)]
    max_state_bytes: u64,
}

/// Floats of solver state per batch element, by tensor, read off the shapes that
/// `nn::public::{cfr,pos}` allocate (see their module docs).
fn batched_state_floats(layout: &armac::tree::tensor::TensorTree, pos: bool) -> Vec<(&str, u64)> {
    let (n, p, a) = (layout.len() as u64, layout.p as u64, layout.a as u64);
    let d = [
        layout.decisions[0].len() as u64,
        layout.decisions[1].len() as u64,
    ];
    if pos {
        // One `[B, W]` tensor per quantity: both players' blocks, a scratch block and (for the
        // strategies) a constant one; baselines `[B, N·P² + 2]`; the reaches of every depth
        // `[B, P²]` per player are alive during a pass.
        let w = (d[0] + d[1] + 1) * p * a;
        let depth = layout.levels.len() as u64;
        vec![
            ("regrets", w),
            ("cumulative", w),
            ("strategy", w + 1),
            ("baselines", n * p * p + 2),
            ("path_reaches", 2 * depth * p * p),
        ]
    } else {
        // Per player `[B, D·P, A]` regrets, cumulative and current blocks; per player reaches
        // `[B, N·P + 1]`, one value vector `[B, N·P + 2]`, the strategy vector `[B, ΣD·P·A + 1]`
        // and the gathered action values `[B, D·P·A + 1]`.
        let blocks = (d[0].max(1) + d[1].max(1)) * p * a;
        vec![
            ("regrets", blocks),
            ("cumulative", blocks),
            ("current", blocks),
            ("reaches", 2 * (n * p + 1)),
            ("values", n * p + 2),
            ("strategy_vector", blocks + 1),
            ("action_values", d[0].max(d[1]).max(1) * p * a + 1),
        ]
    }
}

fn bench_batched(args: BatchedArgs) -> Result<()> {
    use armac::cfr::Averaging;
    use armac::cfr::pos::PosSpec;
    use armac::nn::public::cfr::BatchedCfr;
    use armac::nn::public::pos::BatchedPos;
    use armac::nn::public::{Ctx, Precision};
    use armac::tree::history::HistoryTree;
    use armac::tree::tensor::TensorTree;

    let precision = match args.precision.as_str() {
        "f32" => Precision::F32,
        "f64" => Precision::F64,
        other => return Err(anyhow!("--precision must be f32 or f64, not `{other}`")),
    };
    let is_pos = args.algorithm == "pos";
    let spec = if is_pos {
        None
    } else {
        Some(SolverSpec::named(&args.algorithm).ok_or_else(|| {
            anyhow!(
                "--algorithm `{}`: expected pos or a full-width name such as cfr, cfr+",
                args.algorithm
            )
        })?)
    };
    if args.batch == 0 {
        return Err(anyhow!("--batch must be at least 1"));
    }
    let g = load_game(&args.game)?;
    let tree = Arc::new(PublicTree::build(g.as_ref())?);
    let ht = HistoryTree::build(g.as_ref(), &tree)?;
    let layout = Arc::new(TensorTree::build(&tree, &ht, 0, None)?);
    let float_bytes: u64 = if precision == Precision::F64 { 8 } else { 4 };
    let parts = batched_state_floats(&layout, is_pos);
    let per_element: u64 = parts.iter().map(|(_, f)| f * float_bytes).sum();
    let total = per_element * args.batch as u64;
    let level_nodes: Vec<u32> = layout.levels.iter().map(|(a, b)| b - a).collect();
    let layout_json = json!({
        "nodes": layout.len(), "p": layout.p, "a": layout.a, "k": layout.k,
        "levels": layout.levels.len(), "level_nodes": level_nodes,
        "decisions": [layout.decisions[0].len(), layout.decisions[1].len()],
        "terminals": layout.terminals.len(), "leaves": layout.leaves.len(),
    });
    let breakdown: serde_json::Map<String, serde_json::Value> = parts
        .iter()
        .map(|(k, f)| (k.to_string(), json!(f * float_bytes)))
        .collect();
    let head = json!({
        "bench": "batched", "game": args.game, "algorithm": args.algorithm, "batch": args.batch,
        "device": args.device, "precision": args.precision, "layout": layout_json,
        "state_bytes_per_element": per_element, "state_bytes_breakdown": breakdown,
        "state_bytes_total": total,
    });
    if total > args.max_state_bytes {
        let mut out = head;
        out["skipped"] = json!(format!(
            "estimated state {total} bytes exceeds {} bytes",
            args.max_state_bytes
        ));
        println!("{out}");
        return Ok(());
    }
    if total > 256 << 20 {
        eprintln!(
            "armac-bench batched: B={} holds about {:.2} GB of solver state",
            args.batch,
            total as f64 / 1e9
        );
    }
    let device = armac::nn::select_device(&args.device).map_err(|e| anyhow!("{e}"))?;
    let ctx = Ctx::new(&device, precision);
    // Both solvers advance by `iterate()` and count public-node updates.
    let nodes = layout.len() as u64;
    let batch = args.batch as u64;
    let t0 = Instant::now();
    let mut step: Box<dyn FnMut() -> u64> = if let Some(spec) = spec {
        let mut s = BatchedCfr::new(
            tree.clone(),
            layout.clone(),
            spec,
            args.batch,
            None,
            None,
            &ctx,
        )?;
        let mut done = 0u64;
        Box::new(move || {
            s.iterate();
            done += nodes * batch;
            done
        })
    } else {
        let spec = PosSpec::default();
        debug_assert!(matches!(spec.averaging, Averaging::Linear));
        let mut s = BatchedPos::new(
            tree.clone(),
            layout.clone(),
            spec,
            args.seed,
            args.batch,
            &ctx,
        )?;
        Box::new(move || {
            s.iterate();
            s.node_updates()
        })
    };
    let mut updates = step(); // untimed warm-up iteration
    let setup = t0.elapsed().as_secs_f64();
    let (mut it_rates, mut node_rates, mut secs_all) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        let t = Instant::now();
        let before = updates;
        for _ in 0..args.iterations {
            updates = step();
        }
        let secs = t.elapsed().as_secs_f64();
        secs_all.push(secs);
        it_rates.push(args.iterations as f64 / secs);
        node_rates.push((updates - before) as f64 / secs);
    }
    let its = median(it_rates);
    let mut out = head;
    out["iterations"] = json!(args.iterations);
    out["repeats"] = json!(args.repeats.max(1));
    out["block_seconds"] = json!(median(secs_all));
    out["setup_seconds"] = json!(setup);
    out["iterations_per_second"] = json!(its);
    out["element_iterations_per_second"] = json!(its * args.batch as f64);
    let node_rate = median(node_rates);
    out["node_updates_per_second"] = json!(node_rate);
    // A full-width CFR iteration updates every public node of the layout once.
    out["equivalent_cfr_iterations_per_second"] = json!(node_rate / nodes as f64);
    println!("{out}");
    Ok(())
}
