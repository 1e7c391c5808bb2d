//! The JSON endpoints that inspect the served policies (the model list, the strategy chart,
//! the infostate table, the run view); the models are loaded in [`super::model`], play lives in
//! [`super::play`].

use super::model::App;
use super::{ApiError, Incoming};
use crate::game::Action;
use serde_json::{Value, json};
use std::path::Path;

impl App {
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
        let (k, _) = model.head(req.param("policy"))?;
        if model.holdem.is_some() {
            return Err(ApiError::bad(format!(
                "model `{}` plays Hold'em, too large to list every information state; use \
                 /api/chart",
                model.name
            )));
        }
        let rows = model.infostates(k).map_err(ApiError::bad)?;
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
        // Run files that exist but are not read (no regular file, or too large), by message.
        let mut refused = Vec::new();
        let mut read = |path: &Path| {
            read_csv(path).unwrap_or_else(|why| {
                refused.push(why);
                None
            })
        };
        let metrics = read(&dir.join("metrics.csv"));
        let mut lbr = Vec::new();
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("lbr_") && n.ends_with(".csv"))
                .collect();
            names.sort();
            for n in names {
                let variant = n["lbr_".len()..n.len() - ".csv".len()].to_string();
                if let Some(table) = read(&dir.join(&n)) {
                    lbr.push(json!({"variant": variant, "table": table}));
                }
            }
        }
        Ok(json!({
            "run": dir.display().to_string(),
            "metrics": metrics,
            "lbr": lbr,
            "refused": refused,
        }))
    }
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

/// The largest run file the run view reads.
const MAX_CSV_BYTES: u64 = 64 << 20;

/// Run files as last read, by path: their length and modification time, and the answer.
type CsvCache = std::collections::HashMap<std::path::PathBuf, (u64, std::time::SystemTime, Value)>;

static CSV_CACHE: std::sync::Mutex<Option<CsvCache>> = std::sync::Mutex::new(None);

/// A CSV file with a header as `{"columns": [...], "rows": [[numbers or null]]}`; `Ok(None)`
/// when the file does not exist (yet) or is empty; `Err` with a message naming it when it is
/// there but not read: not a regular file (a symbolic link, FIFO or device is never followed
/// or read), or over [`MAX_CSV_BYTES`]. A file is read once per change of its length or
/// modification time; requests in between get the answer kept from that read.
fn read_csv(path: &Path) -> Result<Option<Value>, String> {
    let refused = |why: String| format!("{} {why}: not read", path.display());
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(format!("cannot be read ({e})"))),
    };
    let stamp = meta
        .file_type()
        .is_file()
        .then(|| Some((meta.len(), meta.modified().ok()?)))
        .flatten();
    let mut cache = CSV_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(Default::default);
    if let Some(stamp) = stamp
        && let Some((len, time, v)) = cache.get(path)
        && (*len, *time) == stamp
    {
        return Ok(Some(v.clone()));
    }
    let bytes = match crate::util::read_regular(path, MAX_CSV_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(why)) => return Err(refused(why)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(format!("cannot be read ({e})"))),
    };
    let Some(v) = parse_csv(&String::from_utf8_lossy(&bytes)) else {
        return Ok(None);
    };
    if let Some((len, time)) = stamp {
        cache.insert(path.to_path_buf(), (len, time, v.clone()));
    }
    Ok(Some(v))
}

/// [`read_csv`]'s answer for the file's `text`.
fn parse_csv(text: &str) -> Option<Value> {
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
