//! The compiled public tree: a game walked once and flattened into arrays on which exact
//! solvers and evaluators run as linear sweeps over range vectors.
//!
//! # Model
//! Histories are grouped into **public nodes** by [`State::public_state_string`]. Within a public
//! node each player is in one of several **private states** ([`State::private_state`]); the pair
//! (public node, private state) of a player is a **slot**. A slot of the acting player is that
//! player's information set. Every slot has one parent slot (the same player's slot at the parent
//! public node) reached either by the player's own action (an *edge*: an index into the flat
//! `[infoset x action]` arrays of the parent's infoset) or by a move the player does not control
//! (the opponent's action, or chance; a *pass-through*).
//!
//! Chance is folded into the terminal payoffs: a terminal history `h` contributes one entry
//! `(slot0, slot1, coef = P_chance(h) * u_0(h))`. With reach vectors `r_0`, `r_1` over slots (each
//! player's own probability of playing to the slot), the counterfactual value of player 0 at a
//! terminal slot `s` is `sum_{(s, t, c)} c * r_1[t]`, and of player 1 `sum_{(t, s, c)} -c * r_0[t]`.
//! Values then flow bottom-up along slot parents; reaches flow top-down. Nothing in this module
//! knows about algorithms: it only stores the structure and offers the two basic sweeps.
//!
//! Slots are numbered so that a parent always precedes its children (ordered by public node, then
//! private index), so top-down sweeps run forward and bottom-up sweeps run backward.

use crate::game::{Action, Game, GameError, Player, State, Turn};
use std::collections::HashMap;

/// Marks "no parent", "no edge" and "no infoset" in the `u32` index arrays.
pub const NONE: u32 = u32::MAX;

/// What happens at a public node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Chance,
    Decision(Player),
    Terminal,
}

/// A public node: a set of histories that share the public state.
#[derive(Clone, Debug)]
pub struct PublicNode {
    /// Parent public node (`NONE` at the root).
    pub parent: u32,
    /// Child public nodes, in order of discovery.
    pub children: Vec<u32>,
    pub kind: NodeKind,
    /// The public state string of its histories.
    pub public_state: String,
    /// Slots of each player at this node: `slot_range[p].0 .. slot_range[p].1`.
    pub slot_range: [(u32, u32); 2],
    /// Terminal entries of this node: `terminal_range.0 .. terminal_range.1` in
    /// [`PublicTree::terminals`] (empty for non-terminal nodes).
    pub terminal_range: (u32, u32),
}

/// One player's slots, as parallel arrays (structure of arrays).
#[derive(Clone, Debug, Default)]
pub struct Slots {
    /// Public node of the slot.
    pub node: Vec<u32>,
    /// The private state index within the node.
    pub private: Vec<u32>,
    /// Parent slot, `NONE` for root slots.
    pub parent: Vec<u32>,
    /// If the slot is reached by this player's own action: the global action index of that
    /// action in the parent's infoset (see [`Infosets::offset`]); `NONE` for pass-through.
    pub edge: Vec<u32>,
    /// The infoset of this player at this slot, `NONE` unless the player acts at the node.
    pub infoset: Vec<u32>,
}

impl Slots {
    /// Number of slots.
    pub fn len(&self) -> usize {
        self.node.len()
    }

    /// `true` if there are no slots.
    pub fn is_empty(&self) -> bool {
        self.node.is_empty()
    }
}

/// One player's information sets. Actions of all infosets are laid out in one flat array:
/// infoset `i` owns global action indices `offset[i] .. offset[i + 1]`.
#[derive(Clone, Debug, Default)]
pub struct Infosets {
    /// OpenSpiel information-state string of each infoset.
    pub key: Vec<String>,
    /// Start of each infoset's actions in the flat arrays; one extra entry at the end.
    pub offset: Vec<u32>,
    /// The legal action behind each global action index.
    pub actions: Vec<Action>,
    /// The slot of each infoset.
    pub slot: Vec<u32>,
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

