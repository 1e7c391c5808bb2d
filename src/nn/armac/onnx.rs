//! The policy a feed-forward ARMAC network plays, as an ONNX graph
//! ([`ArmacPolicyNet::to_onnx`]): from an information-state tensor and a legal-action mask to
//! the probabilities armac plays, the same numbers as
//! `ArmacAveragePolicy::tensor_probabilities` up to f32 rounding.
//!
//! The graph, for `N` rows (`A` actions):
//!
//! 1. `x ⊙ (1 / input_scale)` (the config's `input_scale`; left out when it is empty);
//! 2. the encoder (`MatMul → Add → DoubleReLU` per layer; the mean-regret head's own encoder
//!    when the net has one and the current policy is asked for) and the head's block
//!    `B(s)` then `Linear(A)`, with `DoubleReLU(x) = Concat(Relu(x), Relu(Neg(x)))`;
//! 3. the head's probabilities in f32: the average policy's softmax over the legal actions
//!    (logits at illegal actions replaced by [`ILLEGAL_LOGIT`](super::ILLEGAL_LOGIT) first,
//!    as `mask_logits` does), or the current policy's positive parts of the mean-regret head
//!    at the legal actions;
//! 4. in f64, as the policy does it: renormalised over the legal actions, uniform over them
//!    where the head gives them no mass (regret matching with no positive regret);
//! 5. with a threshold `t > 0`: actions below `t` set to 0 and the rest renormalised; where no
//!    action reaches `t`, the most likely one alone (the last of equal ones, as Rust's
//!    `max_by` picks it), as [`threshold_probs`](crate::rl::armac::policy::threshold_probs);
//! 6. cast to f32.
//!
//! A row with no legal action has no defined answer (armac refuses it; the graph gives NaN).
//! Recurrent networks are refused (see [`ArmacPolicyNet::to_onnx`]).

use super::ILLEGAL_LOGIT;
use super::config::NnError;
use super::layers::{Head, ResBlock};
use super::policy_net::ArmacPolicyNet;
use super::tensors::to_vec;
use crate::nn::onnx::proto::DataType;
use crate::nn::onnx::{Dim, GraphBuilder, attr_int, encode};
use burn::nn::Linear;

/// The name of the graph's information-state input: float `[N, input_size]`.
pub const ONNX_INPUT_INFO_STATE: &str = "info_state";
/// The name of the graph's legal-action input: float `[N, num_actions]`, 1 where the action is
/// legal and 0 where not (any positive value counts as legal).
pub const ONNX_INPUT_LEGAL_MASK: &str = "legal_mask";
/// The name of the graph's output: float `[N, num_actions]` probabilities, 0 at illegal
/// actions, summing to 1 over each row's legal actions.
pub const ONNX_OUTPUT_PROBABILITIES: &str = "probabilities";

/// Which head's policy a graph plays and how (see [`ArmacPolicyNet::to_onnx`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OnnxPolicy {
    /// `false`: the average policy `π̄` (softmax of the average-policy head); `true`: the
    /// current policy `π^t` (regret matching on the mean-regret head).
    pub current: bool,
    /// Actions below this probability are dropped and the rest renormalised; 0 keeps the
    /// head's probabilities. In `[0, 1)`.
    pub threshold: f64,
    /// Key-value strings written into the model's metadata (game, epoch, ...).
    pub metadata: Vec<(String, String)>,
}

