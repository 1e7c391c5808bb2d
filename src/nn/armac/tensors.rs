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

/// Feed-forward nets: the mean-regret head (`regret`) and/or the average policy (`policy`) on
/// the batch's `own` rows, each row encoded once ([`ArmacNet::forward_heads`]); the fields not
/// asked for come back empty. Equal, field for field, to [`evaluate_on`].
pub(super) fn evaluate_heads_on(
    model: &ArmacNet,
    device: &Device,
    batch: &ActBatch,
    regret: bool,
    policy: bool,
) -> Result<ActOutput, NnError> {
    let (n_in, a) = (model.input_size(), model.num_actions());
    let rows = batch.legal.len() / a.max(1);
    check_len("own", batch.own.len(), rows * n_in)?;
    check_len("legal", batch.legal.len(), rows * a)?;
    let mut out = ActOutput {
        rows,
        num_actions: a,
        ..Default::default()
    };
    if rows == 0 || !(regret || policy) {
        return Ok(out);
    }
    let heads = model.forward_heads(
        tensor2(batch.own.clone(), rows, n_in, device),
        tensor2(batch.legal.clone(), rows, a, device),
        regret,
        policy,
    );
    let mut parts = Vec::new();
    if regret {
        parts.push(heads.mean_regret);
    }
    if policy {
        parts.push(softmax(heads.avg_logits, 1));
    }
    let k = parts.len();
    // `split_output` fills the first `k` fields (`q0`, then `q1`): move them where they belong.
    let got = split_output(to_vec(Tensor::cat(parts, 1)), rows, a, k);
    match (regret, policy) {
        (true, true) => (out.mean_regret, out.avg_policy) = (got.q0, got.q1),
        (true, false) => out.mean_regret = got.q0,
        _ => out.avg_policy = got.q0,
    }
    Ok(out)
}

/// The critic alone (`q0`, `q1`; every other field empty) on the batch's `both0`/`both1` rows
/// ([`ArmacNet::forward_critic`]). Equal, field for field, to [`evaluate_on`].
pub(super) fn evaluate_critic_on(
    model: &ArmacNet,
    device: &Device,
    batch: &ActBatch,
) -> Result<ActOutput, NnError> {
    let (n_in, a) = (model.input_size(), model.num_actions());
    let rows = batch.legal.len() / a.max(1);
    check_len("both0", batch.both0.len(), rows * n_in)?;
    check_len("both1", batch.both1.len(), rows * n_in)?;
    check_len("legal", batch.legal.len(), rows * a)?;
    let mut out = ActOutput {
        rows,
        num_actions: a,
        ..Default::default()
    };
    if rows == 0 {
        return Ok(out);
    }
    let [q0, q1] = model.forward_critic(
        [
            tensor2(batch.both0.clone(), rows, n_in, device),
            tensor2(batch.both1.clone(), rows, n_in, device),
        ],
        tensor2(batch.legal.clone(), rows, a, device),
    );
    let got = split_output(to_vec(Tensor::cat(vec![q0, q1], 1)), rows, a, 2);
    (out.q0, out.q1) = (got.q0, got.q1);
    Ok(out)
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
