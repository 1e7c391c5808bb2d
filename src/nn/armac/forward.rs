//! The batched forward passes behind inference and training: plain-data inputs packed into one
//! upload ([`pack_inputs`]), run through an [`ArmacNet`] ([`forward_packed`]) and read back as an
//! [`ActOutput`] ([`evaluate_select_on`]).

use super::batch::ActBatch;
use super::batch::ActOutput;
use super::batch::Heads;
use super::config::NnError;
use super::net::ArmacNet;
use super::net::ArmacOutput;
use super::tensors::Block;
use super::tensors::Packed;
use super::tensors::Packer;
use super::tensors::to_vec;
use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::activation::softmax;

/// Forward on plain data, one read-back for all five outputs.
///
/// # Panics
/// If the batch's lengths do not match the net.
pub(super) fn evaluate_on(model: &ArmacNet, device: &Device, batch: &ActBatch) -> ActOutput {
    evaluate_select_on(model, device, batch, Heads::ALL)
        .unwrap_or_else(|e| panic!("ArmacNet evaluate: {e}"))
}

/// The outputs `heads` asks for on plain data, one read-back ([`forward_plain`]); the fields
/// not asked for come back empty, the others equal [`evaluate_on`]'s. `both0` and `both1` are
/// read (and checked) only for the critic.
pub(super) fn evaluate_select_on(
    model: &ArmacNet,
    device: &Device,
    batch: &ActBatch,
    heads: Heads,
) -> Result<ActOutput, NnError> {
    let (n_in, a) = (model.input_size(), model.num_actions());
    batch.check(n_in, a, heads.critic)?;
    let rows = batch.rows(a);
    if rows == 0 || !heads.any() {
        return Ok(ActOutput::empty(rows, a));
    }
    let inputs = [&batch.own[..], &batch.both0[..], &batch.both1[..]];
    let out = forward_plain(model, device, inputs, &batch.legal, rows, n_in, heads);
    Ok(read_selected(out, heads, rows, a))
}

/// Reads back, in one transfer, the outputs `heads` asks for (`rows × a` each); the fields not
/// asked for come back empty.
pub(super) fn read_selected(out: ArmacOutput, heads: Heads, rows: usize, a: usize) -> ActOutput {
    if rows == 0 || !heads.any() {
        return ActOutput::empty(rows, a);
    }
    let [q0, q1] = out.q;
    // The five fields in `ActOutput`'s order; `None` where not asked for.
    let fields = [
        heads.critic.then_some(q0),
        heads.critic.then_some(q1),
        heads.mean_regret.then_some(out.mean_regret),
        heads.immediate_regret.then_some(out.immediate_regret),
        heads.avg_policy.then(|| softmax(out.avg_logits, 1)),
    ];
    let asked: Vec<bool> = fields.iter().map(Option::is_some).collect();
    let parts: Vec<Tensor<2>> = fields.into_iter().flatten().collect();
    let k = parts.len();
    let mut got = split_fields(to_vec(Tensor::cat(parts, 1)), a, k).into_iter();
    let placed = asked
        .into_iter()
        .map(|ok| {
            if ok {
                got.next().unwrap_or_default()
            } else {
                Vec::new()
            }
        })
        .collect();
    ActOutput::from_fields(rows, a, placed)
}

/// For each row, which entry of `both` its `own` tensor equals (0 or 1); `None` if some row's
/// `own` equals neither (then the net must encode `own` separately).
pub(super) fn acting_players(
    own: &[f32],
    both0: &[f32],
    both1: &[f32],
    n_in: usize,
) -> Option<Vec<f32>> {
    own.chunks_exact(n_in)
        .zip(both0.chunks_exact(n_in).zip(both1.chunks_exact(n_in)))
        .map(|(o, (b0, b1))| {
            if o == b0 {
                Some(0.0)
            } else if o == b1 {
                Some(1.0)
            } else {
                None
            }
        })
        .collect()
}

/// Where the inputs of one forward pass lie in a [`Packer`]'s buffer ([`pack_inputs`]).
pub(super) struct InputBlocks {
    heads: Heads,
    legal: Block,
    kind: InputKind,
}

enum InputKind {
    /// No critic: the acting player's tensors alone.
    Own(Block),
    /// Both players' tensors and the acting player per row (`own` is one of them).
    Acting([Block; 2], Block),
    /// All three tensors.
    Full(Block, [Block; 2]),
}

impl InputBlocks {
    /// The block of the rows' legal masks.
    pub(super) fn legal(&self) -> Block {
        self.legal
    }
}

/// Packs plain row-major inputs `[own, both0, both1]` (`B × n_in` each) and the `B × a`
/// `legal` mask for a pass computing `heads`: `own` alone without the critic (`both0`/`both1`
/// are not read), else both players' tensors and the acting player when every `own` row is
/// one of its `both` rows, else all three.
pub(super) fn pack_inputs(
    p: &mut Packer,
    inputs: [&[f32]; 3],
    legal: &[f32],
    b: usize,
    n_in: usize,
    heads: Heads,
) -> InputBlocks {
    let [own, both0, both1] = inputs;
    let legal = p.push(legal, b, legal.len() / b.max(1));
    let kind = if !heads.critic {
        InputKind::Own(p.push(own, b, n_in))
    } else {
        let both = [p.push(both0, b, n_in), p.push(both1, b, n_in)];
        match acting_players(own, both0, both1, n_in) {
            Some(acting) => InputKind::Acting(both, p.push(&acting, b, 1)),
            None => InputKind::Full(p.push(own, b, n_in), both),
        }
    };
    InputBlocks { heads, legal, kind }
}

/// The forward pass on packed inputs ([`pack_inputs`]): through [`ArmacNet::forward_heads`]
/// without the critic, [`ArmacNet::forward_select`] when `own` is one of `both`, else
/// [`ArmacNet::forward`].
pub(super) fn forward_packed(model: &ArmacNet, p: &Packed, x: &InputBlocks) -> ArmacOutput {
    let legal = p.get(x.legal);
    match &x.kind {
        InputKind::Own(own) => model.forward_heads(p.get(*own), legal, x.heads),
        InputKind::Acting([b0, b1], acting) => {
            model.forward_select([p.get(*b0), p.get(*b1)], p.get(*acting), legal, x.heads)
        }
        InputKind::Full(own, [b0, b1]) => {
            model.forward(p.get(*own), [p.get(*b0), p.get(*b1)], legal)
        }
    }
}

/// Forward on plain row-major inputs (see [`pack_inputs`]), one upload.
pub(super) fn forward_plain(
    model: &ArmacNet,
    device: &Device,
    inputs: [&[f32]; 3],
    legal: &[f32],
    b: usize,
    n_in: usize,
    heads: Heads,
) -> ArmacOutput {
    let mut p = Packer::default();
    let x = pack_inputs(&mut p, inputs, legal, b, n_in, heads);
    forward_packed(model, &p.upload(device), &x)
}

/// Splits a row-major `[B, k·A]` read-back into its `k` column blocks (`B × A` each).
fn split_fields(all: Vec<f32>, a: usize, k: usize) -> Vec<Vec<f32>> {
    let b = all.len() / (k * a).max(1);
    let mut fields: Vec<Vec<f32>> = (0..k).map(|_| Vec::with_capacity(b * a)).collect();
    for row in all.chunks_exact(k * a) {
        for (f, field) in fields.iter_mut().enumerate() {
            field.extend_from_slice(&row[f * a..(f + 1) * a]);
        }
    }
    fields
}
