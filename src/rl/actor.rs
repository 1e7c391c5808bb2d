//! ARMAC's actors: threads that play many episodes in lock-step so that every network query is
//! one batched forward pass, and send finished trajectories to the learner.
//!
//! Each episode of a group draws its networks (Algorithm 1, section 3.3; with
//! [`PastDraw::Group`] the whole group shares one draw, and each network still evaluates all
//! the games that use it in one batch):
//! * a **learning episode**: the learning player `i` (alternating between episodes) follows the
//!   behaviour policy `μ_i` — an exploration candidate (section 3.3) computed from the exploring
//!   network, which is the latest network with probability 1/2 and otherwise a uniformly drawn
//!   past one — while the opponent plays `π^j = NormalizedReLU(W_j)` of a past network `j` drawn
//!   uniformly from the reservoir. At `i`'s decisions the step stores `q_j(h,·) − v_j(h)` (the
//!   mean-regret target); at the opponent's decisions it stores `π^j(s)` (the average-policy
//!   target).
//! * an **evaluation group**: the learning player plays one candidate of the latest network
//!   against the latest average policy `π̄`; the returns rank the candidates, and the
//!   trajectories train only the critic.

use super::candidates::Candidate;
use super::exact::ExactValues;
use super::table::PolicyTable;
use super::trajectory::{Step, Trajectory};
use crate::game::{GameRef, State, Turn};
use crate::nn::armac::{ActBatch, ActOutput, ArmacPolicyNet, Heads, RecurrentState, StepBatch};
use crate::policy::probs::{mix_epsilon, normalized_relu};
use crate::util::SplitMix64;
use std::sync::Arc;

/// A past epoch `j` as the actors replay it: its policy `π^j = NormalizedReLU(W_θj)` comes from
/// the network at the start of epoch `j`, and the critic that evaluates `π^j` from the network at
/// its end (the critic was trained towards `π^j` during epoch `j`).
#[derive(Clone)]
pub struct PastEpoch {
    pub policy: Arc<ArmacPolicyNet>,
    pub critic: Arc<ArmacPolicyNet>,
    /// Exact values of `π^j` (the `exact_advantages` ablation): when present, the stored
    /// advantages come from them instead of the critic.
    pub exact: Option<Arc<ExactValues>>,
    /// The `tabular_w` ablation: `π^j` from this table instead of the policy network's head.
    pub table: Option<Arc<PolicyTable>>,
}

/// The networks actors play with during one epoch.
pub struct Snapshots {
    /// The epoch `t`.
    pub epoch: u64,
    /// `θ^t`, the network at the start of the epoch (its `W` defines `π^t`).
    pub latest: Arc<ArmacPolicyNet>,
    /// The `tabular_w` ablation: `π^t` from this table instead of `latest`'s head.
    pub latest_table: Option<Arc<PolicyTable>>,
    /// The reservoir of past epochs `j < t` (empty in epoch 0: then episodes train only the
    /// critic).
    pub past: Vec<PastEpoch>,
    /// The previous epoch `t − 1` (`None` in epoch 0), which [`PastDraw::Latest`] plays.
    pub previous: Option<PastEpoch>,
    /// The candidate that ranked best in the previous epoch.
    pub best: Candidate,
}

/// Messages from actors to the learner.
pub enum ActorMsg {
    /// A finished episode.
    Trajectory(Box<Trajectory>),
    /// Returns of an exploration candidate against the average policy (evaluation groups).
    CandidateReturn {
        epoch: u64,
        candidate: Candidate,
        total: f64,
        count: u64,
    },
}

/// How often the actors draw a past epoch `j` (and the exploring network and candidate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PastDraw {
    /// Every episode draws its own (Algorithm 1; default).
    #[default]
    Episode,
    /// One draw per lock-step group of episodes (the first version: fewer distinct past
    /// policies per epoch, one batched forward pass per network and step).
    Group,
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
    /// the baselines paper, with `π^j` as the target policy at both players' decisions and the behaviour
    /// probability of each sampled action in the denominator), so the stored target's
    /// expectation is `π^j`'s exact advantage at `h` whatever the critic's error; the critic
    /// only lowers its variance. See [`corrected_advantages`].
    Corrected,
    /// [`Self::Corrected`] with the critic's advantage at the sampled history replaced, as
    /// the control variate's mean, by its average over the learning player's information state
    /// (the histories and weights of [`Self::Infoset`]): the target is
    /// `ũ(h, ·) − ũ(h) − A_c(h) + Σ_h' w(h') A_c(h')` with `A_c = q_j − v_j` the past critic's
    /// advantages. Given the information state the sampled `h` has probability `w(h)`, so the
    /// two critic terms cancel in expectation and the target keeps [`Self::Corrected`]'s
    /// expectation; what the opponent's private information does to the critic's advantages no
    /// longer varies the target (feed-forward networks; a game with more than
    /// [`MAX_SHADOWS`] histories per information state falls back to [`Self::Corrected`]).
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

/// Settings of the actors.
#[derive(Clone, Debug)]
pub struct ActorSettings {
    /// Episodes played in lock-step per group.
    pub games_per_group: usize,
    /// Probability that a group ranks candidates instead of producing learning data.
    pub eval_fraction: f64,
    /// Returns are divided by this before they are stored (networks learn values of order 1).
    pub reward_scale: f64,
    /// Whether each episode or each group draws its past epoch.
    pub past_draw: PastDraw,
    /// What the stored mean-regret targets average over.
    pub advantage_target: AdvantageTarget,
    /// The learning player's behaviour policy.
    pub behaviour: Behaviour,
    /// With [`AdvantageTarget::Corrected`] (feed-forward nets): a baseline at chance nodes
    /// between decisions too (see [`CvStep::chance_value`]).
    pub chance_baseline: bool,
}

/// Most histories a game tracks for [`AdvantageTarget::Infoset`]; a game whose learning player
/// cannot tell more histories apart stores single-history targets from then on.
pub const MAX_SHADOWS: usize = 512;

/// One history the learning player cannot tell from the one being played, with its weight
/// `π_{-i}(h')` under chance and the opponent's `π^j` (the played history is one of them).
struct Shadow {
    state: Box<dyn State>,
    weight: f64,
}

/// The learning player's information-state tensor of `state`.
fn view(state: &dyn State, player: usize, size: usize) -> Vec<f32> {
    let mut v = vec![0.0; size];
    state.information_state_tensor(player, &mut v);
    v
}

/// Appends `state` as one row of `batch`, player `p` acting, `legal` its legal actions.
fn push_row(batch: &mut ActBatch, state: &dyn State, p: usize, info_size: usize, legal: &[bool]) {
    let i0 = view(state, 0, info_size);
    let i1 = view(state, 1, info_size);
    batch.own.extend_from_slice(if p == 0 { &i0 } else { &i1 });
    batch.both0.extend(i0);
    batch.both1.extend(i1);
    batch.legal.extend(legal.iter().map(|&m| m as u8 as f32));
}

/// `v(h) = Σ_a π(a) q(h, a)`: the value of a decision under policy `pi` and action values `q`.
fn state_value(pi: &[f32], q: &[f32]) -> f32 {
    pi.iter().zip(q).map(|(a, b)| a * b).sum()
}

/// The shadows after a chance node whose played outcome leads to `played`: every outcome of
/// every shadow that leaves the learning player's view as the played one does, weighted by
/// its probability. `None` past [`MAX_SHADOWS`].
fn shadows_after_chance(
    shadows: Vec<Shadow>,
    played: &dyn State,
    learner: usize,
    size: usize,
) -> Option<Vec<Shadow>> {
    let want = view(played, learner, size);
    let mut next = Vec::new();
    for sh in shadows {
        if !sh.state.is_chance() {
            continue;
        }
        for (o, p) in sh.state.chance_outcomes() {
            let mut c = sh.state.clone_box();
            c.apply_action(o);
            if view(c.as_ref(), learner, size) == want {
                next.push(Shadow {
                    state: c,
                    weight: sh.weight * p,
                });
            }
        }
        if next.len() > MAX_SHADOWS {
            return None;
        }
    }
    Some(next)
}

/// The shadows after the opponent plays `action` from `before`, the played history:
/// `probs[k]` is `π^j` at shadow `k`'s opponent decision. Each shadow branches over its actions
/// that leave the learning player's view as the played action does (in poker only the played
/// action itself; in II-Goofspiel every bid with the same outcome), weighted by `π^j`. `None`
/// past [`MAX_SHADOWS`].
fn shadows_after_action(
    shadows: Vec<Shadow>,
    probs: &[Vec<f32>],
    before: &dyn State,
    action: usize,
    learner: usize,
    size: usize,
) -> Option<Vec<Shadow>> {
    let mut played = before.clone_box();
    played.apply_action(action);
    let want = view(played.as_ref(), learner, size);
    let mut next = Vec::new();
    for (sh, pi) in shadows.into_iter().zip(probs) {
        for b in sh.state.legal_actions() {
            let w = sh.weight * f64::from(pi[b]);
            if w <= 0.0 {
                continue;
            }
            let mut c = sh.state.clone_box();
            c.apply_action(b);
            if view(c.as_ref(), learner, size) == want {
                next.push(Shadow {
                    state: c,
                    weight: w,
                });
            }
        }
        if next.len() > MAX_SHADOWS {
            return None;
        }
    }
    Some(next)
}