    /// Global action index range of infoset `i`.
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.offset[i] as usize..self.offset[i + 1] as usize
    }
}

/// A terminal history: slots of both players and `P_chance(h) * u_0(h)`.
#[derive(Clone, Copy, Debug)]
pub struct TerminalEntry {
    pub slot: [u32; 2],
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
    pub slots: [Slots; 2],
    pub infosets: [Infosets; 2],
    /// Terminal entries grouped by public node.
    pub terminals: Vec<TerminalEntry>,
    pub stats: TreeStats,
}

/// Default cap on the number of histories [`PublicTree::build`] will walk.
pub const DEFAULT_MAX_HISTORIES: usize = 20_000_000;

struct Builder<'a> {
    game: &'a dyn Game,
    limit: usize,
    stats: TreeStats,
    node_index: HashMap<(u32, String), u32>,
    nodes: Vec<PublicNode>,
    // Per player: (node, private) -> slot id (discovery order), slot data.
    slot_index: [HashMap<(u32, u32), u32>; 2],
    slots: [Slots; 2],
    info_index: [HashMap<String, u32>; 2],
    infosets: [Infosets; 2],
    terminals: Vec<(u32, TerminalEntry)>,
    history: Vec<Action>,
}

impl<'a> Builder<'a> {
    fn err(&self, what: String) -> TreeError {
        TreeError::Factorisation {
            game: self.game.load_string(),
            history: crate::game::history_string(&self.history),
            what,
        }
    }

    fn node_for(&mut self, parent: u32, state: &dyn State) -> u32 {
        let key = (parent, state.public_state_string());
        if let Some(&n) = self.node_index.get(&key) {
            return n;
        }
        let id = self.nodes.len() as u32;
        let kind = match state.turn() {
            Turn::Chance => NodeKind::Chance,
            Turn::Player(p) => NodeKind::Decision(p),
            Turn::Terminal => NodeKind::Terminal,
        };
        self.nodes.push(PublicNode {
            parent,
            children: Vec::new(),
            kind,
            public_state: key.1.clone(),
            slot_range: [(0, 0); 2],
            terminal_range: (0, 0),
        });
        if parent != NONE {
            self.nodes[parent as usize].children.push(id);
        }
        self.node_index.insert(key, id);
        id
    }

    /// Finds or creates the slot of player `p` at `node`, checking that its parent and edge
    /// agree with any earlier visit.
    fn slot_for(
        &mut self,
        p: usize,
        node: u32,
        private: u32,
        parent: u32,
        edge: u32,
    ) -> Result<u32, TreeError> {
        if let Some(&s) = self.slot_index[p].get(&(node, private)) {
            let sl = &self.slots[p];
            if sl.parent[s as usize] != parent || sl.edge[s as usize] != edge {
                return Err(self.err(format!(
                    "player {p}'s private state {private} at public node {node:?} is reached from two different parent slots/actions ({}/{} vs {parent}/{edge})",
                    sl.parent[s as usize], sl.edge[s as usize]
                )));
            }
            return Ok(s);
        }
        let s = self.slots[p].len() as u32;
        let sl = &mut self.slots[p];
        sl.node.push(node);
        sl.private.push(private);
        sl.parent.push(parent);
        sl.edge.push(edge);
        sl.infoset.push(NONE);
        self.slot_index[p].insert((node, private), s);
        Ok(s)
    }

