//! Student of Games' search on Hold'em as a [`Policy`]: continual re-solving on the factored
//! layout ([`crate::search::holdem`]) with a CVPN checkpoint valuing the depth-limit leaves
//! (`sog:DIR` of `armac-eval` for `universal_poker` games).
//!
//! A re-solving chain is stateful, the [`Policy`] interface is not: the policy therefore
//! rebuilds the chain of the acting player from the public history of the queried state,
//! searching at each of that player's earlier decisions. Every search is deterministic and
//! depends only on public information, so results are cached by (player, public history):
//! the hand's earlier searches are hits, and the same public line in later hands is free.
//! The cache counts the bytes its searches hold (each one's tree, ranges and rows) and is
//! emptied when the next search would take it past its budget
//! ([`HoldemSearchPolicy::with_cache_bytes`], [`DEFAULT_CACHE_BYTES`] by default): a search
//! left out is run again, with the same answer, when it is needed.

use super::{RunError, io_err};
use crate::game::{Player, State, Turn};
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::nn::cvpn::{Cvpn, CvpnForward, CvpnPokerLeaves, CvpnSnapshot};
use crate::nn::public::factored::PokerLeaves;
use crate::policy::{Policy, PolicyError};
use crate::search::holdem::{
    HoldemLeaves, HoldemResolver, HoldemSearchConfig, HoldemSearchError, public_edges, state_at,
};
use crate::search::runout::{RunoutCache, RunoutLeaves};
use crate::tree::poker::{PokerEdge, PokerLayout};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Leaf values of Hold'em search from a CVPN (one [`CvpnPokerLeaves`] per search tree).
#[derive(Clone)]
pub struct CvpnHoldemLeaves {
    net: Arc<CvpnSnapshot>,
    /// Run-outs of the boards met so far; `None`: all-in leaves are the CVPN's too.
    runouts: Option<RunoutCache>,
}

impl CvpnHoldemLeaves {
    /// Leaves valued by `net`, except those where a player is all in: those over
    /// `runout_boards` run-outs of the board ([`RunoutLeaves`]; 0: by `net` too).
    pub fn new(net: Arc<CvpnSnapshot>, runout_boards: usize) -> Self {
        let runouts = (runout_boards > 0).then(|| RunoutCache::new(runout_boards));
        CvpnHoldemLeaves { net, runouts }
    }
}

impl HoldemLeaves for CvpnHoldemLeaves {
    fn leaves_for(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
    ) -> Result<Box<dyn PokerLeaves>, HoldemSearchError> {
        let leaf_err = |e: crate::nn::armac::NnError| HoldemSearchError::Leaf(e.to_string());
        let Some(cache) = self.runouts.as_mut() else {
            let l = CvpnPokerLeaves::new(self.net.clone(), layout, root).map_err(leaf_err)?;
            return Ok(Box::new(l));
        };
        let net = &self.net;
        let leaves = RunoutLeaves::new(layout, root.config(), cache, |others| {
            CvpnPokerLeaves::at_nodes(net.clone(), layout, root, others)
                .map(|l| Box::new(l) as Box<dyn PokerLeaves>)
                .map_err(leaf_err)
        })?;
        Ok(Box::new(leaves))
    }

    fn root_values(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
        ranges: [&[f64]; 2],
    ) -> Result<[Vec<f64>; 2], HoldemSearchError> {
        let mut l = CvpnPokerLeaves::at_nodes(self.net.clone(), layout, root, vec![0])
            .map_err(|e| HoldemSearchError::Leaf(e.to_string()))?;
        Ok(l.evaluate(layout, &[0], ranges))
    }
}

/// One cached search: the chain after it, and its rows.
struct Cached {
    chain: HoldemResolver,
    actions: Vec<crate::game::Action>,
    rows: Vec<Vec<f64>>,
}

impl Cached {
    /// Bytes held by the entry and its key of `key_edges` public edges.
    fn bytes(&self, key_edges: &[PokerEdge]) -> usize {
        use std::mem::size_of;
        let rows: usize = self
            .rows
            .iter()
            .map(|r| size_of::<Vec<f64>>() + r.capacity() * size_of::<f64>())
            .sum();
        let key: usize = key_edges
            .iter()
            .map(|e| size_of::<PokerEdge>() + e.heap_bytes())
            .sum();
        size_of::<Self>()
            + self.chain.heap_bytes()
            + self.actions.capacity() * size_of::<crate::game::Action>()
            + rows
            + key
    }
}

