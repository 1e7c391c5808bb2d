//! ARMAC (Gruslys et al., "The Advantage Regret-Matching Actor-Critic", 2020) above the
//! networks: the actor threads, the learner's batches and memories, and the exact bookkeeping
//! its tests compare against. The network itself lives in [`crate::nn::armac`]; this module
//! reaches it only through that module's plain-data batches and inference handle.
//!
//! Plain `f64` arithmetic, tested exactly:
//! * [`targets`] — Tree-Backup(λ) returns (Precup, Sutton & Singh 2000) used to train the
//!   history critic `q_θ(h, a)` off-policy (Algorithm 1, "Use Tree-Backup(λ) to train the
//!   critic").
//! * [`reservoir`] — reservoir sampling (Vitter's Algorithm R) for the past-policy reservoir of
//!   section 3.1 ("reservoir sampling with buffer of size of 1024 was used to prune past
//!   policies").
//! * [`regret`] — [`regret::TabularArmac`], ARMAC's tabular limit: the exact conditional
//!   advantage `W^T` of Eq. 3, whose regret-matching policy equals CFR's (Lemma 1, proved in
//!   Appendix D). Its tests check that limit against [`crate::cfr::TabularSolver`] epoch by
//!   epoch. (`NormalizedReLU`, Eq. 1, is [`crate::policy::probs::normalized_relu`].)
//! * [`candidates`] — the adaptive behaviour-policy selection of section 3.3 (candidate pool,
//!   per-epoch returns against the average policy, "best used half of the times", ε-mixing).
//!
//! With the networks:
//! * [`trajectory`], [`actor`], [`learner`], [`sequence`] — the actor threads' lock-step
//!   episode groups and the learner's (feed-forward and recurrent) batch construction;
//! * [`replay`] — the learner's replay memory; [`memory`] — the reservoir memories of the
//!   mean-regret and average-policy targets (`armac.memory = "reservoir"`);
//! * [`exact`] — exact advantages from the game tree for the `exact_advantages` ablation;
//!   [`table`] — the table that replaces the mean-regret head in the `tabular_w` ablation;
//! * [`policy`] — the average-policy head as a [`crate::policy::Policy`] and an LBR range
//!   policy.
//!
//! Student of Games: [`sog`] — sound self-play games with continual re-solving, the query
//! buffer and the CVPN's example replay.

pub mod actor;
pub mod armac;
pub mod candidates;
pub mod exact;
pub mod holdem_sog;
pub mod learner;
pub mod memory;
pub mod policy;
pub mod regret;
pub mod replay;
pub mod reservoir;
pub mod sequence;
pub mod settings;
pub mod sog;
pub mod table;
pub mod targets;
pub mod trajectory;
pub mod working_set;
