//! The Hold'em Student of Games driver (`[sog]` on a `universal_poker` game): its run
//! directory, checkpoint files, metrics and TensorBoard around the rounds of
//! [`crate::rl::sog::holdem_round`], and the loaders of `sog:DIR` policies
//! ([`HoldemSearchPolicy`]) from model, run and CVPN directories.

use super::driver::{
    CVPN_DIR, PhaseRates, SogRounds, drive, load_net, log_buffers_and_rates, save_generation,
    start_fresh,
};
use crate::games::universal_poker::UniversalPokerGame;
use crate::nn::cvpn::Cvpn;
use crate::rl::sog::SogSettings;
use crate::rl::sog::holdem::{HoldemQueries, decode_queries, encode_queries};
use crate::rl::sog::holdem_policy::HoldemSearchPolicy;
use crate::rl::sog::holdem_round::{HoldemGame, HoldemRoundOut, HoldemState, holdem_round};
use crate::rl::sog::settings::holdem_search_config;
use crate::rl::sog::{ExampleReplay, QueryBuffer, decode_buffers, encode_buffers};
use crate::run::config::{Config, ConfigError, SogSearchConfig};
use crate::run::metrics::{Column, MetricsRow, sci};
use crate::run::tensorboard::TbWriter;
use crate::run::{
    MetricsCsv, Resumed, RunError, RunSummary, TrainOptions, io_err, read_checkpoint_file,
};
use crate::search::holdem::HoldemSearchConfig;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a Hold'em `sog:DIR` keeps its files: the CVPN checkpoint directory, and the config
/// it trained with when DIR is a SoG model or run directory (none for a bare CVPN directory).
struct SogSource {
    cvpn: PathBuf,
    config: Option<PathBuf>,
}

/// Resolves `sog:DIR` once: a model directory (every file checked against its manifest), a
/// Hold'em SoG run directory (its committed checkpoint), or a bare CVPN checkpoint directory.
fn resolve_sog_dir(dir: &Path) -> Result<SogSource, RunError> {
    let name = format!("sog:{}", dir.display());
    if !dir.is_dir() {
        return Err(RunError::Usage(format!(
            "{name}: no such directory (expected a CVPN checkpoint directory)"
        )));
    }
    if let Some(cvpn) = crate::run::model::verified_sog_cvpn(dir)? {
        let config = cvpn.parent().map(|c| c.join("config.toml"));
        return Ok(SogSource { cvpn, config });
    }
    if dir.join("config.toml").is_file() && !dir.join(crate::nn::cvpn::CVPN_META_FILE).is_file() {
        let g = crate::run::generation::Generation::open(dir).map_err(RunError::context(
            format!("{name}: reading the run's checkpoint"),
        ))?;
        return Ok(SogSource {
            cvpn: g.dir.join(CVPN_DIR),
            config: Some(g.dir.join("config.toml")),
        });
    }
    Ok(SogSource {
        cvpn: dir.to_path_buf(),
        config: None,
    })
}

/// The `[sog.search]` of the config at `path` (read after the files holding it were
/// verified) as a Hold'em search configuration; the defaults (200 iterations) for none.
fn search_config_of(path: Option<&Path>) -> Result<HoldemSearchConfig, RunError> {
    Ok(match path {
        Some(path) => {
            let text = path.display().to_string();
            let (cfg, _) = crate::run::config::Config::load(&text, &[])?;
            let s = cfg.sog()?;
            holdem_search_config(&s, s.simulations)
        }
        None => HoldemSearchConfig::default(),
    })
}

/// The Hold'em `sog:DIR` policy for `game`, searching as its run trained: the `[sog.search]`
/// of its checkpoint's config (a SoG model or run directory), with `iterations` CFR+
/// iterations per search when given; the defaults (200 iterations) for a bare CVPN directory.
/// DIR's files are resolved and verified once. Errors as [`load_holdem_search_policy`].
pub fn load_trained_holdem_search_policy(
    dir: &Path,
    game: &UniversalPokerGame,
    iterations: Option<usize>,
) -> Result<HoldemSearchPolicy, RunError> {
    let source = resolve_sog_dir(dir)?;
    let mut config = search_config_of(source.config.as_deref())?;
    if let Some(n) = iterations {
        config.iterations = n;
    }
    load_cvpn_search_policy(dir, &source.cvpn, game, config)
}

