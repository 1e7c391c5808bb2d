//! Search evaluators backed by a CVPN: [`CvpnLeaves`] for a public tree's frontier queries
//! (with the optional [`zero_sum_correct`]ion) and [`CvpnPokerLeaves`] for factored Hold'em
//! subgames.

use super::CvpnForward;
use crate::games::universal_poker::UniversalPokerState;
use crate::nn::armac::NnError;
use crate::nn::public::factored::PokerLeaves;
use crate::nn::public::showdown::HandSweep;
use crate::search::{LeafValues, Pbs, PbsEncoder, SearchError};
use crate::tree::poker::PokerLayout;

/// A [`LeafValues`] evaluator backed by a CVPN: every query of one call goes through one
/// forward pass.
pub struct CvpnLeaves<'a> {
    /// The network.
    pub net: &'a dyn CvpnForward,
    /// The encoder of the network's game.
    pub encoder: &'a mut PbsEncoder,
    /// Queries answered so far.
    pub queries: u64,
    /// Forward passes so far.
    pub forwards: u64,
    /// The most queries one value forward carried.
    pub max_batch: usize,
    /// Wall-clock seconds spent encoding queries, in the network's forward passes (tensor
    /// creation and read-back included) and decoding its outputs into CFVs.
    pub encode_seconds: f64,
    pub forward_seconds: f64,
    pub decode_seconds: f64,
    /// Apply the zero-sum correction to every answer ([`zero_sum_correct`]).
    pub zero_sum: bool,
}

impl<'a> CvpnLeaves<'a> {
    /// An evaluator over `net` and `encoder` (of the same game).
    pub fn new(net: &'a dyn CvpnForward, encoder: &'a mut PbsEncoder) -> Self {
        CvpnLeaves {
            net,
            encoder,
            queries: 0,
            forwards: 0,
            max_batch: 0,
            encode_seconds: 0.0,
            forward_seconds: 0.0,
            decode_seconds: 0.0,
            zero_sum: false,
        }
    }

    /// With `on`, answers get the zero-sum correction ([`zero_sum_correct`]).
    pub fn with_zero_sum(mut self, on: bool) -> Self {
        self.zero_sum = on;
        self
    }
}

/// The zero-sum correction of a CVPN answer (as in DeepStack): in a two-player zero-sum game
/// the players' range-weighted CFVs cancel, `Σ_x r_0(x)·v_0(x) + Σ_y r_1(y)·v_1(y) = 0` (both
/// are the expected payoff of the PBS with opposite signs), which a network's answer misses by
/// some error `E`. Each player's normalised values (CFV over the opponent's chance-weighted
/// mass `m_i`) are shifted by the same constant `E / 2M`, i.e. `v_i(x) −= m_i(x)·E / 2M` with
/// `M = Σ_x r_0(x)·m_0(x) = Σ_y r_1(y)·m_1(y)` (the PBS's chance-weighted joint mass), which
/// removes `E` exactly and leaves states the opponent cannot reach at 0. Nothing changes where
/// `M = 0` (then `E = 0` already). `ranges` are the query's (entries past a vector's end
/// count as 0), `mass` the encoder's opponent masses.
pub fn zero_sum_correct(ranges: &[Vec<f64>; 2], mass: &[Vec<f64>; 2], values: &mut [Vec<f64>; 2]) {
    let dot = |r: &[f64], v: &[f64]| -> f64 { r.iter().zip(v).map(|(a, b)| a.max(0.0) * b).sum() };
    let joint = dot(&ranges[0], &mass[0]);
    if joint <= 0.0 {
        return;
    }
    let error = dot(&ranges[0], &values[0]) + dot(&ranges[1], &values[1]);
    let shift = error / (2.0 * joint);
    for (v, m) in values.iter_mut().zip(mass) {
        for (x, m) in v.iter_mut().zip(m) {
            *x -= shift * m;
        }
    }
}

