//! Poker: the 7-card hand evaluator, FCPA playouts and LBR hands per second.

use super::{Result, median, timed};
use serde_json::{Value, json};
use std::time::Instant;

/// 7-card hand evaluator: all 133,784,560 hands by enumeration, and random hands.
#[derive(clap::Args, Debug, Clone)]
pub struct Eval7Args {
    /// Random hands to evaluate.
    #[arg(long, default_value_t = 20_000_000)]
    pub random: usize,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
}

/// Runs `armac-bench eval7` (see [`Eval7Args`]); one JSON object per output line.
pub fn eval7(args: &Eval7Args) -> Result<Vec<Value>> {
    let Eval7Args { random, repeats } = args.clone();
    let mut lines = Vec::new();
    use crate::games::hand_eval;
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
    lines.push(
        json!({"bench": "eval7", "enumerate_per_second": median(enum_rates),
               "random_per_second": median(rand_rates), "checksum": checksum}),
    );
    Ok(lines)
}

/// Uniform random FCPA playouts per second: the concrete state and `Box<dyn State>`.
#[derive(clap::Args, Debug, Clone)]
pub struct FcpaPlayoutsArgs {
    #[arg(long, default_value_t = 200_000)]
    pub playouts: usize,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
}

/// Runs `armac-bench fcpa_playouts` (see [`FcpaPlayoutsArgs`]); one JSON object per output line.
pub fn fcpa_playouts(args: &FcpaPlayoutsArgs) -> Result<Vec<Value>> {
    let FcpaPlayoutsArgs { playouts, repeats } = args.clone();
    let mut lines = Vec::new();
    use crate::games::universal_poker::{random_playouts, random_playouts_dyn};
    let mut fast = Vec::new();
    let mut dynamic = Vec::new();
    for r in 0..repeats.max(1) {
        let (_, secs) = timed(|| random_playouts(playouts, r as u64));
        fast.push(playouts as f64 / secs);
        let (_, secs) = timed(|| random_playouts_dyn(playouts, r as u64));
        dynamic.push(playouts as f64 / secs);
    }
    lines.push(
        json!({"bench": "fcpa_playouts", "concrete_per_second": median(fast),
               "dyn_state_per_second": median(dynamic)}),
    );
    Ok(lines)
}

/// LBR hands per second against the uniform random policy, for each variant.
#[derive(clap::Args, Debug, Clone)]
pub struct LbrArgs {
    /// Hands per variant (rounded up to a multiple of 4).
    #[arg(long, default_value_t = 400)]
    pub hands: u64,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only this variant (`fc`, `fcpa`, `fc12-fcpa34`); all by default.
    #[arg(long)]
    pub variant: Option<String>,
    /// Query the uniform policy hand by hand through the generic `Policy` adapter
    /// (`PerHand`, a replayed state per hand) instead of its batched implementation.
    #[arg(long)]
    pub per_hand: bool,
}

