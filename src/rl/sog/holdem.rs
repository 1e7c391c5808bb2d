//! Student of Games self-play on Hold'em: games played with continual re-solving on the
//! factored layout ([`crate::search::holdem`]), the depth-limit queries they raise, and the
//! value examples a query's re-solve yields.
//!
//! # Queries at round ends
//! A Hold'em search ends at the next board deal: each depth-limit leaf is the public state
//! *before* the deal, whose value is an average over every possible board (19,600 flops in
//! full Hold'em). Solving that average exactly would mean solving the next round for every
//! board, so a query samples **one** deal `d`, uniformly among the card sets off the leaf's
//! board (the chance odds: every compatible deal is equally likely), and its re-solve is
//! rooted at the first state after `d`, with both players' leaf ranges masked by `d`'s cards.
//! One re-solve gives two value examples:
//! * **after the deal**: the re-solve's root counterfactual values, normalised as
//!   [`crate::nn::cvpn::CvpnPokerLeaves`] decodes them (divided by the game's largest payoff
//!   and the opponent's chance-weighted mass), at the post-deal public state: what the network
//!   answers when a new round's search asks for its gadget values;
//! * **before the deal** (at the leaf itself): a one-sample Monte Carlo estimate of the leaf's
//!   normalised value. For a hand `x` that `d` does not touch, the unnormalised leaf value is
//!   the average over the `N` deals compatible with both hands of the per-deal values, and
//!   `d` is uniform over the `M` deals that avoid `x`; so `(M / N) · v_d(x)` is unbiased, and
//!   divided by the leaf's opponent mass it estimates the normalised value. Hands `d` touches
//!   are masked out of the loss. With the squared loss the network learns the expectation.
//!
//! Targets depend on the network that values the re-solve's own leaves (bootstrapping, as in
//! the small-game SoG), except in a last betting round, whose re-solves are exact.

use super::{Example, Reader, put_f32s, put_f64s, put_u64};
use crate::game::{State, Turn};
use crate::games::universal_poker::UniversalPokerState;
use crate::nn::cvpn::{CvpnForward, CvpnPokerLeaves};
use crate::search::features::MIN_MASS;
use crate::search::holdem::{
    HoldemLeaves, HoldemResolver, HoldemSearchConfig, HoldemSearchError, solve_ranges, state_at,
};
use crate::tree::poker::{PokerEdge, PokerLayout};
use crate::util::SplitMix64;
use std::collections::{HashMap, VecDeque};

/// One depth-limit query: a leaf PBS of a self-play search with its sampled deal.
#[derive(Clone, Debug, PartialEq)]
pub struct HoldemQuery {
    /// Public edges from the hand's start to the first state after the sampled deal.
    pub edges: Vec<PokerEdge>,
    /// Both players' leaf ranges (each normalised to sum 1 at the leaf), zero on hands the
    /// sampled deal touches.
    pub ranges: [Vec<f64>; 2],
    /// The network input at the leaf (before the deal).
    pub leaf_input: Vec<f32>,
    /// Per player and hand: the opponent's compatible mass at the leaf (no node weight).
    pub leaf_mass: [Vec<f64>; 2],
    /// `M / N`: deals avoiding one hand over deals avoiding two (see the module docs).
    pub ratio: f64,
}

/// The FIFO query buffer: the oldest queries are solved first and dropped first when full.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HoldemQueries {
    pub items: VecDeque<HoldemQuery>,
    pub capacity: usize,
    /// Queries dropped unsolved because the buffer was full.
    pub dropped: u64,
}

impl HoldemQueries {
    /// An empty buffer of `capacity` (at least 1) queries.
    pub fn new(capacity: usize) -> Self {
        HoldemQueries {
            items: VecDeque::new(),
            capacity: capacity.max(1),
            dropped: 0,
        }
    }

    /// Appends `q`, dropping the oldest query when full.
    pub fn push(&mut self, q: HoldemQuery) {
        if self.items.len() >= self.capacity {
            self.items.pop_front();
            self.dropped += 1;
        }
        self.items.push_back(q);
    }
}

/// What one self-play game did.
#[derive(Clone, Debug, Default)]
pub struct HoldemGame {
    pub decisions: usize,
    pub searches: usize,
    /// Decisions where the actor's chain had no range left (an exploratory action of ours
    /// that the search never plays): answered uniformly without a search.
    pub unsearched: usize,
    /// Actions the unmixed search policy gives probability 0 (exploration).
    pub off_policy_actions: usize,
    /// Leaves offered as queries but skipped (a range empty at the leaf or after the deal).
    pub skipped_leaves: usize,
    pub queries: Vec<HoldemQuery>,
    /// Player 0's return.
    pub return0: f64,
}

