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
