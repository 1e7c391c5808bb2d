//! Plain-Rust inference of the pieces a range query needs: the encoder (one recurrent step, or
//! the feed-forward stack), the average-policy head and, for feed-forward nets, the mean-regret
//! head behind the current policy ([`PlainRangeNet`]).
//!
//! A range query of LBR pushes the same public history through the network once per hole-card
//! hand: about 1,100-1,326 rows per step, a few steps per query, thousands of queries per
//! evaluation. Through burn's tensors each step allocates a dozen intermediate tensors (chunks,
//! concatenations, DoubleReLU's two halves) and evaluates every `tanh` and sigmoid through libm;
//! the matrix products themselves are the only part that cannot shrink. Here the weights are
//! read out of the burn module once into row-major `Vec<f32>`s and a step is:
//!
//! 1. the encoder's input layer as a *sparse* product: observation rows are one-hot cards and a
//!    few bets, so each row adds only its non-zero inputs' weight rows (about 10 of 108), and
//!    the rows of a range query differ from the first one only in the hole cards (four entries);
//! 2. the LSTM's input `DoubleReLU(e) = [relu(e), relu(-e)]` folded into its weights (see
//!    [`PlainLstm`]): `relu(e)` written next to the state `h` as one row `[relu(e) | h]`, `E + H`
//!    wide instead of `2E + H`, and the part linear in `e` added from a precomputed table as
//!    another sparse sum;
//! 3. all gate pre-activations in one product of `[relu(e) | h]` by the `gemm` crate
//!    (the kernels burn's flex backend calls too, with run-time AVX2/FMA dispatch); from the
//!    zero state (the first step of every sequence) only `relu(e) · (Wp + Wn)`;
//! 4. the gates with a rational `tanh` ([`fast_tanh`], within a few float ulps of the true
//!    value) and `sigmoid(x) = (1 + tanh(x/2)) / 2`, in branch-free loops the compiler
//!    vectorises (with AVX2 when the CPU has it).
//!
//! The head `B(s)` then `Linear(A)` and the masked softmax follow the burn path line for line.
//! Sums are taken in another order than burn's, so outputs agree with [`ArmacPolicyNet`]'s
//! `encoder_step` / `avg_policy_head` / `avg_policy` to f32 rounding (about 1e-6; tests below
//! and in `tests.rs` compare both on random inputs), not bit for bit.
//!
//! Products run single-threaded ([`gemm::Parallelism::None`]): callers (LBR) already run one
//! query per worker thread.

use super::batch::check_len;
use super::config::ArmacNetConfig;
use super::config::NnError;
use super::layers::Head;
use super::layers::ResBlock;
use super::policy_net::ArmacPolicyNet;
use super::policy_net::RecurrentState;
use super::tensors::to_vec;
use crate::policy::probs::normalized_relu_into;
use burn::nn::Linear;

/// A `Linear` layer as plain data: `y = x · w + b`.
#[derive(Clone, Debug)]
struct PlainLinear {
    d_in: usize,
    d_out: usize,
    /// `[d_in, d_out]` row-major (burn's layout).
    w: Vec<f32>,
    /// `[d_out]`; zeros for a layer without bias.
    b: Vec<f32>,
}

impl PlainLinear {
    fn from_burn(linear: &Linear) -> Self {
        let [d_in, d_out] = linear.weight.dims();
        let w = to_vec(linear.weight.val());
        let b = match &linear.bias {
            Some(b) => b
                .val()
                .into_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .expect("f32 bias data"),
            None => vec![0.0; d_out],
        };
        PlainLinear { d_in, d_out, w, b }
    }

    /// Multiplies input `k`'s weight row by `factor[k]` (nothing for an empty `factor`), so
    /// that the layer reads `x ⊙ factor`.
    fn scale_inputs(&mut self, factor: &[f32]) {
        if factor.is_empty() {
            return;
        }
        assert_eq!(factor.len(), self.d_in, "one factor per input");
        for (row, &f) in self.w.chunks_exact_mut(self.d_out).zip(factor) {
            row.iter_mut().for_each(|w| *w *= f);
        }
    }

