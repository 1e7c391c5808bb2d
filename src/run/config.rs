//! Experiment configs: TOML files with typed, defaulted, nested sections that reject unknown
//! keys, plus dotted `--set a.b=value` overrides from the command line. A config is validated
//! once into typed settings ([`ArmacSettings`] here, the `[solver]` section's
//! [`TabularSettings`](super::solvers::TabularSettings) in [`super::solvers`]); the resolved
//! config is saved in the run directory and beside every checkpoint.

use crate::nn::armac::SnapshotPrecision;
use crate::rl::actor::{AdvantageTarget, Behaviour, PastDraw};
use crate::rl::memory::{MemoryKind, MemorySampling, MemoryTargets, MemoryWeights};
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
    pub armac: Option<ArmacConfig>,
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

/// `[solver]`: a solver over the compiled tree — full-width CFR family or a sampling algorithm
/// (see [`super::solvers`] for the names and their keys).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SolverConfig {
    /// An algorithm name of [`super::solvers::Algorithm`].
    pub algorithm: String,
    /// Number of iterations to run.
    pub iterations: u64,
    /// `alternating` (OpenSpiel's default) or `simultaneous`.
    #[serde(default = "default_updates")]
    pub updates: String,
    /// Override of the averaging: `uniform`, `linear` or `power` (weight t^gamma).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub averaging: Option<String>,
    /// DCFR's α (positive-regret discount exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// DCFR's β (negative-regret discount exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// DCFR's γ (averaging exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// The algorithm's own keys (sampling algorithms); the CFR family accepts none. Unknown
    /// keys are rejected by the algorithm's option parser, naming the key.
    #[serde(flatten)]
    pub extra: toml::Table,
}

fn default_updates() -> String {
    "alternating".into()
}

pub use crate::rl::armac::PolyakScope;

