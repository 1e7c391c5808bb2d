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
pub(super) fn evaluate_on(model: &ArmacNet, device: &Device, batch: &ActBatch) -> ActOutput {
    let a = model.num_actions();
    let n_in = model.input_size();
    let b = batch.rows(a);
    if b == 0 {
        return ActOutput {
            rows: 0,
            num_actions: a,
            ..Default::default()
        };
    }
    let cfg_like = ArmacNetConfig::new(n_in, a);
    if let Err(e) = batch.validate(&cfg_like) {
        panic!("ArmacNet evaluate: {e}");
    }
    let inputs = [&batch.own, &batch.both0, &batch.both1];
    let legal = tensor2(batch.legal.clone(), b, a, device);
    let out = forward_plain(model, device, inputs, b, n_in, legal);
    let [q0, q1] = out.q;
    let policy = softmax(out.avg_logits, 1);
    let all = Tensor::cat(
        vec![q0, q1, out.mean_regret, out.immediate_regret, policy],
        1,
    ); // [B, 5A]
    split_output(to_vec(all), b, a, 5)
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

/// Forward on plain row-major inputs `[own, both0, both1]` (`B × n_in` each): through
/// [`ArmacNet::forward_acting`] when every `own` row is one of its `both` rows, else
/// [`ArmacNet::forward`].
pub(super) fn forward_plain(
    model: &ArmacNet,
    device: &Device,
    inputs: [&Vec<f32>; 3],
    b: usize,
    n_in: usize,
    legal: Tensor<2>,
) -> ArmacOutput {
    let [own, both0, both1] = inputs;
    let both = [
        tensor2(both0.clone(), b, n_in, device),
        tensor2(both1.clone(), b, n_in, device),
    ];
    match acting_players(own, both0, both1, n_in) {
        Some(acting) => model.forward_acting(both, tensor2(acting, b, 1, device), legal),
        None => model.forward(tensor2(own.clone(), b, n_in, device), both, legal),
    }
}

/// Splits a row-major `[B, k·A]` read-back into the `k` first `ActOutput` fields.
pub(super) fn split_output(all: Vec<f32>, b: usize, a: usize, k: usize) -> ActOutput {
    let mut fields: Vec<Vec<f32>> = (0..k).map(|_| Vec::with_capacity(b * a)).collect();
    for row in all.chunks_exact(k * a) {
        for (f, field) in fields.iter_mut().enumerate() {
            field.extend_from_slice(&row[f * a..(f + 1) * a]);
        }
    }
    ActOutput::from_fields(b, a, fields)
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
