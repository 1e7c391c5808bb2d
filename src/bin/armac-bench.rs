//! `armac-bench`: throughput measurements printed as one JSON object per line, compared with
//! peers by the scripts in `scripts/` (e.g. `scripts/bench_vs_openspiel.sh`).
//! * `cfr --game G --algorithm cfr+ --iterations N`: solver iterations per second.
//! * `nashconv --game G --repeats N`: time of one exact NashConv evaluation.
//! * `lbr --hands N [--threads T] [--seed S] [--per-hand]`: LBR hands per second against
//!   uniform random, one line per variant (LBR-FC, LBR-FCPA, LBR-FC12-FCPA34) on `hunl_fcpa`.
//! * `lbr-net --policy RUN [--hands N] [--rounds R] [--peer replay|burn|eager]`: LBR hands per
//!   second against an ARMAC checkpoint, fast range path against the replay reference path,
//!   the same path on burn's kernels, or the same path with range updates at every opponent
//!   decision, on the same deals (ratio, CPU seconds per hand, load average);
//!   `scripts/bench_lbr_net.sh` wraps it.
//! * `learner --batch B --input N --actions A --hidden H --layers L [--time T] [--device D]`:
//!   ARMAC learner optimizer steps per second (feed-forward, or recurrent on B sequences of T
//!   steps; flex by default, wgpu/cuda when compiled in); `scripts/bench_learner.sh` runs the
//!   PyTorch peer beside it and prints the ratio, `scripts/device_bench.sh` runs it on a GPU.
//! * `batched --game G --algorithm cfr+|cfr|pos --batch B --iterations N --repeats R`:
//!   throughput of the batched public-tree solvers (`armac::nn::public`) on a burn device;
//!   `scripts/bench_batched.sh` runs it beside the tabular peers and
//!   `scripts/h100_estimate.py` turns its layout sizes into an H100 estimate.
//! * `search --game G --batch B --simulations S --repeats R`: SoG searches/s at B = 1 and B
//!   in lock-step (ratio), query re-solves/s, CVPN learner steps/s; `scripts/bench_search.sh`.
//! * `actor --config C [--groups N] [--repeats R] [--past P]`: acting steps/s of one actor
//!   thread with the config's networks, only the outputs read against all outputs (ratio).
//! * `reservoir --config nlhe_fcpa_recurrent.toml --snapshots N --seconds S`: peak memory, disk and
//!   acting steps/s of an ARMAC run resumed from a synthetic reservoir of N past networks;
//!   `scripts/bench_reservoir.sh` compares N = 1024 with N = 8.

use anyhow::{Result, anyhow};
use armac::bench::{actor, batched, learner, poker, reservoir, search, solvers};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "armac-bench", about = "Throughput benchmarks (JSON lines)")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Tabular solver iterations per second (median of --repeats timed blocks).
    Cfr(solvers::CfrArgs),
    /// Seconds per exact NashConv evaluation of a CFR+ average policy (median of --repeats).
    Nashconv(solvers::NashconvArgs),
    /// 7-card hand evaluator: all 133,784,560 hands by enumeration, and random hands.
    Eval7(poker::Eval7Args),
    /// Uniform random FCPA playouts per second: the concrete state and `Box<dyn State>`.
    FcpaPlayouts(poker::FcpaPlayoutsArgs),
    /// LBR hands per second against the uniform random policy, for each variant.
    Lbr(poker::LbrArgs),
    /// LBR against an ARMAC checkpoint: hands/s of the fast range path and of the reference
    /// (replay-every-hand) path on the same deals, interleaved, with their ratio.
    LbrNet(poker::LbrNetArgs),
    /// Any `[solver]` algorithm (full-width or sampled): iterations/s and nodes touched/s,
    /// median of --repeats timed blocks of --iterations. `--set key=value` sets solver keys.
    Solver(solvers::SolverArgs),
    /// ARMAC learner: optimizer steps per second (all heads and losses) of the feed-forward or
    /// recurrent network on a burn device, median of --repeats timed blocks of --steps.
    Learner(learner::LearnerArgs),
    /// Batched public-tree solvers (`nn::public`): one JSON line with iterations/s of the whole
    /// batch, element-iterations/s, public-node updates/s (and those over the layout's node
    /// count: equivalent full-width CFR iterations/s), the layout sizes and the bytes of
    /// solver state per element (median of --repeats timed blocks after one warm-up iteration).
    Batched(batched::BatchedArgs),
    /// ARMAC actor: acting steps per second of one actor thread's lock-step groups with a
    /// config's networks, computing only the outputs its games read against computing all of
    /// them (the same episodes, checked), interleaved, medians and ratio.
    Actor(actor::ActorArgs),
    /// ARMAC with a synthetic reservoir of --snapshots past networks: resumes it, trains for
    /// --seconds, and reports peak memory, disk use and acting steps per second.
    Reservoir(reservoir::ReservoirArgs),
    /// Student of Games: GT-CFR searches/s one at a time (B = 1) and B in lock-step (one CVPN
    /// forward per update for all), interleaved, medians and ratio; query re-solves/s; CVPN
    /// learner steps/s.
    Search(search::SearchArgs),
}

fn main() {
    armac::util::tune_allocator();
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    let lines = match args.command {
        Command::Cfr(a) => solvers::cfr(&a),
        Command::Nashconv(a) => solvers::nashconv(&a),
        Command::Solver(a) => solvers::solver(&a),
        Command::Eval7(a) => poker::eval7(&a),
        Command::FcpaPlayouts(a) => poker::fcpa_playouts(&a),
        Command::Lbr(a) => poker::lbr(&a),
        Command::LbrNet(a) => poker::lbr_net(&a),
        Command::Learner(a) => learner::learner(&a),
        Command::Batched(a) => batched::batched(&a),
        Command::Reservoir(a) => reservoir::reservoir(&a),
        Command::Actor(a) => actor::actor(&a),
        Command::Search(a) => search::search(&a),
    }
    .map_err(|e| anyhow!(e))?;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}