/// Runs `armac-bench lbr` (see [`LbrArgs`]); one JSON object per variant.
pub fn lbr(args: &LbrArgs) -> Result<Vec<Value>> {
    let LbrArgs {
        hands,
        threads,
        seed,
        variant,
        per_hand,
    } = args.clone();
    let variant = variant.as_deref();
    let mut lines = Vec::new();
    use crate::eval::lbr::{LbrOptions, LbrVariant, PerHand, RangePolicy, run_lbr};
    use crate::games::hand_eval::HandStateMachine;
    use crate::games::universal_poker::UniversalPokerGame;
    use crate::policy::UniformPolicy;
    let variants = match variant {
        None => LbrVariant::ALL.to_vec(),
        Some(v) => vec![
            LbrVariant::parse(v)
                .ok_or_else(|| format!("unknown LBR variant `{v}` (fc, fcpa, fc12-fcpa34)"))?,
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
        lines.push(json!({"bench": "lbr", "game": "hunl_fcpa", "policy": "uniform", "per_hand": per_hand, "variant": v.name(),
                   "hands": r.hands, "threads": threads_used, "seconds": r.seconds,
                   "hands_per_second": r.hands as f64 / r.seconds, "mean_mbb": r.mean_mbb,
                   "ci95_mbb": r.ci95_mbb, "table_build_seconds": tables}));
    }
    Ok(lines)
}

/// LBR against an ARMAC checkpoint: the fast range path against the reference path.
#[derive(clap::Args, Debug, Clone)]
pub struct LbrNetArgs {
    /// ARMAC run directory or checkpoint directory (a Hold'em run: recurrent or feed-forward).
    #[arg(long)]
    pub policy: std::path::PathBuf,
    /// `fc`, `fcpa` or `fc12-fcpa34`.
    #[arg(long, default_value = "fc")]
    pub variant: String,
    /// Hands per round and path (rounded up to a multiple of 4).
    #[arg(long, default_value_t = 32)]
    pub hands: u64,
    /// Rounds; each plays the fast path, then the reference path, on the same deals (seed
    /// `seed + round`), the fast path's caches emptied first (a cold start every round).
    #[arg(long, default_value_t = 3)]
    pub rounds: u64,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Sampled (hand, board) pairs per pre-flop equity.
    #[arg(long, default_value_t = crate::eval::lbr::DEFAULT_PREFLOP_SAMPLES)]
    pub preflop_samples: usize,
    /// The path the fast one is measured against: `replay` (every hand replayed from the root
    /// through burn, the reference), `burn` (the same cached range path with its forward
    /// passes run by burn's tensors instead of the plain kernels) or `eager` (the same path
    /// with the range updated at every opponent decision instead of only where LBR reads it:
    /// the same hands, so the same results).
    #[arg(long, default_value = "replay")]
    pub peer: String,
    /// Memory budget of the kept recurrent states of each path, in MiB (the library's default
    /// when absent).
    #[arg(long)]
    pub range_cache_mib: Option<usize>,
}

/// CPU seconds (user + system) this process has used so far, from `/proc/self/stat`
/// (`None` where that file is not readable).
pub(crate) fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The 1-minute load average, from `/proc/loadavg`.
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `armac-bench lbr-net` (see [`LbrNetArgs`]): one JSON line per round and a summary
/// line with hands/s of both paths (wall and CPU time), their ratio and whether both paths
/// gave the same results.
pub fn lbr_net(args: &LbrNetArgs) -> Result<Vec<Value>> {
    use crate::eval::lbr::{LbrOptions, LbrVariant, RangePolicy, run_lbr};
    use crate::games::hand_eval::HandStateMachine;
    use crate::games::universal_poker::UniversalPokerGame;
    let variant = LbrVariant::parse(&args.variant).ok_or_else(|| {
        format!(
            "--variant `{}` is not one of fc, fcpa, fc12-fcpa34",
            args.variant
        )
    })?;
    if args.hands == 0 || args.rounds == 0 {
        return Err("--hands and --rounds must be positive".into());
    }
    let peer = ["replay", "burn", "eager"]
        .into_iter()
        .find(|&p| p == args.peer)
        .ok_or_else(|| format!("--peer `{}` is not one of replay, burn, eager", args.peer))?;
    let (game, fast) = crate::run::armac::load_checkpoint_policy(&args.policy)?;
    let (_, reference) = crate::run::armac::load_checkpoint_policy(&args.policy)?;
    let mut reference = match peer {
        "replay" => reference.with_incremental_ranges(false),
        "burn" => reference.with_plain_kernels(false),
        _ => reference,
    };
    let mut fast = fast;
    if let Some(mib) = args.range_cache_mib {
        fast = fast.with_range_cache_bytes(mib << 20);
        reference = reference.with_range_cache_bytes(mib << 20);
    }
    let game = UniversalPokerGame::from_string(&game.load_string()).map_err(|e| {
        format!(
            "--policy {}: LBR needs a Hold'em checkpoint: {e}",
            args.policy.display()
        )
    })?;
    HandStateMachine::get();
    let load_before = load_average();
    let mut lines = Vec::new();
    let (mut wall, mut cpu) = ([0.0f64; 2], [0.0f64; 2]);
    let mut hands = 0;
    let mut max_diff = 0.0f64;
    let mut stats = Vec::new();
    for round in 0..args.rounds {
        let mut opts = LbrOptions::new(variant, args.hands);
        opts.seed = args.seed + round;
        opts.threads = args.threads;
        opts.preflop_samples = args.preflop_samples;
        // The eager peer: the fast path with the range updated at every opponent decision.
        let peer_opts = LbrOptions {
            defer_range_updates: peer != "eager",
            ..opts.clone()
        };
        fast.reset_range_cache();
        reference.reset_range_cache();
        let mut round_cpu = [f64::NAN; 2];
        let paths = [&fast as &dyn RangePolicy, &reference];
        let mut results = [None, None];
        // Odd rounds run the peer first, so that neither path always has the warmer start.
        for k in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let c0 = process_cpu_seconds();
            let r = run_lbr(&game, paths[k], [&opts, &peer_opts][k], None)?;
            let c = c0.zip(process_cpu_seconds()).map(|(a, b)| b - a);
            wall[k] += r.seconds;
            cpu[k] += c.unwrap_or(f64::NAN);
            round_cpu[k] = c.unwrap_or(f64::NAN);
            results[k] = Some(r);
        }
        let [Some(r0), Some(r1)] = results else {
            unreachable!("both paths ran")
        };
        let results = [r0, r1];
        hands = results[0].hands;
        let diff = (results[0].mean_mbb - results[1].mean_mbb).abs();
        max_diff = max_diff.max(diff);
        let s = fast.range_stats();
        lines.push(
            json!({"bench": "lbr_net", "round": round, "seed": opts.seed,
            "hands": hands, "fast_seconds": results[0].seconds,
            "reference_seconds": results[1].seconds,
            "fast_cpu_seconds": round_cpu[0], "reference_cpu_seconds": round_cpu[1],
            "fast_mean_mbb": results[0].mean_mbb,
            "reference_mean_mbb": results[1].mean_mbb, "range_stats": s}),
        );
        stats.push(s);
    }
    let total = (hands * args.rounds) as f64;
    let threads_used = if args.threads == 0 {
        rayon::current_num_threads()
    } else {
        args.threads
    };
    lines.push(json!({"bench": "lbr_net", "summary": true,
        "policy": args.policy.display().to_string(), "variant": variant.name(), "peer": args.peer,
        "recurrent": fast.is_recurrent(), "threads": threads_used,
        "hands_per_path": total,
        "fast_hands_per_second": total / wall[0],
        "reference_hands_per_second": total / wall[1],
        "ratio": wall[1] / wall[0],
        "fast_cpu_seconds_per_hand": cpu[0] / total,
        "reference_cpu_seconds_per_hand": cpu[1] / total,
        "cpu_ratio": cpu[1] / cpu[0],
        "max_mean_mbb_difference": max_diff,
        "load_average_before": load_before, "load_average_after": load_average()}));
    Ok(lines)
}
