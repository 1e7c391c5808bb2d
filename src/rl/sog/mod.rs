//! Sound self-play of Student of Games (Schmid et al. 2023, §4.5-4.8) above the network: games
//! played with continual re-solving at every decision, the FIFO buffer of frontier queries, the
//! replay of labelled examples the learner samples, and their checkpoint encoding.
//!
//! Nothing here imports burn: values enter through [`LeafValues`] (a CVPN in the training
//! run) and examples leave as [`CvpnBatch`] rows, plain data of [`crate::nn::cvpn`].
//!
//! # One self-play game ([`play_game`])
//! Each player runs its own [`Resolver`] chain. At a decision of player `p` holding private
//! state `x`, `p`'s chain searches (GT-CFR, network values at the frontier, the CFR-D gadget
//! from the second search on) and answers a policy row per private state; the action is drawn
//! from `(1 − ε)·row(x) + ε·uniform`. The chains carry the *unmixed* answers (their ranges
//! are those of the search policy), so an exploratory action may leave the actor's own range
//! without mass at its next decision: the chain then answers uniformly without a search, and
//! the game counts it ([`GameRecord::unsearched`]); nothing becomes NaN.
//!
//! Every search leaves its final frontier as public belief states (both players' reaches
//! under the answered strategy); at most `queries_per_search` of them, drawn uniformly, go to
//! the query buffer. Every search also leaves a policy target: the PBS at the decided node and
//! the answered rows of the actor's private states that the beliefs reach.

pub mod cvpn_values;
pub mod holdem;
pub mod holdem_policy;
pub mod holdem_round;
pub mod rounds;
pub mod settings;
pub mod threaded;

pub use settings::SogSettings;

use crate::game::Player;
use crate::nn::cvpn::CvpnBatch;
use crate::search::{
    Begun, LayoutCache, LeafValues, Pbs, PbsEncoder, Resolver, ResolverConfig, SearchError,
    run_together,
};
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::tree::{NONE, PublicTree};
use crate::util::SplitMix64;
use std::collections::VecDeque;
use std::sync::Arc;

/// Settings of self-play games.
#[derive(Clone, Debug)]
pub struct SelfPlayConfig {
    /// Both chains' search settings.
    pub resolver: ResolverConfig,
    /// Exploration `ε` in `[0, 1]`: the weight of the uniform policy in the played action.
    pub epsilon: f64,
    /// At most this many frontier queries are kept from each search.
    pub queries_per_search: usize,
}

/// A policy target: the search's answer at a self-play decision.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyTarget {
    /// The public belief state decided at.
    pub pbs: Pbs,
    /// The acting player.
    pub player: Player,
    /// Per private state of the actor: (action ids, probabilities); empty where the actor has
    /// no infoset or no reach.
    pub rows: Vec<(Vec<u32>, Vec<f64>)>,
    /// Both players' actual private states in the game (for TD(1) targets).
    pub private: [usize; 2],
}

/// What one self-play game produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameRecord {
    /// Frontier queries kept from the game's searches.
    pub queries: Vec<Pbs>,
    /// One policy target per search.
    pub policy_targets: Vec<PolicyTarget>,
    /// Decisions played.
    pub decisions: usize,
    /// Decisions that ran a search.
    pub searches: usize,
    /// Searches that ended with a frontier (network values were used).
    pub searches_with_frontier: usize,
    /// Each chain's first search (rooted at the game's root, grown below the decision) and
    /// how many of them ended with a frontier: the searches that must not see the whole rest
    /// of the game for the network to matter. (Searches late in a game may cover their whole
    /// subtree whatever the budget: a Leduc decision facing a re-raise has only terminal
    /// children.)
    pub first_searches: usize,
    pub first_searches_with_frontier: usize,
    /// Decisions whose actor had no own range left (after an exploratory action): answered
    /// uniformly without a search.
    pub unsearched: usize,
    /// Actions the search policy gave probability 0 (taken by exploration).
    pub off_policy_actions: usize,
    /// Frontier queries the searches left before the per-search cap.
    pub frontier_queries: usize,
    /// Player 0's payoff.
    pub return0: f64,
}