/// Row `cr` of the critic's `q_p` in `c`.
fn q_of(c: &ActOutput, cr: usize, n: usize, p: usize) -> &[f32] {
    let r = cr * n..(cr + 1) * n;
    if p == 0 { &c.q0[r] } else { &c.q1[r] }
}

fn sample(probs: &[f32], rng: &mut SplitMix64) -> usize {
    let w: Vec<f64> = probs.iter().map(|&p| p.max(0.0) as f64).collect();
    rng.weighted(&w)
}

/// The behaviour policy of candidate `c` for one row of network outputs.
pub fn candidate_policy(c: Candidate, out: &ActOutput, row: usize, legal: &[bool]) -> Vec<f32> {
    let a = legal.len();
    let r = row * a..(row + 1) * a;
    match c {
        Candidate::Uniform => normalized_relu(&vec![0.0; a], legal),
        Candidate::Immediate(_) => mix_epsilon(
            &normalized_relu(&out.immediate_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::MeanRegret(_) => mix_epsilon(
            &normalized_relu(&out.mean_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::Average => out.avg_policy[r].to_vec(),
    }
}

/// The output of the exploring network that [`candidate_policy`] reads for `c` (none for the
/// uniform candidate).
fn candidate_heads(c: Candidate) -> Heads {
    match c {
        Candidate::Uniform => Heads::NONE,
        Candidate::Immediate(_) => Heads {
            immediate_regret: true,
            ..Heads::NONE
        },
        Candidate::MeanRegret(_) => Heads::MEAN_REGRET,
        Candidate::Average => Heads::AVG_POLICY,
    }
}

/// What one episode of a group plays with: indices into the group's network list.
#[derive(Clone)]
struct Roles {
    /// The opponent's network (`π^j`; the latest network in evaluation groups and epoch 0).
    opp: usize,
    /// The exploring network of the learning player's candidate.
    beh: usize,
    /// The past critic `θ^{j+1}` (learning episodes only).
    critic: Option<usize>,
    /// Exact values of `π^j` (ablation), used instead of the critic.
    exact: Option<Arc<ExactValues>>,
    candidate: Candidate,
}

struct Live {
    state: Box<dyn State>,
    traj: Trajectory,
    roles: Roles,
    /// Recurrent nets: both seats' LSTM states of this game, per network it uses.
    rnn: Vec<(usize, [RecurrentState; 2])>,
    /// The learning player's behaviour reach so far ([`Step::reach`]).
    reach: f64,
    /// [`AdvantageTarget::Infoset`] in learning episodes: the histories the learning player
    /// cannot tell from this one (`None` otherwise, or once there are too many).
    shadows: Option<Vec<Shadow>>,
    /// [`AdvantageTarget::Corrected`] in learning episodes: every decision so far, for the
    /// correction computed once the episode ends (`None` otherwise).
    corrected: Option<Vec<CvStep>>,
    /// [`AdvantageTarget::CorrectedInfoset`]: per learning decision (step index), what its
    /// corrected target adds, `Σ_h' w(h') A_c(h') − A_c(h)`.
    offsets: Vec<(usize, Vec<f32>)>,
    /// A chance node just passed whose value the next decision's step records: the
    /// probability and state of each of its outcomes until they are evaluated, then the value.
    chance: Option<ChanceNode>,
}

/// A chance node between two decisions of a corrected learning episode.
enum ChanceNode {
    /// Its outcomes (every outcome is a decision).
    Pending(Vec<Outcome>),
    /// `Σ_o p(o) v(h_o)`.
    Value(f32),
}

/// One outcome of a pending [`ChanceNode`]: the decision it leads to.
struct Outcome {
    prob: f64,
    state: Box<dyn State>,
    /// The player to act there, and the legal actions.
    player: usize,
    legal: Vec<bool>,
}

/// The outcomes of chance node `state`, if every outcome leads to a decision (`None`
/// otherwise: no chance value is then used there).
fn chance_children(state: &dyn State, num_actions: usize) -> Option<Vec<Outcome>> {
    state
        .chance_outcomes()
        .into_iter()
        .map(|(o, prob)| {
            let mut c = state.clone_box();
            c.apply_action(o);
            let Turn::Player(player) = c.turn() else {
                return None;
            };
            let legal = legal_mask(c.as_ref(), num_actions);
            Some(Outcome {
                prob,
                state: c,
                player,
                legal,
            })
        })
        .collect()
}

/// Replaces every pending chance node of `live` by its value `Σ_o p(o) v(h_o)`, with one
/// batched evaluation per network (the opponent's `π^j` and the past critic of each episode).
fn evaluate_chance(live: &mut [Live], nets: &Nets, num_actions: usize, info_size: usize) {
    // Per network: (game, outcome) of each row.
    let mut rows_of: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nets.len()];
    let mut heads = vec![Heads::NONE; nets.len()];
    for (g, l) in live.iter().enumerate() {
        if let (Some(ChanceNode::Pending(kids)), Some(c)) = (&l.chance, l.roles.critic) {
            let opp = l.roles.opp;
            heads[opp] = heads[opp].union(Heads::MEAN_REGRET);
            heads[c] = heads[c].union(Heads::CRITIC);
            for o in 0..kids.len() {
                rows_of[opp].push((g, o));
                if c != opp {
                    rows_of[c].push((g, o));
                }
            }
        }
    }
    if rows_of.iter().all(Vec::is_empty) {
        return;
    }
    let kid = |g: usize, o: usize| -> &Outcome {
        match &live[g].chance {
            Some(ChanceNode::Pending(kids)) => &kids[o],
            _ => unreachable!("rows are pending outcomes"),
        }
    };
    let outs: Vec<Option<ActOutput>> = rows_of
        .iter()
        .enumerate()
        .map(|(k, rows)| {
            if rows.is_empty() {
                return None;
            }
            let mut batch = ActBatch::default();
            let mut acting = Vec::with_capacity(rows.len());
            for &(g, o) in rows {
                let k = kid(g, o);
                push_row(&mut batch, k.state.as_ref(), k.player, info_size, &k.legal);
                acting.push(k.player);
            }
            Some(evaluate_with_table(nets, k, &batch, &acting, heads[k]))
        })
        .collect();
    let row = |k: usize, g: usize, o: usize| -> usize {
        rows_of[k]
            .binary_search(&(g, o))
            .expect("network evaluated this outcome")
    };
    for (g, l) in live.iter_mut().enumerate() {
        let (Some(ChanceNode::Pending(kids)), Some(c)) = (&l.chance, l.roles.critic) else {
            continue;
        };
        let (opp, lp) = (l.roles.opp, l.traj.learning_player);
        let mut value = 0.0f64;
        for (o, kid) in kids.iter().enumerate() {
            let po = outs[opp].as_ref().expect("evaluated");
            let r = row(opp, g, o);
            let pi = normalized_relu(
                &po.mean_regret[r * num_actions..(r + 1) * num_actions],
                &kid.legal,
            );
            let co = outs[c].as_ref().expect("evaluated");
            let q = q_of(co, row(c, g, o), num_actions, lp);
            value += kid.prob * f64::from(state_value(&pi, q));
        }
        l.chance = Some(ChanceNode::Value(value as f32));
    }
}

/// One decision of a learning episode as [`corrected_advantages`] needs it.
#[derive(Clone, Debug)]
pub struct CvStep {
    /// Index of the decision in the trajectory's steps.
    pub step: usize,
    /// Whether the learning player acted.
    pub learner: bool,
    /// The past critic's `q_j(h, ·)` for the learning player's utility (0 at illegal actions).
    pub q: Vec<f32>,
    /// `π^j` at this decision (0 at illegal actions).
    pub pi: Vec<f32>,
    /// The legal actions (advantages at the others are 0).
    pub legal: Vec<bool>,
    /// The action played and the probability the behaviour policy gave it.
    pub action: usize,
    pub behaviour: f32,
    /// With a chance baseline (`armac.chance_baseline`), when a chance node came between the
    /// previous decision and this one: `Σ_o p(o) v(h_o)` over its outcomes `o`, where
    /// `v(h_o) = Σ_a π^j(a) q(h_o, a)` at the decision each outcome leads to (this decision's
    /// `v` for the outcome played).
    pub chance_value: Option<f32>,
}

/// Baseline-corrected advantages of one episode, walking its decisions backwards from the
/// learning player's (scaled) return `ret`: at a decision with sampled action `a*`,
/// `ũ(h, a) = q(h, a) + 1[a = a*] (ũ(h a*) − q(h, a*)) / ξ(a*)` and
/// `ũ(h) = Σ_a π(a) ũ(h, a)`. Chance passes `ũ` through, or with a chance value
/// ([`CvStep::chance_value`]) returns `Σ_o p(o) v(h_o) + ũ(h_{o*}) − v(h_{o*})`, which is
/// corrected in the same way (the sampled outcome has its true probability, so no weight): its
/// mean is the chance node's value and the luck of the draw cancels as far as `v` tracks it.
/// Given the history, `ũ(h, a)` is an
/// unbiased estimate of `q_π(h, a)` for any `q` (the baselines paper's Theorem 1: each
/// correction has mean zero and the terminal values are exact), so `ũ(h, ·) − ũ(h)` at the learning player's
/// decisions is an unbiased estimate of `π`'s advantages there. Returns those targets as
/// `(step index, advantages)`.
///
/// The importance weights `1 / ξ` compound along the episode, so a rare sample can be far
/// outside what any value can be. `range` is the learning player's utility range (in the
/// stored units): each `ũ(h)` passed upwards is clipped to it and each advantage to
/// `±(range[1] − range[0])`, the bounds of every true value and advantage. Clipping moves a
/// sample towards the truth, never away from it, at the price of a small bias in the tails.
pub fn corrected_advantages(steps: &[CvStep], ret: f32, range: [f32; 2]) -> Vec<(usize, Vec<f32>)> {
    let width = range[1] - range[0];
    let mut u = ret;
    let mut out = Vec::new();
    for c in steps.iter().rev() {
        let v = state_value(&c.pi, &c.q);
        let corr = (u - c.q[c.action]) / c.behaviour;
        let uh = v + c.pi[c.action] * corr;
        if c.learner {
            let adv =
                c.q.iter()
                    .enumerate()
                    .zip(&c.legal)
                    .map(|((a, &q), &ok)| match (ok, a == c.action) {
                        (false, _) => 0.0,
                        (true, true) => (q + corr - uh).clamp(-width, width),
                        (true, false) => (q - uh).clamp(-width, width),
                    })
                    .collect();
            out.push((c.step, adv));
        }
        u = uh.clamp(range[0], range[1]);
        if let Some(ev) = c.chance_value {
            u = (ev + u - v).clamp(range[0], range[1]);
        }
    }
    out
}

/// The distinct networks of a group, each with the table that replaces its mean-regret head
/// (the `tabular_w` ablation; a network plays one epoch's `π^j`, so at most one table).
type Nets = Vec<(Arc<ArmacPolicyNet>, Option<Arc<PolicyTable>>)>;

/// Index of `net` in `nets`, appending it if new; `table` is recorded when given.
fn slot(nets: &mut Nets, net: &Arc<ArmacPolicyNet>, table: Option<&Arc<PolicyTable>>) -> usize {
    let k = match nets.iter().position(|n| Arc::ptr_eq(&n.0, net)) {
        Some(k) => k,
        None => {
            nets.push((net.clone(), None));
            nets.len() - 1
        }
    };
    if let Some(t) = table {
        nets[k].1 = Some(t.clone());
    }
    k
}

/// Evaluates the outputs `heads` of `batch` with network `k` of `nets` (the other fields come
/// back empty), its table (if any) giving the mean-regret rows; `players[r]` acts at row `r`.
fn evaluate_with_table(
    nets: &Nets,
    k: usize,
    batch: &ActBatch,
    players: &[usize],
    heads: Heads,
) -> ActOutput {
    let (net, table) = &nets[k];
    // A table replaces the mean-regret head, which then need not run.
    let from_net = Heads {
        mean_regret: heads.mean_regret && table.is_none(),
        ..heads
    };
    let mut out = net
        .evaluate_heads(batch, from_net)
        .expect("actor batches match the network");
    if let (Some(t), true) = (table, heads.mean_regret) {
        out.mean_regret = vec![0.0; out.rows * out.num_actions];
        t.overlay(&mut out, &batch.own, players);
    }
    out
}

/// The networks of one episode (or of a whole group with [`PastDraw::Group`]).
fn draw_roles(
    snaps: &Snapshots,
    draw: PastDraw,
    behaviour: Behaviour,
    evaluation: bool,
    candidates: &[Candidate],
    nets: &mut Nets,
    rng: &mut SplitMix64,
) -> Roles {
    if evaluation {
        let latest = slot(nets, &snaps.latest, snaps.latest_table.as_ref());
        return Roles {
            opp: latest,
            beh: latest,
            critic: None,
            exact: None,
            candidate: candidates[rng.below(candidates.len())],
        };
    }
    // Learning episodes: past epoch j for the opponent and the advantages. Without a past
    // epoch (epoch 0) the opponent plays π^t and no regret or policy targets are stored.
    let past = if draw == PastDraw::Latest {
        snaps.previous.clone()
    } else {
        (!snaps.past.is_empty()).then(|| snaps.past[rng.below(snaps.past.len())].clone())
    };
    let beh = if snaps.past.is_empty() || rng.next_f64() < 0.5 {
        (snaps.latest.clone(), snaps.latest_table.clone())
    } else {
        let p = &snaps.past[rng.below(snaps.past.len())];
        (p.policy.clone(), p.table.clone())
    };
    let candidate = if behaviour == Behaviour::Uniform && past.is_some() {
        Candidate::Uniform
    } else if rng.next_f64() < 0.5 {
        snaps.best
    } else {
        candidates[rng.below(candidates.len())]
    };
    let opp = match &past {
        Some(p) => slot(nets, &p.policy, p.table.as_ref()),
        None => slot(nets, &snaps.latest, snaps.latest_table.as_ref()),
    };
    Roles {
        opp,
        beh: slot(nets, &beh.0, beh.1.as_ref()),
        critic: past.as_ref().map(|p| slot(nets, &p.critic, None)),
        exact: past.as_ref().and_then(|p| p.exact.clone()),
        candidate,
    }
}

/// Which of the game's actions `state` allows.
fn legal_mask(state: &dyn State, num_actions: usize) -> Vec<bool> {
    let mut mask = vec![false; num_actions];
    for a in state.legal_actions() {
        mask[a] = true;
    }
    mask
}

/// One batched forward pass per network over the shadows of the games at this decision: the
/// opponent's `π^j` where the opponent acts, the past critic where the learning player acts.
/// Per game, the output holding its shadows' rows and the first of them.
fn evaluate_shadows(
    live: &[Live],
    players: &[usize],
    nets: &Nets,
    num_actions: usize,
    info_size: usize,
) -> Vec<Option<(Arc<ActOutput>, usize)>> {
    if live.iter().all(|l| l.shadows.is_none()) {
        return vec![None; live.len()];
    }
    let mut batches: Vec<(ActBatch, Vec<usize>)> = (0..nets.len())
        .map(|_| (ActBatch::default(), Vec::new()))
        .collect();
    // The acting player at each row of each network's batch, and what each network computes.
    let mut actors: Vec<Vec<usize>> = vec![Vec::new(); nets.len()];
    let mut heads = vec![Heads::NONE; nets.len()];
    let mut first = vec![None; live.len()];
    for (g, l) in live.iter().enumerate() {
        let Some(sh) = &l.shadows else { continue };
        let (net, needs) = if players[g] == l.traj.learning_player {
            let critic = l.roles.critic.expect("shadows only in learning episodes");
            (critic, Heads::CRITIC)
        } else {
            (l.roles.opp, Heads::MEAN_REGRET)
        };
        heads[net] = heads[net].union(needs);
        let (batch, games) = &mut batches[net];
        first[g] = Some((net, games.len()));
        for x in sh {
            let legal = legal_mask(x.state.as_ref(), num_actions);
            push_row(batch, x.state.as_ref(), players[g], info_size, &legal);
            games.push(g);
            actors[net].push(players[g]);
        }
    }
    let outs: Vec<Option<Arc<ActOutput>>> = batches
        .iter()
        .enumerate()
        .map(|(k, (b, games))| {
            (!games.is_empty())
                .then(|| Arc::new(evaluate_with_table(nets, k, b, &actors[k], heads[k])))
        })
        .collect();
    first
        .into_iter()
        .map(|f| f.map(|(net, row)| (outs[net].clone().expect("evaluated"), row)))
        .collect()
}

/// Plays one lock-step group of episodes and returns them with, for evaluation groups, the
/// candidate and its summed return.
pub fn play_group(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    play_group_with(game, snaps, settings, candidates, rng, false)
}

/// [`play_group`] with every network computing all of its outputs (critic and three heads)
/// on the rows it evaluates at a decision, where [`play_group`] computes only the ones its
/// games read. The same episodes, at more cost: the reference that tests and
/// `armac-bench actor` compare [`play_group`] with.
pub fn play_group_all_heads(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    play_group_with(game, snaps, settings, candidates, rng, true)
}

fn play_group_with(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
    all_heads: bool,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    let num_actions = game.num_distinct_actions();
    // Recurrent nets read per-step observation tensors, feed-forward ones information states.
    let recurrent = snaps.latest.config().recurrent;
    debug_assert!(
        !recurrent || snaps.latest_table.is_none(),
        "tables replace feed-forward heads only"
    );
    let info_size = if recurrent {
        game.observation_tensor_size()
    } else {
        game.information_state_tensor_size()
    };
    let evaluation = rng.next_f64() < settings.eval_fraction;
    // The distinct networks of the group, and each episode's use of them.
    let mut nets: Nets = Vec::new();
    let group_roles = (evaluation || settings.past_draw == PastDraw::Group).then(|| {
        draw_roles(
            snaps,
            settings.past_draw,
            settings.behaviour,
            evaluation,
            candidates,
            &mut nets,
            rng,
        )
    });
    let mut live: Vec<Live> = (0..settings.games_per_group)
        .map(|g| {
            let roles = group_roles.clone().unwrap_or_else(|| {
                draw_roles(
                    snaps,
                    settings.past_draw,
                    settings.behaviour,
                    evaluation,
                    candidates,
                    &mut nets,
                    rng,
                )
            });
            let state = game.new_initial_state();
            let shadows = (settings.advantage_target.uses_infoset()
                && !recurrent
                && roles.critic.is_some()
                && roles.exact.is_none())
            .then(|| {
                vec![Shadow {
                    state: state.clone_box(),
                    weight: 1.0,
                }]
            });
            let corrected = (settings.advantage_target.is_corrected()
                && roles.critic.is_some()
                && roles.exact.is_none())
            .then(Vec::new);
            Live {
                state,
                shadows,
                corrected,
                offsets: Vec::new(),
                traj: Trajectory {
                    epoch: snaps.epoch,
                    learning_player: g % 2,
                    learning: roles.critic.is_some(),
                    steps: Vec::new(),
                    returns: [0.0; 2],
                },
                roles,
                rnn: Vec::new(),
                reach: 1.0,
                chance: None,
            }
        })
        .collect();
    if recurrent {
        let zero: Vec<[RecurrentState; 2]> = nets
            .iter()
            .map(|n| n.0.initial_state(1).expect("recurrent net"))
            .collect();
        for l in &mut live {
            let r = &l.roles;
            for k in [Some(r.opp), Some(r.beh), r.critic].into_iter().flatten() {
                if !l.rnn.iter().any(|(j, _)| *j == k) {
                    l.rnn.push((k, zero[k].clone()));
                }
            }
        }
    }
    let group_candidate = group_roles.map(|r| r.candidate);
    let mut done = Vec::with_capacity(live.len());
    while !live.is_empty() {
        // Chance moves and terminals.
        let mut k = 0;
        while k < live.len() {
            let l = &mut live[k];
            match l.state.turn() {
                Turn::Chance => {
                    if settings.chance_baseline
                        && !recurrent
                        && l.corrected.as_ref().is_some_and(|cv| !cv.is_empty())
                    {
                        l.chance =
                            chance_children(l.state.as_ref(), num_actions).map(ChanceNode::Pending);
                    }
                    let outcomes = l.state.chance_outcomes();
                    let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                    let a = outcomes[rng.weighted(&w)].0;
                    l.state.apply_action(a);
                    if let Some(sh) = l.shadows.take() {
                        let lp = l.traj.learning_player;
                        l.shadows = shadows_after_chance(sh, l.state.as_ref(), lp, info_size);
                    }
                }
                Turn::Terminal => {
                    let mut l = live.swap_remove(k);
                    let r = l.state.returns();
                    let k = settings.reward_scale;
                    l.traj.returns = [(r[0] / k) as f32, (r[1] / k) as f32];
                    if let Some(cv) = l.corrected.take() {
                        let ret = l.traj.returns[l.traj.learning_player];
                        let range = [game.min_utility() / k, game.max_utility() / k];
                        let range = range.map(|x| x as f32);
                        let width = range[1] - range[0];
                        for (i, mut adv) in corrected_advantages(&cv, ret, range) {
                            if let Some((_, off)) = l.offsets.iter().find(|(j, _)| *j == i) {
                                for (a, o) in adv.iter_mut().zip(off) {
                                    *a = (*a + o).clamp(-width, width);
                                }
                            }
                            l.traj.steps[i].advantage = Some(adv);
                        }
                    }
                    done.push(l.traj);
                }
                Turn::Player(_) => k += 1,
            }
        }
        evaluate_chance(&mut live, &nets, num_actions, info_size);
        if live.iter().any(|l| l.state.is_chance()) || live.is_empty() {
            continue;
        }
        // Every live game is at a decision: each network evaluates, in one batch, the games
        // that need it (recurrent nets: every game that carries its state).
        let n = live.len();
        let mut infos = Vec::with_capacity(n);
        let mut legals = Vec::with_capacity(n);
        let mut players = Vec::with_capacity(n);
        for l in &live {
            let p = match l.state.turn() {
                Turn::Player(p) => p,
                _ => unreachable!("only decisions remain"),
            };
            let mut i0 = vec![0.0; info_size];
            let mut i1 = vec![0.0; info_size];
            if recurrent {
                l.state.observation_tensor(0, &mut i0);
                l.state.observation_tensor(1, &mut i1);
            } else {
                l.state.information_state_tensor(0, &mut i0);
                l.state.information_state_tensor(1, &mut i1);
            }
            players.push(p);
            infos.push([i0, i1]);
            legals.push(legal_mask(l.state.as_ref(), num_actions));
        }
        // Rows of each network: (game, position in that network's batch), and the outputs each
        // network computes for its rows (the union of what its games read below).
        let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); nets.len()];
        let mut heads_of = vec![Heads::NONE; nets.len()];
        for (g, l) in live.iter().enumerate() {
            let r = &l.roles;
            let learner_turn = players[g] == l.traj.learning_player;
            // The critic's values (advantages, corrections) unless exact values replace them.
            let critic = r.critic.filter(|_| r.exact.is_none());
            let mut needed: Vec<(usize, Heads)> = if learner_turn {
                // The behaviour candidate, and `π^j` with the critic for the advantages.
                let mut v = vec![(r.beh, candidate_heads(r.candidate))];
                if let Some(c) = critic {
                    v.extend([(r.opp, Heads::MEAN_REGRET), (c, Heads::CRITIC)]);
                }
                v
            } else if evaluation {
                vec![(r.opp, Heads::AVG_POLICY)]
            } else {
                // `π^j`, and the past critic for the correction at the opponent's decisions.
                let mut v = vec![(r.opp, Heads::MEAN_REGRET)];
                if let (Some(c), true) = (critic, l.corrected.is_some()) {
                    v.push((c, Heads::CRITIC));
                }
                v
            };
            if recurrent {
                // Every network that carries this game's LSTM states advances them, whether
                // or not an output of it is read.
                needed.extend(l.rnn.iter().map(|(k, _)| (*k, Heads::NONE)));
            }
            for (k, h) in needed {
                if !h.any() && !recurrent && !all_heads {
                    continue;
                }
                heads_of[k] = heads_of[k].union(h);
                if rows_of[k].last() != Some(&g) {
                    rows_of[k].push(g);
                }
            }
        }
        let mut outs: Vec<Option<ActOutput>> = Vec::with_capacity(nets.len());
        for (k, (net, _)) in nets.iter().enumerate() {
            let rows = &rows_of[k];
            if rows.is_empty() {
                outs.push(None);
                continue;
            }
            let heads = if all_heads { Heads::ALL } else { heads_of[k] };
            let legal: Vec<f32> = rows
                .iter()
                .flat_map(|&g| legals[g].iter().map(|&m| m as u8 as f32))
                .collect();
            let both = |p: usize| -> Vec<f32> {
                rows.iter()
                    .flat_map(|&g| infos[g][p].iter().copied())
                    .collect()
            };
            if recurrent {
                // Every network advances both seats' LSTMs of its games by this decision's
                // observations (chance outcomes since the last decision are part of them).
                let step = StepBatch {
                    rows: rows.len(),
                    obs0: both(0),
                    obs1: both(1),
                    acting_player: rows.iter().map(|&g| players[g]).collect(),
                    legal,
                };
                let state_of = |g: usize| &live[g].rnn.iter().find(|(j, _)| *j == k).unwrap().1;
                let st: [RecurrentState; 2] = std::array::from_fn(|p| {
                    RecurrentState::stack(rows.iter().map(|&g| &state_of(g)[p]))
                });
                let (out, next) = net
                    .step_heads(&step, &st, heads)
                    .expect("recurrent step batch");
                for (i, &g) in rows.iter().enumerate() {
                    let e = live[g].rnn.iter_mut().find(|(j, _)| *j == k).unwrap();
                    e.1 = [next[0].row(i), next[1].row(i)];
                }
                outs.push(Some(out));
            } else {
                let batch = ActBatch {
                    own: rows
                        .iter()
                        .flat_map(|&g| infos[g][players[g]].iter().copied())
                        .collect(),
                    both0: both(0),
                    both1: both(1),
                    legal,
                };
                let acting: Vec<usize> = rows.iter().map(|&g| players[g]).collect();
                outs.push(Some(evaluate_with_table(&nets, k, &batch, &acting, heads)));
            }
        }
        // Output row of network `k` for game `g`.
        let at = |k: usize, g: usize| -> (&ActOutput, usize) {
            let i = rows_of[k]
                .binary_search(&g)
                .expect("network evaluated this game");
            (outs[k].as_ref().expect("network evaluated"), i)
        };
        let shadow_out = evaluate_shadows(&live, &players, &nets, num_actions, info_size);
        for (g, (l, (info, legal))) in live
            .iter_mut()
            .zip(infos.into_iter().zip(legals))
            .enumerate()
        {
            let p = players[g];
            let roles = &l.roles;
            let learner_turn = p == l.traj.learning_player;
            let correcting = l.corrected.is_some() && roles.critic.is_some();
            // `π^j` here, computed once for every use below: the opponent's sampling policy,
            // the critic's state value at the learner's turns and the correction.
            let needs_pij = if learner_turn {
                roles.exact.is_none() && roles.critic.is_some()
            } else {
                !evaluation || correcting
            };
            let pij = needs_pij.then(|| {
                let (o, or) = at(roles.opp, g);
                normalized_relu(
                    &o.mean_regret[or * num_actions..(or + 1) * num_actions],
                    &legal,
                )
            });
            let (probs, advantage, played) = if learner_turn {
                let mu = if candidate_heads(roles.candidate).any() {
                    let (beh, br) = at(roles.beh, g);
                    candidate_policy(roles.candidate, beh, br, &legal)
                } else {
                    normalized_relu(&vec![0.0; num_actions], &legal)
                };
                let exact = roles.exact.as_ref().map(|e| {
                    e.advantages(l.state.history(), p, num_actions)
                        .expect("the exact tree holds every history the game reaches")
                });
                // The past critic's advantages r = q_j(h, ·) − v_j(h), v_j(h) = Σ_a π^j(s, a)
                // q_j(h, a): at the sampled history, or with `over_shadows` (where the game
                // tracks them) Σ_h' π_{-i}(h') r(h') / Σ_h' π_{-i}(h') over the information
                // state's histories.
                let critic_advantage = |c: usize, over_shadows: bool| -> Vec<f32> {
                    let pij = pij.as_ref().expect("π^j at a critic's decision");
                    let advantage = |q: &[f32]| -> Vec<f32> {
                        let v = state_value(pij, q);
                        q.iter()
                            .zip(&legal)
                            .map(|(x, &ok)| if ok { x - v } else { 0.0 })
                            .collect()
                    };
                    match (over_shadows, &l.shadows, &shadow_out[g]) {
                        (true, Some(sh), Some((out, first))) => {
                            let total: f64 = sh.iter().map(|x| x.weight).sum();
                            let mut mean = vec![0.0f64; num_actions];
                            for (k, x) in sh.iter().enumerate() {
                                let w = x.weight / total;
                                let q = q_of(out, first + k, num_actions, p);
                                for (m, a) in mean.iter_mut().zip(advantage(q)) {
                                    *m += w * f64::from(a);
                                }
                            }
                            mean.into_iter().map(|m| m as f32).collect()
                        }
                        _ => {
                            let (co, cr) = at(c, g);
                            advantage(q_of(co, cr, num_actions, p))
                        }
                    }
                };
                // With corrected targets the advantage is set when the episode ends.
                let adv = exact.or_else(|| {
                    roles
                        .critic
                        .filter(|_| !correcting)
                        .map(|c| critic_advantage(c, true))
                });
                if let (true, Some(c), Some(_)) = (correcting, roles.critic, &l.shadows) {
                    // `CorrectedInfoset`: the control variate's mean moves from the sampled
                    // history to the information state.
                    let mean = critic_advantage(c, true);
                    let here = critic_advantage(c, false);
                    let off = mean.iter().zip(&here).map(|(m, h)| m - h).collect();
                    l.offsets.push((l.traj.steps.len(), off));
                }
                (mu, adv, None)
            } else if evaluation {
                let (o, or) = at(roles.opp, g);
                let r = or * num_actions..(or + 1) * num_actions;
                (o.avg_policy[r].to_vec(), None, None)
            } else {
                let pij = pij.clone().expect("π^j at the opponent's decision");
                let learning = l.traj.learning;
                (pij.clone(), None, learning.then_some(pij))
            };
            let action = sample(&probs, rng);
            debug_assert!(legal[action], "sampled an illegal action");
            if let (Some(cv), Some(c)) = (&mut l.corrected, roles.critic) {
                let lp = l.traj.learning_player;
                let (co, cr) = at(c, g);
                cv.push(CvStep {
                    step: l.traj.steps.len(),
                    learner: learner_turn,
                    q: q_of(co, cr, num_actions, lp).to_vec(),
                    pi: pij.expect("π^j at a corrected decision"),
                    legal: legal.clone(),
                    action,
                    behaviour: probs[action],
                    chance_value: match l.chance.take() {
                        Some(ChanceNode::Value(v)) => Some(v),
                        _ => None,
                    },
                });
            }
            l.traj.steps.push(Step {
                player: p,
                info,
                legal,
                action,
                advantage,
                played_policy: played,
                reach: l.reach as f32,
            });
            if learner_turn {
                l.reach *= f64::from(probs[action]);
                if let Some(sh) = &mut l.shadows {
                    for x in sh.iter_mut() {
                        x.state.apply_action(action);
                    }
                }
            } else if let (Some(sh), Some((out, first))) = (l.shadows.take(), &shadow_out[g]) {
                let pis: Vec<Vec<f32>> = sh
                    .iter()
                    .enumerate()
                    .map(|(k, x)| {
                        let r = (first + k) * num_actions..(first + k + 1) * num_actions;
                        normalized_relu(
                            &out.mean_regret[r],
                            &legal_mask(x.state.as_ref(), num_actions),
                        )
                    })
                    .collect();
                let lp = l.traj.learning_player;
                l.shadows = shadows_after_action(sh, &pis, l.state.as_ref(), action, lp, info_size);
            }
            l.state.apply_action(action);
        }
    }
    let eval = evaluation.then(|| {
        let total: f64 = done
            .iter()
            .map(|t| t.returns[t.learning_player] as f64)
            .sum();
        (
            group_candidate.expect("evaluation groups share one draw"),
            total,
        )
    });
    (done, eval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;
    use crate::nn::armac::ArmacNetConfig;

    /// Epoch 3's snapshots with `past` as the only (and previous) past epoch, the average
    /// policy as the best candidate.
    fn one_past_epoch(past: PastEpoch) -> Snapshots {
        Snapshots {
            epoch: 3,
            latest: kuhn_ff(10),
            latest_table: None,
            past: vec![past.clone()],
            previous: Some(past),
            best: Candidate::Average,
        }
    }

    /// 64 learning episodes per group against the previous epoch, returns halved.
    fn latest_settings(target: AdvantageTarget, behaviour: Behaviour) -> ActorSettings {
        ActorSettings {
            games_per_group: 64,
            eval_fraction: 0.0,
            reward_scale: 2.0,
            past_draw: PastDraw::Latest,
            advantage_target: target,
            behaviour,
            chance_baseline: false,
        }
    }

    fn kuhn_ff(seed: u64) -> Arc<ArmacPolicyNet> {
        small_ff("kuhn_poker", seed)
    }

    /// The past networks whose policy is the one an opponent decision played.
    fn sources(step: &Step, nets: &[Arc<ArmacPolicyNet>]) -> std::collections::BTreeSet<usize> {
        let played = step.played_policy.as_ref().unwrap();
        let batch = ActBatch {
            own: step.info[step.player].clone(),
            both0: step.info[0].clone(),
            both1: step.info[1].clone(),
            legal: step.legal.iter().map(|&l| l as u8 as f32).collect(),
        };
        (0..nets.len())
            .filter(|&k| {
                let out = nets[k].evaluate(&batch);
                let pi = normalized_relu(&out.mean_regret, &step.legal);
                pi.iter().zip(played).all(|(a, b)| (a - b).abs() < 1e-6)
            })
            .collect()
    }

    /// The shadows at each learning decision are exactly the histories of the learning
    /// player's infoset, weighted like `π_{-i}(h')` (chance and the opponent) in the game tree:
    /// poker deals (Leduc), dice (Liar's Dice) and hidden opponent actions (II-Goofspiel).
    #[test]
    fn shadows_are_the_infosets_histories_with_opponent_reach() {
        use crate::tree::history::{HistoryKind, HistoryTree};
        use crate::tree::{PublicTree, uniform_tree_policy};
        for name in [
            "leduc_poker",
            "liars_dice",
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
        ] {
            let game = load_game(name).unwrap();
            let tree = PublicTree::build(game.as_ref()).unwrap();
            let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
            let uniform = uniform_tree_policy(&tree);
            let reach = [0, 1].map(|p| ht.opponent_reach(&tree, &uniform, p));
            let id = |st: &dyn State| -> usize {
                let mut h = 0;
                for &a in st.history() {
                    h = ht.children(h).find(|&c| ht.action[c] == a).unwrap();
                }
                h
            };
            let size = game.information_state_tensor_size();
            let na = game.num_distinct_actions();
            let mut rng = SplitMix64::new(7);
            let mut checked = 0;
            for episode in 0..200 {
                let lp = episode % 2;
                let mut st = game.new_initial_state();
                let mut sh = vec![Shadow {
                    state: st.clone_box(),
                    weight: 1.0,
                }];
                loop {
                    match st.turn() {
                        Turn::Terminal => break,
                        Turn::Chance => {
                            let o = st.chance_outcomes();
                            let w: Vec<f64> = o.iter().map(|x| x.1).collect();
                            st.apply_action(o[rng.weighted(&w)].0);
                            sh = shadows_after_chance(sh, st.as_ref(), lp, size).unwrap();
                        }
                        Turn::Player(p) => {
                            let legal = st.legal_actions();
                            let a = legal[rng.below(legal.len())];
                            if p == lp {
                                let h = id(st.as_ref());
                                let want: Vec<usize> = (0..ht.len())
                                    .filter(|&x| {
                                        ht.kind[x] == HistoryKind::Decision(lp)
                                            && ht.infoset[x] == ht.infoset[h]
                                    })
                                    .collect();
                                let mut got: Vec<(usize, f64)> = sh
                                    .iter()
                                    .map(|x| (id(x.state.as_ref()), x.weight))
                                    .collect();
                                got.sort_by_key(|x| x.0);
                                let ids: Vec<usize> = got.iter().map(|x| x.0).collect();
                                assert_eq!(ids, want, "{name}: histories of the infoset");
                                let (tw, tr): (f64, f64) = (
                                    got.iter().map(|x| x.1).sum(),
                                    want.iter().map(|&x| reach[lp][x]).sum(),
                                );
                                for &(x, w) in &got {
                                    let r = reach[lp][x] / tr;
                                    assert!((w / tw - r).abs() < 1e-9, "{name}: {w} vs {r}");
                                }
                                checked += 1;
                                for x in &mut sh {
                                    x.state.apply_action(a);
                                }
                            } else {
                                let probs: Vec<Vec<f32>> = sh
                                    .iter()
                                    .map(|x| {
                                        let m = legal_mask(x.state.as_ref(), na);
                                        normalized_relu(&vec![0.0; na], &m)
                                    })
                                    .collect();
                                sh = shadows_after_action(sh, &probs, st.as_ref(), a, lp, size)
                                    .unwrap();
                            }
                            st.apply_action(a);
                        }
                    }
                }
            }
            assert!(checked > 200, "{name}: {checked} decisions checked");
        }
    }

    /// `PastDraw::Episode` mixes past epochs within one lock-step group (Algorithm 1 draws `j`
    /// per episode); `PastDraw::Group` plays one past epoch per group.
    #[test]
    fn past_epochs_are_drawn_per_episode_or_per_group() {
        let game = load_game("kuhn_poker").unwrap();
        let policies = [kuhn_ff(101), kuhn_ff(202), kuhn_ff(303)];
        let snaps = Snapshots {
            epoch: 3,
            latest: kuhn_ff(10),
            latest_table: None,
            past: policies
                .iter()
                .map(|p| PastEpoch {
                    policy: p.clone(),
                    critic: kuhn_ff(20),
                    exact: None,
                    table: None,
                })
                .collect(),
            previous: Some(PastEpoch {
                policy: policies[1].clone(),
                critic: kuhn_ff(20),
                exact: None,
                table: None,
            }),
            best: Candidate::Uniform,
        };
        for (draw, want_distinct) in [
            (PastDraw::Episode, 3),
            (PastDraw::Group, 1),
            (PastDraw::Latest, 1),
        ] {
            let settings = ActorSettings {
                games_per_group: 48,
                eval_fraction: 0.0,
                reward_scale: 2.0,
                past_draw: draw,
                advantage_target: Default::default(),
                behaviour: Default::default(),
                chance_baseline: false,
            };
            let mut rng = SplitMix64::new(5);
            let (trajs, eval) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
            assert!(eval.is_none());
            assert_eq!(trajs.len(), 48);
            let mut seen = std::collections::BTreeSet::new();
            for t in &trajs {
                assert!(t.learning);
                // The networks consistent with every opponent decision of the episode.
                let mut fits: std::collections::BTreeSet<usize> = (0..policies.len()).collect();
                for s in t.steps.iter().filter(|s| s.player != t.learning_player) {
                    let here = sources(s, &policies);
                    fits = fits.intersection(&here).copied().collect();
                }
                assert!(!fits.is_empty(), "one past epoch per episode");
                if fits.len() == 1 {
                    seen.extend(fits);
                }
                for s in t.steps.iter().filter(|s| s.player == t.learning_player) {
                    assert!(s.advantage.is_some() && s.played_policy.is_none());
                }
                // The learning player's behaviour reach starts at 1 and changes only after
                // its own decisions, by the probability of the action it took (positive).
                let mut reach = 1.0f32;
                for (k, s) in t.steps.iter().enumerate() {
                    assert_eq!(s.reach, reach, "step {k}");
                    if s.player == t.learning_player
                        && let Some(next) = t.steps.get(k + 1)
                    {
                        assert!(next.reach > 0.0 && next.reach <= reach);
                        reach = next.reach;
                    }
                }
            }
            assert_eq!(seen.len(), want_distinct, "{draw:?}: {seen:?}");
            if draw == PastDraw::Latest {
                assert!(seen.contains(&1), "the previous epoch plays: {seen:?}");
            }
        }
    }

    /// A Kuhn policy passing with probability `pass[p]` at every infoset of player `p`, as a
    /// [`PolicyTable`] keyed by information-state tensors and as a [`TreePolicy`] of the
    /// game's public tree.
    fn kuhn_table(
        game: &dyn crate::game::Game,
        pass: [f32; 2],
    ) -> (PolicyTable, crate::tree::TreePolicy) {
        let isz = game.information_state_tensor_size();
        let tree = crate::tree::PublicTree::build(game).unwrap();
        let mut table = PolicyTable::default();
        let mut tp: crate::tree::TreePolicy = [Vec::new(), Vec::new()];
        for p in 0..2 {
            let inf = &tree.infosets[p];
            tp[p] = vec![0.0; inf.offset[inf.len()] as usize];
            for i in 0..inf.len() {
                let st = crate::game::replay(game, &inf.history[i]).unwrap();
                let mut own = vec![0.0; isz];
                st.information_state_tensor(p, &mut own);
                table.insert(p, &own, vec![pass[p], 1.0 - pass[p]]);
                let o = inf.offset[i] as usize;
                tp[p][o] = f64::from(pass[p]);
                tp[p][o + 1] = 1.0 - f64::from(pass[p]);
            }
        }
        (table, tp)
    }

    /// The `tabular_w` ablation: with a table attached, the opponent plays the previous
    /// epoch's table (not its network's head), the stored average-policy targets are that
    /// table's policy, and the advantages' baseline `v_j` weighs the past critic's `q` by it.
    #[test]
    fn tables_replace_the_mean_regret_head_of_their_epoch() {
        let game = load_game("kuhn_poker").unwrap();
        let na = game.num_distinct_actions();
        // A table over every Kuhn infoset: pass with 0.2 or 0.9 depending on the player.
        let (table, _) = kuhn_table(game.as_ref(), [0.2, 0.9]);
        assert_eq!(table.len(), 12);
        let table = Arc::new(table);
        let critic = kuhn_ff(20);
        let past = PastEpoch {
            policy: kuhn_ff(101),
            critic: critic.clone(),
            exact: None,
            table: Some(table.clone()),
        };
        let snaps = one_past_epoch(past);
        let settings = latest_settings(AdvantageTarget::History, Behaviour::Uniform);
        let mut rng = SplitMix64::new(9);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        let (mut opp, mut own) = (0, 0);
        for t in &trajs {
            for s in &t.steps {
                if s.player != t.learning_player {
                    let pass = if s.player == 0 { 0.2 } else { 0.9 };
                    assert_eq!(s.played_policy.as_deref(), Some(&[pass, 1.0 - pass][..]));
                    opp += 1;
                } else {
                    // r = q − Σ_a π^j(a) q(a) with the table's π^j and the past critic's q.
                    let out = critic.evaluate(&ActBatch {
                        own: s.info[s.player].clone(),
                        both0: s.info[0].clone(),
                        both1: s.info[1].clone(),
                        legal: vec![1.0; na],
                    });
                    let q = if s.player == 0 { &out.q0 } else { &out.q1 };
                    let pass = if s.player == 0 { 0.2 } else { 0.9 };
                    let v = pass * q[0] + (1.0 - pass) * q[1];
                    let adv = s.advantage.as_ref().unwrap();
                    for a in 0..na {
                        assert!((adv[a] - (q[a] - v)).abs() < 1e-5, "{adv:?} {q:?}");
                    }
                    own += 1;
                }
            }
        }
        assert!(
            opp > 40 && own > 40,
            "{opp} opponent and {own} own decisions"
        );
    }

    /// `Behaviour::Uniform`: in learning episodes the learning player's reach is the product of
    /// `1 / |legal|` over its decisions (the candidates of the networks give other reaches);
    /// the stored targets stay finite with either advantage target.
    #[test]
    fn uniform_behaviour_plays_uniformly_and_infoset_targets_are_advantages() {
        let game = load_game("kuhn_poker").unwrap();
        let past = PastEpoch {
            policy: kuhn_ff(101),
            critic: kuhn_ff(20),
            exact: None,
            table: None,
        };
        let snaps = one_past_epoch(past);
        for (behaviour, target) in [
            (Behaviour::Uniform, AdvantageTarget::History),
            (Behaviour::Candidates, AdvantageTarget::Infoset),
        ] {
            let settings = latest_settings(target, behaviour);
            let mut rng = SplitMix64::new(3);
            let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
            // Steps whose recorded reach differs from the uniform policy's.
            let mut non_uniform = 0;
            for t in &trajs {
                let mut uniform = 1.0f32;
                for s in &t.steps {
                    non_uniform += usize::from((s.reach - uniform).abs() > 1e-6);
                    if s.player == t.learning_player {
                        let adv = s.advantage.as_ref().expect("learning decision");
                        assert!(adv.iter().all(|x| x.is_finite()), "{adv:?}");
                        uniform /= s.legal.iter().filter(|&&l| l).count() as f32;
                    }
                }
            }
            if behaviour == Behaviour::Uniform {
                assert_eq!(non_uniform, 0, "uniform behaviour");
            } else {
                assert!(non_uniform > 0, "the candidates are not all uniform");
            }
        }
    }

    /// The exact advantages of `π^j` = `tp` (returns divided by `scale`, averaged per
    /// information state with `AdvantageTarget::Infoset`) at every decision history of `game`,
    /// keyed by `key(acting player, player 0's and player 1's information-state tensors)`.
    fn exact_targets(
        game: &dyn crate::game::Game,
        tp: &crate::tree::TreePolicy,
        scale: f64,
        target: AdvantageTarget,
        key: impl Fn(usize, &[f32], &[f32]) -> Vec<u32>,
    ) -> std::collections::HashMap<Vec<u32>, Vec<f32>> {
        use crate::tree::history::{HistoryKind, HistoryTree};
        let (na, isz) = (
            game.num_distinct_actions(),
            game.information_state_tensor_size(),
        );
        let tree = crate::tree::PublicTree::build(game).unwrap();
        let ht = Arc::new(HistoryTree::build(game, &tree).unwrap());
        let exact = ExactValues::new(ht.clone(), &tree, tp, scale, target);
        let mut want = std::collections::HashMap::new();
        for h in 0..ht.len() {
            if let HistoryKind::Decision(p) = ht.kind[h] {
                let acts = ht.actions_to(h);
                let st = crate::game::replay(game, &acts).unwrap();
                let (mut i0, mut i1) = (vec![0.0; isz], vec![0.0; isz]);
                st.information_state_tensor(0, &mut i0);
                st.information_state_tensor(1, &mut i1);
                want.insert(key(p, &i0, &i1), exact.advantages(&acts, p, na).unwrap());
            }
        }
        want
    }

    /// Per history key: count, sums and sums of squares of the stored targets.
    type Moments = std::collections::HashMap<Vec<u32>, (f64, Vec<f64>, Vec<f64>)>;

    /// Adds one stored target to `acc`.
    fn add_target(acc: &mut Moments, key: Vec<u32>, adv: &[f32]) {
        let na = adv.len();
        let e = acc
            .entry(key)
            .or_insert((0.0, vec![0.0; na], vec![0.0; na]));
        e.0 += 1.0;
        for (a, &x) in adv.iter().enumerate() {
            e.1[a] += f64::from(x);
            e.2[a] += f64::from(x).powi(2);
        }
    }

    /// The largest distance, in standard errors, between a mean target and `exact` over the
    /// histories with at least `min_n` targets, and the number of those histories.
    fn worst_deviation(
        acc: &Moments,
        exact: impl Fn(&[u32]) -> Vec<f32>,
        min_n: f64,
    ) -> (f64, usize) {
        let mut worst = 0.0f64;
        let mut judged = 0;
        for (k, (n, sum, sq)) in acc.iter().filter(|(_, e)| e.0 >= min_n) {
            judged += 1;
            let exact = exact(k);
            for (a, x) in exact.iter().enumerate() {
                let mean = sum[a] / n;
                let var = (sq[a] / n - mean * mean).max(0.0);
                let se = (var / n).sqrt() + 1e-4;
                worst = worst.max((mean - f64::from(*x)).abs() / se);
            }
        }
        (worst, judged)
    }

    /// `AdvantageTarget::Corrected`: with a critic far from the truth (random weights), the
    /// stored targets average, at every learning history, to `π^j`'s exact advantages there
    /// (within 4 standard errors), while the critic's own advantages (`History`) do not.
    #[test]
    fn corrected_targets_are_unbiased_whatever_the_critic() {
        let game = load_game("kuhn_poker").unwrap();
        // π^j: a table passing with 0.3 / 0.8 at player 0's / 1's infosets.
        let (table, tp) = kuhn_table(game.as_ref(), [0.3, 0.8]);
        // Decision histories by both players' information-state tensors.
        let key = |_: usize, i0: &[f32], i1: &[f32]| -> Vec<u32> {
            i0.iter().chain(i1).map(|x| x.to_bits()).collect()
        };
        let want = exact_targets(game.as_ref(), &tp, 2.0, AdvantageTarget::History, key);
        let snaps = one_past_epoch(PastEpoch {
            policy: kuhn_ff(101),
            critic: kuhn_ff(20),
            exact: None,
            table: Some(Arc::new(table)),
        });
        // Per target kind: the worst deviation from the exact advantage in standard errors.
        let mut worst = Vec::new();
        for target in [AdvantageTarget::Corrected, AdvantageTarget::History] {
            let settings = latest_settings(target, Behaviour::Uniform);
            let mut rng = SplitMix64::new(17);
            let mut acc = Moments::default();
            for _ in 0..150 {
                let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
                for t in &trajs {
                    for s in t.steps.iter().filter(|s| s.player == t.learning_player) {
                        let adv = s.advantage.as_ref().unwrap();
                        add_target(&mut acc, key(0, &s.info[0], &s.info[1]), adv);
                    }
                }
            }
            assert_eq!(acc.len(), 24, "every learning history of Kuhn is sampled");
            worst.push(worst_deviation(&acc, |k| want[k].clone(), 0.0).0);
        }
        assert!(worst[0] < 4.5, "corrected targets off by {} s.e.", worst[0]);
        assert!(
            worst[1] > 20.0,
            "a random critic is biased: {} s.e.",
            worst[1]
        );
    }

    /// `AdvantageTarget::CorrectedInfoset` on Leduc (the opponent's card is private): with a
    /// random critic, the stored targets average, per information state of the learning
    /// player, to `π^j`'s exact advantages averaged over that state's histories, as the plain
    /// corrected targets do; both are unbiased there, and the two differ sample by sample.
    #[test]
    fn corrected_infoset_targets_are_unbiased_per_information_state() {
        let game = load_game("leduc_poker").unwrap();
        let (table, tp) = mixed_table(game.as_ref());
        // Decision histories by the acting player and its information-state tensor.
        let key = |p: usize, i0: &[f32], i1: &[f32]| -> Vec<u32> {
            let info = if p == 0 { i0 } else { i1 };
            std::iter::once(p as u32)
                .chain(info.iter().map(|x| x.to_bits()))
                .collect()
        };
        let want = exact_targets(game.as_ref(), &tp, 26.0, AdvantageTarget::Infoset, key);
        let snaps = Snapshots {
            epoch: 3,
            latest: small_ff("leduc_poker", 10),
            latest_table: None,
            past: Vec::new(),
            previous: Some(PastEpoch {
                policy: small_ff("leduc_poker", 101),
                critic: small_ff("leduc_poker", 20),
                exact: None,
                table: Some(Arc::new(table)),
            }),
            best: Candidate::Average,
        };
        let mut worst = Vec::new();
        let mut firsts = Vec::new();
        for target in [
            AdvantageTarget::Corrected,
            AdvantageTarget::CorrectedInfoset,
        ] {
            // Returns divided by 26, as the exact values above: the random critic's outputs
            // are then as large as the true values, so a wrong offset would show.
            let settings = ActorSettings {
                reward_scale: 26.0,
                ..latest_settings(target, Behaviour::Uniform)
            };
            let mut rng = SplitMix64::new(23);
            let mut acc = Moments::default();
            let mut first = Vec::new();
            for _ in 0..400 {
                let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
                for t in &trajs {
                    let lp = t.learning_player;
                    for s in t.steps.iter().filter(|s| s.player == lp) {
                        let adv = s.advantage.as_ref().unwrap();
                        first.push(adv.clone());
                        add_target(&mut acc, key(lp, &s.info[0], &s.info[1]), adv);
                    }
                }
            }
            let (w, judged) = worst_deviation(&acc, |k| want[k].clone(), 30.0);
            assert!(
                judged > 100,
                "{target:?}: {judged} information states judged"
            );
            worst.push(w);
            firsts.push(first);
        }
        // The same episodes (targets are computed after the actions are drawn).
        assert_eq!(firsts[0].len(), firsts[1].len());
        assert_ne!(
            firsts[0], firsts[1],
            "the information-state mean changes the targets"
        );
        assert!(worst[0] < 4.5, "corrected targets off by {} s.e.", worst[0]);
        assert!(
            worst[1] < 4.5,
            "corrected_infoset targets off by {} s.e.",
            worst[1]
        );
    }

    /// A feed-forward net for `game` with small random weights.
    fn small_ff(game: &str, seed: u64) -> Arc<ArmacPolicyNet> {
        let game = load_game(game).unwrap();
        let cfg = ArmacNetConfig::new(
            game.information_state_tensor_size(),
            game.num_distinct_actions(),
        )
        .with_encoder_hidden(32)
        .with_head_hidden(32)
        .with_zero_init_heads(false);
        Arc::new(ArmacPolicyNet::init(cfg, seed).unwrap())
    }

    /// A fixed mixed policy at every infoset of `game` (weights `1 + (i + 3k) mod 4` over
    /// the `k`-th legal action of infoset `i`), as a table and as a tree policy.
    fn mixed_table(game: &dyn crate::game::Game) -> (PolicyTable, crate::tree::TreePolicy) {
        let isz = game.information_state_tensor_size();
        let na = game.num_distinct_actions();
        let tree = crate::tree::PublicTree::build(game).unwrap();
        let mut table = PolicyTable::default();
        let mut tp: crate::tree::TreePolicy = [Vec::new(), Vec::new()];
        for (p, tp) in tp.iter_mut().enumerate() {
            let inf = &tree.infosets[p];
            *tp = vec![0.0; inf.offset[inf.len()] as usize];
            for i in 0..inf.len() {
                let st = crate::game::replay(game, &inf.history[i]).unwrap();
                let mut own = vec![0.0; isz];
                st.information_state_tensor(p, &mut own);
                let (o, e) = (inf.offset[i] as usize, inf.offset[i + 1] as usize);
                let w: Vec<f64> = (0..e - o).map(|k| 1.0 + ((i + 3 * k) % 4) as f64).collect();
                let total: f64 = w.iter().sum();
                let mut row = vec![0.0f32; na];
                for (k, x) in w.iter().enumerate() {
                    tp[o + k] = x / total;
                    row[inf.actions[o + k]] = (x / total) as f32;
                }
                table.insert(p, &own, row);
            }
        }
        (table, tp)
    }

    /// `armac.chance_baseline` on Leduc: the same episodes (the baseline draws nothing), the
    /// same targets after the public card and different ones before it in episodes that reach
    /// it, and first-round targets that still average to `π^j`'s exact advantages with a
    /// random critic (within 4.5 standard errors).
    #[test]
    fn chance_baseline_keeps_first_round_targets_unbiased() {
        const SCALE: f64 = 2.0;
        use crate::tree::PublicTree;
        use crate::tree::history::{HistoryKind, HistoryTree};
        let game = load_game("leduc_poker").unwrap();
        let na = game.num_distinct_actions();
        let isz = game.information_state_tensor_size();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let (table, tp) = mixed_table(game.as_ref());
        let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
        let exact = ExactValues::new(ht.clone(), &tree, &tp, SCALE, AdvantageTarget::History);
        let key = |i0: &[f32], i1: &[f32]| -> Vec<u32> {
            i0.iter().chain(i1).map(|x| x.to_bits()).collect()
        };
        // Exact advantages and chance nodes above, per decision history.
        let mut want = std::collections::HashMap::new();
        for h in 0..ht.len() {
            if let HistoryKind::Decision(p) = ht.kind[h] {
                let mut chances = 0;
                let mut a = h;
                while a != 0 {
                    a = ht.parent[a] as usize;
                    chances += usize::from(ht.kind[a] == HistoryKind::Chance);
                }
                let acts = ht.actions_to(h);
                let st = crate::game::replay(game.as_ref(), &acts).unwrap();
                let (mut i0, mut i1) = (vec![0.0; isz], vec![0.0; isz]);
                st.information_state_tensor(0, &mut i0);
                st.information_state_tensor(1, &mut i1);
                let adv = exact.advantages(&acts, p, na).unwrap();
                want.insert(key(&i0, &i1), (adv, chances));
            }
        }
        // Two deal nodes above the first round's decisions, three above the second's.
        assert!(want.values().all(|w| w.1 == 2 || w.1 == 3));
        let past = PastEpoch {
            policy: small_ff("leduc_poker", 101),
            critic: small_ff("leduc_poker", 20),
            exact: None,
            table: Some(Arc::new(table)),
        };
        let snaps = Snapshots {
            epoch: 3,
            latest: small_ff("leduc_poker", 10),
            latest_table: None,
            past: vec![past.clone()],
            previous: Some(past),
            best: Candidate::Average,
        };
        let mut without = latest_settings(AdvantageTarget::Corrected, Behaviour::Uniform);
        without.reward_scale = SCALE;
        let mut with = without.clone();
        with.chance_baseline = true;
        let mut acc = Moments::default();
        let (mut changed, mut second_round) = (0, 0);
        for seed in 0..150 {
            let (a, _) = play_group(
                &game,
                &snaps,
                &with,
                Candidate::all(),
                &mut SplitMix64::new(seed),
            );
            let (b, _) = play_group(
                &game,
                &snaps,
                &without,
                Candidate::all(),
                &mut SplitMix64::new(seed),
            );
            assert_eq!(a.len(), b.len());
            for (t, u) in a.iter().zip(&b) {
                assert_eq!(t.learning_player, u.learning_player);
                assert_eq!(t.steps.len(), u.steps.len());
                let reaches_second = t
                    .steps
                    .iter()
                    .any(|s| want[&key(&s.info[0], &s.info[1])].1 == 3);
                for (s, r) in t.steps.iter().zip(&u.steps) {
                    assert_eq!(s.action, r.action, "the baseline changes no action");
                    if s.player != t.learning_player {
                        continue;
                    }
                    let chances = want[&key(&s.info[0], &s.info[1])].1;
                    let got = s.advantage.as_ref().unwrap();
                    if chances == 3 {
                        assert_eq!(got, r.advantage.as_ref().unwrap(), "after the card");
                        second_round += 1;
                        continue;
                    }
                    if reaches_second && got != r.advantage.as_ref().unwrap() {
                        changed += 1;
                    }
                    if !reaches_second {
                        assert_eq!(got, r.advantage.as_ref().unwrap(), "no card dealt");
                    }
                    add_target(&mut acc, key(&s.info[0], &s.info[1]), got);
                }
            }
        }
        assert!(
            changed > 1000 && second_round > 1000,
            "{changed} {second_round}"
        );
        // Nearly every first-round decision history (30 deals x 6 betting sequences) has
        // stored targets.
        let first_round = want.values().filter(|w| w.1 == 2).count();
        assert_eq!(first_round, 180);
        assert!(acc.len() + 5 >= first_round, "{} sampled", acc.len());
        // Standard errors need samples: histories with at least 30 targets.
        let (worst, judged) = worst_deviation(&acc, |k| want[k].0.clone(), 30.0);
        assert!(judged >= 100, "{judged} histories with 30 targets");
        assert!(worst < 4.5, "chance-baseline targets off by {worst} s.e.");
    }

    /// The correction by hand on a two-decision episode.
    #[test]
    fn corrected_advantages_follow_the_recursion() {
        let steps = [
            CvStep {
                step: 0,
                learner: true,
                q: vec![1.0, -1.0],
                pi: vec![0.25, 0.75],
                legal: vec![true, true],
                action: 1,
                behaviour: 0.5,
                chance_value: None,
            },
            CvStep {
                step: 1,
                learner: false,
                q: vec![2.0, 0.5],
                pi: vec![0.5, 0.5],
                legal: vec![true, true],
                action: 0,
                behaviour: 0.5,
                chance_value: None,
            },
        ];
        // Opponent: ũ = Σπq + (3 − q(a*)) = 1.25 + 1 = 2.25.
        // Learner: corr = (2.25 − (−1)) / 0.5 = 6.5; ũ(h, ·) = (1, 5.5);
        // ũ(h) = 0.25 + 0.75 · 5.5 = 4.375.
        let out = corrected_advantages(&steps, 3.0, [-10.0, 10.0]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, 0);
        let want = [1.0 - 4.375, 5.5 - 4.375];
        for (g, w) in out[0].1.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
        }
        // A chance node before the opponent's decision with Σ_o p(o) v(h_o) = 0.5: the
        // opponent's ũ = 2.25 becomes 0.5 + 2.25 − v = 0.5 + 2.25 − 1.25 = 1.5, so
        // corr = (1.5 + 1) / 0.5 = 5, ũ(h, ·) = (1, 4), ũ(h) = 3.25.
        let mut with_chance = steps.clone();
        with_chance[1].chance_value = Some(0.5);
        let out = corrected_advantages(&with_chance, 3.0, [-10.0, 10.0]);
        for (g, w) in out[0].1.iter().zip([1.0 - 3.25, 4.0 - 3.25]) {
            assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
        }
        // Utilities within [−2, 2]: the opponent's ũ = 2.25 is clipped to 2, so
        // corr = (2 + 1) / 0.5 = 6, ũ(h, ·) = (1, 5), ũ(h) = 4, advantages (−3, 1).
        let out = corrected_advantages(&steps, 3.0, [-2.0, 2.0]);
        for (g, w) in out[0].1.iter().zip([-3.0, 1.0]) {
            assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
        }
        // Advantages within ±1 once the range is [−0.5, 0.5].
        let out = corrected_advantages(&steps, 3.0, [-0.5, 0.5]);
        assert!(out[0].1.iter().all(|x| x.abs() <= 1.0), "{:?}", out[0].1);
    }

    /// [`play_group`] computes only the outputs its games read; it plays the same episodes
    /// (targets, policies, candidate returns) as the reference that computes every output of
    /// every network, for feed-forward and recurrent networks, every behaviour, past draw and
    /// advantage target, with evaluation groups.
    #[test]
    fn selected_heads_play_the_same_episodes() {
        let recurrent = |game: &str, seed: u64| {
            let g = load_game(game).unwrap();
            let cfg = ArmacNetConfig::new(g.observation_tensor_size(), g.num_distinct_actions())
                .with_encoder_hidden(16)
                .with_head_hidden(16)
                .with_recurrent(true)
                .with_zero_init_heads(false);
            Arc::new(ArmacPolicyNet::init(cfg, seed).unwrap())
        };
        let mut compared = 0;
        for game in ["kuhn_poker", "leduc_poker", "liars_dice"] {
            let g = load_game(game).unwrap();
            for rec in [false, true] {
                let net = |seed: u64| {
                    if rec {
                        recurrent(game, seed)
                    } else {
                        small_ff(game, seed)
                    }
                };
                let past: Vec<PastEpoch> = (0..3)
                    .map(|i| PastEpoch {
                        policy: net(100 + i),
                        critic: net(200 + i),
                        exact: None,
                        table: None,
                    })
                    .collect();
                let snaps = Snapshots {
                    epoch: 3,
                    latest: net(7),
                    latest_table: None,
                    past: past.clone(),
                    previous: Some(past[2].clone()),
                    best: Candidate::all()[2],
                };
                let mut targets = vec![AdvantageTarget::History, AdvantageTarget::Corrected];
                if !rec {
                    targets.push(AdvantageTarget::Infoset);
                    targets.push(AdvantageTarget::CorrectedInfoset);
                }
                for draw in [PastDraw::Episode, PastDraw::Group] {
                    for behaviour in [Behaviour::Candidates, Behaviour::Uniform] {
                        for &target in &targets {
                            for eval_fraction in [0.0, 1.0] {
                                let settings = ActorSettings {
                                    games_per_group: 12,
                                    eval_fraction,
                                    reward_scale: 2.0,
                                    past_draw: draw,
                                    advantage_target: target,
                                    behaviour,
                                    chance_baseline: !rec && target.is_corrected(),
                                };
                                let ctx = format!("{game} rec={rec} {settings:?}");
                                let play = |all: bool| {
                                    let mut rng = SplitMix64::new(9);
                                    let f = if all {
                                        play_group_all_heads
                                    } else {
                                        play_group
                                    };
                                    format!(
                                        "{:?}",
                                        f(&g, &snaps, &settings, Candidate::all(), &mut rng)
                                    )
                                };
                                assert_eq!(play(false), play(true), "{ctx}");
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 3 * (32 + 16));
    }
}
