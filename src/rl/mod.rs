//! The pure algorithmic pieces of ARMAC (Gruslys et al., "The Advantage Regret-Matching
//! Actor-Critic", 2020) that need no neural network: everything here is plain `f64` arithmetic
//! and bookkeeping, so it can be unit-tested exactly and shared by the network trainer.
//!
//! * [`targets`] — Tree-Backup(λ) returns (Precup, Sutton & Singh 2000) used to train the
//!   history critic `q_θ(h, a)` off-policy (Algorithm 1, "Use Tree-Backup(λ) to train the
//!   critic").
//! * [`reservoir`] — reservoir sampling (Vitter's Algorithm R) for the past-policy reservoir of
//!   section 3.1 ("reservoir sampling with buffer of size of 1024 was used to prune past
//!   policies").
//! * [`regret`] — `NormalizedReLU` (Eq. 1) and [`regret::TabularArmac`], ARMAC's tabular limit:
//!   the exact conditional advantage `W^T` of Eq. 3, whose regret-matching policy equals CFR's
//!   (Lemma 1, proved in Appendix D). Its tests check that limit against
//!   [`crate::cfr::TabularSolver`] epoch by epoch.
//! * [`candidates`] — the adaptive behaviour-policy selection of section 3.3 (candidate pool,
//!   per-epoch returns against the average policy, "best used half of the times", ε-mixing).
//! * [`trajectory`], [`actor`], [`learner`] — the actor threads' lock-step episode groups and
//!   the learner's batch construction, which use the networks of [`crate::nn::armac`].
//!
//! Only `actor` and `learner` touch networks (through `crate::nn::armac`'s plain-data batches).

pub mod actor;
pub mod candidates;
pub mod learner;
pub mod regret;
pub mod reservoir;
pub mod sequence;
pub mod targets;
pub mod trajectory;