/// `[armac]`: ARMAC's hyper-parameters (defaults follow the paper where it states them).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ArmacConfig {
    /// Number of epochs (Algorithm 1's outer loop).
    pub epochs: u64,
    /// Episodes the actors play per epoch (K_act).
    #[serde(default = "d_episodes")]
    pub episodes_per_epoch: usize,
    /// Learning steps per epoch (K_learn; the paper's epochs are 100 steps).
    #[serde(default = "d_learning_steps")]
    pub learning_steps_per_epoch: usize,
    /// Trajectories per learning batch (the paper: 64).
    #[serde(default = "d_batch")]
    pub batch_trajectories: usize,
    /// Adam's learning rate (the paper: 5e-5; β1 = 0, β2 = 0.999).
    #[serde(default = "d_lr")]
    pub learning_rate: f64,
    /// Tree-Backup's λ.
    #[serde(default = "d_lambda")]
    pub lambda: f64,
    /// Capacity of the reservoir of past networks (the paper: 1024).
    #[serde(default = "d_reservoir")]
    pub reservoir_capacity: usize,
    /// Capacity of the replay memory of trajectories the learner samples from (first in, first
    /// out; at least `episodes_per_epoch`). Section 3 of the paper trains "on all previous data"
    /// from replay memory; past epochs' targets stay valid because each trajectory stores the
    /// advantages and policy of the past network that produced it.
    #[serde(default = "d_replay")]
    pub replay_capacity: usize,
    /// Memory for past networks, in MiB: the actors draw past epochs from a working set of as
    /// many as fit (two f32 networks each), all of the reservoir while it fits; a sixteenth of
    /// the set rotates every epoch (see `rl::working_set`). The default suits a 24 GB machine.
    #[serde(default = "d_snapshot_memory")]
    pub snapshot_memory_mb: usize,
    /// Precision of the reservoir's network files and of the past networks in memory: `f16`
    /// (default; half the disk) or `f32`.
    #[serde(default)]
    pub snapshot_precision: SnapshotPrecision,
    /// Memory of the exploration candidates' ranking (section 3.3): before each epoch's
    /// evaluation returns are added, the earlier tallies are multiplied by this factor in
    /// [0, 1). 0 ranks on the epoch's own evaluations alone (about one evaluation group per
    /// epoch at the default `eval_fraction`).
    #[serde(default)]
    pub candidate_decay: f64,
    /// How often actors draw the past epoch `j` the opponent plays (and the exploring network
    /// and candidate): `"episode"` (Algorithm 1, default) or `"group"` (one draw per lock-step
    /// group of `games_per_group` episodes, as the first version did: measured on Leduc, far
    /// fewer distinct `π^j` per epoch and a noisier mean-regret target).
    ///
    /// `"latest"` always plays the previous epoch `j = t − 1` (each epoch then contributes the
    /// advantages of one policy, and a reservoir `memory` keeps them all); it is the default with
    /// `memory = "reservoir"`, which requires it.
    #[serde(default)]
    pub past_draw: Option<PastDraw>,
    /// Where the mean-regret and average-policy heads get their targets:
    /// * `"replay"` (Algorithm 1 as stated): the decisions of the trajectories in the replay
    ///   memory, with `j` drawn anew in every episode, so the regression target of `W̄` is a
    ///   single-sample advantage of a random past policy;
    /// * `"reservoir"`: every learning decision ever played goes into two reservoirs (regret and
    ///   average-policy samples, uniform over all epochs, `memory_capacity` each) and the heads
    ///   regress on `memory_batch` rows of each per step. With `past_draw = "latest"` each epoch
    ///   adds the advantages of `π^{t−1}`, so the reservoir's mean at an information state is the
    ///   mean regret of Eq. 3 over all epochs and its noise falls with the number of epochs
    ///   instead of staying at the replay's level (the Deep CFR memory, with ARMAC's critic
    ///   giving the advantages). The critic and the immediate-regret head still train on the
    ///   replay. Feed-forward networks only.
    #[serde(default)]
    pub memory: MemoryKind,
    /// Samples kept in each reservoir of `memory = "reservoir"`.
    #[serde(default = "d_memory_capacity")]
    pub memory_capacity: usize,
    /// Rows drawn from each reservoir per learning step.
    #[serde(default = "d_memory_batch")]
    pub memory_batch: usize,
    /// Loss weight of a reservoir sample: `"reach"` (default) divides by the learning player's
    /// behaviour reach `η_i^μ(s)` (clipped at `memory_max_weight`), so that samples from epochs
    /// with different behaviour policies combine as Eq. 3 and the average-policy definition
    /// weigh them; `"none"` weighs them all 1.
    #[serde(default)]
    pub memory_weights: MemoryWeights,
    /// How rows are drawn from the reservoirs: `"uniform"` (default; each row's loss weighted
    /// by its sample's weight) or `"weighted"` (drawn with probability proportional to that
    /// weight, every row weighing the same: the same expected gradient, less spread) or
    /// `"states"` (no draw: one row per information state held, weighted by its samples'
    /// summed weight, which is the weighted draw's expected loss without its noise; needs mean
    /// `memory_targets`, ignores `memory_batch`, and costs a row per distinct state per step,
    /// so it suits games of a few thousand states).
    #[serde(default)]
    pub memory_sampling: MemorySampling,
    /// What reservoir rows regress on: `"sample"` (default; each row its own advantages or
    /// played policy, as Algorithm 1's rows) or `"infoset_mean"` (the weighted mean target of
    /// every sample held at the row's information state: the same objective and expected
    /// gradient, without the targets' spread within a state; `rl::memory` module docs) or
    /// `"infoset_mean_all"` (the weighted mean of every sample ever offered at the state while
    /// the reservoir holds one there: the same estimate from all the data, not the reservoir's
    /// subsample, so its noise keeps falling once the reservoir is full; checkpoints keep the
    /// sums in `memory_means.bin`).
    #[serde(default)]
    pub memory_targets: MemoryTargets,
    /// The learning player's behaviour policy in learning episodes: `"candidates"` (default;
    /// the exploration candidates of section 3.3 computed from the latest or a past network) or
    /// `"uniform"` (one fixed policy for every epoch: all samples at an information state then
    /// share one behaviour reach, which a per-state factor regret matching ignores, so
    /// `memory_weights = "none"` is exact and no weight adds noise or clipping bias).
    #[serde(default)]
    pub behaviour: Behaviour,
    /// Largest weight `1 / η_i^μ(s)` of a reservoir sample.
    #[serde(default = "d_memory_max_weight")]
    pub memory_max_weight: f64,
    /// Epoch weighting of the mean-regret samples: a sample of epoch `e` also weighs
    /// `(e + 1)^γ`. 0 weighs every epoch alike (Eq. 3 as stated); 1 is linear CFR's weighting,
    /// which Deep CFR uses: the early epochs, played against cruder critics, fade.
    #[serde(default)]
    pub memory_regret_power: f64,
    /// The same for the average-policy samples (1: the linearly weighted average strategy).
    #[serde(default)]
    pub memory_policy_power: f64,
    /// Growth exponent `g` of the mean-regret targets (reservoir memory only): when the latest
    /// epoch held is `t`, every regret row regresses on its target times `(t + 1)^g`. Regret
    /// matching ignores a positive scale, so the policies are unchanged in the tabular limit,
    /// but the mean regret shrinks like `1/√t` while Adam's jitter in the head's outputs does
    /// not; `g = 0.5` keeps the targets' size about constant. 0 (the default) leaves them as
    /// they are.
    #[serde(default)]
    pub regret_target_growth: f64,
    /// Polyak averaging of the learner's weights, in [0, 1): the networks the actors play and
    /// the run evaluates and saves (`π^t`, the critics of past epochs, `π̄`) are the
    /// exponential moving average with this decay per learning step; 0 uses the raw weights
    /// (Algorithm 1 as stated).
    #[serde(default)]
    pub polyak: f64,
    /// What the Polyak average replaces: `"all"` (default; every network the actors play and
    /// the run saves) or `"regret"` (only the mean-regret path, its own encoder and the `W̄`
    /// head, so `π^t` is smoothed while the critics that evaluate it stay current; needs
    /// `separate_regret_encoder = true` and `polyak > 0`).
    #[serde(default)]
    pub polyak_scope: PolyakScope,
    /// Adam's first-moment decay β1, in [0, 1): 0 (the paper's) normalises every step's own
    /// gradient; β1 > 0 averages the noisy gradients of about `1 / (1 − β1)` steps first.
    #[serde(default)]
    pub adam_beta1: f64,
    /// Learning-rate decay: in epoch `t` Adam's step size is
    /// `learning_rate / sqrt(1 + t / lr_decay_epochs)`; 0 keeps it constant. A step size that
    /// shrinks lets the mean-regret head average its noisy targets over ever more samples (a
    /// constant one leaves it a fixed noise floor).
    #[serde(default)]
    pub lr_decay_epochs: f64,
    /// Returns are divided by this before the networks see them. Default: the game's largest
    /// absolute payoff, which suits small games; in no-limit Hold'em (stacks of 200 big blinds)
    /// it would squeeze typical pots far below Adam's noise, so the FCPA config sets 20 big
    /// blinds.
    #[serde(default)]
    pub reward_scale: Option<f64>,
    /// Weights of the critic, mean-regret, immediate-regret and average-policy losses in the
    /// sum the shared encoder is trained on (`[1, 1, 1, 1]`: Algorithm 1's plain sum).
    #[serde(default = "d_loss_weights")]
    pub loss_weights: [f64; 4],
    /// Ablation (small games only, needs `exact_eval`): the mean-regret targets are the exact
    /// advantages `q_{π^j}(h, a) − v_{π^j}(h)` computed over the game tree instead of the past
    /// critic's estimates (the critic still trains, for the immediate-regret head).
    #[serde(default)]
    pub exact_advantages: bool,
    /// Ablation (small games only, needs `exact_eval`, the reservoir memory and uniform
    /// behaviour): the actors play `π^t` = regret matching on the reservoir's per-infoset
    /// weighted means of the mean-regret targets (a table: the limit of a head of unlimited
    /// capacity fitted exactly to the data) instead of regret matching on the `W̄` head. The
    /// head still trains; evaluations and diagnostics score the table's policy as `π^t`.
    #[serde(default)]
    pub tabular_w: bool,
    /// The mean-regret target stored at a learning decision: `"history"` (Algorithm 1:
    /// `q_j(h, ·) − v_j(h)` at the sampled history) or `"infoset"` (its expectation over the
    /// histories the learning player cannot tell apart, weighted by chance and the opponent's
    /// `π^j`: the opponent's private information stops being noise in the target), or
    /// `"corrected"` (the critic's advantages plus the sampled episode's importance-weighted
    /// residual: the critic becomes a control variate and the target an unbiased estimate of
    /// `π^j`'s advantages whatever the critic's error, at the price of variance; the actors
    /// also query the past critic at the opponent's decisions), or `"corrected_infoset"`
    /// (`"corrected"` whose control variate's mean is the critic's advantage averaged over
    /// the information state's histories as with `"infoset"`, instead of the one at the
    /// sampled history: same expectation, and the opponent's private information no longer
    /// moves the critic's part of the target; feed-forward networks). `exact_advantages`
    /// overrides it.
    #[serde(default)]
    pub advantage_target: AdvantageTarget,
    /// With `advantage_target = "corrected"` and a feed-forward network: a baseline at the
    /// chance nodes between decisions too (Leduc's public card, a poker street): the actors
    /// evaluate `π^j` and the past critic at every outcome of the chance node and pass
    /// `Σ_o p(o) v(h_o) + ũ(h_{o*}) − v(h_{o*})` upwards instead of `ũ(h_{o*})`, which removes
    /// most of the luck of the draw from the targets of the decisions before it (still
    /// unbiased). Chance nodes with an outcome that is not a decision keep no baseline.
    #[serde(default)]
    pub chance_baseline: bool,
    /// Actor threads.
    #[serde(default = "d_actors")]
    pub actors: usize,
    /// Threads of the learner's matrix products (burn's CPU backend splits large ones over a
    /// rayon pool). 0 (default): the cores the actor threads leave, at least 1; with one actor
    /// on two cores that is 1, which keeps the pool's worker threads from competing with the
    /// actor (measured on Leduc, side by side on a loaded 2-core machine: 36 and 38 epochs in
    /// 120 s against 24 and 28 with the backend's default pool of one thread per core).
    #[serde(default)]
    pub learner_threads: usize,
    /// Episodes each actor plays in lock-step (one batched forward pass per step).
    #[serde(default = "d_games")]
    pub games_per_group: usize,
    /// Fraction of actor groups that rank exploration candidates against the average policy.
    #[serde(default = "d_eval_fraction")]
    pub eval_fraction: f64,
    /// Width of the hidden layers.
    #[serde(default = "d_hidden")]
    pub hidden: usize,
    /// Number of encoder layers (feed-forward encoder only).
    #[serde(default = "d_layers")]
    pub layers: usize,
    /// Use the recurrent network of Appendix F (`Linear → DoubleReLU → LSTM` encoder over
    /// per-step observation tensors, LSTM state carried through each episode) instead of the
    /// feed-forward one over information-state tensors.
    #[serde(default)]
    pub recurrent: bool,
    /// Zero-initialise the regret and average-policy output layers (uniform `π^0` and `π̄^0`;
    /// default); `false` starts them at random weights like every other layer, as the first
    /// version did (measured on Kuhn, 30 epochs, seeds 1-3: final NashConv of π̄ 0.215 on
    /// average with zero heads against 0.280 without, and a monotone curve).
    #[serde(default = "d_true")]
    pub zero_init_heads: bool,
    /// Give the mean-regret head `W̄` its own encoder (same sizes as the shared one), so that
    /// the critic's and the other heads' losses do not move the features it reads; feed-forward
    /// networks only. Default false (Appendix F's single shared encoder).
    #[serde(default)]
    pub separate_regret_encoder: bool,
    /// Recurrent learner: steps per unroll (backpropagation through time); longer episodes are
    /// split into consecutive unrolls whose LSTM states carry over.
    #[serde(default = "d_unroll")]
    pub unroll_length: usize,
    /// Compute device of the learner: `flex` (CPU), `wgpu`, `cuda` or `default`.
    #[serde(default = "d_device")]
    pub device: String,
    /// Compute exact NashConv of the networks every `eval.every` epochs (small games only).
    #[serde(default = "d_true")]
    pub exact_eval: bool,
    /// Exact diagnostics along the network's own policy sequence (W error against regret
    /// matching on exact regrets, NashConv of the exact average, policy movement) in
    /// `metrics.csv` and TensorBoard; small games only, needs `exact_eval`.
    #[serde(default)]
    pub diagnostics: bool,
}

