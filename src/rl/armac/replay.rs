//! The learner's replay memory of trajectories.

use super::trajectory::Trajectory;

/// The learner's replay memory: the most recent trajectories, first in first out.
pub struct Replay {
    /// Oldest first.
    pub items: std::collections::VecDeque<Trajectory>,
    /// Most trajectories kept.
    pub capacity: usize,
    /// Information-state tensor length of the stored steps.
    pub info_len: usize,
    /// Distinct actions of the game.
    pub num_actions: usize,
}

impl Replay {
    /// Appends `t`, dropping the oldest trajectory when full.
    pub fn push(&mut self, t: Trajectory) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(t);
    }
}
