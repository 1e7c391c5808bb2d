//! Plain-data batches crossing the module boundary ([`ActBatch`], [`ActOutput`], [`TrainBatch`]
//! with its [`StepTargets`], [`Losses`]) and the normalised-ReLU policy of a regret row.

use super::config::ArmacNetConfig;
use super::config::NnError;
use crate::policy::probs::normalized_relu;

/// A batch of decision points to evaluate, row-major plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActBatch {
    /// `B × input`: the acting player's information-state tensor.
    pub own: Vec<f32>,
    /// `B × input`: player 0's tensor at that history.
    pub both0: Vec<f32>,
    /// `B × input`: player 1's tensor at that history.
    pub both1: Vec<f32>,
    /// `B × A`: 1.0 where the action is legal, 0.0 where it is not.
    pub legal: Vec<f32>,
}

impl ActBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one decision point.
    pub fn push(&mut self, own: &[f32], both0: &[f32], both1: &[f32], legal: &[bool]) {
        self.own.extend_from_slice(own);
        self.both0.extend_from_slice(both0);
        self.both1.extend_from_slice(both1);
        self.legal
            .extend(legal.iter().map(|&l| f32::from(u8::from(l))));
    }

    /// Number of rows: `legal.len() / num_actions`.
    pub fn rows(&self, num_actions: usize) -> usize {
        self.legal.len() / num_actions.max(1)
    }

    /// Checks every length against `cfg` (the row count comes from `legal`).
    pub fn validate(&self, cfg: &ArmacNetConfig) -> Result<(), NnError> {
        self.check(cfg.input_size, cfg.num_actions, true)
    }

    /// Checks the lengths a forward pass reads: `legal` and `own` always, `both0` and `both1`
    /// only when `critic` (the critic is the one output that reads both players' tensors).
    pub(super) fn check(&self, n_in: usize, a: usize, critic: bool) -> Result<(), NnError> {
        let rows = self.rows(a);
        check_len("legal", self.legal.len(), rows * a)?;
        check_len("own", self.own.len(), rows * n_in)?;
        if critic {
            check_len("both0", self.both0.len(), rows * n_in)?;
            check_len("both1", self.both1.len(), rows * n_in)?;
        }
        Ok(())
    }
}

pub(super) fn check_len(name: &str, got: usize, want: usize) -> Result<(), NnError> {
    if got == want {
        Ok(())
    } else {
        Err(NnError::Batch(format!(
            "`{name}` has {got} entries, expected {want}"
        )))
    }
}

/// Which outputs of the network a forward pass computes: a pass that leaves some out skips
/// their work (the critic needs both players' encodings, the information-state heads only the
/// acting player's), and the outputs it leaves out are zeros in an `ArmacOutput` and empty
/// in an [`ActOutput`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heads {
    /// The critic `q_0`, `q_1`.
    pub critic: bool,
    /// The mean-regret head `W̄`.
    pub mean_regret: bool,
    /// The immediate-regret head.
    pub immediate_regret: bool,
    /// The average-policy head `π̄`.
    pub avg_policy: bool,
}

impl Heads {
    /// Every output.
    pub const ALL: Heads = Heads {
        critic: true,
        mean_regret: true,
        immediate_regret: true,
        avg_policy: true,
    };
    /// No output.
    pub const NONE: Heads = Heads {
        critic: false,
        mean_regret: false,
        immediate_regret: false,
        avg_policy: false,
    };
    /// The critic alone.
    pub const CRITIC: Heads = Heads {
        critic: true,
        ..Heads::NONE
    };
    /// The mean-regret head alone (what `π^t` reads).
    pub const MEAN_REGRET: Heads = Heads {
        mean_regret: true,
        ..Heads::NONE
    };
    /// The average-policy head alone.
    pub const AVG_POLICY: Heads = Heads {
        avg_policy: true,
        ..Heads::NONE
    };

    /// The outputs either set asks for.
    pub fn union(self, other: Heads) -> Heads {
        Heads {
            critic: self.critic || other.critic,
            mean_regret: self.mean_regret || other.mean_regret,
            immediate_regret: self.immediate_regret || other.immediate_regret,
            avg_policy: self.avg_policy || other.avg_policy,
        }
    }

    /// Whether any output is asked for.
    pub fn any(self) -> bool {
        self != Heads::NONE
    }

    /// Whether an information-state head (any but the critic) is asked for.
    pub fn any_infostate(self) -> bool {
        self.mean_regret || self.immediate_regret || self.avg_policy
    }
}

