//! Helpers of the games' tests: whole-tree walks and the golden OpenSpiel infostate lists
//! under `tests/data`.

use crate::game::{Game, Player, State, Turn};
use std::collections::{BTreeSet, HashMap};

/// The information-state strings per player of the golden file `tests/data/{file}`.
pub(crate) fn golden_infostates(file: &str) -> [Vec<String>; 2] {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = |p: usize| -> Vec<String> {
        v["infostates"][p]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    [list(0), list(1)]
}

/// Walks the whole tree of `game`: (histories, decision infostates per player).
pub(crate) fn walk(game: &dyn Game) -> (usize, [BTreeSet<String>; 2]) {
    let mut infos = [BTreeSet::new(), BTreeSet::new()];
    let mut count = 0;
    let mut stack = vec![game.new_initial_state()];
    while let Some(s) = stack.pop() {
        count += 1;
        if let Turn::Player(p) = s.turn() {
            infos[p].insert(s.information_state_string(p));
        }
        for a in s.legal_actions() {
            let mut c = s.clone();
            c.apply_action(a);
            stack.push(c);
        }
    }
    (count, infos)
}

/// Walks the whole tree below `state`, counting (histories, terminals, chance, decision) into
/// `counts` and collecting the information-state strings at each player's decision nodes.
pub(crate) fn walk_counts(
    state: &dyn State,
    counts: &mut [usize; 4],
    infos: &mut [BTreeSet<String>; 2],
) {
    counts[0] += 1;
    match state.turn() {
        Turn::Terminal => {
            counts[1] += 1;
            return;
        }
        Turn::Chance => counts[2] += 1,
        Turn::Player(p) => {
            counts[3] += 1;
            infos[p].insert(state.information_state_string(p));
        }
    }
    for a in state.legal_actions() {
        let mut child = state.clone_box();
        child.apply_action(a);
        walk_counts(child.as_ref(), counts, infos);
    }
}

/// Compares the decision infostates `infos` of the game `text` with the golden list in
/// `tests/data/{file}`.
pub(crate) fn assert_golden_infostates(infos: &[BTreeSet<String>; 2], file: &str, text: &str) {
    let want = golden_infostates(file);
    for p in 0..2 {
        let got: Vec<String> = infos[p].iter().cloned().collect();
        assert_eq!(got, want[p], "{text}: infostates of player {p}");
    }
}

/// Checks on every node below `root` what `check_game` checks on samples (the information
/// state determines public and private state; for the player to act, also conversely), and
/// on every edge that a private state changes only on the moves of `mover(state)` (the
/// player whose own bid or roll the edge is), as a function of `context(state, player)`,
/// the old index and the action.
pub(crate) fn check_factorisation<S: State + Clone>(
    root: S,
    mover: impl Fn(&S) -> Option<Player>,
    context: impl Fn(&S, Player) -> usize,
) {
    let mut factorisation = crate::game::conformance::FactorisationCheck::default();
    let mut step = HashMap::new();
    let mut stack = vec![root];
    while let Some(s) = stack.pop() {
        factorisation.observe(&s).unwrap();
        let moving = mover(&s);
        for a in s.legal_actions() {
            let mut c = s.clone();
            c.apply_action(a);
            for p in 0..2 {
                let (before, after) = (s.private_state(p), c.private_state(p));
                if moving == Some(p) {
                    let key = (p, context(&s, p), before, a);
                    assert_eq!(step.entry(key).or_insert(after), &after);
                } else {
                    assert_eq!(before, after, "{:?} -> {a}", s.history());
                    assert_eq!(s.num_private_states(p), c.num_private_states(p));
                }
            }
            stack.push(c);
        }
    }
}
