//! Policies: what a player does at each information state.
//!
//! [`Policy`] is the one interface through which evaluators (best response, NashConv, LBR) see
//! any strategy: tabular ones, simple baselines, and later neural networks. Tabular policies
//! read and write OpenSpiel's JSON layout so users can evaluate our strategies in OpenSpiel:
//!
//! ```json
//! {"game": "<OpenSpiel load string>", "policy": {"<information_state_string>": [[action, prob], ...]}}
//! ```

pub mod probs;

use crate::game::{Action, GameParams, State, Turn};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Errors for bad or mismatched policies.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("policy file {path} is not valid policy JSON: {reason}")]
    Format { path: String, reason: String },
    #[error("policy is for game `{found}` but the game is `{expected}`")]
    WrongGame { found: String, expected: String },
    #[error("policy has no entry for information state {key:?}")]
    MissingInfostate { key: String },
    #[error(
        "policy has an entry for information state {key:?}, which is not one of {game}'s (a \
         policy for another game or variant, or a damaged key)"
    )]
    UnknownInfostate { key: String, game: String },
    #[error("policy entry for information state {key:?} is invalid: {reason}")]
    BadEntry { key: String, reason: String },
    #[error("policy queried at a state where no player acts")]
    NotADecision,
    #[error("policy {policy}: {reason}")]
    Failed { policy: String, reason: String },
}

/// A strategy for both players.
pub trait Policy: Send + Sync {
    /// Probabilities of the legal actions of the player to move at `state`, aligned with
    /// `state.legal_actions()`; non-negative and summing to 1.
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError>;

    /// [`Self::action_probabilities`] at each of `states` (decisions all); policies that
    /// evaluate a network override it to do one forward pass for the whole batch.
    fn batch_action_probabilities(
        &self,
        states: &[&dyn State],
    ) -> Result<Vec<Vec<f64>>, PolicyError> {
        states
            .iter()
            .map(|s| self.action_probabilities(*s))
            .collect()
    }

    /// A short human-readable name (for logs).
    fn name(&self) -> String;

    /// The information states of a table (its keys), for policies that are one; `None` for
    /// the others. [`crate::eval::tree_policy`] refuses a table with a state the game lacks.
    fn table_keys(&self) -> Option<Vec<&str>> {
        None
    }
}

/// A shared policy is a policy (so one loaded network or table can serve several
/// evaluations, e.g. from the Python module).
impl<P: Policy + ?Sized> Policy for std::sync::Arc<P> {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        (**self).action_probabilities(state)
    }

    fn batch_action_probabilities(
        &self,
        states: &[&dyn State],
    ) -> Result<Vec<Vec<f64>>, PolicyError> {
        (**self).batch_action_probabilities(states)
    }

    fn name(&self) -> String {
        (**self).name()
    }

    fn table_keys(&self) -> Option<Vec<&str>> {
        (**self).table_keys()
    }
}

fn acting_player(state: &dyn State) -> Result<usize, PolicyError> {
    match state.turn() {
        Turn::Player(p) => Ok(p),
        _ => Err(PolicyError::NotADecision),
    }
}

/// Every legal action equally likely.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformPolicy;

impl Policy for UniformPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        acting_player(state)?;
        let n = state.legal_actions().len();
        Ok(vec![1.0 / n as f64; n])
    }

    fn name(&self) -> String {
        "uniform".into()
    }
}

/// Always the lowest legal action (OpenSpiel's `FirstActionPolicy`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstLegalPolicy;

impl Policy for FirstLegalPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        acting_player(state)?;
        let n = state.legal_actions().len();
        let mut v = vec![0.0; n];
        v[0] = 1.0;
        Ok(v)
    }

    fn name(&self) -> String {
        "first-legal".into()
    }
}

/// A policy table keyed by information-state string.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TabularPolicy {
    /// OpenSpiel load string of the game the table is for.
    pub game: String,
    /// Action probabilities per information-state string, in ascending action order.
    pub table: HashMap<String, Vec<(Action, f64)>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    game: String,
    policy: BTreeMap<String, Vec<(Action, f64)>>,
}

/// Tolerance on the sum of an entry's probabilities.
const SUM_TOLERANCE: f64 = 1e-6;

impl TabularPolicy {
    /// An empty table for `game`.
    pub fn new(game: &str) -> Self {
        TabularPolicy {
            game: game.to_string(),
            table: HashMap::new(),
        }
    }