    /// `out = x · w + b` for `rows` rows (`out` resized to `rows × d_out`).
    fn forward(&self, x: &[f32], rows: usize, out: &mut Vec<f32>) {
        fill_rows(out, &self.b, rows);
        matmul(out, x, &self.w, rows, self.d_in, self.d_out);
    }

    /// [`Self::forward`] that reads only the non-zero entries of each row of `x` (one weight
    /// row added per non-zero input): cheaper for sparse inputs such as observation tensors.
    fn forward_sparse(&self, x: &[f32], rows: usize, out: &mut Vec<f32>) {
        out.clear();
        out.resize(rows * self.d_out, 0.0);
        for (xr, yr) in x
            .chunks_exact(self.d_in)
            .zip(out.chunks_exact_mut(self.d_out))
        {
            self.forward_sparse_row(xr, yr);
        }
    }

    /// One row of [`Self::forward_sparse`]: `y = x · w + b` (`x` of `d_in`, `y` of `d_out`
    /// entries).
    #[inline(always)]
    fn forward_sparse_row(&self, x: &[f32], y: &mut [f32]) {
        y.copy_from_slice(&self.b);
        for (k, &v) in x.iter().enumerate() {
            if v != 0.0 {
                let wk = &self.w[k * self.d_out..(k + 1) * self.d_out];
                for (y, &w) in y.iter_mut().zip(wk) {
                    *y += v * w;
                }
            }
        }
    }
}

/// The block `B(x)` of [`ResBlock`] as plain data.
#[derive(Clone, Debug)]
struct PlainBlock {
    l1: PlainLinear,
    l2: PlainLinear,
}

/// Reused buffers of one [`PlainBlock::forward`].
#[derive(Default)]
struct BlockScratch {
    h1: Vec<f32>,
    h2: Vec<f32>,
    h3: Vec<f32>,
}

impl PlainBlock {
    fn from_burn(block: &ResBlock) -> Self {
        PlainBlock {
            l1: PlainLinear::from_burn(&block.l1),
            l2: PlainLinear::from_burn(&block.l2),
        }
    }

    /// `out = DoubleReLU(h1 + L2(DoubleReLU(h1)))` with `h1 = L1(x)`, `rows` rows.
    fn forward(&self, x: &[f32], rows: usize, s: &mut BlockScratch, out: &mut Vec<f32>) {
        let hid = self.l1.d_out;
        self.l1.forward(x, rows, &mut s.h1); // [rows, hid]
        double_relu_rows(&s.h1, hid, &mut s.h2); // [rows, 2·hid]
        // h3 = h1 + b2 + h2 · W2
        s.h3.clear();
        s.h3.extend(
            s.h1.chunks_exact(hid)
                .flat_map(|r| r.iter().zip(&self.l2.b).map(|(a, b)| a + b)),
        );
        matmul(&mut s.h3, &s.h2, &self.l2.w, rows, 2 * hid, hid); // [rows, hid]
        double_relu_rows(&s.h3, hid, out); // [rows, 2·hid]
    }
}

/// A [`Head`] as plain data: its block, then `Linear(2·head_hidden → A)`.
#[derive(Clone, Debug)]
struct PlainHead {
    block: PlainBlock,
    out: PlainLinear,
}

impl PlainHead {
    fn from_burn(head: &Head) -> Self {
        PlainHead {
            block: PlainBlock::from_burn(&head.block),
            out: PlainLinear::from_burn(&head.out),
        }
    }

    /// The head's raw outputs (`rows × A`) for `rows` representations `rep`.
    fn forward(&self, rep: &[f32], rows: usize) -> Vec<f32> {
        let mut hb = Vec::new();
        self.block
            .forward(rep, rows, &mut BlockScratch::default(), &mut hb); // [rows, 2·hh]
        let mut out = Vec::new();
        self.out.forward(&hb, rows, &mut out); // [rows, A]
        out
    }
}