/// The cache's default budget: 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Cached searches by (acting player, public edges of the decision), and the bytes they hold.
#[derive(Default)]
struct SearchCache {
    map: HashMap<(Player, Vec<PokerEdge>), (Arc<Cached>, usize)>,
    bytes: usize,
}

/// The continual re-solving policy of both players (see the module docs).
pub struct HoldemSearchPolicy {
    game: UniversalPokerGame,
    /// Leaf sources of the searches not running now (each running search takes one, or a
    /// clone of `template` when none is free, and puts it back), so searches of several
    /// threads run side by side; each keeps its own boards' run-outs.
    leaves: Mutex<Vec<CvpnHoldemLeaves>>,
    template: CvpnHoldemLeaves,
    config: HoldemSearchConfig,
    /// Layout hand position of each hole index.
    position: HashMap<u32, usize>,
    cache: Mutex<SearchCache>,
    cache_budget: usize,
    name: String,
    searches: std::sync::atomic::AtomicU64,
}

impl HoldemSearchPolicy {
    /// The policy for `game` with `net` at the depth limit; errors name a network of another
    /// game or size, and bad settings.
    pub fn new(
        game: UniversalPokerGame,
        net: Arc<CvpnSnapshot>,
        config: HoldemSearchConfig,
        name: String,
    ) -> Result<Self, RunError> {
        config
            .validate()
            .map_err(|e| RunError::Usage(e.to_string()))?;
        let mut root = game.initial_state();
        let cfg = game.config();
        for o in 0..2 * cfg.num_hole {
            root.try_apply(o)?;
        }
        // The preflop tree without its leaves' values: the hand list and a size check.
        let layout = PokerLayout::from_state_limited(&root, config.max_nodes, true)
            .map_err(|e| RunError::Usage(format!("{name}: {e}")))?;
        let c = net.config();
        if c.game != layout.game {
            return Err(RunError::Usage(format!(
                "{name}: the CVPN was trained on {}, not on {}",
                c.game, layout.game
            )));
        }
        CvpnPokerLeaves::new(net.clone(), &layout, &root)
            .map_err(|e| RunError::Usage(format!("{name}: incompatible CVPN: {e}")))?;
        let position = layout
            .hole_index
            .iter()
            .enumerate()
            .map(|(x, &h)| (h, x))
            .collect();
        Ok(HoldemSearchPolicy {
            game,
            leaves: Mutex::default(),
            template: CvpnHoldemLeaves::new(net, config.runout_boards),
            config,
            position,
            cache: Mutex::default(),
            cache_budget: DEFAULT_CACHE_BYTES,
            name,
            searches: Default::default(),
        })
    }

    /// The policy with a cache of at most `bytes` (0 caches nothing: every query runs its
    /// player's chain of searches from the start of the hand).
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_budget = bytes;
        self
    }

    /// Searches run so far (cache misses).
    pub fn searches(&self) -> u64 {
        self.searches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes the cached searches hold now (at most the budget).
    pub fn cache_bytes(&self) -> usize {
        self.cache.lock().expect("cache lock").bytes
    }

    /// The cached search of `p` at the public state `edges` (run, with the searches at `p`'s
    /// earlier decisions, where missing).
    fn search_at(
        &self,
        p: Player,
        edges: &[PokerEdge],
        template: &UniversalPokerState,
    ) -> Result<Arc<Cached>, HoldemSearchError> {
        let key = (p, edges.to_vec());
        if let Some((c, _)) = self.cache.lock().expect("cache lock").map.get(&key) {
            return Ok(c.clone());
        }
        // The player's previous decision in this hand, if any.
        let mut chain = None;
        for k in (0..edges.len()).rev() {
            let s = state_at(template, &edges[..k])?;
            if s.turn() == Turn::Player(p) {
                chain = Some(self.search_at(p, &edges[..k], template)?.chain.clone());
                break;
            }
        }
        let mut chain = match chain {
            Some(c) => c,
            None => HoldemResolver::new(p, self.config)?,
        };
        let state = state_at(template, edges)?;
        let free = self.leaves.lock().expect("leaves lock").pop();
        let mut leaves = free.unwrap_or_else(|| self.template.clone());
        let dec = chain.act(&state, &mut leaves);
        self.leaves.lock().expect("leaves lock").push(leaves);
        let dec = dec?;
        self.searches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let c = Arc::new(Cached {
            chain,
            actions: dec.actions,
            rows: dec.rows,
        });
        let bytes = c.bytes(edges);
        if bytes <= self.cache_budget {
            let mut cache = self.cache.lock().expect("cache lock");
            if cache.bytes + bytes > self.cache_budget {
                cache.map.clear();
                cache.bytes = 0;
            }
            // Another thread may have cached the same search meanwhile: count it once.
            if let Some((_, old)) = cache.map.insert(key, (c.clone(), bytes)) {
                cache.bytes -= old;
            }
            cache.bytes += bytes;
        }
        Ok(c)
    }
}

