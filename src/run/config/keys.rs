//! The reference list of config keys, read from the config structs themselves: serde's derived
//! `Deserialize` hands every struct's field names to the deserializer, and [`fields_of`] asks for
//! them with a deserializer that records them and stops. A field added to a section therefore
//! appears in [`key_reference`] without further edits; a new nested section needs a line in
//! [`nested`].

use super::{
    ArmacSettings, CheckpointConfig, Config, EvalConfig, SogConfig, SogNetConfig, SogSearchConfig,
    SogSelfPlayConfig,
};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The keys of the `[solver]` section's own fields. `SolverConfig` flattens the algorithm's keys
/// into a table, which hides its field names from serde, so they are listed here (and a unit
/// test checks the list against the struct).
pub(super) const SOLVER_KEYS: &[&str] = &[
    "algorithm",
    "iterations",
    "updates",
    "averaging",
    "alpha",
    "beta",
    "gamma",
];

/// The keys of the batched solvers (`batched-cfr`, `batched-pos`) besides their inner
/// algorithm's (`run::solvers` takes these four out of the table first).
pub(super) const BATCHED_KEYS: &[&str] = &["device", "batch", "precision", "variant"];

/// Every dotted key a config accepts, in the order of the structs' fields, each once: the
/// top-level keys (`game`, `seed`), then every section's (`solver.*` with the keys of all
/// solver algorithms, `armac.*`, `sog.*` with its subsections, `eval.*`, `checkpoint.*`,
/// `cluster.*`).
pub fn key_reference() -> Vec<String> {
    let mut keys = Vec::new();
    walk("", &fields_of::<Config>(), &mut keys);
    let mut seen = std::collections::HashSet::new();
    keys.retain(|k| seen.insert(k.clone()));
    keys
}

/// Adds `prefix.field` for every field, descending into nested sections.
fn walk(prefix: &str, fields: &[&str], out: &mut Vec<String>) {
    for field in fields {
        let key = if prefix.is_empty() {
            field.to_string()
        } else {
            format!("{prefix}.{field}")
        };
        match nested(&key) {
            Some(Section::Fields(inner)) => walk(&key, &inner, out),
            Some(Section::Solver) => solver_keys(&key, out),
            None => out.push(key),
        }
    }
}

/// A key that is a section rather than a value.
enum Section {
    /// A struct: its field names.
    Fields(Vec<&'static str>),
    /// `[solver]`: its own fields and the algorithms' options.
    Solver,
}

/// The sections, by dotted key.
fn nested(key: &str) -> Option<Section> {
    let fields = match key {
        "solver" => return Some(Section::Solver),
        "armac" => fields_of::<ArmacSettings>(),
        "sog" => fields_of::<SogConfig>(),
        "sog.search" => fields_of::<SogSearchConfig>(),
        "sog.net" => fields_of::<SogNetConfig>(),
        "sog.selfplay" => fields_of::<SogSelfPlayConfig>(),
        "eval" => fields_of::<EvalConfig>(),
        "checkpoint" => fields_of::<CheckpointConfig>(),
        "cluster" => fields_of::<crate::cluster::ClusterConfig>(),
        _ => return None,
    };
    Some(Section::Fields(fields))
}

/// `solver.*`: the common keys, then every algorithm's own (MCCFR family, POS, the
/// first-order methods, the batched solvers).
fn solver_keys(prefix: &str, out: &mut Vec<String>) {
    let all = SOLVER_KEYS
        .iter()
        .copied()
        .chain(fields_of::<crate::cfr::mccfr::MccfrOptions>())
        .chain(fields_of::<crate::cfr::pos::PosOptions>())
        .chain(fields_of::<crate::cfr::sfo::SfoOptions>())
        .chain(BATCHED_KEYS.iter().copied());
    out.extend(all.map(|k| format!("{prefix}.{k}")));
}

/// The field names a derived `Deserialize` of a struct reads (empty for anything else).
pub(super) fn fields_of<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    let mut fields = None;
    let _ = T::deserialize(FieldProbe(&mut fields));
    fields.unwrap_or_default().to_vec()
}

/// A deserializer that records the field names of the struct asked for and fails.
struct FieldProbe<'a>(&'a mut Option<&'static [&'static str]>);

/// The only error of [`FieldProbe`].
#[derive(Debug)]
struct Probed;

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names recorded")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Probed
    }
}

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = Some(fields);
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}
