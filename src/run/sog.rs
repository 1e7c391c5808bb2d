//! The Student of Games training run (`[sog]` configs): a CVPN trained by sound self-play.
//!
//! One process in rounds. With `actors = 0` (the default, deterministic) each round runs its
//! phases one after the other on one thread; with `actors ≥ 1` and `solvers ≥ 1` they overlap
//! on threads, as the paper's asynchronous actors, solvers and trainers (see
//! [`threaded_round`]: paced learner, versioned weight broadcast, not reproducible bit for
//! bit). Each round:
//! 1. **self-play**: `games_per_round` games in which both players re-solve continually with
//!    GT-CFR at every decision, the current CVPN at every search's frontier
//!    ([`crate::rl::sog::play_games`]: `sog.search.batch` games per group, their searches in
//!    lock-step, one CVPN forward per single update for the group); actions from
//!    `(1 − ε)·search + ε·uniform`; at most `queries_per_search` frontier PBSs of each search (final ranges) enter the FIFO query
//!    buffer, and the search's root policy at the decided PBS becomes a policy example;
//! 2. **solving**: the `solves_per_round` oldest queries of the buffer (plus, optionally,
//!    `random_queries` random PBSs) are re-solved by GT-CFR with the *current* CVPN at the new
//!    frontier ([`crate::search::solve_pbs_with_frontier`], the computation of
//!    [`crate::search::SearchLabels`]); their root CFVs are value examples, and each frontier
//!    PBS of a re-solve re-enters the buffer with probability `p_rec` (recursive queries);
//! 3. **learning**: `steps_per_round` Adam steps on batches drawn uniformly from the FIFO
//!    replay of examples (value MSE + policy cross-entropy; with `td1 > 0` the replay also
//!    holds TD(1) value examples of the self-play decisions, [`crate::rl::sog::td1_example`]).
//!
//! Every `eval.every` rounds (small games) the whole-game search policy with the current CVPN
//! ([`crate::search::SearchPolicy`]) is evaluated exactly; round 0 of a fresh run records the
//! initial network's value. Each round draws its random numbers from a stream seeded by
//! `(seed, round)`, and checkpoints (network with Adam's state, counters, query buffer and
//! replay) are taken at round boundaries, so a resumed run continues exactly.

use super::config::{Config, SogSettings};
use super::generation::GenerationWriter;
use super::tensorboard::TbWriter;
use super::{
    Deadline, MetricsCsv, RunError, RunSummary, TrainOptions, io_err, read_checkpoint_file,
};
use crate::cfr::SolverSpec;
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::cvpn::{CVPN_META_FILE, Cvpn, CvpnConfig, CvpnLeaves};
use crate::nn::public::engine::TensorEngineBuilder;
use crate::nn::public::{Ctx, Precision};
use crate::rl::sog::{
    ExampleReplay, QueryBuffer, SelfPlayConfig, decode_buffers, encode_buffers, play_games,
    policy_example, td1_example, value_examples,
};
use crate::search::{
    EngineBuilder, Final, GtCfrConfig, LayoutCache, Pbs, PbsEncoder, ResolverConfig, SearchPolicy,
    SearchPolicyStats, solve_pbs_with_frontier,
};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use crate::util::{SplitMix64, write_atomic};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Columns of `metrics.csv` of a SoG run.
pub const METRICS_HEADER: &[&str] = &[
    "round",
    "seconds",
    "nash_conv",
    "games",
    "searches",
    "frontier_fraction",
    "unsearched",
    "off_policy_actions",
    "queries_generated",
    "queries_solved",
    "queries_dropped",
    "buffer",
    "replay",
    "learner_steps",
    "value_loss",
    "policy_loss",
    "eval_frontier_fraction",
    "first_searches",
    "first_searches_with_frontier",
    "recursive_queries",
];

/// The directory of the CVPN inside a checkpoint generation.
pub const CVPN_DIR: &str = "cvpn";
const STATE_FILE: &str = "state.json";
const BUFFERS_FILE: &str = "buffers.bin";
/// Games with more histories than this are refused (the search layouts and the exact
/// evaluation need the whole tree).
const MAX_HISTORIES: usize = 1_000_000;

/// Counters of a run, saved with every checkpoint (counters a checkpoint lacks read as 0).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
struct SogState {
    round: u64,
    games: u64,
    decisions: u64,
    searches: u64,
    searches_with_frontier: u64,
    first_searches: u64,
    first_searches_with_frontier: u64,
    unsearched: u64,
    off_policy_actions: u64,
    queries_generated: u64,
    queries_solved: u64,
    recursive_queries: u64,
    learner_steps: u64,
    elapsed_seconds: f64,
}

/// The compiled game and what search needs of it.
/// Search layouts a run keeps (one per public node searched from; Leduc has fewer nodes).
const LAYOUT_CACHE: usize = 4096;

struct Compiled {
    game: GameRef,
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    /// Search layouts by public root node, shared by every self-play chain of the run.
    layouts: Arc<LayoutCache>,
}

fn compile(name: &str) -> Result<Compiled, RunError> {
    let game = load_game(name)?;
    crate::search::check_supported(game.as_ref())
        .map_err(RunError::context("the game of a Student of Games run"))?;
    let tree = Arc::new(PublicTree::build_with_limit(game.as_ref(), MAX_HISTORIES)?);
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree)?);
    // The whole game's search layout: games it refuses (hidden actions, as in II-Goofspiel)
    // are refused here with the layout's reason, before anything else looks at them.
    crate::tree::tensor::TensorTree::build(&tree, &ht, 0, None)
        .map_err(RunError::context("the game's search layout"))?;
    Ok(Compiled {
        game,
        tree,
        ht,
        layouts: Arc::new(LayoutCache::new(LAYOUT_CACHE)),
    })
}

