//! The explicit history tree: every history of a game as one row of flat arrays, with its
//! public node and the acting player's infoset in the numbering of a [`PublicTree`].
//!
//! Sampling algorithms (Monte-Carlo CFR, public outcome sampling, stochastic FTRL/OMD
//! gradient estimators) walk single histories, which the sequence-form arrays of
//! [`PublicTree`] merge away. This tree keeps them, so a sampled walk is a loop over integer
//! arrays with no game code, no strings and no hashing, and the strategies it learns are
//! [`TreePolicy`](super::TreePolicy) vectors that the exact evaluators score directly.
//!
//! Histories are numbered breadth-first (within a depth by action sequence, or grouped by the
//! parent's public node: [`HistoryTree::build_grouped`]), so the children of a history are
//! contiguous:
//! `children(h) = first_child[h] .. first_child[h] + num_children[h]`. At a decision history
//! the `k`-th child follows the `k`-th legal action of its infoset, i.e. global action index
//! `infosets[p].offset[infoset[h]] + k`. Histories are also listed per public node
//! ([`HistoryTree::node_histories`]).

use super::{NONE, NodeKind, PublicTree, TreeError};
use crate::game::{Action, Game, Player, State, Turn};

/// The kind of a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryKind {
    Chance,
    Decision(Player),
    Terminal,
}

/// What a sampled walk reads at every history it enters, packed into 16 bytes: one cache
/// line holds four histories, where the separate arrays of [`HistoryTree`] cost a line each
/// (walks jump between distant histories, so these loads are mostly cache misses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// [`HistoryTree::first_child`].
    pub first_child: u32,
    /// [`HistoryTree::num_children`].
    pub num_children: u32,
    /// At a decision history of player `p`: the global action index of its infoset's first
    /// action (`tree.infosets[p].offset[infoset]`); 0 elsewhere.
    pub action_base: u32,
    /// [`Step::PLAYER0`], [`Step::PLAYER1`], [`Step::CHANCE`] or [`Step::TERMINAL`].
    pub kind: u8,
}

impl Step {
    pub const PLAYER0: u8 = 0;
    pub const PLAYER1: u8 = 1;
    pub const CHANCE: u8 = 2;
    pub const TERMINAL: u8 = 3;

    /// The children's ids.
    #[inline]
    pub fn children(&self) -> std::ops::Range<usize> {
        let f = self.first_child as usize;
        f..f + self.num_children as usize
    }
}

/// All histories of a game, as flat arrays (see the module docs).
#[derive(Clone, Debug)]
pub struct HistoryTree {
    pub kind: Vec<HistoryKind>,
    /// Parent history (`NONE` at the root, history 0).
    pub parent: Vec<u32>,
    /// The action that led from the parent (0 at the root).
    pub action: Vec<Action>,
    /// Probability of that action if the parent is a chance history, else 1.
    pub chance_prob: Vec<f64>,
    /// Product of chance probabilities from the root.
    pub chance_reach: Vec<f64>,
    /// Public node in the [`PublicTree`].
    pub node: Vec<u32>,
    /// The acting player's infoset at decision histories (`NONE` elsewhere).
    pub infoset: Vec<u32>,
    /// Each player's private-state index (as [`State::private_state`]).
    pub private: Vec<[u32; 2]>,
    /// Each player's last own sequence (global action index; the player's `Infosets::root()`
    /// for the empty sequence).
    pub seq: Vec<[u32; 2]>,
    pub first_child: Vec<u32>,
    pub num_children: Vec<u32>,
    /// Player 0's payoff at terminals (player 1 gets the negative), 0 elsewhere.
    pub utility: Vec<f64>,
    /// Per history, the packed fields of [`Step`] (a copy of `kind`, `first_child`,
    /// `num_children` and the infoset's action offset).
    pub steps: Vec<Step>,
    /// `true` when built by [`HistoryTree::build_grouped`] (ids grouped by public node).
    pub grouped: bool,
    /// Histories of each public node, ascending.
    node_start: Vec<u32>,
    node_list: Vec<u32>,
}

impl HistoryTree {
    /// Walks `game` and lists its histories; `tree` must be the game's compiled tree (it
    /// supplies the public nodes and infoset numbering). Fails like [`PublicTree::build`] on
    /// games whose histories disagree with the tree. Within a depth, histories are numbered in
    /// the order of their action sequences (the layout history walks such as outcome sampling
    /// run fastest on).
    pub fn build(game: &dyn Game, tree: &PublicTree) -> Result<HistoryTree, TreeError> {
        Self::build_ordered(game, tree, false)
    }

