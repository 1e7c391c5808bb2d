//! Exact evaluation of small games: the public tree with every infoset's network inputs, the
//! NashConv of a network's policies, and the tables of the `tabular_w` and
//! `exact_advantages` ablations.

use super::diagnostics::SampledRegrets;
use super::state::{ArmacState, Nets};
use crate::eval::nash_conv;
use crate::game::GameRef;
use crate::nn::armac::{ActBatch, ArmacPolicyNet, SeqInputs};
use crate::policy::probs::normalized_relu;
use crate::rl::armac::actor::AdvantageTarget;
use crate::rl::armac::exact_values::ExactValues;
use crate::rl::armac::memory::{Memory, MemoryTargets};
use crate::rl::armac::replay::Replay;
use crate::rl::armac::sequence::{decision_path, gather_rows, seq_inputs};
use crate::rl::armac::table::PolicyTable;
use crate::rl::error::TrainError;
use crate::tree::TreePolicy;
use crate::tree::history::HistoryTree;
use crate::tree::{PublicTree, TreeError};
use std::sync::Arc;

/// Everything exact evaluation needs for a small game.
pub(crate) struct Exact {
    pub(crate) tree: PublicTree,
    /// Per player: the batch of all infosets' tensors and legal masks (recurrent nets: legal
    /// masks only).
    batches: [ActBatch; 2],
    /// Recurrent nets, per player: every infoset's decisions from the root along its stored
    /// history (padded sequences), and the row of each infoset's own decision.
    sequences: Option<[(SeqInputs, Vec<usize>); 2]>,
    /// Feed-forward nets, per player: information-state tensor (as bits) → infoset index, for
    /// finding the replay memory's samples in the tree.
    lookup: Option<[std::collections::HashMap<Vec<u32>, usize>; 2]>,
    /// The history tree, built on first use and shared by the diagnostics and the exact
    /// advantages.
    histories: std::sync::OnceLock<Arc<HistoryTree>>,
    /// Feed-forward nets, per player: the critic's inputs at every decision history of that
    /// player and the histories in row order (built on first use, for the critic diagnostic).
    critic_rows: std::sync::OnceLock<[(ActBatch, Vec<usize>); 2]>,
}

/// Hashable key of an information-state tensor.
fn tensor_key(t: &[f32]) -> Vec<u32> {
    t.iter().map(|x| x.to_bits()).collect()
}

/// The largest game (in histories) ARMAC evaluates exactly.
pub const EXACT_MAX_HISTORIES: usize = 6_000_000;