fn encoder(c: &Compiled) -> Result<PbsEncoder, RunError> {
    PbsEncoder::new(c.game.clone(), c.tree.clone(), c.ht.clone())
        .map_err(RunError::context("the game's CVPN input"))
}

fn net_config(c: &Compiled, enc: &PbsEncoder, s: &SogSettings) -> CvpnConfig {
    CvpnConfig {
        game: c.game.load_string(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: c.game.num_distinct_actions(),
        hidden: s.hidden,
        layers: s.layers,
    }
}

/// The search settings of self-play and evaluation.
pub fn resolver_config(s: &SogSettings, simulations: usize) -> ResolverConfig {
    ResolverConfig {
        search: GtCfrConfig {
            simulations,
            expansions_per_update: s.c,
            puct: s.puct,
            final_policy: if s.final_average {
                Final::Average
            } else {
                Final::Current
            },
            spec: SolverSpec::named("cfr+").expect("cfr+ is a known algorithm"),
            seed: s.seed,
            policy_prior: s.policy_prior,
            top_k: s.top_k,
            engine: engine_builder(s),
        },
        alpha: s.alpha,
        ..ResolverConfig::default()
    }
}

/// The regret engine of `sog.search.engine`: `None` for the scalar one, a
/// [`TensorEngineBuilder`] on `sog.search.device` for `tensor` (`f64` on the flex CPU backend,
/// `f32` on wgpu and cuda, whose shaders have no `f64`).
pub fn engine_builder(s: &SogSettings) -> Option<Arc<dyn EngineBuilder>> {
    if s.search_engine != "tensor" {
        return None;
    }
    let device = crate::nn::select_device(&s.search_device)
        .expect("Config::sog checked that sog.search.device is available");
    let cpu = match s.search_device.as_str() {
        "cpu" | "flex" => true,
        "default" => crate::nn::compiled_backends().first() == Some(&"flex"),
        _ => false,
    };
    let precision = if cpu { Precision::F64 } else { Precision::F32 };
    Some(Arc::new(TensorEngineBuilder::new(Ctx::new(
        &device, precision,
    ))))
}

fn round_seed(seed: u64, round: u64) -> u64 {
    SplitMix64::new(seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x50C0_5E1F_0000_0001)
        .next_u64()
}

/// Exact NashConv of the whole-game search policy with `net` at the frontier, and what the
/// walk did.
fn search_nash_conv(
    c: &Compiled,
    resolver: &ResolverConfig,
    net: &Cvpn,
    enc: &mut PbsEncoder,
    zero_sum: bool,
) -> Result<(f64, SearchPolicyStats), RunError> {
    let mut leaves = CvpnLeaves::new(net, enc).with_zero_sum(zero_sum);
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), resolver, &mut leaves)
        .map_err(RunError::context("evaluating the search policy"))?;
    Ok((sp.nash_conv().nash_conv, sp.stats().clone()))
}

fn save_checkpoint(
    dir: &Path,
    net: &Cvpn,
    st: &SogState,
    config: &Config,
    queries: &QueryBuffer,
    replay: &ExampleReplay,
) -> Result<(), RunError> {
    let ctx = || RunError::context("writing a checkpoint");
    let mut generation = GenerationWriter::begin(dir, st.round).map_err(ctx())?;
    net.save(&generation.dir().join(CVPN_DIR))
        .map_err(RunError::context("saving the CVPN"))?;
    generation.record(CVPN_DIR).map_err(ctx())?;
    generation
        .add(
            STATE_FILE,
            serde_json::to_string_pretty(st)
                .expect("state serialises")
                .as_bytes(),
        )
        .map_err(ctx())?;
    generation
        .add("config.toml", config.to_toml().as_bytes())
        .map_err(ctx())?;
    generation
        .add(BUFFERS_FILE, &encode_buffers(queries, replay))
        .map_err(ctx())?;
    generation
        .commit()
        .map_err(RunError::context("committing a checkpoint"))?;
    Ok(())
}

/// What one round did (for metrics).
#[derive(Default)]
struct RoundStats {
    decisions: u64,
    first_searches: u64,
    first_searches_with_frontier: u64,
    td1_examples: u64,
    /// Sum over games of (learner steps − the version of the weights the game was played with).
    weight_lag: u64,
    games: u64,
    searches: u64,
    searches_with_frontier: u64,
    unsearched: u64,
    off_policy: u64,
    generated: u64,
    solved: u64,
    recursive: u64,
    value_loss: f64,
    policy_loss: f64,
}