/// Settings of self-play.
#[derive(Clone, Copy, Debug)]
pub struct HoldemSelfPlay {
    pub search: HoldemSearchConfig,
    /// Weight of the uniform policy in played actions.
    pub epsilon: f64,
    /// At most this many leaf queries per search.
    pub queries_per_search: usize,
}

fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// `k` distinct indices of `0..n` (a partial Fisher–Yates shuffle), in draw order.
fn sample_indices(rng: &mut SplitMix64, n: usize, k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    let k = k.min(n);
    for i in 0..k {
        let j = i + rng.below(n - i);
        idx.swap(i, j);
    }
    idx.truncate(k);
    idx
}

/// Layout position of every hole index (the game's private-state index) of `layout`.
pub fn hand_positions(layout: &PokerLayout) -> HashMap<u32, usize> {
    layout
        .hole_index
        .iter()
        .enumerate()
        .map(|(x, &h)| (h, x))
        .collect()
}

/// The query of leaf `leaf` of a search (`layout` rooted at `root_edges`, both players'
/// reaches `reaches` `[N·P]`): one deal sampled as the module docs say. `None` when a
/// player's range is empty at the leaf or after the deal.
fn leaf_query<N: CvpnForward + Clone>(
    template: &UniversalPokerState,
    layout: &PokerLayout,
    root_edges: &[PokerEdge],
    reaches: [&[f64]; 2],
    leaf: usize,
    net: &N,
    rng: &mut SplitMix64,
) -> Result<Option<HoldemQuery>, HoldemSearchError> {
    let np = layout.num_hands();
    let mut ranges: [Vec<f64>; 2] = std::array::from_fn(|i| {
        (0..np)
            .map(|x| {
                if layout.possible(leaf, x) {
                    reaches[i][leaf * np + x].max(0.0)
                } else {
                    0.0
                }
            })
            .collect()
    });
    for r in &mut ranges {
        let total: f64 = r.iter().sum();
        if !(total > MIN_MASS && total.is_finite()) {
            return Ok(None);
        }
        r.iter_mut().for_each(|v| *v /= total);
    }
    let root = state_at(template, root_edges)?;
    let enc = CvpnPokerLeaves::at_nodes(net.clone(), layout, &root, vec![leaf as u32])
        .map_err(|e| HoldemSearchError::Leaf(e.to_string()))?;
    let (leaf_input, mass) = enc.encode(layout, 0, [&ranges[0], &ranges[1]]);
    let weight = layout.nodes[leaf].weight;
    let leaf_mass = mass.map(|m| m.into_iter().map(|v| v / weight).collect());
    // The deal: `k` cards off the leaf's board, uniformly.
    let mut edges = root_edges.to_vec();
    edges.extend(layout.path(leaf));
    let walk = state_at(template, &edges)?
        .public_walk()
        .map_err(|e| HoldemSearchError::Leaf(format!("the leaf's public state: {e}")))?;
    let (k, left) = (walk.deal_size(), walk.deck_cards());
    if k == 0 {
        return Err(HoldemSearchError::Leaf(
            "a depth-limit leaf is not a board deal".into(),
        ));
    }
    let mut deal: Vec<u8> = sample_indices(rng, left.len(), k)
        .into_iter()
        .map(|i| left[i])
        .collect();
    deal.sort_unstable();
    let deal_mask = deal.iter().fold(0u64, |m, &c| m | 1 << c);
    for r in &mut ranges {
        for (x, v) in r.iter_mut().enumerate() {
            if layout.hand_masks[x] & deal_mask != 0 {
                *v = 0.0;
            }
        }
        if r.iter().sum::<f64>() <= MIN_MASS {
            return Ok(None);
        }
    }
    edges.push(PokerEdge::Deal(deal));
    // A last deal of an all-in run-out ends the hand: no subgame to re-solve (such leaves
    // are skipped, so the network learns nothing about them yet).
    if state_at(template, &edges)?.turn() == Turn::Terminal {
        return Ok(None);
    }
    let n = left.len();
    Ok(Some(HoldemQuery {
        edges,
        ranges,
        leaf_input,
        leaf_mass,
        ratio: choose(n - 2, k) / choose(n - 4, k),
    }))
}

