//! Experiment configs: TOML files with typed, defaulted, nested sections that reject unknown
//! keys, plus dotted `--set a.b=value` overrides from the command line. A config is validated
//! once into typed settings ([`ArmacRun`], whose `[armac]` section is `rl::armac`'s
//! [`ArmacSettings`], and `SogSettings` here, the `[solver]`
//! section's [`TabularSettings`](super::solvers::TabularSettings) in [`super::solvers`]); the
//! resolved config is saved in the run directory and beside every checkpoint.
//!
//! One file per section: `solver`, `armac`, `sog`, `schedule` (`[eval]` and
//! `[checkpoint]`); the `[cluster]` section is [`crate::cluster::ClusterConfig`]. String choices
//! are the enums of `choice`, the bounds shared by the sections are in `validate`, and
//! [`key_reference`] lists every key the sections accept.

mod armac;
mod choice;
mod keys;
mod retired;
mod schedule;
mod sog;
mod solver;
mod validate;

pub use armac::{ArmacRun, ArmacSettings, PolyakScope};
pub use choice::{DeviceName, SearchEngine, SearchFinal};
pub use keys::key_reference;
pub use schedule::{CheckpointConfig, EvalConfig};
pub use sog::{SogConfig, SogNetConfig, SogSearchConfig, SogSelfPlayConfig};
pub use solver::SolverConfig;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Errors in configs and overrides; each names the file or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config `{name}` not found (looked in: {searched})")]
    NotFound { name: String, searched: String },
    #[error("cannot read config {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("config {origin} is invalid: {reason}")]
    Invalid { origin: String, reason: String },
    #[error("override `{text}`: {reason}")]
    Override { text: String, reason: String },
    #[error("config key `{key}`: {reason}")]
    Value { key: String, reason: String },
}

impl From<crate::util::check::KeyError> for ConfigError {
    fn from(e: crate::util::check::KeyError) -> Self {
        ConfigError::Value {
            key: e.key,
            reason: e.reason,
        }
    }
}

/// The whole config file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Game name or OpenSpiel-style game string (see `armac::games::load_game`).
    pub game: String,
    /// Seed of every random stream of the run.
    #[serde(default)]
    pub seed: u64,
    /// Tabular full-width solver (CFR family). Exactly one algorithm section must be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver: Option<SolverConfig>,
    /// ARMAC (Advantage Regret-Matching Actor-Critic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armac: Option<ArmacSettings>,
    /// Student of Games: a CVPN trained by sound self-play.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sog: Option<SogConfig>,
    /// Evaluation schedule.
    #[serde(default)]
    pub eval: EvalConfig,
    /// Checkpoint schedule.
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// ARMAC actors in other processes or on other machines, through a broker (see
    /// [`crate::cluster`]); absent: actor threads in this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterConfig>,
}

/// Default width of the hidden layers (`armac.hidden`, `sog.net.hidden`).
fn d_hidden() -> usize {
    128
}
/// Default number of hidden layers (`armac.layers`, `sog.net.layers`).
fn d_layers() -> usize {
    2
}
/// Default network device (`armac.device`, `sog.device`).
fn d_device() -> DeviceName {
    DeviceName::Flex
}
fn d_true() -> bool {
    true
}