    /// [`HistoryTree::build`] with the histories of each depth numbered grouped by their
    /// parent's public node: the children of one public node's histories get one contiguous
    /// block of ids, so the histories a public-state walk (POS) touches at a node and its
    /// successor lie close together instead of spread over the whole depth (Liar's Dice POS:
    /// 1.27x more nodes per CPU-second; outcome sampling runs 13% slower on it, hence two
    /// orders).
    pub fn build_grouped(game: &dyn Game, tree: &PublicTree) -> Result<HistoryTree, TreeError> {
        Self::build_ordered(game, tree, true)
    }

    fn build_ordered(
        game: &dyn Game,
        tree: &PublicTree,
        grouped: bool,
    ) -> Result<HistoryTree, TreeError> {
        let mismatch = |state: &dyn State, what: &str| TreeError::Factorisation {
            game: game.load_string(),
            history: crate::game::history_string(state.history()),
            what: format!("history tree disagrees with the compiled tree: {what}"),
        };
        let mut t = HistoryTree {
            kind: Vec::new(),
            parent: Vec::new(),
            action: Vec::new(),
            chance_prob: Vec::new(),
            chance_reach: Vec::new(),
            node: Vec::new(),
            infoset: Vec::new(),
            private: Vec::new(),
            seq: Vec::new(),
            first_child: Vec::new(),
            num_children: Vec::new(),
            utility: Vec::new(),
            steps: Vec::new(),
            grouped,
            node_start: Vec::new(),
            node_list: Vec::new(),
        };
        let roots = [
            tree.infosets[0].root() as u32,
            tree.infosets[1].root() as u32,
        ];
        t.push(NONE, 0, 1.0, 1.0, 0, roots);
        // Level by level, each level's parents in id order or (grouped) stably sorted by
        // public node; children get the next free ids.
        let mut level: Vec<(usize, Box<dyn State>)> = vec![(0, game.new_initial_state())];
        let mut next_level: Vec<(usize, Box<dyn State>)> = Vec::new();
        while !level.is_empty() {
            if grouped {
                level.sort_by_key(|&(h, _)| t.node[h]);
            }
            for (h, state) in level.drain(..) {
                let node = t.node[h] as usize;
                let pnode = &tree.nodes[node];
                for p in 0..2 {
                    t.private[h][p] = state.private_state(p) as u32;
                }
                let turn = state.turn();
                let expected = match turn {
                    Turn::Chance => NodeKind::Chance,
                    Turn::Player(p) => NodeKind::Decision(p),
                    Turn::Terminal => NodeKind::Terminal,
                };
                if pnode.kind != expected {
                    return Err(mismatch(state.as_ref(), "node kinds differ"));
                }
                let first = t.kind.len() as u32;
                t.first_child[h] = first;
                let outcomes: Vec<(Action, f64, [u32; 2])> = match turn {
                    Turn::Terminal => {
                        t.kind[h] = HistoryKind::Terminal;
                        t.utility[h] = state.returns()[0];
                        Vec::new()
                    }
                    Turn::Chance => {
                        t.kind[h] = HistoryKind::Chance;
                        let s = t.seq[h];
                        state
                            .chance_outcomes()
                            .into_iter()
                            .map(|(a, p)| (a, p, s))
                            .collect()
                    }
                    Turn::Player(p) => {
                        t.kind[h] = HistoryKind::Decision(p);
                        let private = t.private[h][p];
                        let (lo, hi) = pnode.infoset_range;
                        let inf = &tree.infosets[p];
                        let i = (lo..hi)
                            .find(|&i| inf.private[i as usize] == private)
                            .ok_or_else(|| mismatch(state.as_ref(), "infoset not found"))?;
                        t.infoset[h] = i;
                        let range = inf.range(i as usize);
                        let legal = state.legal_actions();
                        if inf.actions[range.clone()] != legal[..] {
                            return Err(mismatch(state.as_ref(), "legal actions differ"));
                        }
                        legal
                            .into_iter()
                            .zip(range)
                            .map(|(a, g)| {
                                let mut s = t.seq[h];
                                s[p] = g as u32;
                                (a, 1.0, s)
                            })
                            .collect()
                    }
                };
                t.num_children[h] = outcomes.len() as u32;
                let reach = t.chance_reach[h];
                for (a, prob, s) in outcomes {
                    let mut child = state.clone_box();
                    child.apply_action(a);
                    // Inside a merged chance run the child stays in the run's node.
                    let cnode = if tree.merged_chance
                        && pnode.kind == NodeKind::Chance
                        && child.turn() == Turn::Chance
                    {
                        node as u32
                    } else {
                        let key = child.public_tree_key();
                        pnode
                            .children
                            .iter()
                            .copied()
                            .find(|&c| tree.nodes[c as usize].key == key)
                            .ok_or_else(|| mismatch(child.as_ref(), "public node not found"))?
                    };
                    next_level.push((t.kind.len(), child));
                    t.push(h as u32, a, prob, reach * prob, cnode, s);
                }
            }
            std::mem::swap(&mut level, &mut next_level);
        }
        t.index(tree);
        Ok(t)
    }