/// The Hold'em search policy of `spec` = `sog:DIR` for `game` with the search `config`: DIR is
/// a SoG model or run directory, or a CVPN checkpoint directory (what [`Cvpn::save`] writes; a
/// SoG run's `cvpn/` folder). Errors name a missing directory or checkpoint, a network of
/// another game, and one of the wrong sizes.
pub fn load_holdem_search_policy(
    dir: &Path,
    game: &UniversalPokerGame,
    config: HoldemSearchConfig,
) -> Result<HoldemSearchPolicy, RunError> {
    let source = resolve_sog_dir(dir)?;
    load_cvpn_search_policy(dir, &source.cvpn, game, config)
}

/// The search policy over the CVPN checkpoint in `cvpn` (resolved from `sog:DIR`, which names
/// it in errors).
fn load_cvpn_search_policy(
    dir: &Path,
    cvpn: &Path,
    game: &UniversalPokerGame,
    config: HoldemSearchConfig,
) -> Result<HoldemSearchPolicy, RunError> {
    let name = format!("sog:{}", dir.display());
    let cfg = Cvpn::recorded_config(cvpn)
        .map_err(|e| RunError::Usage(format!("{name}: not a CVPN checkpoint: {e}")))?;
    let want = &game.config().load_string;
    if &cfg.game != want {
        return Err(RunError::Usage(format!(
            "{name}: the CVPN was trained on {}, not on {want}",
            cfg.game
        )));
    }
    let device = crate::nn::select_device("flex").map_err(|e| RunError::Usage(e.to_string()))?;
    let net = Cvpn::load(cvpn, &cfg, &device, 1e-3)
        .map_err(|e| RunError::Usage(format!("{name}: {e}")))?;
    let game = UniversalPokerGame::from_string(want)?;
    Ok(HoldemSearchPolicy::new(
        game,
        Arc::new(net.snapshot()),
        config,
        name,
    )?)
}

/// One row of a Hold'em SoG run's `metrics.csv`: the run's counters after round `round`, the
/// buffers' sizes, the round's mean value loss and player 0's mean return in its games.
struct HoldemRow {
    round: u64,
    seconds: f64,
    st: HoldemState,
    dropped: u64,
    buffer: usize,
    replay: usize,
    value_loss: f64,
    mean_return0: f64,
}

impl MetricsRow for HoldemRow {
    const COLUMNS: &'static [Column<Self>] = &[
        Column::new("round", |r| r.round.to_string()),
        Column::new("seconds", |r| format!("{:.3}", r.seconds)),
        Column::new("games", |r| r.st.games.to_string()),
        Column::new("decisions", |r| r.st.decisions.to_string()),
        Column::new("searches", |r| r.st.searches.to_string()),
        Column::new("unsearched", |r| r.st.unsearched.to_string()),
        Column::new("off_policy_actions", |r| {
            r.st.off_policy_actions.to_string()
        }),
        Column::new("queries_generated", |r| r.st.queries_generated.to_string()),
        Column::new("queries_skipped", |r| r.st.queries_skipped.to_string()),
        Column::new("queries_solved", |r| r.st.queries_solved.to_string()),
        Column::new("queries_dropped", |r| r.dropped.to_string()),
        Column::new("buffer", |r| r.buffer.to_string()),
        Column::new("replay", |r| r.replay.to_string()),
        Column::new("learner_steps", |r| r.st.learner_steps.to_string()),
        Column::new("value_loss", |r| sci(r.value_loss)),
        Column::new("mean_return0", |r| sci(r.mean_return0)),
    ];
}

const HOLDEM_STATE_FILE: &str = "state.json";
const HOLDEM_QUERIES_FILE: &str = "queries.bin";
const HOLDEM_REPLAY_FILE: &str = "replay.bin";