/// Head outputs for an [`ActBatch`], row-major `B × A` each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActOutput {
    /// Number of rows `B`.
    pub rows: usize,
    /// Number of actions `A`.
    pub num_actions: usize,
    /// Critic `q_0(h, a)` (0 at illegal actions).
    pub q0: Vec<f32>,
    /// Critic `q_1(h, a)` (0 at illegal actions).
    pub q1: Vec<f32>,
    /// Mean-regret head `W̄(s, a)` (0 at illegal actions).
    pub mean_regret: Vec<f32>,
    /// Immediate-regret head (0 at illegal actions).
    pub immediate_regret: Vec<f32>,
    /// Average policy `π̄(s)`: masked softmax, exactly 0 at illegal actions.
    pub avg_policy: Vec<f32>,
}

impl ActOutput {
    /// An output of `rows` rows with every field empty (no output asked for, or no rows).
    pub(super) fn empty(rows: usize, num_actions: usize) -> Self {
        ActOutput {
            rows,
            num_actions,
            ..Default::default()
        }
    }

    /// Assembles an output of `rows` rows from its fields in declaration order (`q0`, `q1`,
    /// `mean_regret`, `immediate_regret`, `avg_policy`); missing trailing fields are empty.
    pub(super) fn from_fields(rows: usize, num_actions: usize, fields: Vec<Vec<f32>>) -> Self {
        let mut it = fields.into_iter();
        let mut next = || it.next().unwrap_or_default();
        ActOutput {
            rows,
            num_actions,
            q0: next(),
            q1: next(),
            mean_regret: next(),
            immediate_regret: next(),
            avg_policy: next(),
        }
    }

    /// Row `i` of a `B × A` field.
    pub fn row<'a>(&self, field: &'a [f32], i: usize) -> &'a [f32] {
        &field[i * self.num_actions..(i + 1) * self.num_actions]
    }

    /// The current policy of row `i`: [`normalized_relu`] of its mean-regret head.
    pub fn current_policy(&self, i: usize, legal: &[bool]) -> Vec<f32> {
        normalized_relu(self.row(&self.mean_regret, i), legal)
    }
}

/// Training targets and inputs, row-major plain data. Each loss is a weighted mean over rows
/// (divided by the sum of its weights; 0 when they sum to 0):
///
/// * critic: `½ [(q0(h, a) − t0)² + (q1(h, a) − t1)²]` at the taken action `a`;
/// * mean regret / immediate regret: mean over the row's legal actions of `(head − target)²`;
/// * policy: cross-entropy `−Σ_a target(a) · log softmax(masked logits)(a)` (targets at illegal
///   actions are ignored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainBatch {
    /// `B × input`: the acting player's information-state tensor.
    pub own: Vec<f32>,
    /// `B × input`: player 0's tensor at that history.
    pub both0: Vec<f32>,
    /// `B × input`: player 1's tensor at that history.
    pub both1: Vec<f32>,
    /// `B × A`: 1.0 where the action is legal, 0.0 where it is not.
    pub legal: Vec<f32>,
    /// `B`: the action taken (must be legal where `critic_weight` ≠ 0). Its length is the
    /// batch's row count.
    pub action: Vec<usize>,
    /// `B`: Tree-Backup returns for `q0(h, action)` and `q1(h, action)`.
    pub critic_target: Vec<[f32; 2]>,
    /// `B`: critic loss weights.
    pub critic_weight: Vec<f32>,
    /// `B × A`: mean-regret head targets.
    pub regret_target: Vec<f32>,
    /// `B`: mean-regret loss weights.
    pub regret_weight: Vec<f32>,
    /// `B × A`: immediate-regret head targets.
    pub immediate_target: Vec<f32>,
    /// `B`: immediate-regret loss weights.
    pub immediate_weight: Vec<f32>,
    /// `B × A`: average-policy targets (distributions over legal actions).
    pub policy_target: Vec<f32>,
    /// `B`: average-policy loss weights.
    pub policy_weight: Vec<f32>,
    /// The critic and immediate-regret targets of the first rows as coefficients of the
    /// learner's critic, evaluated inside the step ([`StepTargets`]); `None`: the targets are
    /// `critic_target` and `immediate_target`.
    pub step_targets: Option<StepTargets>,
}

