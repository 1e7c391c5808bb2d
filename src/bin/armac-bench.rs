//! `armac-bench`: throughput measurements printed as one JSON object per line, compared with
//! peers by the scripts in `scripts/` (e.g. `scripts/bench_vs_openspiel.sh`).
//! * `cfr --game G --algorithm cfr+ --iterations N`: solver iterations per second.
//! * `nashconv --game G --repeats N`: time of one exact NashConv evaluation.

use anyhow::{Result, anyhow};
use armac::cfr::{SolverSpec, TabularSolver};
use armac::eval::nash_conv;
use armac::game::load_game;
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
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> Result<()> {
    match Args::parse().command {
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
    }
    Ok(())
}
