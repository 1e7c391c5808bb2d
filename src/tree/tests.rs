use super::*;
use crate::games::load_game;

fn sorted_labels(tree: &PublicTree, p: Player) -> Vec<String> {
    let mut v = tree.infosets[p].key.clone();
    v.sort();
    v
}

#[test]
fn merged_chance_runs_keep_infosets_and_values() {
    // Leduc deals both private cards in a run of two chance nodes; Liar's Dice rolls dice
    // one by one. Merging the runs removes nodes and nothing else.
    for (name, fewer) in [("leduc_poker", 1), ("kuhn_poker", 1), ("liars_dice", 1)] {
        let game = load_game(name).unwrap();
        let plain = PublicTree::build_verified(game.as_ref()).unwrap();
        let merged = PublicTree::build_with_options(
            game.as_ref(),
            TreeOptions {
                merge_chance: true,
                verify: true,
                ..TreeOptions::default()
            },
        )
        .unwrap();
        assert!(merged.merged_chance && !plain.merged_chance);
        assert!(
            merged.nodes.len() + fewer <= plain.nodes.len(),
            "{name}: {} vs {} nodes",
            merged.nodes.len(),
            plain.nodes.len()
        );
        for p in 0..2 {
            assert_eq!(
                sorted_labels(&merged, p),
                sorted_labels(&plain, p),
                "{name}"
            );
        }
        assert_eq!(merged.num_infoset_labels(), plain.num_infosets());
        let (a, b) = (
            crate::eval::nash_conv(&plain, &uniform_tree_policy(&plain)),
            crate::eval::nash_conv(&merged, &uniform_tree_policy(&merged)),
        );
        assert!((a.nash_conv - b.nash_conv).abs() < 1e-12, "{name}");
        // Every chance history inside a merged run stays in its run's first node.
        let ht = history::HistoryTree::build(game.as_ref(), &merged).unwrap();
        for h in 1..ht.len() {
            let parent = ht.parent[h] as usize;
            let both_chance = ht.kind[h] == history::HistoryKind::Chance
                && ht.kind[parent] == history::HistoryKind::Chance;
            assert_eq!(
                both_chance,
                ht.node[h] == ht.node[parent],
                "{name}: history {h}"
            );
        }
    }
}

#[test]
fn labels_are_checked_against_nodes_and_private_states() {
    // A private-state index that forgets the card: two infostates in one slot.
    #[derive(Debug)]
    struct Blind(crate::game::GameRef);
    #[derive(Debug, Clone)]
    struct BlindState(Box<dyn State>);
    impl Game for Blind {
        fn short_name(&self) -> &str {
            self.0.short_name()
        }
        fn load_string(&self) -> String {
            self.0.load_string()
        }
        fn num_distinct_actions(&self) -> usize {
            self.0.num_distinct_actions()
        }
        fn max_chance_outcomes(&self) -> usize {
            self.0.max_chance_outcomes()
        }
        fn max_game_length(&self) -> usize {
            self.0.max_game_length()
        }
        fn min_utility(&self) -> f64 {
            self.0.min_utility()
        }
        fn max_utility(&self) -> f64 {
            self.0.max_utility()
        }
        fn information_state_tensor_size(&self) -> usize {
            self.0.information_state_tensor_size()
        }
        fn observation_tensor_size(&self) -> usize {
            self.0.observation_tensor_size()
        }
        fn new_initial_state(&self) -> Box<dyn State> {
            Box::new(BlindState(self.0.new_initial_state()))
        }
    }
    impl State for BlindState {
        fn turn(&self) -> Turn {
            self.0.turn()
        }
        fn legal_actions(&self) -> Vec<Action> {
            self.0.legal_actions()
        }
        fn chance_outcomes(&self) -> Vec<(Action, f64)> {
            self.0.chance_outcomes()
        }
        fn apply_action(&mut self, a: Action) {
            self.0.apply_action(a)
        }
        fn history(&self) -> &[Action] {
            self.0.history()
        }
        fn returns(&self) -> [f64; 2] {
            self.0.returns()
        }
        fn to_string(&self) -> String {
            self.0.to_string()
        }
        fn action_to_string(&self, p: Option<Player>, a: Action) -> String {
            self.0.action_to_string(p, a)
        }
        fn information_state_string(&self, p: Player) -> String {
            self.0.information_state_string(p)
        }
        fn information_state_tensor(&self, p: Player, out: &mut [f32]) {
            self.0.information_state_tensor(p, out)
        }
        fn observation_string(&self, p: Player) -> String {
            self.0.observation_string(p)
        }
        fn observation_tensor(&self, p: Player, out: &mut [f32]) {
            self.0.observation_tensor(p, out)
        }
        fn public_state_string(&self) -> String {
            self.0.public_state_string()
        }
        fn private_state(&self, _p: Player) -> usize {
            0
        }
        fn num_private_states(&self, _p: Player) -> usize {
            1
        }
        fn clone_box(&self) -> Box<dyn State> {
            Box::new(self.clone())
        }
    }
    let game = Blind(load_game("kuhn_poker").unwrap());
    let err = PublicTree::build_verified(&game).unwrap_err().to_string();
    assert!(err.contains("holds two infostates"), "{err}");
    // The fast build trusts the pair and merges Kuhn's three cards into one infoset.
    let fast = PublicTree::build(&game).unwrap();
    assert_eq!(fast.num_infosets(), [2, 2]);
}
