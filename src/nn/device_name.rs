//! Compute devices by name, as configs spell them.

use serde::{Deserialize, Serialize};

/// A compute device by name (`armac.device`, `sog.device`, `sog.search.device`), as
/// [`super::select_device`] reads it: `flex` (the CPU backend; `cpu` is the same), `wgpu`,
/// `cuda`, or `default` for the best backend compiled in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceName {
    #[default]
    Flex,
    Cpu,
    Wgpu,
    Cuda,
    Default,
}

impl DeviceName {
    /// The spelling in the config (and the name [`super::select_device`] takes).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceName::Flex => "flex",
            DeviceName::Cpu => "cpu",
            DeviceName::Wgpu => "wgpu",
            DeviceName::Cuda => "cuda",
            DeviceName::Default => "default",
        }
    }
}

/// Compares with the spelling (`device == "cuda"`).
impl PartialEq<&str> for DeviceName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Compares with the spelling.
impl PartialEq<String> for DeviceName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}
