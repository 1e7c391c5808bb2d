//! The compiled game tree: a game walked once and flattened into arrays on which exact solvers
//! and evaluators run as linear sweeps over range vectors.
//!
//! # Model
//! Each player's information sets form a forest (perfect recall): the parent of infoset `I` is
//! the player's last own *sequence* before it, i.e. the pair (earlier infoset, action) — stored as
//! a global action index into the flat `[infoset x action]` arrays — or the empty sequence
//! (index [`Infosets::root`]). A terminal history contributes one entry `(seq0, seq1, coef)` with
//! the last sequence of each player and `coef = P_chance(h) * u_0(h)`: chance is folded into the
//! payoffs, and entries with equal sequences and public node are merged.
//!
//! With sequence reaches `r_p` (each player's own probability of playing its sequence, computed
//! top-down), player 0's counterfactual value of sequence `σ0` is `sum_{(σ0, σ1, c)} c * r_1[σ1]`
//! plus the values of the infosets that follow `σ0`; player 1's likewise with `-c`. Values flow
//! bottom-up over infosets, reaches top-down; that is all a CFR iteration or a best response
//! needs, and no history is visited. This is the sequence form (Koller, Megiddo & von Stengel
//! 1994) laid out for streaming.
//!
//! The public tree is kept alongside: histories are grouped into public nodes by
//! [`State::public_tree_key`] (and their parent node), every infoset records its public node
//! and its private-state index there, and terminal entries are grouped by public node, so
//! range-vs-range views (all private states of a public node) are slices of these arrays.
//! Infosets are numbered by (public node, private state), which puts parents before children.
//!
//! # Infoset identity
//! An infoset *is* a (public node, private state) pair; OpenSpiel's information-state string is
//! kept as its label ([`Infosets::key`]). In every game but `universal_poker` the two coincide
//! one to one. OpenSpiel's poker strings print the board as one set, so histories whose boards
//! came in different rounds (flop `4h` then turn `7c`, or flop `7c` then turn `4h`) share a
//! label while the players saw different public events: those are different public nodes here
//! (the game's public-tree key prints the board per round), hence different infosets with one
//! label. Tabular code keyed by strings merges them; this tree does not.
//!
//! # Chance runs
//! By default every chance history starts a public node of its own, so a board dealt card by
//! card gives one node per dealt prefix, and two orders of the same flop reach two nodes (with
//! equal keys under different parents). [`TreeOptions::merge_chance`] instead folds a run of
//! consecutive chance nodes into its first node: the histories inside the run stay in that
//! node, and the run's outcomes are grouped by the key of the first non-chance history after
//! it. With keys that sort the cards of one deal (as poker's does), all orders of a flop then
//! reach one node, and the infosets equal OpenSpiel's. Leduc's two private deals become one
//! chance node; the infosets and every value are the same either way.

pub mod history;
pub mod poker;
pub mod tensor;

use crate::game::{Action, Game, GameError, Player, State, Turn};
use std::collections::HashMap;

/// A policy as flat per-player arrays over the tree's global action indices.
pub type TreePolicy = [Vec<f64>; 2];

/// The uniform policy as tree arrays.
pub fn uniform_tree_policy(tree: &PublicTree) -> TreePolicy {
    std::array::from_fn(|p| {
        let inf = &tree.infosets[p];
        let mut flat = vec![0.0; inf.num_actions_total()];
        for i in 0..inf.len() {
            let r = inf.range(i);
            let n = r.len() as f64;
            flat[r].iter_mut().for_each(|x| *x = 1.0 / n);
        }
        flat
    })
}

/// `Σ_a σ(a) q(a)`, exactly `q(0)` when all action values are equal.
///
/// Summing `σ(a) q` over actions does not return `q` exactly in floating point (`σ = 1/3`, say),
/// and the residue would become a 1e-17 regret where the true regret is zero. Regret matching
/// is discontinuous there (a positive residue turns a uniform policy pure), so equal action
/// values — common in games with many ties, e.g. Goofspiel's win/loss returns — must give exactly
/// zero regret, as they do in OpenSpiel's per-history computation.
#[inline]
pub fn expected_value(sigma: &[f64], q: &[f64]) -> f64 {
    let first = q[0];
    if q.iter().all(|&x| x == first) {
        return first;
    }
    sigma.iter().zip(q).map(|(s, x)| s * x).sum()
}

