//! Reservoir memories of the mean-regret and average-policy targets (`armac.memory =
//! "reservoir"`).
//!
//! Algorithm 1 regresses `W̄` on the decisions of the current data set, each carrying the
//! advantage `A_{π^j}(h, ·)` of one past policy `j` drawn uniformly. The target of one row is
//! then a single sample of a quantity whose mean (Eq. 3, the mean regret) shrinks like
//! `1/√T` while its spread does not: with a bounded data set, regret matching on `W̄` ends up
//! matching noise. Here every learning decision ever played is offered to a reservoir
//! (Vitter's Algorithm R, so the reservoir is a uniform sample of all of them), the opponent
//! plays the previous epoch's policy `π^{t−1}` (`past_draw = "latest"`), and the heads regress on
//! rows drawn from the reservoirs. Epoch `e` then contributes advantages of `π^{e−1}` with the
//! frequency the opponent's reach gives them, so the reservoir's mean at an information state
//! `s` is Eq. 3's `W^T(s, ·)` (every epoch, one policy each) and its noise falls as epochs
//! accumulate, as in Deep CFR's advantage memory.
//!
//! The learning player `i` follows a behaviour policy `μ` that changes between episodes and
//! epochs. A decision at `s` is recorded with probability proportional to `η_i^μ(s)` (and to
//! the opponent's and chance's reach). Eq. 3's weights have the opponent's reach only, so with
//! [`MemoryWeights::Reach`] each row's loss is weighted by `1 / η_i^μ(s)`, the inverse of the
//! learning player's own behaviour reach recorded by the actor ([`Step::reach`]), clipped at
//! `max_weight`. The same holds for the average policy: the opponent plays `π^{t−1}` on
//! policy, so the frequency of its decisions carries its own reach (the weight of `π^{t−1}(s)`
//! in the average policy) times the learning player's behaviour reach, which the weight
//! removes.
//!
//! # Mean targets
//! With [`MemoryTargets::InfosetMean`] a row's target is not its own sample's advantages (or
//! played policy) but the weighted mean of the targets of every sample held at the same
//! information state (same player, tensor and legal actions), each weighted by its
//! [`Memory::weight`]. Both heads' losses are, per row, a weighted squared error or a cross
//! entropy that is linear in the target, so over the whole memory
//! `Σ_i w_i ℓ(f(s_i), y_i) = Σ_i w_i ℓ(f(s_i), ȳ(s_i)) + const` (squared error), or equal outright
//! (cross entropy): the objective, its minimiser and the expected minibatch gradient are
//! unchanged, while the part of the gradient's noise that comes from the targets of rows at the
//! same information state disappears. Where information states rarely repeat (Hold'em) every
//! mean is one sample and nothing changes. The sums are kept in fixed point (`i128`, 2^-30), so
//! adding and removing samples is exact and order-free, and a table rebuilt from a checkpoint's
//! samples equals the one kept incrementally, bit for bit.

use super::reservoir::{Offer, Reservoir};
use super::trajectory::{Reader, Step, Trajectory};
use crate::nn::armac::{TrainBatch, TrainRow};
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

mod means;
mod resident;
use means::MeanTable;
pub use resident::DeviceMemory;

/// Where the mean-regret and average-policy heads get their targets (`armac.memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// The trajectories of the replay memory (Algorithm 1 as stated).
    #[default]
    Replay,
    /// Reservoirs of all learning decisions ever played (see the module docs).
    Reservoir,
}

/// Loss weights of reservoir samples (`armac.memory_weights`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryWeights {
    /// `1 / η_i^μ(s)`, clipped.
    #[default]
    Reach,
    /// Every sample weighs 1.
    None,
}

/// A decision kept in a memory, with the epoch that played it.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The decision (only the acting player's tensor is kept).
    pub step: Step,
    /// The epoch of the episode (0 for samples restored from the first memory format).
    pub epoch: u32,
    /// [`state_key`] of `step`, computed once here rather than at every draw.
    key: u128,
}

impl Sample {
    /// The decision `step` of epoch `epoch`.
    pub fn new(step: Step, epoch: u32) -> Sample {
        let key = state_key(&step);
        Sample { step, epoch, key }
    }
}

