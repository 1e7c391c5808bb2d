//! The served policies and the JSON endpoints that inspect them (the strategy chart, the
//! infostate table, the run view); play lives in [`super::play`].

use super::{ApiError, Incoming, ServeError, ServeOptions};
use crate::eval::lbr::{AlwaysCall, AlwaysFold, PerHand, RangePolicy};
use crate::game::{Action, GameRef, State};
use crate::games::load_game;
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::policy::{Policy, PolicyError, TabularPolicy, UniformPolicy};
use crate::rl::armac::policy::ArmacAveragePolicy;
use crate::run::RunError;
use serde_json::{Value, json};
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
    tables: Vec<OnceLock<Result<Vec<super::table::Row>, String>>>,
}

/// Everything the server answers from: the models and the play sessions.
pub struct App {
    pub models: Vec<Model>,
    pub sessions: super::play::Sessions,
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
            sessions: super::play::Sessions::default(),
            seed: opts.seed,
        })
    }

    /// `GET /api/models`.
    pub fn models_json(&self) -> Value {
        let models: Vec<Value> = self
            .models
            .iter()
            .enumerate()
            .map(|(id, m)| {
                json!({
                    "id": id,
                    "name": m.name,
                    "game": m.game.load_string(),
                    "short_name": m.game.short_name(),
                    "kind": if m.holdem.is_some() { "holdem" } else { "table" },
                    "heads": m.heads.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
                    "run": m.run_dir.is_some(),
                    "unit": if m.big_blind.is_some() { "mbb/hand" } else { "chips/hand" },
                })
            })
            .collect();
        json!({ "models": models })
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

    /// `GET /api/chart`: the Hold'em hand-class chart (see [`super::chart`]).
    pub fn chart(&self, req: &Incoming) -> Result<Value, ApiError> {
        let (_, model) = self.model(req.param("model").map(|s| json!(s)).as_ref())?;
        let (_, head) = model.head(req.param("policy"))?;
        let game = model.holdem.as_ref().ok_or_else(|| {
            ApiError::bad(format!(
                "model `{}` plays {}: the chart is for heads-up Hold'em with 52 cards and \
                 fold/call/pot/all-in actions; use /api/table",
                model.name,
                model.game.load_string()
            ))
        })?;
        let history = parse_history(req.param("history").unwrap_or(""))?;
        let board = parse_board(req.param("board").unwrap_or(""))?;
        super::chart::chart(game, head, &history, &board)
    }

    /// `GET /api/table`: information states with their action probabilities.
    pub fn table(&self, req: &Incoming) -> Result<Value, ApiError> {
        let (_, model) = self.model(req.param("model").map(|s| json!(s)).as_ref())?;
        let (k, head) = model.head(req.param("policy"))?;
        if model.holdem.is_some() {
            return Err(ApiError::bad(format!(
                "model `{}` plays Hold'em, too large to list every information state; use \
                 /api/chart",
                model.name
            )));
        }
        let rows = model.tables[k]
            .get_or_init(|| {
                super::table::all_infostates(
                    model.game.as_ref(),
                    head.policy(),
                    super::table::MAX_HISTORIES,
                )
            })
            .as_ref()
            .map_err(|e| ApiError::bad(e.clone()))?;
        super::table::query(rows, req)
    }

    /// `GET /api/run`: the learning curves of a run directory.
    pub fn run_view(&self, req: &Incoming) -> Result<Value, ApiError> {
        let (_, model) = self.model(req.param("model").map(|s| json!(s)).as_ref())?;
        let dir = model.run_dir.as_ref().ok_or_else(|| {
            ApiError::not_found(format!(
                "model `{}` is not a run directory: no learning curves",
                model.name
            ))
        })?;
        let metrics = read_csv(&dir.join("metrics.csv"));
        let mut lbr = Vec::new();
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("lbr_") && n.ends_with(".csv"))
                .collect();
            names.sort();
            for n in names {
                let variant = n["lbr_".len()..n.len() - ".csv".len()].to_string();
                if let Some(table) = read_csv(&dir.join(&n)) {
                    lbr.push(json!({"variant": variant, "table": table}));
                }
            }
        }
        Ok(json!({"run": dir.display().to_string(), "metrics": metrics, "lbr": lbr}))
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

/// `1,2,0` as actions; empty is the empty history.
pub fn parse_history(text: &str) -> Result<Vec<Action>, ApiError> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<Action>()
                .map_err(|_| ApiError::bad(format!("`{t}` in `history` is not an action number")))
        })
        .collect()
}

/// `AsKd7c` as distinct cards (at most 5).
pub fn parse_board(text: &str) -> Result<Vec<u8>, ApiError> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let cards = crate::games::cards::parse_cards(&text).ok_or_else(|| {
        ApiError::bad(format!(
            "`board` `{text}` is not a list of cards such as AsKd7c"
        ))
    })?;
    if cards.len() > 5 {
        return Err(ApiError::bad(format!(
            "`board` has {} cards; a board has at most 5",
            cards.len()
        )));
    }
    for (i, c) in cards.iter().enumerate() {
        if cards[..i].contains(c) {
            return Err(ApiError::bad(format!(
                "`board` names {} twice",
                crate::games::cards::card_to_string(*c)
            )));
        }
    }
    Ok(cards)
}

/// The most rows of a CSV file the run view sends (longer files are thinned evenly, the last
/// row kept).
const MAX_CSV_ROWS: usize = 2000;

/// A CSV file with a header as `{"columns": [...], "rows": [[numbers or null]]}`; `None` when
/// the file does not exist (yet) or is empty.
fn read_csv(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let columns: Vec<&str> = lines.next()?.split(',').map(str::trim).collect();
    let rows: Vec<Vec<Option<f64>>> = lines
        .map(|l| {
            l.split(',')
                .map(|x| x.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
                .collect()
        })
        .collect();
    let stride = rows.len().div_ceil(MAX_CSV_ROWS).max(1);
    let last = rows.len().saturating_sub(1);
    let kept: Vec<&Vec<Option<f64>>> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0 || *i == last)
        .map(|(_, r)| r)
        .collect();
    Some(json!({"columns": columns, "rows": kept, "total_rows": rows.len()}))
}
