//! Values of the depth-limit leaves of a Hold'em search where no player can act again.
//!
//! Once a player is all in (with equal stacks: both players, after a called all-in), the rest
//! of the hand is a run-out of the board and a showdown: its value needs no network. A CVPN
//! sees such states rarely, if ever, in its training data (no search is rooted where nobody
//! acts), so its estimates there can be arbitrary; [`RunoutLeaves`] values these leaves from
//! the cards instead: the mean showdown over the rest of the board, over every run-out when
//! there are at most `boards` of them, else over `boards` run-outs drawn from a seed derived
//! from the board (unbiased, and the same draws for every leaf and iteration of a search).
//! Every other leaf is passed to an inner evaluator (the CVPN).

use super::factored::PokerLeaves;
use super::hand_sweep::HandSweep;
use crate::games::universal_poker::{Config, hand_rank};
use crate::tree::poker::{PokerKind, PokerLayout, choose, mask, subsets};
use std::sync::Arc;

/// Boards a [`RunoutCache`] keeps: one board's run-outs hold 64 showdown orders of every hand
/// (about 0.6 MB at the default 64 run-outs of Hold'em).
const CACHED_BOARDS: usize = 16;

/// Run-out leaves of one board whose values share a walk over the hands (bounds the buffers:
/// `BATCH` values per hand).
const BATCH: usize = 32;

/// Whether leaf `n` of `layout` is a run-out: a board deal below which no player acts (a
/// player has put in its whole stack).
pub fn is_runout(layout: &PokerLayout, cfg: &Config, n: u32) -> bool {
    let node = &layout.nodes[n as usize];
    node.kind == PokerKind::Leaf && (0..2).any(|p| node.spent[p] >= cfg.stack[p])
}

/// The run-outs of one public board: one showdown sweep per full board, and the factor that
/// turns their sum into a conditional mean per compatible hand pair.
struct Boards {
    /// The layout's game (its hands fix the sweeps' order) and the board's card bits.
    game: String,
    board_mask: u64,
    sweeps: Vec<HandSweep>,
    norm: f64,
}

impl Boards {
    /// Every run-out of `board` when there are at most `max` of them, else `max` drawn from a
    /// seed of the board.
    fn new(layout: &PokerLayout, cfg: &Config, board: &[u8], max: usize) -> Boards {
        let board_mask = mask(board);
        let left: Vec<u8> = cfg.deck[..cfg.deck_size]
            .iter()
            .copied()
            .filter(|&c| board_mask >> c & 1 == 0)
            .collect();
        let k = cfg.total_board - board.len();
        let all = choose(left.len(), k);
        // Every compatible (x, y) pair meets `choose(n − 4, k)` of the `choose(n, k)` run-outs.
        let per_pair = choose(left.len().saturating_sub(4), k);
        let (runouts, drawn) = if all <= max as f64 {
            (subsets(&left, k), all)
        } else {
            let mut rng = crate::util::SplitMix64::new(0x05ee_d0fb_0a2d ^ board_mask);
            let draws = (0..max)
                .map(|_| {
                    let mut pool = left.clone();
                    (0..k)
                        .map(|_| pool.swap_remove(rng.below(pool.len())))
                        .collect::<Vec<u8>>()
                })
                .collect();
            (draws, max as f64)
        };
        let sweeps = runouts
            .iter()
            .map(|extra| {
                let full: Vec<u8> = board.iter().chain(extra).copied().collect();
                let full_mask = mask(&full);
                let ranks: Vec<u16> = layout
                    .hands
                    .iter()
                    .zip(&layout.hand_masks)
                    .map(|(&(a, b), &hm)| {
                        if hm & full_mask == 0 {
                            hand_rank(cfg, &[a, b], &full)
                        } else {
                            0
                        }
                    })
                    .collect();
                HandSweep::new(&layout.hands, full_mask, Some(&ranks))
            })
            .collect();
        Boards {
            game: layout.game.clone(),
            board_mask,
            sweeps,
            norm: all / (drawn * per_pair.max(1.0)),
        }
    }

    /// `acc[x·k + j] = E_runout[Σ_y opp[y·k + j] · [x, y compatible] · sign(x vs y)]` for the
    /// `k` hand-major ranges of `opp`: one walk over the hands per run-out serves all of them.
    fn showdown_means(&self, opp: &[f64], k: usize, acc: &mut Vec<f64>, scratch: &mut Vec<f64>) {
        acc.clear();
        acc.resize(opp.len(), 0.0);
        for sweep in &self.sweeps {
            sweep.showdown_add_many(opp, k, acc, scratch);
        }
        acc.iter_mut().for_each(|v| *v *= self.norm);
    }
}

/// The run-outs of the boards that searches have met, kept for the next search on the same
/// board (the preflop board above all: every hand's first search meets it). Holds the
/// `CACHED_BOARDS` boards used last.
#[derive(Clone)]
pub struct RunoutCache {
    boards: usize,
    sets: Vec<Arc<Boards>>,
}

impl RunoutCache {
    /// A cache whose boards have at most `boards` run-outs each (at least 1).
    pub fn new(boards: usize) -> RunoutCache {
        RunoutCache {
            boards: boards.max(1),
            sets: Vec::new(),
        }
    }

    /// How many boards it holds.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether it holds no board.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The run-outs of `board` in `layout`'s game, built on a miss.
    fn get(&mut self, layout: &PokerLayout, cfg: &Config, board: &[u8]) -> Arc<Boards> {
        let board_mask = mask(board);
        let hit = self
            .sets
            .iter()
            .position(|b| b.board_mask == board_mask && b.game == layout.game);
        let set = match hit {
            Some(i) => self.sets.remove(i),
            None => Arc::new(Boards::new(layout, cfg, board, self.boards)),
        };
        if self.sets.len() == CACHED_BOARDS {
            self.sets.remove(0);
        }
        self.sets.push(set.clone());
        set
    }
}