/// What a memory row regresses on (`armac.memory_targets`; see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryTargets {
    /// Its own sample's advantages or played policy (Algorithm 1's rows).
    #[default]
    Sample,
    /// The weighted mean over the samples held at its information state.
    InfosetMean,
    /// The weighted mean over every sample ever offered at its information state since the
    /// reservoir last held none there: the estimate of [`Self::InfosetMean`] from all the data
    /// instead of the reservoir's uniform subsample of it. Once the reservoir is full its
    /// subsample per epoch shrinks like `1/t` while Eq. 3's mean regret shrinks like `1/√t`, so
    /// the held samples' mean ends up dominated by noise; the sums over all the data keep
    /// their noise falling. The table holds one entry per state held (bounded by the
    /// capacity); checkpoints keep its sums (`memory_means.bin`), which the samples held
    /// cannot rebuild.
    InfosetMeanAll,
}

impl MemoryTargets {
    /// Rows regress on per-state means.
    pub fn is_mean(self) -> bool {
        self != MemoryTargets::Sample
    }
}

/// A 128-bit key of the acting player's information state: player, legal actions and tensor
/// (two independent 64-bit hashes of the bits; collisions among a million states have
/// probability about 1e-27).
fn state_key(s: &Step) -> u128 {
    key_of(s.player, &s.info[s.player], &s.legal)
}

/// [`state_key`] from its parts: the acting player, its information-state tensor and the
/// legal-action mask.
fn key_of(player: usize, own: &[f32], legal: &[bool]) -> u128 {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325 ^ player as u64;
    let mut b: u64 = 0x6c62_272e_07bb_0142 ^ (player as u64) << 7;
    let mut feed = |x: u64| {
        a = (a ^ x).wrapping_mul(0x0000_0100_0000_01b3);
        b = (b ^ x.rotate_left(23))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    };
    let mask = legal.iter().enumerate().fold(0u64, |m, (k, &l)| {
        m ^ (u64::from(l) << (k % 64)).rotate_left((k / 64) as u32)
    });
    feed(mask);
    feed(legal.len() as u64);
    feed(own.len() as u64);
    for x in own {
        feed(u64::from(x.to_bits()));
    }
    (u128::from(crate::util::mix64(a)) << 64) | u128::from(crate::util::mix64(b))
}

/// The target a sample carries (advantages or played policy).
fn target(s: &Step) -> &[f32] {
    s.advantage
        .as_deref()
        .or(s.played_policy.as_deref())
        .unwrap_or(&[])
}

/// The two reservoirs and how their samples are weighted.
#[derive(Clone, Debug)]
pub struct Memory {
    /// Learning-player decisions with their advantages (mean-regret targets).
    pub regret: Reservoir<Sample>,
    /// Opponent decisions with the policy it played (average-policy targets).
    pub policy: Reservoir<Sample>,
    weights: MemoryWeights,
    max_weight: f32,
    /// Exponents `γ` of the epoch weights `(e + 1)^γ` of regret and policy samples.
    epoch_powers: [f64; 2],
    /// How rows are drawn from the reservoirs.
    sampling: MemorySampling,
    /// The latest epoch of any sample kept (bounds the epoch weights).
    last_epoch: u32,
    /// What rows regress on.
    targets: MemoryTargets,
    /// Per-information-state sums of the regret and policy reservoirs (mean targets, or
    /// [`Self::with_state_means`]).
    means: Option<[MeanTable; 2]>,
    /// Keep the per-state sums even when rows regress on their own samples.
    keep_means: bool,
    /// Slots of the regret and policy reservoirs whose sample changed since the last
    /// [`Self::resident_step`] (kept only after [`Self::track_changes`]).
    changed: Option<[Vec<usize>; 2]>,
    /// [`Self::weight`] of the sample in each slot of the regret and policy reservoirs: the
    /// rejection sampling of [`Self::draw_slots`] reads these small arrays instead of the
    /// samples, which lie scattered over a large memory.
    slot_weights: [Vec<f32>; 2],
}