/// Runs (or resumes) a Student of Games run in `dir`.
pub fn run(
    config: &Config,
    s: &SogSettings,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&super::Resumed>,
) -> Result<RunSummary, RunError> {
    if load_game(&s.game)?.short_name() == "universal_poker" {
        return super::holdem_sog::train(config, s, dir, opts, resumed);
    }
    let c = compile(&s.game)?;
    let mut leaf_enc = encoder(&c)?;
    let mut ex_enc = encoder(&c)?;
    let (p, a) = (leaf_enc.private_states(), c.game.num_distinct_actions());
    let device = crate::nn::select_device(&s.device).map_err(RunError::context("sog.device"))?;
    let net_cfg = net_config(&c, &leaf_enc, s);
    let metrics_path = dir.join("metrics.csv");
    let play_cfg = SelfPlayConfig {
        resolver: resolver_config(s, s.simulations),
        epsilon: s.epsilon,
        queries_per_search: s.queries_per_search,
    };
    let eval_resolver = resolver_config(s, s.simulations);
    let solver_cfg = resolver_config(s, s.solver_simulations).search;

    let (mut net, mut st, mut queries, mut replay, mut metrics) = if let Some(r) = resumed {
        let g = &r.generation;
        let net = Cvpn::load(&g.dir.join(CVPN_DIR), &net_cfg, &device, s.learning_rate)
            .map_err(RunError::context("loading the CVPN checkpoint"))?;
        let st: SogState =
            read_checkpoint_file(&g.dir.join(STATE_FILE), "checkpoint state", |b| {
                serde_json::from_slice(b)
            })?;
        let (queries, replay) = read_checkpoint_file(
            &g.dir.join(BUFFERS_FILE),
            "checkpoint buffers",
            decode_buffers,
        )?;
        // Everything loaded and verified: only now does the run directory change.
        let (metrics, _) =
            super::resume::commit_resume(dir, g, config, &r.changed, METRICS_HEADER)?;
        (net, st, queries, replay, metrics)
    } else {
        write_atomic(&dir.join("config.toml"), config.to_toml().as_bytes())
            .map_err(io_err("config", dir))?;
        let net = Cvpn::new(net_cfg.clone(), &device, s.learning_rate, s.seed)
            .map_err(RunError::context("creating the CVPN"))?;
        let metrics = MetricsCsv::create(&metrics_path, METRICS_HEADER)
            .map_err(io_err("metrics", &metrics_path))?;
        (
            net,
            SogState::default(),
            QueryBuffer::new(s.buffer),
            ExampleReplay::new(s.replay),
            metrics,
        )
    };
    // Capacities follow the config (a resume cannot change them, see `resume::SAFE_KEYS`).
    queries.capacity = s.buffer;
    replay.capacity = s.replay;
    let mut tb = TbWriter::create(dir).map_err(io_err("TensorBoard events", dir))?;
    let na = |x: f64| format!("{x:.6e}");
    let mut last_nash_conv = f64::NAN;
    let mut last_eval_round = None;
    if resumed.is_none() {
        // Round 0: the initial network, and a checkpoint so that a stop in round 1 resumes.
        let mut row = vec![String::new(); METRICS_HEADER.len()];
        row[0] = "0".into();
        row[1] = "0.000".into();
        row[2] = na(f64::NAN);
        row[16] = na(f64::NAN);
        if s.exact_eval {
            let (nc, stats) =
                search_nash_conv(&c, &eval_resolver, &net, &mut leaf_enc, s.zero_sum)?;
            tb.scalar("nash_conv", nc, 0);
            row[2] = na(nc);
            row[16] = na(frontier_fraction(&stats));
            last_nash_conv = nc;
            last_eval_round = Some(0);
        }
        for v in row.iter_mut().skip(3).filter(|v| v.is_empty()) {
            *v = "0".into();
        }
        metrics
            .row(&row)
            .map_err(io_err("metrics", &metrics_path))?;
        tb.flush();
        save_checkpoint(dir, &net, &st, config, &queries, &replay)?;
    }

    let interrupted = crate::run::interrupt_flag();
    let deadline = Deadline::of(opts);
    let bar = super::progress_bar(s.rounds, "rounds");
    if opts.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_position(st.round);
    let elapsed_before = st.elapsed_seconds;
    let first_round = st.round;
    let mut last_ckpt = Instant::now();
    let mut stopped_early = false;
    while st.round < s.rounds {
        if deadline.expired() || interrupted.load(Ordering::Relaxed) {
            stopped_early = true;
            break;
        }
        let round = st.round + 1;
        let ctx = RoundCtx {
            c: &c,
            s,
            play_cfg: &play_cfg,
            solver_cfg: &solver_cfg,
            round,
            p,
            a,
        };
        let out = if s.actors == 0 {
            sequential_round(
                &ctx,
                &mut net,
                &mut queries,
                &mut replay,
                &mut leaf_enc,
                &mut ex_enc,
            )?
        } else {
            threaded_round(&ctx, &mut net, &mut queries, &mut replay)?
        };
        let RoundOut {
            rs,
            steps,
            play_secs,
            solve_secs,
            learn_secs,
        } = out;
        st.decisions += rs.decisions;
        st.first_searches += rs.first_searches;
        st.first_searches_with_frontier += rs.first_searches_with_frontier;
        st.round = round;
        st.games += rs.games;
        st.searches += rs.searches;
        st.searches_with_frontier += rs.searches_with_frontier;
        st.unsearched += rs.unsearched;
        st.off_policy_actions += rs.off_policy;
        st.queries_generated += rs.generated;
        st.queries_solved += rs.solved;
        st.recursive_queries += rs.recursive;
        st.learner_steps += steps as u64;
        bar.inc(1);
        let seconds = elapsed_before + deadline.elapsed();
        let it = round;
        let fraction = rs.searches_with_frontier as f64 / rs.searches.max(1) as f64;
        tb.scalar("loss/value", rs.value_loss, it);
        tb.scalar("loss/policy", rs.policy_loss, it);
        tb.scalar("selfplay/frontier_fraction", fraction, it);
        tb.scalar("selfplay/unsearched", rs.unsearched as f64, it);
        tb.scalar("selfplay/off_policy_actions", rs.off_policy as f64, it);
        tb.scalar("queries/generated", rs.generated as f64, it);
        tb.scalar("queries/solved", rs.solved as f64, it);
        tb.scalar("queries/recursive", rs.recursive as f64, it);
        tb.scalar("selfplay/td1_examples", rs.td1_examples as f64, it);
        if s.actors > 0 {
            tb.scalar(
                "selfplay/weight_lag",
                rs.weight_lag as f64 / rs.games.max(1) as f64,
                it,
            );
        }
        tb.scalar("queries/buffer", queries.items.len() as f64, it);
        tb.scalar("queries/dropped", queries.dropped as f64, it);
        tb.scalar("replay", replay.items.len() as f64, it);
        tb.scalar(
            "searches_per_second",
            rs.searches as f64 / play_secs.max(1e-9),
            it,
        );
        tb.scalar(
            "queries_solved_per_second",
            rs.solved as f64 / solve_secs.max(1e-9),
            it,
        );
        tb.scalar(
            "learner_steps_per_second",
            steps as f64 / learn_secs.max(1e-9),
            it,
        );
        let mut nc = f64::NAN;
        let mut eval_fraction = f64::NAN;
        if s.exact_eval && (it % s.eval_every == 0 || it == s.rounds) {
            let (v, stats) = search_nash_conv(&c, &eval_resolver, &net, &mut leaf_enc, s.zero_sum)?;
            nc = v;
            eval_fraction = frontier_fraction(&stats);
            last_nash_conv = v;
            last_eval_round = Some(it);
            tb.scalar("nash_conv", v, it);
            tb.scalar("eval/frontier_fraction", eval_fraction, it);
            bar.set_message(format!("search NashConv {v:.4}"));
        }
        tb.flush();
        metrics
            .row(&[
                it.to_string(),
                format!("{seconds:.3}"),
                na(nc),
                st.games.to_string(),
                st.searches.to_string(),
                format!("{fraction:.6}"),
                st.unsearched.to_string(),
                st.off_policy_actions.to_string(),
                st.queries_generated.to_string(),
                st.queries_solved.to_string(),
                queries.dropped.to_string(),
                queries.items.len().to_string(),
                replay.items.len().to_string(),
                st.learner_steps.to_string(),
                na(rs.value_loss),
                na(rs.policy_loss),
                na(eval_fraction),
                st.first_searches.to_string(),
                st.first_searches_with_frontier.to_string(),
                st.recursive_queries.to_string(),
            ])
            .map_err(io_err("metrics", &metrics_path))?;
        if it == first_round + 1
            || it % s.checkpoint_every == 0
            || last_ckpt.elapsed().as_secs_f64() >= s.checkpoint_seconds
        {
            st.elapsed_seconds = seconds;
            save_checkpoint(dir, &net, &st, config, &queries, &replay)?;
            last_ckpt = Instant::now();
        }
    }
    bar.finish_and_clear();
    let seconds = elapsed_before + deadline.elapsed();
    st.elapsed_seconds = seconds;
    save_checkpoint(dir, &net, &st, config, &queries, &replay)?;
    if s.exact_eval && last_eval_round != Some(st.round) {
        last_nash_conv = search_nash_conv(&c, &eval_resolver, &net, &mut leaf_enc, s.zero_sum)?.0;
    }
    let summary = RunSummary {
        run_dir: dir.to_path_buf(),
        game: c.game.load_string(),
        algorithm: "sog".into(),
        iterations: st.round,
        nash_conv: last_nash_conv,
        seconds,
        stopped_early,
        acting_steps_per_second: None,
        peak_memory_mb: crate::util::peak_memory_mb(),
        cpu_seconds: Some(deadline.cpu_seconds()),
    };
    write_atomic(
        &dir.join("summary.json"),
        serde_json::to_string_pretty(&summary)
            .expect("summary serialises")
            .as_bytes(),
    )
    .map_err(io_err("summary", dir))?;
    Ok(summary)
}