/// One row of a [`TrainBatch`], borrowed.
#[derive(Clone, Copy, Debug)]
pub struct TrainRow<'a> {
    /// The acting player's information-state tensor.
    pub own: &'a [f32],
    /// Player 0's tensor at that history.
    pub both0: &'a [f32],
    /// Player 1's tensor at that history.
    pub both1: &'a [f32],
    /// Legal actions.
    pub legal: &'a [bool],
    /// The action taken.
    pub action: usize,
    /// Tree-Backup returns for both players.
    pub critic_target: [f32; 2],
    /// Critic loss weight.
    pub critic_weight: f32,
    /// Mean-regret targets (length `A`).
    pub regret_target: &'a [f32],
    /// Mean-regret loss weight.
    pub regret_weight: f32,
    /// Immediate-regret targets (length `A`).
    pub immediate_target: &'a [f32],
    /// Immediate-regret loss weight.
    pub immediate_weight: f32,
    /// Average-policy target (length `A`).
    pub policy_target: &'a [f32],
    /// Average-policy loss weight.
    pub policy_weight: f32,
}

impl TrainBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one row.
    pub fn push(&mut self, row: &TrainRow<'_>) {
        self.own.extend_from_slice(row.own);
        self.both0.extend_from_slice(row.both0);
        self.both1.extend_from_slice(row.both1);
        self.legal
            .extend(row.legal.iter().map(|&l| f32::from(u8::from(l))));
        self.action.push(row.action);
        self.critic_target.push(row.critic_target);
        self.critic_weight.push(row.critic_weight);
        self.regret_target.extend_from_slice(row.regret_target);
        self.regret_weight.push(row.regret_weight);
        self.immediate_target
            .extend_from_slice(row.immediate_target);
        self.immediate_weight.push(row.immediate_weight);
        self.policy_target.extend_from_slice(row.policy_target);
        self.policy_weight.push(row.policy_weight);
    }

    /// Number of rows: `action.len()`.
    pub fn rows(&self) -> usize {
        self.action.len()
    }

    /// Checks every length against `cfg`, and that each taken action is in range and legal.
    pub fn validate(&self, cfg: &ArmacNetConfig) -> Result<(), NnError> {
        let n_in = self.rows() * cfg.input_size;
        check_len("own", self.own.len(), n_in)?;
        check_len("both0", self.both0.len(), n_in)?;
        check_len("both1", self.both1.len(), n_in)?;
        self.validate_targets(cfg.num_actions)?;
        match &self.step_targets {
            Some(st) => st.validate(self, cfg.num_actions, false),
            None => Ok(()),
        }
    }

    /// The targets, weights, legal masks and actions of rows `idx` in that order (the inputs
    /// are left empty: the losses do not read them).
    pub(super) fn select_targets(&self, idx: &[usize], a: usize) -> TrainBatch {
        let mut t = TrainBatch::default();
        for &i in idx {
            let r = i * a..(i + 1) * a;
            t.legal.extend_from_slice(&self.legal[r.clone()]);
            t.action.push(self.action[i]);
            t.critic_target.push(self.critic_target[i]);
            t.critic_weight.push(self.critic_weight[i]);
            t.regret_target
                .extend_from_slice(&self.regret_target[r.clone()]);
            t.regret_weight.push(self.regret_weight[i]);
            t.immediate_target
                .extend_from_slice(&self.immediate_target[r.clone()]);
            t.immediate_weight.push(self.immediate_weight[i]);
            t.policy_target.extend_from_slice(&self.policy_target[r]);
            t.policy_weight.push(self.policy_weight[i]);
        }
        t
    }

    /// The target half of [`Self::validate`] (inputs and step targets not checked).
    pub(super) fn validate_targets(&self, a: usize) -> Result<(), NnError> {
        let (b, ba) = (self.rows(), self.rows() * a);
        check_len("legal", self.legal.len(), ba)?;
        check_len("action", self.action.len(), b)?;
        check_len("critic_target", self.critic_target.len(), b)?;
        check_len("critic_weight", self.critic_weight.len(), b)?;
        check_len("regret_target", self.regret_target.len(), ba)?;
        check_len("regret_weight", self.regret_weight.len(), b)?;
        check_len("immediate_target", self.immediate_target.len(), ba)?;
        check_len("immediate_weight", self.immediate_weight.len(), b)?;
        check_len("policy_target", self.policy_target.len(), ba)?;
        check_len("policy_weight", self.policy_weight.len(), b)?;
        for (i, &act) in self.action.iter().enumerate() {
            if self.critic_weight[i] != 0.0 && (act >= a || self.legal[i * a + act] <= 0.5) {
                return Err(NnError::Batch(format!(
                    "row {i}: action {act} is out of range or illegal"
                )));
            }
        }
        Ok(())
    }
}

