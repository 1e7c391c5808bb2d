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

use super::batch::Heads;
use super::batch::TrainBatch;
use super::config::ArmacNetConfig;
use super::config::NnError;
use super::grouped::pack_grouped;
use super::learner::ArmacLearner;
use super::learner::ResidentTables;
use super::loss::policy_cross_entropy;
use super::loss::weighted_sq_error;
use super::tensors::Block;
use super::tensors::Packed;
use super::tensors::Packer;
use super::tensors::io_now;
use burn::tensor::Tensor;
use burn::tensor::{IndexingUpdateOp, Int};

/// Slots are uploaded as `f32`s, exact below 2^24.
pub const RESIDENT_MAX_CAPACITY: usize = 1 << 24;

/// The most bytes one chunk of a table holds: a table is kept as chunks of at most this size,
/// and a catch-up of more changed rows is uploaded in pieces of at most this size, because
/// devices cap a single buffer (Mesa's lavapipe took a 96 MB upload and refused a 193 MB one;
/// one 2^18-row FCPA table is 192 MB).
pub const RESIDENT_CHUNK_BYTES: usize = 32 << 20;

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
/// mean-regret head), index 1 the policy table (the average-policy head).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResidentStep {
    pub updates: [ResidentUpdate; 2],
    pub draws: [ResidentDraw; 2],
}

/// The row layout of a table for a net of `cfg`: `input + 2·A` floats.
pub fn resident_width(cfg: &ArmacNetConfig) -> usize {
    cfg.input_size + 2 * cfg.num_actions
}

/// Where one table's blocks lie in the step's upload: per chunk the local slots and rows it
/// rewrites and the local slots it is drawn at (in chunk order), and the drawn rows' weights in
/// that order.
struct TableBlocks {
    updates: Vec<(usize, Block, Block)>,
    draws: Vec<(usize, Block)>,
    weights: Option<Block>,
}

impl ArmacLearner {
    /// Keeps two device tables of `capacity` rows (all zeros) for [`Self::train_step_resident`],
    /// each in chunks of at most [`RESIDENT_CHUNK_BYTES`].
    ///
    /// # Errors
    /// A capacity of 0 or above [`RESIDENT_MAX_CAPACITY`], or a recurrent net (its rows are
    /// sequences).
    pub fn enable_resident_memory(&mut self, capacity: usize) -> Result<(), NnError> {
        let row_bytes = resident_width(&self.cfg) * std::mem::size_of::<f32>();
        self.enable_resident_memory_in_chunks(capacity, (RESIDENT_CHUNK_BYTES / row_bytes).max(1))
    }

    /// [`Self::enable_resident_memory`] with tables in chunks of `chunk_rows` rows (the last
    /// may be shorter).
    ///
    /// # Errors
    /// As [`Self::enable_resident_memory`], and for `chunk_rows` 0.
    pub fn enable_resident_memory_in_chunks(
        &mut self,
        capacity: usize,
        chunk_rows: usize,
    ) -> Result<(), NnError> {
        if capacity == 0 || capacity > RESIDENT_MAX_CAPACITY || chunk_rows == 0 {
            return Err(NnError::Config(format!(
                "device-resident memory of {capacity} rows in chunks of {chunk_rows}: must be \
                 1 to {RESIDENT_MAX_CAPACITY} rows in chunks of at least 1"
            )));
        }
        if self.cfg.recurrent {
            return Err(NnError::Config(
                "device-resident memory needs the feed-forward network".into(),
            ));
        }
        let width = resident_width(&self.cfg);
        let d = self.device.clone().inner();
        let chunks = || -> Vec<Tensor<2>> {
            (0..capacity.div_ceil(chunk_rows))
                .map(|c| {
                    let rows = chunk_rows.min(capacity - c * chunk_rows);
                    Tensor::zeros([rows, width], &d)
                })
                .collect()
        };
        self.resident = Some(ResidentTables {
            chunk_rows,
            capacity,
            tables: [chunks(), chunks()],
        });
        Ok(())
    }

    /// Whether [`Self::enable_resident_memory`] was called.
    pub fn has_resident_memory(&self) -> bool {
        self.resident.is_some()
    }

    /// One Adam step on the replay rows of `replay` (its mean-regret and average-policy weights
    /// must be 0: those heads train on the resident rows) and the rows `step` draws from the
    /// device tables, after writing `step.updates` into them. One upload, no read-back; the
    /// losses are added to the sums [`Self::take_loss_sums`] reads. Updates of more floats
    /// than a chunk holds are written first, in uploads of at most a chunk's size each
    /// ([`resident_catch_up_uploads`]).
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