fn d_episodes() -> usize {
    256
}
fn d_learning_steps() -> usize {
    100
}
fn d_batch() -> usize {
    64
}
fn d_lr() -> f64 {
    5e-5
}
fn d_lambda() -> f64 {
    0.9
}
fn d_reservoir() -> usize {
    1024
}
fn d_replay() -> usize {
    8192
}
fn d_actors() -> usize {
    1
}
fn d_games() -> usize {
    64
}
fn d_eval_fraction() -> f64 {
    0.1
}
fn d_hidden() -> usize {
    128
}
fn d_layers() -> usize {
    2
}
fn d_unroll() -> usize {
    32
}
fn d_device() -> String {
    "flex".into()
}
fn d_loss_weights() -> [f64; 4] {
    [1.0; 4]
}
fn d_true() -> bool {
    true
}
fn d_memory_capacity() -> usize {
    1 << 20
}
fn d_memory_batch() -> usize {
    128
}
fn d_memory_max_weight() -> f64 {
    20.0
}
fn d_snapshot_memory() -> usize {
    2048
}

pub use crate::rl::armac::ArmacSettings;

/// `[sog]`: Student of Games training (see `run::sog`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogConfig {
    /// Rounds to run (one round: self-play games, query solves, learner steps).
    pub rounds: u64,
    /// Compute device of the network: `flex` (CPU), `wgpu`, `cuda` or `default`.
    #[serde(default = "d_device")]
    pub device: String,
    /// Compute the exact NashConv of the search policy every `eval.every` rounds (small games).
    #[serde(default = "d_true")]
    pub exact_eval: bool,
    #[serde(default)]
    pub search: SogSearchConfig,
    #[serde(default)]
    pub net: SogNetConfig,
    #[serde(default)]
    pub selfplay: SogSelfPlayConfig,
}

/// `[sog.search]`: GT-CFR and continual re-solving.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogSearchConfig {
    /// Expansion simulations per search (at least 1).
    #[serde(default = "d_sog_s")]
    pub s: usize,
    /// Simulations per regret update (> 0; below 1: one simulation per ⌈1/c⌉ updates).
    #[serde(default = "d_one")]
    pub c: f64,
    /// PUCT exploration constant (>= 0).
    #[serde(default = "d_one")]
    pub puct: f64,
    /// Gadget mixing weight α in [0, 1] (SoG: 0.5).
    #[serde(default = "d_half")]
    pub alpha: f64,
    /// The strategy a search answers with: `average` or `current`.
    #[serde(default = "d_final")]
    pub r#final: String,
    /// PUCT's prior from the CVPN's policy head (trained on the searches' policies) instead
    /// of a uniform one.
    #[serde(default)]
    pub policy_prior: bool,
    /// The regret engine: `scalar` (the `f64` reference engine, the default) or `tensor`
    /// (burn tensor operations, `crate::nn::public::engine`; Kuhn/Leduc/Liar's Dice only).
    #[serde(default = "d_engine")]
    pub engine: String,
    /// Where the regret engine runs: `cpu` (the scalar engine's only place; for the tensor
    /// engine the flex backend in `f64`), `flex`, `wgpu` or `cuda` (`f32`), `default`.
    #[serde(default = "d_search_device")]
    pub device: String,
    /// Self-play games each actor plays together, their searches in lock-step (one CVPN
    /// forward per single update for all of them); at least 1.
    #[serde(default = "d_one_usize")]
    pub batch: usize,
    /// Top-k restriction of the simulations' selection (the k actions of highest current
    /// CFR probability); unset: all actions; at least 1.
    #[serde(default)]
    pub top_k: Option<usize>,
    /// Hold'em (`universal_poker`) only: cap on the public nodes of one search tree (the
    /// rest of a betting round); unset: 200,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<usize>,
}

fn d_search_device() -> String {
    "cpu".into()
}

fn d_one_usize() -> usize {
    1
}

fn d_engine() -> String {
    "scalar".into()
}

impl Default for SogSearchConfig {
    fn default() -> Self {
        SogSearchConfig {
            s: d_sog_s(),
            c: 1.0,
            puct: 1.0,
            alpha: 0.5,
            r#final: d_final(),
            policy_prior: false,
            engine: d_engine(),
            device: d_search_device(),
            batch: 1,
            top_k: None,
            max_nodes: None,
        }
    }
}

