//! Conversions between plain data and tensors, and the batched forward passes behind
//! inference.

use super::batch::ActBatch;
use super::batch::ActOutput;
use super::batch::Heads;
use super::config::NnError;
use super::net::ArmacNet;
use super::net::ArmacOutput;
use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::activation::softmax;

/// Host-to-device and device-to-host traffic and tensor operations of the network code,
/// counted by the wrappers every upload (`upload`) and read-back (`read_back`) goes through.
/// The learner reports the share of its own calls (`ArmacLearner::io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceIo {
    /// Host-to-device transfers (one per tensor created from host data).
    pub uploads: u64,
    /// Bytes of those transfers.
    pub upload_bytes: u64,
    /// Device-to-host reads (each one waits for the device to finish the work it reads).
    pub readbacks: u64,
    /// Bytes of those reads.
    pub readback_bytes: u64,
    /// Tensor operations recorded on the autodiff graph: every float tensor the forward pass
    /// and the losses create on an autodiff device, uploaded leaves included (the backward pass
    /// and the optimizer run on the inner backend and are not counted). This count is
    /// process-wide: another thread training on an autodiff device at the same time adds to it.
    pub ops: u64,
}

impl std::ops::Sub for DeviceIo {
    type Output = DeviceIo;
    fn sub(self, o: DeviceIo) -> DeviceIo {
        DeviceIo {
            uploads: self.uploads - o.uploads,
            upload_bytes: self.upload_bytes - o.upload_bytes,
            readbacks: self.readbacks - o.readbacks,
            readback_bytes: self.readback_bytes - o.readback_bytes,
            ops: self.ops - o.ops,
        }
    }
}

impl std::ops::AddAssign for DeviceIo {
    fn add_assign(&mut self, o: DeviceIo) {
        self.uploads += o.uploads;
        self.upload_bytes += o.upload_bytes;
        self.readbacks += o.readbacks;
        self.readback_bytes += o.readback_bytes;
        self.ops += o.ops;
    }
}

thread_local! {
    /// Transfers made on this thread (the `ops` field stays 0: see [`io_now`]).
    static IO: std::cell::Cell<DeviceIo> = const { std::cell::Cell::new(DeviceIo {
        uploads: 0, upload_bytes: 0, readbacks: 0, readback_bytes: 0, ops: 0,
    }) };
}

/// The transfers made on this thread so far, with the process-wide autodiff operation
/// counter in `ops` (burn numbers every autodiff tensor from one counter; reading it takes a
/// number, which the next reading subtracts).
pub(super) fn io_now() -> DeviceIo {
    let mut io = IO.with(|c| c.get());
    // Minus the readings taken so far (each one consumes a number).
    let reading = burn_autodiff::NodeId::new().value;
    io.ops = reading - OP_READINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    io
}

static OP_READINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn count(f: impl FnOnce(&mut DeviceIo)) {
    IO.with(|c| {
        let mut io = c.get();
        f(&mut io);
        c.set(io);
    });
}

/// Uploads host data as a tensor of `shape` (counted in [`DeviceIo`]).
pub(super) fn upload<const D: usize>(
    data: Vec<f32>,
    shape: [usize; D],
    device: &Device,
) -> Tensor<D> {
    let bytes = (data.len() * std::mem::size_of::<f32>()) as u64;
    count(|io| {
        io.uploads += 1;
        io.upload_bytes += bytes;
    });
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// Reads a tensor back to the host as `f32`s (counted in [`DeviceIo`]).
pub(super) fn read_back<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    let v = t
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 tensor data");
    let bytes = (v.len() * std::mem::size_of::<f32>()) as u64;
    count(|io| {
        io.readbacks += 1;
        io.readback_bytes += bytes;
    });
    v
}

pub(super) fn tensor2(data: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    upload(data, [rows, cols], device)
}

pub(super) fn to_vec(t: Tensor<2>) -> Vec<f32> {
    read_back(t)
}

/// Host data of one pass gathered into one buffer: [`Self::push`] appends a `rows × cols`
/// block and returns its handle, [`Self::upload`] makes one transfer, and
/// [`Packed::get`] cuts the blocks out of the uploaded buffer on the device.
#[derive(Default)]
pub(super) struct Packer {
    data: Vec<f32>,
    blocks: Vec<(usize, [usize; 2])>,
}

/// A block of a [`Packer`] (its index).
#[derive(Clone, Copy, Debug)]
pub(super) struct Block(usize);

/// The uploaded buffer of a [`Packer`] and where its blocks lie.
pub(super) struct Packed {
    flat: Option<Tensor<1>>,
    blocks: Vec<(usize, [usize; 2])>,
    device: Device,
}

impl Packer {
    /// Appends the row-major `rows × cols` block `v`.
    pub(super) fn push(&mut self, v: &[f32], rows: usize, cols: usize) -> Block {
        assert_eq!(v.len(), rows * cols, "packed block of {rows} × {cols}");
        self.blocks.push((self.data.len(), [rows, cols]));
        self.data.extend_from_slice(v);
        Block(self.blocks.len() - 1)
    }

    /// Appends the `rows × cols` block that `fill` writes (it must write `rows · cols` values).
    pub(super) fn push_with(
        &mut self,
        rows: usize,
        cols: usize,
        fill: impl FnOnce(&mut Vec<f32>),
    ) -> Block {
        let start = self.data.len();
        fill(&mut self.data);
        assert_eq!(
            self.data.len() - start,
            rows * cols,
            "packed block of {rows} × {cols}"
        );
        self.blocks.push((start, [rows, cols]));
        Block(self.blocks.len() - 1)
    }

    /// One transfer of every block to `device` (none when the buffer is empty).
    pub(super) fn upload(self, device: &Device) -> Packed {
        let n = self.data.len();
        let flat = (n > 0).then(|| upload(self.data, [n], device));
        Packed {
            flat,
            blocks: self.blocks,
            device: device.clone(),
        }
    }
}

impl Packed {
    /// Block `b` as a `[rows, cols]` tensor on the device (a view of the uploaded buffer).
    pub(super) fn get(&self, b: Block) -> Tensor<2> {
        let (start, [rows, cols]) = self.blocks[b.0];
        match &self.flat {
            Some(flat) if rows * cols > 0 => flat
                .clone()
                .narrow(0, start, rows * cols)
                .reshape([rows, cols]),
            _ => Tensor::zeros([rows, cols], &self.device),
        }
    }
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