    /// The per-history steps of the walks and the histories of each public node (counting
    /// sort by node, ascending ids within a node).
    fn index(&mut self, tree: &PublicTree) {
        self.steps = (0..self.kind.len())
            .map(|h| {
                let (kind, action_base) = match self.kind[h] {
                    HistoryKind::Decision(p) => {
                        (p as u8, tree.infosets[p].offset[self.infoset[h] as usize])
                    }
                    HistoryKind::Chance => (Step::CHANCE, 0),
                    HistoryKind::Terminal => (Step::TERMINAL, 0),
                };
                Step {
                    first_child: self.first_child[h],
                    num_children: self.num_children[h],
                    action_base,
                    kind,
                }
            })
            .collect();
        // Group histories by public node (counting sort keeps them ascending).
        let n_nodes = tree.nodes.len();
        let mut count = vec![0u32; n_nodes + 1];
        for &n in &self.node {
            count[n as usize + 1] += 1;
        }
        for k in 0..n_nodes {
            count[k + 1] += count[k];
        }
        self.node_start = count.clone();
        self.node_list = vec![0; self.kind.len()];
        for (h, &n) in self.node.iter().enumerate() {
            let slot = &mut count[n as usize];
            self.node_list[*slot as usize] = h as u32;
            *slot += 1;
        }
    }

    fn push(&mut self, parent: u32, a: Action, prob: f64, reach: f64, node: u32, seq: [u32; 2]) {
        self.kind.push(HistoryKind::Terminal);
        self.parent.push(parent);
        self.action.push(a);
        self.chance_prob.push(prob);
        self.chance_reach.push(reach);
        self.node.push(node);
        self.infoset.push(NONE);
        self.private.push([0, 0]);
        self.seq.push(seq);
        self.first_child.push(0);
        self.num_children.push(0);
        self.utility.push(0.0);
    }

    /// Number of histories.
    pub fn len(&self) -> usize {
        self.kind.len()
    }

    /// `true` if there are none (never, for a built tree).
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// The actions (chance outcomes included) that lead from the root to history `h`.
    pub fn actions_to(&self, h: usize) -> Vec<Action> {
        let mut path = Vec::new();
        let mut x = h;
        while x != 0 {
            path.push(self.action[x]);
            x = self.parent[x] as usize;
        }
        path.reverse();
        path
    }

    /// Children of history `h` (contiguous ids).
    pub fn children(&self, h: usize) -> std::ops::Range<usize> {
        let f = self.first_child[h] as usize;
        f..f + self.num_children[h] as usize
    }

    /// The histories of public node `n`, ascending.
    pub fn node_histories(&self, n: usize) -> &[u32] {
        &self.node_list[self.node_start[n] as usize..self.node_start[n + 1] as usize]
    }

    /// `u(h | σ)` (player 0's expected payoff) of every history under `policy` (indexed like
    /// [`super::TreePolicy`]) into `out`: one reverse pass, children come after parents.
    pub fn values_into(&self, tree: &PublicTree, policy: &[Vec<f64>; 2], out: &mut [f64]) {
        for h in (0..self.len()).rev() {
            out[h] = match self.kind[h] {
                HistoryKind::Terminal => self.utility[h],
                HistoryKind::Chance => self.children(h).map(|c| self.chance_prob[c] * out[c]).sum(),
                HistoryKind::Decision(p) => {
                    let base = tree.infosets[p].offset[self.infoset[h] as usize] as usize;
                    let kids = self.children(h);
                    super::expected_value(&policy[p][base..base + kids.len()], &out[kids])
                }
            };
        }
    }

    /// `π_{-p}(h)`: the reach of chance and of `p`'s opponent of every history, top-down.
    pub fn opponent_reach(&self, tree: &PublicTree, policy: &[Vec<f64>; 2], p: Player) -> Vec<f64> {
        self.reach_with_own(tree, policy, p, |_| 1.0)
    }

