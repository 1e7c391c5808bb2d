//! The public tree laid out for tensor code: public nodes renumbered breadth-first (every depth
//! and every node's children are contiguous), each node seen as a `[private state]` vector per
//! player and a `[private₀ x private₁]` matrix of histories, infosets as `[private state x
//! action]` blocks of their public node, and integer index tables that move reach vectors down
//! and value vectors up one level at a time.
//!
//! # Slots
//! `P` is the largest private-state count of either player in any node (both players share it
//! so that joint blocks are square); player `i`'s private state `x` at node `n` is *slot*
//! `n * P + x`, and history `(x₀, x₁)` of node `n` is joint slot `n * P² + x₀ * P + x₁`.
//! Slots no history occupies are marked invalid and carry zeros.
//!
//! # Edges
//! Moving from a node to its child, a player's private state either stays (actions are public
//! in the games this layout accepts) or is refined by a private chance event (a card dealt to
//! the player). Every child slot therefore has one parent slot ([`TensorTree::up`]), and a
//! child history one parent history ([`TensorTree::up_joint`]); the layout is refused for games
//! where that fails (imperfect recall, or hidden actions as in imperfect-information
//! Goofspiel, whose public successors are not one per action). It is also refused, before any
//! `n·P²` array is allocated, where one node holds two histories with the same pair of private
//! states (Hold'em: hole cards dealt in either order, or a merged chance run) and where the
//! joint slots would exceed [`MAX_JOINT_SLOTS`] (two hole cards give `P = 1326`).
//!
//! # Subtrees and depth limits
//! [`TensorTree::build`] can start at any public node (a subgame, entered with given ranges)
//! and stop at a depth: non-terminal nodes at the limit become [`TensorKind::Leaf`] nodes whose
//! values a leaf evaluator supplies.
//!
//! The layout holds plain integers and `f64`s; it knows nothing of tensors or of burn.

use super::history::{HistoryKind, HistoryTree};
use super::{NONE, NodeKind, PublicTree, TreeError};
use crate::game::Player;

/// Most joint (node, private₀, private₁) slots a layout may allocate (about 40 bytes each).
pub const MAX_JOINT_SLOTS: usize = 1 << 25;

/// What happens at a node of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    Chance,
    Decision(Player),
    Terminal,
    /// A non-terminal node at the depth limit: its values come from a leaf evaluator.
    Leaf,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct TensorTree {
    /// Private states per player and node (padded).
    pub p: usize,
    /// Most actions of any infoset.
    pub a: usize,
    /// Most children of any node.
    pub k: usize,
    /// Public-tree node id of each layout node (layout ids are breadth-first from the roots,
    /// which are nodes `0 .. roots`).
    pub public_node: Vec<u32>,
    pub kind: Vec<TensorKind>,
    pub parent: Vec<u32>,
    pub first_child: Vec<u32>,
    pub num_children: Vec<u32>,
    /// For a child of a decision node: the index of the action leading to it (one action may
    /// lead to several child nodes, e.g. a call to showdowns with different public outcomes).
    pub action_index: Vec<u32>,
    /// Node ranges of each depth (depth 0 holds the roots).
    pub levels: Vec<(u32, u32)>,
    /// Per player, per slot `n * P + x`: whether some history of `n` has private state `x`.
    pub valid: [Vec<bool>; 2],
    /// Per player, per slot: the parent node's slot of the same private state (`NONE` at the
    /// root and for invalid slots).
    pub up: [Vec<u32>; 2],
    /// Per joint slot `n * P² + x₀ * P + x₁`: whether the history exists.
    pub joint_valid: Vec<bool>,
    /// Per joint slot: chance probability of reaching the history from the game's root.
    pub chance_reach: Vec<f64>,
    /// Per joint slot: chance probability of the edge from the parent history (1 after a
    /// decision, and at the root).
    pub edge_prob: Vec<f64>,
    /// Per joint slot: the parent's joint slot (`NONE` at the root and for invalid slots).
    pub up_joint: Vec<u32>,
    /// Per joint slot of terminal nodes: player 0's utility (0 elsewhere).
    pub utility: Vec<f64>,
    /// Per player: its decision nodes (layout ids) in layout order.
    pub decisions: [Vec<u32>; 2],
    /// Per node: its index in its actor's `decisions` (`NONE` elsewhere).
    pub decision_index: Vec<u32>,
    /// Per player, per `(decision, x)`: the public tree's infoset id (`NONE` if no infoset).
    pub infoset: [Vec<u32>; 2],
    /// Per player, per decision: number of actions.
    pub num_actions: [Vec<u32>; 2],
    /// Terminal nodes, then leaf nodes (layout ids).
    pub terminals: Vec<u32>,
    pub leaves: Vec<u32>,
    /// Per player, per slot: the player's last own sequence (global action index of the public
    /// tree, `Infosets::root()` for the empty one; `NONE` for invalid slots). Ranges of a
    /// behavioural policy at any node follow from it.
    pub own_seq: [Vec<u32>; 2],
}