    fn walk(
        &mut self,
        state: &mut Box<dyn State>,
        node: u32,
        slot: [u32; 2],
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
                        slot,
                        coef: chance * r[0],
                    },
                ));
                Ok(())
            }
            Turn::Chance => {
                self.stats.chance_histories += 1;
                for (a, p) in state.chance_outcomes() {
                    self.step(state, node, slot, a, None, chance * p)?;
                }
                Ok(())
            }
            Turn::Player(p) => {
                self.stats.decision_histories += 1;
                let key = state.information_state_string(p);
                let legal = state.legal_actions();
                let info = match self.info_index[p].get(&key) {
                    Some(&i) => {
                        if self.infosets[p].slot[i as usize] != slot[p] {
                            return Err(self.err(format!(
                                "infostate {key:?} of player {p} spans two (public, private) slots"
                            )));
                        }
                        i
                    }
                    None => {
                        if self.slots[p].infoset[slot[p] as usize] != NONE {
                            return Err(self.err(format!(
                                "player {p}'s slot holds two infostates (the second is {key:?})"
                            )));
                        }
                        let i = self.infosets[p].len() as u32;
                        let inf = &mut self.infosets[p];
                        inf.key.push(key.clone());
                        inf.slot.push(slot[p]);
                        inf.history.push(self.history.clone());
                        let start = *inf.offset.last().unwrap();
                        inf.actions.extend_from_slice(&legal);
                        inf.offset.push(start + legal.len() as u32);
                        self.slots[p].infoset[slot[p] as usize] = i;
                        self.info_index[p].insert(key, i);
                        i
                    }
                };
                let inf = &self.infosets[p];
                let range = inf.range(info as usize);
                if inf.actions[range.clone()] != legal[..] {
                    return Err(
                        self.err(format!("infostate of player {p} has two legal action sets"))
                    );
                }
                for (k, a) in legal.into_iter().enumerate() {
                    let edge = (range.start + k) as u32;
                    self.step(state, node, slot, a, Some((p, edge)), chance)?;
                }
                Ok(())
            }
        }
    }

    fn step(
        &mut self,
        state: &mut Box<dyn State>,
        node: u32,
        slot: [u32; 2],
        a: Action,
        mover: Option<(usize, u32)>,
        chance: f64,
    ) -> Result<(), TreeError> {
        let mut child = state.clone_box();
        child.apply_action(a);
        self.history.push(a);
        let cnode = self.node_for(node, child.as_ref());
        let mut cslot = [NONE; 2];
        for q in 0..2 {
            let edge = match mover {
                Some((p, e)) if p == q => e,
                _ => NONE,
            };
            cslot[q] = self.slot_for(q, cnode, child.private_state(q) as u32, slot[q], edge)?;
        }
        let r = self.walk(&mut child, cnode, cslot, chance);
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

impl PublicTree {
    /// Walks the whole game once and compiles it (at most [`DEFAULT_MAX_HISTORIES`] histories).
    pub fn build(game: &dyn Game) -> Result<PublicTree, TreeError> {
        Self::build_with_limit(game, DEFAULT_MAX_HISTORIES)
    }

    /// As [`PublicTree::build`] with an explicit cap on the number of histories.
    pub fn build_with_limit(game: &dyn Game, limit: usize) -> Result<PublicTree, TreeError> {
        let mut b = Builder {
            game,
            limit,
            stats: TreeStats::default(),
            node_index: HashMap::new(),
            nodes: Vec::new(),
            slot_index: [HashMap::new(), HashMap::new()],
            slots: Default::default(),
            info_index: [HashMap::new(), HashMap::new()],
            infosets: Default::default(),
            terminals: Vec::new(),
            history: Vec::new(),
        };
        for inf in &mut b.infosets {
            inf.offset.push(0);
        }
        let mut root = game.new_initial_state();
        let rnode = b.node_for(NONE, root.as_ref());
        let mut rslot = [0; 2];
        for (p, s) in rslot.iter_mut().enumerate() {
            *s = b.slot_for(p, rnode, root.private_state(p) as u32, NONE, NONE)?;
        }
        b.walk(&mut root, rnode, rslot, 1.0)?;
        Ok(Self::finish(b))
    }

    /// Renumbers slots by (public node, private state) so parents precede children and each
    /// node's slots are contiguous; groups terminal entries by node.
    fn finish_slots(slots: &Slots, infosets: &mut Infosets) -> (Slots, Vec<u32>) {
        let n = slots.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&s| (slots.node[s as usize], slots.private[s as usize]));
        let mut new_id = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        let remap = |x: u32| if x == NONE { NONE } else { new_id[x as usize] };
        let mut out = Slots::default();
        for &old in &order {
            let o = old as usize;
            out.node.push(slots.node[o]);
            out.private.push(slots.private[o]);
            out.parent.push(remap(slots.parent[o]));
            out.edge.push(slots.edge[o]);
            out.infoset.push(slots.infoset[o]);
        }
        for s in &mut infosets.slot {
            *s = new_id[*s as usize];
        }
        (out, new_id)
    }

    fn finish(self_: Builder<'_>) -> PublicTree {
        let Builder {
            game,
            mut stats,
            mut nodes,
            slots,
            mut infosets,
            mut terminals,
            ..
        } = self_;
        let [s0, s1] = slots;
        let (s0, map0) = Self::finish_slots(&s0, &mut infosets[0]);
        let (s1, map1) = Self::finish_slots(&s1, &mut infosets[1]);
        for (p, sl) in [&s0, &s1].into_iter().enumerate() {
            for (i, &n) in sl.node.iter().enumerate() {
                let r = &mut nodes[n as usize].slot_range[p];
                if r.1 == 0 {
                    *r = (i as u32, i as u32 + 1);
                } else {
                    r.1 = i as u32 + 1;
                }
            }
        }
        for (_, e) in terminals.iter_mut() {
            e.slot = [map0[e.slot[0] as usize], map1[e.slot[1] as usize]];
        }
        terminals.sort_by_key(|(n, e)| (*n, e.slot[0], e.slot[1]));
        let mut entries = Vec::with_capacity(terminals.len());
        for (i, (n, e)) in terminals.into_iter().enumerate() {
            let r = &mut nodes[n as usize].terminal_range;
            if r.1 == 0 {
                *r = (i as u32, i as u32 + 1);
            } else {
                r.1 = i as u32 + 1;
            }
            entries.push(e);
        }
        stats.public_nodes = nodes.len();
        PublicTree {
            game: game.load_string(),
            nodes,
            slots: [s0, s1],
            infosets,
            terminals: entries,
            stats,
        }
    }

    /// Top-down sweep: `reach[s]` = product of player `p`'s probabilities along the path to slot
    /// `s`, where `policy` is indexed by global action index of player `p`'s infosets.
    pub fn reach(&self, p: Player, policy: &[f64], reach: &mut [f64]) {
        let sl = &self.slots[p];
        debug_assert_eq!(reach.len(), sl.len());
        for s in 0..sl.len() {
            let parent = sl.parent[s];
            reach[s] = if parent == NONE {
                1.0
            } else {
                let e = sl.edge[s];
                let r = reach[parent as usize];
                if e == NONE { r } else { r * policy[e as usize] }
            };
        }
    }

    /// Counterfactual values of player `p` at its terminal slots, given the opponent's reach:
    /// `values[s] = sum over terminal entries at s of coef_p * opp_reach[t]` (other slots 0).
    pub fn terminal_values(&self, p: Player, opp_reach: &[f64], values: &mut [f64]) {
        values.iter_mut().for_each(|v| *v = 0.0);
        if p == 0 {
            for e in &self.terminals {
                values[e.slot[0] as usize] += e.coef * opp_reach[e.slot[1] as usize];
            }
        } else {
            for e in &self.terminals {
                values[e.slot[1] as usize] -= e.coef * opp_reach[e.slot[0] as usize];
            }
        }
    }

    /// Expected payoff of player 0 when the players' reaches are `reach0`, `reach1`.
    pub fn expected_value(&self, reach0: &[f64], reach1: &[f64]) -> f64 {
        self.terminals
            .iter()
            .map(|e| e.coef * reach0[e.slot[0] as usize] * reach1[e.slot[1] as usize])
            .sum()
    }

    /// Number of infosets of each player.
    pub fn num_infosets(&self) -> [usize; 2] {
        [self.infosets[0].len(), self.infosets[1].len()]
    }

    /// Looks up an infoset of player `p` by its information-state string.
    pub fn find_infoset(&self, p: Player, key: &str) -> Option<usize> {
        self.infosets[p].key.iter().position(|k| k == key)
    }
}