/// Marks "no parent" in the `u32` index arrays.
pub const NONE: u32 = u32::MAX;

/// What happens at a public node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Chance,
    Decision(Player),
    Terminal,
}

/// A public node: a set of histories that share the public-tree key (and the parent node).
#[derive(Clone, Debug)]
pub struct PublicNode {
    /// Parent public node (`NONE` at the root).
    pub parent: u32,
    /// Child public nodes, in order of discovery.
    pub children: Vec<u32>,
    pub kind: NodeKind,
    /// OpenSpiel's public state string of its histories (a label: with merged chance runs,
    /// the string of the run's first history).
    pub public_state: String,
    /// The [`State::public_tree_key`] of its histories (of the run's first history when
    /// chance runs are merged): unique among the children of one node.
    pub key: String,
    /// Infosets of the acting player at this node (a contiguous range, ordered by private state).
    pub infoset_range: (u32, u32),
    /// Terminal entries of this node: `terminal_range.0 .. terminal_range.1` in
    /// [`PublicTree::terminals`].
    pub terminal_range: (u32, u32),
}

/// One player's information sets. Actions of all infosets are laid out in one flat array:
/// infoset `i` owns global action indices `offset[i] .. offset[i + 1]`; a global action index is
/// also the index of the sequence "play to `i`, then that action". Index [`Infosets::root`] is the
/// empty sequence.
///
/// An infoset is identified by its (public node, private state) pair; [`Infosets::key`] is
/// OpenSpiel's information-state string of its histories, a label that several infosets may
/// share (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Infosets {
    /// OpenSpiel information-state string of each infoset (its label; not always unique).
    pub key: Vec<String>,
    /// Start of each infoset's actions in the flat arrays; one extra entry at the end.
    pub offset: Vec<u32>,
    /// The legal action behind each global action index.
    pub actions: Vec<Action>,
    /// The parent sequence of each infoset (a global action index, or `root()`).
    pub parent_seq: Vec<u32>,
    /// Public node of each infoset.
    pub node: Vec<u32>,
    /// The player's private-state index of each infoset within its public node.
    pub private: Vec<u32>,
    /// A history (action sequence from the root) that reaches each infoset: lets callers
    /// rebuild a [`State`] to query state-based policies.
    pub history: Vec<Vec<Action>>,
}

impl Infosets {
    /// Number of infosets.
    pub fn len(&self) -> usize {
        self.key.len()
    }

    /// `true` if there are none.
    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }

    /// Total number of (infoset, action) pairs.
    pub fn num_actions_total(&self) -> usize {
        self.actions.len()
    }

    /// Index of the empty sequence: sequence arrays have `root() + 1` entries.
    pub fn root(&self) -> usize {
        self.actions.len()
    }

    /// Global action index range of infoset `i`.
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.offset[i] as usize..self.offset[i + 1] as usize
    }
}

/// Terminal histories with equal last sequences: `coef = sum of P_chance(h) * u_0(h)`.
#[derive(Clone, Copy, Debug)]
pub struct TerminalEntry {
    pub seq: [u32; 2],
    pub coef: f64,
}

/// Counts of what the compilation saw (for comparison with OpenSpiel's game sizes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub histories: usize,
    pub terminal_histories: usize,
    pub decision_histories: usize,
    pub chance_histories: usize,
    pub public_nodes: usize,
}

/// Errors while compiling a tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("game `{game}` has more than {limit} histories; it is too large for the exact tree")]
    TooLarge { game: String, limit: usize },
    #[error(
        "game `{game}`: inconsistent public/private factorisation at history [{history}]: {what}"
    )]
    Factorisation {
        game: String,
        history: String,
        what: String,
    },
    #[error("game `{game}` is not zero-sum at history [{history}]: returns {returns:?}")]
    NotZeroSum {
        game: String,
        history: String,
        returns: [f64; 2],
    },
    #[error(transparent)]
    Game(#[from] GameError),
}

/// The compiled tree of a game. Immutable once built; share it between threads freely.
#[derive(Clone, Debug)]
pub struct PublicTree {
    /// OpenSpiel load string of the game.
    pub game: String,
    pub nodes: Vec<PublicNode>,
    pub infosets: [Infosets; 2],
    /// Terminal entries grouped by public node.
    pub terminals: Vec<TerminalEntry>,
    pub stats: TreeStats,
    /// Whether runs of consecutive chance nodes were merged ([`TreeOptions::merge_chance`]).
    pub merged_chance: bool,
}

