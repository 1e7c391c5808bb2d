//! A value estimate for AIVAT that knows the match's two policies ([`PairValues`]).
//!
//! In a match both seats' policies are armac's, so the value of a history for the pair that
//! actually plays can be computed instead of guessed, wherever the tree below it is small:
//!
//! * **Street start** (a decision right after a chance event: the first decision after the
//!   deal or after a board card): the base estimate
//!   `B(s) = Σ_a π(a|s) Q(s, a)`, with `π` the policy of the seat that acts at `s` (not the
//!   network's own average policy) and `Q` the exact return where the action ends the hand
//!   (a fold), the base action values otherwise (ARMAC's critic `q_0`).
//! * **Anywhere else, and at street starts of the last street**: the exact expectation under
//!   the pair's policies of the rest of the betting round (the *street*), found by walking its
//!   tree: terminals give their returns, and the chance events that end the street are
//!   averaged over their outcomes (every run when there are at most
//!   [`PairOptions::exact_runs`], else [`PairOptions::samples`] runs drawn with a seed of
//!   this estimate's own), each run's end valued by these same rules, so an all-in's run-out
//!   is its exact equity and a turn's round-end is the expected exact value of the river.
//!   A street whose tree has more than [`PairOptions::max_nodes`] decisions below the state
//!   falls back to `B`.
//!
//! The rules make the value a deterministic function of the history (sampled run-outs are
//! drawn from seeds that depend on the history and this estimate's seed only), which is all
//! [`crate::eval::aivat`] needs to stay unbiased. What they buy: within a street every
//! decision's value is the policy-weighted mean of its children's, so the decision terms of
//! a street add no variance beyond the street's start; the last street (and every all-in) is
//! exact, so the river card and the river betting add none at all.

use crate::eval::aivat::{ValueEstimate, chance_runs};
use crate::game::{Action, Game, State, Turn};
use crate::policy::{Policy, PolicyError};
use crate::util::SplitMix64;
use std::collections::HashMap;
use std::sync::Mutex;

/// Player 0's estimated value of each legal action at decision states (the base of
/// [`PairValues`]).
pub trait ActionValues: Send + Sync {
    /// For each of `states` (decisions), player 0's value of each legal action, aligned with
    /// `legal_actions()`.
    fn action_values(&self, states: &[&dyn State]) -> Result<Vec<Vec<f64>>, PolicyError>;

    /// A short name (for reports).
    fn name(&self) -> String;
}

/// How [`PairValues`] walks streets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairOptions {
    /// Most decisions in one street walk; a larger street falls back to the base estimate.
    pub max_nodes: usize,
    /// Chance events with at most this many runs are averaged exactly.
    pub exact_runs: usize,
    /// Runs sampled at the others.
    pub samples: usize,
}

impl Default for PairOptions {
    /// 400 decisions, 64 exact runs, 16 samples.
    fn default() -> Self {
        PairOptions {
            max_nodes: 400,
            exact_runs: 64,
            samples: 16,
        }
    }
}

/// The pair-aware value estimate of the module docs: `seats[p]` plays seat `p`.
pub struct PairValues<'a> {
    game: &'a dyn Game,
    seats: [&'a dyn Policy; 2],
    base: &'a dyn ActionValues,
    opts: PairOptions,
    seed: u64,
    /// Values computed so far by history, with the size of the street walk below them (so
    /// that a walk's size does not depend on what is remembered); emptied when it grows large.
    memo: Mutex<HashMap<Vec<Action>, (f64, usize)>>,
}

/// Memo entries kept before the memo is emptied.
const MEMO_LIMIT: usize = 1 << 18;

/// A node of a walk.
enum Node {
    Terminal(f64),
    /// A decision whose value is already known (memo).
    Known(f64),
    /// A street start valued by the base estimate: index into the base states.
    Base(usize),
    /// A decision of the walk: index into the walk's decision states, and its children.
    Decision(usize, Vec<usize>),
    /// A chance event: weighted children.
    Chance(Vec<(f64, usize)>),
}