/// Finds a config: an existing path, or a bare name (with or without `.toml`) in the working
/// directory's `configs/`.
pub fn resolve_config_path(name: &str) -> Result<PathBuf, ConfigError> {
    let direct = PathBuf::from(name);
    let mut candidates = vec![direct.clone()];
    if direct.components().count() == 1 {
        candidates.push(Path::new("configs").join(name));
        if !name.ends_with(".toml") {
            candidates.push(Path::new("configs").join(format!("{name}.toml")));
        }
    }
    if !candidates.iter().any(|p| p.is_file()) && direct.is_dir() {
        return Err(ConfigError::Invalid {
            origin: name.to_string(),
            reason: "it is a directory, not a config file (name a .toml file; --resume DIR \
                     continues the run in a run directory)"
                .into(),
        });
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| ConfigError::NotFound {
            name: name.to_string(),
            searched: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Most bytes a config file may have (the shipped ones have a few kilobytes).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a TOML file (of at most `MAX_CONFIG_BYTES`) into a table (not yet typed, so
/// overrides can be applied).
pub fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    use std::io::Read;
    let io = |source| ConfigError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::Invalid {
            origin: path.display().to_string(),
            reason: format!("more than {MAX_CONFIG_BYTES} bytes: not a config file"),
        });
    }
    text.parse::<toml::Table>()
        .map_err(|e| ConfigError::Invalid {
            origin: path.display().to_string(),
            reason: if e.message().contains("as i128") {
                format!(
                    "{}\nthe integer is out of range (at most {})",
                    e.to_string().trim_end(),
                    i64::MAX
                )
            } else {
                e.to_string()
            },
        })
}

/// Applies one `a.b.c=value` override; `value` is read as a TOML value (number, boolean,
/// quoted string, array) or, failing that, as a bare string.
pub fn apply_override(table: &mut toml::Table, text: &str) -> Result<(), ConfigError> {
    let err = |reason: &str| ConfigError::Override {
        text: text.to_string(),
        reason: reason.to_string(),
    };
    let (key, raw) = text
        .split_once('=')
        .ok_or_else(|| err("expected KEY=VALUE"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|k| k.is_empty()) {
        return Err(err("empty key"));
    }
    let raw = raw.trim();
    let digits = raw.strip_prefix(['-', '+']).unwrap_or(raw);
    if !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
        && raw.replace('_', "").parse::<i64>().is_err()
    {
        return Err(err(&format!(
            "the integer {raw} is out of range (at most {})",
            i64::MAX
        )));
    }
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = table;
    for part in &parts[..parts.len() - 1] {
        let entry = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| err(&format!("`{part}` is not a table")))?;
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// The dotted key of the `key = value` line that contains byte `pos` of a TOML text.
fn key_at(text: &str, pos: usize) -> Option<String> {
    let mut section = String::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            section = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        }
        if pos < offset + line.len() {
            let key = t.split('=').next()?.trim();
            if key.is_empty() || t.starts_with('[') {
                return (!section.is_empty()).then_some(section);
            }
            return Some(if section.is_empty() {
                key.to_string()
            } else {
                format!("{section}.{key}")
            });
        }
        offset += line.len();
    }
    None
}

/// A required key reported missing from `section` because it is misspelt there (the
/// `[solver]` section collects the algorithms' own keys, so a typo of `iterations` reads as an
/// unknown key only once the required one is missed): the message naming the misspelt key,
/// or `None` when no key of the section is within two edits of the missing one.
fn misspelt_required(table: &toml::Table, section: &str, e: &toml::de::Error) -> Option<String> {
    let field = e
        .message()
        .strip_prefix("missing field `")?
        .strip_suffix('`')?;
    let keys = table.get(section)?.as_table()?;
    let typo = keys
        .keys()
        .filter(|k| k.as_str() != field)
        .min_by_key(|k| edit_distance(k, field))
        .filter(|k| edit_distance(k, field) <= 2)?;
    Some(format!(
        "key `{section}.{typo}`: unknown field `{typo}`; did you mean `{field}`? (`{section}.\
         {field}` is required)"
    ))
}

/// The Levenshtein distance of two short strings (by characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

impl Config {
    /// Types a table; unknown keys and wrong types are errors naming the key.
    pub fn from_table(mut table: toml::Table, origin: &str) -> Result<Config, ConfigError> {
        retired::strip_retired(&mut table)?;
        let text = toml::to_string(&table).map_err(|e| ConfigError::Invalid {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
        toml::from_str::<Config>(&text).map_err(|e| {
            // A missing top-level key is reported with a span that ends in whatever section
            // comes last; name the key itself instead.
            if let Some(field) = e
                .message()
                .strip_prefix("missing field `")
                .and_then(|m| m.strip_suffix('`'))
                && !table.contains_key(field)
                && field == "game"
            {
                return ConfigError::Invalid {
                    origin: origin.to_string(),
                    reason: format!("missing top-level key `{field}` (e.g. {field} = ...)"),
                };
            }
            let key = e.span().and_then(|span| key_at(&text, span.start));
            if let Some(reason) = key
                .as_deref()
                .and_then(|k| misspelt_required(&table, k, &e))
            {
                return ConfigError::Invalid {
                    origin: origin.to_string(),
                    reason,
                };
            }
            ConfigError::Invalid {
                origin: origin.to_string(),
                reason: match key {
                    Some(k) => format!("key `{k}`: {}", e.message()),
                    None => e.message().to_string(),
                },
            }
        })
    }

    /// Loads a config by name or path and applies overrides.
    pub fn load(name: &str, overrides: &[String]) -> Result<(Config, PathBuf), ConfigError> {
        let path = resolve_config_path(name)?;
        let mut table = read_table(&path)?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        let origin = if overrides.is_empty() {
            path.display().to_string()
        } else {
            format!("{} (with overrides {overrides:?})", path.display())
        };
        Ok((Config::from_table(table, &origin)?, path))
    }

    /// The resolved config as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialisation cannot fail")
    }
}

#[cfg(test)]
mod tests;
