//! Tree solvers: `[solver]` algorithms, full-width CFR iterations and exact NashConv time.

use super::Result;
use super::median;
use crate::cfr::{SolverSpec, TabularSolver};
use crate::eval::nash_conv;
use crate::games::load_game;
use crate::tree::PublicTree;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// Any `[solver]` algorithm (full-width or sampled): iterations/s and nodes touched/s,
/// median of --repeats timed blocks of --iterations. `--set key=value` sets solver keys.
#[derive(clap::Args, Debug, Clone)]
pub struct SolverArgs {
    #[arg(long)]
    pub game: String,
    #[arg(long)]
    pub algorithm: String,
    #[arg(long, default_value_t = 1000)]
    pub iterations: u64,
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Solver keys, e.g. `--set baseline=predictive` (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
}

/// Runs `armac-bench solver` (see [`SolverArgs`]); one JSON object per output line.
pub fn solver(args: &SolverArgs) -> Result<Vec<Value>> {
    let SolverArgs {
        game,
        algorithm,
        iterations,
        repeats,
        seed,
        set,
    } = args.clone();
    let mut lines = Vec::new();
    use crate::run::config::{Config, apply_override};
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
    let mut solver = crate::run::solvers::build(&settings.choice, seed, g.as_ref(), tree)?;
    let (mut it_rates, mut node_rates, mut cpu_rates) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        let nodes0 = solver.nodes_touched();
        let cpu0 = crate::util::thread_cpu_seconds();
        let t = Instant::now();
        for _ in 0..iterations {
            solver.iterate();
        }
        let secs = t.elapsed().as_secs_f64();
        let nodes = (solver.nodes_touched() - nodes0) as f64;
        it_rates.push(iterations as f64 / secs);
        node_rates.push(nodes / secs);
        if let (Some(a), Some(b)) = (cpu0, crate::util::thread_cpu_seconds()) {
            cpu_rates.push(nodes / (b - a).max(1e-9));
        }
    }
    // Per CPU-second of this thread: meaningful for single-threaded solvers only (worker
    // threads' time is not counted).
    let cpu_nodes = if cpu_rates.is_empty() {
        Value::Null
    } else {
        json!(median(cpu_rates))
    };
    let its = solver.iteration() as f64;
    lines.push(
        json!({"bench": "solver", "game": game, "algorithm": algorithm, "options": set,
               "iterations_per_second": median(it_rates),
               "nodes_touched_per_second": median(node_rates),
               "nodes_per_iteration": solver.nodes_touched() as f64 / its,
               "nodes_touched_per_thread_cpu_second": cpu_nodes}),
    );
    Ok(lines)
}

/// Tabular solver iterations per second (median of --repeats timed blocks).
#[derive(clap::Args, Debug, Clone)]
pub struct CfrArgs {
    #[arg(long)]
    pub game: String,
    #[arg(long, default_value = "cfr+")]
    pub algorithm: String,
    #[arg(long, default_value_t = 200)]
    pub iterations: u64,
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
}

/// Runs `armac-bench cfr` (see [`CfrArgs`]); one JSON object per output line.
pub fn cfr(args: &CfrArgs) -> Result<Vec<Value>> {
    let CfrArgs {
        game,
        algorithm,
        iterations,
        repeats,
    } = args.clone();
    let mut lines = Vec::new();
    let g = load_game(&game)?;
    let t = Instant::now();
    let tree = Arc::new(PublicTree::build(g.as_ref())?);
    let build = t.elapsed().as_secs_f64();
    let spec =
        SolverSpec::named(&algorithm).ok_or_else(|| format!("unknown algorithm {algorithm}"))?;
    let mut solver = TabularSolver::new(tree, spec);
    let mut rates = Vec::new();
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        for _ in 0..iterations {
            solver.iterate();
        }
        rates.push(iterations as f64 / t.elapsed().as_secs_f64());
    }
    lines.push(json!({"bench": "cfr", "game": game, "algorithm": algorithm, "iterations_per_second": median(rates),
               "tree_build_seconds": build}));
    Ok(lines)
}

/// Seconds per exact NashConv evaluation of a CFR+ average policy (median of --repeats).
#[derive(clap::Args, Debug, Clone)]
pub struct NashconvArgs {
    #[arg(long)]
    pub game: String,
    #[arg(long, default_value_t = 20)]
    pub repeats: usize,
}

/// Runs `armac-bench nashconv` (see [`NashconvArgs`]); one JSON object per output line.
pub fn nashconv(args: &NashconvArgs) -> Result<Vec<Value>> {
    let NashconvArgs { game, repeats } = args.clone();
    let mut lines = Vec::new();
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
    lines.push(json!({"bench": "nashconv", "game": game, "seconds": median(times), "tree_build_seconds": build,
               "nash_conv": value}));
    Ok(lines)
}
