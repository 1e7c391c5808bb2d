use super::*;
use crate::game::conformance::check_game;
use crate::game::replay;
use crate::games::load_game;
use crate::games::test_support::walk_counts as walk;
use std::collections::BTreeSet;

/// Player 0's expected return when both players play uniformly at random.
fn uniform_value(s: &dyn State) -> f64 {
    let weighted: Vec<(Action, f64)> = match s.turn() {
        Turn::Terminal => return s.returns()[0],
        Turn::Chance => s.chance_outcomes(),
        Turn::Player(_) => {
            let legal = s.legal_actions();
            let w = 1.0 / legal.len() as f64;
            legal.into_iter().map(|a| (a, w)).collect()
        }
    };
    weighted
        .into_iter()
        .map(|(a, w)| {
            let mut c = s.clone_box();
            c.apply_action(a);
            w * uniform_value(c.as_ref())
        })
        .sum()
}

#[test]
fn conformance_default() {
    let game = load_game("leduc_poker").unwrap();
    check_game(game.as_ref(), 3000, 5).unwrap();
}

#[test]
fn conformance_more_ranks() {
    for n in [2, 4, 13] {
        let game = load_game(&format!("leduc_poker(num_ranks={n})")).unwrap();
        check_game(game.as_ref(), 2000, 17 + n).unwrap();
    }
}

#[test]
fn tree_counts_and_infostates_match_openspiel() {
    let game = load_game("leduc_poker").unwrap();
    let mut counts = [0; 4];
    let mut infos = [BTreeSet::new(), BTreeSet::new()];
    walk(game.new_initial_state().as_ref(), &mut counts, &mut infos);

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/golden_leduc_poker.json"
    );
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tc = &data["tree_counts"];
    let want_counts =
        ["histories", "terminal", "chance", "decision"].map(|k| tc[k].as_u64().unwrap() as usize);
    assert_eq!(counts, want_counts);
    assert_eq!(counts, [9457, 5520, 157, 3780]);
    for p in 0..2 {
        let want: BTreeSet<String> = data["infostates"][p]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(want.len(), 468);
        assert_eq!(infos[p], want, "player {p}");
    }
}

#[test]
fn uniform_policy_value_matches_openspiel() {
    // games.json: on-policy values of the uniform policy are [-0.078125, 0.078125].
    let game = load_game("leduc_poker").unwrap();
    let v = uniform_value(game.new_initial_state().as_ref());
    assert!((v + 0.078125).abs() < 1e-12, "{v}");
}

#[test]
fn golden_terminals() {
    let game = load_game("leduc_poker").unwrap();
    // Histories and player 0's return, taken from OpenSpiel 2.0.2.
    let cases: &[(&[Action], f64)] = &[
        (&[0, 3, 2, 1, 1, 2, 1], 7.0), // J beats Q with the J on board
        (&[0, 1, 1, 1, 4, 1, 1], 0.0), // both J: split
        (&[5, 2, 2, 2, 1, 0, 1, 2, 2, 1], 13.0), // the largest pot
        (&[4, 0, 1, 2, 0], -1.0),      // check, raise, fold
        (&[1, 3, 2, 2, 1, 5, 1, 2, 2, 1], -13.0), // Q high beats J high
    ];
    for &(actions, r0) in cases {
        let s = replay(game.as_ref(), actions).unwrap();
        assert!(s.is_terminal(), "{actions:?}");
        assert_eq!(s.returns(), [r0, -r0], "{actions:?}");
    }
    let s = replay(game.as_ref(), &[0, 3, 2, 1, 1, 2, 1]).unwrap();
    assert_eq!(
        s.to_string(),
        "Round: 2\nPlayer: 1\nPot: 0\nMoney (player_0 player_1): 107 93\n\
         Cards (public player_0 player_1): 1 0 3 \nRound 1 sequence: Raise, Call\n\
         Round 2 sequence: Raise, Call\n"
    );
    assert_eq!(
        s.information_state_string(0),
        "[Observer: 0][Private: 0][Round 2][Player: 1][Pot: 0][Money: 107 93][Public: 1]\
         [Round1: 2 1][Round2: 2 1]"
    );
    assert_eq!(
        s.observation_string(1),
        "[Observer: 1][Private: 3][Round 2][Player: 1][Pot: 0][Money: 107 93][Public: 1]\
         [Ante: 7 7]"
    );
}