impl LeafValues for CvpnLeaves<'_> {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let t = std::time::Instant::now();
        let encoded = queries
            .iter()
            .map(|q| self.encoder.encode(q))
            .collect::<Result<Vec<_>, _>>()?;
        let input: Vec<f32> = encoded
            .iter()
            .flat_map(|e| e.input.iter().copied())
            .collect();
        let t1 = std::time::Instant::now();
        let values = self
            .net
            .predict_values(&input)
            .map_err(|e| SearchError::Leaf(format!("CVPN forward: {e}")))?;
        let t2 = std::time::Instant::now();
        self.forwards += 1;
        self.queries += queries.len() as u64;
        self.max_batch = self.max_batch.max(queries.len());
        let w = 2 * self.encoder.private_states();
        let out = queries
            .iter()
            .zip(&encoded)
            .zip(values.chunks_exact(w))
            .map(|((q, e), out)| {
                let mut v = self.encoder.decode(q, e, out);
                if self.zero_sum {
                    zero_sum_correct(&q.ranges, &e.mass, &mut v);
                }
                v
            })
            .collect();
        self.encode_seconds += (t1 - t).as_secs_f64();
        self.forward_seconds += (t2 - t1).as_secs_f64();
        self.decode_seconds += t2.elapsed().as_secs_f64();
        Ok(out)
    }

    /// The policy head's distribution over each infoset's legal actions at the node of `q`
    /// (softmax of the logits of those action ids), in the infosets' row order.
    fn policy_prior(
        &mut self,
        q: &Pbs,
        player: crate::game::Player,
    ) -> Result<Option<Vec<Vec<f64>>>, SearchError> {
        let tree = self.encoder.tree().clone();
        let Some(pn) = tree.nodes.get(q.node as usize) else {
            return Err(SearchError::Leaf(format!(
                "public node {} does not exist",
                q.node
            )));
        };
        let enc = self.encoder.encode(q)?;
        let (_, logits) = self
            .net
            .predict(&enc.input)
            .map_err(|e| SearchError::Leaf(format!("CVPN forward: {e}")))?;
        self.forwards += 1;
        let a = self.net.config().num_actions;
        let inf = &tree.infosets[player];
        let p = q.ranges[player].len().max(self.encoder.private_states());
        let mut rows = vec![Vec::new(); p];
        for g in pn.infoset_range.0..pn.infoset_range.1 {
            let g = g as usize;
            let x = inf.private[g] as usize;
            if x >= self.encoder.private_states() || x >= rows.len() {
                continue;
            }
            let z: Vec<f64> = inf.actions[inf.range(g)]
                .iter()
                .map(|&id| f64::from(logits[x * a + id]))
                .collect();
            let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
            let total: f64 = e.iter().sum();
            rows[x] = e.iter().map(|v| v / total).collect();
        }
        Ok(Some(rows))
    }
}

/// A [`PokerLeaves`] evaluator backed by a CVPN, for factored Hold'em subgames
/// ([`PokerLayout`]): one forward for all leaves of a call.
///
/// Input per leaf, as [`crate::search::features`] defines it: `[public tensor | belief_0 |
/// belief_1]` with the leaf's public state tensor and `P = C(D, 2)` hands per player; a belief
/// is the reach of the hands possible on the leaf's board, normalised (every compatible deal is
/// equally likely, so the chance marginal is uniform over those hands). Outputs are decoded
/// with the opponent's chance-weighted mass `weight(leaf) · Σ_y compatible r_opp(y)` and the
/// game's largest absolute payoff.
pub struct CvpnPokerLeaves<N: CvpnForward> {
    net: N,
    /// The layout nodes it values (the depth-limit leaves, or any nodes of
    /// [`CvpnPokerLeaves::at_nodes`]).
    nodes: Vec<u32>,
    /// Per leaf (in [`PokerLayout::leaves`] order): its public tensor.
    publics: Vec<Vec<f32>>,
    /// Per leaf: fold sums on its board (the opponent masses).
    sweeps: Vec<HandSweep>,
    scale: f64,
}

impl<N: CvpnForward> CvpnPokerLeaves<N> {
    /// An evaluator for the leaves of `layout`, built from `source`; refuses a network of
    /// another game or size, naming the mismatch.
    pub fn new(
        net: N,
        layout: &PokerLayout,
        source: &UniversalPokerState,
    ) -> Result<CvpnPokerLeaves<N>, NnError> {
        let leaves = layout.leaves();
        Self::at_nodes(net, layout, source, leaves)
    }

