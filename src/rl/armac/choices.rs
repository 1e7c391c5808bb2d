//! The actors' setting choices that the configuration, the actors and the exact-value
//! bookkeeping all read: how past epochs are drawn, what a stored mean-regret target averages
//! over, and the learning player's behaviour policy. They sit below [`super::actor`] and
//! [`super::exact_values`] so that neither has to import the other for them.

/// How often the actors draw a past epoch `j` (and the exploring network and candidate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PastDraw {
    /// Every episode draws its own (Algorithm 1; default).
    #[default]
    Episode,
    /// Always the previous epoch `j = t − 1` (with the reservoir memory, which keeps every
    /// epoch's advantages; see [`super::memory`]).
    Latest,
}
/// What a stored mean-regret target averages over (`armac.advantage_target`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdvantageTarget {
    /// `q_j(h, ·) − v_j(h)` at the sampled history `h` (Algorithm 1 as stated): its expectation
    /// given the information state is the counterfactual regret divided by the counterfactual
    /// reach, and the opponent's private information it depends on is noise.
    #[default]
    History,
    /// That expectation itself: the advantages of every history `h'` the learning player cannot
    /// tell from `h`, averaged with the weights of chance and the opponent's policy `π^j`.
    Infoset,
    /// `q_j(h, ·) − v_j(h)` plus the sampled episode's correction: the critic serves as a
    /// control variate (the baseline-corrected values of Davis, Schmid and Bowling, Eq. 4-5 of
    /// the baselines paper, with `π^j` as the target policy at both players' decisions and the
    /// behaviour probability of each sampled action in the denominator), so the stored target's
    /// expectation is `π^j`'s exact advantage at `h` whatever the critic's error; the critic
    /// only lowers its variance. See
    /// [`corrected_advantages`](super::actor::corrected_advantages).
    Corrected,
    /// [`Self::Corrected`] with the critic's advantage at the sampled history replaced, as
    /// the control variate's mean, by its average over the learning player's information state
    /// (the histories and weights of [`Self::Infoset`]): the target is
    /// `ũ(h, ·) − ũ(h) − A_c(h) + Σ_h' w(h') A_c(h')` with `A_c = q_j − v_j` the past critic's
    /// advantages. Given the information state the sampled `h` has probability `w(h)`, so the
    /// two critic terms cancel in expectation and the target keeps [`Self::Corrected`]'s
    /// expectation; what the opponent's private information does to the critic's advantages no
    /// longer varies the target (feed-forward networks; a game with more than
    /// [`MAX_SHADOWS`](super::actor::MAX_SHADOWS) histories per information state falls back
    /// to [`Self::Corrected`]).
    #[serde(rename = "corrected_infoset")]
    CorrectedInfoset,
}

impl AdvantageTarget {
    /// Whether the targets are corrected at the end of the episode (the critic as a control
    /// variate).
    pub fn is_corrected(self) -> bool {
        matches!(self, Self::Corrected | Self::CorrectedInfoset)
    }

    /// Whether the actors track the histories of the learning player's information state.
    pub fn uses_infoset(self) -> bool {
        matches!(self, Self::Infoset | Self::CorrectedInfoset)
    }
}

/// The learning player's behaviour policy in learning episodes (`armac.behaviour`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// An exploration candidate (section 3.3) of the latest or a past network.
    #[default]
    Candidates,
    /// The uniform policy, in every epoch.
    Uniform,
}

/// How actors and learner share an epoch (`armac.schedule`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Actor threads play while the learner learns (default; the faster one): the order in
    /// which trajectories reach the learner depends on thread timing, so two runs of one seed
    /// differ.
    #[default]
    Concurrent,
    /// Actors and learner take turns in a fixed order: every group of episodes draws from a
    /// stream of its own (seed, epoch, group), the learner from one of (seed, epoch) and takes
    /// trajectories in group order, so a run is a function of its config and seed alone — the
    /// same files whatever the number of actor threads, interrupted and resumed or not.
    Lockstep,
}
