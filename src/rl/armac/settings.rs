//! The settings of an ARMAC run: [`ArmacSettings`] is the config's `[armac]` section itself
//! (serde reads it; every key's doc and default sit on its field) and the type the trainer,
//! the actors and the learner read; [`ArmacSettings::validate`] (in `validate`) checks it
//! once, with errors naming the key (`armac.lambda`). The views the lower layers take are
//! built from it, not copied field by field: [`net_config`] (the network's
//! [`ArmacNetConfig`]; `nn` cannot see this type), [`ActorSettings`] via
//! [`crate::rl::armac::transport::actor_settings`], [`reward_scale`].
//!
//! The trainer also needs two values from outside the section, the game and the evaluation
//! cadence: [`ArmacRun`] carries them beside the settings (and dereferences to them). The
//! checkpoint cadence stays with the run layer, which reads it from its config.
//!
//! Adding a key: a field here (doc, `#[serde(default ...)]`, a line in `validate.rs` if it has
//! bounds) and the code that reads it; `run::config::key_reference` and the config tests pick
//! the field up from serde.
//!
//! [`ActorSettings`]: crate::rl::armac::actor::ActorSettings

use crate::game::GameRef;
use crate::nn::DeviceName;
use crate::nn::armac::{ArmacNetConfig, RESIDENT_MAX_CAPACITY, SnapshotPrecision};
use crate::rl::armac::actor::{AdvantageTarget, Behaviour, PastDraw};
use crate::rl::armac::choices::Schedule;
use crate::rl::armac::memory::{
    DeviceMemory, MemoryKind, MemorySampling, MemoryTargets, MemoryWeights,
};
use crate::util::check::{MAX_THREADS, Section};
use serde::{Deserialize, Serialize};

pub use crate::util::check::KeyError as SettingsError;