    /// Writes `update` into table `t` in uploads of at most a chunk's size each.
    fn write_update_apart(
        &self,
        res: &mut ResidentTables,
        t: usize,
        update: &ResidentUpdate,
        width: usize,
    ) {
        check_update(update, res.capacity, width);
        let piece = (res.chunk_rows * width / (width + 1)).max(1);
        for start in (0..update.slots.len()).step_by(piece) {
            let end = (start + piece).min(update.slots.len());
            let part = ResidentUpdate {
                slots: update.slots[start..end].to_vec(),
                rows: update.rows[start * width..end * width].to_vec(),
            };
            let mut p = Packer::default();
            let blocks = pack_table(&mut p, &part, &ResidentDraw::default(), res, width);
            let packed = p.upload(&self.device);
            assign_rows(&mut res.tables[t], &blocks.updates, &packed);
        }
    }

    /// The four loss terms of a resident step (see [`Self::train_step_resident`]).
    fn resident_terms(&mut self, replay: &TrainBatch, step: &ResidentStep) -> [Tensor<1>; 4] {
        let mut res = self
            .resident
            .take()
            .expect("train_step_resident needs enable_resident_memory");
        let width = res.tables[0][0].dims()[1];
        let (n_in, a) = (self.cfg.input_size, self.cfg.num_actions);
        // A catch-up larger than a chunk (the first step after a start or a resume with full
        // reservoirs) is written first, in uploads of its own of at most a chunk's size.
        let update_floats: usize = step.updates.iter().map(|u| u.rows.len()).sum();
        let apart = update_floats > res.chunk_rows * width;
        if apart {
            for (t, update) in step.updates.iter().enumerate() {
                self.write_update_apart(&mut res, t, update, width);
            }
        }
        let none = ResidentUpdate::default();
        let mut p = Packer::default();
        let replay_part = (replay.rows() > 0).then(|| pack_grouped(&mut p, &self.cfg, replay));
        let blocks: Vec<TableBlocks> = (0..2)
            .map(|t| {
                let update = if apart { &none } else { &step.updates[t] };
                pack_table(&mut p, update, &step.draws[t], &res, width)
            })
            .collect();
        let packed = p.upload(&self.device);
        let slots_of = |b: Block| slots_tensor(&packed, b);
        // Write the changed rows, then gather the drawn ones (as constants of the graph).
        let mut drawn: Vec<Option<(Tensor<2>, Tensor<2>)>> = Vec::with_capacity(2);
        for (chunks, b) in res.tables.iter_mut().zip(&blocks) {
            assign_rows(chunks, &b.updates, &packed);
            drawn.push(b.weights.map(|weights| {
                let parts: Vec<Tensor<2>> = b
                    .draws
                    .iter()
                    .map(|&(c, slots)| chunks[c].clone().select(0, slots_of(slots)))
                    .collect();
                let rows = if parts.len() == 1 {
                    parts.into_iter().next().expect("one part")
                } else {
                    Tensor::cat(parts, 0)
                };
                (rows.autodiff(), packed.get(weights))
            }));
        }
        self.resident = Some(res);
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
            // Mean over the legal actions of each row, weighted mean over rows.
            let per_legal = w / legal.sum_dim(1).clamp_min(1.0);
            mean_regret = mean_regret + weighted_sq_error(out.mean_regret, target, per_legal);
        }
        if let Some((rows, w)) = drawn.next().flatten() {
            let (own, legal, target) = split_row(rows, n_in, a);
            let out = self.model.forward_heads(own, legal, Heads::AVG_POLICY);
            policy = policy + policy_cross_entropy(out.avg_logits, target, w);
        }
        [critic, mean_regret, immediate, policy]
    }
}

/// The uploads a step with `updates` makes before its own one, for tables in chunks of
/// `chunk_rows` rows of `width` floats: none unless the updates hold more floats than a chunk.
pub fn resident_catch_up_uploads(
    updates: &[ResidentUpdate; 2],
    chunk_rows: usize,
    width: usize,
) -> usize {
    let floats: usize = updates.iter().map(|u| u.rows.len()).sum();
    if floats <= chunk_rows * width {
        return 0;
    }
    let piece = (chunk_rows * width / (width + 1)).max(1);
    updates.iter().map(|u| u.slots.len().div_ceil(piece)).sum()
}

