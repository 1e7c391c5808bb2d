//! `armac-bench actor`: acting throughput of one ARMAC actor thread. Plays lock-step groups
//! ([`play_group`]) with networks of a config's sizes (random weights, past epochs drawn from a
//! small reservoir) and, on the same seeds, the reference that computes every output of every
//! network ([`play_group_all_heads`]); the two play the same episodes (checked here), so the
//! ratio of their steps per second is what computing only the read outputs saves.

use super::{Result, median, timed};
use crate::games::load_game;
use crate::nn::armac::ArmacPolicyNet;
use crate::rl::armac::actor::{PastEpoch, Snapshots, play_group, play_group_all_heads};
use crate::rl::armac::candidates::Candidate;
use crate::run::config::Config;
use crate::util::SplitMix64;
use serde_json::{Value, json};
use std::sync::Arc;

/// Arguments of `armac-bench actor`.
#[derive(clap::Args, Debug, Clone)]
pub struct ActorArgs {
    /// ARMAC config (path, or name in `configs/`): game, network sizes and actor settings.
    #[arg(long, default_value = "nlhe_fcpa_recurrent.toml")]
    pub config: String,
    /// Groups (of `armac.games_per_group` episodes) per timed block.
    #[arg(long, default_value_t = 4)]
    pub groups: usize,
    /// Timed blocks per path, interleaved; the medians are reported.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Past epochs in the reservoir the opponents and critics are drawn from.
    #[arg(long, default_value_t = 8)]
    pub past: usize,
    /// Further config overrides (`key=value`).
    #[arg(long = "set")]
    pub set: Vec<String>,
}

/// Runs `armac-bench actor` (see [`ActorArgs`]): one JSON line.
pub fn actor(args: &ActorArgs) -> Result<Vec<Value>> {
    if args.groups == 0 || args.repeats == 0 || args.past == 0 {
        return Err("--groups, --repeats and --past must be at least 1".into());
    }
    let (config, _) = Config::load(&args.config, &args.set)?;
    let s = config.armac()?;
    let game = load_game(&config.game)?;
    // Random output layers, so that the policies are not uniform.
    let mut cfg = crate::rl::armac::net_config(&game, &s);
    cfg.zero_init_heads = false;
    let net = |seed: u64| -> Result<Arc<ArmacPolicyNet>> {
        Ok(Arc::new(ArmacPolicyNet::init(cfg.clone(), seed)?))
    };
    let mut past = Vec::with_capacity(args.past);
    for i in 0..args.past as u64 {
        past.push(PastEpoch {
            policy: net(100 + i)?,
            critic: net(1_000 + i)?,
            exact: None,
            table: None,
        });
    }
    let snaps = Snapshots {
        epoch: args.past as u64,
        latest: net(7)?,
        latest_table: None,
        previous: past.last().cloned(),
        past,
        best: Candidate::Average,
    };
    let settings = crate::cluster::actor_settings(&game, &s);
    // One timed block: `groups` groups from seed `seed`; returns (decisions, seconds, digest).
    let block = |all: bool, seed: u64| {
        let mut rng = SplitMix64::new(seed);
        let play = if all {
            play_group_all_heads
        } else {
            play_group
        };
        let ((steps, digest), secs) = timed(|| {
            let mut steps = 0usize;
            let mut digest = 0.0f64;
            for _ in 0..args.groups {
                let (trajs, eval) = play(&game, &snaps, &settings, Candidate::all(), &mut rng);
                for t in &trajs {
                    steps += t.len();
                    digest += f64::from(t.returns[0]);
                    for x in &t.steps {
                        let targets = x.advantage.iter().chain(&x.played_policy).flatten();
                        digest += x.action as f64 + targets.map(|&v| f64::from(v)).sum::<f64>();
                    }
                }
                digest += eval.map_or(0.0, |e| e.1);
            }
            (steps, digest)
        });
        (steps, secs, digest)
    };
    block(false, 1);
    block(true, 1);
    let (mut sel, mut all) = (Vec::new(), Vec::new());
    let mut decisions = 0;
    for r in 0..args.repeats as u64 {
        let (n, t_sel, d_sel) = block(false, 10 + r);
        let (m, t_all, d_all) = block(true, 10 + r);
        if n != m || d_sel != d_all {
            return Err(format!(
                "the two paths played different episodes (block {r}: {n} against {m} decisions)"
            )
            .into());
        }
        decisions += n;
        sel.push(n as f64 / t_sel);
        all.push(n as f64 / t_all);
    }
    let (sel, all) = (median(sel), median(all));
    Ok(vec![json!({
        "bench": "actor",
        "config": args.config,
        "game": config.game,
        "recurrent": s.recurrent,
        "games_per_group": s.games_per_group,
        "groups_per_block": args.groups,
        "repeats": args.repeats,
        "decisions_per_path": decisions,
        "steps_per_second_selected_heads": sel,
        "steps_per_second_all_heads": all,
        "ratio": sel / all,
    })])
}