/// `[armac]`: ARMAC's hyper-parameters, the type the trainer, the actors and the learner read
/// (defaults follow the paper where it states them; each key's default is in its
/// `#[serde(default ...)]` attribute, its bounds in [`ArmacSettings::validate`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ArmacSettings {
    /// Number of epochs (Algorithm 1's outer loop).
    pub epochs: u64,
    /// Episodes the actors play per epoch (K_act).
    #[serde(default = "default_usize::<256>")]
    pub episodes_per_epoch: usize,
    /// Learning steps per epoch (K_learn; the paper's epochs are 100 steps).
    #[serde(default = "default_usize::<100>")]
    pub learning_steps_per_epoch: usize,
    /// Trajectories per learning batch (the paper: 64).
    #[serde(default = "default_usize::<64>")]
    pub batch_trajectories: usize,
    /// Adam's learning rate (the paper: 5e-5; β1 = 0, β2 = 0.999).
    #[serde(default = "default_ratio::<5, 100000>")]
    pub learning_rate: f64,
    /// Tree-Backup's λ.
    #[serde(default = "default_ratio::<9, 10>")]
    pub lambda: f64,
    /// Capacity of the reservoir of past networks (the paper: 1024).
    #[serde(default = "default_usize::<1024>")]
    pub reservoir_capacity: usize,
    /// Capacity of the replay memory of trajectories the learner samples from (first in, first
    /// out; at least `episodes_per_epoch`). Section 3 of the paper trains "on all previous data"
    /// from replay memory; past epochs' targets stay valid because each trajectory stores the
    /// advantages and policy of the past network that produced it.
    #[serde(default = "default_usize::<8192>")]
    pub replay_capacity: usize,
    /// Memory for past networks, in MiB: the actors draw past epochs from a working set of as
    /// many as fit (two f32 networks each), all of the reservoir while it fits; a sixteenth of
    /// the set rotates every epoch (see `rl::working_set`). The default suits a 24 GB machine.
    #[serde(default = "default_usize::<2048>")]
    pub snapshot_memory_mb: usize,
    /// Precision of the reservoir's network files and of the past networks in memory: `f16`
    /// (default; half the disk) or `f32`.
    #[serde(default)]
    pub snapshot_precision: SnapshotPrecision,
    /// Which past epoch `j` the opponent plays (and the exploring network and candidate):
    /// `"episode"` (Algorithm 1, default: each episode draws its own).
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
    #[serde(default = "default_usize::<1048576>")]
    pub memory_capacity: usize,
    /// Rows drawn from each reservoir per learning step.
    #[serde(default = "default_usize::<128>")]
    pub memory_batch: usize,
    /// Loss weight of a reservoir sample: `"reach"` (default) divides by the learning player's
    /// behaviour reach `η_i^μ(s)` (clipped at `memory_max_weight`), so that samples from epochs
    /// with different behaviour policies combine as Eq. 3 and the average-policy definition
    /// weigh them; `"none"` weighs them all 1.
    #[serde(default)]
    pub memory_weights: MemoryWeights,
    /// How rows are drawn from the reservoirs: `"uniform"` (default; each row's loss weighted
    /// by its sample's weight) or `"weighted"` (drawn with probability proportional to that
    /// weight, every row weighing the same: the same expected gradient, less spread).
    #[serde(default)]
    pub memory_sampling: MemorySampling,
    /// What reservoir rows regress on: `"sample"` (default; each row its own advantages or
    /// played policy, as Algorithm 1's rows) or `"infoset_mean"` (the weighted mean target of
    /// every sample held at the row's information state: the same objective and expected
    /// gradient, without the targets' spread within a state; `rl::memory` module docs).
    #[serde(default)]
    pub memory_targets: MemoryTargets,
    /// Where the learner reads reservoir rows from: `"auto"` (default: a copy on the device
    /// for `device = "wgpu"` or `"cuda"` where the memory settings allow one, the host
    /// otherwise), `"device"` (a copy of both reservoirs on the learner's device: a step
    /// uploads the slots it draws and the rows that changed since the last step instead of
    /// the drawn rows; needs `memory = "reservoir"`, `memory_targets = "sample"`
    /// and `memory_capacity` ≤ 2^24) or `"host"`
    /// (every drawn row is uploaded). The same rows and losses either way.
    #[serde(default)]
    pub device_memory: DeviceMemory,
    /// The learning player's behaviour policy in learning episodes: `"candidates"` (default;
    /// the exploration candidates of section 3.3 computed from the latest or a past network) or
    /// `"uniform"` (one fixed policy for every epoch: all samples at an information state then
    /// share one behaviour reach, which a per-state factor regret matching ignores, so
    /// `memory_weights = "none"` is exact and no weight adds noise or clipping bias).
    #[serde(default)]
    pub behaviour: Behaviour,
    /// Largest weight `1 / η_i^μ(s)` of a reservoir sample.
    #[serde(default = "default_ratio::<20, 1>")]
    pub memory_max_weight: f64,
    /// Epoch weighting of the mean-regret samples: a sample of epoch `e` also weighs
    /// `(e + 1)^γ`. 0 weighs every epoch alike (Eq. 3 as stated); 1 is linear CFR's weighting,
    /// which Deep CFR uses: the early epochs, played against cruder critics, fade.
    #[serde(default)]
    pub memory_regret_power: f64,
    /// The same for the average-policy samples (1: the linearly weighted average strategy).
    #[serde(default)]
    pub memory_policy_power: f64,
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
    #[serde(default = "default_loss_weights")]
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
    /// Once no player can act again (poker: both players all in, or one all in and called),
    /// the episode's returns are their mean over the remaining chance moves instead of one
    /// sampled run-out: exact when the rest of the game has at most `allin_runouts` chance
    /// outcomes in sequence, else the mean of `allin_runouts` sampled run-outs (unbiased
    /// either way; the luck of the board leaves the critic's targets). 0: the sampled
    /// run-out of Algorithm 1.
    #[serde(default)]
    pub allin_runouts: usize,
    /// Actor threads.
    #[serde(default = "default_usize::<1>")]
    pub actors: usize,
    /// How actors and learner share an epoch: `"concurrent"` (default: actor threads play
    /// while the learner learns; faster, but two runs of one seed differ) or `"lockstep"`
    /// (they take turns in a fixed order and every random stream is derived from the seed, the
    /// epoch and the group: two runs of one config and seed write the same files, whatever
    /// `actors` is; in-process actors only).
    #[serde(default)]
    pub schedule: Schedule,
    /// Threads of the learner's matrix products (burn's CPU backend splits large ones over a
    /// rayon pool). 0 (default): the cores the actor threads leave, at least 1 (under
    /// `schedule = "lockstep"` all cores but one, whatever `actors` is); with one actor on two
    /// cores that is 1, which keeps the pool's worker threads from competing with the actor
    /// (measured on Leduc, side by side on a loaded 2-core machine: 36 and 38 epochs in 120 s
    /// against 24 and 28 with the backend's default pool of one thread per core).
    #[serde(default)]
    pub learner_threads: usize,
    /// Episodes each actor plays in lock-step (one batched forward pass per step).
    #[serde(default = "default_usize::<64>")]
    pub games_per_group: usize,
    /// Fraction of actor groups that rank exploration candidates against the average policy.
    #[serde(default = "default_ratio::<1, 10>")]
    pub eval_fraction: f64,
    /// Width of the hidden layers.
    #[serde(default = "default_usize::<128>")]
    pub hidden: usize,
    /// Number of encoder layers (feed-forward encoder only).
    #[serde(default = "default_usize::<2>")]
    pub layers: usize,
    /// Use the recurrent network of Appendix F (`Linear → DoubleReLU → LSTM` encoder over
    /// per-step observation tensors, LSTM state carried through each episode) instead of the
    /// feed-forward one over information-state tensors.
    #[serde(default)]
    pub recurrent: bool,
    /// Zero-initialise the regret and average-policy output layers (uniform `π^0` and `π̄^0`;
    /// default); `false` starts them at random weights like every other layer
    /// (measured on Kuhn, 30 epochs, seeds 1-3: final NashConv of π̄ 0.215 on
    /// average with zero heads against 0.280 without, and a monotone curve).
    #[serde(default = "default_true")]
    pub zero_init_heads: bool,
    /// Give the mean-regret head `W̄` its own encoder (same sizes as the shared one), so that
    /// the critic's and the other heads' losses do not move the features it reads; feed-forward
    /// networks only. Default false (Appendix F's single shared encoder).
    #[serde(default)]
    pub separate_regret_encoder: bool,
    /// What the network divides its inputs by: `game` (default: each entry by the largest
    /// magnitude the game gives it: poker's bet sizes and contributions by the stack, so they
    /// enter within [-1, 1] as the card bits do; nothing for games whose tensors already lie
    /// there) or `none` (the game's tensor as it is).
    #[serde(default)]
    pub input_scale: InputScale,
    /// How the trained agent plays, not how it trains: when a checkpoint or model is played
    /// or evaluated (matches, LBR, the scorecard, the viewer, exported policies, Python), its
    /// average policy (and `current:` its π^t) drops every action below this probability and
    /// renormalises the rest (thresholding). Small probabilities of a network are mostly its
    /// error; in no-limit poker a little of it on an all-in loses whole stacks. In [0, 1); 0
    /// (default): the network's probabilities as they are. Evaluations during training
    /// (`eval.every`) score the unthresholded policy.
    #[serde(default)]
    pub play_threshold: f64,
    /// Recurrent learner: steps per unroll (backpropagation through time); longer episodes are
    /// split into consecutive unrolls whose LSTM states carry over.
    #[serde(default = "default_usize::<32>")]
    pub unroll_length: usize,
    /// Compute device of the learner: `flex` (CPU), `wgpu`, `cuda` or `default`.
    #[serde(default)]
    pub device: DeviceName,
    /// Compute exact NashConv of the networks every `eval.every` epochs (small games only).
    #[serde(default = "default_true")]
    pub exact_eval: bool,
    /// Exact diagnostics along the network's own policy sequence (W error against regret
    /// matching on exact regrets, NashConv of the exact average, policy movement) in
    /// `metrics.csv` and TensorBoard; small games only, needs `exact_eval`.
    #[serde(default)]
    pub diagnostics: bool,
}

