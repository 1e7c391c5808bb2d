//! Evaluation plumbing behind `armac-eval`: policies named on the command line, LBR runs
//! with a progress bar, the `lbr` command ([`lbr_command`]: one policy, or every checkpoint of a run
//! as it trains) and the Hold'em scorecard ([`scorecard`]).
//!
//! A policy argument is one of `uniform`, `first-legal` (matches only), `always-call`,
//! `always-fold`, an ARMAC run or checkpoint directory (its average-policy head; `current:DIR`
//! its current policy pi^t), `sog:DIR` (a Student of Games run; for Hold'em, continual
//! re-solving with the CVPN checkpoint directory DIR), or an OpenSpiel-format policy file.
//! Every loader checks that the policy belongs to the game it is asked to play.

pub mod commands;
pub mod hands;
pub mod lbr_command;
pub mod scorecard;

use super::RunError;
use crate::eval::Watch;
use crate::eval::lbr::{
    AlwaysCall, AlwaysFold, BreakdownRow, LbrHand, LbrOptions, LbrResult, PerHand, RangePolicy,
    run_lbr_watched,
};
use crate::eval::matchup::{MatchReport, exact_match, sampled_match_with};
use crate::eval::tree_policy;
use crate::game::Game;
use crate::games::universal_poker::UniversalPokerGame;
use crate::policy::{FirstLegalPolicy, Policy, TabularPolicy, UniformPolicy};
use crate::rl::armac::policy::ArmacAveragePolicy;
use crate::search::endgame::EndgamePolicy;
use crate::tree::PublicTree;
use crate::util::check;
use std::path::Path;

/// A run-directory policy argument: `current:DIR` asks for the checkpoint's current policy
/// (`true`), a plain `DIR` for its average policy. Returns the flag and the directory.
pub fn checkpoint_arg(arg: &str) -> (bool, &Path) {
    match arg.strip_prefix("current:") {
        Some(dir) => (true, Path::new(dir)),
        None => (false, Path::new(arg)),
    }
}

/// How a named policy is loaded, beyond its name.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PolicyArgs {
    /// CFR+ iterations per search of a Hold'em `sog:DIR` policy (default: `sog.search.s` of
    /// the run it comes from, see [`super::sog::holdem::load_trained_holdem_search_policy`]).
    pub search_iterations: Option<usize>,
    /// ARMAC networks: play with this threshold instead of the run's own
    /// `armac.play_threshold` (0: the network's probabilities as they are).
    pub play_threshold: Option<f64>,
    /// ARMAC networks on heads-up poker: answer the last betting round's decisions by solving
    /// that round with this many CFR+ iterations ([`crate::search::endgame`]).
    pub endgame_iterations: Option<usize>,
    /// With `endgame_iterations`: safe re-solving (the opponent behind the CFR-D gadget).
    pub endgame_safe: bool,
    /// With `endgame_iterations`: solve the last this many betting rounds (default 1).
    pub endgame_rounds: Option<usize>,
}