    /// The reach of every history when chance and `p`'s opponent follow `policy` and `p` takes
    /// each of its `n` actions with probability `own(n)` (`|_| 1.0`: [`Self::opponent_reach`];
    /// `|n| 1.0 / n`: `p` exploring uniformly), top-down.
    pub fn reach_with_own(
        &self,
        tree: &PublicTree,
        policy: &[Vec<f64>; 2],
        p: Player,
        own: impl Fn(usize) -> f64,
    ) -> Vec<f64> {
        let mut r = vec![0.0; self.len()];
        r[0] = 1.0;
        for h in 0..self.len() {
            match self.kind[h] {
                HistoryKind::Terminal => {}
                HistoryKind::Chance => {
                    for c in self.children(h) {
                        r[c] = r[h] * self.chance_prob[c];
                    }
                }
                HistoryKind::Decision(q) => {
                    let base = tree.infosets[q].offset[self.infoset[h] as usize] as usize;
                    let kids = self.children(h);
                    let mine = own(kids.len());
                    for (k, c) in kids.enumerate() {
                        r[c] = if q == p {
                            r[h] * mine
                        } else {
                            r[h] * policy[q][base + k]
                        };
                    }
                }
            }
        }
        r
    }

    /// Exact expected payoff of player 0 under `policy` (indexed like [`super::TreePolicy`]),
    /// computed history by history; agrees with the sequence-form sweep of [`PublicTree`].
    pub fn expected_value(&self, tree: &PublicTree, policy: &[Vec<f64>; 2]) -> f64 {
        let mut reach = vec![0.0; self.len()];
        reach[0] = 1.0;
        let mut total = 0.0;
        for h in 0..self.len() {
            match self.kind[h] {
                HistoryKind::Terminal => total += reach[h] * self.utility[h],
                HistoryKind::Chance => {
                    for c in self.children(h) {
                        reach[c] = reach[h] * self.chance_prob[c];
                    }
                }
                HistoryKind::Decision(p) => {
                    let base = tree.infosets[p].offset[self.infoset[h] as usize] as usize;
                    for (k, c) in self.children(h).enumerate() {
                        reach[c] = reach[h] * policy[p][base + k];
                    }
                }
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;

    #[test]
    fn history_tree_matches_the_compiled_tree() {
        for name in ["kuhn_poker", "leduc_poker", "goofspiel5", "liars_dice"] {
            let game = load_game(name).unwrap();
            let tree = PublicTree::build(game.as_ref()).unwrap();
            let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
            assert_eq!(ht.len(), tree.stats.histories, "{name}");
            let terminals = ht
                .kind
                .iter()
                .filter(|k| **k == HistoryKind::Terminal)
                .count();
            assert_eq!(terminals, tree.stats.terminal_histories, "{name}");
            // Every history is listed under its public node exactly once.
            let listed: usize = (0..tree.nodes.len())
                .map(|n| ht.node_histories(n).len())
                .sum();
            assert_eq!(listed, ht.len());
            // The packed steps repeat the flat arrays.
            assert_eq!(std::mem::size_of::<Step>(), 16);
            for (h, st) in ht.steps.iter().enumerate() {
                assert_eq!(st.children(), ht.children(h), "{name}: history {h}");
                let (kind, base) = match ht.kind[h] {
                    HistoryKind::Decision(p) => {
                        (p as u8, tree.infosets[p].offset[ht.infoset[h] as usize])
                    }
                    HistoryKind::Chance => (Step::CHANCE, 0),
                    HistoryKind::Terminal => (Step::TERMINAL, 0),
                };
                assert_eq!(
                    (st.kind, st.action_base),
                    (kind, base),
                    "{name}: history {h}"
                );
            }
            // Expected values agree with the sequence form on a non-uniform policy.
            let mut policy = crate::tree::uniform_tree_policy(&tree);
            for (p, flat) in policy.iter_mut().enumerate() {
                let inf = &tree.infosets[p];
                for i in 0..inf.len() {
                    let r = inf.range(i);
                    let n = r.len() as f64;
                    let z = n * (n + 1.0) / 2.0;
                    for (k, g) in r.enumerate() {
                        flat[g] = (k as f64 + 1.0) / z;
                    }
                }
            }
            let mut r0 = vec![0.0; tree.num_sequences(0)];
            let mut r1 = vec![0.0; tree.num_sequences(1)];
            tree.reach(0, &policy[0], &mut r0);
            tree.reach(1, &policy[1], &mut r1);
            let want = tree.expected_value(&r0, &r1);
            let got = ht.expected_value(&tree, &policy);
            assert!((want - got).abs() < 1e-9, "{name}: {want} vs {got}");
        }
    }
}