/// `[sog.net]`: the CVPN and its optimiser.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogNetConfig {
    /// Width before each DoubleReLU.
    #[serde(default = "d_hidden")]
    pub hidden: usize,
    /// Hidden layers.
    #[serde(default = "d_layers")]
    pub layers: usize,
    /// Adam's step size.
    #[serde(default = "d_sog_lr")]
    pub learning_rate: f64,
    /// Rows per learner step.
    #[serde(default = "d_sog_batch")]
    pub batch: usize,
    /// Zero-sum correction of the CVPN's answers at search frontiers
    /// (`nn::cvpn::zero_sum_correct`).
    #[serde(default)]
    pub zero_sum: bool,
}

impl Default for SogNetConfig {
    fn default() -> Self {
        SogNetConfig {
            hidden: d_hidden(),
            layers: d_layers(),
            learning_rate: d_sog_lr(),
            batch: d_sog_batch(),
            zero_sum: false,
        }
    }
}

/// `[sog.selfplay]`: data generation and the learner/generator ratio.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogSelfPlayConfig {
    /// Weight of the uniform policy in played actions, in [0, 1].
    #[serde(default = "d_epsilon")]
    pub epsilon: f64,
    /// Self-play games per round.
    #[serde(default = "d_sog_games")]
    pub games_per_round: usize,
    /// At most this many frontier queries of each search enter the query buffer.
    #[serde(default = "d_sog_qps")]
    pub queries_per_search: usize,
    /// Capacity of the FIFO query buffer (the oldest unsolved queries are dropped past it).
    #[serde(default = "d_sog_buffer")]
    pub buffer: usize,
    /// Queries the solver takes from the buffer (oldest first) and re-solves per round.
    #[serde(default = "d_sog_solves")]
    pub solves_per_round: usize,
    /// Simulations of each query re-solve (default: `sog.search.s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver_s: Option<usize>,
    /// Random PBS queries (ranges of random policies at random public nodes) re-solved per
    /// round besides the self-play ones; 0 (default) is pure self-play.
    #[serde(default)]
    pub random_queries: usize,
    /// Probability with which each frontier PBS of a query's re-solve re-enters the query
    /// buffer (recursive queries, SoG §4.9; the paper: 0.1 to 0.2), in [0, 1].
    #[serde(default = "d_p_rec")]
    pub p_rec: f64,
    /// Capacity of the learner's FIFO replay of labelled examples.
    #[serde(default = "d_sog_replay")]
    pub replay: usize,
    /// Learner steps per round.
    #[serde(default = "d_sog_steps")]
    pub steps_per_round: usize,
    /// Self-play actor threads; 0 (default): the sequential, deterministic round schedule
    /// (self-play, then solving, then learning, on the calling thread).
    #[serde(default)]
    pub actors: usize,
    /// Query-solver threads beside the actors (at least 1 when `actors` is; 0 with it).
    #[serde(default)]
    pub solvers: usize,
    /// With threads: the learner broadcasts its weights to actors and solvers every this many
    /// learner steps (and at every round start).
    #[serde(default = "d_sog_sync")]
    pub sync_every: usize,
    /// Weight in [0, 1] of TD(1) value targets (the game's outcome at each self-play decision,
    /// for both players' actual private states) beside the re-solve targets (weight 1);
    /// 0 (default): none.
    #[serde(default)]
    pub td1: f64,
}

impl Default for SogSelfPlayConfig {
    fn default() -> Self {
        SogSelfPlayConfig {
            epsilon: d_epsilon(),
            games_per_round: d_sog_games(),
            queries_per_search: d_sog_qps(),
            buffer: d_sog_buffer(),
            solves_per_round: d_sog_solves(),
            solver_s: None,
            random_queries: 0,
            p_rec: d_p_rec(),
            replay: d_sog_replay(),
            steps_per_round: d_sog_steps(),
            actors: 0,
            solvers: 0,
            sync_every: d_sog_sync(),
            td1: 0.0,
        }
    }
}

fn d_sog_sync() -> usize {
    10
}

fn d_sog_s() -> usize {
    50
}
fn d_one() -> f64 {
    1.0
}
fn d_half() -> f64 {
    0.5
}
fn d_final() -> String {
    "average".into()
}
fn d_sog_lr() -> f64 {
    1e-3
}
fn d_sog_batch() -> usize {
    128
}
fn d_epsilon() -> f64 {
    0.1
}
fn d_sog_games() -> usize {
    32
}
fn d_sog_qps() -> usize {
    8
}
fn d_sog_buffer() -> usize {
    4096
}
fn d_sog_solves() -> usize {
    512
}
fn d_p_rec() -> f64 {
    0.0
}
fn d_sog_replay() -> usize {
    8192
}
fn d_sog_steps() -> usize {
    100
}

/// Validated settings of a Student of Games run.
#[derive(Clone, Debug, PartialEq)]
pub struct SogSettings {
    pub game: String,
    pub seed: u64,
    pub rounds: u64,
    pub device: String,
    pub exact_eval: bool,
    pub simulations: usize,
    pub c: f64,
    pub puct: f64,
    pub alpha: f64,
    /// `true`: searches answer with the average strategy.
    pub final_average: bool,
    pub policy_prior: bool,
    /// Self-play games per actor in lock-step (`sog.search.batch`).
    pub search_batch: usize,
    /// The regret engine (`sog.search.engine`: `scalar` or `tensor`).
    pub search_engine: String,
    /// Where the tensor engine runs (`sog.search.device`).
    pub search_device: String,
    /// Top-k restriction of the simulations' selection (`sog.search.top_k`).
    pub top_k: Option<usize>,
    /// Node cap of a Hold'em search tree (`sog.search.max_nodes`; Hold'em only).
    pub max_nodes: Option<usize>,
    pub hidden: usize,
    pub layers: usize,
    pub learning_rate: f64,
    pub batch: usize,
    /// Zero-sum correction of frontier answers (`sog.net.zero_sum`).
    pub zero_sum: bool,
    pub epsilon: f64,
    pub games_per_round: usize,
    pub queries_per_search: usize,
    pub buffer: usize,
    pub solves_per_round: usize,
    pub solver_simulations: usize,
    pub random_queries: usize,
    pub p_rec: f64,
    pub replay: usize,
    pub steps_per_round: usize,
    pub actors: usize,
    pub solvers: usize,
    pub sync_every: usize,
    pub td1: f64,
    pub eval_every: u64,
    pub checkpoint_every: u64,
    pub checkpoint_seconds: f64,
}

/// `[eval]`: how often the exact evaluation runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// Compute NashConv every this many iterations / epochs (and always at the end).
    #[serde(default = "default_eval_every")]
    pub every: u64,
}

fn default_eval_every() -> u64 {
    10
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            every: default_eval_every(),
        }
    }
}

/// `[checkpoint]`: how often the resumable state is written.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Write a checkpoint at least this often (seconds of wall time), and at the end.
    #[serde(default = "default_checkpoint_seconds")]
    pub every_seconds: f64,
    /// ARMAC: also write a checkpoint every this many epochs.
    #[serde(default = "default_checkpoint_epochs")]
    pub every_epochs: u64,
}

fn default_checkpoint_epochs() -> u64 {
    10
}

fn default_checkpoint_seconds() -> f64 {
    60.0
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            every_seconds: default_checkpoint_seconds(),
            every_epochs: default_checkpoint_epochs(),
        }
    }
}