impl TensorTree {
    /// Lays out the subtree of `tree` below public node `root`, cut at `depth_limit` levels
    /// below it (`None`: the whole subtree).
    pub fn build(
        tree: &PublicTree,
        ht: &HistoryTree,
        root: u32,
        depth_limit: Option<usize>,
    ) -> Result<TensorTree, TreeError> {
        Self::build_forest(tree, ht, &[root], depth_limit)
    }

    /// Lays out the subtrees below several public nodes side by side (a forest: the roots are
    /// the nodes of depth 0, in the given order), so that one solver pass handles different
    /// public states at once, as search over many public belief states needs. No root may lie
    /// below another.
    pub fn build_forest(
        tree: &PublicTree,
        ht: &HistoryTree,
        roots: &[u32],
        depth_limit: Option<usize>,
    ) -> Result<TensorTree, TreeError> {
        check_roots(tree, roots)?;
        let bfs = breadth_first(tree, roots, depth_limit);
        let order = bfs.order;
        let n = order.len();
        let p = check_joint_layout(tree, ht, &order)?;
        let pp = p * p;
        let mut t = TensorTree {
            p,
            a: 1,
            k: bfs.num_children.iter().copied().max().unwrap_or(0).max(1) as usize,
            public_node: order.clone(),
            kind: bfs.kind,
            parent: bfs.parent,
            first_child: bfs.first_child,
            num_children: bfs.num_children,
            action_index: vec![NONE; n],
            levels: bfs.levels,
            valid: [vec![false; n * p], vec![false; n * p]],
            up: [vec![NONE; n * p], vec![NONE; n * p]],
            joint_valid: vec![false; n * pp],
            chance_reach: vec![0.0; n * pp],
            edge_prob: vec![0.0; n * pp],
            up_joint: vec![NONE; n * pp],
            utility: vec![0.0; n * pp],
            decisions: [Vec::new(), Vec::new()],
            decision_index: vec![NONE; n],
            infoset: [Vec::new(), Vec::new()],
            num_actions: [Vec::new(), Vec::new()],
            terminals: Vec::new(),
            leaves: Vec::new(),
            own_seq: [vec![NONE; n * p], vec![NONE; n * p]],
        };
        for (l, &pn) in order.iter().enumerate() {
            t.fill_histories(tree, ht, l, pn as usize)?;
        }
        for (l, &pn) in order.iter().enumerate() {
            t.fill_node(tree, l, pn as usize)?;
        }
        Ok(t)
    }

    /// Fills the slots of layout node `l` (public node `pn`) from its histories: validity,
    /// reach, utilities, own sequences, and the links to the parent node's slots.
    fn fill_histories(
        &mut self,
        tree: &PublicTree,
        ht: &HistoryTree,
        l: usize,
        pn: usize,
    ) -> Result<(), TreeError> {
        let err = |what: String| layout_err(tree, what);
        let (p, pp) = (self.p, self.p * self.p);
        let t = self;
        let lp = t.parent[l];
        for &h in ht.node_histories(pn) {
            let h = h as usize;
            let [x0, x1] = ht.private[h].map(|x| x as usize);
            let js = l * pp + x0 * p + x1;
            debug_assert!(!t.joint_valid[js], "checked before allocating");
            t.joint_valid[js] = true;
            t.chance_reach[js] = ht.chance_reach[h];
            t.edge_prob[js] = 1.0;
            if ht.kind[h] == HistoryKind::Terminal {
                t.utility[js] = ht.utility[h];
            }
            for (pl, x) in [x0, x1].into_iter().enumerate() {
                let s = l * p + x;
                let seq = ht.seq[h][pl];
                if t.valid[pl][s] && t.own_seq[pl][s] != seq {
                    return Err(err(format!(
                        "player {pl}'s private state {x} at public node {pn} follows two \
                         different own sequences (imperfect recall)"
                    )));
                }
                t.valid[pl][s] = true;
                t.own_seq[pl][s] = seq;
            }
            if lp == NONE {
                continue;
            }
            let ph = ht.parent[h] as usize;
            let [y0, y1] = ht.private[ph].map(|x| x as usize);
            let lp = lp as usize;
            t.up_joint[js] = (lp * pp + y0 * p + y1) as u32;
            t.edge_prob[js] = ht.chance_prob[h];
            for (pl, (x, y)) in [(x0, y0), (x1, y1)].into_iter().enumerate() {
                let s = l * p + x;
                let up = (lp * p + y) as u32;
                if t.up[pl][s] != NONE && t.up[pl][s] != up {
                    return Err(err(format!(
                        "player {pl}'s private state {x} at public node {pn} comes from two \
                         private states of the parent node"
                    )));
                }
                t.up[pl][s] = up;
            }
            if let TensorKind::Decision(_) = t.kind[lp] {
                // The k-th action of every history must lead to the k-th child node.
                let k = ht.children(ph).position(|c| c == h).unwrap() as u32;
                if t.action_index[l] != NONE && t.action_index[l] != k {
                    return Err(err(format!(
                        "public node {pn} is reached by different actions from its parent; \
                         the tensor layout needs public actions"
                    )));
                }
                t.action_index[l] = k;
            }
        }
        Ok(())
    }

