//! The infostate table of a small game: every information state reached by the game tree,
//! in the order a depth-first walk first meets it, with the policy's action probabilities.

use super::{ApiError, Incoming};
use crate::game::{Action, Game, State, Turn};
use crate::policy::Policy;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The most histories the walk visits before it refuses the game (Leduc has 9,457 and
/// Liar's Dice with one die each 294,883).
pub const MAX_HISTORIES: usize = 2_000_000;

/// The most rows one `/api/table` answer carries.
pub const MAX_LIMIT: usize = 1000;

/// One information state and what the policy does there.
pub struct Row {
    pub player: usize,
    pub infostate: String,
    /// Kuhn and Leduc poker: the player's card and the board by name (`Q`, `Q | board K`).
    pub cards: Option<String>,
    /// `(action, its name, probability)` for each legal action, ascending.
    pub actions: Vec<(Action, String, f64)>,
}

/// Every information state of `game` with `policy`'s probabilities, or a message when the
/// game has more than `max_histories` histories or the policy fails somewhere.
pub fn all_infostates(
    game: &dyn Game,
    policy: &dyn Policy,
    max_histories: usize,
) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut seen: HashSet<(usize, String)> = HashSet::new();
    let mut stack: Vec<Box<dyn State>> = vec![game.new_initial_state()];
    let mut visited = 0usize;
    while let Some(state) = stack.pop() {
        visited += 1;
        if visited > max_histories {
            return Err(format!(
                "game `{}` has more than {max_histories} histories: too large for the table",
                game.load_string()
            ));
        }
        let actions = match state.turn() {
            Turn::Terminal => continue,
            Turn::Chance => state
                .chance_outcomes()
                .into_iter()
                .map(|(a, _)| a)
                .collect(),
            Turn::Player(p) => {
                let key = state.information_state_string(p);
                let legal = state.legal_actions();
                if seen.insert((p, key.clone())) {
                    let probs = policy
                        .action_probabilities(state.as_ref())
                        .map_err(|e| format!("policy {} at {key:?}: {e}", policy.name()))?;
                    let actions = legal
                        .iter()
                        .zip(probs)
                        .map(|(&a, pr)| (a, strip_move(state.action_to_string(Some(p), a)), pr))
                        .collect();
                    rows.push(Row {
                        player: p,
                        cards: card_names(game, state.history(), p),
                        infostate: key,
                        actions,
                    });
                }
                legal
            }
        };
        // Reversed, so the walk visits the lowest action first.
        for &a in actions.iter().rev() {
            let mut child = state.clone_box();
            child.apply_action(a);
            stack.push(child);
        }
    }
    Ok(rows)
}

/// The name of card `a` (a chance outcome) in Kuhn poker (`J`, `Q`, `K`, ...) or Leduc poker
/// (two suits of each rank: outcomes `2r` and `2r + 1` are rank `r`); `None` in other games.
pub fn small_poker_card(game: &str, a: Action) -> Option<&'static str> {
    const RANKS: [&str; 6] = ["J", "Q", "K", "A", "T", "9"];
    match game {
        "kuhn_poker" => RANKS.get(a).copied(),
        "leduc_poker" => RANKS.get(a / 2).copied(),
        _ => None,
    }
}

/// Kuhn and Leduc poker: player `p`'s card after `history` and the public card once dealt, by
/// name. Both games deal player 0's card, then player 1's; any later deal is public.
fn card_names(game: &dyn Game, history: &[Action], p: usize) -> Option<String> {
    small_poker_card(game.short_name(), 0)?;
    let mut state = game.new_initial_state();
    let mut dealt = Vec::new();
    for &a in history {
        if state.turn() == Turn::Chance {
            dealt.push(small_poker_card(game.short_name(), a)?);
        }
        state.apply_action(a);
    }
    let mine = dealt.get(p)?;
    Some(match dealt.get(2..).filter(|b| !b.is_empty()) {
        Some(board) => format!("{mine} | board {}", board.join(" ")),
        None => mine.to_string(),
    })
}

/// `player=0 move=Call` as `Call` (OpenSpiel's action names without the player prefix).
pub fn strip_move(s: String) -> String {
    match s.find("move=") {
        Some(i) => s[i + "move=".len()..].to_string(),
        None => s,
    }
}

/// Answers `/api/table` from `rows`: `player` and `filter` (a substring of the infostate)
/// select, `offset` and `limit` page (limit at most [`MAX_LIMIT`], default 200).
pub fn query(rows: &[Row], req: &Incoming) -> Result<Value, ApiError> {
    let number = |name: &str, default: usize| -> Result<usize, ApiError> {
        match req.param(name) {
            None | Some("") => Ok(default),
            Some(t) => t.parse::<usize>().map_err(|_| {
                ApiError::bad(format!("`{name}` `{t}` is not a non-negative integer"))
            }),
        }
    };
    let player = match req.param("player") {
        None | Some("") => None,
        Some(t) => match t.parse::<usize>() {
            Ok(p @ (0 | 1)) => Some(p),
            _ => return Err(ApiError::bad(format!("`player` `{t}` is not 0 or 1"))),
        },
    };
    let filter = req.param("filter").unwrap_or("");
    let offset = number("offset", 0)?;
    let limit = number("limit", 200)?;
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::bad(format!(
            "`limit` {limit} is not in 1..={MAX_LIMIT}"
        )));
    }
    let matching: Vec<&Row> = rows
        .iter()
        .filter(|r| player.is_none_or(|p| r.player == p) && r.infostate.contains(filter))
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(limit)
        .map(|r| {
            json!({
                "player": r.player,
                "cards": r.cards,
                "infostate": r.infostate,
                "actions": r.actions.iter().map(|(a, name, p)| {
                    json!({"action": a, "label": name, "prob": p})
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({
        "total": rows.len(),
        "matching": matching.len(),
        "offset": offset,
        "rows": page,
    }))
}