/// The recurrent encoder's LSTM as plain data (gate order `i, f, g, o`), folded with the input
/// layer before it.
///
/// The LSTM's input is `x = [relu(e), relu(-e)]` with `e = b_in + obs · W_in` (the input layer
/// before DoubleReLU), so with `Wx = [Wp; Wn]` split into the rows for both halves:
///
/// `x · Wx = relu(e) · Wp + relu(-e) · Wn = relu(e) · (Wp + Wn) - e · Wn`
///
/// because `relu(-e) = relu(e) - e`; and `e · Wn = b_in · Wn + obs · (W_in · Wn)` is linear in
/// the (sparse) observation. So the dense product needs only `E + H` columns of `[relu(e) | h]`
/// against `[Wp + Wn; Wh]` instead of `2E + H` against `[Wp; Wn; Wh]` (a quarter fewer
/// multiply-adds at the FCPA widths, half from the zero state), and the rest is a sparse sum of
/// rows of the precomputed `W_in · Wn` over the observation's few non-zero entries.
#[derive(Clone, Debug)]
struct PlainLstm {
    /// Hidden width `H`.
    h: usize,
    /// Width `E` of the input layer before DoubleReLU (the LSTM itself reads `2E`).
    e: usize,
    /// `[Wp + Wn; Wh]`, `[E + H, 4H]` row-major: one product of the row `[relu(e) | h]` gives the
    /// gate pre-activations up to the terms below.
    w: Vec<f32>,
    /// `bias - b_in · Wn`, `[4H]`.
    bias: Vec<f32>,
    /// `W_in · Wn`, `[input, 4H]`: row `k` is subtracted `obs[k]` times.
    obs_wn: Vec<f32>,
}

impl PlainLstm {
    /// Folds burn's LSTM (input projection `wx` `[2E, 4H]` with the gates' bias, recurrent
    /// projection `wh` `[H, 4H]`) with the input layer `input` (`[n_in, E]`). Products in f64,
    /// rounded once.
    fn fold(input: &PlainLinear, wx: &PlainLinear, wh: Vec<f32>, h: usize) -> Self {
        let (e, g) = (input.d_out, 4 * h);
        assert_eq!(
            wx.d_in,
            2 * e,
            "the LSTM reads DoubleReLU of the input layer"
        );
        assert_eq!((wx.d_out, wh.len()), (g, h * g), "LSTM weight shapes");
        let (wp, wn) = wx.w.split_at(e * g);
        let mut w: Vec<f32> = wp.iter().zip(wn).map(|(a, b)| a + b).collect();
        w.extend_from_slice(&wh);
        // `rows · Wn` for `rows` of `E` entries each, in f64.
        let times_wn = |rows: &[f32]| -> Vec<f32> {
            let mut out = Vec::with_capacity(rows.len() / e * g);
            let mut acc = vec![0.0f64; g];
            for r in rows.chunks_exact(e) {
                acc.fill(0.0);
                for (&v, wr) in r.iter().zip(wn.chunks_exact(g)) {
                    if v != 0.0 {
                        for (a, &x) in acc.iter_mut().zip(wr) {
                            *a += v as f64 * x as f64;
                        }
                    }
                }
                out.extend(acc.iter().map(|&a| a as f32));
            }
            out
        };
        let bias =
            wx.b.iter()
                .zip(times_wn(&input.b))
                .map(|(&b, c)| (b as f64 - c as f64) as f32)
                .collect();
        PlainLstm {
            h,
            e,
            w,
            bias,
            obs_wn: times_wn(&input.w),
        }
    }
}

/// The encoder, the average-policy head and the mean-regret head of an [`ArmacPolicyNet`],
/// copied out of burn once, with plain CPU kernels (see the module docs). Immutable and `Sync`:
/// one value serves every thread of an evaluation.
#[derive(Clone, Debug)]
pub struct PlainRangeNet {
    cfg: ArmacNetConfig,
    /// Feed-forward: every `Linear → DoubleReLU` layer. Recurrent: the input layer before the
    /// LSTM.
    encoder: Vec<PlainLinear>,
    lstm: Option<PlainLstm>,
    policy: PlainHead,
    /// The mean-regret head's own feed-forward encoder (`separate_regret_encoder`); empty when
    /// the head reads the shared representation.
    regret_encoder: Vec<PlainLinear>,
    regret: PlainHead,
}

