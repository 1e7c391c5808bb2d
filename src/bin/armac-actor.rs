//! `armac-actor --run <id> --broker <url> [--threads N]`: plays ARMAC episodes for the run a
//! learner (`armac-train --role learner`) publishes on a Redis broker, and pushes the
//! trajectories back through it, until the learner finishes the run. `--wait SECS` lets it
//! start before the learner; a broker restart is ridden out by reconnecting.

use anyhow::Result;
use armac::cluster::redis::{ActorOptions, run_actors};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "armac-actor",
    version,
    about = "Play ARMAC episodes for a learner through a Redis broker"
)]
struct Args {
    /// The run id the learner printed (`cluster.run`, by default its run directory's name).
    #[arg(long)]
    run: String,
    /// The broker, redis://[:password@]host:port/db, or rediss://... for TLS
    /// (ARMAC_REDIS_PASSWORD supplies a password the URL lacks; ARMAC_REDIS_CA_CERT a private
    /// CA).
    #[arg(long, value_name = "URL")]
    broker: String,
    /// Actor threads, each with its own connection and random stream (1 to 1024).
    #[arg(long, default_value_t = 1, value_parser = parse_threads)]
    threads: usize,
    /// Seed of the actors' random streams (default: clock and process id).
    #[arg(long)]
    seed: Option<u64>,
    /// Wait up to SECS for the run to appear on the broker (actors started before their
    /// learner); without it, a run that does not exist is an error at once.
    #[arg(long, value_name = "SECS")]
    wait: Option<u64>,
    /// Keep reconnecting to a broker that went away for up to SECS before stopping with an
    /// error (default: the run's cluster.reconnect_secs).
    #[arg(long, value_name = "SECS")]
    reconnect_secs: Option<u64>,
}

fn main() {
    armac::util::tune_allocator();
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    let opts = ActorOptions {
        run: args.run,
        broker: args.broker,
        threads: args.threads,
        seed: args.seed,
        wait: args.wait.map(std::time::Duration::from_secs),
        reconnect_secs: args.reconnect_secs,
        read_config: armac::run::armac::actor_config,
    };
    let r = run_actors(&opts)?;
    println!(
        "run {} finished: {} groups, {} trajectories, {} acting steps sent ({} waits on a full \
         stream)",
        opts.run, r.totals.groups, r.totals.trajectories, r.totals.steps, r.full_waits
    );
    Ok(())
}

/// `--threads`: 1 to 1024, the bound `armac.actors` has.
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a thread count in 1..=1024")),
    }
}
