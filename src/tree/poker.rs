//! A factored Hold'em subgame: the public tree below a `universal_poker` state, with one range
//! per player over all hole-card hands and no joint (hand, hand) slots.
//!
//! # Why factored
//! The dense layouts ([`super::tensor::TensorTree`]) index every history by the pair of private
//! states, `P²` slots per node, and need the private states to name the history; two hole cards
//! give `P = 1326` (1.76M joint slots per node) and several deal orders per pair. Poker needs
//! neither: all deals of distinct cards are equally likely, so the chance probability of a
//! (hand₀, hand₁, board) combination is one constant per public node when the cards are
//! disjoint, and 0 otherwise. A node therefore holds a `[P]` vector per player and one scalar
//! [`PokerNode::weight`]; the pairs only matter at terminals, where the payoff depends on both
//! hands, and there it is a sum over compatible opponent hands that sorted prefix sums with
//! per-card corrections evaluate in `O(P log P)` (`crate::nn::public::showdown`), not `O(P²)`.
//!
//! # Model
//! * Private states: all `C(D, k)` hands of `k = 2` hole cards from the deck of `D` cards, the
//!   same list for both players, in ascending [`crate::games::cards::hole_index`] order (that
//!   index is the game's [`crate::game::State::private_state`]).
//! * Nodes: the root (the given state, hole cards forgotten), decision nodes with one child per
//!   legal action (in ascending action order), chance nodes with one child per set of board
//!   cards the round deals (any cards not yet on the board: the walk knows no hole card), fold
//!   and showdown terminals. Nodes are numbered breadth-first, parents before children.
//! * Card removal: hand `x` is *possible* at a node iff it shares no card with the node's
//!   board ([`PokerLayout::possible`]); a range entering a chance child is multiplied by that
//!   mask, which is the whole of the chance node's effect on ranges.
//! * [`PokerNode::weight`]: the chance probability of one compatible (hand₀, hand₁, board
//!   cards dealt below the root) combination given the root's board: `1 / (C(n, k)·C(n−k, k))`
//!   at the root for `n` cards off the board, divided by the number of possible deals at every
//!   chance node on the way. A player's counterfactual value at a terminal is then
//!   `weight · Σ_y compatible r_opp(y) · u(x, y)`: exactly the sequence-form values of the
//!   whole-game tree ([`super::PublicTree`]) when the root is the start of the hand.

use crate::game::{Action, GameError, Player, State, Turn};
use crate::games::cards::hole_index;
use crate::games::universal_poker::{PublicWalk, UniversalPokerState, WalkError};
use std::collections::VecDeque;

/// What happens at a node of a [`PokerLayout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PokerKind {
    /// Board cards are dealt; one child per possible set.
    Chance,
    /// The player acts; one child per legal action.
    Decision(Player),
    /// The player folded and loses its contribution.
    Fold(Player),
    /// The hands are compared; the stronger wins the smaller contribution.
    Showdown,
    /// A board deal at the depth limit ([`PokerLayout::from_state_limited`]): no children;
    /// a leaf evaluator supplies its values.
    Leaf,
}

/// How a node was reached from its parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PokerEdge {
    /// The root.
    Root,
    /// A betting action.
    Action(Action),
    /// Board cards (card ids, ascending).
    Deal(Vec<u8>),
}

/// One public node.
#[derive(Clone, Debug)]
pub struct PokerNode {
    pub kind: PokerKind,
    /// Parent node (`u32::MAX` at the root).
    pub parent: u32,
    /// Children, contiguous: `first_child .. first_child + num_children`.
    pub first_child: u32,
    pub num_children: u32,
    /// The edge from the parent.
    pub edge: PokerEdge,
    /// Legal actions at decision nodes (ascending; child `k` follows action `k`).
    pub actions: Vec<Action>,
    /// Board cards (card ids, deal order by round, each round's cards ascending).
    pub board: Vec<u8>,
    /// Bit `c` set for each board card `c`.
    pub board_mask: u64,
    /// Chips each player has put in.
    pub spent: [i32; 2],
    /// Chance probability of one compatible (hand₀, hand₁, board) combination (module docs).
    pub weight: f64,
    /// At decision nodes, the node's index in its player's decision list (`u32::MAX` else).
    pub decision: u32,
    /// At showdown nodes, the index of the board's hand ranks in [`PokerLayout::ranks`]
    /// (`u32::MAX` else).
    pub ranks: u32,
}