/// What a round needs besides the mutable run state.
struct RoundCtx<'a> {
    c: &'a Compiled,
    s: &'a SogSettings,
    play_cfg: &'a SelfPlayConfig,
    solver_cfg: &'a GtCfrConfig,
    round: u64,
    /// The network's private states and actions.
    p: usize,
    a: usize,
}

/// A round's tallies and the wall time of its phases.
struct RoundOut {
    rs: RoundStats,
    steps: usize,
    play_secs: f64,
    solve_secs: f64,
    learn_secs: f64,
}

/// Adds one self-play game's counts to `rs`.
fn tally_game(rs: &mut RoundStats, g: &crate::rl::sog::GameRecord) {
    rs.games += 1;
    rs.decisions += g.decisions as u64;
    rs.searches += g.searches as u64;
    rs.searches_with_frontier += g.searches_with_frontier as u64;
    rs.first_searches += g.first_searches as u64;
    rs.first_searches_with_frontier += g.first_searches_with_frontier as u64;
    rs.unsearched += g.unsearched as u64;
    rs.off_policy += g.off_policy_actions as u64;
    rs.generated += g.queries.len() as u64;
}

/// The policy examples (and TD(1) value examples, weight `td1`) of a self-play game.
fn game_examples(
    enc: &mut PbsEncoder,
    g: &crate::rl::sog::GameRecord,
    a: usize,
    td1: f64,
) -> Result<(Vec<crate::rl::sog::Example>, u64), RunError> {
    let mut out = Vec::with_capacity(2 * g.policy_targets.len());
    let mut n_td1 = 0;
    for t in &g.policy_targets {
        out.push(policy_example(enc, t, a).map_err(RunError::context("encoding a policy target"))?);
        if let Some(e) = td1_example(enc, t, g.return0, td1)
            .map_err(RunError::context("encoding a TD(1) target"))?
        {
            out.push(e);
            n_td1 += 1;
        }
    }
    Ok((out, n_td1))
}