/// How [`Memory::push_rows`] draws rows (`armac.memory_sampling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemorySampling {
    /// Uniformly, each row weighted by its sample's weight in the loss.
    #[default]
    Uniform,
    /// With probability proportional to the sample's weight (rejection sampling against the
    /// largest possible weight), every row weighing the same in the loss: the same expected
    /// gradient without the spread that weights of 1 to `max_weight · (t + 1)^γ` add to it.
    Weighted,
}

impl Memory {
    /// Empty reservoirs of `capacity` samples each.
    pub fn new(capacity: usize, weights: MemoryWeights, max_weight: f64) -> Memory {
        Memory {
            regret: Reservoir::new(capacity),
            policy: Reservoir::new(capacity),
            weights,
            max_weight: max_weight as f32,
            epoch_powers: [0.0; 2],
            sampling: MemorySampling::Uniform,
            last_epoch: 0,
            targets: MemoryTargets::Sample,
            means: None,
            keep_means: false,
            changed: None,
            slot_weights: [Vec::new(), Vec::new()],
        }
    }

    /// Keeps the per-information-state sums of both reservoirs whatever the rows regress on,
    /// so that [`Self::regret_mean`] answers (the `tabular_w` ablation).
    pub fn with_state_means(mut self, keep: bool) -> Memory {
        self.keep_means = keep;
        self.rebuild_means();
        self
    }

    /// The weighted mean of the mean-regret targets the regret reservoir holds at player
    /// `player`'s information state with tensor `own` and legal actions `legal` (`None` when it
    /// holds none there, or when no per-state sums are kept).
    pub fn regret_mean(&self, player: usize, own: &[f32], legal: &[bool]) -> Option<Vec<f32>> {
        self.means.as_ref()?[0]
            .mean_at(key_of(player, own, legal))
            .map(<[f32]>::to_vec)
    }

    /// Rows regress on `targets` (builds the per-state sums from the samples held).
    pub fn with_targets(mut self, targets: MemoryTargets) -> Memory {
        self.targets = targets;
        self.rebuild_means();
        self
    }

    /// Recomputes the per-state sums from the samples held (or drops them), and the weights
    /// of the samples held.
    fn rebuild_means(&mut self) {
        self.slot_weights =
            [(&self.regret, true), (&self.policy, false)].map(|(res, is_regret)| {
                res.items()
                    .iter()
                    .map(|s| self.weight(s, is_regret))
                    .collect()
            });
        self.means = (self.targets.is_mean() || self.keep_means).then(|| {
            [(&self.regret, true), (&self.policy, false)].map(|(res, is_regret)| {
                let mut table = MeanTable::default();
                for s in res.items() {
                    table.change(s, self.weight(s, is_regret), 1);
                }
                table
            })
        });
    }

    /// What the rows regress on.
    pub fn targets(&self) -> MemoryTargets {
        self.targets
    }

    /// Distinct information states held in the regret and policy reservoirs (mean targets
    /// only).
    pub fn distinct_states(&self) -> Option<[usize; 2]> {
        self.means.as_ref().map(|[r, p]| [r.map.len(), p.map.len()])
    }

    /// Draws rows as `sampling` says.
    pub fn with_sampling(mut self, sampling: MemorySampling) -> Memory {
        self.sampling = sampling;
        self
    }

    /// An upper bound of [`Self::weight`] over the samples kept.
    fn weight_bound(&self, regret: bool) -> f32 {
        let reach = match self.weights {
            MemoryWeights::None => 1.0,
            MemoryWeights::Reach => self.max_weight,
        };
        let power = self.epoch_powers[usize::from(!regret)];
        reach * (f64::from(self.last_epoch) + 1.0).powf(power) as f32
    }

    /// Weighs samples of epoch `e` by `(e + 1)^γ` on top of their reach weight: `regret` is
    /// `γ` of the mean-regret samples, `policy` of the average-policy samples. `γ = 0` gives
    /// every epoch the same weight (Eq. 3 and the uniform average policy as stated); `γ = 1`
    /// is linear CFR's weighting of regrets and of the average strategy (Deep CFR trains its
    /// networks with it), which discounts the early epochs and their cruder critics.
    pub fn with_epoch_powers(mut self, regret: f64, policy: f64) -> Memory {
        self.epoch_powers = [regret, policy];
        self.rebuild_means();
        self
    }