/// Errors building a [`PokerLayout`].
#[derive(Debug, thiserror::Error)]
pub enum PokerLayoutError {
    #[error("the factored poker layout needs 2 hole cards per player; this game deals {0}")]
    HoleCards(usize),
    #[error("the subgame has more than {limit} public nodes; raise the limit or start deeper")]
    TooLarge { limit: usize },
    #[error("the state is terminal: there is no subgame below it")]
    Terminal,
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("replaying the path to node {node}: {source}")]
    Replay { node: usize, source: GameError },
    #[error("node {0} does not exist")]
    NoNode(usize),
}

/// A factored Hold'em subgame (see the module docs).
#[derive(Clone, Debug)]
pub struct PokerLayout {
    /// OpenSpiel load string of the game.
    pub game: String,
    /// The hole-card hands (card ids, low card first): the private states of both players.
    pub hands: Vec<(u8, u8)>,
    /// Card bits of each hand.
    pub hand_masks: Vec<u64>,
    /// Each hand's [`hole_index`] (the game's private-state index).
    pub hole_index: Vec<u32>,
    pub nodes: Vec<PokerNode>,
    /// Per player, its decision nodes in node order.
    pub decisions: [Vec<u32>; 2],
    /// Showdown rank of every hand (higher is stronger; 0 where it collides with the board)
    /// on each distinct showdown board, and that board's card bits.
    pub ranks: Vec<(u64, Vec<u16>)>,
    /// Per player, the decision nodes' block offsets in `[action][hand]` arrays: decision `d`
    /// owns entries `offset[d] .. offset[d + 1]` (`num_actions · P` of them); one extra entry.
    pub offsets: [Vec<usize>; 2],
}

impl PokerEdge {
    /// Bytes the edge holds on the heap (a deal's cards).
    pub fn heap_bytes(&self) -> usize {
        match self {
            PokerEdge::Deal(cards) => cards.capacity(),
            _ => 0,
        }
    }
}