/// Plays one game of sound self-play on the compiled game `tree`/`ht` from the stream `seed`,
/// with frontier values from `leaves` (see the module docs).
pub fn play_game(
    tree: &Arc<PublicTree>,
    ht: &Arc<HistoryTree>,
    config: &SelfPlayConfig,
    seed: u64,
    leaves: &mut dyn LeafValues,
) -> Result<GameRecord, SearchError> {
    let mut g = Game::new(tree, ht, config, seed, None)?;
    loop {
        match g.advance(ht)? {
            None => return Ok(g.out),
            Some((p, Begun::Done(r))) => g.play(tree, ht, config, p, r),
            Some((p, Begun::Search(mut search, pending))) => {
                search.run(leaves)?;
                let r = g.chains[p].finish(*search, pending, leaves)?;
                g.play(tree, ht, config, p, r);
            }
        }
    }
}

/// Plays one game per seed, as [`play_game`] would each, with the searches of all games that
/// wait for one run together in lock-step ([`crate::search::run_lockstep`]: one evaluator
/// call per single update for all of them). With an evaluator that answers each query
/// independently of the others in its call, the records are those of [`play_game`]. The
/// chains take their search layouts from `layouts` (one per public root, shared).
pub fn play_games(
    tree: &Arc<PublicTree>,
    ht: &Arc<HistoryTree>,
    config: &SelfPlayConfig,
    seeds: &[u64],
    layouts: &Arc<LayoutCache>,
    leaves: &mut dyn LeafValues,
) -> Result<Vec<GameRecord>, SearchError> {
    let mut games = seeds
        .iter()
        .map(|&seed| Game::new(tree, ht, config, seed, Some(layouts)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut done = vec![false; games.len()];
    loop {
        // Advance every game to its next search (or its end).
        let mut waiting = Vec::new();
        let mut searches = Vec::new();
        for (i, g) in games.iter_mut().enumerate() {
            while !done[i] {
                match g.advance(ht)? {
                    None => done[i] = true,
                    Some((p, Begun::Done(r))) => g.play(tree, ht, config, p, r),
                    Some((p, Begun::Search(search, pending))) => {
                        waiting.push((i, p, pending));
                        searches.push(*search);
                        break;
                    }
                }
            }
        }
        if searches.is_empty() {
            return Ok(games.into_iter().map(|g| g.out).collect());
        }
        run_together(&mut searches, leaves)?;
        for ((i, p, pending), search) in waiting.into_iter().zip(searches) {
            let r = games[i].chains[p].finish(search, pending, leaves)?;
            games[i].play(tree, ht, config, p, r);
        }
    }
}

/// One self-play game in progress: the history reached, both chains, the record so far.
struct Game {
    rng: SplitMix64,
    chains: [Resolver; 2],
    out: GameRecord,
    h: usize,
    /// Whether the chain of the player now deciding had searched before (set by `advance`).
    first: bool,
}

impl Game {
    fn new(
        tree: &Arc<PublicTree>,
        ht: &Arc<HistoryTree>,
        config: &SelfPlayConfig,
        seed: u64,
        layouts: Option<&Arc<LayoutCache>>,
    ) -> Result<Game, SearchError> {
        let chain = |p| -> Result<Resolver, SearchError> {
            let r = Resolver::new(p, tree.clone(), ht.clone(), config.resolver.clone())?;
            Ok(match layouts {
                Some(c) => r.with_layouts(c.clone()),
                None => r,
            })
        };
        Ok(Game {
            rng: SplitMix64::new(seed),
            chains: [chain(0)?, chain(1)?],
            out: GameRecord::default(),
            h: 0,
            first: false,
        })
    }

    /// Plays chance to the next decision and begins its player's search there; `None` at the
    /// end of the game (the payoff recorded).
    fn advance(&mut self, ht: &HistoryTree) -> Result<Option<(Player, Begun)>, SearchError> {
        loop {
            match ht.kind[self.h] {
                HistoryKind::Terminal => {
                    self.out.return0 = ht.utility[self.h];
                    return Ok(None);
                }
                HistoryKind::Chance => {
                    let kids = ht.children(self.h);
                    let w: Vec<f64> = kids.clone().map(|c| ht.chance_prob[c]).collect();
                    self.h = kids.start + self.rng.weighted(&w);
                }
                HistoryKind::Decision(p) => {
                    let node = ht.node[self.h];
                    self.first = !self.chains[p].has_summary();
                    let seed = self.rng.next_u64();
                    return Ok(Some((p, self.chains[p].begin(node, seed)?)));
                }
            }
        }
    }

    /// Records player `p`'s answer `r` at the current decision and plays the action.
    fn play(
        &mut self,
        tree: &PublicTree,
        ht: &HistoryTree,
        config: &SelfPlayConfig,
        p: Player,
        r: crate::search::Resolved,
    ) {
        let (h, out, rng) = (self.h, &mut self.out, &mut self.rng);
        let node = ht.node[h];
        out.decisions += 1;
        let inf = &tree.infosets[p];
        let g = ht.infoset[h] as usize;
        debug_assert!(g != NONE as usize);
        let actions = &inf.actions[inf.offset[g] as usize..inf.offset[g + 1] as usize];
        let x = ht.private[h][p] as usize;
        let row = &r.rows[x];
        assert_eq!(
            row.len(),
            actions.len(),
            "policy row of infoset {}",
            inf.key[g]
        );
        if r.searched {
            out.searches += 1;
            out.searches_with_frontier += (r.frontier > 0) as usize;
            if self.first {
                out.first_searches += 1;
                out.first_searches_with_frontier += (r.frontier > 0) as usize;
            }
            out.frontier_queries += r.queries.len();
            let mut qs = r.queries.clone();
            // A uniform subset of at most `queries_per_search` (partial Fisher-Yates).
            let keep = qs.len().min(config.queries_per_search);
            for i in 0..keep {
                let j = i + rng.below(qs.len() - i);
                qs.swap(i, j);
            }
            qs.truncate(keep);
            out.queries.extend(qs);
            let mut t = policy_target(tree, p, node, &r);
            t.private = [ht.private[h][0] as usize, ht.private[h][1] as usize];
            out.policy_targets.push(t);
        } else {
            out.unsearched += 1;
        }
        let na = actions.len() as f64;
        let mixed: Vec<f64> = row
            .iter()
            .map(|&q| (1.0 - config.epsilon) * q + config.epsilon / na)
            .collect();
        let k = rng.weighted(&mixed);
        if r.searched && row[k] <= 0.0 {
            out.off_policy_actions += 1;
        }
        self.h = ht
            .children(h)
            .find(|&c| ht.action[c] == actions[k])
            .expect("every legal action has a child history");
    }
}

/// The policy target of a search answer `r` of player `p` at public node `node`.
fn policy_target(
    tree: &PublicTree,
    p: Player,
    node: u32,
    r: &crate::search::Resolved,
) -> PolicyTarget {
    let inf = &tree.infosets[p];
    let pn = &tree.nodes[node as usize];
    let mut rows = vec![(Vec::new(), Vec::new()); r.rows.len()];
    for g in pn.infoset_range.0..pn.infoset_range.1 {
        let g = g as usize;
        let x = inf.private[g] as usize;
        let reached = r.beliefs.ranges[p].get(x).is_some_and(|&m| m > 0.0);
        if reached && x < rows.len() {
            let actions = inf.actions[inf.range(g)]
                .iter()
                .map(|&a| a as u32)
                .collect();
            rows[x] = (actions, r.rows[x].clone());
        }
    }
    PolicyTarget {
        pbs: r.beliefs.clone(),
        player: p,
        rows,
        private: [0, 0],
    }
}

/// A first-in first-out buffer of frontier queries waiting for the solver: pushing past the
/// capacity drops the oldest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryBuffer {
    pub items: VecDeque<Pbs>,
    pub capacity: usize,
    /// Queries dropped unsolved because the buffer was full.
    pub dropped: u64,
}

impl QueryBuffer {
    /// An empty buffer of `capacity` (at least 1) queries.
    pub fn new(capacity: usize) -> QueryBuffer {
        QueryBuffer {
            items: VecDeque::new(),
            capacity: capacity.max(1),
            dropped: 0,
        }
    }

    /// Appends `q`, dropping the oldest query when full.
    pub fn push(&mut self, q: Pbs) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
            self.dropped += 1;
        }
        self.items.push_back(q);
    }

    /// Removes and returns the `n` oldest queries (fewer if fewer wait).
    pub fn take(&mut self, n: usize) -> Vec<Pbs> {
        let n = n.min(self.items.len());
        self.items.drain(..n).collect()
    }
}

