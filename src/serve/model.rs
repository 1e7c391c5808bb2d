//! The served policies: each `--policy` argument loaded as a [`Model`] with its policy heads,
//! and [`App`], the models and seed every endpoint answers from (the inspecting endpoints are
//! in [`super::api`], play in [`super::play`]).

use super::table::{MAX_HISTORIES, Row, all_infostates};
use super::{ApiError, ServeError, ServeOptions};
use crate::eval::lbr::{AlwaysCall, AlwaysFold, PerHand, RangePolicy};
use crate::game::{GameRef, State};
use crate::games::load_game;
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::policy::{Policy, PolicyError, TabularPolicy, UniformPolicy};
use crate::rl::armac::policy::ArmacAveragePolicy;
use crate::run::RunError;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One policy head a model is served with.
pub enum Head {
    /// An ARMAC network (answers whole ranges in one batch).
    Armac(Box<ArmacAveragePolicy>),
    /// Any other policy (tabular file, baseline).
    Other(Box<dyn Policy>),
}

impl Head {
    /// The head as a [`Policy`].
    pub fn policy(&self) -> &dyn Policy {
        match self {
            Head::Armac(p) => p.as_ref(),
            Head::Other(p) => p.as_ref(),
        }
    }

    /// The probabilities (by action id) of `hands` for the player to move at `state`.
    pub fn hand_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<[f64; 4]>, PolicyError> {
        match self {
            Head::Armac(p) => p.hand_action_probabilities(state, hands),
            Head::Other(p) => PerHand(ByRef(p.as_ref())).hand_action_probabilities(state, hands),
        }
    }
}

/// A borrowed policy as an owned [`Policy`] (for [`PerHand`]).
struct ByRef<'a>(&'a dyn Policy);

impl Policy for ByRef<'_> {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        self.0.action_probabilities(state)
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

/// One `--policy` argument, loaded.
pub struct Model {
    /// The argument as given.
    pub name: String,
    /// The game the policy plays.
    pub game: GameRef,
    /// The game as Hold'em when the chart applies (two hole cards, 52 cards, at most 4 actions).
    pub holdem: Option<UniversalPokerGame>,
    /// The big blind of a poker game (results in mbb/hand), `None` for other games.
    pub big_blind: Option<f64>,
    /// The heads served (`average`, and `current` for ARMAC networks; `policy` otherwise).
    pub heads: Vec<(String, Head)>,
    /// A run directory with learning curves (`metrics.csv`, `lbr_<variant>.csv`).
    pub run_dir: Option<PathBuf>,
    /// Every information state with its probabilities, one per head (small games), computed
    /// on first use.
    tables: Vec<OnceLock<Result<Vec<Row>, String>>>,
}

/// The served models and the seed new play sessions derive theirs from.
pub struct App {
    pub models: Vec<Model>,
    pub seed: u64,
}