    /// Offers the learning decisions of `t` (nothing for episodes that only rank candidates).
    pub fn add(&mut self, t: &Trajectory, rng: &mut SplitMix64) {
        if !t.learning {
            return;
        }
        let epoch = u32::try_from(t.epoch).unwrap_or(u32::MAX);
        self.last_epoch = self.last_epoch.max(epoch);
        for s in &t.steps {
            let is_regret = if s.player == t.learning_player && s.advantage.is_some() {
                true
            } else if s.player != t.learning_player && s.played_policy.is_some() {
                false
            } else {
                continue;
            };
            let sample = slim(s, epoch);
            let w = self.weight(&sample, is_regret);
            let k = usize::from(!is_regret);
            if let Some(means) = self.means.as_mut() {
                means[k].change(&sample, w, 1);
            }
            let res = if is_regret {
                &mut self.regret
            } else {
                &mut self.policy
            };
            let (offer, slot) = res.offer_slot(sample, rng);
            if let Some(slot) = slot {
                let ws = &mut self.slot_weights[k];
                if slot == ws.len() {
                    ws.push(w);
                } else {
                    ws[slot] = w;
                }
            }
            if let (Some(changed), Some(slot)) = (self.changed.as_mut(), slot) {
                changed[k].push(slot);
            }
            let Some(means) = self.means.as_mut() else {
                continue;
            };
            let table = &mut means[k];
            match offer {
                Offer::Added => {}
                Offer::Replaced(old) | Offer::Dropped(old)
                    if self.targets == MemoryTargets::InfosetMeanAll =>
                {
                    table.release(&old);
                }
                Offer::Replaced(old) | Offer::Dropped(old) => {
                    // `weight` depends on the sample and the settings only, so the weight it
                    // was added with.
                    let w_old = weight_of(
                        &old,
                        is_regret,
                        self.weights,
                        self.max_weight,
                        self.epoch_powers,
                    );
                    table.change(&old, w_old, -1);
                }
            }
        }
    }

    /// The loss weight of a sample of the regret memory (`regret`) or the policy memory.
    pub fn weight(&self, s: &Sample, regret: bool) -> f32 {
        weight_of(s, regret, self.weights, self.max_weight, self.epoch_powers)
    }

    /// Appends `n` rows drawn uniformly from each non-empty reservoir to `tb`: regret rows train
    /// only the mean-regret head, policy rows only the average-policy head.
    pub fn push_rows(&self, tb: &mut TrainBatch, n: usize, rng: &mut SplitMix64) {
        let draws = self.draw_slots(n, rng);
        // Zeros for the targets a row does not train, and its own target padded to the
        // action count, in buffers reused across rows.
        let (mut zeros, mut padded) = (Vec::new(), Vec::new());
        for ((res, is_regret), draw) in [(&self.regret, true), (&self.policy, false)]
            .into_iter()
            .zip(draws)
        {
            let means = self
                .means
                .as_ref()
                .filter(|_| self.targets.is_mean())
                .map(|m| &m[usize::from(!is_regret)]);
            let items = res.items();
            for (i, &(slot, w)) in draw.iter().enumerate() {
                // The rows' samples lie scattered over a large memory: ask for the sample a
                // few rows ahead, and for the tensor of the next row's.
                if let Some(&(ahead, _)) = draw.get(i + 4) {
                    crate::util::prefetch(&items[ahead]);
                }
                if let Some(&(next, _)) = draw.get(i + 1) {
                    let step = &items[next].step;
                    crate::util::prefetch(step.info[step.player].as_ptr());
                }
                let sample = &items[slot];
                let s = &sample.step;
                let target = means
                    .and_then(|m| m.mean_at(sample.key))
                    .unwrap_or_else(|| target(s));
                let a = s.legal.len();
                zeros.resize(a, 0.0);
                padded.clear();
                padded.extend_from_slice(&target[..target.len().min(a)]);
                padded.resize(a, 0.0);
                let (own, legal) = (&s.info[s.player][..], &s.legal[..]);
                push_head_row(tb, (own, legal, s.action), is_regret, (&padded, &zeros), w);
            }
        }
    }