/// Serde default of an integer key: `N`.
fn default_usize<const N: usize>() -> usize {
    N
}

/// Serde default of a real key: `N / D`, correctly rounded, so `default_ratio::<9, 10>` is
/// the literal `0.9` bit for bit.
fn default_ratio<const N: u64, const D: u64>() -> f64 {
    N as f64 / D as f64
}

fn default_true() -> bool {
    true
}

fn default_loss_weights() -> [f64; 4] {
    [1.0; 4]
}

impl ArmacSettings {
    /// The past epoch the opponent plays: `armac.past_draw`, or by default `"latest"` with
    /// the reservoir memory (which requires it) and `"episode"` with the replay memory.
    pub fn past_draw(&self) -> PastDraw {
        match (self.memory, self.past_draw) {
            (_, Some(d)) => d,
            (MemoryKind::Reservoir, None) => PastDraw::Latest,
            (MemoryKind::Replay, None) => PastDraw::default(),
        }
    }

    /// Adam's step size in epoch `t` (see `armac.lr_decay_epochs`).
    pub fn learning_rate_at(&self, epoch: u64) -> f64 {
        if self.lr_decay_epochs > 0.0 {
            self.learning_rate / (1.0 + epoch as f64 / self.lr_decay_epochs).sqrt()
        } else {
            self.learning_rate
        }
    }
}

/// An ARMAC run as the trainer takes it: the validated `[armac]` settings with the game and
/// the evaluation cadence (`eval.every`), the two values the trainer reads from outside the
/// section. Dereferences to the settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmacRun {
    /// The config's `game`.
    pub game: String,
    /// `eval.every`: exact NashConv every this many epochs (and at the last).
    pub eval_every: u64,
    /// The `[armac]` section.
    pub settings: ArmacSettings,
}

