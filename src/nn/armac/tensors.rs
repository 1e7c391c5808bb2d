//! Conversions between plain data and tensors, and the batched forward passes behind
//! inference.

use super::*;

pub(super) fn tensor2(data: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data, [rows, cols]), device)
}

pub(super) fn to_vec(t: Tensor<2>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 tensor data")
}

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
    let legal = tensor2(batch.legal.clone(), rows, a, device);
    let inputs = [&batch.own, &batch.both0, &batch.both1];
    let out = forward_plain(model, device, inputs, rows, n_in, legal, heads);
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

/// Forward on plain row-major inputs `[own, both0, both1]` (`B × n_in` each), computing the
/// outputs `heads` asks for: through [`ArmacNet::forward_heads`] on `own` without the critic
/// (`both0`/`both1` are not read), else through [`ArmacNet::forward_select`] when every `own`
/// row is one of its `both` rows, else through [`ArmacNet::forward`].
pub(super) fn forward_plain(
    model: &ArmacNet,
    device: &Device,
    inputs: [&Vec<f32>; 3],
    b: usize,
    n_in: usize,
    legal: Tensor<2>,
    heads: Heads,
) -> ArmacOutput {
    let [own, both0, both1] = inputs;
    if !heads.critic {
        return model.forward_heads(tensor2(own.clone(), b, n_in, device), legal, heads);
    }
    let both = [
        tensor2(both0.clone(), b, n_in, device),
        tensor2(both1.clone(), b, n_in, device),
    ];
    match acting_players(own, both0, both1, n_in) {
        Some(acting) => model.forward_select(both, tensor2(acting, b, 1, device), legal, heads),
        None => model.forward(tensor2(own.clone(), b, n_in, device), both, legal),
    }
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

/// The CPU device inference snapshots live on: flex when compiled in, else the default one.
pub(super) fn cpu_device() -> Device {
    #[cfg(feature = "flex")]
    {
        Device::flex()
    }
    #[cfg(not(feature = "flex"))]
    {
        Device::default()
    }
}