impl Exact {
    /// Games with more histories than this get no exact evaluation (`small_fcpa`, 4.3 M,
    /// still does).
    pub(crate) fn new(game: &GameRef, recurrent: bool) -> Result<Option<Exact>, TrainError> {
        let tree = match PublicTree::build_with_limit(game.as_ref(), EXACT_MAX_HISTORIES) {
            Ok(t) => t,
            Err(TreeError::TooLarge { .. }) => {
                eprintln!(
                    "note: {} has over {EXACT_MAX_HISTORIES} histories: no exact evaluation \
                     (armac.exact_eval)",
                    game.load_string()
                );
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let na = game.num_distinct_actions();
        let isz = game.information_state_tensor_size();
        let batches = std::array::from_fn(|p| {
            let inf = &tree.infosets[p];
            let mut b = ActBatch::default();
            for i in 0..inf.len() {
                let s = crate::game::replay(game.as_ref(), &inf.history[i])
                    .expect("stored histories are legal");
                if !recurrent {
                    let mut t = vec![0.0; isz];
                    s.information_state_tensor(p, &mut t);
                    b.own.extend_from_slice(&t);
                    b.both0.extend_from_slice(&t);
                    b.both1.extend_from_slice(&t);
                }
                let mut mask = vec![0.0; na];
                for k in inf.range(i) {
                    mask[inf.actions[k]] = 1.0;
                }
                b.legal.extend(mask);
            }
            b
        });
        let sequences = if recurrent {
            let mut per_player = Vec::with_capacity(2);
            for p in 0..2 {
                let inf = &tree.infosets[p];
                let paths = (0..inf.len())
                    .map(|i| decision_path(game.as_ref(), &inf.history[i]))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(TrainError::context("replaying an infoset's history"))?;
                let time = paths.iter().map(Vec::len).max().unwrap_or(0);
                let last = paths
                    .iter()
                    .enumerate()
                    .map(|(i, path)| i * time + path.len() - 1)
                    .collect();
                let seqs: Vec<&[crate::rl::armac::trajectory::Step]> =
                    paths.iter().map(|x| &x[..]).collect();
                let inputs = seq_inputs(&seqs, time, game.observation_tensor_size(), na);
                per_player.push((inputs, last));
            }
            let b = per_player.pop();
            let a = per_player.pop();
            a.zip(b).map(|(a, b)| [a, b])
        } else {
            None
        };
        let lookup = (!recurrent).then(|| {
            std::array::from_fn(|p| {
                batches[p]
                    .own
                    .chunks(isz.max(1))
                    .enumerate()
                    .map(|(i, t)| (tensor_key(t), i))
                    .collect()
            })
        });
        Ok(Some(Exact {
            tree,
            batches,
            sequences,
            lookup,
            histories: std::sync::OnceLock::new(),
            critic_rows: std::sync::OnceLock::new(),
        }))
    }

    /// The game's history tree over `self.tree`, built once.
    pub(crate) fn histories(&self, game: &GameRef) -> Result<Arc<HistoryTree>, TrainError> {
        if let Some(ht) = self.histories.get() {
            return Ok(ht.clone());
        }
        let ht = Arc::new(HistoryTree::build(game.as_ref(), &self.tree)?);
        Ok(self.histories.get_or_init(|| ht).clone())
    }

    /// The critic of `net` at every decision history, as [`super::diagnostics::critic_error`]
    /// takes it: `q_p(h, a)` of the acting player `p` at every child `c = (h a)`, in game units
    /// (`scale`: the run's reward scale). `None` for recurrent nets, whose critic reads
    /// observation sequences rather than a history's information-state tensors.
    pub(crate) fn critic_q(
        &self,
        game: &GameRef,
        net: &ArmacPolicyNet,
        na: usize,
        scale: f64,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        if self.sequences.is_some() {
            return Ok(None);
        }
        let ht = self.histories(game)?;
        if self.critic_rows.get().is_none() {
            let isz = game.information_state_tensor_size();
            let mut rows: [(ActBatch, Vec<usize>); 2] = Default::default();
            let mut t = [vec![0.0; isz], vec![0.0; isz]];
            for h in 0..ht.len() {
                let crate::tree::history::HistoryKind::Decision(p) = ht.kind[h] else {
                    continue;
                };
                let st = crate::game::replay(game.as_ref(), &ht.actions_to(h)).map_err(
                    TrainError::context("replaying a history for the critic diagnostic"),
                )?;
                for (i, ti) in t.iter_mut().enumerate() {
                    st.information_state_tensor(i, ti);
                }
                let mut legal = vec![false; na];
                for c in ht.children(h) {
                    legal[ht.action[c]] = true;
                }
                rows[p].0.push(&t[p], &t[0], &t[1], &legal);
                rows[p].1.push(h);
            }
            let _ = self.critic_rows.set(rows);
        }
        let rows = self.critic_rows.get().expect("set above");
        let mut q = vec![f64::NAN; ht.len()];
        for (p, (batch, hs)) in rows.iter().enumerate() {
            if hs.is_empty() {
                continue;
            }
            let out = net.evaluate(batch);
            let field = if p == 0 { &out.q0 } else { &out.q1 };
            for (row, &h) in hs.iter().enumerate() {
                for c in ht.children(h) {
                    q[c] = f64::from(field[row * na + ht.action[c]]) * scale;
                }
            }
        }
        Ok(Some(q))
    }

    /// The network's outputs at every infoset of player `p` (row `i`: infoset `i`).
    pub(crate) fn outputs(&self, net: &ArmacPolicyNet, p: usize) -> crate::nn::armac::ActOutput {
        match &self.sequences {
            None => net
                .evaluate_policies(&self.batches[p])
                .expect("the exact evaluator's batches match the feed-forward network"),
            Some(seqs) => {
                let (inputs, last) = &seqs[p];
                let (out, _) = net
                    .evaluate_sequences(inputs, inputs.time.max(1))
                    .expect("the exact evaluator's sequences match the network");
                gather_rows(&out, last)
            }
        }
    }

    /// Regret matching on what the W head regresses on: the per-infoset sums of the
    /// reservoir's (or the replay memory's) mean-regret targets, or with `memory_targets =
    /// "infoset_mean_all"` the memory's per-state means, which cover samples no longer held
    /// (feed-forward nets: infosets are found by their information-state tensors). `None` for
    /// recurrent nets (their samples carry no information-state tensor).
    pub(crate) fn sampled_regrets(
        &self,
        replay: &Replay,
        memory: Option<&Memory>,
        na: usize,
    ) -> Option<TreePolicy> {
        let lookup = self.lookup.as_ref()?;
        if let Some(m) = memory.filter(|m| m.targets() == MemoryTargets::InfosetMeanAll) {
            return Some(self.table_policy(m, na));
        }
        let mut sums = SampledRegrets::new(&self.tree);
        let mut add = |st: &crate::rl::armac::trajectory::Step, w: f32| {
            if let (Some(adv), Some(&i)) = (
                &st.advantage,
                lookup[st.player].get(&tensor_key(&st.info[st.player])),
            ) {
                debug_assert_eq!(adv.len(), na);
                let weighted: Vec<f32> = adv.iter().map(|x| x * w).collect();
                sums.add(&self.tree, st.player, i, &weighted);
            }
        };
        match memory {
            // The reservoir's samples with their loss weights: what the head regresses on.
            Some(m) => {
                for st in m.regret.items() {
                    add(&st.step, m.weight(st, true));
                }
            }
            None => {
                for t in replay.items.iter().filter(|t| t.learning) {
                    for st in t.steps.iter().filter(|st| st.player == t.learning_player) {
                        add(st, 1.0);
                    }
                }
            }
        }
        Some(sums.policy(&self.tree))
    }

    /// Regret matching on the reservoir's per-infoset weighted means of the mean-regret
    /// targets (uniform where it holds none): the `tabular_w` ablation's `π^t`. Feed-forward
    /// nets only (infosets are found by their information-state tensors).
    pub(crate) fn table_policy(&self, memory: &Memory, na: usize) -> TreePolicy {
        let isz = self.batches[0].own.len() / self.tree.infosets[0].len().max(1);
        let regrets: TreePolicy = std::array::from_fn(|p| {
            let inf = &self.tree.infosets[p];
            let mut r = vec![0.0; inf.num_actions_total()];
            for i in 0..inf.len() {
                let own = &self.batches[p].own[i * isz..(i + 1) * isz];
                let legal: Vec<bool> = self.batches[p].legal[i * na..(i + 1) * na]
                    .iter()
                    .map(|&x| x > 0.5)
                    .collect();
                if let Some(mean) = memory.regret_mean(p, own, &legal) {
                    for k in inf.range(i) {
                        r[k] = f64::from(mean[inf.actions[k]]);
                    }
                }
            }
            r
        });
        super::diagnostics::regret_matching(&self.tree, &regrets)
    }

    /// `policy` as a table the actors look up by information-state tensor.
    pub(crate) fn policy_table(&self, policy: &TreePolicy, na: usize) -> PolicyTable {
        let isz = self.batches[0].own.len() / self.tree.infosets[0].len().max(1);
        let mut table = PolicyTable::default();
        for (p, pol) in policy.iter().enumerate() {
            let inf = &self.tree.infosets[p];
            for i in 0..inf.len() {
                let mut probs = vec![0.0f32; na];
                for k in inf.range(i) {
                    probs[inf.actions[k]] = pol[k] as f32;
                }
                table.insert(p, &self.batches[p].own[i * isz..(i + 1) * isz], probs);
            }
        }
        table
    }

    /// NashConv of the average-policy head and of `π = NormalizedReLU(W)`.
    pub(crate) fn evaluate(&self, net: &ArmacPolicyNet, na: usize) -> (f64, f64) {
        let (avg, cur) = self.policies(net, na);
        (
            nash_conv(&self.tree, &avg).nash_conv,
            nash_conv(&self.tree, &cur).nash_conv,
        )
    }

    /// The average-policy head's policy and `π = NormalizedReLU(W)` at every infoset.
    pub(crate) fn policies(&self, net: &ArmacPolicyNet, na: usize) -> (TreePolicy, TreePolicy) {
        let mut avg: TreePolicy = [Vec::new(), Vec::new()];
        let mut cur: TreePolicy = [Vec::new(), Vec::new()];
        for p in 0..2 {
            let inf = &self.tree.infosets[p];
            let out = self.outputs(net, p);
            let mut a = vec![0.0; inf.num_actions_total()];
            let mut c = vec![0.0; inf.num_actions_total()];
            for i in 0..inf.len() {
                let row = i * na..(i + 1) * na;
                let legal: Vec<bool> = self.batches[p].legal[row.clone()]
                    .iter()
                    .map(|&x| x > 0.5)
                    .collect();
                let pi = normalized_relu(&out.mean_regret[row.clone()], &legal);
                let r = inf.range(i);
                let total: f64 = r
                    .clone()
                    .map(|k| out.avg_policy[row.start + inf.actions[k]] as f64)
                    .sum();
                for k in r.clone() {
                    let x = out.avg_policy[row.start + inf.actions[k]] as f64;
                    a[k] = if total > 0.0 {
                        x / total
                    } else {
                        1.0 / r.len() as f64
                    };
                    c[k] = pi[inf.actions[k]] as f64;
                }
            }
            avg[p] = a;
            cur[p] = c;
        }
        (avg, cur)
    }
}

/// The `tabular_w` ablation: the table policies `π^j` of the latest and the previous epoch
/// (the only ones actors play with uniform behaviour and `past_draw = "latest"`), as tree
/// policies for evaluation, diagnostics and exact advantages, and as tables for the actors.
/// They are not checkpointed: a resumed run rebuilds the latest from the reservoir memory it
/// loads (the same one) and uses it for the previous epoch too.
#[derive(Default)]
pub(crate) struct TabularW {
    pub(crate) policies: std::collections::HashMap<u64, (TreePolicy, Arc<PolicyTable>)>,
}

impl TabularW {
    /// Builds epoch `epoch`'s policy from `memory` and forgets epochs before `epoch − 1`.
    pub(crate) fn advance(&mut self, ex: &Exact, memory: &Memory, epoch: u64, na: usize) {
        let policy = ex.table_policy(memory, na);
        let table = Arc::new(ex.policy_table(&policy, na));
        self.policies.retain(|&j, _| j + 1 >= epoch);
        self.policies.insert(epoch, (policy, table));
    }

    pub(crate) fn table(&self, j: u64) -> Option<Arc<PolicyTable>> {
        self.policies.get(&j).map(|x| x.1.clone())
    }

    pub(crate) fn policy(&self, j: u64) -> Option<&TreePolicy> {
        self.policies.get(&j).map(|x| &x.0)
    }
}

/// The `exact_advantages` ablation: exact values of the policy `π^j` of every epoch in the
/// working set.
pub(crate) struct ExactAdvantages {
    pub(crate) ht: Arc<HistoryTree>,
    pub(crate) values: std::collections::HashMap<u64, Arc<ExactValues>>,
    pub(crate) scale: f64,
    pub(crate) target: AdvantageTarget,
}

impl ExactAdvantages {
    /// Keeps the values of the working set's epochs, computing those it lacks.
    pub(crate) fn refresh(
        &mut self,
        ex: &Exact,
        st: &ArmacState,
        nets: &Nets,
        tabular: Option<&TabularW>,
        na: usize,
    ) {
        let mut ws: std::collections::BTreeSet<u64> =
            st.working_set.epochs().iter().copied().collect();
        ws.extend(st.epoch.checked_sub(1).filter(|_| st.keep_previous));
        self.values.retain(|id, _| ws.contains(id));
        for j in ws {
            if let std::collections::hash_map::Entry::Vacant(e) = self.values.entry(j) {
                let policy = match tabular.and_then(|t| t.policy(j)) {
                    Some(p) => p.clone(),
                    None => ex.policies(&nets[&j], na).1,
                };
                e.insert(Arc::new(ExactValues::new(
                    self.ht.clone(),
                    &ex.tree,
                    &policy,
                    self.scale,
                    self.target,
                )));
            }
        }
    }
}
