//! Shared by tests/holdem_factored.rs and tests/holdem_search.rs: the tiny Hold'em and the map
//! from factored-layout rows to the tabular tree's infosets (by OpenSpiel label).
#![allow(dead_code)]

use armac::game::State;
use armac::games::universal_poker::UniversalPokerGame;
use armac::tree::PublicTree;
use armac::tree::poker::{PokerEdge, PokerLayout};
use std::collections::HashMap;

/// The acceptance game of tests/holdem_tree.rs: 2 suits x 5 ranks, 2 hole cards, a 3-card
/// flop, limit betting.
pub const TINY: &str = "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,raiseSize=4 7,firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,numBoardCards=0 3,bettingAbstraction=fcpa)";

/// One factored strategy entry block mapped to a tree infoset: (player, block offset of
/// action 0 for this hand, tree infoset).
pub struct Row {
    pub player: usize,
    pub entry: usize,
    pub infoset: usize,
}

/// Maps every (decision, possible hand) of the layout to the tree infoset with the same
/// OpenSpiel label, by replaying a whole-game history with that hand and some compatible
/// opponent hand; checks that the map is onto and the actions agree.
pub fn map_rows(game: &UniversalPokerGame, layout: &PokerLayout, tree: &PublicTree) -> Vec<Row> {
    let cfg = game.config();
    let np = layout.num_hands();
    let labels: [HashMap<&str, usize>; 2] = std::array::from_fn(|p| {
        let inf = &tree.infosets[p];
        (0..inf.len()).map(|i| (inf.key[i].as_str(), i)).collect()
    });
    let mut rows = Vec::new();
    let mut hit = [
        vec![false; tree.infosets[0].len()],
        vec![false; tree.infosets[1].len()],
    ];
    for p in 0..2 {
        for (d, &n) in layout.decisions[p].iter().enumerate() {
            let n = n as usize;
            let path = layout.path(n);
            let node = &layout.nodes[n];
            for x in (0..np).filter(|&x| layout.possible(n, x)) {
                let y = (0..np)
                    .find(|&y| layout.hand_masks[y] & (layout.hand_masks[x] | node.board_mask) == 0)
                    .expect("a compatible opponent hand");
                let hands = if p == 0 { [x, y] } else { [y, x] };
                let mut s = game.initial_state();
                for h in hands {
                    let (a, b) = layout.hands[h];
                    for c in [a, b] {
                        s.apply(cfg.outcome_of(c).unwrap());
                    }
                }
                for e in &path {
                    match e {
                        PokerEdge::Action(a) => s.apply(*a),
                        PokerEdge::Deal(cards) => {
                            for &c in cards {
                                s.apply(cfg.outcome_of(c).unwrap());
                            }
                        }
                        PokerEdge::Root => unreachable!(),
                    }
                }
                assert_eq!(s.private_state(p), layout.hole_index[x] as usize);
                let label = s.information_state_string(p);
                let i = *labels[p]
                    .get(label.as_str())
                    .unwrap_or_else(|| panic!("no tree infoset labelled {label:?}"));
                let inf = &tree.infosets[p];
                assert_eq!(
                    &inf.actions[inf.range(i)],
                    node.actions.as_slice(),
                    "{label}"
                );
                assert!(!hit[p][i], "two layout rows map to {label:?}");
                hit[p][i] = true;
                rows.push(Row {
                    player: p,
                    entry: layout.offsets[p][d] + x,
                    infoset: i,
                });
            }
        }
    }
    for (p, h) in hit.iter().enumerate() {
        assert!(h.iter().all(|&h| h), "player {p}: tree infosets missed");
    }
    rows
}