impl PolicyArgs {
    /// Checks `play_threshold` (`--play-threshold` on the command line): in [0, 1); and
    /// `endgame_iterations` (`--endgame`): 1 to [`crate::search::endgame::MAX_ITERATIONS`].
    pub fn check(&self) -> Result<(), RunError> {
        use crate::search::endgame::MAX_ITERATIONS;
        if let Some(t) = self.play_threshold.filter(|t| !(0.0..1.0).contains(t)) {
            return Err(RunError::Usage(format!(
                "--play-threshold {}: must be in [0, 1) (0 plays the network's probabilities \
                 as they are)",
                crate::util::check::short_number(t)
            )));
        }
        match self.endgame_iterations {
            Some(n) if !(1..=MAX_ITERATIONS).contains(&n) => Err(RunError::Usage(format!(
                "--endgame {n}: must be 1 to {MAX_ITERATIONS} CFR+ iterations per solve"
            ))),
            None if self.endgame_safe => Err(RunError::Usage(
                "--endgame-safe needs --endgame N (the iterations of each solve)".into(),
            )),
            None if self.endgame_rounds.is_some() => Err(RunError::Usage(
                "--endgame-rounds needs --endgame N (the iterations of each solve)".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Refuses `--play-threshold`, `--endgame` and `--endgame-safe` when none of the policies
    /// a command loads (`names`, as given on the command line) is an ARMAC network: the
    /// flags only change how networks play, so they would have no effect.
    pub fn check_applies(&self, names: &[&str]) -> Result<(), RunError> {
        let flag = if self.endgame_iterations.is_some() {
            "--endgame"
        } else if self.play_threshold.is_some() {
            "--play-threshold"
        } else {
            return Ok(());
        };
        if names.iter().any(|n| is_network(n)) {
            return Ok(());
        }
        let listed = names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(RunError::Usage(format!(
            "{flag} changes how ARMAC networks play, and no policy here ({listed}) is one (a \
             run, checkpoint or model directory): drop {flag}"
        )))
    }

    /// `policy` (an ARMAC network of a universal_poker game `game_string`) with endgame
    /// solving when these arguments ask for it.
    fn wrap<P>(&self, policy: P, game_string: &str) -> Result<Wrapped<P>, RunError>
    where
        P: Policy + RangePolicy + 'static,
    {
        let Some(n) = self.endgame_iterations else {
            return Ok(Wrapped::Plain(policy));
        };
        let game = UniversalPokerGame::from_string(game_string)
            .map_err(|e| RunError::Usage(format!("--endgame needs a universal_poker game: {e}")))?;
        let p = EndgamePolicy::new(policy, game, n)
            .map_err(|e| RunError::Usage(format!("--endgame {n}: {e}")))?
            .with_gadget(self.endgame_safe)
            .with_rounds(self.endgame_rounds.unwrap_or(1))
            .map_err(|e| RunError::Usage(format!("--endgame-rounds: {e}")))?;
        Ok(Wrapped::Endgame(p))
    }

    /// `policy` with the threshold of these arguments, if they set one.
    pub fn apply(&self, policy: ArmacAveragePolicy) -> ArmacAveragePolicy {
        match self.play_threshold {
            Some(t) => policy.with_threshold(t),
            None => policy,
        }
    }
}

/// Whether a policy argument names an ARMAC network (a run, checkpoint or model directory,
/// `current:DIR` included), the only policies [`PolicyArgs`]' play settings change.
fn is_network(name: &str) -> bool {
    !name.starts_with("sog:") && checkpoint_arg(name).1.is_dir()
}

/// A policy as loaded, or with endgame solving.
enum Wrapped<P> {
    Plain(P),
    Endgame(EndgamePolicy<P>),
}

impl<P: Policy + RangePolicy + 'static> Wrapped<P> {
    fn per_state(self) -> Box<dyn Policy> {
        match self {
            Wrapped::Plain(p) => Box::new(p),
            Wrapped::Endgame(p) => Box::new(p),
        }
    }

    fn per_range(self) -> Box<dyn RangePolicy> {
        match self {
            Wrapped::Plain(p) => Box::new(p),
            Wrapped::Endgame(p) => Box::new(p),
        }
    }
}

/// An error that names the option (`flag`) and the argument it came from.
fn named(what: String) -> impl FnOnce(RunError) -> RunError {
    RunError::context(what)
}

/// A policy for `game` by name (see the module docs), for matches and exact evaluations;
/// `flag` names the option in errors, `args` sets how searches and networks play.
pub fn match_policy(
    name: &str,
    game: &dyn Game,
    flag: &str,
    args: PolicyArgs,
) -> Result<Box<dyn Policy>, RunError> {
    args.check()?;
    let search_iterations = args.search_iterations;
    let game_string = game.load_string();
    Ok(match name {
        "uniform" => Box::new(UniformPolicy),
        "first-legal" => Box::new(FirstLegalPolicy),
        "always-call" => Box::new(AlwaysCall),
        "always-fold" => Box::new(AlwaysFold),
        sog if sog.starts_with("sog:") && game.short_name() == "universal_poker" => {
            // Hold'em: continual re-solving on the factored layout, a CVPN checkpoint
            // directory at the depth limit.
            let dir = Path::new(&sog[4..]);
            let poker = UniversalPokerGame::from_string(&game_string)?;
            Box::new(
                super::sog::holdem::load_trained_holdem_search_policy(
                    dir,
                    &poker,
                    search_iterations,
                )
                .map_err(named(flag.to_string()))?,
            )
        }
        sog if sog.starts_with("sog:") => {
            let dir = Path::new(&sog[4..]);
            let (trained_on, p) = super::sog::load_search_policy(dir, None)
                .map_err(named(format!("{flag} {sog}")))?;
            if trained_on.load_string() != game_string {
                return Err(RunError::Usage(format!(
                    "{flag} {sog}: the run was trained on {}, not on {game_string}",
                    trained_on.load_string()
                )));
            }
            Box::new(p)
        }
        path if checkpoint_arg(path).1.is_dir() => {
            let (current, dir) = checkpoint_arg(path);
            let (trained_on, p) = super::armac::load_checkpoint_policy(dir)
                .map_err(named(format!("{flag} {path}")))?;
            let p = args.apply(p.with_current_policy(current));
            if trained_on.load_string() != game_string {
                return Err(RunError::Usage(format!(
                    "{flag} {path}: the checkpoint was trained on {}, not on {game_string}",
                    trained_on.load_string()
                )));
            }
            args.wrap(p, &game_string)?.per_state()
        }
        path => {
            if !Path::new(path).is_file() {
                return Err(RunError::Usage(format!(
                    "{flag} `{path}` is neither uniform, first-legal, always-call, always-fold, \
                     an ARMAC run/checkpoint directory nor an existing policy file"
                )));
            }
            let p = TabularPolicy::load(Path::new(path))
                .map_err(RunError::context(format!("{flag} {path}")))?;
            p.check_game(&game_string)
                .map_err(RunError::context(format!("{flag}: policy file {path}")))?;
            Box::new(p)
        }
    })
}

/// A policy for LBR on the Hold'em game `game_string`, queried for whole ranges (see the
/// module docs; no `first-legal`). ARMAC networks compute each public state once for all
/// 1326 hands unless `replay` (the slow reference path: every hand replayed from the root);
/// `args` as in [`match_policy`]. Errors name `--policy`.
pub fn lbr_policy(
    name: &str,
    game_string: &str,
    replay: bool,
    args: PolicyArgs,
) -> Result<Box<dyn RangePolicy>, RunError> {
    args.check()?;
    let search_iterations = args.search_iterations;
    Ok(match name {
        "uniform" => Box::new(UniformPolicy),
        sog if sog.starts_with("sog:") => {
            // Continual re-solving answers every hand of a public state from one search.
            let poker = UniversalPokerGame::from_string(game_string)?;
            let dir = Path::new(&sog[4..]);
            Box::new(
                super::sog::holdem::load_trained_holdem_search_policy(
                    dir,
                    &poker,
                    search_iterations,
                )
                .map_err(named("--policy".into()))?,
            )
        }
        "always-call" => Box::new(AlwaysCall),
        "always-fold" => Box::new(AlwaysFold),
        path if checkpoint_arg(path).1.is_dir() => {
            let (current, dir) = checkpoint_arg(path);
            let (trained_on, p) = super::armac::load_checkpoint_policy(dir)?;
            if trained_on.load_string() != game_string {
                return Err(RunError::Usage(format!(
                    "--policy {path}: the checkpoint was trained on {}, not on {game_string}",
                    trained_on.load_string()
                )));
            }
            let p = args.apply(
                p.with_incremental_ranges(!replay)
                    .with_current_policy(current),
            );
            args.wrap(p, game_string)?.per_range()
        }
        path => {
            if !Path::new(path).is_file() {
                return Err(RunError::Usage(format!(
                    "--policy `{path}` is neither uniform, always-call, always-fold, an ARMAC \
                     run/checkpoint directory nor an existing policy file"
                )));
            }
            let p = TabularPolicy::load(Path::new(path))?;
            p.check_game(game_string)
                .map_err(RunError::context(format!("policy file {path}")))?;
            Box::new(PerHand(p))
        }
    })
}

/// Bytes one hand LBR played takes while it waits to be written by `--hands-out` (its history
/// and seat; Hold'em histories are a few dozen actions).
const LBR_HAND_BYTES: u64 = 256;

/// Refuses, before anything is played, an LBR evaluation of `hands` hands per result whose
/// per-deal storage would not fit in the memory available: `paired` results kept at once
/// with their deal means (paired ratios), and each result's hands when `hands_out` (they
/// are written once the result is done). Without either, LBR keeps running sums only.
pub fn lbr_memory_check(hands: u64, paired: u64, hands_out: bool) -> Result<(), RunError> {
    let deals = hands.div_ceil(4);
    let means = paired * deals * crate::eval::lbr::DEAL_MEAN_BYTES;
    let kept = if hands_out {
        4 * deals * LBR_HAND_BYTES
    } else {
        0
    };
    let bytes = means + kept;
    let Some(available) = crate::run::available_memory_bytes() else {
        return Ok(());
    };
    if bytes <= available {
        return Ok(());
    }
    let mut parts = Vec::new();
    if means > 0 {
        parts.push(format!(
            "{paired} paired results of {deals} deal means ({} MiB)",
            means >> 20
        ));
    }
    if kept > 0 {
        parts.push(format!("the hands for --hands-out ({} MiB)", kept >> 20));
    }
    Err(RunError::Usage(format!(
        "--hands {hands}: the evaluation would keep about {} MiB ({}), more than the {} MiB \
         available to it; use fewer hands",
        bytes >> 20,
        parts.join(" and "),
        available >> 20
    )))
}

/// LBR against `policy` with a progress bar (labelled `label`, hidden when stderr is not a
/// terminal); errors name the policy.
pub fn lbr_with_bar(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    label: &str,
) -> Result<LbrResult, RunError> {
    Ok(lbr_hands_with_bar(game, policy, opts, label, false)?.0)
}

/// [`lbr_with_bar`], with every hand LBR played when `keep` (else none).
pub fn lbr_hands_with_bar(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    label: &str,
    keep: bool,
) -> Result<(LbrResult, Vec<LbrHand>), RunError> {
    let bar = super::progress_bar(opts.hands.div_ceil(4) * 4, "hands");
    bar.set_message(label.to_string());
    let tick = |n: u64| bar.inc(n);
    // Ctrl-C (the CLI's handler, or Python's through `interruptible`) sets this flag.
    let stop = crate::run::external_interrupt_flag();
    let watch = Watch {
        progress: Some(&tick),
        stop: Some(&stop),
    };
    let result = run_lbr_watched(game, policy, opts, watch, keep);
    bar.finish_and_clear();
    result.map_err(RunError::context(format!(
        "LBR against policy {}",
        policy.name()
    )))
}

/// LBR against `policy` ([`lbr_hands_with_bar`]), its hands written to `out` when given (LBR
/// named `LBR-<VARIANT>`, the policy by its name).
pub fn lbr_recorded(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    label: &str,
    out: Option<&mut hands::HandsOut>,
) -> Result<LbrResult, RunError> {
    let (r, hands) = lbr_hands_with_bar(game, policy, opts, label, out.is_some())?;
    if let Some(out) = out {
        let lbr = format!("LBR-{}", opts.variant.name().to_uppercase());
        let name = policy.name();
        for hand in &hands {
            let mut names = [name.as_str(); 2];
            names[hand.lbr_seat] = &lbr;
            out.write(names, &hand.history)
                .map_err(|source| RunError::Failed {
                    context: "--hands-out".into(),
                    source,
                })?;
        }
    }
    Ok(r)
}

/// The text table of an LBR breakdown over `hands` hands: one line per way a hand ended, with
/// its share of the hands, its share of LBR's mean and LBR's mean per hand of it (mbb).
pub fn breakdown_table(rows: &[BreakdownRow], hands: u64) -> String {
    let mut out = format!(
        "{:<52} {:>7} {:>12} {:>12}\n",
        "LBR's hands, by how they ended", "hands", "mbb/hand", "per hand"
    );
    for row in rows {
        out.push_str(&format!(
            "{:<52} {:>6.1}% {:>12.1} {:>12.1}\n",
            row.label,
            100.0 * row.hands as f64 / hands.max(1) as f64,
            row.share_mbb,
            row.mean_mbb
        ));
    }
    out
}

/// The Hold'em game `name` for LBR with every variant of `variants`, or an error naming the
/// game: `command` says what refuses it (e.g. `LBR`).
pub fn holdem_game(
    name: &str,
    variants: &[crate::eval::lbr::LbrVariant],
    command: &str,
) -> Result<UniversalPokerGame, RunError> {
    let game = crate::games::load_game(name)?;
    if game.short_name() != "universal_poker" {
        return Err(RunError::Usage(format!(
            "{command} plays heads-up no-limit poker (universal_poker with two hole cards, e.g. \
             hunl_fcpa or small_fcpa), not `{name}`"
        )));
    }
    let game = UniversalPokerGame::from_string(&game.load_string())?;
    for &v in variants {
        crate::eval::lbr::check_game(game.config(), v)
            .map_err(|e| RunError::Usage(e.to_string()))?;
    }
    Ok(game)
}

/// The compiled tree of `game` for an exact evaluation, or an error naming the game, its size
/// and `max_histories` (the `--max-histories` cap) when it has more histories than that:
/// counted first ([`crate::tree::count_histories`], one path of memory, stops at the cap),
/// so a game too large is refused in seconds rather than compiled until memory runs out.
pub fn exact_tree(game: &dyn Game, max_histories: usize) -> Result<PublicTree, RunError> {
    match crate::tree::count_histories(game, max_histories) {
        Ok(_) => Ok(PublicTree::build_with_limit(game, max_histories)?),
        Err(crate::tree::TreeError::TooLarge { game, limit }) => Err(RunError::Usage(format!(
            "game `{game}` has more than {limit} histories, over the cap of exact evaluation \
             (--max-histories {limit}); raise it with --max-histories N if the machine can \
             hold the tree (time and memory grow with the histories)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// How [`play_match`] plays.
#[derive(Clone, Copy, Debug)]
pub struct MatchOptions {
    /// Hands of a sampled match (rounded up to an even number: one deal is two hands).
    pub hands: u64,
    /// Seed of the deals and of the policies' action draws.
    pub seed: u64,
    /// Sample even where the exact value is computable.
    pub sampled: bool,
    /// Exact matches: refuse games with more histories than this.
    pub max_histories: usize,
    /// Sampled matches: also report AIVAT ([`crate::eval::aivat`]) with the critic of the
    /// ARMAC network among the two policies (`--aivat`).
    pub aivat: bool,
    /// Which value estimate AIVAT uses (`--aivat-values`).
    pub aivat_values: AivatValues,
}

/// The value estimate of AIVAT in a match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AivatValues {
    /// The pair's own values where they are cheap to compute, the critic at street starts
    /// ([`crate::eval::aivat_pair::PairValues`]).
    #[default]
    Pair,
    /// The critic alone, averaged over the network's own average policy
    /// ([`crate::rl::armac::critic_values::ArmacCritic`]).
    Critic,
}

impl AivatValues {
    /// `pair` or `critic`.
    pub fn parse(s: &str) -> Option<AivatValues> {
        match s {
            "pair" => Some(AivatValues::Pair),
            "critic" => Some(AivatValues::Critic),
            _ => None,
        }
    }
}

/// A match's report and, for poker, the big blind that converts it to mbb per hand.
#[derive(Clone, Debug)]
pub struct MatchOutcome {
    pub report: MatchReport,
    /// The big blind in chips (`universal_poker` only).
    pub big_blind: Option<f64>,
    /// Hands written to `hands_out` (0 without it).
    pub hands_written: u64,
}

/// `armac-eval match`: policy `a` against `b` in both seats, exactly on the compiled tree
/// (unless `opts.sampled`, and never for `universal_poker`, whose trees are too large), else
/// as `opts.hands` hands of duplicate deals
/// ([`sampled_match`](crate::eval::matchup::sampled_match)). With `hands_out`, every hand
/// is written there in the Poker Hand History format ([`hands::HandsOut`]; heads-up no-limit
/// Texas hold'em only).
pub fn play_match(
    game: &dyn Game,
    a: &dyn Policy,
    b: &dyn Policy,
    opts: &MatchOptions,
    hands_out: Option<&Path>,
) -> Result<MatchOutcome, RunError> {
    play_match_valued(game, a, b, opts, hands_out, None)
}

/// The critic of the ARMAC network a policy argument names, as AIVAT's value estimate
/// (`None` for any other policy and for a recurrent network).
pub fn critic_of(name: &str) -> Option<crate::rl::armac::critic_values::ArmacCritic> {
    if !is_network(name) {
        return None;
    }
    let (_, dir) = checkpoint_arg(name);
    let (_, p) = super::armac::load_checkpoint_policy(dir).ok()?;
    p.critic()
}

/// What AIVAT's value estimates of a match are built from.
pub enum AivatBase {
    /// The critic of an ARMAC network among the two policies.
    Critic(Box<crate::rl::armac::critic_values::ArmacCritic>),
    /// The value network of a Student of Games policy (no ARMAC network plays).
    Cvpn(crate::rl::sog::cvpn_values::CvpnValues),
}

impl AivatBase {
    /// The base for a match of the policy arguments `a` and `b` on `game`: the critic of the
    /// ARMAC network among them, else the CVPN of a Hold'em Student of Games policy among
    /// them; `None` when there is neither.
    pub fn of(a: &str, b: &str, game: &dyn Game) -> Option<AivatBase> {
        if let Some(c) = critic_of(a).or_else(|| critic_of(b)) {
            return Some(AivatBase::Critic(Box::new(c)));
        }
        let poker = UniversalPokerGame::from_string(&game.load_string()).ok()?;
        [a, b].into_iter().find_map(|name| {
            let dir = name.strip_prefix("sog:")?;
            let p =
                super::sog::holdem::load_trained_holdem_search_policy(Path::new(dir), &poker, None)
                    .ok()?;
            Some(AivatBase::Cvpn(p.value_estimate()))
        })
    }
}

/// AIVAT's value estimates for a match of `a` against `b` on `game` over `base`, for the hands
/// with A in seat 0 and with A in seat 1, and a match seed. A critic base gives the estimate
/// `values` names ([`AivatValues`]), except that a policy that searches at every decision
/// (`searching`: a Student of Games policy plays) gets the critic alone, since walking the
/// rest of a betting round would run a search at every node; a CVPN base is used as it is.
pub fn aivat_estimates<'v>(
    game: &'v dyn Game,
    (a, b): (&'v dyn Policy, &'v dyn Policy),
    base: &'v AivatBase,
    values: AivatValues,
    searching: bool,
    seed: u64,
) -> [Box<dyn crate::eval::aivat::ValueEstimate + 'v>; 2] {
    use crate::eval::aivat::ValueEstimate;
    use crate::eval::aivat_pair::{PairOptions, PairValues};
    let critic = match base {
        AivatBase::Cvpn(v) => return [Box::new(v), Box::new(v)],
        AivatBase::Critic(c) => c.as_ref(),
    };
    if values == AivatValues::Critic || searching {
        return [Box::new(critic), Box::new(critic)];
    }
    let pair = |seats, k: u64| {
        let opts = PairOptions::default();
        Box::new(PairValues::new(game, seats, critic, opts, seed ^ k)) as Box<dyn ValueEstimate>
    };
    [pair([a, b], 0x0A), pair([b, a], 0xB0)]
}

/// [`play_match`], with AIVAT beside the plain mean of a sampled match when `values` is given
/// (the estimates for the hands with A in seat 0 and with A in seat 1).
pub fn play_match_valued(
    game: &dyn Game,
    a: &dyn Policy,
    b: &dyn Policy,
    opts: &MatchOptions,
    hands_out: Option<&Path>,
    values: Option<[&dyn crate::eval::aivat::ValueEstimate; 2]>,
) -> Result<MatchOutcome, RunError> {
    let aivat = values.map(|v| (v, crate::eval::aivat::AivatOptions::default()));
    let poker = game.short_name() == "universal_poker";
    let big_blind = if poker {
        Some(
            UniversalPokerGame::from_string(&game.load_string())?
                .config()
                .big_blind as f64,
        )
    } else {
        None
    };
    let mut out = hands_out
        .map(|path| hands::HandsOut::create(game, path))
        .transpose()?;
    let report = if opts.sampled || poker {
        check::hands("--hands", opts.hands).map_err(RunError::Usage)?;
        let (deals, seed) = (opts.hands.div_ceil(2), opts.seed);
        // A progress bar (hidden when stderr is not a terminal); Ctrl-C (the CLI's handler,
        // or Python's through `interruptible`) ends the match after the deal in play.
        let bar = super::progress_bar(2 * deals, "hands");
        let tick = |n: u64| bar.inc(n);
        let stop = crate::run::external_interrupt_flag();
        let watch = Watch {
            progress: Some(&tick),
            stop: Some(&stop),
        };
        let report = match out.as_mut() {
            Some(o) => {
                let (na, nb) = (a.name(), b.name());
                let mut write =
                    |hand: crate::eval::matchup::PlayedHand<'_>| o.write_match_hand(&na, &nb, hand);
                sampled_match_with(game, a, b, deals, seed, Some(&mut write), aivat, watch)
            }
            None => sampled_match_with(game, a, b, deals, seed, None, aivat, watch),
        };
        bar.finish_and_clear();
        report.map_err(RunError::context("the match"))?
    } else {
        let tree = exact_tree(game, opts.max_histories).map_err(RunError::context(
            "an exact match (--sampled plays hands instead)",
        ))?;
        let fa = tree_policy(&tree, game, a).map_err(RunError::context("--a"))?;
        let fb = tree_policy(&tree, game, b).map_err(RunError::context("--b"))?;
        exact_match(&tree, &fa, &fb)
    };
    let hands_written = match out {
        Some(o) => o.finish()?,
        None => 0,
    };
    Ok(MatchOutcome {
        report,
        big_blind,
        hands_written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exact match and a long sampled one of the same pair agree within the sampled
    /// interval, and the exact one of a policy against itself is worth 0.
    #[test]
    fn exact_and_sampled_matches_agree() {
        let game = crate::games::load_game("kuhn_poker").unwrap();
        let opts = MatchOptions {
            hands: 40_000,
            seed: 3,
            sampled: false,
            max_histories: 1_000_000,
            aivat: false,
            aivat_values: AivatValues::Pair,
        };
        let exact = play_match(
            game.as_ref(),
            &FirstLegalPolicy,
            &UniformPolicy,
            &opts,
            None,
        )
        .unwrap();
        assert!(exact.report.exact && exact.big_blind.is_none());
        let sampled = MatchOptions {
            sampled: true,
            ..opts
        };
        let s = play_match(
            game.as_ref(),
            &FirstLegalPolicy,
            &UniformPolicy,
            &sampled,
            None,
        )
        .unwrap();
        assert!(!s.report.exact && s.report.hands == 40_000);
        assert!(
            (s.report.mean - exact.report.mean).abs() < s.report.ci95 * 1.5,
            "{:?} vs {:?}",
            s.report,
            exact.report
        );
        let same = play_match(game.as_ref(), &UniformPolicy, &UniformPolicy, &opts, None).unwrap();
        assert!(same.report.mean.abs() < 1e-12);
        let zero = MatchOptions {
            hands: 0,
            ..sampled
        };
        assert!(play_match(game.as_ref(), &UniformPolicy, &UniformPolicy, &zero, None).is_err());
    }
}