impl PlainRangeNet {
    /// Copies the weights of `net`'s encoder, average-policy head and mean-regret head (the
    /// net itself is left as it is; later changes to it are not seen).
    pub fn new(net: &ArmacPolicyNet) -> Self {
        let m = net.model();
        let mut encoder: Vec<PlainLinear> = m.encoder.iter().map(PlainLinear::from_burn).collect();
        let mut regret_encoder: Vec<PlainLinear> = m
            .regret_encoder
            .iter()
            .map(PlainLinear::from_burn)
            .collect();
        // The input scaling folded into the first layers' weights: (x ⊙ f) · w = x · (f ⊙ w).
        for first in [encoder.first_mut(), regret_encoder.first_mut()]
            .into_iter()
            .flatten()
        {
            first.scale_inputs(&m.input_factor);
        }
        let lstm = m.lstm.as_ref().map(|l| {
            PlainLstm::fold(
                &encoder[0],
                &PlainLinear::from_burn(&l.wx),
                to_vec(l.wh.weight.val()),
                l.hidden_size(),
            )
        });
        PlainRangeNet {
            cfg: net.config().clone(),
            encoder,
            lstm,
            policy: PlainHead::from_burn(&m.avg_policy),
            regret_encoder,
            regret: PlainHead::from_burn(&m.mean_regret),
        }
    }

    /// The network's config.
    pub fn config(&self) -> &ArmacNetConfig {
        &self.cfg
    }