/// One training row of the CVPN: a value example (policy mask all zero) or a policy example
/// (value mask all zero).
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub input: Vec<f32>,
    /// `2P` normalised value targets.
    pub values: Vec<f32>,
    pub value_mask: Vec<f32>,
    /// `P·A` action distributions per private state (empty for a value example).
    pub policy: Vec<f32>,
    /// `P` weights (empty for a value example).
    pub policy_mask: Vec<f32>,
}

/// The learner's replay of examples: first in, first out, sampled uniformly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExampleReplay {
    pub items: VecDeque<Example>,
    pub capacity: usize,
}

impl ExampleReplay {
    /// An empty replay of `capacity` (at least 1) rows.
    pub fn new(capacity: usize) -> ExampleReplay {
        ExampleReplay {
            items: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Appends `e`, dropping the oldest row when full.
    pub fn push(&mut self, e: Example) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(e);
    }

    /// A batch of `n` rows drawn uniformly with replacement (`p`, `a`: the network's private
    /// states and actions, to fill the policy part of value rows with zeros). Empty replay:
    /// empty batch.
    pub fn sample(&self, rng: &mut SplitMix64, n: usize, p: usize, a: usize) -> CvpnBatch {
        let mut b = CvpnBatch::default();
        if self.items.is_empty() {
            return b;
        }
        for _ in 0..n {
            let e = &self.items[rng.below(self.items.len())];
            b.input.extend_from_slice(&e.input);
            b.values.extend_from_slice(&e.values);
            b.value_mask.extend_from_slice(&e.value_mask);
            if e.policy.is_empty() {
                b.policy.extend(std::iter::repeat_n(0.0, p * a));
                b.policy_mask.extend(std::iter::repeat_n(0.0, p));
            } else {
                b.policy.extend_from_slice(&e.policy);
                b.policy_mask.extend_from_slice(&e.policy_mask);
            }
        }
        b
    }
}

/// Value examples of solved queries: `answers[i]` are the CFVs of `queries[i]`.
pub fn value_examples(
    encoder: &mut PbsEncoder,
    queries: &[Pbs],
    answers: &[[Vec<f64>; 2]],
) -> Result<Vec<Example>, SearchError> {
    queries
        .iter()
        .zip(answers)
        .map(|(q, v)| {
            let enc = encoder.encode(q)?;
            let (values, value_mask) = encoder.targets(&enc, v);
            Ok(Example {
                input: enc.input,
                values,
                value_mask,
                policy: Vec::new(),
                policy_mask: Vec::new(),
            })
        })
        .collect()
}

/// The policy example of a target, for a network with `a` actions (action ids index the row).
pub fn policy_example(
    encoder: &mut PbsEncoder,
    t: &PolicyTarget,
    a: usize,
) -> Result<Example, SearchError> {
    let p = encoder.private_states();
    let enc = encoder.encode(&t.pbs)?;
    let mut policy = vec![0.0f32; p * a];
    let mut policy_mask = vec![0.0f32; p];
    for (x, (actions, probs)) in t.rows.iter().enumerate().take(p) {
        if actions.is_empty() {
            continue;
        }
        for (&id, &q) in actions.iter().zip(probs) {
            if (id as usize) < a {
                policy[x * a + id as usize] = q as f32;
            }
        }
        policy_mask[x] = 1.0;
    }
    Ok(Example {
        input: enc.input,
        values: vec![0.0; 2 * p],
        value_mask: vec![0.0; 2 * p],
        policy,
        policy_mask,
    })
}

/// The TD(1) value example of a self-play decision (SoG §4.8: the game's outcome as the value
/// target along the main line): at the decided PBS of `t`, player 0's actual private state
/// gets the normalised target `return0 / scale` and player 1's `−return0 / scale`, each with
/// loss weight `weight`; every other entry is masked. The outcome is a sample of the
/// normalised value `CFV(x) / m(x)` (an expected payoff over the opponent's private states
/// drawn from its belief). `None` when `weight` is 0 or neither actual state has opponent
/// mass at the PBS.
pub fn td1_example(
    encoder: &mut PbsEncoder,
    t: &PolicyTarget,
    return0: f64,
    weight: f64,
) -> Result<Option<Example>, SearchError> {
    if weight <= 0.0 {
        return Ok(None);
    }
    let p = encoder.private_states();
    let enc = encoder.encode(&t.pbs)?;
    let mut values = vec![0.0f32; 2 * p];
    let mut value_mask = vec![0.0f32; 2 * p];
    for (i, sign) in [(0usize, 1.0), (1, -1.0)] {
        let x = t.private[i];
        if x < p && enc.mass[i][x] > crate::search::features::MIN_MASS {
            values[i * p + x] = (sign * return0 / encoder.scale()) as f32;
            value_mask[i * p + x] = weight as f32;
        }
    }
    if value_mask.iter().all(|&m| m == 0.0) {
        return Ok(None);
    }
    Ok(Some(Example {
        input: enc.input,
        values,
        value_mask,
        policy: Vec::new(),
        policy_mask: Vec::new(),
    }))
}

// --- checkpoint encoding: little-endian, length-prefixed arrays ---

const BUFFERS_MAGIC: &[u8; 8] = b"SOGBUF01";

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
    put_u64(out, v.len() as u64);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

pub(crate) fn put_f64s(out: &mut Vec<u8>, v: &[f64]) {
    put_u64(out, v.len() as u64);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl Reader<'_> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn len(&mut self, width: usize) -> Result<usize, String> {
        let n = self.u64()? as usize;
        if n.saturating_mul(width) > self.bytes.len() - self.pos {
            return Err(format!("length {n} past the end at byte {}", self.pos));
        }
        Ok(n)
    }