    /// As [`CvpnPokerLeaves::new`] for any `nodes` of `layout` (e.g. the root of a new
    /// betting round, whose values continual re-solving needs): `evaluate` then takes those
    /// nodes in that order.
    pub fn at_nodes(
        net: N,
        layout: &PokerLayout,
        source: &UniversalPokerState,
        nodes: Vec<u32>,
    ) -> Result<CvpnPokerLeaves<N>, NnError> {
        let cfg = net.config();
        let p = layout.num_hands();
        if let Some(&n) = nodes.iter().find(|&&n| n as usize >= layout.len()) {
            return Err(NnError::Config(format!(
                "node {n} is not in the subgame ({} nodes)",
                layout.len()
            )));
        }
        if cfg.game != layout.game {
            return Err(NnError::Config(format!(
                "the CVPN was built for `{}`, the subgame is of `{}`",
                cfg.game, layout.game
            )));
        }
        if cfg.private_states != p {
            return Err(NnError::Config(format!(
                "the CVPN has {} private states per player; the subgame has {p} hands",
                cfg.private_states
            )));
        }
        let leaves = nodes;
        let mut publics = Vec::with_capacity(leaves.len());
        for &n in &leaves {
            let t = layout
                .public_state_tensor(source, n as usize)
                .map_err(|e| NnError::Config(format!("leaf {n}: {e}")))?;
            publics.push(t);
        }
        let public = source.config().public_state_tensor_size();
        if cfg.input_size != public + 2 * p {
            return Err(NnError::Config(format!(
                "the CVPN input size is {}; this game's PBSs need {public} + 2 x {p}",
                cfg.input_size
            )));
        }
        let sweeps = leaves
            .iter()
            .map(|&n| HandSweep::new(&layout.hands, layout.nodes[n as usize].board_mask, None))
            .collect();
        let g = source.config();
        Ok(CvpnPokerLeaves {
            net,
            nodes: leaves,
            publics,
            sweeps,
            scale: g.max_utility.abs().max(g.min_utility.abs()).max(1e-9),
        })
    }

    /// The network input of leaf `k` (its index in the evaluator's nodes) for the
    /// players' reaches there (`[P]` each), and each player's opponent mass per hand.
    pub fn encode(
        &self,
        layout: &PokerLayout,
        k: usize,
        ranges: [&[f64]; 2],
    ) -> (Vec<f32>, [Vec<f64>; 2]) {
        let p = layout.num_hands();
        let sweep = &self.sweeps[k];
        let weight = layout.nodes[self.nodes[k] as usize].weight;
        let mut input = self.publics[k].clone();
        let mut mass = [vec![0.0; p], vec![0.0; p]];
        for i in 0..2 {
            let r = |x: usize| {
                if sweep.possible(x) {
                    ranges[i][x].max(0.0)
                } else {
                    0.0
                }
            };
            let total: f64 = (0..p).map(r).sum();
            input.extend((0..p).map(|x| {
                if total > crate::search::features::MIN_MASS {
                    (r(x) / total) as f32
                } else {
                    0.0
                }
            }));
            sweep.fold_into(ranges[1 - i], &mut mass[i]);
            mass[i].iter_mut().for_each(|m| *m *= weight);
        }
        (input, mass)
    }
}

impl<N: CvpnForward> PokerLeaves for CvpnPokerLeaves<N> {
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2] {
        let p = layout.num_hands();
        assert_eq!(
            leaves.len(),
            self.publics.len(),
            "the layout this evaluator was built for"
        );
        let mut input = Vec::new();
        let mut masses = Vec::with_capacity(leaves.len());
        for k in 0..leaves.len() {
            let r = [0, 1].map(|i| &ranges[i][k * p..(k + 1) * p]);
            let (x, m) = self.encode(layout, k, r);
            input.extend(x);
            masses.push(m);
        }
        let out = self
            .net
            .predict_values(&input)
            .expect("input sizes were checked when the evaluator was built");
        let mut values = [vec![0.0; leaves.len() * p], vec![0.0; leaves.len() * p]];
        for (k, m) in masses.iter().enumerate() {
            for (i, v) in values.iter_mut().enumerate() {
                for x in 0..p {
                    v[k * p + x] = f64::from(out[k * 2 * p + i * p + x]) * self.scale * m[i][x];
                }
            }
        }
        values
    }
}
