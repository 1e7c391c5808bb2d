//! What a counterfactual value-and-policy network (CVPN) sees of a public belief state and
//! what it is asked to predict, as plain numbers (no burn): the input vector of a [`Pbs`], the
//! normalisation of counterfactual values into expected payoffs, and the way back; plus random
//! PBSs for training data.
//!
//! # Input
//! `[public_state_tensor | belief_0 | belief_1]`: the game's public tensor of the PBS's node
//! ([`crate::game::State::public_state_tensor`]) and each player's *belief*, `r_i(x)` times the
//! chance marginal of `x` at the node, normalised to sum 1 (all zero for a player without mass).
//! Private-state slots are padded to the game-wide count `P`.
//!
//! # Targets
//! A CFV `v_i(x) = Σ_y r_{-i}(y)·C(x, y)·u_i(x, y)` (module [`super`]) carries the opponent's
//! reach and chance; the network predicts `v_i(x) / m_i(x)` with `m_i(x) = Σ_y r_{-i}(y)·C(x, y)`
//! (the opponent's chance-weighted mass facing `x`), divided by the game's largest absolute
//! payoff: an expected payoff in `[-1, 1]` whatever the ranges' scale. Entries with no mass
//! (`m_i(x) = 0`) carry no information and are masked out of losses.

use super::{LeafValues, Pbs, SearchError};
use crate::game::Game;
use crate::tree::history::HistoryTree;
use crate::tree::{NodeKind, PublicTree, TreePolicy};
use crate::util::SplitMix64;
use std::collections::HashMap;
use std::sync::Arc;

/// Per public node: the public tensor, the chance matrix `C` (`P × P`, `C[x0·P + x1]` = chance
/// reach of the history with private states `(x0, x1)`, 0 where none) and each player's
/// valid private states.
#[derive(Clone, Debug)]
struct NodeInfo {
    public: Vec<f32>,
    chance: Vec<f64>,
    valid: [Vec<bool>; 2],
    /// Per player `i` and private state `x`: the chance marginal `Σ_y C` over the opponent's
    /// states (summed in `y` order).
    marginal: [Vec<f64>; 2],
}

/// A PBS turned into network input, with what is needed to turn predictions back into CFVs.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedPbs {
    /// `[public | belief_0 | belief_1]`, length [`PbsEncoder::input_size`].
    pub input: Vec<f32>,
    /// Per player and private state (length `P`): the opponent's chance-weighted mass `m_i(x)`.
    pub mass: [Vec<f64>; 2],
}

/// Labelled examples for a value network, row-major (`rows` rows).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueExamples {
    pub rows: usize,
    /// `rows × input_size`.
    pub input: Vec<f32>,
    /// `rows × 2P` normalised targets.
    pub values: Vec<f32>,
    /// `rows × 2P` loss mask.
    pub mask: Vec<f32>,
}

impl ValueExamples {
    /// Rows `range` as a new set.
    pub fn slice(&self, range: std::ops::Range<usize>) -> ValueExamples {
        let w_in = self.input.len() / self.rows.max(1);
        let w_out = self.values.len() / self.rows.max(1);
        ValueExamples {
            rows: range.len(),
            input: self.input[range.start * w_in..range.end * w_in].to_vec(),
            values: self.values[range.start * w_out..range.end * w_out].to_vec(),
            mask: self.mask[range.start * w_out..range.end * w_out].to_vec(),
        }
    }
}

/// Encodes PBSs of one compiled game (see the module docs).
#[derive(Debug)]
pub struct PbsEncoder {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    p: usize,
    public_size: usize,
    scale: f64,
    nodes: HashMap<u32, Arc<NodeInfo>>,
    game: Arc<dyn Game>,
}

/// Masses below this count as none (the value is then undefined and masked).
pub const MIN_MASS: f64 = 1e-12;

impl PbsEncoder {
    /// An encoder for `game` compiled as `tree` / `ht`. Errors when the game has no public
    /// state tensor.
    pub fn new(
        game: Arc<dyn Game>,
        tree: Arc<PublicTree>,
        ht: Arc<HistoryTree>,
    ) -> Result<PbsEncoder, SearchError> {
        let public_size = game.public_state_tensor_size();
        if public_size == 0 {
            return Err(SearchError::BadSetting {
                key: "game",
                value: game.short_name().to_string(),
                reason: "the game provides no public state tensor for a value network".into(),
            });
        }
        let p = ht
            .private
            .iter()
            .map(|x| x[0].max(x[1]) as usize + 1)
            .max()
            .unwrap_or(1);
        let scale = game
            .max_utility()
            .abs()
            .max(game.min_utility().abs())
            .max(1e-9);
        Ok(PbsEncoder {
            tree,
            ht,
            p,
            public_size,
            scale,
            nodes: HashMap::new(),
            game,
        })
    }

