//! The string choices of the config sections as enums: a value outside the list is refused
//! while the file is typed, and serde's message lists the accepted spellings
//! (`unknown variant `tpu`, expected one of `flex`, `cpu`, ...`); [`super::Config::from_table`]
//! puts the dotted key in front of it.

pub use crate::nn::DeviceName;
use serde::{Deserialize, Serialize};

/// `sog.search.engine`: the regret engine of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchEngine {
    /// The `f64` reference engine, on the CPU.
    Scalar,
    /// Burn tensor operations (`crate::nn::public::engine`).
    Tensor,
}

impl SearchEngine {
    /// The spelling in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchEngine::Scalar => "scalar",
            SearchEngine::Tensor => "tensor",
        }
    }
}

/// `sog.search.final`: the strategy a search answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchFinal {
    /// The average strategy of the search's CFR iterations.
    Average,
    /// The current (last) strategy.
    Current,
}