/// How [`PublicTree::build_with_options`] compiles a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeOptions {
    /// Most histories to walk before giving up with [`TreeError::TooLarge`].
    pub max_histories: usize,
    /// Read the information-state string and legal actions of every decision history and
    /// check that (public node, private state) pairs and labels agree (slower).
    pub verify: bool,
    /// Fold each run of consecutive chance nodes into its first node (see the module docs).
    pub merge_chance: bool,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            max_histories: DEFAULT_MAX_HISTORIES,
            verify: false,
            merge_chance: false,
        }
    }
}

/// Default cap on the number of histories [`PublicTree::build`] will walk.
pub const DEFAULT_MAX_HISTORIES: usize = 20_000_000;

/// The number of histories of `game` (every node of its game tree: chance, decision and
/// terminal), or [`TreeError::TooLarge`] as soon as it passes `limit`. Walks the tree depth
/// first keeping only the current path, so time is at most `limit` state copies and memory
/// one path, whatever the game: the cheap check the exact evaluations run before compiling a
/// tree (whose memory grows with every history).
pub fn count_histories(game: &dyn Game, limit: usize) -> Result<usize, TreeError> {
    fn walk(state: &dyn State, n: &mut usize, limit: usize) -> bool {
        *n += 1;
        if *n > limit {
            return false;
        }
        let actions: Vec<Action> = match state.turn() {
            Turn::Terminal => return true,
            Turn::Chance => state
                .chance_outcomes()
                .into_iter()
                .map(|(a, _)| a)
                .collect(),
            Turn::Player(_) => state.legal_actions(),
        };
        for a in actions {
            let mut child = state.clone_box();
            child.apply_action(a);
            if !walk(child.as_ref(), n, limit) {
                return false;
            }
        }
        true
    }
    let mut n = 0;
    if walk(game.new_initial_state().as_ref(), &mut n, limit) {
        Ok(n)
    } else {
        Err(TreeError::TooLarge {
            game: game.load_string(),
            limit,
        })
    }
}

struct Builder<'a> {
    game: &'a dyn Game,
    limit: usize,
    verify: bool,
    merge_chance: bool,
    stats: TreeStats,
    node_index: HashMap<(u32, String), u32>,
    nodes: Vec<PublicNode>,
    /// Verified builds: where each label was first seen, as (public node, private state).
    label_index: [HashMap<String, (u32, u32)>; 2],
    slot_index: [HashMap<(u32, u32), u32>; 2],
    infosets: [Infosets; 2],
    terminals: Vec<(u32, TerminalEntry)>,
    history: Vec<Action>,
}