/// One self-play game: both players re-solve continually with `leaves` at the depth limit;
/// the action is drawn from `(1 − ε)·search + ε·uniform`, while each chain carries its
/// search's unmixed policy; every search offers up to `queries_per_search` of its leaves
/// (drawn uniformly without replacement) as queries. `positions` maps hole indices to layout
/// hands ([`hand_positions`]); `net` encodes the leaves' inputs.
pub fn play_game<N: CvpnForward + Clone>(
    initial: &UniversalPokerState,
    cfg: &HoldemSelfPlay,
    leaves: &mut dyn HoldemLeaves,
    net: &N,
    positions: &HashMap<u32, usize>,
    rng: &mut SplitMix64,
) -> Result<HoldemGame, HoldemSearchError> {
    let mut out = HoldemGame::default();
    let mut state = initial.clone();
    let mut chains = [
        HoldemResolver::new(0, cfg.search)?,
        HoldemResolver::new(1, cfg.search)?,
    ];
    loop {
        match state.turn() {
            Turn::Terminal => {
                out.return0 = state.returns()[0];
                return Ok(out);
            }
            Turn::Chance => {
                let outcomes = state.chance_outcomes();
                let w: Vec<f64> = outcomes.iter().map(|&(_, p)| p).collect();
                let a = outcomes[rng.weighted(&w)].0;
                state.try_apply(a)?;
            }
            Turn::Player(p) => {
                out.decisions += 1;
                let dec = chains[p].act(&state, leaves)?;
                if dec.searched {
                    out.searches += 1;
                    offer_queries(&chains[p], &state, cfg, net, rng, &mut out)?;
                } else {
                    out.unsearched += 1;
                }
                let hand = state.private_state(p) as u32;
                let x = *positions.get(&hand).ok_or_else(|| {
                    HoldemSearchError::Leaf(format!("hand {hand} is not in the layout"))
                })?;
                let row = &dec.rows[x];
                let na = row.len() as f64;
                let mixed: Vec<f64> = row
                    .iter()
                    .map(|q| (1.0 - cfg.epsilon) * q + cfg.epsilon / na)
                    .collect();
                let k = rng.weighted(&mixed);
                if row[k] <= 0.0 {
                    out.off_policy_actions += 1;
                }
                state.try_apply(dec.actions[k])?;
            }
        }
    }
}

/// Adds up to `queries_per_search` leaf queries of `chain`'s latest search to `out`.
fn offer_queries<N: CvpnForward + Clone>(
    chain: &HoldemResolver,
    state: &UniversalPokerState,
    cfg: &HoldemSelfPlay,
    net: &N,
    rng: &mut SplitMix64,
    out: &mut HoldemGame,
) -> Result<(), HoldemSearchError> {
    let Some((layout, root_edges, reaches)) = chain.last_search() else {
        return Ok(());
    };
    let leaves = layout.leaves();
    if leaves.is_empty() || cfg.queries_per_search == 0 {
        return Ok(());
    }
    for i in sample_indices(rng, leaves.len(), cfg.queries_per_search) {
        let leaf = leaves[i] as usize;
        match leaf_query(state, layout, root_edges, reaches, leaf, net, rng)? {
            Some(q) => out.queries.push(q),
            None => out.skipped_leaves += 1,
        }
    }
    Ok(())
}

/// Normalised targets and mask of `values` (`[v_0, v_1]`, per hand) with opponent masses
/// `mass`, `scale` the game's largest payoff: `(targets [2P], mask [2P])`.
fn normalise(values: &[Vec<f64>; 2], mass: &[Vec<f64>; 2], scale: f64) -> (Vec<f32>, Vec<f32>) {
    let np = values[0].len();
    let mut t = vec![0.0f32; 2 * np];
    let mut m = vec![0.0f32; 2 * np];
    for (i, (vs, ms)) in values.iter().zip(mass).enumerate() {
        for (x, (&v, &w)) in vs.iter().zip(ms).enumerate() {
            if w > MIN_MASS {
                let u = v / (scale * w);
                if u.is_finite() {
                    t[i * np + x] = u as f32;
                    m[i * np + x] = 1.0;
                }
            }
        }
    }
    (t, m)
}

/// Re-solves `q` at its post-deal state (`search` settings, `leaves` valuing the re-solve's
/// own depth limit, `net` encoding the input) and returns its two value examples (module
/// docs): the post-deal one, then the leaf's.
pub fn solve_query<N: CvpnForward + Clone>(
    template: &UniversalPokerState,
    q: &HoldemQuery,
    search: &HoldemSearchConfig,
    leaves: &mut dyn HoldemLeaves,
    net: &N,
) -> Result<[Example; 2], HoldemSearchError> {
    let root = state_at(template, &q.edges)?;
    let (layout, cfvs) = solve_ranges(&root, q.ranges.clone(), search, leaves)?;
    let enc = CvpnPokerLeaves::at_nodes(net.clone(), &layout, &root, vec![0])
        .map_err(|e| HoldemSearchError::Leaf(e.to_string()))?;
    let (input, mass) = enc.encode(&layout, 0, [&q.ranges[0], &q.ranges[1]]);
    let g = template.config();
    let scale = g.max_utility.abs().max(g.min_utility.abs()).max(1e-9);
    let (values, value_mask) = normalise(&cfvs, &mass, scale);
    let post = Example {
        input,
        values: values.clone(),
        value_mask: value_mask.clone(),
        policy: Vec::new(),
        policy_mask: Vec::new(),
    };
    // The leaf: ratio · u_d · (post-deal opponent mass) / (leaf opponent mass).
    let np = layout.num_hands();
    let weight = layout.nodes[0].weight;
    let mut lv = vec![0.0f32; 2 * np];
    let mut lm = vec![0.0f32; 2 * np];
    for (i, (post_masses, leaf_masses)) in mass.iter().zip(&q.leaf_mass).enumerate() {
        for (x, (&post_mass, &leaf_mass)) in post_masses.iter().zip(leaf_masses).enumerate() {
            let k = i * np + x;
            if value_mask[k] > 0.0 && leaf_mass > MIN_MASS {
                let u = q.ratio * f64::from(values[k]) * (post_mass / weight) / leaf_mass;
                if u.is_finite() {
                    lv[k] = u as f32;
                    lm[k] = 1.0;
                }
            }
        }
    }
    let pre = Example {
        input: q.leaf_input.clone(),
        values: lv,
        value_mask: lm,
        policy: Vec::new(),
        policy_mask: Vec::new(),
    };
    Ok([post, pre])
}

