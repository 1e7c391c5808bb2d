//! scratch
use armac::games::load_game;
use armac::tree::{PublicTree, TreeOptions};
use std::time::Instant;

const TINY: &str = "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=2 1,raiseSize=2 4,firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,numBoardCards=0 3,bettingAbstraction=fcpa)";
const CROSS: &str = "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=2 1,raiseSize=2 4,firstPlayer=2 1,maxRaises=1 1,numSuits=2,numRanks=4,numHoleCards=1,numBoardCards=2 2,bettingAbstraction=fcpa)";

#[test]
fn scratch_sizes() {
    for s in [CROSS, TINY] {
        let game = load_game(s).unwrap();
        for merge in [false, true] {
            let t = Instant::now();
            let tree = PublicTree::build_with_options(game.as_ref(), TreeOptions { merge_chance: merge, ..Default::default() }).unwrap();
            eprintln!("{s} merge={merge}: {:?} infosets {:?} labels {:?} terminals {} in {:?}", tree.stats, tree.num_infosets(), tree.num_infoset_labels(), tree.terminals.len(), t.elapsed());
        }
    }
}