    /// [`ArmacPolicyNet::encoder_step`] on the plain kernels: one player's recurrent encoder
    /// advanced by one observation for `state.rows` sequences (`obs` is `rows × input`).
    /// Returns the next state; its `hidden` is the representation the heads read.
    pub fn encoder_step(
        &self,
        obs: &[f32],
        state: &RecurrentState,
    ) -> Result<RecurrentState, NnError> {
        let lstm = self.lstm.as_ref().ok_or_else(|| {
            NnError::WrongEncoder(
                "`encoder_step` needs a recurrent ARMAC net (config `recurrent = true`)".into(),
            )
        })?;
        let (b, n_in, h) = (state.rows, self.cfg.input_size, lstm.h);
        check_len("obs", obs.len(), b * n_in)?;
        check_len("state.hidden", state.hidden.len(), b * h)?;
        check_len("state.cell", state.cell.len(), b * h)?;
        if b == 0 {
            return Ok(state.clone());
        }
        let input = &self.encoder[0];
        let (e, g_width) = (lstm.e, 4 * h);
        // From the zero state (the first step of every sequence) the product reads `relu(e)`
        // only; otherwise rows `[relu(e) | h]`.
        let k = if state.hidden.iter().any(|&v| v != 0.0) {
            e + h
        } else {
            e
        };
        let mut next = RecurrentState {
            rows: b,
            hidden: vec![0.0; b * h],
            cell: vec![0.0; b * h],
        };
        STEP_SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let StepScratch { xh, g } = &mut *scratch;
            // Every entry of both is written below before it is read.
            xh.resize(b * k, 0.0);
            g.resize(b * g_width, 0.0);
            let avx2 = has_avx2();
            if avx2 {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the CPU runs AVX2 and FMA (`has_avx2`).
                unsafe {
                    step_rows_avx2(input, lstm, obs, &state.hidden, k, xh, g)
                };
            } else {
                step_rows(input, lstm, obs, &state.hidden, k, xh, g);
            }
            matmul_strided(g, xh, k, &lstm.w[..k * g_width], b, k, g_width);
            let (hn, cn) = (&mut next.hidden, &mut next.cell);
            if avx2 {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above.
                unsafe {
                    lstm_gates_avx2(g, &state.cell, hn, cn, h)
                };
            } else {
                lstm_gates(g, &state.cell, hn, cn, h);
            }
        });
        Ok(next)
    }

    /// [`ArmacPolicyNet::avg_policy_head`] on the plain kernels: the average-policy head's
    /// softmax over the legal actions for `rows` representations `rep` (`rows × R`), `legal`
    /// being `rows × A` (1.0 legal). Returns `rows × A` probabilities.
    pub fn avg_policy_head(
        &self,
        rep: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, NnError> {
        let (a, r) = (self.cfg.num_actions, self.cfg.representation_size());
        check_len("rep", rep.len(), rows * r)?;
        check_len("legal", legal.len(), rows * a)?;
        let mut logits = self.policy.forward(rep, rows); // [rows, A]
        for (lr, mask) in logits.chunks_exact_mut(a).zip(legal.chunks_exact(a)) {
            masked_softmax(lr, mask);
        }
        Ok(logits)
    }

    /// [`ArmacPolicyNet::avg_policy`] on the plain kernels (feed-forward nets): the
    /// average-policy head on `rows` information-state tensors `info` (`rows × input`) with
    /// legal masks `legal` (`rows × A`). Returns `rows × A` probabilities.
    pub fn avg_policy(
        &self,
        info: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, NnError> {
        self.check_feed_forward("avg_policy", info, legal, rows)?;
        let rep = feed_forward_plain(&self.encoder, info, rows);
        self.avg_policy_head(&rep, legal, rows)
    }

    /// The current policy `π^t` on the plain kernels (feed-forward nets): regret matching
    /// ([`normalized_relu_into`]) on the mean-regret head, as `ActOutput::current_policy` of
    /// [`ArmacPolicyNet::evaluate`] computes it, for `rows` information-state tensors `info`
    /// (`rows × input`) with legal masks `legal` (`rows × A`). Only the encoder the head reads
    /// and the head itself run (no critic). Returns `rows × A` probabilities.
    pub fn current_policy(
        &self,
        info: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, NnError> {
        self.check_feed_forward("current_policy", info, legal, rows)?;
        let a = self.cfg.num_actions;
        let encoder = if self.regret_encoder.is_empty() {
            &self.encoder
        } else {
            &self.regret_encoder
        };
        let rep = feed_forward_plain(encoder, info, rows);
        let w = self.regret.forward(&rep, rows); // [rows, A]
        let mut out = vec![0.0; rows * a];
        let mut mask = vec![false; a];
        for ((wr, lr), or) in w
            .chunks_exact(a)
            .zip(legal.chunks_exact(a))
            .zip(out.chunks_exact_mut(a))
        {
            for (m, &l) in mask.iter_mut().zip(lr) {
                *m = l > 0.0;
            }
            normalized_relu_into(wr, &mask, or);
        }
        Ok(out)
    }

    /// Refuses a recurrent net or inputs of the wrong length for the feed-forward queries.
    fn check_feed_forward(
        &self,
        what: &str,
        info: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<(), NnError> {
        if self.lstm.is_some() {
            return Err(NnError::WrongEncoder(format!(
                "`{what}` needs a feed-forward ARMAC net (config `recurrent = false`)"
            )));
        }
        check_len("info", info.len(), rows * self.cfg.input_size)?;
        check_len("legal", legal.len(), rows * self.cfg.num_actions)
    }
}

/// A feed-forward stack of `Linear → DoubleReLU` layers on `rows` rows of `x` (the first layer
/// read sparsely: information-state tensors are mostly zeros).
fn feed_forward_plain(layers: &[PlainLinear], x: &[f32], rows: usize) -> Vec<f32> {
    let mut x = x.to_vec();
    let (mut y, mut e) = (Vec::new(), Vec::new());
    for (k, layer) in layers.iter().enumerate() {
        if k == 0 {
            layer.forward_sparse(&x, rows, &mut e);
        } else {
            layer.forward(&x, rows, &mut e);
        }
        double_relu_rows(&e, layer.d_out, &mut y);
        std::mem::swap(&mut x, &mut y);
    }
    x
}

/// Reused buffers of [`PlainRangeNet::encoder_step`] (one per thread): the rows `[relu(e) | h]`
/// and the gate pre-activations, a few MB each at 1326 rows, would otherwise be fresh pages
/// (page faults and zeroing) at every step.
#[derive(Default)]
struct StepScratch {
    xh: Vec<f32>,
    g: Vec<f32>,
}

thread_local! {
    static STEP_SCRATCH: std::cell::RefCell<StepScratch> = std::cell::RefCell::default();
}

/// Whether the CPU runs AVX2 and FMA (detected once): the row loops below then run through
/// copies compiled for them, which vectorise eight floats wide. Rust never fuses a multiply and
/// an add on its own, so both copies give the same floats.
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`step_rows`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn step_rows_avx2(
    input: &PlainLinear,
    lstm: &PlainLstm,
    obs: &[f32],
    hidden: &[f32],
    k: usize,
    xh: &mut [f32],
    g: &mut [f32],
) {
    step_rows(input, lstm, obs, hidden, k, xh, g)
}

/// [`lstm_gates`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn lstm_gates_avx2(
    g: &[f32],
    cell: &[f32],
    hidden_out: &mut [f32],
    cell_out: &mut [f32],
    h: usize,
) {
    lstm_gates(g, cell, hidden_out, cell_out, h)
}

/// The rows of one encoder step before its product: row `r` of `xh` (`k` wide) becomes
/// `[relu(e_r) | h_r]` (only `relu(e_r)` when `k` is the input layer's width `E`), with
/// `e_r = b_in + obs_r · W_in`, and row `r` of `g` (`4H` wide) becomes
/// `bias' - obs_r · (W_in · Wn)` (see [`PlainLstm`]).
///
/// Both are linear in the observation, and the rows of a range query differ only in the hole
/// cards: the first row's sums are taken over its non-zero entries, every other row starts from
/// them and adds only the entries where its observation differs from the first row's (four
/// for two other hole cards).
#[inline(always)]
fn step_rows(
    input: &PlainLinear,
    lstm: &PlainLstm,
    obs: &[f32],
    hidden: &[f32],
    k: usize,
    xh: &mut [f32],
    g: &mut [f32],
) {
    let (n_in, e, h, gw) = (input.d_in, lstm.e, lstm.h, 4 * lstm.h);
    let Some(o0) = obs.get(..n_in) else {
        return;
    };
    let mut e0 = vec![0.0f32; e];
    input.forward_sparse_row(o0, &mut e0);
    let mut g0 = lstm.bias.clone();
    for (j, &v) in o0.iter().enumerate() {
        if v != 0.0 {
            axpy(&mut g0, -v, &lstm.obs_wn[j * gw..(j + 1) * gw]);
        }
    }
    for (r, ((xr, o), gr)) in xh
        .chunks_exact_mut(k)
        .zip(obs.chunks_exact(n_in))
        .zip(g.chunks_exact_mut(gw))
        .enumerate()
    {
        let (er, hr) = xr.split_at_mut(e);
        er.copy_from_slice(&e0);
        gr.copy_from_slice(&g0);
        for (j, (&v, &v0)) in o.iter().zip(o0).enumerate() {
            if v != v0 {
                let d = v - v0;
                axpy(er, d, &input.w[j * e..(j + 1) * e]);
                axpy(gr, -d, &lstm.obs_wn[j * gw..(j + 1) * gw]);
            }
        }
        for v in er.iter_mut() {
            *v = v.max(0.0);
        }
        if k > e {
            hr.copy_from_slice(&hidden[r * h..(r + 1) * h]);
        }
    }
}

/// `y += a · x`.
#[inline(always)]
fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// The LSTM cell on gate pre-activations `g` (rows of `i, f, g, o`, each `h` wide): the next
/// cell `c' = σ(f)·c + σ(i)·tanh(g)` and hidden `h' = σ(o)·tanh(c')` of every row.
#[inline(always)]
fn lstm_gates(g: &[f32], cell: &[f32], hidden_out: &mut [f32], cell_out: &mut [f32], h: usize) {
    for (((gr, c_old), h_new), c_new) in g
        .chunks_exact(4 * h)
        .zip(cell.chunks_exact(h))
        .zip(hidden_out.chunks_exact_mut(h))
        .zip(cell_out.chunks_exact_mut(h))
    {
        let (i, rest) = gr.split_at(h);
        let (f, rest) = rest.split_at(h);
        let (gg, o) = rest.split_at(h);
        for j in 0..h {
            let c = fast_sigmoid(f[j]) * c_old[j] + fast_sigmoid(i[j]) * fast_tanh(gg[j]);
            c_new[j] = c;
            h_new[j] = fast_sigmoid(o[j]) * fast_tanh(c);
        }
    }
}

/// `out` becomes `rows` copies of `row`.
fn fill_rows(out: &mut Vec<f32>, row: &[f32], rows: usize) {
    out.clear();
    out.reserve(rows * row.len());
    for _ in 0..rows {
        out.extend_from_slice(row);
    }
}

/// Row-wise `DoubleReLU`: each `width`-wide row `x` of `src` becomes `relu(x), relu(−x)` in
/// `out` (resized to twice `src`'s length).
fn double_relu_rows(src: &[f32], width: usize, out: &mut Vec<f32>) {
    out.clear();
    out.resize(2 * src.len(), 0.0);
    for (xr, yr) in src.chunks_exact(width).zip(out.chunks_exact_mut(2 * width)) {
        let (pos, neg) = yr.split_at_mut(width);
        for ((p, n), &v) in pos.iter_mut().zip(neg.iter_mut()).zip(xr) {
            *p = v.max(0.0);
            *n = (-v).max(0.0);
        }
    }
}

/// Softmax of `logits` over the entries where `legal` is positive, in place; illegal entries
/// become exactly 0 (burn's path gives `exp(-1e9)`, also 0).
fn masked_softmax(logits: &mut [f32], legal: &[f32]) {
    let mut max = f32::NEG_INFINITY;
    for (&l, &m) in logits.iter().zip(legal) {
        if m > 0.0 {
            max = max.max(l);
        }
    }
    let mut total = 0.0f32;
    for (l, &m) in logits.iter_mut().zip(legal) {
        *l = if m > 0.0 { (*l - max).exp() } else { 0.0 };
        total += *l;
    }
    if total > 0.0 {
        for l in logits.iter_mut() {
            *l /= total;
        }
    }
}

/// `c += a · b` for row-major `a: [m, k]`, `b: [k, n]`, `c: [m, n]`. Single-threaded.
///
/// # Panics
/// If a slice's length does not match its shape.
fn matmul(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    assert_eq!(a.len(), m * k, "matmul: lhs is not {m}×{k}");
    matmul_strided(c, a, k, b, m, k, n);
}

/// `c += a · b` for row-major `b: [k, n]`, `c: [m, n]` and `a` an `m × k` matrix whose rows
/// start `lda` entries apart (the first `k` columns of a wider row-major matrix when
/// `lda > k`). Single-threaded.
///
/// # Panics
/// If `lda < k` or a slice is too short for its shape.
fn matmul_strided(c: &mut [f32], a: &[f32], lda: usize, b: &[f32], m: usize, k: usize, n: usize) {
    assert!(lda >= k, "matmul: row stride {lda} below {k} columns");
    assert!(
        m == 0 || a.len() >= (m - 1) * lda + k,
        "matmul: lhs too short for {m}×{k} rows {lda} apart"
    );
    assert_eq!(b.len(), k * n, "matmul: rhs is not {k}×{n}");
    assert_eq!(c.len(), m * n, "matmul: dst is not {m}×{n}");
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // SAFETY: the asserts above make `a`, `b` and `c` row-major `m×k`, `k×n` and `m×n` matrices
    // (column stride 1, row strides `lda`, `n`, `n`; the last entry of `a` read is
    // `(m-1)·lda + k - 1`, inside the slice), so every address `gemm` forms lies inside its
    // slice; `c` is borrowed mutably and so overlaps neither input; `gemm` keeps no pointer
    // after it returns.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            true,
            a.as_ptr(),
            1,
            lda as isize,
            b.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// `tanh(x)` as a rational function of degree 13 / 6 on `x` clamped to `±7.9053` (beyond which
/// `tanh` rounds to `±1` in f32): the minimax coefficients that Eigen's `fast_tanh` uses.
/// Branch-free, so loops over it vectorise. Absolute error below `1e-6` (test below).
#[inline(always)]
pub fn fast_tanh(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619_3e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768_5e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_6e-3;
    const B4: f32 = 1.185_347e-4;
    const B6: f32 = 1.198_258_4e-6;
    let x = x.clamp(-CLAMP, CLAMP);
    let x2 = x * x;
    let p = x * (A1 + x2 * (A3 + x2 * (A5 + x2 * (A7 + x2 * (A9 + x2 * (A11 + x2 * A13))))));
    let q = B0 + x2 * (B2 + x2 * (B4 + x2 * B6));
    p / q
}

/// `sigmoid(x) = (1 + tanh(x / 2)) / 2` through [`fast_tanh`].
#[inline(always)]
pub fn fast_sigmoid(x: f32) -> f32 {
    0.5 + 0.5 * fast_tanh(0.5 * x)
}

#[cfg(test)]
#[path = "plain_tests.rs"]
mod unit;