    /// The slots and loss weights of `n` rows drawn from each non-empty reservoir (regret,
    /// then policy) as `sampling` says ([`MemorySampling::Uniform`] or
    /// [`MemorySampling::Weighted`]; the rows [`Self::push_rows`] appends).
    pub fn draw_slots(&self, n: usize, rng: &mut SplitMix64) -> [Vec<(usize, f32)>; 2] {
        [(&self.regret, true), (&self.policy, false)].map(|(res, is_regret)| {
            let bound = self.weight_bound(is_regret);
            let held = &self.slot_weights[usize::from(!is_regret)];
            let weight = |slot: usize| {
                if held.len() == res.len() {
                    held[slot]
                } else {
                    self.weight(&res.items()[slot], is_regret)
                }
            };
            // Rejection sampling gives up after this many draws per row (a memory whose
            // weights all sit far below the bound; never on the shipped settings).
            let mut tries = 1000 * n;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let Some(mut slot) = res.sample_slot(rng) else {
                    break;
                };
                let mut w = weight(slot);
                if self.sampling == MemorySampling::Weighted {
                    while tries > 0 && rng.next_f64() as f32 * bound >= w {
                        tries -= 1;
                        slot = res.sample_slot(rng).expect("non-empty");
                        w = weight(slot);
                    }
                    w = 1.0;
                }
                out.push((slot, w));
            }
            out
        })
    }

    /// The reservoirs as bytes ([`encode_samples`]) and their counts of samples seen.
    pub fn encode(&self, info_len: usize, num_actions: usize) -> [(Vec<u8>, u64); 2] {
        [&self.regret, &self.policy]
            .map(|r| (encode_samples(r.items(), info_len, num_actions), r.seen()))
    }

    /// Rebuilds the reservoirs from [`Self::encode`]'s bytes; the error says which part is bad.
    pub fn decode(
        &mut self,
        parts: [(&[u8], u64); 2],
        info_len: usize,
        num_actions: usize,
    ) -> Result<(), String> {
        let capacity = self.regret.capacity();
        let [regret, policy] = parts.map(|(bytes, seen)| {
            decode_samples(bytes, info_len, num_actions)
                .and_then(|items| Reservoir::from_parts(capacity, seen, items))
        });
        self.regret = regret.map_err(|e| format!("regret memory: {e}"))?;
        self.policy = policy.map_err(|e| format!("average-policy memory: {e}"))?;
        self.last_epoch = [&self.regret, &self.policy]
            .iter()
            .flat_map(|r| r.items().iter().map(|s| s.epoch))
            .max()
            .unwrap_or(0);
        self.rebuild_means();
        Ok(())
    }
}

/// Appends a row at a state (the acting player's tensor, legal actions, an action) that
/// trains only the mean-regret head (`is_regret`, on `target`) or only the
/// average-policy head (on `target`), with loss weight `w`. Only the acting player's tensor is
/// kept; the critic's inputs (both players' tensors) are unused by these rows, whose critic
/// weight is 0.
fn push_head_row(
    tb: &mut TrainBatch,
    (own, legal, action): (&[f32], &[bool], usize),
    is_regret: bool,
    (target, zeros): (&[f32], &[f32]),
    w: f32,
) {
    let (regret, policy) = if is_regret {
        (target, zeros)
    } else {
        (zeros, target)
    };
    tb.push(&TrainRow {
        own,
        both0: own,
        both1: own,
        legal,
        action,
        critic_target: [0.0; 2],
        critic_weight: 0.0,
        regret_target: regret,
        regret_weight: if is_regret { w } else { 0.0 },
        immediate_target: zeros,
        immediate_weight: 0.0,
        policy_target: policy,
        policy_weight: if is_regret { 0.0 } else { w },
    });
}

/// [`Memory::weight`] from the settings it depends on.
fn weight_of(
    s: &Sample,
    regret: bool,
    weights: MemoryWeights,
    max_weight: f32,
    epoch_powers: [f64; 2],
) -> f32 {
    let reach = match weights {
        MemoryWeights::None => 1.0,
        MemoryWeights::Reach => (1.0 / s.step.reach.max(f32::MIN_POSITIVE)).min(max_weight),
    };
    let power = epoch_powers[usize::from(!regret)];
    if power == 0.0 {
        reach
    } else {
        reach * (f64::from(s.epoch) + 1.0).powf(power) as f32
    }
}