impl std::ops::Deref for ArmacRun {
    type Target = ArmacSettings;

    fn deref(&self) -> &ArmacSettings {
        &self.settings
    }
}

/// What `armac.polyak` averages (see `armac.polyak_scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolyakScope {
    /// Every network the actors play and the run saves.
    #[default]
    All,
    /// Only the mean-regret path (its own encoder and the `W̄` head).
    Regret,
}

/// What the network's inputs are divided by (`armac.input_scale`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputScale {
    /// Nothing: the game's tensor as it is (chip amounts in chips).
    None,
    /// The game's per-entry magnitudes (`Game::information_state_tensor_scale`, or the
    /// observation tensor's for the recurrent net): every entry enters within [-1, 1]
    /// (default: on the no-limit testbed raw inputs left NashConv at 1,013 / 744 chips
    /// against 420 / 368, docs/results.md; games whose tensors lie in [-1, 1] give no scale).
    #[default]
    Game,
}

/// The network of a run: feed-forward over information-state tensors, or (`armac.recurrent`)
/// recurrent over per-step observation tensors.
pub fn net_config(game: &GameRef, s: &ArmacSettings) -> ArmacNetConfig {
    ArmacNetConfig {
        input_size: if s.recurrent {
            game.observation_tensor_size()
        } else {
            game.information_state_tensor_size()
        },
        num_actions: game.num_distinct_actions(),
        encoder_hidden: s.hidden,
        encoder_layers: s.layers,
        head_hidden: s.hidden,
        recurrent: s.recurrent,
        zero_init_heads: s.zero_init_heads,
        separate_regret_encoder: s.separate_regret_encoder,
        input_scale: match s.input_scale {
            InputScale::None => None,
            InputScale::Game if s.recurrent => game.observation_tensor_scale(),
            InputScale::Game => game.information_state_tensor_scale(),
        }
        .unwrap_or_default(),
    }
}

/// What returns are divided by: `armac.reward_scale`, or by default the largest absolute
/// utility (networks learn values of order 1).
pub fn reward_scale(game: &GameRef, s: &ArmacSettings) -> f64 {
    s.reward_scale.unwrap_or_else(|| default_reward_scale(game))
}

/// The reward scale when the config sets none: the game's largest absolute payoff.
pub fn default_reward_scale(game: &GameRef) -> f64 {
    game.max_utility()
        .abs()
        .max(game.min_utility().abs())
        .max(1e-9)
}

/// The errors of `armac.*` keys.
const ARMAC: Section = Section("armac");

impl ArmacSettings {
    /// Checks every key's bounds and the keys that need each other; the error names the key
    /// (`armac.lambda`).
    pub fn validate(&self) -> Result<(), SettingsError> {
        check_sizes(self)?;
        check_requirements(self)?;
        check_memory(self)?;
        check_ranges(self)
    }
}

/// Counts and capacities, and the learning rate and λ.
fn check_sizes(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.at_least_one(&[
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
    ])?;
    ARMAC.require(
        a.learner_threads <= MAX_THREADS,
        "learner_threads",
        "must be at most 1024 (0: the cores the actors leave)",
    )?;
    ARMAC.at_most(&[
        ("actors", a.actors, MAX_THREADS, "threads"),
        (
            "learning_steps_per_epoch",
            a.learning_steps_per_epoch,
            1 << 20,
            "learning steps",
        ),
        (
            "episodes_per_epoch",
            a.episodes_per_epoch,
            1 << 24,
            "trajectories",
        ),
        (
            "replay_capacity",
            a.replay_capacity,
            1 << 24,
            "trajectories",
        ),
        (
            "batch_trajectories",
            a.batch_trajectories,
            1 << 16,
            "trajectories",
        ),
        ("games_per_group", a.games_per_group, 1 << 16, "games"),
        ("unroll_length", a.unroll_length, 1 << 16, "steps"),
        ("allin_runouts", a.allin_runouts, 1 << 16, "run-outs"),
        (
            "reservoir_capacity",
            a.reservoir_capacity,
            1 << 20,
            "networks",
        ),
        ("snapshot_memory_mb", a.snapshot_memory_mb, 1 << 20, "MiB"),
        ("memory_capacity", a.memory_capacity, 1 << 26, "samples"),
        ("memory_batch", a.memory_batch, 1 << 20, "samples"),
    ])?;
    ARMAC.network(("hidden", "layers"), a.hidden, a.layers)?;
    ARMAC.require(
        a.replay_capacity >= a.episodes_per_epoch,
        "replay_capacity",
        "must be at least episodes_per_epoch (one epoch of trajectories)",
    )?;
    ARMAC.positive("learning_rate", a.learning_rate)?;
    ARMAC.in_unit(&[("lambda", a.lambda)])
}

