//! Device-resident reservoir rows: the learner keeps a copy of the regret and policy reservoir
//! memories on its device, so a learning step sends only the slots it draws (and the rows that
//! changed since the last step) instead of the drawn rows themselves.
//!
//! Each table is a `[capacity, input + 2·A]` tensor on the learner's device, without autodiff:
//! a row is the acting player's information-state tensor, the legal mask (1.0 / 0.0) and the
//! target masked to the legal actions (advantages for the regret table, the played policy for
//! the policy table). The host memory stays the source of truth (checkpoints are written from
//! it); the tables are a cache that the caller keeps current by staging every slot that
//! changed ([`ResidentStep::updates`]). A step packs, in the one upload it already makes for
//! the replay rows, the changed rows, the drawn slots and their loss weights; the rows are
//! gathered on the device and pass through the mean-regret or the average-policy head as the
//! host path's rows would ([`ArmacLearner::train_step`] on the same rows gives the same losses
//! up to the order of floating-point sums).

use super::*;
use burn::tensor::{IndexingUpdateOp, Int};

/// Slots are uploaded as `f32`s, exact below 2^24.
pub const RESIDENT_MAX_CAPACITY: usize = 1 << 24;

/// Rows of one table that changed since the last step: `slots[k]` now holds
/// `rows[k · width .. (k + 1) · width]` (`width = input + 2·A`, see the module docs). A slot may
/// appear once at most.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResidentUpdate {
    pub slots: Vec<usize>,
    pub rows: Vec<f32>,
}

/// The rows one step trains on from one table: the slots drawn and their loss weights (the
/// weighted mean over the drawn rows, as [`TrainBatch`]'s weights).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResidentDraw {
    pub slots: Vec<usize>,
    pub weights: Vec<f32>,
}

/// What a step takes from the device-resident tables: index 0 is the regret table (the
/// mean-regret head), index 1 the policy table (the average-policy head). `regret_scale`
/// multiplies the regret targets (the memory's target growth; 1 leaves them as stored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResidentStep {
    pub updates: [ResidentUpdate; 2],
    pub draws: [ResidentDraw; 2],
    pub regret_scale: f32,
}

/// The row layout of a table for a net of `cfg`: `input + 2·A` floats.
pub fn resident_width(cfg: &ArmacNetConfig) -> usize {
    cfg.input_size + 2 * cfg.num_actions
}

/// Where one table's blocks lie in the step's upload.
struct TableBlocks {
    update: Option<(Block, Block)>,
    draw: Option<(Block, Block, usize)>,
}

impl ArmacLearner {
    /// Keeps two device tables of `capacity` rows (all zeros) for [`Self::train_step_resident`].
    ///
    /// # Errors
    /// A capacity of 0 or above [`RESIDENT_MAX_CAPACITY`], or a recurrent net (its rows are
    /// sequences).
    pub fn enable_resident_memory(&mut self, capacity: usize) -> Result<(), NnError> {
        if capacity == 0 || capacity > RESIDENT_MAX_CAPACITY {
            return Err(NnError::Config(format!(
                "device-resident memory of {capacity} rows: must be 1 to {RESIDENT_MAX_CAPACITY}"
            )));
        }
        if self.cfg.recurrent {
            return Err(NnError::Config(
                "device-resident memory needs the feed-forward network".into(),
            ));
        }
        let width = resident_width(&self.cfg);
        let d = self.device.clone().inner();
        self.resident = Some([0, 1].map(|_| Tensor::zeros([capacity, width], &d)));
        Ok(())
    }

    /// Whether [`Self::enable_resident_memory`] was called.
    pub fn has_resident_memory(&self) -> bool {
        self.resident.is_some()
    }

    /// One Adam step on the replay rows of `replay` (its mean-regret and average-policy weights
    /// must be 0: those heads train on the resident rows) and the rows `step` draws from the
    /// device tables, after writing `step.updates` into them. One upload, no read-back; the
    /// losses are added to the sums [`Self::take_loss_sums`] reads.
    ///
    /// # Panics
    /// Without [`Self::enable_resident_memory`], if `replay` does not match the config or
    /// weighs the heads the tables train, or if `step` is inconsistent (lengths, a slot out of
    /// range, a repeated update slot).
    pub fn train_step_resident(&mut self, replay: &TrainBatch, step: &ResidentStep) {
        let before = io_now();
        if let Err(e) = replay.validate(&self.cfg) {
            panic!("ArmacLearner::train_step_resident: {e}");
        }
        assert!(
            replay.regret_weight.iter().all(|&w| w == 0.0)
                && replay.policy_weight.iter().all(|&w| w == 0.0),
            "train_step_resident: the replay rows must not weigh the heads the tables train"
        );
        let terms = self.resident_terms(replay, step);
        let values = self.apply(terms);
        self.defer(values);
        self.add_io(before);
    }