/// Leaf values with the run-outs valued from the cards and every other leaf by `inner` (see
/// the module docs).
pub struct RunoutLeaves {
    inner: Option<Box<dyn PokerLeaves>>,
    /// The leaves `inner` values, in the layout's leaf order, and their positions in it.
    inner_leaves: Vec<u32>,
    inner_pos: Vec<usize>,
    /// The boards of the run-out leaves, and per board its leaves: each one's position among
    /// the layout's leaves and its stake times its chance weight.
    boards: Vec<Arc<Boards>>,
    runouts: Vec<Vec<(usize, f64)>>,
}

impl RunoutLeaves {
    /// An evaluator for the leaves of `layout` (whose game has configuration `cfg`): run-outs
    /// from `cache` (so over at most its number of run-outs each), the rest by the evaluator
    /// `inner` builds for exactly those leaves (in layout order; not called when there are
    /// none).
    pub fn new<E>(
        layout: &PokerLayout,
        cfg: &Config,
        cache: &mut RunoutCache,
        inner: impl FnOnce(Vec<u32>) -> Result<Box<dyn PokerLeaves>, E>,
    ) -> Result<RunoutLeaves, E> {
        let mut inner_leaves = Vec::new();
        let mut inner_pos = Vec::new();
        let mut runouts: Vec<Vec<(usize, f64)>> = Vec::new();
        let mut sets: Vec<Arc<Boards>> = Vec::new();
        for (pos, n) in layout.leaves().into_iter().enumerate() {
            if !is_runout(layout, cfg, n) {
                inner_leaves.push(n);
                inner_pos.push(pos);
                continue;
            }
            let node = &layout.nodes[n as usize];
            let set = match sets.iter().position(|b| b.board_mask == node.board_mask) {
                Some(i) => i,
                None => {
                    sets.push(cache.get(layout, cfg, &node.board));
                    runouts.push(Vec::new());
                    sets.len() - 1
                }
            };
            let stake = node.spent[0].min(node.spent[1]) as f64;
            runouts[set].push((pos, node.weight * stake));
        }
        let inner = if inner_leaves.is_empty() {
            None
        } else {
            Some(inner(inner_leaves.clone())?)
        };
        Ok(RunoutLeaves {
            inner,
            inner_leaves,
            inner_pos,
            boards: sets,
            runouts,
        })
    }

    /// How many leaves are valued from the cards.
    pub fn num_runouts(&self) -> usize {
        self.runouts.iter().map(Vec::len).sum()
    }
}

impl RunoutLeaves {
    /// The values of the players in `players` (the others' stay empty).
    fn values_of(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
        players: &[usize],
    ) -> [Vec<f64>; 2] {
        let p = layout.num_hands();
        assert_eq!(
            leaves.len(),
            self.inner_leaves.len() + self.num_runouts(),
            "the layout this evaluator was built for"
        );
        let mut values: [Vec<f64>; 2] = std::array::from_fn(|i| {
            if players.contains(&i) {
                vec![0.0; leaves.len() * p]
            } else {
                Vec::new()
            }
        });
        if let Some(inner) = self.inner.as_mut() {
            let pick = |r: &[f64]| -> Vec<f64> {
                self.inner_pos
                    .iter()
                    .flat_map(|&k| r[k * p..(k + 1) * p].iter().copied())
                    .collect()
            };
            let sub = [pick(ranges[0]), pick(ranges[1])];
            let sub = [&sub[0][..], &sub[1][..]];
            let out: [Vec<f64>; 2] = match players {
                &[i] => {
                    let mut out = [Vec::new(), Vec::new()];
                    out[i] = inner.evaluate_player(layout, &self.inner_leaves, sub, i);
                    out
                }
                _ => inner.evaluate(layout, &self.inner_leaves, sub),
            };
            for &i in players {
                for (j, &k) in self.inner_pos.iter().enumerate() {
                    values[i][k * p..(k + 1) * p].copy_from_slice(&out[i][j * p..(j + 1) * p]);
                }
            }
        }
        let (mut opp, mut acc, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
        for (boards, mine) in self.boards.iter().zip(&self.runouts) {
            for chunk in mine.chunks(BATCH) {
                let k = chunk.len();
                for &i in players {
                    opp.clear();
                    opp.resize(p * k, 0.0);
                    for (j, &(pos, _)) in chunk.iter().enumerate() {
                        let r = &ranges[1 - i][pos * p..(pos + 1) * p];
                        r.iter().enumerate().for_each(|(x, &v)| opp[x * k + j] = v);
                    }
                    boards.showdown_means(&opp, k, &mut acc, &mut scratch);
                    for (j, &(pos, scale)) in chunk.iter().enumerate() {
                        let out = &mut values[i][pos * p..(pos + 1) * p];
                        out.iter_mut()
                            .enumerate()
                            .for_each(|(x, o)| *o += scale * acc[x * k + j]);
                    }
                }
            }
        }
        values
    }
}

impl PokerLeaves for RunoutLeaves {
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2] {
        self.values_of(layout, leaves, ranges, &[0, 1])
    }

    fn evaluate_player(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
        p: usize,
    ) -> Vec<f64> {
        let [v0, v1] = self.values_of(layout, leaves, ranges, &[p]);
        if p == 0 { v0 } else { v1 }
    }
}

#[cfg(test)]
mod tests;