    /// Parses OpenSpiel-compatible policy JSON; `origin` names the source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, PolicyError> {
        let file: PolicyFile = serde_json::from_str(text).map_err(|e| PolicyError::Format {
            path: origin.to_string(),
            reason: e.to_string(),
        })?;
        let mut table = HashMap::with_capacity(file.policy.len());
        for (key, entry) in file.policy {
            validate_entry(&key, &entry)?;
            table.insert(key, entry);
        }
        Ok(TabularPolicy {
            game: file.game,
            table,
        })
    }

    /// A table for the game with load string `game` from `(infostate, entries)` pairs, each
    /// entry validated as [`TabularPolicy::from_json`] validates it (values kept bit for bit).
    pub fn from_entries(
        game: &str,
        entries: impl IntoIterator<Item = (String, Vec<(Action, f64)>)>,
    ) -> Result<Self, PolicyError> {
        let mut table = HashMap::new();
        for (key, entry) in entries {
            validate_entry(&key, &entry)?;
            table.insert(key, entry);
        }
        Ok(TabularPolicy {
            game: game.to_string(),
            table,
        })
    }

    /// Reads a policy JSON file.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// Serialises to OpenSpiel-compatible JSON (keys sorted, so output is deterministic).
    pub fn to_json(&self) -> String {
        let file = PolicyFile {
            game: self.game.clone(),
            policy: self
                .table
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        serde_json::to_string(&file).expect("policy serialisation cannot fail")
    }

    /// Fails unless the policy was written for the game with load string `expected`
    /// (compared after parsing, so parameter order and spacing do not matter).
    pub fn check_game(&self, expected: &str) -> Result<(), PolicyError> {
        let same = match (GameParams::parse(&self.game), GameParams::parse(expected)) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.game.trim() == expected.trim(),
        };
        if same {
            Ok(())
        } else {
            Err(PolicyError::WrongGame {
                found: self.game.clone(),
                expected: expected.to_string(),
            })
        }
    }
}

fn validate_entry(key: &str, entry: &[(Action, f64)]) -> Result<(), PolicyError> {
    let bad = |reason: String| PolicyError::BadEntry {
        key: key.to_string(),
        reason,
    };
    if entry.is_empty() {
        return Err(bad("no actions".into()));
    }
    let mut sum = 0.0;
    let mut seen = Vec::with_capacity(entry.len());
    for &(a, p) in entry {
        if !p.is_finite() || p < 0.0 {
            return Err(bad(format!(
                "probability {} of action {a}",
                crate::util::check::short_number(p)
            )));
        }
        if seen.contains(&a) {
            return Err(bad(format!("action {a} listed twice")));
        }
        seen.push(a);
        sum += p;
    }
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(bad(format!(
            "probabilities sum to {}",
            crate::util::check::short_number(sum)
        )));
    }
    Ok(())
}

impl Policy for TabularPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let p = acting_player(state)?;
        let key = state.information_state_string(p);
        let entry = self
            .table
            .get(&key)
            .ok_or_else(|| PolicyError::MissingInfostate { key: key.clone() })?;
        let legal = state.legal_actions();
        let mut probs = vec![0.0; legal.len()];
        for &(a, pr) in entry {
            match legal.binary_search(&a) {
                Ok(i) => probs[i] = pr,
                Err(_) if pr == 0.0 => {}
                Err(_) => {
                    return Err(PolicyError::BadEntry {
                        key,
                        reason: format!("action {a} is not legal there (legal: {legal:?})"),
                    });
                }
            }
        }
        Ok(probs)
    }

    fn name(&self) -> String {
        format!("tabular({} infostates)", self.table.len())
    }

    fn table_keys(&self) -> Option<Vec<&str>> {
        Some(self.table.keys().map(String::as_str).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_and_validation() {
        let mut p = TabularPolicy::new("kuhn_poker");
        p.table.insert("0".into(), vec![(0, 0.25), (1, 0.75)]);
        let back = TabularPolicy::from_json(&p.to_json(), "test").unwrap();
        assert_eq!(back, p);
        let bad = r#"{"game":"kuhn_poker","policy":{"0":[[0,0.5],[1,0.6]]}}"#;
        let e = TabularPolicy::from_json(bad, "x.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"0\"") && e.contains("sum"), "{e}");
        let e = TabularPolicy::from_json("{\"game\": 3}", "x.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.json"), "{e}");
        assert!(p.check_game("kuhn_poker()").is_ok());
        let e = TabularPolicy::from_entries("kuhn_poker", [("1".to_string(), vec![(0, -0.5)])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"1\"") && e.contains("-0.5"), "{e}");
        let back = TabularPolicy::from_entries("kuhn_poker", p.table.clone()).unwrap();
        assert_eq!(back, p);
        assert!(p.check_game("leduc_poker").is_err());
    }
}
