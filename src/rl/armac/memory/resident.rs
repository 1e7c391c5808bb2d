//! What the learner's device copy of the reservoirs needs from a [`Memory`]
//! (`armac.device_memory`): the slots that changed since the last step, as rows in the
//! layout of [`crate::nn::armac::ResidentUpdate`], and the slots a step draws.

use super::{Memory, target};
use crate::nn::armac::{ResidentDraw, ResidentStep, ResidentUpdate};
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// Where the learner reads reservoir rows from (`armac.device_memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceMemory {
    /// A device copy for a GPU learner (`device = "wgpu"` or `"cuda"`) when the memory settings
    /// allow one ([`Memory::supports_device_rows`]), the host otherwise.
    #[default]
    Auto,
    /// Every drawn row is uploaded with the step.
    Host,
    /// A copy of both reservoirs on the learner's device.
    Device,
}

impl DeviceMemory {
    /// Whether a learner on `device` (its config name) keeps a device copy of `memory`.
    pub fn on_device(self, device: &str, memory: &Memory) -> bool {
        match self {
            DeviceMemory::Host => false,
            DeviceMemory::Device => true,
            DeviceMemory::Auto => {
                matches!(device, "wgpu" | "cuda")
                    && memory.supports_device_rows()
                    && memory.regret.capacity() <= crate::nn::armac::RESIDENT_MAX_CAPACITY
            }
        }
    }
}

impl Memory {
    /// Whether rows can be drawn from a device copy: each row's target is its own sample's
    /// (`memory_targets = "sample"`).
    pub fn supports_device_rows(&self) -> bool {
        !self.targets.is_mean()
    }

    /// Records, from now on, which slots change; every slot held counts as changed (a device
    /// copy starts empty, also when a run resumes with full reservoirs).
    pub fn track_changes(&mut self) {
        self.changed = Some([&self.regret, &self.policy].map(|r| (0..r.len()).collect()));
    }

    /// The rows that changed since the last call (or [`Self::track_changes`]) and the slots
    /// and weights of `n` rows drawn from each reservoir ([`Self::draw_slots`], the same draw
    /// [`Self::push_rows`] makes from the same `rng`), for a net of `input` floats and
    /// `num_actions` actions.
    ///
    /// # Panics
    /// Without [`Self::track_changes`], or when [`Self::supports_device_rows`] is false.
    pub fn resident_step(
        &mut self,
        n: usize,
        rng: &mut SplitMix64,
        input: usize,
        num_actions: usize,
    ) -> ResidentStep {
        assert!(
            self.supports_device_rows(),
            "resident_step: these memory settings do not draw sample rows"
        );
        let [regret_changed, policy_changed] = self
            .changed
            .as_mut()
            .map(std::mem::take)
            .expect("resident_step needs track_changes");
        let updates = [
            (&self.regret, regret_changed),
            (&self.policy, policy_changed),
        ]
        .map(|(res, mut slots)| {
            slots.sort_unstable();
            slots.dedup();
            let mut rows = Vec::with_capacity(slots.len() * (input + 2 * num_actions));
            for &slot in &slots {
                let s = &res.items()[slot].step;
                push_row(
                    &mut rows,
                    &s.info[s.player],
                    &s.legal,
                    target(s),
                    num_actions,
                );
            }
            ResidentUpdate { slots, rows }
        });
        let draws = self.draw_slots(n, rng).map(|d| ResidentDraw {
            slots: d.iter().map(|&(s, _)| s).collect(),
            weights: d.iter().map(|&(_, w)| w).collect(),
        });
        ResidentStep { updates, draws }
    }
}

/// One row of a device table: the tensor, the legal mask, the target masked to the legal
/// actions and padded to `a` entries.
fn push_row(rows: &mut Vec<f32>, own: &[f32], legal: &[bool], target: &[f32], a: usize) {
    rows.extend_from_slice(own);
    rows.extend((0..a).map(|i| f32::from(u8::from(legal.get(i) == Some(&true)))));
    rows.extend((0..a).map(|i| {
        if legal.get(i) == Some(&true) {
            target.get(i).copied().unwrap_or(0.0)
        } else {
            0.0
        }
    }));
}
