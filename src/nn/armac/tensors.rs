//! Conversions between plain data and tensors: counted uploads and read-backs ([`DeviceIo`])
//! and the packing of many host blocks into one upload ([`Packer`]).

use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::TensorData;

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
