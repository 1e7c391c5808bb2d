//! Evaluation plumbing behind `armac-eval`: policies named on the command line, LBR runs
//! with a progress bar, the `lbr` command ([`lbr_command`]: one policy, or every checkpoint of a run
//! as it trains) and the Hold'em scorecard ([`scorecard`]).
//!
//! A policy argument is one of `uniform`, `first-legal` (matches only), `always-call`,
//! `always-fold`, an ARMAC run or checkpoint directory (its average-policy head; `current:DIR`
//! its current policy pi^t), `sog:DIR` (a Student of Games run; for Hold'em, continual
//! re-solving with the CVPN checkpoint directory DIR), or an OpenSpiel-format policy file.
//! Every loader checks that the policy belongs to the game it is asked to play.

pub mod lbr_command;
pub mod scorecard;

use super::RunError;
use crate::eval::lbr::{
    AlwaysCall, AlwaysFold, LbrOptions, LbrResult, PerHand, RangePolicy, run_lbr,
};
use crate::game::Game;
use crate::games::universal_poker::UniversalPokerGame;
use crate::policy::{FirstLegalPolicy, Policy, TabularPolicy, UniformPolicy};
use crate::search::holdem::HoldemSearchConfig;
use std::path::Path;

/// A run-directory policy argument: `current:DIR` asks for the checkpoint's current policy
/// (`true`), a plain `DIR` for its average policy. Returns the flag and the directory.
pub fn checkpoint_arg(arg: &str) -> (bool, &Path) {
    match arg.strip_prefix("current:") {
        Some(dir) => (true, Path::new(dir)),
        None => (false, Path::new(arg)),
    }
}

/// The search settings of a Hold'em `sog:DIR` policy: the defaults with `iterations` CFR+
/// iterations per search when given.
fn holdem_search_config(iterations: Option<usize>) -> HoldemSearchConfig {
    let mut config = HoldemSearchConfig::default();
    if let Some(n) = iterations {
        config.iterations = n;
    }
    config
}

/// An error that names the option (`flag`) and the argument it came from.
fn named(what: String) -> impl FnOnce(RunError) -> RunError {
    RunError::context(what)
}

/// A policy for `game` by name (see the module docs), for matches and exact evaluations;
/// `flag` names the option in errors, `search_iterations` sets the CFR+ iterations per search
/// of a Hold'em `sog:DIR` policy (default 200).
pub fn match_policy(
    name: &str,
    game: &dyn Game,
    flag: &str,
    search_iterations: Option<usize>,
) -> Result<Box<dyn Policy>, RunError> {
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
            let config = holdem_search_config(search_iterations);
            Box::new(
                super::holdem_sog::load_holdem_search_policy(dir, &poker, config)
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
            let p = p.with_current_policy(current);
            if trained_on.load_string() != game_string {
                return Err(RunError::Usage(format!(
                    "{flag} {path}: the checkpoint was trained on {}, not on {game_string}",
                    trained_on.load_string()
                )));
            }
            Box::new(p)
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
/// `search_iterations` as in [`match_policy`]. Errors name `--policy`.
pub fn lbr_policy(
    name: &str,
    game_string: &str,
    replay: bool,
    search_iterations: Option<usize>,
) -> Result<Box<dyn RangePolicy>, RunError> {
    Ok(match name {
        "uniform" => Box::new(UniformPolicy),
        sog if sog.starts_with("sog:") => {
            // Continual re-solving answers every hand of a public state from one search.
            let poker = UniversalPokerGame::from_string(game_string)?;
            let config = holdem_search_config(search_iterations);
            Box::new(
                super::holdem_sog::load_holdem_search_policy(Path::new(&sog[4..]), &poker, config)
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
            Box::new(
                p.with_incremental_ranges(!replay)
                    .with_current_policy(current),
            )
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

/// LBR against `policy` with a progress bar (labelled `label`, hidden when stderr is not a
/// terminal); errors name the policy.
pub fn lbr_with_bar(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    label: &str,
) -> Result<LbrResult, RunError> {
    let bar = super::progress_bar(opts.hands.div_ceil(4) * 4, "hands");
    bar.set_message(label.to_string());
    let tick = |n: u64| bar.inc(n);
    let result = run_lbr(game, policy, opts, Some(&tick));
    bar.finish_and_clear();
    result.map_err(RunError::context(format!(
        "LBR against policy {}",
        policy.name()
    )))
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