/// Refuses the `[sog]` settings that have no meaning for Hold'em search (continual
/// re-solving with CFR+ on whole betting rounds, sequential rounds), naming the key.
pub fn check_settings(s: &SogSettings) -> Result<(), RunError> {
    let d = SogSearchConfig::default();
    let why = |key: &str, reason: &str| -> Result<(), RunError> {
        Err(ConfigError::Value {
            key: format!("sog.{key}"),
            reason: format!("does not apply to Hold'em (universal_poker): {reason}"),
        }
        .into())
    };
    let no_growth = "the Hold'em search solves the whole betting round (no GT-CFR growth)";
    if s.search_engine != "scalar" {
        return why(
            "search.engine",
            "the Hold'em search (search::holdem) runs on the scalar engine only; set \
             engine = \"scalar\"",
        );
    }
    if s.exact_eval {
        return why(
            "exact_eval",
            "there is no exact evaluation of a Hold'em search policy; set exact_eval = false \
             (use `armac-eval match` or `lbr` with sog:DIR)",
        );
    }
    if s.c != d.c {
        return why("search.c", no_growth);
    }
    if s.puct != d.puct {
        return why("search.puct", no_growth);
    }
    if s.policy_prior {
        return why("search.policy_prior", no_growth);
    }
    if s.top_k.is_some() {
        return why("search.top_k", no_growth);
    }
    if !s.final_average {
        return why(
            "search.final",
            "Hold'em searches act with the average policy of their CFR+ iterations",
        );
    }
    if s.search_batch != 1 {
        return why(
            "search.batch",
            "Hold'em self-play plays its games one by one",
        );
    }
    if s.zero_sum {
        return why(
            "net.zero_sum",
            "not implemented for the factored poker leaves",
        );
    }
    if s.random_queries != 0 {
        return why(
            "selfplay.random_queries",
            "only self-play queries are generated on Hold'em",
        );
    }
    if s.p_rec != 0.0 {
        return why(
            "selfplay.p_rec",
            "recursive queries are not implemented on Hold'em",
        );
    }
    if s.td1 != 0.0 {
        return why(
            "selfplay.td1",
            "TD(1) targets are not implemented on Hold'em",
        );
    }
    if s.actors != 0 || s.solvers != 0 {
        return why(
            if s.actors != 0 {
                "selfplay.actors"
            } else {
                "selfplay.solvers"
            },
            "the Hold'em trainer is sequential (no threads)",
        );
    }
    holdem_search_config(s, s.simulations)
        .validate()
        .map_err(|e| RunError::Usage(format!("sog.search: {e}")))
}

/// Runs (or resumes) a Student of Games run on a `universal_poker` game in `dir` (see
/// `docs/student-of-games.md`): rounds of self-play with continual re-solving
/// (the current CVPN at every depth limit), re-solves of the oldest queries as value
/// targets ([`crate::rl::sog::holdem_round`]), and learner steps on a FIFO replay. Sequential and
/// deterministic for a seed: each round and game draws from streams seeded by
/// `(seed, round, game)`, and checkpoints are taken at round boundaries.
pub fn train(
    config: &Config,
    s: &SogSettings,
    dir: &Path,
    opts: &TrainOptions,
    resumed: Option<&Resumed>,
) -> Result<RunSummary, RunError> {
    check_settings(s)?;
    let mut r = HoldemRun::open(config, s, dir, resumed)?;
    if resumed.is_none() {
        r.checkpoint()?;
    }
    let game = r.g.load_string.clone();
    drive(&mut r, s, dir, game, opts)
}

/// The state of a Hold'em SoG run between rounds.
struct HoldemRun<'a> {
    config: &'a Config,
    dir: &'a Path,
    g: HoldemGame<'a>,
    net: Cvpn,
    st: HoldemState,
    queries: HoldemQueries,
    replay: ExampleReplay,
    metrics: MetricsCsv,
    metrics_path: PathBuf,
    tb: TbWriter,
}