    pub(crate) fn f32s(&mut self) -> Result<Vec<f32>, String> {
        let n = self.len(4)?;
        Ok(self
            .take(4 * n)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    pub(crate) fn f64s(&mut self) -> Result<Vec<f64>, String> {
        let n = self.len(8)?;
        Ok(self
            .take(8 * n)?
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}

/// The query buffer and the example replay as bytes (see [`decode_buffers`]).
pub fn encode_buffers(queries: &QueryBuffer, replay: &ExampleReplay) -> Vec<u8> {
    let mut out = BUFFERS_MAGIC.to_vec();
    put_u64(&mut out, queries.capacity as u64);
    put_u64(&mut out, queries.dropped);
    put_u64(&mut out, queries.items.len() as u64);
    for q in &queries.items {
        put_u64(&mut out, q.node as u64);
        put_f64s(&mut out, &q.ranges[0]);
        put_f64s(&mut out, &q.ranges[1]);
    }
    put_u64(&mut out, replay.capacity as u64);
    put_u64(&mut out, replay.items.len() as u64);
    for e in &replay.items {
        for v in [
            &e.input,
            &e.values,
            &e.value_mask,
            &e.policy,
            &e.policy_mask,
        ] {
            put_f32s(&mut out, v);
        }
    }
    out
}

/// Reads what [`encode_buffers`] wrote; the error says where it is malformed.
pub fn decode_buffers(bytes: &[u8]) -> Result<(QueryBuffer, ExampleReplay), String> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(8)? != BUFFERS_MAGIC {
        return Err("not a self-play buffer file (bad magic)".into());
    }
    let mut queries = QueryBuffer::new(r.u64()? as usize);
    queries.dropped = r.u64()?;
    let n = r.len(24)?;
    for _ in 0..n {
        let node = r.u64()? as u32;
        let r0 = r.f64s()?;
        let r1 = r.f64s()?;
        queries.items.push_back(Pbs {
            node,
            ranges: [r0, r1],
        });
    }
    let mut replay = ExampleReplay::new(r.u64()? as usize);
    let n = r.len(40)?;
    for _ in 0..n {
        replay.items.push_back(Example {
            input: r.f32s()?,
            values: r.f32s()?,
            value_mask: r.f32s()?,
            policy: r.f32s()?,
            policy_mask: r.f32s()?,
        });
    }
    if r.pos != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.pos));
    }
    Ok((queries, replay))
}

#[cfg(test)]
mod tests;