    /// Records layout node `l` (public node `pn`) in the decision, infoset, terminal and leaf
    /// tables.
    fn fill_node(&mut self, tree: &PublicTree, l: usize, pn: usize) -> Result<(), TreeError> {
        let err = |what: String| layout_err(tree, what);
        let p = self.p;
        let t = self;
        match t.kind[l] {
            TensorKind::Decision(pl) => {
                t.decision_index[l] = t.decisions[pl].len() as u32;
                t.decisions[pl].push(l as u32);
                let inf = &tree.infosets[pl];
                let (lo, hi) = tree.nodes[pn].infoset_range;
                let mut row = vec![NONE; p];
                let mut na = 0u32;
                for i in lo..hi {
                    row[inf.private[i as usize] as usize] = i;
                    let len = inf.range(i as usize).len() as u32;
                    if na != 0 && na != len {
                        return Err(err(format!(
                            "infosets of public node {pn} have different action counts"
                        )));
                    }
                    na = len;
                }
                let c0 = t.first_child[l] as usize;
                for c in c0..c0 + t.num_children[l] as usize {
                    if t.action_index[c] >= na {
                        return Err(err(format!(
                            "a child of public node {pn} follows no action of its {na}"
                        )));
                    }
                }
                t.a = t.a.max(na as usize);
                t.infoset[pl].extend(row);
                t.num_actions[pl].push(na);
            }
            TensorKind::Terminal => t.terminals.push(l as u32),
            TensorKind::Leaf => t.leaves.push(l as u32),
            TensorKind::Chance => {}
        }
        Ok(())
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.kind.len()
    }

    /// `true` if the layout has no nodes (never: the root is always there).
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// Player `i`'s range at every slot under a behavioural `policy` of the whole game: the
    /// product of `i`'s own action probabilities on the way to the slot (0 at invalid slots).
    pub fn ranges(&self, tree: &PublicTree, policy: &[Vec<f64>; 2], i: Player) -> Vec<f64> {
        let mut seq_reach = vec![0.0; tree.num_sequences(i)];
        tree.reach(i, &policy[i], &mut seq_reach);
        self.own_seq[i]
            .iter()
            .map(|&s| {
                if s == NONE {
                    0.0
                } else {
                    seq_reach[s as usize]
                }
            })
            .collect()
    }

    /// The `[P x P]` matrix of histories of node `l` weighted by chance reach and player 0's
    /// value `u(h)` (`values`: per history of `ht`, e.g. [`HistoryTree::values_into`] under a
    /// fixed policy; the utility at terminals): what a range-vs-range evaluation of the node
    /// multiplies the opponent's range with.
    pub fn value_matrix(&self, ht: &HistoryTree, l: usize, values: &[f64]) -> Vec<f64> {
        let p = self.p;
        let mut m = vec![0.0; p * p];
        for &h in ht.node_histories(self.public_node[l] as usize) {
            let h = h as usize;
            let [x0, x1] = ht.private[h].map(|x| x as usize);
            m[x0 * p + x1] = ht.chance_reach[h] * values[h];
        }
        m
    }