/// The four losses of one training step and their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Losses {
    /// Weighted critic MSE.
    pub critic: f64,
    /// Weighted mean-regret MSE.
    pub mean_regret: f64,
    /// Weighted immediate-regret MSE.
    pub immediate_regret: f64,
    /// Weighted average-policy cross-entropy.
    pub policy: f64,
    /// `critic + mean_regret + immediate_regret + policy` (the optimised objective).
    pub total: f64,
}

/// The critic and immediate-regret targets of a [`TrainBatch`]'s first `rows` rows as
/// coefficients of the learner's critic (see the `step_targets` module's docs). With `q_p[j]` the critic row of
/// batch row `j` for player `p`'s utility and `s_p[j] = Σ_a successor[j, a] · q_p[j, a]`:
///
/// * critic target of row `r`: `base[r][p] + Σ_d weight[r, d] · s_p[index[r, d]]`;
/// * immediate-regret target of row `r` with acting player `p = player[r]`: at the legal
///   actions `q_p[r] − Σ_a policy[r, a] · q_p[r, a]`, 0 elsewhere.
///
/// The batch's `critic_target` and `immediate_target` of those rows are not read; rows from
/// `rows` on must weigh neither the critic nor the immediate-regret head. In a feed-forward
/// batch every row below `rows` must weigh the critic (so it is in the step's critic pass); a
/// recurrent batch computes every row's critic, so its padding rows may be covered, with zero
/// coefficients.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepTargets {
    /// Rows covered: the batch's first `rows`.
    pub rows: usize,
    /// Terms per row (the row stride of `index` and `weight`), at least 1 when `rows > 0`.
    pub depth: usize,
    /// `rows × A`: the target policy `π` at each row, 0 at illegal actions.
    pub policy: Vec<f32>,
    /// `rows × A`: the coefficients by which a row's critic enters the target of the rows
    /// before it on its trajectory (`π_j − c_j·onehot(a_j)`).
    pub successor: Vec<f32>,
    /// `rows × depth`: rows (below `rows`) whose `s` enter each row's critic target.
    pub index: Vec<usize>,
    /// `rows × depth`: their weights.
    pub weight: Vec<f32>,
    /// `rows`: the part of each critic target that the critic does not enter (the return's).
    pub base: Vec<[f32; 2]>,
    /// `rows`: the acting player (0 or 1), whose utility the immediate-regret target reads.
    pub player: Vec<u8>,
}

impl StepTargets {
    /// Checks the lengths and ranges against a batch `t` of `A = a` actions; `full_pass`: the
    /// step computes the critic of every row (recurrent batches).
    pub(super) fn validate(
        &self,
        t: &TrainBatch,
        a: usize,
        full_pass: bool,
    ) -> Result<(), NnError> {
        let (r, d) = (self.rows, self.depth);
        let bad = |what: String| Err(NnError::Config(format!("step_targets: {what}")));
        if r > t.rows() {
            return bad(format!("{r} rows in a batch of {}", t.rows()));
        }
        if r > 0 && d == 0 {
            return bad("depth 0".into());
        }
        check_len("step_targets.policy", self.policy.len(), r * a)?;
        check_len("step_targets.successor", self.successor.len(), r * a)?;
        check_len("step_targets.index", self.index.len(), r * d)?;
        check_len("step_targets.weight", self.weight.len(), r * d)?;
        check_len("step_targets.base", self.base.len(), r)?;
        check_len("step_targets.player", self.player.len(), r)?;
        if let Some(i) = self.index.iter().find(|&&i| i >= r) {
            return bad(format!("index {i} beyond its {r} rows"));
        }
        if let Some(p) = self.player.iter().find(|&&p| p > 1) {
            return bad(format!("player {p}"));
        }
        if let Some(i) = (0..r).find(|&i| !full_pass && t.critic_weight[i] == 0.0) {
            return bad(format!("row {i} has no critic weight"));
        }
        if let Some(i) =
            (r..t.rows()).find(|&i| t.critic_weight[i] != 0.0 || t.immediate_weight[i] != 0.0)
        {
            return bad(format!(
                "row {i} weighs the critic or the immediate-regret head but is not covered"
            ));
        }
        Ok(())
    }
}