/// One walk: the nodes, the states that need the policies and the base.
#[derive(Default)]
struct Walk {
    nodes: Vec<Node>,
    /// States of [`Node::Decision`] nodes, with the decisions of the street below them
    /// (themselves included).
    decisions: Vec<(Box<dyn State>, usize)>,
    /// States of [`Node::Base`] nodes.
    bases: Vec<Box<dyn State>>,
    /// Decisions of the street walked so far (against [`PairOptions::max_nodes`]).
    walked: usize,
}

impl<'a> PairValues<'a> {
    /// The estimate for `seats` (seat 0's policy first) over `base`; `seed` draws the sampled
    /// chance runs.
    pub fn new(
        game: &'a dyn Game,
        seats: [&'a dyn Policy; 2],
        base: &'a dyn ActionValues,
        opts: PairOptions,
        seed: u64,
    ) -> Self {
        PairValues {
            game,
            seats,
            base,
            opts,
            seed,
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the decision `state` directly follows a chance event (or starts the game).
    fn street_start(&self, state: &dyn State) -> bool {
        let h = state.history();
        if h.is_empty() {
            return true;
        }
        let mut s = self.game.new_initial_state();
        for &a in &h[..h.len() - 1] {
            s.apply_action(a);
        }
        s.turn() == Turn::Chance
    }

    /// Whether no decision follows the street of `state`: following the first action that
    /// does not end the hand to the street's end, the chance event there leads to a terminal
    /// (the last street, or an all-in). A deterministic function of the history.
    fn last_street(state: &dyn State) -> bool {
        let mut s = state.clone_box();
        loop {
            match s.turn() {
                Turn::Terminal => return true,
                Turn::Chance => {
                    while s.turn() == Turn::Chance {
                        s.apply_action(s.chance_outcomes()[0].0);
                    }
                    return s.is_terminal();
                }
                Turn::Player(_) => {
                    let legal = s.legal_actions();
                    let next = legal.iter().find_map(|&a| {
                        let mut c = s.clone_box();
                        c.apply_action(a);
                        (!c.is_terminal()).then_some(c)
                    });
                    match next {
                        Some(c) => s = c,
                        None => return true,
                    }
                }
            }
        }
    }

    /// The runs of the chance event at `state` to its next decision or terminal, weighted.
    fn runs(&self, state: &dyn State) -> Vec<(f64, Box<dyn State>)> {
        let key = || {
            state
                .history()
                .iter()
                .fold(self.seed ^ 0x9A1B_5EED, |h, &a| {
                    SplitMix64::new(h ^ a as u64).next_u64()
                })
        };
        chance_runs(state, self.opts.exact_runs, self.opts.samples, key)
    }

    /// Adds `state` to `walk` (a decision of the street being walked when `in_street`, else
    /// a street start reached through chance); its node index, or `None` when the street
    /// has more decisions than the walk allows.
    fn add(
        &self,
        walk: &mut Walk,
        state: Box<dyn State>,
        in_street: bool,
    ) -> Result<Option<usize>, PolicyError> {
        let node = match state.turn() {
            Turn::Terminal => Node::Terminal(state.returns()[0]),
            Turn::Chance => {
                let mut kids = Vec::new();
                for (p, s) in self.runs(state.as_ref()) {
                    let Some(k) = self.add(walk, s, false)? else {
                        return Ok(None);
                    };
                    kids.push((p, k));
                }
                Node::Chance(kids)
            }
            Turn::Player(_) => {
                let known = self.memo.lock().unwrap().get(state.history()).copied();
                if let Some((v, size)) = known {
                    if in_street {
                        walk.walked += size;
                        if walk.walked > self.opts.max_nodes {
                            return Ok(None);
                        }
                    }
                    Node::Known(v)
                } else if !in_street && !Self::last_street(state.as_ref()) {
                    walk.bases.push(state);
                    Node::Base(walk.bases.len() - 1)
                } else if !in_street {
                    // The start of a last street: walked too, in the same batch, against a
                    // node count of its own.
                    let outer = std::mem::replace(&mut walk.walked, 0);
                    let node = self.add(walk, state, true)?;
                    walk.walked = outer;
                    return Ok(node);
                } else {
                    walk.walked += 1;
                    if walk.walked > self.opts.max_nodes {
                        return Ok(None);
                    }
                    let before = walk.walked;
                    let mut kids = Vec::new();
                    for a in state.legal_actions() {
                        let mut c = state.clone_box();
                        c.apply_action(a);
                        let Some(k) = self.add(walk, c, true)? else {
                            return Ok(None);
                        };
                        kids.push(k);
                    }
                    walk.decisions.push((state, walk.walked - before + 1));
                    Node::Decision(walk.decisions.len() - 1, kids)
                }
            }
        };
        walk.nodes.push(node);
        Ok(Some(walk.nodes.len() - 1))
    }

    /// The acting seat's probabilities at each of `states` (one batch per seat).
    fn probabilities(&self, states: &[&dyn State]) -> Result<Vec<Vec<f64>>, PolicyError> {
        let mut out = vec![Vec::new(); states.len()];
        for seat in 0..2 {
            let idx: Vec<usize> = (0..states.len())
                .filter(|&i| states[i].turn() == Turn::Player(seat))
                .collect();
            if idx.is_empty() {
                continue;
            }
            let batch: Vec<&dyn State> = idx.iter().map(|&i| states[i]).collect();
            let probs = self.seats[seat].batch_action_probabilities(&batch)?;
            for (i, p) in idx.into_iter().zip(probs) {
                out[i] = p;
            }
        }
        Ok(out)
    }

    /// The base estimate `B` at each of `states` (module docs).
    fn base_values(&self, states: &[Box<dyn State>]) -> Result<Vec<f64>, PolicyError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let refs: Vec<&dyn State> = states.iter().map(|s| s.as_ref()).collect();
        let probs = self.probabilities(&refs)?;
        let q = self.base.action_values(&refs)?;
        Ok(states
            .iter()
            .zip(probs.iter().zip(&q))
            .map(|(s, (pi, q))| {
                s.legal_actions()
                    .into_iter()
                    .enumerate()
                    .map(|(k, a)| {
                        let mut c = s.clone_box();
                        c.apply_action(a);
                        let v = if c.is_terminal() {
                            c.returns()[0]
                        } else {
                            q[k]
                        };
                        pi[k] * v
                    })
                    .sum::<f64>()
            })
            .collect())
    }

    /// The value of one decision state (module docs), memoised.
    fn value(&self, state: &dyn State) -> Result<f64, PolicyError> {
        if let Some(&(v, _)) = self.memo.lock().unwrap().get(state.history()) {
            return Ok(v);
        }
        let mut walk = Walk::default();
        let start = self.street_start(state) && !Self::last_street(state);
        let root = if start {
            None
        } else {
            self.add(&mut walk, state.clone_box(), true)?
        };
        let Some(root) = root else {
            // A street start (or a street too large to walk): the base estimate. The size
            // recorded makes every walk through it too large as well.
            let v = self.base_values(&[state.clone_box()])?[0];
            let size = if start { 0 } else { self.opts.max_nodes + 1 };
            self.remember(state.history().to_vec(), v, size);
            return Ok(v);
        };
        let states: Vec<&dyn State> = walk.decisions.iter().map(|(s, _)| s.as_ref()).collect();
        let probs = self.probabilities(&states)?;
        let bases = self.base_values(&walk.bases)?;
        // Children come before their parents in `nodes`: one pass values them all.
        let mut values = vec![0.0; walk.nodes.len()];
        for (i, node) in walk.nodes.iter().enumerate() {
            values[i] = match node {
                Node::Terminal(v) | Node::Known(v) => *v,
                Node::Base(b) => bases[*b],
                Node::Chance(kids) => kids.iter().map(|&(p, k)| p * values[k]).sum(),
                Node::Decision(d, kids) => {
                    let v: f64 = probs[*d]
                        .iter()
                        .zip(kids)
                        .map(|(p, &k)| p * values[k])
                        .sum();
                    let (s, size) = &walk.decisions[*d];
                    self.remember(s.history().to_vec(), v, *size);
                    v
                }
            };
        }
        Ok(values[root])
    }

    fn remember(&self, history: Vec<Action>, v: f64, size: usize) {
        let mut memo = self.memo.lock().unwrap();
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(history, (v, size));
    }
}

impl ValueEstimate for PairValues<'_> {
    fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError> {
        states.iter().map(|s| self.value(*s)).collect()
    }

    fn name(&self) -> String {
        format!(
            "pair lookahead over {} ({} vs {})",
            self.base.name(),
            self.seats[0].name(),
            self.seats[1].name()
        )
    }
}
