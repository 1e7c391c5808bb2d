//! Trajectories produced by ARMAC's actors and consumed by its learner.
//!
//! A trajectory records every decision of one episode (chance steps are not stored: the critic
//! sees histories through both players' information-state tensors, so chance is part of the
//! environment's transition, as in the paper's footnote on augmented information states).

/// One decision point of an episode.
#[derive(Clone, Debug)]
pub struct Step {
    /// The player who acted.
    pub player: usize,
    /// Information-state tensors of player 0 and player 1 at this history (the critic's input;
    /// `info[player]` is the acting player's own input).
    pub info: [Vec<f32>; 2],
    /// Legal actions, as a mask over the game's distinct actions.
    pub legal: Vec<bool>,
    /// The action taken.
    pub action: usize,
    /// At the learning player's decisions in learning episodes: the past network's advantages
    /// `q_j(h, a) − v_j(h)` for every action (zero on illegal ones), the mean-regret target.
    pub advantage: Option<Vec<f32>>,
    /// At the opponent's decisions in learning episodes: the policy `π^j(s)` it played, the
    /// average-policy target.
    pub played_policy: Option<Vec<f32>>,
}

/// One finished episode.
#[derive(Clone, Debug)]
pub struct Trajectory {
    /// The epoch whose snapshots generated it.
    pub epoch: u64,
    /// The learning player `i` of Algorithm 1.
    pub learning_player: usize,
    /// `false` for episodes that only rank exploration candidates: they may train the critic but
    /// not the regret or policy heads.
    pub learning: bool,
    pub steps: Vec<Step>,
    /// Terminal returns of both players.
    pub returns: [f32; 2],
}

impl Trajectory {
    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// `true` for an episode without decisions.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}