impl ArmacPolicyNet {
    /// The ONNX model (protobuf bytes, opset [`crate::nn::onnx::OPSET`]) of the policy `spec`
    /// names: inputs [`ONNX_INPUT_INFO_STATE`] and [`ONNX_INPUT_LEGAL_MASK`], output
    /// [`ONNX_OUTPUT_PROBABILITIES`] (see the module docs for the graph).
    ///
    /// Refuses a recurrent network ([`NnError::WrongEncoder`]): it reads a history as the
    /// sequence of its observations through an LSTM, not one information-state tensor, so its
    /// graph would need a padded sequence input with per-row lengths, which is not written.
    /// Refuses a threshold outside `[0, 1)` ([`NnError::Config`]).
    pub fn to_onnx(&self, spec: &OnnxPolicy) -> Result<Vec<u8>, NnError> {
        if self.cfg.recurrent {
            return Err(NnError::WrongEncoder(
                "ONNX export covers feed-forward ARMAC networks only: this network is recurrent \
                 (it reads a history as the sequence of its observations through an LSTM, not \
                 one information-state tensor, so its graph would need a padded sequence input \
                 with per-row lengths, which the exporter does not write)"
                    .into(),
            ));
        }
        if !(0.0..1.0).contains(&spec.threshold) {
            return Err(NnError::Config(format!(
                "play threshold {} is outside [0, 1)",
                spec.threshold
            )));
        }
        let (n_in, a) = (self.cfg.input_size, self.cfg.num_actions);
        let m = &self.model;
        let mut g = GraphBuilder::new();
        let rows = Dim::Named("N");
        let x = g.input(
            ONNX_INPUT_INFO_STATE,
            DataType::Float,
            &[rows, Dim::Fixed(n_in)],
        );
        let legal_in = g.input(
            ONNX_INPUT_LEGAL_MASK,
            DataType::Float,
            &[rows, Dim::Fixed(a)],
        );
        let x = if m.input_factor.is_empty() {
            x
        } else {
            let f = g.constant_f32("input_factor", &[n_in], &m.input_factor);
            g.op("Mul", &[&x, &f], Vec::new())
        };
        // The head's raw outputs [N, A].
        let raw = if spec.current {
            let (layers, name) = if m.regret_encoder.is_empty() {
                (&m.encoder, "encoder")
            } else {
                (&m.regret_encoder, "regret_encoder")
            };
            let s = encoder(&mut g, &x, layers, name);
            head(&mut g, &s, &m.mean_regret, "mean_regret")
        } else {
            let s = encoder(&mut g, &x, &m.encoder, "encoder");
            head(&mut g, &s, &m.avg_policy, "avg_policy")
        };
        let zero_f = g.constant_f32("zero_f32", &[], &[0.0]);
        let legal = g.op("Greater", &[&legal_in, &zero_f], Vec::new()); // bool [N, A]
        let axes = g.constant_i64("axis_1", &[1], &[1]);
        // The head's probabilities (f32, zero at illegal actions).
        let head_probs = if spec.current {
            let pos = g.op("Relu", &[&raw], Vec::new());
            let legal_f = g.op(
                "Cast",
                &[&legal],
                vec![attr_int("to", DataType::Float as i64)],
            );
            g.op("Mul", &[&pos, &legal_f], Vec::new())
        } else {
            let illegal = g.constant_f32("illegal_logit", &[], &[ILLEGAL_LOGIT]);
            let masked = g.op("Where", &[&legal, &raw, &illegal], Vec::new());
            g.op("Softmax", &[&masked], vec![attr_int("axis", 1)])
        };
        // In f64 from here: renormalised over the legal actions, uniform where no mass.
        let to_f64 = || vec![attr_int("to", DataType::Double as i64)];
        let p = g.op("Cast", &[&head_probs], to_f64());
        let legal_d = g.op("Cast", &[&legal], to_f64());
        let p = g.op("Mul", &[&p, &legal_d], Vec::new());
        let total = reduce_sum(&mut g, &p, &axes);
        let zero_d = g.constant_f64("zero_f64", &[], &[0.0]);
        let has_mass = g.op("Greater", &[&total, &zero_d], Vec::new());
        let normalised = g.op("Div", &[&p, &total], Vec::new());
        let count = reduce_sum(&mut g, &legal_d, &axes);
        let uniform = g.op("Div", &[&legal_d, &count], Vec::new());
        let mut p = g.op("Where", &[&has_mass, &normalised, &uniform], Vec::new());
        if spec.threshold > 0.0 {
            let t = g.constant_f64("play_threshold", &[], &[spec.threshold]);
            let keep = g.op("GreaterOrEqual", &[&p, &t], Vec::new());
            let kept = g.op("Where", &[&keep, &p, &zero_d], Vec::new());
            let kept_total = reduce_sum(&mut g, &kept, &axes);
            let any_kept = g.op("Greater", &[&kept_total, &zero_d], Vec::new());
            let renormalised = g.op("Div", &[&kept, &kept_total], Vec::new());
            let best = g.op(
                "ArgMax",
                &[&p],
                vec![
                    attr_int("axis", 1),
                    attr_int("keepdims", 1),
                    attr_int("select_last_index", 1),
                ],
            ); // int64 [N, 1]
            let ids: Vec<i64> = (0..a as i64).collect();
            let ids = g.constant_i64("action_ids", &[a], &ids);
            let is_best = g.op("Equal", &[&best, &ids], Vec::new());
            let one_hot = g.op("Cast", &[&is_best], to_f64());
            p = g.op("Where", &[&any_kept, &renormalised, &one_hot], Vec::new());
        }
        let out = g.op("Cast", &[&p], vec![attr_int("to", DataType::Float as i64)]);
        g.output(
            &out,
            ONNX_OUTPUT_PROBABILITIES,
            DataType::Float,
            &[rows, Dim::Fixed(a)],
        );
        let which = if spec.current { "current" } else { "average" };
        let doc = format!(
            "ARMAC {which} policy: `{ONNX_INPUT_INFO_STATE}` float [N, {n_in}] (the acting \
             player's information-state tensor) and `{ONNX_INPUT_LEGAL_MASK}` float [N, {a}] \
             (1 legal, 0 illegal) to `{ONNX_OUTPUT_PROBABILITIES}` float [N, {a}]; play \
             threshold {}",
            spec.threshold
        );
        Ok(encode(&g.finish(
            &format!("armac_{which}_policy"),
            &doc,
            &spec.metadata,
        )))
    }
}