/// The options that need exact evaluation, a target kind or a network kind.
fn check_requirements(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.require(
        !a.diagnostics || a.exact_eval,
        "diagnostics",
        "needs armac.exact_eval = true (diagnostics are exact, small games only)",
    )?;
    ARMAC.require(
        !a.exact_advantages || a.exact_eval,
        "exact_advantages",
        "needs armac.exact_eval = true (exact values exist for small games only)",
    )?;
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
            return Err(ARMAC.error("tabular_w", why));
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
            return Err(ARMAC.error("chance_baseline", why));
        }
    }
    ARMAC.require(
        !(a.advantage_target.uses_infoset() && a.recurrent),
        "advantage_target",
        "\"infoset\" and \"corrected_infoset\" need a feed-forward network \
         (armac.recurrent = false)",
    )?;
    ARMAC.require(
        a.reward_scale.is_none_or(|x| x.is_finite() && x > 0.0),
        "reward_scale",
        "must be a positive number",
    )?;
    ARMAC.require(
        a.loss_weights.iter().all(|w| w.is_finite() && *w >= 0.0),
        "loss_weights",
        "must be four numbers >= 0",
    )?;
    ARMAC.require(
        a.lr_decay_epochs.is_finite() && a.lr_decay_epochs >= 0.0,
        "lr_decay_epochs",
        "must be a number >= 0 (0: constant rate)",
    )
}

/// The memory keys.
fn check_memory(a: &ArmacSettings) -> Result<(), SettingsError> {
    let reservoir = a.memory == MemoryKind::Reservoir;
    match (a.memory, a.past_draw) {
        (MemoryKind::Replay, _) | (MemoryKind::Reservoir, None | Some(PastDraw::Latest)) => {}
        (MemoryKind::Reservoir, Some(_)) => {
            return Err(ARMAC.error(
                "past_draw",
                "must be \"latest\" with armac.memory = \"reservoir\" (each epoch adds the \
                 advantages of the previous epoch's policy to the reservoir)",
            ));
        }
    }
    if reservoir {
        ARMAC.require(
            !a.recurrent,
            "memory",
            "\"reservoir\" needs the feed-forward network (armac.recurrent = false): \
             its samples are single decisions, not sequences",
        )?;
        ARMAC.require(
            a.memory_capacity != 0 && a.memory_batch != 0,
            "memory_capacity / memory_batch",
            "must be at least 1 with armac.memory = \"reservoir\"",
        )?;
    }
    ARMAC.require(
        reservoir || a.memory_targets == MemoryTargets::Sample,
        "memory_targets",
        "mean targets need armac.memory = \"reservoir\"",
    )?;
    ARMAC.require(
        a.device_memory != DeviceMemory::Device
            || (reservoir
                && a.memory_targets == MemoryTargets::Sample
                && a.memory_capacity <= RESIDENT_MAX_CAPACITY),
        "device_memory",
        "\"device\" needs armac.memory = \"reservoir\", memory_targets = \"sample\" \
         and memory_capacity <= 16777216",
    )?;
    Ok(())
}

/// Weights, exponents and decays.
fn check_ranges(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.require(
        !(a.recurrent && a.separate_regret_encoder),
        "separate_regret_encoder",
        "needs the feed-forward network (armac.recurrent = false)",
    )?;
    ARMAC.require(
        a.memory_max_weight.is_finite() && a.memory_max_weight >= 1.0,
        "memory_max_weight",
        "must be a number >= 1",
    )?;
    for (key, v) in [
        ("memory_regret_power", a.memory_regret_power),
        ("memory_policy_power", a.memory_policy_power),
    ] {
        ARMAC.require(
            v.is_finite() && (0.0..=4.0).contains(&v),
            key,
            "must be a number in [0, 4]",
        )?;
    }
    ARMAC.below_one(&[("polyak", a.polyak)])?;
    if a.polyak_scope == PolyakScope::Regret {
        ARMAC.require(
            a.separate_regret_encoder,
            "polyak_scope",
            "\"regret\" needs separate_regret_encoder = true",
        )?;
        ARMAC.require(
            a.polyak != 0.0,
            "polyak_scope",
            "\"regret\" needs polyak > 0",
        )?;
    }
    ARMAC.below_one(&[
        ("adam_beta1", a.adam_beta1),
        ("eval_fraction", a.eval_fraction),
        ("play_threshold", a.play_threshold),
    ])
}