impl Builder<'_> {
    fn err(&self, what: String) -> TreeError {
        TreeError::Factorisation {
            game: self.game.load_string(),
            history: crate::game::history_string(&self.history),
            what,
        }
    }

    fn node_for(&mut self, parent: u32, state: &dyn State) -> u32 {
        let key = (parent, state.public_tree_key());
        if let Some(&n) = self.node_index.get(&key) {
            return n;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(PublicNode {
            parent,
            children: Vec::new(),
            kind: kind_of(state.turn()),
            public_state: state.public_state_string(),
            key: key.1.clone(),
            infoset_range: (0, 0),
            terminal_range: (0, 0),
        });
        if parent != NONE {
            self.nodes[parent as usize].children.push(id);
        }
        self.node_index.insert(key, id);
        id
    }

    /// The infoset of player `p` at `state`, created on first sight. The (public node, private
    /// state) pair names it; its label (the information-state string) is read once, or at
    /// every history in verified builds. Checks perfect recall (one parent sequence per
    /// infoset) and, when verifying, that labels and pairs agree: one label per pair, distinct
    /// labels for the private states of one node, and one public state string per label.
    fn infoset_for(
        &mut self,
        p: usize,
        state: &dyn State,
        node: u32,
        parent_seq: u32,
    ) -> Result<u32, TreeError> {
        let private = state.private_state(p) as u32;
        if let Some(&i) = self.slot_index[p].get(&(node, private)) {
            let inf = &self.infosets[p];
            if inf.parent_seq[i as usize] != parent_seq {
                return Err(self.err(format!(
                    "player {p}'s infostate {:?} is reached after two different own sequences (imperfect recall)",
                    inf.key[i as usize]
                )));
            }
            if self.verify {
                let label = state.information_state_string(p);
                if label != inf.key[i as usize] {
                    return Err(self.err(format!(
                        "public node {node} with private state {private} of player {p} holds two infostates, {:?} and {label:?}",
                        inf.key[i as usize]
                    )));
                }
            }
            return Ok(i);
        }
        let label = state.information_state_string(p);
        if self.verify {
            self.check_label(p, &label, node, private)?;
        }
        let legal = state.legal_actions();
        let i = self.infosets[p].len() as u32;
        self.slot_index[p].insert((node, private), i);
        let inf = &mut self.infosets[p];
        inf.key.push(label);
        inf.parent_seq.push(parent_seq);
        inf.node.push(node);
        inf.private.push(private);
        inf.history.push(self.history.clone());
        let start = *inf.offset.last().unwrap();
        inf.actions.extend_from_slice(&legal);
        inf.offset.push(start + legal.len() as u32);
        Ok(i)
    }

    /// Verified builds: a new (node, private) pair of player `p` labelled `label` must not
    /// share its label with another private state of the same node (the private index would
    /// split one infostate), and a label seen at another node must come with the same public
    /// state string (the public state is a function of the infostate).
    fn check_label(
        &mut self,
        p: usize,
        label: &str,
        node: u32,
        private: u32,
    ) -> Result<(), TreeError> {
        match self.label_index[p].get(label) {
            None => {
                self.label_index[p].insert(label.to_string(), (node, private));
                Ok(())
            }
            Some(&(n, x)) if n == node => Err(self.err(format!(
                "player {p}'s infostate {label:?} spans private states {x} and {private} of public node {node}"
            ))),
            Some(&(n, _)) => {
                let (a, b) = (
                    &self.nodes[n as usize].public_state,
                    &self.nodes[node as usize].public_state,
                );
                if a == b {
                    Ok(())
                } else {
                    Err(self.err(format!(
                        "player {p}'s infostate {label:?} is seen in public states {a:?} and {b:?}"
                    )))
                }
            }
        }
    }

    fn walk(
        &mut self,
        state: &dyn State,
        node: u32,
        seq: [u32; 2],
        chance: f64,
    ) -> Result<(), TreeError> {
        self.stats.histories += 1;
        if self.stats.histories > self.limit {
            return Err(TreeError::TooLarge {
                game: self.game.load_string(),
                limit: self.limit,
            });
        }
        let turn = state.turn();
        if self.nodes[node as usize].kind != kind_of(turn) {
            return Err(self.err("histories of one public node disagree on who moves".into()));
        }
        match turn {
            Turn::Terminal => {
                self.stats.terminal_histories += 1;
                let r = state.returns();
                if (r[0] + r[1]).abs() > 1e-9 {
                    return Err(TreeError::NotZeroSum {
                        game: self.game.load_string(),
                        history: crate::game::history_string(&self.history),
                        returns: r,
                    });
                }
                self.terminals.push((
                    node,
                    TerminalEntry {
                        seq,
                        coef: chance * r[0],
                    },
                ));
                Ok(())
            }
            Turn::Chance => {
                self.stats.chance_histories += 1;
                for (a, p) in state.chance_outcomes() {
                    self.step(state, node, seq, a, chance * p)?;
                }
                Ok(())
            }
            Turn::Player(p) => {
                self.stats.decision_histories += 1;
                let i = self.infoset_for(p, state, node, seq[p])? as usize;
                let legal = state.legal_actions();
                let range = self.infosets[p].range(i);
                if self.verify && self.infosets[p].actions[range.clone()] != legal[..] {
                    return Err(self.err(format!(
                        "an infostate of player {p} has two legal action sets"
                    )));
                }
                for (k, a) in legal.into_iter().enumerate() {
                    let mut child_seq = seq;
                    child_seq[p] = (range.start + k) as u32;
                    self.step(state, node, child_seq, a, chance)?;
                }
                Ok(())
            }
        }
    }

    fn step(
        &mut self,
        state: &dyn State,
        node: u32,
        seq: [u32; 2],
        a: Action,
        chance: f64,
    ) -> Result<(), TreeError> {
        let mut child = state.clone_box();
        child.apply_action(a);
        self.history.push(a);
        let cnode = if self.merge_chance
            && self.nodes[node as usize].kind == NodeKind::Chance
            && child.turn() == Turn::Chance
        {
            node
        } else {
            self.node_for(node, child.as_ref())
        };
        let r = self.walk(child.as_ref(), cnode, seq, chance);
        self.history.pop();
        r
    }
}