/// Finds a config: an existing path, or a bare name in `configs/` (current directory first,
/// then the crate's own `configs/`).
pub fn resolve_config_path(name: &str) -> Result<PathBuf, ConfigError> {
    let direct = PathBuf::from(name);
    let mut candidates = vec![direct.clone()];
    if direct.components().count() == 1 {
        candidates.push(Path::new("configs").join(name));
        candidates.push(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("configs")
                .join(name),
        );
        if !name.ends_with(".toml") {
            candidates.push(Path::new("configs").join(format!("{name}.toml")));
            candidates.push(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("configs")
                    .join(format!("{name}.toml")),
            );
        }
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

/// Reads a TOML file into a table (not yet typed, so overrides can be applied).
pub fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.display().to_string(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|e| ConfigError::Invalid {
            origin: path.display().to_string(),
            reason: e.to_string(),
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

impl Config {
    /// Types a table; unknown keys and wrong types are errors naming the key.
    pub fn from_table(table: toml::Table, origin: &str) -> Result<Config, ConfigError> {
        let text = toml::to_string(&table).map_err(|e| ConfigError::Invalid {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
        toml::from_str::<Config>(&text).map_err(|e| {
            let key = e.span().and_then(|span| key_at(&text, span.start));
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

    /// Validates a Student of Games config into settings; every error names its key.
    pub fn sog(&self) -> Result<SogSettings, ConfigError> {
        let g = self.sog.as_ref().ok_or_else(|| ConfigError::Value {
            key: "sog".into(),
            reason: "missing: add a [sog] section".into(),
        })?;
        let bad = |key: &str, reason: &str| ConfigError::Value {
            key: format!("sog.{key}"),
            reason: reason.to_string(),
        };
        let (se, net, sp) = (&g.search, &g.net, &g.selfplay);
        for (k, v) in [
            ("rounds", g.rounds as usize),
            ("search.s", se.s),
            ("net.hidden", net.hidden),
            ("net.layers", net.layers),
            ("net.batch", net.batch),
            ("selfplay.games_per_round", sp.games_per_round),
            ("selfplay.queries_per_search", sp.queries_per_search),
            ("selfplay.buffer", sp.buffer),
            ("selfplay.replay", sp.replay),
            ("selfplay.solver_s", sp.solver_s.unwrap_or(1)),
            ("selfplay.sync_every", sp.sync_every),
        ] {
            if v == 0 {
                return Err(bad(k, "must be at least 1"));
            }
        }
        if !(se.c.is_finite() && se.c > 0.0) {
            return Err(bad("search.c", "must be a positive number"));
        }
        if !(se.puct.is_finite() && se.puct >= 0.0) {
            return Err(bad("search.puct", "must be a number >= 0"));
        }
        for (k, v) in [
            ("search.alpha", se.alpha),
            ("selfplay.epsilon", sp.epsilon),
            ("selfplay.p_rec", sp.p_rec),
            ("selfplay.td1", sp.td1),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(bad(k, "must be in [0, 1]"));
            }
        }
        let final_average = match se.r#final.as_str() {
            "average" => true,
            "current" => false,
            _ => return Err(bad("search.final", "expected `average` or `current`")),
        };
        match se.engine.as_str() {
            "scalar" => {
                if se.device != "cpu" {
                    return Err(bad(
                        "search.device",
                        "expected `cpu`: the scalar regret engine runs on the CPU (the CVPN's \
                         device is `sog.device`; `engine = \"tensor\"` runs on flex, wgpu or cuda)",
                    ));
                }
            }
            "tensor" => {
                if !matches!(
                    se.device.as_str(),
                    "cpu" | "flex" | "wgpu" | "cuda" | "default"
                ) {
                    return Err(bad(
                        "search.device",
                        "expected `cpu` (= `flex`), `flex`, `wgpu`, `cuda` or `default` for the \
                         tensor engine",
                    ));
                }
                crate::nn::select_device(&se.device)
                    .map_err(|e| bad("search.device", &e.to_string()))?;
            }
            _ => return Err(bad("search.engine", "expected `scalar` or `tensor`")),
        }
        if se.top_k == Some(0) {
            return Err(bad(
                "search.top_k",
                "must be at least 1 (leave it out to consider every action)",
            ));
        }
        if se.max_nodes == Some(0) {
            return Err(bad("search.max_nodes", "must be at least 1"));
        }
        if se.batch == 0 {
            return Err(bad(
                "search.batch",
                "must be at least 1 (self-play games per actor in lock-step)",
            ));
        }
        if !(net.learning_rate.is_finite() && net.learning_rate > 0.0) {
            return Err(bad("net.learning_rate", "must be a positive number"));
        }
        if sp.solves_per_round == 0 && sp.random_queries == 0 {
            return Err(bad(
                "selfplay.solves_per_round",
                "must be at least 1 unless selfplay.random_queries is (nothing would be learnt)",
            ));
        }
        if sp.actors > 0 && sp.solvers == 0 {
            return Err(bad(
                "selfplay.solvers",
                "must be at least 1 when selfplay.actors is (nothing would solve the queries)",
            ));
        }
        if sp.actors == 0 && sp.solvers > 0 {
            return Err(bad(
                "selfplay.solvers",
                "solver threads need actor threads: set selfplay.actors >= 1, or solvers = 0 \
                 for the sequential schedule",
            ));
        }
        if !["flex", "cpu", "wgpu", "cuda", "default"].contains(&g.device.as_str()) {
            return Err(bad(
                "device",
                "expected `flex`, `wgpu`, `cuda` or `default`",
            ));
        }
        if self.checkpoint.every_seconds.is_nan() || self.checkpoint.every_seconds <= 0.0 {
            return Err(ConfigError::Value {
                key: "checkpoint.every_seconds".into(),
                reason: "must be positive".into(),
            });
        }
        if self.eval.every == 0 || self.checkpoint.every_epochs == 0 {
            return Err(ConfigError::Value {
                key: "eval.every / checkpoint.every_epochs".into(),
                reason: "must be at least 1".into(),
            });
        }
        Ok(SogSettings {
            game: self.game.clone(),
            seed: self.seed,
            rounds: g.rounds,
            device: g.device.clone(),
            exact_eval: g.exact_eval,
            simulations: se.s,
            c: se.c,
            puct: se.puct,
            alpha: se.alpha,
            final_average,
            policy_prior: se.policy_prior,
            search_batch: se.batch,
            search_engine: se.engine.clone(),
            search_device: se.device.clone(),
            top_k: se.top_k,
            max_nodes: se.max_nodes,
            hidden: net.hidden,
            layers: net.layers,
            learning_rate: net.learning_rate,
            batch: net.batch,
            zero_sum: net.zero_sum,
            epsilon: sp.epsilon,
            games_per_round: sp.games_per_round,
            queries_per_search: sp.queries_per_search,
            buffer: sp.buffer,
            solves_per_round: sp.solves_per_round,
            solver_simulations: sp.solver_s.unwrap_or(se.s),
            random_queries: sp.random_queries,
            p_rec: sp.p_rec,
            replay: sp.replay,
            steps_per_round: sp.steps_per_round,
            actors: sp.actors,
            solvers: sp.solvers,
            sync_every: sp.sync_every,
            td1: sp.td1,
            eval_every: self.eval.every,
            checkpoint_every: self.checkpoint.every_epochs,
            checkpoint_seconds: self.checkpoint.every_seconds,
        })
    }

    /// Validates an ARMAC config into settings.
    pub fn armac(&self) -> Result<ArmacSettings, ConfigError> {
        let a = self.armac.as_ref().ok_or_else(|| ConfigError::Value {
            key: "armac".into(),
            reason: "missing: add an [armac] section".into(),
        })?;
        let bad = |key: &str, reason: &str| ConfigError::Value {
            key: format!("armac.{key}"),
            reason: reason.to_string(),
        };
        for (k, v) in [
            ("epochs", a.epochs as usize),
            ("episodes_per_epoch", a.episodes_per_epoch),
            ("learning_steps_per_epoch", a.learning_steps_per_epoch),
            ("batch_trajectories", a.batch_trajectories),
            ("reservoir_capacity", a.reservoir_capacity),
            ("snapshot_memory_mb", a.snapshot_memory_mb),
            ("actors", a.actors),
            ("games_per_group", a.games_per_group),
            ("hidden", a.hidden),
            ("layers", a.layers),
            ("unroll_length", a.unroll_length),
        ] {
            if v == 0 {
                return Err(bad(k, "must be at least 1"));
            }
        }
        if a.learner_threads > 1024 {
            return Err(bad(
                "learner_threads",
                "must be at most 1024 (0: the cores the actors leave)",
            ));
        }
        if a.replay_capacity < a.episodes_per_epoch {
            return Err(bad(
                "replay_capacity",
                "must be at least episodes_per_epoch (one epoch of trajectories)",
            ));
        }
        if !(a.learning_rate.is_finite() && a.learning_rate > 0.0) {
            return Err(bad("learning_rate", "must be a positive number"));
        }
        if !(0.0..=1.0).contains(&a.lambda) {
            return Err(bad("lambda", "must be in [0, 1]"));
        }
        if a.diagnostics && !a.exact_eval {
            return Err(bad(
                "diagnostics",
                "needs armac.exact_eval = true (diagnostics are exact, small games only)",
            ));
        }
        if a.exact_advantages && !a.exact_eval {
            return Err(bad(
                "exact_advantages",
                "needs armac.exact_eval = true (exact values exist for small games only)",
            ));
        }
        if a.tabular_w {
            let why = if !a.exact_eval {
                Some(
                    "needs armac.exact_eval = true (the table is kept over the game tree, small games only)",
                )
            } else if a.memory != MemoryKind::Reservoir {
                Some("needs armac.memory = \"reservoir\" (the table holds the reservoir's means)")
            } else if a.behaviour != Behaviour::Uniform {
                Some(
                    "needs armac.behaviour = \"uniform\" (only the latest and the previous \
                     epoch's tables are kept, and candidates can play older epochs)",
                )
            } else {
                None
            };
            if let Some(why) = why {
                return Err(bad("tabular_w", why));
            }
        }
        if a.chance_baseline {
            let why = if !a.advantage_target.is_corrected() {
                Some("needs armac.advantage_target = \"corrected\" or \"corrected_infoset\"")
            } else if a.recurrent {
                Some("needs a feed-forward network (armac.recurrent = false)")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(bad("chance_baseline", why));
            }
        }
        if a.advantage_target.uses_infoset() && a.recurrent {
            return Err(bad(
                "advantage_target",
                "\"infoset\" and \"corrected_infoset\" need a feed-forward network \
                 (armac.recurrent = false)",
            ));
        }
        if a.reward_scale.is_some_and(|x| !(x.is_finite() && x > 0.0)) {
            return Err(bad("reward_scale", "must be a positive number"));
        }
        if !a.loss_weights.iter().all(|w| w.is_finite() && *w >= 0.0) {
            return Err(bad("loss_weights", "must be four numbers >= 0"));
        }
        if !(a.lr_decay_epochs.is_finite() && a.lr_decay_epochs >= 0.0) {
            return Err(bad(
                "lr_decay_epochs",
                "must be a number >= 0 (0: constant rate)",
            ));
        }
        let past_draw = match (a.memory, a.past_draw) {
            (MemoryKind::Replay, d) => d.unwrap_or_default(),
            (MemoryKind::Reservoir, None | Some(PastDraw::Latest)) => PastDraw::Latest,
            (MemoryKind::Reservoir, Some(_)) => {
                return Err(bad(
                    "past_draw",
                    "must be \"latest\" with armac.memory = \"reservoir\" (each epoch adds the \
                     advantages of the previous epoch's policy to the reservoir)",
                ));
            }
        };
        if a.memory == MemoryKind::Reservoir {
            if a.recurrent {
                return Err(bad(
                    "memory",
                    "\"reservoir\" needs the feed-forward network (armac.recurrent = false): \
                     its samples are single decisions, not sequences",
                ));
            }
            if a.memory_capacity == 0 || a.memory_batch == 0 {
                return Err(bad(
                    "memory_capacity / memory_batch",
                    "must be at least 1 with armac.memory = \"reservoir\"",
                ));
            }
        }
        if a.memory != MemoryKind::Reservoir && a.regret_target_growth != 0.0 {
            return Err(bad(
                "regret_target_growth",
                "needs armac.memory = \"reservoir\"",
            ));
        }
        if a.memory_sampling == MemorySampling::States && !a.memory_targets.is_mean() {
            return Err(bad(
                "memory_sampling",
                "\"states\" trains on each state's mean target: it needs armac.memory_targets = \
                 \"infoset_mean\" or \"infoset_mean_all\"",
            ));
        }
        if a.memory != MemoryKind::Reservoir && a.memory_targets != MemoryTargets::Sample {
            return Err(bad(
                "memory_targets",
                "mean targets need armac.memory = \"reservoir\"",
            ));
        }
        if a.recurrent && a.separate_regret_encoder {
            return Err(bad(
                "separate_regret_encoder",
                "needs the feed-forward network (armac.recurrent = false)",
            ));
        }
        if !(a.memory_max_weight.is_finite() && a.memory_max_weight >= 1.0) {
            return Err(bad("memory_max_weight", "must be a number >= 1"));
        }
        for (key, v) in [
            ("memory_regret_power", a.memory_regret_power),
            ("memory_policy_power", a.memory_policy_power),
            ("regret_target_growth", a.regret_target_growth),
        ] {
            if !(v.is_finite() && (0.0..=4.0).contains(&v)) {
                return Err(bad(key, "must be a number in [0, 4]"));
            }
        }
        if !(0.0..1.0).contains(&a.polyak) {
            return Err(bad("polyak", "must be in [0, 1)"));
        }
        if a.polyak_scope == PolyakScope::Regret {
            if !a.separate_regret_encoder {
                return Err(bad(
                    "polyak_scope",
                    "\"regret\" needs separate_regret_encoder = true",
                ));
            }
            if a.polyak == 0.0 {
                return Err(bad("polyak_scope", "\"regret\" needs polyak > 0"));
            }
        }
        if !(0.0..1.0).contains(&a.adam_beta1) {
            return Err(bad("adam_beta1", "must be in [0, 1)"));
        }
        if !(0.0..1.0).contains(&a.candidate_decay) {
            return Err(bad("candidate_decay", "must be in [0, 1)"));
        }
        if !(0.0..1.0).contains(&a.eval_fraction) {
            return Err(bad("eval_fraction", "must be in [0, 1)"));
        }
        if !["flex", "cpu", "wgpu", "cuda", "default"].contains(&a.device.as_str()) {
            return Err(bad(
                "device",
                "expected `flex`, `wgpu`, `cuda` or `default`",
            ));
        }
        if self.checkpoint.every_seconds.is_nan() || self.checkpoint.every_seconds <= 0.0 {
            return Err(ConfigError::Value {
                key: "checkpoint.every_seconds".into(),
                reason: "must be positive".into(),
            });
        }
        if self.eval.every == 0 || self.checkpoint.every_epochs == 0 {
            return Err(ConfigError::Value {
                key: "eval.every / checkpoint.every_epochs".into(),
                reason: "must be at least 1".into(),
            });
        }
        Ok(ArmacSettings {
            game: self.game.clone(),
            epochs: a.epochs,
            episodes_per_epoch: a.episodes_per_epoch,
            learning_steps: a.learning_steps_per_epoch,
            batch_trajectories: a.batch_trajectories,
            learning_rate: a.learning_rate,
            lambda: a.lambda,
            reservoir_capacity: a.reservoir_capacity,
            replay_capacity: a.replay_capacity,
            snapshot_memory_mb: a.snapshot_memory_mb,
            snapshot_precision: a.snapshot_precision,
            candidate_decay: a.candidate_decay,
            past_draw,
            memory: a.memory,
            memory_capacity: a.memory_capacity,
            memory_batch: a.memory_batch,
            memory_weights: a.memory_weights,
            memory_sampling: a.memory_sampling,
            memory_targets: a.memory_targets,
            behaviour: a.behaviour,
            memory_max_weight: a.memory_max_weight,
            memory_regret_power: a.memory_regret_power,
            regret_target_growth: a.regret_target_growth,
            memory_policy_power: a.memory_policy_power,
            polyak: a.polyak,
            polyak_scope: a.polyak_scope,
            adam_beta1: a.adam_beta1,
            lr_decay_epochs: a.lr_decay_epochs,
            reward_scale: a.reward_scale,
            loss_weights: a.loss_weights,
            exact_advantages: a.exact_advantages,
            tabular_w: a.tabular_w,
            advantage_target: a.advantage_target,
            chance_baseline: a.chance_baseline,
            actors: a.actors,
            learner_threads: a.learner_threads,
            games_per_group: a.games_per_group,
            eval_fraction: a.eval_fraction,
            hidden: a.hidden,
            layers: a.layers,
            recurrent: a.recurrent,
            zero_init_heads: a.zero_init_heads,
            separate_regret_encoder: a.separate_regret_encoder,
            unroll_length: a.unroll_length,
            device: a.device.clone(),
            exact_eval: a.exact_eval,
            diagnostics: a.diagnostics,
            eval_every: self.eval.every,
            checkpoint_every: self.checkpoint.every_epochs,
            checkpoint_seconds: self.checkpoint.every_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn recurrent_keys_default_and_validate() {
        let base = "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n";
        let s = Config::from_table(table(base), "x")
            .unwrap()
            .armac()
            .unwrap();
        assert!(!s.recurrent);
        assert_eq!(s.unroll_length, 32);
        let mut t = table(base);
        apply_override(&mut t, "armac.recurrent=true").unwrap();
        apply_override(&mut t, "armac.unroll_length=4").unwrap();
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert!(s.recurrent);
        assert_eq!(s.unroll_length, 4);
        let mut t = table(base);
        apply_override(&mut t, "armac.recurrent=true").unwrap();
        apply_override(&mut t, "armac.separate_regret_encoder=true").unwrap();
        let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
        assert!(
            e.to_string().contains("armac.separate_regret_encoder"),
            "{e}"
        );
        let mut t = table(base);
        apply_override(&mut t, "armac.unroll_length=0").unwrap();
        let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
        assert!(e.to_string().contains("armac.unroll_length"), "{e}");
        let t = table(&format!("{base}recurrent = \"yes\"\n"));
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains("recurrent"), "{e}");
    }

    #[test]
    fn memory_keys_default_and_bad_combinations_name_the_key() {
        let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
        let s = Config::from_table(table(base), "x")
            .unwrap()
            .armac()
            .unwrap();
        assert_eq!(s.memory, MemoryKind::Replay);
        assert_eq!(s.memory_weights, MemoryWeights::Reach);
        // The reservoir memory plays the latest past epoch unless told otherwise.
        let mut t = table(base);
        apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
        apply_override(&mut t, "armac.memory_batch=32").unwrap();
        apply_override(&mut t, "armac.memory_weights=\"none\"").unwrap();
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert_eq!(
            (s.memory, s.past_draw, s.memory_batch, s.memory_weights),
            (
                MemoryKind::Reservoir,
                PastDraw::Latest,
                32,
                MemoryWeights::None
            )
        );
        for (extra, key) in [
            ("armac.past_draw=\"episode\"", "armac.past_draw"),
            ("armac.recurrent=true", "armac.memory"),
            ("armac.memory_batch=0", "memory_batch"),
            ("armac.memory_max_weight=0.5", "armac.memory_max_weight"),
            ("armac.memory_regret_power=-1", "armac.memory_regret_power"),
            ("armac.memory_policy_power=nan", "armac.memory_policy_power"),
            ("armac.regret_target_growth=5", "armac.regret_target_growth"),
        ] {
            let mut t = table(base);
            apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
            apply_override(&mut t, extra).unwrap();
            let e = Config::from_table(t, "x")
                .unwrap()
                .armac()
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{extra}: {e}");
        }
        let mut t = table(base);
        apply_override(&mut t, "armac.memory=\"sometimes\"").unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains("memory"), "{e}");
        // Mean targets: parsed with the reservoir, refused (naming the key) without it.
        for (name, want) in [
            ("infoset_mean", MemoryTargets::InfosetMean),
            ("infoset_mean_all", MemoryTargets::InfosetMeanAll),
        ] {
            let mut t = table(base);
            apply_override(&mut t, &format!("armac.memory_targets=\"{name}\"")).unwrap();
            let e = Config::from_table(t.clone(), "x")
                .unwrap()
                .armac()
                .unwrap_err()
                .to_string();
            assert!(e.contains("armac.memory_targets"), "{e}");
            apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
            let s = Config::from_table(t, "x").unwrap().armac().unwrap();
            assert_eq!(s.memory_targets, want);
        }
        let mut t = table(base);
        apply_override(&mut t, "armac.memory_targets=\"median\"").unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains("memory_targets"), "{e}");
    }

    #[test]
    fn target_and_behaviour_keys_default_parse_and_name_themselves() {
        let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
        let s = Config::from_table(table(base), "x")
            .unwrap()
            .armac()
            .unwrap();
        assert_eq!(
            (s.advantage_target, s.behaviour, s.memory_sampling),
            (
                AdvantageTarget::History,
                Behaviour::Candidates,
                MemorySampling::Uniform
            )
        );
        let mut t = table(base);
        for o in [
            "armac.advantage_target=\"infoset\"",
            "armac.behaviour=\"uniform\"",
            "armac.memory_sampling=\"weighted\"",
        ] {
            apply_override(&mut t, o).unwrap();
        }
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert_eq!(
            (s.advantage_target, s.behaviour, s.memory_sampling),
            (
                AdvantageTarget::Infoset,
                Behaviour::Uniform,
                MemorySampling::Weighted
            )
        );
        // The corrected targets work with either network kind.
        let mut t = table(base);
        apply_override(&mut t, "armac.advantage_target=\"corrected\"").unwrap();
        apply_override(&mut t, "armac.recurrent=true").unwrap();
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert_eq!(s.advantage_target, AdvantageTarget::Corrected);
        let mut t = table(base);
        apply_override(&mut t, "armac.advantage_target=\"corrected_infoset\"").unwrap();
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert_eq!(s.advantage_target, AdvantageTarget::CorrectedInfoset);
        // The shadow histories need information-state tensors: feed-forward networks only.
        for target in ["infoset", "corrected_infoset"] {
            let mut t = table(base);
            let o = format!("armac.advantage_target=\"{target}\"");
            apply_override(&mut t, &o).unwrap();
            apply_override(&mut t, "armac.recurrent=true").unwrap();
            let e = Config::from_table(t, "x")
                .unwrap()
                .armac()
                .unwrap_err()
                .to_string();
            assert!(e.contains("advantage_target"), "{target}: {e}");
        }
        // The chance baseline corrects the corrected targets, with feed-forward networks.
        let with = |extra: &[&str]| {
            let mut t = table(base);
            apply_override(&mut t, "armac.advantage_target=\"corrected\"").unwrap();
            apply_override(&mut t, "armac.chance_baseline=true").unwrap();
            for o in extra {
                apply_override(&mut t, o).unwrap();
            }
            Config::from_table(t, "x").unwrap().armac()
        };
        assert!(with(&[]).unwrap().chance_baseline);
        for extra in ["armac.advantage_target=\"history\"", "armac.recurrent=true"] {
            let e = with(&[extra]).unwrap_err().to_string();
            assert!(e.contains("chance_baseline"), "{extra}: {e}");
        }
        // One row per state trains on the states' mean targets, so it needs them.
        let states = |targets: &str| {
            let mut t = table(base);
            apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
            apply_override(&mut t, "armac.memory_sampling=\"states\"").unwrap();
            apply_override(&mut t, &format!("armac.memory_targets=\"{targets}\"")).unwrap();
            Config::from_table(t, "x").unwrap().armac()
        };
        assert_eq!(
            states("infoset_mean").unwrap().memory_sampling,
            MemorySampling::States
        );
        let e = states("sample").unwrap_err().to_string();
        assert!(
            e.contains("memory_sampling") && e.contains("memory_targets"),
            "{e}"
        );
        for (o, key) in [
            ("armac.behaviour=\"greedy\"", "behaviour"),
            ("armac.memory_sampling=\"often\"", "memory_sampling"),
            ("armac.advantage_target=\"public\"", "advantage_target"),
        ] {
            let mut t = table(base);
            apply_override(&mut t, o).unwrap();
            let e = Config::from_table(t, "x").unwrap_err().to_string();
            assert!(e.contains(key), "{o}: {e}");
        }
    }

    #[test]
    fn learning_keys_default_and_bad_values_name_the_key() {
        let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
        let s = Config::from_table(table(base), "x")
            .unwrap()
            .armac()
            .unwrap();
        assert_eq!(s.past_draw, PastDraw::Episode);
        assert_eq!(
            (s.polyak, s.adam_beta1, s.lr_decay_epochs, s.reward_scale),
            (0.0, 0.0, 0.0, None)
        );
        assert_eq!(s.loss_weights, [1.0; 4]);
        assert_eq!(s.learning_rate_at(1000), s.learning_rate);
        // Learner threads: the cores the local actors leave, at least one; none are left to
        // actors of another process.
        assert_eq!(s.learner_threads, 0);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        use crate::run::armac::learner_threads;
        assert_eq!(learner_threads(0, Some(1)), (cores - 1).max(1));
        assert_eq!(learner_threads(0, Some(cores + 3)), 1);
        assert_eq!(learner_threads(0, None), cores);
        assert_eq!(learner_threads(3, Some(1)), 3);
        let mut t = table(base);
        for kv in [
            "armac.past_draw=\"group\"",
            "armac.lr_decay_epochs=3",
            "armac.reward_scale=2000",
            "armac.loss_weights=[1,1,1,0.5]",
            "armac.polyak=0.99",
            "armac.adam_beta1=0.9",
        ] {
            apply_override(&mut t, kv).unwrap();
        }
        let s = Config::from_table(t.clone(), "x").unwrap().armac().unwrap();
        assert_eq!(s.past_draw, PastDraw::Group);
        assert_eq!(s.polyak_scope, PolyakScope::All);
        let mut t2 = t;
        for kv in [
            "armac.polyak_scope=\"regret\"",
            "armac.separate_regret_encoder=true",
        ] {
            apply_override(&mut t2, kv).unwrap();
        }
        let s2 = Config::from_table(t2, "x").unwrap().armac().unwrap();
        assert_eq!(s2.polyak_scope, PolyakScope::Regret);
        assert_eq!(s.reward_scale, Some(2000.0));
        assert_eq!(s.adam_beta1, 0.9);
        assert!((s.learning_rate_at(9) - s.learning_rate / 2.0).abs() < 1e-15);
        for (kv, key) in [
            ("armac.polyak=1.0", "armac.polyak"),
            ("armac.adam_beta1=1.0", "armac.adam_beta1"),
            ("armac.adam_beta1=-0.1", "armac.adam_beta1"),
            ("armac.lr_decay_epochs=-1", "armac.lr_decay_epochs"),
            ("armac.reward_scale=0", "armac.reward_scale"),
            ("armac.loss_weights=[1,1,1,-1]", "armac.loss_weights"),
            ("armac.exact_advantages=true", "armac.exact_advantages"),
            ("armac.tabular_w=true", "armac.tabular_w"),
            ("armac.learner_threads=2000", "armac.learner_threads"),
            // Without separate_regret_encoder.
            ("armac.polyak_scope=\"regret\"", "armac.polyak_scope"),
        ] {
            let mut t = table(base);
            apply_override(&mut t, kv).unwrap();
            if key == "armac.exact_advantages" {
                apply_override(&mut t, "armac.exact_eval=false").unwrap();
            }
            let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
            assert!(e.to_string().contains(key), "{kv}: {e}");
        }
        let mut t = table(base);
        apply_override(&mut t, "armac.past_draw=\"sometimes\"").unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains("past_draw"), "{e}");
    }
}