/// One round of the sequential schedule (`actors = 0`): self-play, then solving, then
/// learning, all with the weights of the round's start except the learner's own steps;
/// deterministic given `(seed, round)` and the state at the round's start.
fn sequential_round(
    ctx: &RoundCtx,
    net: &mut Cvpn,
    queries: &mut QueryBuffer,
    replay: &mut ExampleReplay,
    leaf_enc: &mut PbsEncoder,
    ex_enc: &mut PbsEncoder,
) -> Result<RoundOut, RunError> {
    let (c, s, round) = (ctx.c, ctx.s, ctx.round);
    let mut rng = SplitMix64::new(round_seed(s.seed, round));
    let mut rs = RoundStats::default();
    let t_play = Instant::now();
    // 1. Self-play with the current network.
    {
        let mut leaves = CvpnLeaves::new(&*net, leaf_enc).with_zero_sum(s.zero_sum);
        let seeds: Vec<u64> = (0..s.games_per_round).map(|_| rng.next_u64()).collect();
        let mut games = Vec::with_capacity(seeds.len());
        for group in seeds.chunks(s.search_batch.max(1)) {
            games.extend(
                play_games(&c.tree, &c.ht, ctx.play_cfg, group, &c.layouts, &mut leaves)
                    .map_err(RunError::context(format!("self-play in round {round}")))?,
            );
        }
        for g in games {
            tally_game(&mut rs, &g);
            let (examples, n_td1) = game_examples(ex_enc, &g, ctx.a, s.td1)?;
            rs.td1_examples += n_td1;
            for q in g.queries {
                queries.push(q);
            }
            for e in examples {
                replay.push(e);
            }
        }
    }
    let play_secs = t_play.elapsed().as_secs_f64();
    // 2. Re-solve the oldest queries (and random ones) with the current network.
    let t_solve = Instant::now();
    let mut batch = queries.take(s.solves_per_round);
    batch.extend(ex_enc.random_queries(&mut rng, s.random_queries));
    if !batch.is_empty() {
        let mut answers = Vec::with_capacity(batch.len());
        let mut recursive = Vec::new();
        {
            let mut inner = CvpnLeaves::new(&*net, leaf_enc).with_zero_sum(s.zero_sum);
            for q in &batch {
                let (v, frontier) =
                    solve_pbs_with_frontier(&c.tree, &c.ht, q, ctx.solver_cfg, &mut inner)
                        .map_err(RunError::context(format!(
                            "solving queries in round {round}"
                        )))?;
                answers.push(v);
                if s.p_rec > 0.0 {
                    recursive.extend(frontier.into_iter().filter(|_| rng.next_f64() < s.p_rec));
                }
            }
        }
        for e in value_examples(ex_enc, &batch, &answers)
            .map_err(RunError::context("encoding value targets"))?
        {
            replay.push(e);
        }
        rs.solved = batch.len() as u64;
        rs.recursive = recursive.len() as u64;
        for q in recursive {
            queries.push(q);
        }
    }
    let solve_secs = t_solve.elapsed().as_secs_f64();
    // 3. Learner steps.
    let t_learn = Instant::now();
    let mut steps = 0;
    for _ in 0..s.steps_per_round {
        let b = replay.sample(&mut rng, s.batch, ctx.p, ctx.a);
        if b.input.is_empty() {
            break;
        }
        let l = net
            .train_step(&b)
            .map_err(RunError::context("a learner step"))?;
        rs.value_loss += l.value;
        rs.policy_loss += l.policy;
        steps += 1;
    }
    rs.value_loss /= steps.max(1) as f64;
    rs.policy_loss /= steps.max(1) as f64;
    Ok(RoundOut {
        rs,
        steps,
        play_secs,
        solve_secs,
        learn_secs: t_learn.elapsed().as_secs_f64(),
    })
}

/// The queries shared by actors and solvers in a threaded round.
struct SharedQueries {
    buffer: QueryBuffer,
    /// Random queries of the round, solved first and outside the quota.
    extra: Vec<Pbs>,
    /// Buffer queries claimed by solvers this round (quota `solves_per_round`).
    claimed: usize,
}

/// What a generator thread sends the learner.
struct Produced {
    examples: Vec<crate::rl::sog::Example>,
}