fn kind_of(t: Turn) -> NodeKind {
    match t {
        Turn::Chance => NodeKind::Chance,
        Turn::Player(p) => NodeKind::Decision(p),
        Turn::Terminal => NodeKind::Terminal,
    }
}

/// Renumbers one player's infosets by (public node, private state); returns the new infosets
/// and the map from old to new global action indices (with the root mapped to the root).
fn renumber(inf: &Infosets, nodes: &mut [PublicNode]) -> (Infosets, Vec<u32>) {
    let n = inf.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (inf.node[i], inf.private[i]));
    let mut out = Infosets::default();
    out.offset.push(0);
    let mut seq_map = vec![NONE; inf.num_actions_total() + 1];
    for &old in &order {
        let start = *out.offset.last().unwrap();
        for (k, g) in inf.range(old).enumerate() {
            seq_map[g] = start + k as u32;
        }
        out.actions.extend_from_slice(&inf.actions[inf.range(old)]);
        out.offset.push(start + inf.range(old).len() as u32);
    }
    let root = out.actions.len() as u32;
    seq_map[inf.num_actions_total()] = root;
    for (new, &old) in order.iter().enumerate() {
        out.key.push(inf.key[old].clone());
        out.parent_seq.push(seq_map[inf.parent_seq[old] as usize]);
        out.node.push(inf.node[old]);
        out.private.push(inf.private[old]);
        out.history.push(inf.history[old].clone());
        let r = &mut nodes[inf.node[old] as usize].infoset_range;
        if r.1 == 0 {
            *r = (new as u32, new as u32 + 1);
        } else {
            r.1 = new as u32 + 1;
        }
    }
    (out, seq_map)
}

impl PublicTree {
    /// Walks the whole game once and compiles it (at most [`DEFAULT_MAX_HISTORIES`] histories).
    /// Information-state strings are read once per infoset: the (public node, private state)
    /// pair identifies the infoset afterwards (the factorisation the conformance suite checks).
    pub fn build(game: &dyn Game) -> Result<PublicTree, TreeError> {
        Self::build_with_options(game, TreeOptions::default())
    }

    /// As [`PublicTree::build`], but reads the information-state string and legal actions of
    /// every decision history and checks that the public/private factorisation names infosets
    /// exactly (slower; used by the tests on every game).
    pub fn build_verified(game: &dyn Game) -> Result<PublicTree, TreeError> {
        Self::build_with_options(
            game,
            TreeOptions {
                verify: true,
                ..TreeOptions::default()
            },
        )
    }

    /// As [`PublicTree::build`] with an explicit cap on the number of histories.
    pub fn build_with_limit(game: &dyn Game, limit: usize) -> Result<PublicTree, TreeError> {
        Self::build_with_options(
            game,
            TreeOptions {
                max_histories: limit,
                ..TreeOptions::default()
            },
        )
    }

    /// Compiles `game` as `options` say (history cap, verification, merged chance runs).
    pub fn build_with_options(
        game: &dyn Game,
        options: TreeOptions,
    ) -> Result<PublicTree, TreeError> {
        let mut b = Builder {
            game,
            limit: options.max_histories,
            verify: options.verify,
            merge_chance: options.merge_chance,
            stats: TreeStats::default(),
            node_index: HashMap::new(),
            nodes: Vec::new(),
            label_index: [HashMap::new(), HashMap::new()],
            slot_index: [HashMap::new(), HashMap::new()],
            infosets: Default::default(),
            terminals: Vec::new(),
            history: Vec::new(),
        };
        for inf in &mut b.infosets {
            inf.offset.push(0);
        }
        // Sequence ids are provisional until `finish`: NONE stands for the empty sequence.
        let root = game.new_initial_state();
        let rnode = b.node_for(NONE, root.as_ref());
        b.walk(root.as_ref(), rnode, [NONE; 2], 1.0)?;
        Ok(Self::finish(b))
    }