impl App {
    /// Loads every policy of `opts`.
    pub fn load(opts: &ServeOptions) -> Result<App, ServeError> {
        let models = opts
            .policies
            .iter()
            .map(|arg| {
                load_model(arg, &opts.game).map_err(|source| ServeError::Policy {
                    arg: arg.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(App {
            models,
            seed: opts.seed,
        })
    }

    /// The model of the `model` parameter (an index into `/api/models`).
    pub fn model(&self, id: Option<&Value>) -> Result<(usize, &Model), ApiError> {
        let id = match id {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse::<u64>().ok(),
            None => return Err(ApiError::bad("`model` is missing (an id of /api/models)")),
            _ => None,
        }
        .ok_or_else(|| ApiError::bad(format!("`model` {} is not a model id", id.unwrap())))?;
        let m = self.models.get(id as usize).ok_or_else(|| {
            ApiError::not_found(format!(
                "no model {id}: {} model(s) are served",
                self.models.len()
            ))
        })?;
        Ok((id as usize, m))
    }
}

impl Model {
    /// The head named `name` (default: the first, `average` for networks) and its index.
    pub fn head(&self, name: Option<&str>) -> Result<(usize, &Head), ApiError> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok((0, &self.heads[0].1));
        };
        self.heads
            .iter()
            .position(|(n, _)| n == name)
            .map(|k| (k, &self.heads[k].1))
            .ok_or_else(|| {
                let names: Vec<_> = self.heads.iter().map(|(n, _)| n.as_str()).collect();
                ApiError::bad(format!(
                    "model `{}` has no policy `{name}`; it has {}",
                    self.name,
                    names.join(", ")
                ))
            })
    }

    /// Every information state of the game with head `k`'s action probabilities, computed on
    /// first use; a message when the game is too large for the table or the policy fails.
    pub fn infostates(&self, k: usize) -> Result<&[Row], &str> {
        self.tables[k]
            .get_or_init(|| {
                all_infostates(self.game.as_ref(), self.heads[k].1.policy(), MAX_HISTORIES)
            })
            .as_deref()
            .map_err(String::as_str)
    }
}

/// A `--policy` argument as a [`Model`]: directories give both ARMAC heads, files their table,
/// baseline names a baseline for `default_game`.
fn load_model(arg: &str, default_game: &str) -> Result<Model, RunError> {
    let (_, dir) = crate::run::evaluate::checkpoint_arg(arg);
    let (game, heads, run_dir) = if arg.starts_with("sog:") {
        return Err(RunError::Usage(
            "serve shows ARMAC networks, policy files and baselines; a Student of Games \
             search policy (sog:) is not served"
                .into(),
        ));
    } else if dir.is_dir() {
        let (game, average) = crate::run::armac::load_checkpoint_policy(dir)?;
        let (_, current) = crate::run::armac::load_checkpoint_policy(dir)?;
        let heads = vec![
            ("average".to_string(), Head::Armac(Box::new(average))),
            (
                "current".to_string(),
                Head::Armac(Box::new(current.with_current_policy(true))),
            ),
        ];
        (game, heads, run_directory(dir))
    } else {
        let baseline: Option<Box<dyn Policy>> = match arg {
            "uniform" => Some(Box::new(UniformPolicy)),
            "always-call" => Some(Box::new(AlwaysCall)),
            "always-fold" => Some(Box::new(AlwaysFold)),
            _ => None,
        };
        match baseline {
            Some(p) => {
                let game = load_game(default_game)?;
                (game, vec![(arg.to_string(), Head::Other(p))], None)
            }
            None if Path::new(arg).is_file() => {
                let p = TabularPolicy::load(Path::new(arg))?;
                let game = load_game(&p.game)?;
                (
                    game,
                    vec![("policy".to_string(), Head::Other(Box::new(p)))],
                    None,
                )
            }
            None => {
                return Err(RunError::Usage(format!(
                    "`{arg}` is neither uniform, always-call, always-fold, an ARMAC run / \
                     model directory nor an existing policy file"
                )));
            }
        }
    };
    let poker = (game.short_name() == "universal_poker")
        .then(|| UniversalPokerGame::from_string(&game.load_string()))
        .transpose()?;
    let big_blind = poker.as_ref().map(|p| p.config().big_blind as f64);
    let holdem = poker.filter(|p| {
        let c = p.config();
        c.num_hole == 2 && c.num_suits == 4 && c.num_ranks == 13 && game.num_distinct_actions() <= 4
    });
    let tables = heads.iter().map(|_| OnceLock::new()).collect();
    Ok(Model {
        name: arg.to_string(),
        game,
        holdem,
        big_blind,
        heads,
        run_dir,
        tables,
    })
}

/// `dir` (or the run above a `<run>/checkpoint` argument) when it is a training run rather
/// than a shipped model.
fn run_directory(dir: &Path) -> Option<PathBuf> {
    if crate::run::model::is_model_dir(dir) {
        return None;
    }
    let run = if dir.file_name().is_some_and(|n| n == "checkpoint") {
        dir.parent()?
    } else {
        dir
    };
    Some(run.to_path_buf())
}