impl<'a> HoldemRun<'a> {
    /// Builds the game's first betting round and creates (or loads from `resumed`) the
    /// network, counters and buffers of the run in `dir`.
    fn open(
        config: &'a Config,
        s: &'a SogSettings,
        dir: &'a Path,
        resumed: Option<&Resumed>,
    ) -> Result<Self, RunError> {
        let g = HoldemGame::new(s)?;
        let device =
            crate::nn::select_device(&s.device).map_err(RunError::context("sog.device"))?;
        let metrics_path = dir.join("metrics.csv");
        let (net, st, mut queries, mut replay, metrics) = if let Some(r) = resumed {
            let gen_ = &r.generation;
            let net = load_net(&gen_.dir, &g.net_cfg, &device, s)?;
            let st: HoldemState =
                read_checkpoint_file(&gen_.dir.join(HOLDEM_STATE_FILE), "checkpoint state", |b| {
                    serde_json::from_slice(b)
                })?;
            let queries = read_checkpoint_file(
                &gen_.dir.join(HOLDEM_QUERIES_FILE),
                "checkpoint queries",
                decode_queries,
            )?;
            let (_, replay) = read_checkpoint_file(
                &gen_.dir.join(HOLDEM_REPLAY_FILE),
                "checkpoint replay",
                decode_buffers,
            )?;
            let (metrics, _) = crate::run::resume::commit_resume(
                dir,
                gen_,
                config,
                &r.changed,
                &HoldemRow::header(),
            )?;
            (net, st, queries, replay, metrics)
        } else {
            let (net, metrics) =
                start_fresh(dir, config, &g.net_cfg, &device, s, &HoldemRow::header())?;
            (
                net,
                HoldemState::default(),
                HoldemQueries::new(s.buffer),
                ExampleReplay::new(s.replay),
                metrics,
            )
        };
        queries.capacity = s.buffer.max(1);
        replay.capacity = s.replay.max(1);
        let tb = TbWriter::create(dir).map_err(io_err("TensorBoard events", dir))?;
        Ok(HoldemRun {
            config,
            dir,
            g,
            net,
            st,
            queries,
            replay,
            metrics,
            metrics_path,
            tb,
        })
    }
}

impl SogRounds for HoldemRun<'_> {
    type Out = HoldemRoundOut;

    fn round(&self) -> u64 {
        self.st.round
    }

    fn elapsed_seconds(&self) -> f64 {
        self.st.elapsed_seconds
    }

    fn set_elapsed_seconds(&mut self, seconds: f64) {
        self.st.elapsed_seconds = seconds;
    }

    fn play(
        &mut self,
        round: u64,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<HoldemRoundOut, RunError> {
        Ok(holdem_round(
            &self.g,
            round,
            &mut self.net,
            &mut self.st,
            &mut self.queries,
            &mut self.replay,
            stop,
        )?)
    }

    fn record(
        &mut self,
        it: u64,
        o: HoldemRoundOut,
        seconds: f64,
        bar: &indicatif::ProgressBar,
    ) -> Result<(), RunError> {
        bar.set_message(format!("value loss {:.4}", o.value_loss));
        let (st, tb) = (&self.st, &mut self.tb);
        tb.scalar("loss/value", o.value_loss, it);
        tb.scalar("selfplay/games", st.games as f64, it);
        tb.scalar("selfplay/searches", st.searches as f64, it);
        tb.scalar("selfplay/unsearched", o.unsearched as f64, it);
        tb.scalar("selfplay/off_policy_actions", o.off as f64, it);
        tb.scalar("queries/generated", o.generated as f64, it);
        tb.scalar("queries/solved", st.queries_solved as f64, it);
        let sizes = [
            self.queries.items.len() as f64,
            self.queries.dropped as f64,
            self.replay.items.len() as f64,
        ];
        let rates = PhaseRates {
            searches: o.searches,
            solved: o.solved,
            steps: o.steps,
            play_secs: o.play_secs,
            solve_secs: o.solve_secs,
            learn_secs: o.learn_secs,
        };
        log_buffers_and_rates(tb, it, sizes, &rates);
        tb.scalar(
            "rounds_per_second",
            1.0 / o.t_round.elapsed().as_secs_f64().max(1e-9),
            it,
        );
        tb.flush();
        self.metrics
            .write(&HoldemRow {
                round: it,
                seconds,
                st: st.clone(),
                dropped: self.queries.dropped,
                buffer: self.queries.items.len(),
                replay: self.replay.items.len(),
                value_loss: o.value_loss,
                mean_return0: o.ret0 / o.games.max(1) as f64,
            })
            .map_err(io_err("metrics", &self.metrics_path))
    }

    fn checkpoint(&mut self) -> Result<(), RunError> {
        let queries = encode_queries(&self.queries);
        let replay = encode_buffers(&QueryBuffer::new(1), &self.replay);
        save_generation(
            self.dir,
            self.st.round,
            &self.net,
            HOLDEM_STATE_FILE,
            &self.st,
            self.config,
            &[
                (HOLDEM_QUERIES_FILE, &queries),
                (HOLDEM_REPLAY_FILE, &replay),
            ],
        )
    }

    fn final_nash_conv(&mut self) -> Result<f64, RunError> {
        Ok(f64::NAN)
    }
}