    fn finish(b: Builder<'_>) -> PublicTree {
        let Builder {
            game,
            merge_chance,
            mut stats,
            mut nodes,
            infosets,
            terminals,
            ..
        } = b;
        // Provisional root sequences are NONE; make them the old root index before renumbering.
        let [mut i0, mut i1] = infosets;
        for inf in [&mut i0, &mut i1] {
            let root = inf.num_actions_total() as u32;
            inf.parent_seq
                .iter_mut()
                .filter(|s| **s == NONE)
                .for_each(|s| *s = root);
        }
        let (i0, m0) = renumber(&i0, &mut nodes);
        let (i1, m1) = renumber(&i1, &mut nodes);
        let map = |m: &[u32], s: u32| {
            if s == NONE {
                *m.last().unwrap()
            } else {
                m[s as usize]
            }
        };
        let mut entries: Vec<(u32, TerminalEntry)> = terminals
            .into_iter()
            .map(|(n, e)| {
                (
                    n,
                    TerminalEntry {
                        seq: [map(&m0, e.seq[0]), map(&m1, e.seq[1])],
                        coef: e.coef,
                    },
                )
            })
            .collect();
        entries.sort_by_key(|(n, e)| (*n, e.seq[0], e.seq[1]));
        let mut merged: Vec<TerminalEntry> = Vec::with_capacity(entries.len());
        let mut last_node = NONE;
        for (n, e) in entries {
            match merged.last_mut() {
                Some(prev) if last_node == n && prev.seq == e.seq => prev.coef += e.coef,
                _ => {
                    let i = merged.len() as u32;
                    let r = &mut nodes[n as usize].terminal_range;
                    if last_node != n {
                        *r = (i, i + 1);
                    } else {
                        r.1 = i + 1;
                    }
                    merged.push(e);
                }
            }
            last_node = n;
        }
        stats.public_nodes = nodes.len();
        PublicTree {
            game: game.load_string(),
            nodes,
            infosets: [i0, i1],
            terminals: merged,
            stats,
            merged_chance: merge_chance,
        }
    }

    /// Length of player `p`'s sequence arrays (all actions plus the empty sequence).
    pub fn num_sequences(&self, p: Player) -> usize {
        self.infosets[p].num_actions_total() + 1
    }

    /// Top-down sweep: `seq_reach[σ]` = product of player `p`'s probabilities along sequence `σ`,
    /// where `policy` is indexed by player `p`'s global action indices.
    pub fn reach(&self, p: Player, policy: &[f64], seq_reach: &mut [f64]) {
        let inf = &self.infosets[p];
        seq_reach[inf.root()] = 1.0;
        for i in 0..inf.len() {
            let r = seq_reach[inf.parent_seq[i] as usize];
            for k in inf.range(i) {
                seq_reach[k] = r * policy[k];
            }
        }
    }

    /// Terminal part of player `p`'s sequence values given the opponent's sequence reaches:
    /// `values[σ] = sum over entries with p's sequence σ of coef_p * opp_reach[σ']` (zero for
    /// sequences that end in no terminal). `values` has [`PublicTree::num_sequences`] entries.
    pub fn terminal_values(&self, p: Player, opp_reach: &[f64], values: &mut [f64]) {
        values.iter_mut().for_each(|v| *v = 0.0);
        if p == 0 {
            for e in &self.terminals {
                values[e.seq[0] as usize] += e.coef * opp_reach[e.seq[1] as usize];
            }
        } else {
            for e in &self.terminals {
                values[e.seq[1] as usize] -= e.coef * opp_reach[e.seq[0] as usize];
            }
        }
    }

    /// Expected payoff of player 0 when the players' sequence reaches are `reach0`, `reach1`.
    pub fn expected_value(&self, reach0: &[f64], reach1: &[f64]) -> f64 {
        self.terminals
            .iter()
            .map(|e| e.coef * reach0[e.seq[0] as usize] * reach1[e.seq[1] as usize])
            .sum()
    }

    /// Number of infosets of each player.
    pub fn num_infosets(&self) -> [usize; 2] {
        [self.infosets[0].len(), self.infosets[1].len()]
    }

    /// Looks up an infoset of player `p` by its information-state string (the first one with
    /// that label where several share it, see the module docs).
    pub fn find_infoset(&self, p: Player, key: &str) -> Option<usize> {
        self.infosets[p].key.iter().position(|k| k == key)
    }

    /// Number of distinct infoset labels (information-state strings) of each player: OpenSpiel's
    /// infostate count, which is below [`PublicTree::num_infosets`] where labels are shared.
    pub fn num_infoset_labels(&self) -> [usize; 2] {
        std::array::from_fn(|p| {
            self.infosets[p]
                .key
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len()
        })
    }
}

#[cfg(test)]
mod tests;