impl Policy for HoldemSearchPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let fail = |reason: String| PolicyError::Failed {
            policy: self.name.clone(),
            reason,
        };
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let mut s = self.game.initial_state();
        for &a in state.history() {
            s.try_apply(a).map_err(|e| {
                fail(format!(
                    "replaying the state in {}: {e}",
                    self.game.config().load_string
                ))
            })?;
        }
        let edges = public_edges(&s).map_err(|e| fail(e.to_string()))?;
        let c = self
            .search_at(p, &edges, &s)
            .map_err(|e| fail(e.to_string()))?;
        let legal = s.legal_actions();
        if legal != c.actions {
            return Err(fail(format!(
                "the search's actions {:?} differ from the legal actions {legal:?}",
                c.actions
            )));
        }
        let x = *self
            .position
            .get(&(s.private_state(p) as u32))
            .ok_or_else(|| fail("the player's hand is not in the layout".into()))?;
        Ok(c.rows[x].clone())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

impl crate::eval::lbr::RangePolicy for HoldemSearchPolicy {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<crate::eval::lbr::ActionProbs>, PolicyError> {
        let fail = |reason: String| PolicyError::Failed {
            policy: self.name.clone(),
            reason,
        };
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let edges = public_edges(state).map_err(|e| fail(e.to_string()))?;
        let c = self
            .search_at(p, &edges, state)
            .map_err(|e| fail(e.to_string()))?;
        hands
            .iter()
            .map(|&h| {
                let x = *self
                    .position
                    .get(&u32::from(h))
                    .ok_or_else(|| fail(format!("hand {h} is not in the layout")))?;
                let mut row = [0.0; 4];
                for (&a, &q) in c.actions.iter().zip(&c.rows[x]) {
                    if a >= row.len() {
                        return Err(fail(format!("action {a} is not an FCPA action")));
                    }
                    row[a] = q;
                }
                Ok(row)
            })
            .collect()
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

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
    if let Some(cvpn) = super::model::verified_sog_cvpn(dir)? {
        let config = cvpn.parent().map(|c| c.join("config.toml"));
        return Ok(SogSource { cvpn, config });
    }
    if dir.join("config.toml").is_file() && !dir.join(crate::nn::cvpn::CVPN_META_FILE).is_file() {
        let g = super::generation::Generation::open(dir).map_err(RunError::context(format!(
            "{name}: reading the run's checkpoint"
        )))?;
        return Ok(SogSource {
            cvpn: g.dir.join(super::sog::CVPN_DIR),
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
    HoldemSearchPolicy::new(game, Arc::new(net.snapshot()), config, name)
}

// --- training: Student of Games self-play on Hold'em (`[sog]` on a universal_poker game) ---

/// Columns of `metrics.csv` of a Hold'em SoG run.
pub const HOLDEM_METRICS_HEADER: &[&str] = &[
    "round",
    "seconds",
    "games",
    "decisions",
    "searches",
    "unsearched",
    "off_policy_actions",
    "queries_generated",
    "queries_skipped",
    "queries_solved",
    "queries_dropped",
    "buffer",
    "replay",
    "learner_steps",
    "value_loss",
    "mean_return0",
];

const HOLDEM_STATE_FILE: &str = "state.json";
const HOLDEM_QUERIES_FILE: &str = "queries.bin";
const HOLDEM_REPLAY_FILE: &str = "replay.bin";

/// Counters of a Hold'em run, saved with every checkpoint.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(default)]
struct HoldemState {
    round: u64,
    games: u64,
    decisions: u64,
    searches: u64,
    unsearched: u64,
    off_policy_actions: u64,
    queries_generated: u64,
    queries_skipped: u64,
    queries_solved: u64,
    learner_steps: u64,
    elapsed_seconds: f64,
}

/// Refuses the `[sog]` settings that have no meaning for Hold'em search (continual
/// re-solving with CFR+ on whole betting rounds, sequential rounds), naming the key.
pub fn check_settings(s: &crate::run::config::SogSettings) -> Result<(), RunError> {
    let d = crate::run::config::SogSearchConfig::default();
    let why = |key: &str, reason: &str| -> Result<(), RunError> {
        Err(crate::run::config::ConfigError::Value {
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

/// The Hold'em search settings of a run: `sog.search.s` (or `selfplay.solver_s`) CFR+
/// iterations per search, `alpha`, `max_nodes`.
pub fn holdem_search_config(
    s: &crate::run::config::SogSettings,
    iterations: usize,
) -> HoldemSearchConfig {
    let d = HoldemSearchConfig::default();
    HoldemSearchConfig {
        iterations,
        alpha: s.alpha,
        max_nodes: s.max_nodes.unwrap_or(d.max_nodes),
        runout_boards: s.runout_boards.unwrap_or(d.runout_boards),
        ..d
    }
}

fn round_seed(seed: u64, round: u64, salt: u64) -> u64 {
    crate::util::SplitMix64::new(
        seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
    .next_u64()
}

/// Runs (or resumes) a Student of Games run on a `universal_poker` game in `dir` (see
/// `docs/student-of-games.md`): rounds of self-play with continual re-solving
/// (the current CVPN at every depth limit), re-solves of the oldest queries as value
/// targets ([`crate::rl::holdem_sog`]), and learner steps on a FIFO replay. Sequential and
/// deterministic for a seed: each round and game draws from streams seeded by
/// `(seed, round, game)`, and checkpoints are taken at round boundaries.
pub fn train(
    config: &crate::run::config::Config,
    s: &crate::run::config::SogSettings,
    dir: &Path,
    opts: &crate::run::TrainOptions,
    resumed: Option<&crate::run::Resumed>,
) -> Result<crate::run::RunSummary, RunError> {
    use crate::run::sog::SogRounds;
    check_settings(s)?;
    let mut r = HoldemRun::open(config, s, dir, resumed)?;
    if resumed.is_none() {
        r.checkpoint()?;
    }
    let game = r.load_string.clone();
    crate::run::sog::drive(&mut r, s, dir, game, opts)
}

/// The state of a Hold'em SoG run between rounds.
struct HoldemRun<'a> {
    config: &'a crate::run::config::Config,
    s: &'a crate::run::config::SogSettings,
    dir: &'a Path,
    /// The game's load string, as the summary reports it.
    load_string: String,
    game: UniversalPokerGame,
    /// Hands of the first betting round's layout, and their positions.
    np: usize,
    positions: HashMap<u32, usize>,
    num_actions: usize,
    play: crate::rl::holdem_sog::HoldemSelfPlay,
    solve_cfg: HoldemSearchConfig,
    net: Cvpn,
    st: HoldemState,
    queries: crate::rl::holdem_sog::HoldemQueries,
    replay: crate::rl::sog::ExampleReplay,
    metrics: crate::run::MetricsCsv,
    metrics_path: std::path::PathBuf,
    tb: super::tensorboard::TbWriter,
}

/// What one Hold'em round did.
struct HoldemRoundOut {
    t_round: std::time::Instant,
    games: u64,
    searches: u64,
    unsearched: u64,
    off: u64,
    generated: u64,
    ret0: f64,
    solved: u64,
    steps: usize,
    value_loss: f64,
    play_secs: f64,
    solve_secs: f64,
    learn_secs: f64,
}

fn search_err(what: &'static str) -> impl Fn(HoldemSearchError) -> RunError {
    move |e: HoldemSearchError| RunError::Usage(format!("{what}: {e}"))
}

impl<'a> HoldemRun<'a> {
    /// Builds the game's first betting round and creates (or loads from `resumed`) the
    /// network, counters and buffers of the run in `dir`.
    fn open(
        config: &'a crate::run::config::Config,
        s: &'a crate::run::config::SogSettings,
        dir: &'a Path,
        resumed: Option<&crate::run::Resumed>,
    ) -> Result<Self, RunError> {
        use crate::rl::holdem_sog::{
            HoldemQueries, HoldemSelfPlay, decode_queries, hand_positions,
        };
        use crate::rl::sog::{ExampleReplay, decode_buffers};
        use crate::run::read_checkpoint_file;
        let load_string = crate::games::load_game(&s.game)?.load_string();
        let game = UniversalPokerGame::from_string(&load_string)?;
        let gcfg = game.config();
        let mut hole_dealt = game.initial_state();
        for o in 0..2 * gcfg.num_hole {
            hole_dealt.try_apply(o)?;
        }
        let root_layout =
            PokerLayout::from_state_limited(&hole_dealt, s.max_nodes.unwrap_or(200_000), true)
                .map_err(|e| {
                    RunError::Usage(format!(
                        "the game's first betting round (sog.search.max_nodes): {e}"
                    ))
                })?;
        let np = root_layout.num_hands();
        let positions = hand_positions(&root_layout);
        let net_cfg = crate::nn::cvpn::CvpnConfig {
            game: load_string.clone(),
            input_size: gcfg.public_state_tensor_size() + 2 * np,
            private_states: np,
            num_actions: crate::game::Game::num_distinct_actions(&game),
            hidden: s.hidden,
            layers: s.layers,
        };
        let device =
            crate::nn::select_device(&s.device).map_err(RunError::context("sog.device"))?;
        let play = HoldemSelfPlay {
            search: holdem_search_config(s, s.simulations),
            epsilon: s.epsilon,
            queries_per_search: s.queries_per_search,
        };
        let solve_cfg = holdem_search_config(s, s.solver_simulations);
        let metrics_path = dir.join("metrics.csv");

        let (net, st, mut queries, mut replay, metrics) = if let Some(r) = resumed {
            let g = &r.generation;
            let net = crate::run::sog::load_net(&g.dir, &net_cfg, &device, s)?;
            let st: HoldemState =
                read_checkpoint_file(&g.dir.join(HOLDEM_STATE_FILE), "checkpoint state", |b| {
                    serde_json::from_slice(b)
                })?;
            let queries = read_checkpoint_file(
                &g.dir.join(HOLDEM_QUERIES_FILE),
                "checkpoint queries",
                decode_queries,
            )?;
            let (_, replay) = read_checkpoint_file(
                &g.dir.join(HOLDEM_REPLAY_FILE),
                "checkpoint replay",
                decode_buffers,
            )?;
            let (metrics, _) =
                super::resume::commit_resume(dir, g, config, &r.changed, HOLDEM_METRICS_HEADER)?;
            (net, st, queries, replay, metrics)
        } else {
            let (net, metrics) = crate::run::sog::start_fresh(
                dir,
                config,
                &net_cfg,
                &device,
                s,
                HOLDEM_METRICS_HEADER,
            )?;
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
        let tb =
            super::tensorboard::TbWriter::create(dir).map_err(io_err("TensorBoard events", dir))?;
        Ok(HoldemRun {
            config,
            s,
            dir,
            load_string,
            game,
            np,
            positions,
            num_actions: net_cfg.num_actions,
            play,
            solve_cfg,
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

impl crate::run::sog::SogRounds for HoldemRun<'_> {
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

    fn play(&mut self, round: u64) -> Result<HoldemRoundOut, RunError> {
        use crate::rl::holdem_sog::{play_game, solve_query};
        use crate::util::SplitMix64;
        use std::time::Instant;
        let s = self.s;
        let t_round = Instant::now();
        let snap = Arc::new(self.net.snapshot());
        let mut leaves = CvpnHoldemLeaves::new(snap.clone(), self.play.search.runout_boards);
        // 1. Self-play.
        let (mut games, mut decisions, mut searches, mut unsearched, mut off) = (0u64, 0, 0, 0, 0);
        let (mut generated, mut skipped, mut ret0) = (0u64, 0u64, 0.0);
        for g in 0..s.games_per_round {
            let mut rng = SplitMix64::new(round_seed(s.seed, round, 1 + g as u64));
            let rec = play_game(
                &self.game.initial_state(),
                &self.play,
                &mut leaves,
                &snap,
                &self.positions,
                &mut rng,
            )
            .map_err(search_err("self-play"))?;
            games += 1;
            decisions += rec.decisions as u64;
            searches += rec.searches as u64;
            unsearched += rec.unsearched as u64;
            off += rec.off_policy_actions as u64;
            skipped += rec.skipped_leaves as u64;
            generated += rec.queries.len() as u64;
            ret0 += rec.return0;
            for q in rec.queries {
                self.queries.push(q);
            }
        }
        let play_secs = t_round.elapsed().as_secs_f64();
        // 2. Solving: the oldest queries, with the current network.
        let t_solve = Instant::now();
        let mut solved = 0u64;
        let template = self.game.initial_state();
        while solved < s.solves_per_round as u64 {
            let Some(q) = self.queries.items.pop_front() else {
                break;
            };
            let [post, pre] = solve_query(&template, &q, &self.solve_cfg, &mut leaves, &snap)
                .map_err(search_err("re-solving a query"))?;
            self.replay.push(post);
            self.replay.push(pre);
            solved += 1;
        }
        let solve_secs = t_solve.elapsed().as_secs_f64();
        // 3. Learning.
        let t_learn = Instant::now();
        let mut rng = SplitMix64::new(round_seed(s.seed, round, 0));
        let (mut loss, mut steps) = (0.0, 0usize);
        if !self.replay.items.is_empty() {
            for _ in 0..s.steps_per_round {
                let mut b = self
                    .replay
                    .sample(&mut rng, s.batch, self.np, self.num_actions);
                b.policy.clear();
                b.policy_mask.clear();
                loss += self
                    .net
                    .train_step(&b)
                    .map_err(RunError::context("a CVPN learner step"))?
                    .value;
                steps += 1;
            }
        }
        let learn_secs = t_learn.elapsed().as_secs_f64();
        let value_loss = if steps > 0 {
            loss / steps as f64
        } else {
            f64::NAN
        };
        let st = &mut self.st;
        st.round = round;
        st.games += games;
        st.decisions += decisions;
        st.searches += searches;
        st.unsearched += unsearched;
        st.off_policy_actions += off;
        st.queries_generated += generated;
        st.queries_skipped += skipped;
        st.queries_solved += solved;
        st.learner_steps += steps as u64;
        Ok(HoldemRoundOut {
            t_round,
            games,
            searches,
            unsearched,
            off,
            generated,
            ret0,
            solved,
            steps,
            value_loss,
            play_secs,
            solve_secs,
            learn_secs,
        })
    }

    fn record(
        &mut self,
        it: u64,
        o: HoldemRoundOut,
        seconds: f64,
        bar: &indicatif::ProgressBar,
    ) -> Result<(), RunError> {
        let na = |x: f64| format!("{x:.6e}");
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
        let rates = crate::run::sog::PhaseRates {
            searches: o.searches,
            solved: o.solved,
            steps: o.steps,
            play_secs: o.play_secs,
            solve_secs: o.solve_secs,
            learn_secs: o.learn_secs,
        };
        crate::run::sog::log_buffers_and_rates(tb, it, sizes, &rates);
        tb.scalar(
            "rounds_per_second",
            1.0 / o.t_round.elapsed().as_secs_f64().max(1e-9),
            it,
        );
        tb.flush();
        self.metrics
            .row(&[
                it.to_string(),
                format!("{seconds:.3}"),
                st.games.to_string(),
                st.decisions.to_string(),
                st.searches.to_string(),
                st.unsearched.to_string(),
                st.off_policy_actions.to_string(),
                st.queries_generated.to_string(),
                st.queries_skipped.to_string(),
                st.queries_solved.to_string(),
                self.queries.dropped.to_string(),
                self.queries.items.len().to_string(),
                self.replay.items.len().to_string(),
                st.learner_steps.to_string(),
                na(o.value_loss),
                na(o.ret0 / o.games.max(1) as f64),
            ])
            .map_err(io_err("metrics", &self.metrics_path))
    }

    fn checkpoint(&mut self) -> Result<(), RunError> {
        let queries = crate::rl::holdem_sog::encode_queries(&self.queries);
        let replay =
            crate::rl::sog::encode_buffers(&crate::rl::sog::QueryBuffer::new(1), &self.replay);
        crate::run::sog::save_generation(
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