    /// Pairs `(block entry, global action index)` of player `i`: where each infoset action of
    /// the layout sits in the `[decision x P x A]` blocks the tensor solvers keep, and in the
    /// public tree's flat per-infoset-action arrays.
    pub fn block_entries<'a>(
        &'a self,
        tree: &'a PublicTree,
        i: Player,
    ) -> impl Iterator<Item = (usize, usize)> + 'a {
        let a = self.a;
        self.infoset[i]
            .iter()
            .enumerate()
            .filter(|(_, inf)| **inf != NONE)
            .flat_map(move |(row, &inf)| {
                tree.infosets[i]
                    .range(inf as usize)
                    .enumerate()
                    .map(move |(k, g)| (row * a + k, g))
            })
    }

    /// Maps a `[decision x P x A]` block array of player `i` (as the tensor solvers keep it)
    /// into the public tree's flat per-infoset-action layout; entries of infosets outside this
    /// layout are left as they are in `out`.
    pub fn scatter_blocks(&self, tree: &PublicTree, i: Player, blocks: &[f64], out: &mut [f64]) {
        for (e, g) in self.block_entries(tree, i) {
            out[g] = blocks[e];
        }
    }

    /// The inverse of [`TensorTree::scatter_blocks`]: gathers flat per-infoset-action values
    /// into `[decision x P x A]` blocks (zeros where no infoset or action exists).
    pub fn gather_blocks(&self, tree: &PublicTree, i: Player, flat: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.decisions[i].len() * self.p * self.a];
        for (e, g) in self.block_entries(tree, i) {
            out[e] = flat[g];
        }
        out
    }
}

/// The error of a layout `tree` refuses.
fn layout_err(tree: &PublicTree, what: String) -> TreeError {
    TreeError::Factorisation {
        game: tree.game.clone(),
        history: String::new(),
        what,
    }
}

/// Refuses an empty forest, roots that are no public node, and roots below (or equal to)
/// another root.
fn check_roots(tree: &PublicTree, roots: &[u32]) -> Result<(), TreeError> {
    let err = |what: String| layout_err(tree, what);
    if roots.is_empty() {
        return Err(err("a tensor layout needs at least one root".into()));
    }
    for (i, &r) in roots.iter().enumerate() {
        if r as usize >= tree.nodes.len() {
            return Err(err(format!("root {r} is not a public node")));
        }
        let mut a = r;
        while a != NONE {
            if roots
                .iter()
                .enumerate()
                .any(|(j, &o)| o == a && (j != i || a != r))
            {
                return Err(err(format!(
                    "root {r} lies below (or repeats) root {a}; forest roots must be disjoint subtrees"
                )));
            }
            a = tree.nodes[a as usize].parent;
        }
    }
    Ok(())
}

/// The nodes of a forest in breadth-first order, with their links and kinds.
struct BreadthFirst {
    /// Public node of each layout node.
    order: Vec<u32>,
    parent: Vec<u32>,
    levels: Vec<(u32, u32)>,
    first_child: Vec<u32>,
    num_children: Vec<u32>,
    kind: Vec<TensorKind>,
}

/// Orders the subtrees below `roots` breadth-first, cutting at `depth_limit`.
fn breadth_first(tree: &PublicTree, roots: &[u32], depth_limit: Option<usize>) -> BreadthFirst {
    let mut order: Vec<u32> = roots.to_vec();
    let mut parent = vec![NONE; roots.len()];
    let mut levels = vec![(0u32, roots.len() as u32)];
    let mut first_child = Vec::new();
    let mut num_children = Vec::new();
    let mut kind = Vec::new();
    let mut i = 0usize;
    let mut depth = 0usize;
    while i < order.len() {
        if i as u32 == levels[depth].1 {
            depth += 1;
            levels.push((i as u32, order.len() as u32));
        }
        let n = order[i] as usize;
        let node = &tree.nodes[n];
        let at_limit = depth_limit.is_some_and(|d| depth >= d);
        let k = match node.kind {
            NodeKind::Terminal => TensorKind::Terminal,
            _ if at_limit => TensorKind::Leaf,
            NodeKind::Chance => TensorKind::Chance,
            NodeKind::Decision(p) => TensorKind::Decision(p),
        };
        kind.push(k);
        first_child.push(order.len() as u32);
        if matches!(k, TensorKind::Chance | TensorKind::Decision(_)) {
            for &c in &node.children {
                order.push(c);
                parent.push(i as u32);
            }
            num_children.push(node.children.len() as u32);
        } else {
            num_children.push(0);
        }
        i += 1;
    }
    if levels.last().is_some_and(|l| l.0 == l.1) {
        levels.pop();
    }
    BreadthFirst {
        order,
        parent,
        levels,
        first_child,
        num_children,
        kind,
    }
}

