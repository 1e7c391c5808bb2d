//! Building blocks: reproducible `Linear` initialisation, DoubleReLU, the residual block `B(x)`,
//! heads and the LSTM cell of Appendix F.

use crate::util::SplitMix64;
use burn::module::Module;
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::activation::relu;
use burn::tensor::activation::sigmoid;

/// Gives a module's parameters the ids 1, 2, … in the order the module visits them. burn draws
/// a parameter's id at random when it is created; the ids are written with the weights and key
/// the optimizer's state, so without this two runs of one seed would write different files.
pub(crate) struct NumberParams {
    next: u64,
}

impl NumberParams {
    /// Numbers the parameters of `module`.
    pub(crate) fn apply<M: Module>(module: M) -> M {
        module.map(&mut NumberParams { next: 0 })
    }
}

impl burn::module::ModuleMapper for NumberParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (_, value, mapper) = param.consume();
        self.next += 1;
        Param::from_mapped_value(burn::module::ParamId::from(self.next), value, mapper)
    }
}

/// `linear` with every weight and bias set to zero (same shapes).
pub(super) fn zero_linear(linear: Linear, device: &Device) -> Linear {
    let [d_in, d_out] = linear.weight.dims();
    let weight = Param::from_data(
        TensorData::new(vec![0.0f32; d_in * d_out], [d_in, d_out]),
        device,
    );
    let bias = linear
        .bias
        .map(|_| Param::from_data(TensorData::new(vec![0.0f32; d_out], [d_out]), device));
    Linear { weight, bias }
}

/// A `Linear(d_in → d_out)` with weights and bias uniform in `±1/√d_in`.
pub(crate) fn init_linear(
    rng: &mut SplitMix64,
    d_in: usize,
    d_out: usize,
    bias: bool,
    device: &Device,
) -> Linear {
    let bound = 1.0 / (d_in as f32).sqrt();
    let weight = Param::from_data(
        TensorData::new(rng.symmetric_vec_f32(d_in * d_out, bound), [d_in, d_out]),
        device,
    );
    let bias = bias.then(|| {
        Param::from_data(
            TensorData::new(rng.symmetric_vec_f32(d_out, bound), [d_out]),
            device,
        )
    });
    Linear { weight, bias }
}

/// `DoubleReLU(x) = concat(relu(x), relu(−x))` over the last dimension (doubles the width).
///
/// # Shapes
/// - `x`: `[..., n]` → `[..., 2n]`
pub fn double_relu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::cat(vec![relu(x.clone()), relu(x.neg())], D - 1)
}

/// A feed-forward encoder: each layer followed by DoubleReLU.
///
/// # Shapes
/// - `x`: `[B, input]` → `[B, 2 · width of the last layer]` (`x` itself with no layers)
pub fn feed_forward(layers: &[Linear], x: Tensor<2>) -> Tensor<2> {
    layers
        .iter()
        .fold(x, |h, layer| double_relu(layer.forward(h)))
}

/// Appendix F's block `B(x)`: `h1 = L1(x)`, `h3 = h1 + L2(DoubleReLU(h1))`, `DoubleReLU(h3)`.
#[derive(Module, Debug)]
pub struct ResBlock {
    /// `Linear(d_in → hidden)`.
    pub(super) l1: Linear,
    /// `Linear(2·hidden → hidden)`.
    pub(super) l2: Linear,
}

impl ResBlock {
    pub(super) fn init(rng: &mut SplitMix64, d_in: usize, hidden: usize, device: &Device) -> Self {
        Self {
            l1: init_linear(rng, d_in, hidden, true, device),
            l2: init_linear(rng, 2 * hidden, hidden, true, device),
        }
    }

    /// # Shapes
    /// - `x`: `[N, d_in]` → `[N, 2·hidden]`
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h1 = self.l1.forward(x); // [N, hidden]
        let h2 = double_relu(h1.clone()); // [N, 2·hidden]
        let h3 = h1 + self.l2.forward(h2); // [N, hidden]
        double_relu(h3) // [N, 2·hidden]
    }
}

/// An information-state head: its own `B(s)` then `Linear(num_actions)`.
#[derive(Module, Debug)]
pub struct Head {
    /// The head's block.
    pub(super) block: ResBlock,
    /// `Linear(2·head_hidden → A)`.
    pub(super) out: Linear,
}

impl Head {
    /// # Shapes
    /// - `s`: `[N, R]` → `[N, A]`
    pub fn forward(&self, s: Tensor<2>) -> Tensor<2> {
        self.out.forward(self.block.forward(s))
    }
}

/// One LSTM layer with fused gates (order `i, f, g, o`); the forget-gate bias starts at 1.
#[derive(Module, Debug)]
pub struct LstmCell {
    /// Input projection `Linear(d_in → 4H)` (carries the bias).
    pub(super) wx: Linear,
    /// Recurrent projection `Linear(H → 4H)`, no bias.
    pub(super) wh: Linear,
}

/// The recurrent state of one player's encoder for a batch of `N` sequences.
#[derive(Clone, Debug)]
pub struct LstmState {
    /// `[N, H]`
    pub hidden: Tensor<2>,
    /// `[N, H]`
    pub cell: Tensor<2>,
}

impl LstmCell {
    /// Uniform `±1/√H` for every weight and bias (PyTorch's LSTM init), forget bias 1.
    pub(super) fn init(rng: &mut SplitMix64, d_in: usize, h: usize, device: &Device) -> Self {
        let bound = 1.0 / (h as f32).sqrt();
        let wx_w = rng.symmetric_vec_f32(d_in * 4 * h, bound);
        let mut bias = rng.symmetric_vec_f32(4 * h, bound);
        bias[h..2 * h].iter_mut().for_each(|b| *b = 1.0);
        let wh_w = rng.symmetric_vec_f32(h * 4 * h, bound);
        Self {
            wx: Linear {
                weight: Param::from_data(TensorData::new(wx_w, [d_in, 4 * h]), device),
                bias: Some(Param::from_data(TensorData::new(bias, [4 * h]), device)),
            },
            wh: Linear {
                weight: Param::from_data(TensorData::new(wh_w, [h, 4 * h]), device),
                bias: None,
            },
        }
    }

    /// Hidden width `H`.
    pub fn hidden_size(&self) -> usize {
        self.wh.weight.shape().dims::<2>()[0]
    }

    /// One step from precomputed input projections.
    ///
    /// # Shapes
    /// - `gx`: `[N, 4H]` (= `wx(x_t)`), state `[N, H]` each → hidden `[N, H]`, new state
    pub(super) fn step_projected(&self, gx: Tensor<2>, state: LstmState) -> LstmState {
        let g = gx + self.wh.forward(state.hidden); // [N, 4H]
        let mut parts = g.chunk(4, 1).into_iter(); // 4 × [N, H]
        let (i, f, c, o) = (
            parts.next().expect("gate i"),
            parts.next().expect("gate f"),
            parts.next().expect("gate g"),
            parts.next().expect("gate o"),
        );
        let cell = sigmoid(f) * state.cell + sigmoid(i) * c.tanh(); // [N, H]
        let hidden = sigmoid(o) * cell.clone().tanh(); // [N, H]
        LstmState { hidden, cell }
    }
}