/// A copy of `s` without the other player's tensor (memory rows need the acting player's).
fn slim(s: &Step, epoch: u32) -> Sample {
    let mut step = s.clone();
    step.info[1 - s.player] = Vec::new();
    Sample::new(step, epoch)
}

/// The first format (no epochs); still read, its samples get epoch 0.
const MEMORY_MAGIC_V1: &[u8; 8] = b"ARMACMM1";
const MEMORY_MAGIC: &[u8; 8] = b"ARMACMM2";

/// Encodes memory samples: a magic tag, tensor length, action count and sample count, then per
/// sample its player, action, legal mask, the acting player's tensor, behaviour reach and
/// target (advantages or played policy, flagged), its epoch, and an FNV-1a checksum of
/// everything before.
pub fn encode_samples(samples: &[Sample], info_len: usize, num_actions: usize) -> Vec<u8> {
    let per = 10 + num_actions + 4 * (info_len + 1 + num_actions);
    let mut buf = Vec::with_capacity(32 + per * samples.len());
    buf.extend_from_slice(MEMORY_MAGIC);
    for n in [info_len, num_actions, samples.len()] {
        buf.extend_from_slice(&(n as u64).to_le_bytes());
    }
    let f32s = |buf: &mut Vec<u8>, xs: &[f32]| {
        for x in xs {
            buf.extend_from_slice(&x.to_le_bytes());
        }
    };
    for sample in samples {
        let s = &sample.step;
        let own = &s.info[s.player];
        assert!(own.len() == info_len && s.legal.len() == num_actions);
        buf.push(s.player as u8);
        buf.extend_from_slice(&(s.action as u32).to_le_bytes());
        buf.extend(s.legal.iter().map(|&l| u8::from(l)));
        f32s(&mut buf, own);
        f32s(&mut buf, &[s.reach]);
        let (flag, target) = match (&s.advantage, &s.played_policy) {
            (Some(a), _) => (1u8, a),
            (None, Some(p)) => (2u8, p),
            (None, None) => panic!("a memory sample without a target"),
        };
        buf.push(flag);
        f32s(&mut buf, target);
        buf.extend_from_slice(&sample.epoch.to_le_bytes());
    }
    crate::util::seal(&mut buf);
    buf
}

/// Decodes [`encode_samples`]'s bytes, checking magic, checksum and sizes.
pub fn decode_samples(
    bytes: &[u8],
    info_len: usize,
    num_actions: usize,
) -> Result<Vec<Sample>, String> {
    let (which, body) = crate::util::unseal(bytes, &[MEMORY_MAGIC, MEMORY_MAGIC_V1], 40, "memory")?;
    let with_epochs = which == 0;
    let mut r = Reader { buf: body, pos: 8 };
    let (il, na, n) = (r.u64()? as usize, r.u64()? as usize, r.u64()? as usize);
    if (il, na) != (info_len, num_actions) {
        return Err(format!(
            "it holds tensors of length {il} with {na} actions; the game has {info_len} and \
             {num_actions}"
        ));
    }
    let per = 6 + na + 4 * (il + 1 + na) + if with_epochs { 4 } else { 0 };
    if body.len() != 32 + per * n {
        return Err(format!(
            "{} bytes for {n} samples (expected {})",
            body.len(),
            32 + per * n
        ));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let player = r.u8()? as usize;
        let action = r.u32()? as usize;
        let legal: Vec<bool> = r.take(na)?.iter().map(|&b| b != 0).collect();
        let own = r.f32s(il)?;
        let reach = r.f32s(1)?[0];
        let flag = r.u8()?;
        let target = r.f32s(na)?;
        let epoch = if with_epochs { r.u32()? } else { 0 };
        if player > 1 || action >= na || !(1..=2).contains(&flag) {
            return Err(format!(
                "bad sample (player {player}, action {action}, flag {flag})"
            ));
        }
        let mut info = [Vec::new(), Vec::new()];
        info[player] = own;
        let step = Step {
            player,
            info,
            legal,
            action,
            advantage: (flag == 1).then(|| target.clone()),
            played_policy: (flag == 2).then_some(target),
            reach,
        };
        out.push(Sample::new(step, epoch));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