/// `C(n, k)` as `f64` (exact for the sizes poker needs).
pub(crate) fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// All `k`-subsets of `cards` (ascending within, in lexicographic order).
pub(crate) fn subsets(cards: &[u8], k: usize) -> Vec<Vec<u8>> {
    fn rec(cards: &[u8], k: usize, start: usize, cur: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in start..cards.len() {
            if cards.len() - i < k - cur.len() {
                break;
            }
            cur.push(cards[i]);
            rec(cards, k, i + 1, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    rec(cards, k, 0, &mut Vec::with_capacity(k), &mut out);
    out
}

pub(crate) fn mask(cards: &[u8]) -> u64 {
    cards.iter().fold(0u64, |m, &c| m | 1u64 << c)
}

impl PokerLayout {
    /// Default cap on public nodes for [`PokerLayout::from_state`].
    pub const DEFAULT_MAX_NODES: usize = 1_000_000;

    /// Bytes the layout holds: the struct, every vector's capacity and each node's own vectors
    /// (allocator overhead left out). What a cache of searches counts against its budget.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        let nodes: usize = self
            .nodes
            .iter()
            .map(|n| cap(&n.actions) + cap(&n.board) + n.edge.heap_bytes())
            .sum();
        let ranks: usize = self.ranks.iter().map(|(_, r)| cap(r)).sum();
        size_of::<Self>()
            + self.game.capacity()
            + cap(&self.hands)
            + cap(&self.hand_masks)
            + cap(&self.hole_index)
            + cap(&self.nodes)
            + nodes
            + cap(&self.ranks)
            + ranks
            + self.decisions.iter().map(cap).sum::<usize>()
            + self.offsets.iter().map(cap).sum::<usize>()
    }

    /// The public tree below `state` (its hole cards are ignored: any hands are possible),
    /// at most `max_nodes` nodes.
    pub fn from_state(
        state: &UniversalPokerState,
        max_nodes: usize,
    ) -> Result<PokerLayout, PokerLayoutError> {
        Self::from_state_limited(state, max_nodes, false)
    }

    /// As [`PokerLayout::from_state`]; with `leaf_at_deals`, every board deal below the root
    /// becomes a [`PokerKind::Leaf`] (the subgame ends with the betting round, as
    /// depth-limited search with a value network at round boundaries needs). A root that is
    /// itself a deal is expanded.
    pub fn from_state_limited(
        state: &UniversalPokerState,
        max_nodes: usize,
        leaf_at_deals: bool,
    ) -> Result<PokerLayout, PokerLayoutError> {
        let cfg = state.config();
        if cfg.num_hole != 2 {
            return Err(PokerLayoutError::HoleCards(cfg.num_hole));
        }
        let walk = state.public_walk()?;
        if walk.turn() == Turn::Terminal {
            return Err(PokerLayoutError::Terminal);
        }
        let mut deck: Vec<u8> = cfg.deck[..cfg.deck_size].to_vec();
        deck.sort_unstable();
        let mut hands = Vec::new();
        for (i, &a) in deck.iter().enumerate() {
            for &b in &deck[i + 1..] {
                hands.push((a, b));
            }
        }
        hands.sort_by_key(|&(a, b)| hole_index(a, b));
        let hand_masks: Vec<u64> = hands.iter().map(|&(a, b)| mask(&[a, b])).collect();
        let hole: Vec<u32> = hands
            .iter()
            .map(|&(a, b)| hole_index(a, b) as u32)
            .collect();

        // Chance probability of one (hand₀, hand₁) pair given the board.
        let off_board = cfg.deck_size - walk.board().len();
        let root_weight = 1.0 / (choose(off_board, 2) * choose(off_board - 2, 2));

        let mut nodes: Vec<PokerNode> = Vec::new();
        let mut walks: VecDeque<PublicWalk> = VecDeque::new();
        let mut decisions: [Vec<u32>; 2] = Default::default();
        let new_node = |w: &PublicWalk, parent: u32, edge: PokerEdge, weight: f64| {
            let kind = match w.turn() {
                Turn::Chance if leaf_at_deals && parent != u32::MAX => PokerKind::Leaf,
                Turn::Chance => PokerKind::Chance,
                Turn::Player(p) => PokerKind::Decision(p),
                Turn::Terminal => match w.folded() {
                    [true, _] => PokerKind::Fold(0),
                    [_, true] => PokerKind::Fold(1),
                    _ => PokerKind::Showdown,
                },
            };
            PokerNode {
                kind,
                parent,
                first_child: 0,
                num_children: 0,
                edge,
                actions: w.legal_actions(),
                board: w.board().to_vec(),
                board_mask: mask(w.board()),
                spent: w.contributions(),
                weight,
                decision: u32::MAX,
                ranks: u32::MAX,
            }
        };
        let mut ranks: Vec<(u64, Vec<u16>)> = Vec::new();
        let mut rank_index: std::collections::HashMap<u64, u32> = Default::default();
        nodes.push(new_node(&walk, u32::MAX, PokerEdge::Root, root_weight));
        walks.push_back(walk);
        let mut i = 0usize;
        while let Some(w) = walks.pop_front() {
            let first = nodes.len() as u32;
            let (kind, weight) = (nodes[i].kind, nodes[i].weight);
            let mut children: Vec<(PublicWalk, PokerEdge, f64)> = Vec::new();
            match kind {
                PokerKind::Decision(p) => {
                    nodes[i].decision = decisions[p].len() as u32;
                    decisions[p].push(i as u32);
                    for &a in &nodes[i].actions {
                        let mut c = w.clone();
                        c.apply_action(a)?;
                        children.push((c, PokerEdge::Action(a), weight));
                    }
                }
                PokerKind::Chance => {
                    // Deals avoid the board and, for each pair of hands, their 4 cards: the
                    // count of possible deals is the same for every compatible pair.
                    let k = w.deal_size();
                    let left = w.deck_cards();
                    let deals = choose(left.len().saturating_sub(4), k);
                    for set in subsets(&left, k) {
                        let mut c = w.clone();
                        c.deal(&set)?;
                        children.push((c, PokerEdge::Deal(set), weight / deals));
                    }
                }
                PokerKind::Fold(_) | PokerKind::Showdown | PokerKind::Leaf => {}
            }
            if nodes.len() + children.len() > max_nodes {
                return Err(PokerLayoutError::TooLarge { limit: max_nodes });
            }
            nodes[i].first_child = first;
            nodes[i].num_children = children.len() as u32;
            for (c, edge, wt) in children {
                let mut node = new_node(&c, i as u32, edge, wt);
                if node.kind == PokerKind::Showdown {
                    let m = node.board_mask;
                    node.ranks = *rank_index.entry(m).or_insert_with(|| {
                        let r = hands
                            .iter()
                            .zip(&hand_masks)
                            .map(
                                |(&(a, b), &hm)| if hm & m == 0 { c.hand_rank(&[a, b]) } else { 0 },
                            )
                            .collect();
                        ranks.push((m, r));
                        ranks.len() as u32 - 1
                    });
                }
                nodes.push(node);
                walks.push_back(c);
            }
            i += 1;
        }
        let p = hands.len();
        let offsets = std::array::from_fn(|pl: usize| {
            let mut o = vec![0usize];
            for &d in &decisions[pl] {
                let last = *o.last().unwrap();
                o.push(last + nodes[d as usize].actions.len() * p);
            }
            o
        });
        Ok(PokerLayout {
            game: cfg.load_string.clone(),
            hands,
            hand_masks,
            hole_index: hole,
            nodes,
            decisions,
            ranks,
            offsets,
        })
    }

    /// Number of private states per player (`C(D, 2)`).
    pub fn num_hands(&self) -> usize {
        self.hands.len()
    }

    /// Number of public nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// `true` if there are no nodes (never, for a built layout).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether hand `x` shares no card with node `n`'s board.
    #[inline]
    pub fn possible(&self, n: usize, x: usize) -> bool {
        self.hand_masks[x] & self.nodes[n].board_mask == 0
    }

    /// Children of node `n`.
    pub fn children(&self, n: usize) -> std::ops::Range<usize> {
        let node = &self.nodes[n];
        node.first_child as usize..(node.first_child + node.num_children) as usize
    }

    /// The edges from the root to node `n` (root excluded).
    pub fn path(&self, n: usize) -> Vec<PokerEdge> {
        let mut out = Vec::new();
        let mut m = n;
        while self.nodes[m].parent != u32::MAX {
            out.push(self.nodes[m].edge.clone());
            m = self.nodes[m].parent as usize;
        }
        out.reverse();
        out
    }

    /// The uniform root range of the start of a hand: 1 for every hand possible at the root.
    pub fn uniform_root_range(&self) -> Vec<f64> {
        (0..self.num_hands())
            .map(|x| f64::from(u8::from(self.possible(0, x))))
            .collect()
    }

    /// The depth-limit leaves, in node order.
    pub fn leaves(&self) -> Vec<u32> {
        (0..self.len() as u32)
            .filter(|&n| self.nodes[n as usize].kind == PokerKind::Leaf)
            .collect()
    }

    /// The game's public state tensor at node `n` of a layout built from `source`
    /// ([`crate::game::State::public_state_tensor`]; what a value network sees of the node).
    /// The tensor does not depend on hole cards, so a state is rebuilt with hole cards that
    /// avoid the node's board, `source`'s public history and the path to `n`.
    pub fn public_state_tensor(
        &self,
        source: &UniversalPokerState,
        n: usize,
    ) -> Result<Vec<f32>, PokerLayoutError> {
        if n >= self.len() {
            return Err(PokerLayoutError::NoNode(n));
        }
        let cfg = source.config();
        let err = |e: GameError| PokerLayoutError::Replay { node: n, source: e };
        let mut s = source.clone();
        s.reset();
        let holes = 2 * cfg.num_hole;
        let board = self.nodes[n].board_mask;
        let free: Vec<usize> = (0..cfg.deck_size)
            .filter(|&o| board >> cfg.deck[o] & 1 == 0)
            .take(holes)
            .collect();
        for &o in &free {
            s.try_apply(o).map_err(err)?;
        }
        for &a in source.history().iter().skip(holes) {
            s.try_apply(a).map_err(err)?;
        }
        for e in self.path(n) {
            match e {
                PokerEdge::Action(a) => s.try_apply(a).map_err(err)?,
                PokerEdge::Deal(cards) => {
                    for c in cards {
                        let o = cfg.outcome_of(c).expect("layout cards are in the deck");
                        s.try_apply(o).map_err(err)?;
                    }
                }
                PokerEdge::Root => {}
            }
        }
        let mut out = vec![0.0; cfg.public_state_tensor_size()];
        s.public_state_tensor(&mut out);
        Ok(out)
    }

    /// Number of (node, hand) value slots: `len() · num_hands()`.
    pub fn num_slots(&self) -> usize {
        self.len() * self.num_hands()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::universal_poker::UniversalPokerGame;

    const TINY: &str = "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,raiseSize=4 7,firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,numBoardCards=0 3,bettingAbstraction=fcpa)";

    #[test]
    fn tiny_holdem_layout_counts_and_weights() {
        let game = UniversalPokerGame::from_string(TINY).unwrap();
        let layout = PokerLayout::from_state(&game.initial_state(), 100_000).unwrap();
        assert_eq!(layout.num_hands(), 45);
        // Weights of one compatible combination sum to 1 over the combinations: at a flop
        // node, 45 · 28 hand pairs times 20 boards each.
        let flop = layout
            .nodes
            .iter()
            .find(|n| n.board.len() == 3)
            .expect("a flop node");
        assert!((flop.weight * 45.0 * 28.0 * 20.0 - 1.0).abs() < 1e-12);
        assert!((layout.nodes[0].weight * 45.0 * 28.0 - 1.0).abs() < 1e-12);
        // Every chance node deals one of the C(10, 3) = 120 flops.
        for n in 0..layout.len() {
            if layout.nodes[n].kind == PokerKind::Chance {
                assert_eq!(layout.children(n).len(), 120);
            }
        }
        assert!(layout.offsets[0].last().unwrap() > &0);
        // Too small a cap is refused with the cap in the message.
        let err = PokerLayout::from_state(&game.initial_state(), 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 10 public nodes"), "{err}");
    }

    #[test]
    fn bad_starting_states_are_refused() {
        let one_hole = UniversalPokerGame::from_string("universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,raiseSize=4 7,firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=1,numBoardCards=0 4,bettingAbstraction=fcpa)").unwrap();
        let err = PokerLayout::from_state(&one_hole.initial_state(), 1000)
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 hole cards"), "{err}");
        // Inside the flop deal.
        let game = UniversalPokerGame::from_string(TINY).unwrap();
        let mut s = game.initial_state();
        for a in [0, 1, 2, 3, 1, 1, 4] {
            s.apply(a);
        }
        let err = PokerLayout::from_state(&s, 1000).unwrap_err().to_string();
        assert!(err.contains("inside a board deal"), "{err}");
    }
}