/// One round with threads (`actors ≥ 1`): `actors` threads play the round's
/// `games_per_round` games and `solvers` threads re-solve up to `solves_per_round` queries
/// (oldest first, as they arrive, plus the round's random queries) while the calling thread
/// takes the round's `steps_per_round` learner steps. The learner is paced by the generators:
/// its `k`-th step waits until both the games played and the queries solved reach `k/K` of
/// their quotas (or the generators are done), so the per-round ratio of learner steps to
/// games and solves is that of the sequential schedule at every moment. It broadcasts its
/// weights ([`Cvpn::snapshot`], versioned by its step count) at the round's start and every
/// `sync_every` steps; each game and each solve takes the newest weights when it starts.
/// Game seeds depend on `(seed, round, game index)` only, but which weights a game or solve
/// sees, and the order in which queries and examples arrive, depend on thread timing: runs
/// with threads are not reproducible bit for bit. At the round's end every thread has
/// finished, so checkpoints hold a consistent state.
fn threaded_round(
    ctx: &RoundCtx,
    net: &mut Cvpn,
    queries: &mut QueryBuffer,
    replay: &mut ExampleReplay,
) -> Result<RoundOut, RunError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    use std::sync::{Mutex, RwLock};
    let (c, s, round) = (ctx.c, ctx.s, ctx.round);
    let base_seed = round_seed(s.seed, round);
    let mut rng = SplitMix64::new(base_seed);
    let extra = {
        let enc = encoder(c)?;
        enc.random_queries(&mut rng, s.random_queries)
    };
    let shared = Mutex::new(SharedQueries {
        buffer: std::mem::take(queries),
        extra,
        claimed: 0,
    });
    let snap = RwLock::new(Arc::new(net.snapshot()));
    let learner_steps = AtomicU64::new(net.steps());
    let games_claimed = AtomicUsize::new(0);
    let games_done = AtomicUsize::new(0);
    let solved = AtomicUsize::new(0);
    let actors_left = AtomicUsize::new(s.actors);
    let solvers_left = AtomicUsize::new(s.solvers);
    let abort = AtomicBool::new(false);
    let failure: Mutex<Option<RunError>> = Mutex::new(None);
    let tally = Mutex::new(RoundStats::default());
    let times = Mutex::new([0.0f64; 2]);
    let (tx, rx) = crossbeam::channel::unbounded::<Produced>();
    let t0 = Instant::now();
    let fail = |e: RunError| {
        abort.store(true, Ordering::Relaxed);
        failure.lock().expect("failure lock").get_or_insert(e);
    };
    let mut steps = 0usize;
    let (mut value_loss, mut policy_loss) = (0.0, 0.0);
    let mut learn_secs = 0.0;
    std::thread::scope(|scope| {
        for actor in 0..s.actors {
            let tx = tx.clone();
            let (shared, snap, tally, times) = (&shared, &snap, &tally, &times);
            let (games_claimed, games_done, actors_left) =
                (&games_claimed, &games_done, &actors_left);
            let (abort, learner_steps, fail) = (&abort, &learner_steps, &fail);
            std::thread::Builder::new()
                .name(format!("sog-actor-{actor}"))
                .spawn_scoped(scope, move || {
                    let work = || -> Result<(), RunError> {
                        let mut enc = encoder(c)?;
                        let mut ex_enc = encoder(c)?;
                        loop {
                            if abort.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            // A group of `search_batch` games, their searches in lock-step.
                            let group = s.search_batch.max(1);
                            let g0 = games_claimed.fetch_add(group, Ordering::SeqCst);
                            if g0 >= s.games_per_round {
                                return Ok(());
                            }
                            let gis = g0..(g0 + group).min(s.games_per_round);
                            let weights = snap.read().expect("weights lock").clone();
                            let lag = learner_steps
                                .load(Ordering::Relaxed)
                                .saturating_sub(weights.version);
                            let seeds: Vec<u64> = gis
                                .map(|gi| {
                                    SplitMix64::new(
                                        base_seed
                                            ^ (gi as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
                                    )
                                    .next_u64()
                                })
                                .collect();
                            let mut leaves =
                                CvpnLeaves::new(&*weights, &mut enc).with_zero_sum(s.zero_sum);
                            let played = play_games(
                                &c.tree,
                                &c.ht,
                                ctx.play_cfg,
                                &seeds,
                                &c.layouts,
                                &mut leaves,
                            )
                            .map_err(RunError::context(format!("self-play in round {round}")))?;
                            for g in played {
                                let (examples, n_td1) =
                                    game_examples(&mut ex_enc, &g, ctx.a, s.td1)?;
                                {
                                    let mut t = tally.lock().expect("tally lock");
                                    tally_game(&mut t, &g);
                                    t.td1_examples += n_td1;
                                    t.weight_lag += lag;
                                }
                                {
                                    let mut sh = shared.lock().expect("query lock");
                                    for q in g.queries {
                                        sh.buffer.push(q);
                                    }
                                }
                                let _ = tx.send(Produced { examples });
                                games_done.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    };
                    if let Err(e) = work() {
                        fail(e);
                    }
                    times.lock().expect("times lock")[0] = t0.elapsed().as_secs_f64();
                    actors_left.fetch_sub(1, Ordering::SeqCst);
                })
                .expect("spawning an actor thread");
        }
        for solver in 0..s.solvers {
            let tx = tx.clone();
            let (shared, snap, tally, times) = (&shared, &snap, &tally, &times);
            let (solved, actors_left, solvers_left) = (&solved, &actors_left, &solvers_left);
            let (abort, fail) = (&abort, &fail);
            std::thread::Builder::new()
                .name(format!("sog-solver-{solver}"))
                .spawn_scoped(scope, move || {
                    let work = || -> Result<(), RunError> {
                        let mut enc = encoder(c)?;
                        let mut ex_enc = encoder(c)?;
                        let mut rng = SplitMix64::new(
                            base_seed ^ (solver as u64 + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25),
                        );
                        loop {
                            if abort.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            let q = {
                                let mut sh = shared.lock().expect("query lock");
                                if let Some(q) = sh.extra.pop() {
                                    Some(q)
                                } else if sh.claimed >= s.solves_per_round {
                                    return Ok(());
                                } else if let Some(q) = sh.buffer.items.pop_front() {
                                    sh.claimed += 1;
                                    Some(q)
                                } else if actors_left.load(Ordering::SeqCst) == 0 {
                                    return Ok(());
                                } else {
                                    None
                                }
                            };
                            let Some(q) = q else {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                                continue;
                            };
                            let weights = snap.read().expect("weights lock").clone();
                            let mut leaves =
                                CvpnLeaves::new(&*weights, &mut enc).with_zero_sum(s.zero_sum);
                            let (v, frontier) = solve_pbs_with_frontier(
                                &c.tree,
                                &c.ht,
                                &q,
                                ctx.solver_cfg,
                                &mut leaves,
                            )
                            .map_err(RunError::context(format!(
                                "solving queries in round {round}"
                            )))?;
                            let examples = value_examples(&mut ex_enc, &[q], &[v])
                                .map_err(RunError::context("encoding value targets"))?;
                            let recursive: Vec<Pbs> = if s.p_rec > 0.0 {
                                frontier
                                    .into_iter()
                                    .filter(|_| rng.next_f64() < s.p_rec)
                                    .collect()
                            } else {
                                Vec::new()
                            };
                            {
                                let mut t = tally.lock().expect("tally lock");
                                t.solved += 1;
                                t.recursive += recursive.len() as u64;
                            }
                            if !recursive.is_empty() {
                                let mut sh = shared.lock().expect("query lock");
                                for q in recursive {
                                    sh.buffer.push(q);
                                }
                            }
                            let _ = tx.send(Produced { examples });
                            solved.fetch_add(1, Ordering::SeqCst);
                        }
                    };
                    if let Err(e) = work() {
                        fail(e);
                    }
                    times.lock().expect("times lock")[1] = t0.elapsed().as_secs_f64();
                    solvers_left.fetch_sub(1, Ordering::SeqCst);
                })
                .expect("spawning a solver thread");
        }
        drop(tx);
        // The learner, on this thread, paced by the generators.
        let t_learn = Instant::now();
        let k_total = s.steps_per_round;
        let (g_total, s_total) = (s.games_per_round.max(1), s.solves_per_round.max(1));
        for k in 1..=k_total {
            loop {
                while let Ok(m) = rx.try_recv() {
                    for e in m.examples {
                        replay.push(e);
                    }
                }
                if abort.load(Ordering::Relaxed) {
                    break;
                }
                let done = actors_left.load(Ordering::SeqCst) == 0
                    && solvers_left.load(Ordering::SeqCst) == 0;
                let g_ok = games_done.load(Ordering::SeqCst) * k_total >= k * g_total;
                let s_ok = solvers_left.load(Ordering::SeqCst) == 0
                    || solved.load(Ordering::SeqCst) * k_total >= k * s_total;
                if done || (g_ok && s_ok) {
                    break;
                }
                if let Ok(m) = rx.recv_timeout(std::time::Duration::from_millis(2)) {
                    for e in m.examples {
                        replay.push(e);
                    }
                }
            }
            if abort.load(Ordering::Relaxed) {
                break;
            }
            let b = replay.sample(&mut rng, s.batch, ctx.p, ctx.a);
            if b.input.is_empty() {
                break;
            }
            match net.train_step(&b) {
                Ok(l) => {
                    value_loss += l.value;
                    policy_loss += l.policy;
                    steps += 1;
                }
                Err(e) => {
                    fail(RunError::context("a learner step")(e));
                    break;
                }
            }
            learner_steps.store(net.steps(), Ordering::Relaxed);
            if steps.is_multiple_of(s.sync_every) {
                *snap.write().expect("weights lock") = Arc::new(net.snapshot());
            }
        }
        learn_secs = t_learn.elapsed().as_secs_f64();
    });
    // Every generator has finished: collect what is left.
    while let Ok(m) = rx.try_recv() {
        for e in m.examples {
            replay.push(e);
        }
    }
    if let Some(e) = failure.into_inner().expect("failure lock") {
        return Err(e);
    }
    let sh = shared.into_inner().expect("query lock");
    *queries = sh.buffer;
    let mut rs = tally.into_inner().expect("tally lock");
    rs.value_loss = value_loss / steps.max(1) as f64;
    rs.policy_loss = policy_loss / steps.max(1) as f64;
    let [play_secs, solve_secs] = times.into_inner().expect("times lock");
    Ok(RoundOut {
        rs,
        steps,
        play_secs,
        solve_secs,
        learn_secs,
    })
}

fn frontier_fraction(stats: &SearchPolicyStats) -> f64 {
    stats.searches_with_frontier as f64 / stats.searches.max(1) as f64
}

/// The result of [`evaluate_run`].
#[derive(Clone, Debug, Serialize)]
pub struct RunSearchEval {
    pub run_dir: PathBuf,
    /// OpenSpiel load string of the run's game.
    pub game: String,
    /// The round of the evaluated checkpoint.
    pub round: u64,
    pub learner_steps: u64,
    pub simulations: usize,
    pub seed: u64,
    pub nash_conv: f64,
    pub best_response_values: [f64; 2],
    pub on_policy_values: [f64; 2],
    /// Frontier queries the CVPN answered and the forward passes it took.
    pub cvpn_queries: u64,
    pub cvpn_forwards: u64,
    pub stats: SearchPolicyStats,
}

/// A loaded SoG run: its validated settings, compiled game, CVPN and committed round.
struct LoadedRun {
    settings: SogSettings,
    compiled: Compiled,
    encoder: PbsEncoder,
    net: Cvpn,
    round: u64,
}

/// Loads the committed checkpoint of the SoG run in `dir`; `game`, when given, must be the
/// run's game. Errors name the culprit: no run, not a SoG run, no CVPN checkpoint, another
/// game, a damaged checkpoint.
fn load_run(dir: &Path, game: Option<&str>) -> Result<LoadedRun, RunError> {
    if !dir.join("config.toml").is_file() {
        return Err(RunError::Usage(format!(
            "{} has no config.toml: not a run directory",
            dir.display()
        )));
    }
    let g = super::generation::Generation::open(dir).map_err(RunError::context(format!(
        "reading the checkpoint of {}",
        dir.display()
    )))?;
    let config = super::resume::generation_config(&g)?;
    if config.sog.is_none() {
        return Err(RunError::Usage(format!(
            "{} is not a Student of Games run (its config has no [sog] section)",
            dir.display()
        )));
    }
    if !g.dir.join(CVPN_DIR).join(CVPN_META_FILE).is_file() {
        return Err(RunError::Usage(format!(
            "{} has no CVPN checkpoint ({} is missing)",
            dir.display(),
            Path::new(CVPN_DIR).join(CVPN_META_FILE).display()
        )));
    }
    let settings = config.sog()?;
    let compiled = compile(&settings.game)?;
    if let Some(name) = game {
        let want = load_game(name)?.load_string();
        if want != compiled.game.load_string() {
            return Err(RunError::Usage(format!(
                "--game {want} does not match the run's game {}",
                compiled.game.load_string()
            )));
        }
    }
    let encoder = encoder(&compiled)?;
    let device =
        crate::nn::select_device(&settings.device).map_err(RunError::context("sog.device"))?;
    let net = Cvpn::load(
        &g.dir.join(CVPN_DIR),
        &net_config(&compiled, &encoder, &settings),
        &device,
        settings.learning_rate,
    )
    .map_err(RunError::context(format!(
        "loading the CVPN of {}",
        dir.display()
    )))?;
    let path = g.dir.join(STATE_FILE);
    let st: SogState =
        serde_json::from_slice(&std::fs::read(&path).map_err(io_err("checkpoint state", &path))?)
            .map_err(|e| RunError::Usage(format!("{}: {e}", path.display())))?;
    Ok(LoadedRun {
        settings,
        compiled,
        encoder,
        net,
        round: st.round,
    })
}

/// The whole-game search policy of the SoG run in `dir` (its committed CVPN at the frontier,
/// the run's search settings, `simulations` overriding `s`), with the run's game: what
/// `sog:DIR` means to `armac-eval nashconv`, `match` and `export-policy`.
pub fn load_search_policy(
    dir: &Path,
    simulations: Option<usize>,
) -> Result<(GameRef, SearchPolicy), RunError> {
    let mut run = load_run(dir, None)?;
    let resolver = resolver_config(
        &run.settings,
        simulations.unwrap_or(run.settings.simulations),
    );
    let mut leaves =
        CvpnLeaves::new(&run.net, &mut run.encoder).with_zero_sum(run.settings.zero_sum);
    let c = &run.compiled;
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), &resolver, &mut leaves)
        .map_err(RunError::context("building the search policy"))?;
    Ok((c.game.clone(), sp))
}