    /// The compiled game's public tree.
    pub fn tree(&self) -> &Arc<PublicTree> {
        &self.tree
    }

    /// Private states per player (game-wide, padded).
    pub fn private_states(&self) -> usize {
        self.p
    }

    /// Length of the public part of the input.
    pub fn public_size(&self) -> usize {
        self.public_size
    }

    /// Length of an input vector.
    pub fn input_size(&self) -> usize {
        self.public_size + 2 * self.p
    }

    /// The largest absolute payoff, which normalised values are divided by.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    fn node(&mut self, node: u32) -> Result<Arc<NodeInfo>, SearchError> {
        if let Some(n) = self.nodes.get(&node) {
            return Ok(n.clone());
        }
        if node as usize >= self.tree.nodes.len() {
            return Err(SearchError::Leaf(format!(
                "public node {node} does not exist"
            )));
        }
        let hs = self.ht.node_histories(node as usize);
        let &first = hs
            .first()
            .ok_or_else(|| SearchError::Leaf(format!("public node {node} has no history")))?;
        let p = self.p;
        let mut chance = vec![0.0; p * p];
        let mut valid = [vec![false; p], vec![false; p]];
        for &h in hs {
            let [x0, x1] = self.ht.private[h as usize].map(|x| x as usize);
            chance[x0 * p + x1] += self.ht.chance_reach[h as usize];
            valid[0][x0] = true;
            valid[1][x1] = true;
        }
        // The public tensor of any one history of the node (they agree: a public function).
        let mut path = Vec::new();
        let mut h = first as usize;
        while h != 0 {
            path.push(self.ht.action[h]);
            h = self.ht.parent[h] as usize;
        }
        path.reverse();
        let state = crate::game::replay(self.game.as_ref(), &path)
            .map_err(|e| SearchError::Leaf(format!("replaying a history of node {node}: {e}")))?;
        let mut public = vec![0.0; self.public_size];
        state.public_state_tensor(&mut public);
        let marginal = std::array::from_fn(|i| {
            (0..p)
                .map(|x| {
                    (0..p)
                        .map(|y| {
                            if i == 0 {
                                chance[x * p + y]
                            } else {
                                chance[y * p + x]
                            }
                        })
                        .sum()
                })
                .collect()
        });
        let info = Arc::new(NodeInfo {
            public,
            chance,
            valid,
            marginal,
        });
        self.nodes.insert(node, info.clone());
        Ok(info)
    }

    /// The input of `q` and its opponent masses.
    pub fn encode(&mut self, q: &Pbs) -> Result<EncodedPbs, SearchError> {
        let n = self.node(q.node)?;
        let p = self.p;
        let r = |i: usize, x: usize| -> f64 {
            if n.valid[i][x] {
                q.ranges[i].get(x).copied().unwrap_or(0.0).max(0.0)
            } else {
                0.0
            }
        };
        let own: [Vec<f64>; 2] = std::array::from_fn(|i| (0..p).map(|x| r(i, x)).collect());
        let mut input = Vec::with_capacity(n.public.len() + 2 * p);
        input.extend_from_slice(&n.public);
        let mut mass = [vec![0.0; p], vec![0.0; p]];
        for (i, mass_i) in mass.iter_mut().enumerate() {
            // Belief: own reach times the chance marginal of x.
            let belief = |x: usize| own[i][x] * n.marginal[i][x];
            let total: f64 = (0..p).map(belief).sum();
            input.extend((0..p).map(|x| {
                if total > MIN_MASS {
                    (belief(x) / total) as f32
                } else {
                    0.0
                }
            }));
            let opp = &own[1 - i];
            for (x, m) in mass_i.iter_mut().enumerate() {
                *m = (0..p)
                    .map(|y| {
                        let c = if i == 0 {
                            n.chance[x * p + y]
                        } else {
                            n.chance[y * p + x]
                        };
                        opp[y] * c
                    })
                    .sum();
            }
        }
        Ok(EncodedPbs { input, mass })
    }

    /// Normalised targets (`2P`, player 0 then player 1) and their loss mask (1 where the
    /// opponent mass is positive) for CFVs `values` of `enc`'s PBS.
    pub fn targets(&self, enc: &EncodedPbs, values: &[Vec<f64>; 2]) -> (Vec<f32>, Vec<f32>) {
        let p = self.p;
        let mut t = vec![0.0; 2 * p];
        let mut m = vec![0.0; 2 * p];
        for i in 0..2 {
            for x in 0..p {
                let mass = enc.mass[i][x];
                if mass > MIN_MASS {
                    let v = values[i].get(x).copied().unwrap_or(0.0);
                    t[i * p + x] = (v / mass / self.scale) as f32;
                    m[i * p + x] = 1.0;
                }
            }
        }
        (t, m)
    }

    /// CFVs from normalised predictions `out` (`2P`) of `enc`'s PBS, each player's vector of the
    /// length of `q`'s range (the [`super::LeafValues`] convention).
    pub fn decode(&self, q: &Pbs, enc: &EncodedPbs, out: &[f32]) -> [Vec<f64>; 2] {
        let p = self.p;
        std::array::from_fn(|i| {
            (0..q.ranges[i].len())
                .map(|x| {
                    if x < p {
                        f64::from(out[i * p + x]) * self.scale * enc.mass[i][x]
                    } else {
                        0.0
                    }
                })
                .collect()
        })
    }

    /// Non-terminal public nodes: where searches ask for values.
    pub fn query_nodes(&self) -> Vec<u32> {
        (0..self.tree.nodes.len() as u32)
            .filter(|&n| self.tree.nodes[n as usize].kind != NodeKind::Terminal)
            .collect()
    }

    /// A random PBS at a node drawn uniformly from `nodes`: both ranges are those of a random
    /// behavioural policy (per infoset, a Dirichlet(1) draw raised to a random power in
    /// `[0, 3]`, so from near-uniform to near-pure), which makes them consistent with play.
    pub fn random_pbs(&self, rng: &mut SplitMix64, nodes: &[u32]) -> Pbs {
        let node = nodes[rng.below(nodes.len())];
        let power = 3.0 * rng.next_f64();
        let policy: TreePolicy = std::array::from_fn(|i| {
            let inf = &self.tree.infosets[i];
            let mut v = vec![0.0; inf.num_actions_total()];
            for s in 0..inf.len() {
                let r = inf.range(s);
                let w: Vec<f64> = r
                    .clone()
                    .map(|_| (-(1.0 - rng.next_f64()).ln()).powf(power))
                    .collect();
                let total: f64 = w.iter().sum();
                for (k, w) in r.zip(w) {
                    v[k] = if total > 0.0 { w / total } else { 0.0 };
                }
            }
            v
        });
        let hs = self.ht.node_histories(node as usize);
        let ranges = std::array::from_fn(|i| {
            let mut seq_reach = vec![0.0; self.tree.num_sequences(i)];
            self.tree.reach(i, &policy[i], &mut seq_reach);
            let mut r = vec![0.0; self.p];
            for &h in hs {
                let h = h as usize;
                let x = self.ht.private[h][i] as usize;
                r[x] = seq_reach[self.ht.seq[h][i] as usize];
            }
            r
        });
        Pbs { node, ranges }
    }

    /// `n` random PBSs ([`Self::random_pbs`] over all query nodes).
    pub fn random_queries(&self, rng: &mut SplitMix64, n: usize) -> Vec<Pbs> {
        let nodes = self.query_nodes();
        (0..n).map(|_| self.random_pbs(rng, &nodes)).collect()
    }

    /// Training examples of `queries` with CFVs `answers` (one per query).
    pub fn examples(
        &mut self,
        queries: &[Pbs],
        answers: &[[Vec<f64>; 2]],
    ) -> Result<ValueExamples, SearchError> {
        let mut out = ValueExamples {
            rows: queries.len(),
            ..Default::default()
        };
        for (q, v) in queries.iter().zip(answers) {
            let enc = self.encode(q)?;
            let (t, m) = self.targets(&enc, v);
            out.input.extend_from_slice(&enc.input);
            out.values.extend(t);
            out.mask.extend(m);
        }
        Ok(out)
    }

    /// `n` random PBSs labelled with the values `leaves` gives them (the exact
    /// [`super::SubgameOracle`] for supervised data).
    pub fn value_examples(
        &mut self,
        leaves: &mut dyn LeafValues,
        rng: &mut SplitMix64,
        n: usize,
    ) -> Result<ValueExamples, SearchError> {
        let queries = self.random_queries(rng, n);
        let answers = leaves.evaluate(&queries)?;
        self.examples(&queries, &answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;
    use crate::search::SubgameOracle;

    fn compile(name: &str) -> (Arc<dyn Game>, Arc<PublicTree>, Arc<HistoryTree>) {
        let game = load_game(name).unwrap();
        let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
        let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
        (game, tree, ht)
    }

    /// Replays history `h` of `ht`.
    fn state_of(game: &dyn Game, ht: &HistoryTree, h: usize) -> Box<dyn crate::game::State> {
        crate::game::replay(game, &ht.actions_to(h)).unwrap()
    }

    #[test]
    fn public_tensor_is_one_per_public_node_and_tells_decision_nodes_apart() {
        for name in ["kuhn_poker", "leduc_poker", "liars_dice"] {
            let (game, tree, ht) = compile(name);
            let size = game.public_state_tensor_size();
            assert!(size > 0, "{name}");
            let mut seen: HashMap<Vec<u32>, u32> = HashMap::new();
            let mut buf = vec![0.0f32; size];
            for n in 0..tree.nodes.len() {
                let hs = ht.node_histories(n);
                let mut first: Option<Vec<f32>> = None;
                for &h in hs.iter().take(64) {
                    state_of(game.as_ref(), &ht, h as usize).public_state_tensor(&mut buf);
                    match &first {
                        None => first = Some(buf.clone()),
                        Some(f) => assert_eq!(f, &buf, "{name} node {n}: history {h} differs"),
                    }
                }
                // Deal-phase chance nodes differ only in how many private cards are out,
                // which is private; decision nodes must all differ.
                if !matches!(tree.nodes[n].kind, NodeKind::Decision(_)) {
                    continue;
                }
                let key: Vec<u32> = first.unwrap().iter().map(|x| x.to_bits()).collect();
                if let Some(m) = seen.insert(key, n as u32) {
                    panic!("{name}: nodes {m} and {n} share a public tensor");
                }
            }
        }
    }

    #[test]
    fn targets_decode_back_to_the_oracle_values() {
        let (game, tree, ht) = compile("leduc_poker");
        let mut enc = PbsEncoder::new(game, tree.clone(), ht.clone()).unwrap();
        let mut oracle = SubgameOracle::new(tree, ht, 50).unwrap();
        let mut rng = SplitMix64::new(7);
        let nodes = enc.query_nodes();
        let mut masked = 0;
        for _ in 0..40 {
            let mut q = enc.random_pbs(&mut rng, &nodes);
            // Some queries with an empty opponent range at some private states.
            if rng.below(3) == 0 {
                let x = rng.below(q.ranges[1].len());
                q.ranges[1][x] = 0.0;
            }
            let v = oracle.evaluate(std::slice::from_ref(&q)).unwrap().remove(0);
            let e = enc.encode(&q).unwrap();
            assert_eq!(e.input.len(), enc.input_size());
            for i in 0..2 {
                let b = &e.input[enc.public_size() + i * enc.private_states()..]
                    [..enc.private_states()];
                let s: f32 = b.iter().sum();
                assert!((s - 1.0).abs() < 1e-5 || s == 0.0, "belief sums to {s}");
            }
            let (t, m) = enc.targets(&e, &v);
            masked += m.iter().filter(|&&x| x == 0.0).count();
            assert!(t.iter().all(|x| x.abs() <= 1.0 + 1e-5), "normalised {t:?}");
            let back = enc.decode(&q, &e, &t);
            for i in 0..2 {
                for (a, b) in back[i].iter().zip(&v[i]) {
                    assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
                }
            }
        }
        assert!(masked > 0, "some entries have no opponent mass");
    }

    #[test]
    fn games_without_a_public_tensor_are_refused() {
        // The check comes before the tree is looked at.
        let (_, tree, ht) = compile("kuhn_poker");
        let game = load_game(
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
        )
        .unwrap();
        let err = PbsEncoder::new(game, tree, ht).unwrap_err().to_string();
        assert!(err.contains("public state tensor"), "{err}");
    }
}