    /// The four loss terms of a resident step (see [`Self::train_step_resident`]).
    fn resident_terms(&mut self, replay: &TrainBatch, step: &ResidentStep) -> [Tensor<1>; 4] {
        let tables = self
            .resident
            .take()
            .expect("train_step_resident needs enable_resident_memory");
        let (capacity, width) = {
            let [c, w] = tables[0].dims();
            (c, w)
        };
        let (n_in, a) = (self.cfg.input_size, self.cfg.num_actions);
        let mut p = Packer::default();
        let replay_part = (replay.rows() > 0).then(|| pack_grouped(&mut p, &self.cfg, replay));
        let blocks: Vec<TableBlocks> = (0..2)
            .map(|t| pack_table(&mut p, &step.updates[t], &step.draws[t], capacity, width))
            .collect();
        let packed = p.upload(&self.device);
        let slots_of = |b: Block| -> Tensor<1, Int> {
            let t = packed.get(b).inner();
            let n = t.dims()[0];
            t.reshape([n]).int()
        };
        // Write the changed rows, then gather the drawn ones (as constants of the graph).
        let mut drawn: Vec<Option<(Tensor<2>, Tensor<2>)>> = Vec::with_capacity(2);
        let mut new_tables = Vec::with_capacity(2);
        for (table, b) in tables.into_iter().zip(&blocks) {
            let table = match b.update {
                Some((slots, rows)) => table.select_assign(
                    0,
                    slots_of(slots),
                    packed.get(rows).inner(),
                    IndexingUpdateOp::Assign,
                ),
                None => table,
            };
            drawn.push(b.draw.map(|(slots, weights, _)| {
                let rows = table.clone().select(0, slots_of(slots)).autodiff();
                (rows, packed.get(weights))
            }));
            new_tables.push(table);
        }
        self.resident = Some(new_tables.try_into().expect("two tables"));
        let zero = || Tensor::<1>::zeros([1], &self.device);
        let [critic, mut mean_regret, immediate, mut policy] = match replay_part {
            Some(g) => g.losses(&self.model, &packed),
            None => [zero(), zero(), zero(), zero()],
        };
        let mut drawn = drawn.into_iter();
        if let Some((rows, w)) = drawn.next().flatten() {
            let (own, legal, target) = split_row(rows, n_in, a);
            let out = self
                .model
                .forward_heads(own, legal.clone(), Heads::MEAN_REGRET);
            let target = target.mul_scalar(step.regret_scale);
            // Mean over the legal actions of each row, weighted mean over rows.
            let per_legal = w / legal.sum_dim(1).clamp_min(1.0);
            mean_regret = mean_regret + ((out.mean_regret - target).square() * per_legal).sum();
        }
        if let Some((rows, w)) = drawn.next().flatten() {
            let (own, legal, target) = split_row(rows, n_in, a);
            let out = self.model.forward_heads(own, legal, Heads::AVG_POLICY);
            policy = policy + (log_softmax(out.avg_logits, 1) * target * w).sum().neg();
        }
        [critic, mean_regret, immediate, policy]
    }
}

/// Splits gathered rows into the acting player's tensor, the legal mask and the masked target.
fn split_row(rows: Tensor<2>, n_in: usize, a: usize) -> (Tensor<2>, Tensor<2>, Tensor<2>) {
    let own = rows.clone().narrow(1, 0, n_in);
    let legal = rows.clone().narrow(1, n_in, a);
    let target = rows.narrow(1, n_in + a, a);
    (own, legal, target)
}

/// Packs one table's changed rows and drawn slots with their normalised weights.
///
/// # Panics
/// On inconsistent lengths, a slot out of range or a repeated update slot.
fn pack_table(
    p: &mut Packer,
    update: &ResidentUpdate,
    draw: &ResidentDraw,
    capacity: usize,
    width: usize,
) -> TableBlocks {
    let k = update.slots.len();
    assert_eq!(update.rows.len(), k * width, "resident update rows");
    let mut seen = std::collections::HashSet::with_capacity(k);
    for &s in &update.slots {
        assert!(s < capacity, "resident update slot {s} of {capacity}");
        assert!(seen.insert(s), "resident update slot {s} repeated");
    }
    let update = (k > 0).then(|| {
        let slots: Vec<f32> = update.slots.iter().map(|&s| s as f32).collect();
        (p.push(&slots, k, 1), p.push(&update.rows, k, width))
    });
    let n = draw.slots.len();
    assert_eq!(draw.weights.len(), n, "resident draw weights");
    assert!(
        draw.slots.iter().all(|&s| s < capacity),
        "resident draw slot out of range"
    );
    let sum: f32 = draw.weights.iter().sum();
    let draw = (n > 0 && sum > 0.0).then(|| {
        let slots: Vec<f32> = draw.slots.iter().map(|&s| s as f32).collect();
        let w: Vec<f32> = draw.weights.iter().map(|x| x / sum).collect();
        (p.push(&slots, n, 1), p.push(&w, n, 1), n)
    });
    TableBlocks { update, draw }
}