/// Exact NashConv of the search policy with the CVPN of the SoG run in `dir` (its committed
/// checkpoint) at the frontier: the run's search settings, `simulations` overriding `s`.
/// `game`, when given, must be the run's game. Errors name the culprit: no run, no CVPN
/// checkpoint, another game, a damaged checkpoint.
pub fn evaluate_run(
    dir: &Path,
    simulations: Option<usize>,
    game: Option<&str>,
) -> Result<RunSearchEval, RunError> {
    let mut run = load_run(dir, game)?;
    let s = &run.settings;
    let sims = simulations.unwrap_or(s.simulations);
    let resolver = resolver_config(s, sims);
    let c = &run.compiled;
    let zero_sum = s.zero_sum;
    let mut leaves = CvpnLeaves::new(&run.net, &mut run.encoder).with_zero_sum(zero_sum);
    let sp = SearchPolicy::build(c.tree.clone(), c.ht.clone(), &resolver, &mut leaves)
        .map_err(RunError::context("building the search policy"))?;
    let (queries, forwards) = (leaves.queries, leaves.forwards);
    let r = sp.nash_conv();
    Ok(RunSearchEval {
        run_dir: dir.to_path_buf(),
        game: c.game.load_string(),
        round: run.round,
        learner_steps: run.net.steps(),
        simulations: sims,
        seed: s.seed,
        nash_conv: r.nash_conv,
        best_response_values: r.best_response_values,
        on_policy_values: r.on_policy_values,
        cvpn_queries: queries,
        cvpn_forwards: forwards,
        stats: sp.stats().clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::config::apply_override;

    fn base() -> toml::Table {
        "game = \"leduc_poker\"\n[sog]\nrounds = 1\n"
            .parse()
            .unwrap()
    }

    /// `engine = "tensor"` is accepted with the CPU backend (and builds a tensor engine);
    /// a device the tensor engine cannot use names `sog.search.device`.
    #[test]
    fn the_tensor_engine_is_accepted_and_its_device_checked() {
        let mut t = base();
        apply_override(&mut t, "sog.search.engine=\"tensor\"").unwrap();
        let s = Config::from_table(t.clone(), "x").unwrap().sog().unwrap();
        let b = engine_builder(&s).expect("a tensor engine builder");
        assert_eq!(b.name(), "tensor");
        assert!(resolver_config(&s, 5).search.engine.is_some());
        let scalar = Config::from_table(base(), "x").unwrap().sog().unwrap();
        assert!(engine_builder(&scalar).is_none());
        for dev in ["tpu", "gpu"] {
            let mut t = t.clone();
            apply_override(&mut t, &format!("sog.search.device=\"{dev}\"")).unwrap();
            let e = Config::from_table(t, "x")
                .and_then(|c| c.sog())
                .unwrap_err();
            assert!(e.to_string().contains("sog.search.device"), "{dev}: {e}");
        }
    }

    /// Bad values are refused before anything runs, and the error names the key.
    #[test]
    fn bad_sog_values_name_the_key() {
        let s = Config::from_table(base(), "x").unwrap().sog().unwrap();
        assert_eq!((s.simulations, s.solver_simulations), (50, 50));
        assert!(s.final_average);
        for (kv, key) in [
            ("sog.search.s=0", "sog.search.s"),
            ("sog.search.c=0", "sog.search.c"),
            ("sog.search.c=-1", "sog.search.c"),
            ("sog.search.alpha=1.5", "sog.search.alpha"),
            ("sog.search.puct=-1", "sog.search.puct"),
            ("sog.search.final=\"best\"", "sog.search.final"),
            ("sog.selfplay.epsilon=-0.1", "sog.selfplay.epsilon"),
            ("sog.selfplay.epsilon=2", "sog.selfplay.epsilon"),
            ("sog.selfplay.p_rec=1.5", "sog.selfplay.p_rec"),
            ("sog.net.batch=0", "sog.net.batch"),
            ("sog.net.learning_rate=0", "sog.net.learning_rate"),
            (
                "sog.selfplay.queries_per_search=0",
                "sog.selfplay.queries_per_search",
            ),
            ("sog.selfplay.solver_s=0", "sog.selfplay.solver_s"),
            ("sog.device=\"tpu\"", "sog.device"),
            ("sog.search.engine=\"gpu\"", "sog.search.engine"),
            ("sog.search.batch=0", "sog.search.batch"),
            ("sog.search.top_k=0", "sog.search.top_k"),
            ("sog.search.device=\"cuda\"", "sog.search.device"),
            ("sog.selfplay.td1=-0.5", "sog.selfplay.td1"),
            ("sog.selfplay.sync_every=0", "sog.selfplay.sync_every"),
            ("sog.selfplay.actors=1", "sog.selfplay.solvers"),
        ] {
            let mut t = base();
            apply_override(&mut t, kv).unwrap();
            let e = Config::from_table(t, "x")
                .and_then(|c| c.sog())
                .unwrap_err();
            assert!(e.to_string().contains(key), "{kv}: {e}");
        }
        // Unknown keys and wrong types are refused while typing the table.
        for (kv, key) in [
            ("sog.search.simulations=5", "simulations"),
            ("sog.selfplay.p_recursive=0.1", "p_recursive"),
            ("sog.net.hidden=\"wide\"", "hidden"),
        ] {
            let mut t = base();
            apply_override(&mut t, kv).unwrap();
            let e = Config::from_table(t, "x").unwrap_err().to_string();
            assert!(e.contains(key), "{kv}: {e}");
        }
    }
}