/// `ReduceSum` over axis 1 keeping it (`[N, A]` → `[N, 1]`); `axes` is the constant `[1]`.
fn reduce_sum(g: &mut GraphBuilder, x: &str, axes: &str) -> String {
    g.op("ReduceSum", &[x, axes], vec![attr_int("keepdims", 1)])
}

/// `x · W + b` with the layer's weights as constants `<name>.weight` / `<name>.bias`.
fn linear(g: &mut GraphBuilder, x: &str, layer: &Linear, name: &str) -> String {
    let [d_in, d_out] = layer.weight.dims();
    let w = to_vec(layer.weight.val());
    let w = g.constant_f32(&format!("{name}.weight"), &[d_in, d_out], &w);
    let y = g.op("MatMul", &[x, &w], Vec::new());
    match &layer.bias {
        Some(b) => {
            let b = to_vec(b.val().reshape([1, d_out]));
            let b = g.constant_f32(&format!("{name}.bias"), &[d_out], &b);
            g.op("Add", &[&y, &b], Vec::new())
        }
        None => y,
    }
}

/// `DoubleReLU(x) = concat(relu(x), relu(−x))` along axis 1.
fn double_relu(g: &mut GraphBuilder, x: &str) -> String {
    let pos = g.op("Relu", &[x], Vec::new());
    let neg = g.op("Neg", &[x], Vec::new());
    let neg = g.op("Relu", &[&neg], Vec::new());
    g.op("Concat", &[&pos, &neg], vec![attr_int("axis", 1)])
}

/// The feed-forward encoder: `Linear → DoubleReLU` per layer.
fn encoder(g: &mut GraphBuilder, x: &str, layers: &[Linear], name: &str) -> String {
    let mut h = x.to_string();
    for (k, layer) in layers.iter().enumerate() {
        let e = linear(g, &h, layer, &format!("{name}.{k}"));
        h = double_relu(g, &e);
    }
    h
}

/// The block `B(x)`: `h1 = L1(x)`, `DoubleReLU(h1 + L2(DoubleReLU(h1)))`.
fn block(g: &mut GraphBuilder, x: &str, b: &ResBlock, name: &str) -> String {
    let h1 = linear(g, x, &b.l1, &format!("{name}.l1"));
    let h2 = double_relu(g, &h1);
    let l2 = linear(g, &h2, &b.l2, &format!("{name}.l2"));
    let h3 = g.op("Add", &[&h1, &l2], Vec::new());
    double_relu(g, &h3)
}

/// A head: its block, then `Linear(A)`.
fn head(g: &mut GraphBuilder, s: &str, h: &Head, name: &str) -> String {
    let hb = block(g, s, &h.block, &format!("{name}.block"));
    linear(g, &hb, &h.out, &format!("{name}.out"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::armac::ArmacNetConfig;
    use crate::nn::onnx::proto::ModelProto;
    use prost::Message;

    fn ops(bytes: &[u8]) -> Vec<String> {
        let model = ModelProto::decode(bytes).expect("decodes");
        let graph = model.graph.expect("graph");
        graph.node.into_iter().map(|n| n.op_type).collect()
    }

    #[test]
    fn recurrent_networks_are_refused_with_the_reason() {
        let cfg = ArmacNetConfig::new(5, 3)
            .with_encoder_hidden(4)
            .with_head_hidden(4)
            .with_recurrent(true);
        let net = ArmacPolicyNet::init(cfg, 1).expect("net");
        let err = net.to_onnx(&OnnxPolicy::default()).unwrap_err().to_string();
        assert!(err.contains("recurrent") && err.contains("LSTM"), "{err}");
    }

    #[test]
    fn the_graph_has_the_scaling_the_head_and_the_threshold_it_is_asked_for() {
        let cfg = ArmacNetConfig::new(5, 3)
            .with_encoder_hidden(4)
            .with_head_hidden(4)
            .with_input_scale(vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let net = ArmacPolicyNet::init(cfg, 1).expect("net");
        let avg = ops(&net.to_onnx(&OnnxPolicy::default()).expect("average"));
        assert_eq!(avg[0], "Mul", "input scaling first");
        assert!(avg.contains(&"Softmax".to_string()));
        assert!(!avg.contains(&"ArgMax".to_string()), "no threshold at 0");
        let spec = OnnxPolicy {
            current: true,
            threshold: 0.2,
            metadata: Vec::new(),
        };
        let cur = ops(&net.to_onnx(&spec).expect("current"));
        assert!(!cur.contains(&"Softmax".to_string()));
        assert!(cur.contains(&"GreaterOrEqual".to_string()) && cur.contains(&"ArgMax".to_string()));
        let bad = OnnxPolicy {
            threshold: 1.0,
            ..OnnxPolicy::default()
        };
        assert!(net.to_onnx(&bad).is_err());
    }
}