/// Checks an update's lengths and slots.
///
/// # Panics
/// On rows that do not match the slots, a slot out of range or a repeated slot.
fn check_update(update: &ResidentUpdate, capacity: usize, width: usize) {
    let k = update.slots.len();
    assert_eq!(update.rows.len(), k * width, "resident update rows");
    let mut seen = std::collections::HashSet::with_capacity(k);
    for &s in &update.slots {
        assert!(s < capacity, "resident update slot {s} of {capacity}");
        assert!(seen.insert(s), "resident update slot {s} repeated");
    }
}

/// Block `b` of `packed` (slots uploaded as `f32`s) as an index tensor.
fn slots_tensor(packed: &Packed, b: Block) -> Tensor<1, Int> {
    let t = packed.get(b).inner();
    let n = t.dims()[0];
    t.reshape([n]).int()
}

/// Writes the rows of `updates` (chunk, local slots, rows: blocks of `packed`, in chunk order)
/// into `chunks`, each chunk moved into its update so the device may write it in place.
fn assign_rows(chunks: &mut Vec<Tensor<2>>, updates: &[(usize, Block, Block)], packed: &Packed) {
    if updates.is_empty() {
        return;
    }
    let mut ups = updates.iter().peekable();
    *chunks = std::mem::take(chunks)
        .into_iter()
        .enumerate()
        .map(|(c, chunk)| match ups.next_if(|u| u.0 == c) {
            Some(&(_, slots, rows)) => chunk.select_assign(
                0,
                slots_tensor(packed, slots),
                packed.get(rows).inner(),
                IndexingUpdateOp::Assign,
            ),
            None => chunk,
        })
        .collect();
}

/// Splits gathered rows into the acting player's tensor, the legal mask and the masked target.
fn split_row(rows: Tensor<2>, n_in: usize, a: usize) -> (Tensor<2>, Tensor<2>, Tensor<2>) {
    let own = rows.clone().narrow(1, 0, n_in);
    let legal = rows.clone().narrow(1, n_in, a);
    let target = rows.narrow(1, n_in + a, a);
    (own, legal, target)
}

/// Packs one table's changed rows and drawn slots, chunk by chunk, with the drawn rows'
/// normalised weights in the order the chunks gather them.
///
/// # Panics
/// On inconsistent lengths, a slot out of range or a repeated update slot.
fn pack_table(
    p: &mut Packer,
    update: &ResidentUpdate,
    draw: &ResidentDraw,
    res: &ResidentTables,
    width: usize,
) -> TableBlocks {
    let (capacity, chunk_rows) = (res.capacity, res.chunk_rows);
    let chunks = capacity.div_ceil(chunk_rows);
    check_update(update, capacity, width);
    let n = draw.slots.len();
    assert_eq!(draw.weights.len(), n, "resident draw weights");
    assert!(
        draw.slots.iter().all(|&s| s < capacity),
        "resident draw slot out of range"
    );
    // Positions (into the step's lists) by chunk, in their order within each chunk.
    let by_chunk = |slots: &[usize]| -> Vec<Vec<usize>> {
        let mut v = vec![Vec::new(); chunks];
        for (i, &s) in slots.iter().enumerate() {
            v[s / chunk_rows].push(i);
        }
        v
    };
    let local = |s: usize| (s % chunk_rows) as f32;
    let mut updates = Vec::new();
    for (c, idx) in by_chunk(&update.slots).into_iter().enumerate() {
        if idx.is_empty() {
            continue;
        }
        let slots: Vec<f32> = idx.iter().map(|&i| local(update.slots[i])).collect();
        let mut rows = Vec::with_capacity(idx.len() * width);
        for &i in &idx {
            rows.extend_from_slice(&update.rows[i * width..(i + 1) * width]);
        }
        updates.push((
            c,
            p.push(&slots, idx.len(), 1),
            p.push(&rows, idx.len(), width),
        ));
    }
    let sum: f32 = draw.weights.iter().sum();
    let mut draws = Vec::new();
    let mut weights = Vec::with_capacity(n);
    if n > 0 && sum > 0.0 {
        for (c, idx) in by_chunk(&draw.slots).into_iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            let slots: Vec<f32> = idx.iter().map(|&i| local(draw.slots[i])).collect();
            weights.extend(idx.iter().map(|&i| draw.weights[i] / sum));
            draws.push((c, p.push(&slots, idx.len(), 1)));
        }
    }
    let weights = (!draws.is_empty()).then(|| p.push(&weights, n, 1));
    TableBlocks {
        updates,
        draws,
        weights,
    }
}