// --- checkpoint encoding of the query buffer ---

const QUERIES_MAGIC: &[u8; 8] = b"HSOGQ001";

fn put_edges(out: &mut Vec<u8>, edges: &[PokerEdge]) {
    put_u64(out, edges.len() as u64);
    for e in edges {
        match e {
            PokerEdge::Root => put_u64(out, 0),
            PokerEdge::Action(a) => {
                put_u64(out, 1);
                put_u64(out, *a as u64);
            }
            PokerEdge::Deal(cards) => {
                put_u64(out, 2);
                put_u64(out, cards.len() as u64);
                out.extend_from_slice(cards);
            }
        }
    }
}

fn read_edges(r: &mut Reader) -> Result<Vec<PokerEdge>, String> {
    let n = r.len(8)?;
    let mut edges = Vec::with_capacity(n);
    for _ in 0..n {
        edges.push(match r.u64()? {
            0 => PokerEdge::Root,
            1 => PokerEdge::Action(r.u64()? as usize),
            2 => {
                let k = r.len(1)?;
                PokerEdge::Deal(r.take(k)?.to_vec())
            }
            t => return Err(format!("unknown edge tag {t} at byte {}", r.pos)),
        });
    }
    Ok(edges)
}

/// The query buffer as bytes (see [`decode_queries`]).
pub fn encode_queries(q: &HoldemQueries) -> Vec<u8> {
    let mut out = QUERIES_MAGIC.to_vec();
    put_u64(&mut out, q.capacity as u64);
    put_u64(&mut out, q.dropped);
    put_u64(&mut out, q.items.len() as u64);
    for x in &q.items {
        put_edges(&mut out, &x.edges);
        put_f64s(&mut out, &x.ranges[0]);
        put_f64s(&mut out, &x.ranges[1]);
        put_f32s(&mut out, &x.leaf_input);
        put_f64s(&mut out, &x.leaf_mass[0]);
        put_f64s(&mut out, &x.leaf_mass[1]);
        out.extend_from_slice(&x.ratio.to_le_bytes());
    }
    out
}

/// Reads what [`encode_queries`] wrote; the error says where it is malformed.
pub fn decode_queries(bytes: &[u8]) -> Result<HoldemQueries, String> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(8)? != QUERIES_MAGIC {
        return Err("not a Hold'em query buffer file (bad magic)".into());
    }
    let mut q = HoldemQueries::new(r.u64()? as usize);
    q.dropped = r.u64()?;
    let n = r.len(8)?;
    for _ in 0..n {
        let edges = read_edges(&mut r)?;
        let ranges = [r.f64s()?, r.f64s()?];
        let leaf_input = r.f32s()?;
        let leaf_mass = [r.f64s()?, r.f64s()?];
        let ratio = f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"));
        q.items.push_back(HoldemQuery {
            edges,
            ranges,
            leaf_input,
            leaf_mass,
            ratio,
        });
    }
    if r.pos != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.pos));
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer survives its encoding, and a damaged file is refused.
    #[test]
    fn query_buffers_round_trip() {
        let mut b = HoldemQueries::new(3);
        for i in 0..4 {
            b.push(HoldemQuery {
                edges: vec![PokerEdge::Action(i), PokerEdge::Deal(vec![1, 5, 9])],
                ranges: [vec![0.25, 0.75], vec![1.0, 0.0]],
                leaf_input: vec![0.5, -1.0, i as f32],
                leaf_mass: [vec![0.1, 0.2], vec![0.3, 0.4]],
                ratio: 1.25,
            });
        }
        assert_eq!(b.dropped, 1);
        let bytes = encode_queries(&b);
        assert_eq!(decode_queries(&bytes).unwrap(), b);
        assert!(decode_queries(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode_queries(b"nonsense").is_err());
    }
}