#[test]
fn thirteen_ranks() {
    let game = load_game("leduc_poker(num_ranks=13)").unwrap();
    assert_eq!(game.load_string(), "leduc_poker(num_ranks=13)");
    assert_eq!(
        load_game(&game.load_string()).unwrap().load_string(),
        "leduc_poker(num_ranks=13)"
    );
    assert_eq!(game.max_chance_outcomes(), 26);
    assert_eq!(game.information_state_tensor_size(), 70);
    assert_eq!(game.observation_tensor_size(), 56);
    assert_eq!((game.min_utility(), game.max_utility()), (-13.0, 13.0));
    assert_eq!(game.max_game_length(), 8);

    let root = game.new_initial_state();
    let outcomes = root.chance_outcomes();
    assert_eq!(outcomes.len(), 26);
    assert!(outcomes.iter().all(|&(_, p)| p == 1.0 / 26.0));

    // Player 1's pair of 2s (cards 0 and 1) beats player 0's king (card 24).
    let s = replay(game.as_ref(), &[24, 0, 1, 1, 1, 1, 1]).unwrap();
    assert_eq!(s.returns(), [-1.0, 1.0]);
    // Aces (rank 12: cards 24, 25) split against each other with a 2 on board.
    let s = replay(game.as_ref(), &[24, 25, 2, 1, 1, 2, 1]).unwrap();
    assert_eq!(s.returns(), [0.0, 0.0]);
    // High card: K (22) over Q (20) on a 2.
    let s = replay(game.as_ref(), &[20, 22, 1, 1, 0, 1, 1]).unwrap();
    assert_eq!(s.returns(), [-1.0, 1.0]);

    let s = replay(game.as_ref(), &[25, 3, 2, 1, 17]).unwrap();
    assert_eq!(
        s.information_state_string(0),
        "[Observer: 0][Private: 25][Round 2][Player: 0][Pot: 6][Money: 97 97][Public: 17]\
         [Round1: 2 1][Round2: ]"
    );
    let mut t = vec![f32::NAN; game.information_state_tensor_size()];
    s.information_state_tensor(0, &mut t);
    let ones: Vec<usize> = (0..t.len()).filter(|&i| t[i] == 1.0).collect();
    assert_eq!(ones, vec![0, 2 + 25, 2 + 26 + 17, 54 + 1, 54 + 2]);
    let mut o = vec![f32::NAN; game.observation_tensor_size()];
    s.observation_tensor(1, &mut o);
    assert_eq!(&o[54..], &[3.0, 3.0]);
    assert_eq!(o[1], 1.0);
    assert_eq!(o[2 + 3], 1.0);
    assert_eq!(s.private_state(0), 25);
    assert_eq!(s.num_private_states(1), 26);
}

#[test]
fn private_states_follow_the_deal() {
    let game = load_game("leduc_poker").unwrap();
    let mut s = game.new_initial_state();
    let root_public = s.public_state_string();
    assert_eq!((s.private_state(0), s.num_private_states(0)), (0, 1));
    s.apply_action(4);
    assert_eq!(s.public_state_string(), root_public);
    assert_eq!((s.private_state(0), s.num_private_states(0)), (4, 6));
    assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 1));
    s.apply_action(0);
    assert_ne!(s.public_state_string(), root_public);
    assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 6));
    assert_eq!(
        s.public_state_string(),
        "[Round 1][Player: 0][Pot: 2][Money: 99 99][Round1: ][Round2: ]"
    );
}

#[test]
fn bad_parameters_are_rejected() {
    for (text, param) in [
        ("leduc_poker(players=3)", "players"),
        ("leduc_poker(action_mapping=true)", "action_mapping"),
        ("leduc_poker(suit_isomorphism=true)", "suit_isomorphism"),
        ("leduc_poker(starting_player=1)", "starting_player"),
        ("leduc_poker(num_ranks=1)", "num_ranks"),
        ("leduc_poker(num_ranks=14)", "num_ranks"),
        ("leduc_poker(num_ranks=three)", "num_ranks"),
        ("leduc_poker(ranks=4)", "ranks"),
    ] {
        match load_game(text) {
            Err(GameError::BadParameter { param: p, .. }) => assert_eq!(p, param, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    for text in [
        "leduc_poker",
        "leduc_poker()",
        "leduc_poker(players=2,action_mapping=false,suit_isomorphism=False,starting_player=0)",
        "leduc_poker(num_ranks=3)",
    ] {
        assert_eq!(
            load_game(text).unwrap().load_string(),
            "leduc_poker",
            "{text}"
        );
    }
}

#[test]
fn illegal_moves_are_errors() {
    let game = load_game("leduc_poker").unwrap();
    let mut s = replay(game.as_ref(), &[1, 2]).unwrap();
    assert!(s.try_apply(FOLD).is_err()); // nothing to fold against
    let mut s = replay(game.as_ref(), &[1, 2, 2, 2]).unwrap();
    assert!(s.try_apply(RAISE).is_err()); // third raise
    let mut s = replay(game.as_ref(), &[1]).unwrap();
    assert!(s.try_apply(1).is_err()); // card already dealt
    assert!(s.try_apply(6).is_err());
}