/// The private-state padding `P` of the layout of `order`, after refusing, before any
/// `n * P²` joint slots are allocated, games whose private states do not name the history
/// (poker's hole cards dealt in either order, a flop in any order) and joint layouts that
/// are too large (P = 1326 for two hole cards).
fn check_joint_layout(
    tree: &PublicTree,
    ht: &HistoryTree,
    order: &[u32],
) -> Result<usize, TreeError> {
    let err = |what: String| layout_err(tree, what);
    let n = order.len();
    let mut p = 1usize;
    for &pn in order {
        for &h in ht.node_histories(pn as usize) {
            for x in ht.private[h as usize] {
                p = p.max(x as usize + 1);
            }
        }
    }
    let pp = p * p;
    let mut seen = std::collections::HashSet::new();
    for &pn in order {
        seen.clear();
        for &h in ht.node_histories(pn as usize) {
            let [x0, x1] = ht.private[h as usize];
            if !seen.insert((x0, x1)) {
                return Err(err(format!(
                    "public node {pn} holds two histories with private states ({x0}, {x1}); \
                     the tensor layout needs the private states to identify the history"
                )));
            }
        }
    }
    if n.saturating_mul(pp) > MAX_JOINT_SLOTS {
        return Err(err(format!(
            "the dense layout needs {n} nodes x {p}² joint slots, more than {MAX_JOINT_SLOTS}"
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::registry::load_game;
    use std::sync::Arc;

    fn layout(name: &str) -> (Arc<PublicTree>, HistoryTree, TensorTree) {
        let game = load_game(name).unwrap();
        let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
        let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
        let t = TensorTree::build(&tree, &ht, 0, None).unwrap();
        (tree, ht, t)
    }

    #[test]
    fn every_history_and_infoset_has_one_slot() {
        for name in ["kuhn_poker", "leduc_poker", "liars_dice"] {
            let (tree, ht, t) = layout(name);
            assert_eq!(t.len(), tree.nodes.len(), "{name}");
            let histories = t.joint_valid.iter().filter(|&&v| v).count();
            assert_eq!(histories, ht.len(), "{name}: joint slots = histories");
            for pl in 0..2 {
                let mut seen = vec![false; tree.infosets[pl].len()];
                for &i in t.infoset[pl].iter().filter(|&&i| i != NONE) {
                    assert!(!seen[i as usize], "{name}: infoset {i} twice");
                    seen[i as usize] = true;
                }
                assert!(
                    seen.iter().all(|&s| s),
                    "{name}: every infoset of player {pl}"
                );
            }
            // Levels are contiguous and children sit one level below their parent.
            for (d, &(lo, hi)) in t.levels.iter().enumerate() {
                for l in lo..hi {
                    let c0 = t.first_child[l as usize];
                    for c in c0..c0 + t.num_children[l as usize] {
                        assert_eq!(t.parent[c as usize], l);
                        assert!(t.levels[d + 1].0 <= c && c < t.levels[d + 1].1);
                    }
                }
            }
            // Every history below the root hangs from a history of the parent node.
            let pp = t.p * t.p;
            for js in 0..t.len() * pp {
                if t.joint_valid[js] && js >= pp {
                    let up = t.up_joint[js] as usize;
                    assert!(t.joint_valid[up], "{name}: joint slot {js}");
                    assert_eq!(up / pp, t.parent[js / pp] as usize);
                }
            }
        }
    }

    #[test]
    fn hidden_actions_are_refused_with_a_reason() {
        let game = load_game(
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
        ).unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
        let e = TensorTree::build(&tree, &ht, 0, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("public actions") || e.contains("private states"),
            "{e}"
        );
    }

    #[test]
    fn depth_limit_turns_nodes_into_leaves() {
        let game = load_game("leduc_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
        let full = TensorTree::build(&tree, &ht, 0, None).unwrap();
        let cut = TensorTree::build(&tree, &ht, 0, Some(4)).unwrap();
        assert!(cut.len() < full.len());
        assert_eq!(cut.levels.len(), 5);
        assert!(!cut.leaves.is_empty());
        for &l in &cut.leaves {
            assert_eq!(cut.num_children[l as usize], 0);
        }
    }
}
