use super::*;
use crate::game::conformance::check_game;
use crate::games::load_game;
use crate::games::test_support::{assert_golden_infostates, check_factorisation, walk};

fn tb(inner: &str) -> String {
    format!("turn_based_simultaneous_game(game=goofspiel({inner}))")
}

#[test]
fn conformance_for_every_supported_variant() {
    let mut variants = Vec::new();
    for n in [1, 2, 3, 4, 5, 6, 7, 8] {
        for order in ["descending", "ascending", "random"] {
            variants.push(tb(&format!(
                "imp_info=True,num_cards={n},points_order={order}"
            )));
        }
    }
    variants.push(tb(
        "imp_info=True,num_cards=5,points_order=descending,returns_type=point_difference",
    ));
    variants.push(tb(
        "imp_info=True,num_cards=6,returns_type=point_difference,egocentric=True",
    ));
    variants.push(tb("imp_info=True,num_cards=13"));
    for text in variants {
        let game = load_game(&text).unwrap();
        check_game(game.as_ref(), 1500, 23).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

#[test]
fn tree_and_infostates_match_openspiel() {
    for (text, file, histories, infostates) in [
        ("goofspiel5", "golden_goofspiel5.json", 26_931, 1062),
        (
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
            "golden_goofspiel4.json",
            1077,
            0,
        ),
    ] {
        let game = load_game(text).unwrap();
        let (count, infos) = walk(game.as_ref());
        assert_eq!(count, histories, "{text}");
        if infostates > 0 {
            assert_eq!([infos[0].len(), infos[1].len()], [infostates; 2], "{text}");
        }
        assert_golden_infostates(&infos, file, text);
    }
}

/// The player whose own bid an edge of `s` is.
fn goofspiel_bidder(s: &GoofspielState) -> Option<Player> {
    match s.turn() {
        Turn::Player(p) => Some(p),
        _ => None,
    }
}

/// On every node of whole trees, the information state determines public and private
/// state, and a private state changes only with the player's own bids, as a function of
/// the old index and the bid.
#[test]
fn factorisation_holds_on_whole_trees() {
    for inner in [
        "imp_info=True,num_cards=5,points_order=descending",
        "imp_info=True,num_cards=4,points_order=ascending",
        "imp_info=True,num_cards=4",
        "imp_info=True,num_cards=3,egocentric=True,returns_type=point_difference",
    ] {
        let inner = GameParams::parse(&format!("goofspiel({inner})")).unwrap();
        let game = GoofspielGame::from_goofspiel_params(&inner).unwrap();
        check_factorisation(game.initial_state(), goofspiel_bidder, |s, p| {
            s.num_private_states(p)
        });
    }
}

#[test]
fn load_strings_are_openspiel_strings() {
    for (text, want) in [
        (
            "goofspiel5",
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))",
        ),
        (
            "turn_based_simultaneous_game(game=goofspiel(points_order=ascending,num_cards=4,imp_info=True,players=2,num_turns=-1,egocentric=False))",
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=ascending))",
        ),
        (
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=13,returns_type=point_difference))",
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,returns_type=point_difference))",
        ),
    ] {
        assert_eq!(load_game(text).unwrap().load_string(), want, "{text}");
    }
}

#[test]
fn bad_parameters_name_the_parameter() {
    for (inner, param) in [
        ("num_cards=5,points_order=descending", "imp_info"),
        ("imp_info=False,num_cards=5", "imp_info"),
        ("imp_info=True,num_cards=14", "num_cards"),
        ("imp_info=True,num_cards=0", "num_cards"),
        ("imp_info=True,points_order=shuffled", "points_order"),
        ("imp_info=True,returns_type=total_points", "returns_type"),
        ("imp_info=True,returns_type=margin", "returns_type"),
        ("imp_info=True,num_turns=3", "num_turns"),
        ("imp_info=True,players=3", "players"),
        ("imp_info=True,depth=3", "depth"),
    ] {
        let e = load_game(&tb(inner)).unwrap_err();
        match &e {
            GameError::BadParameter { param: p, .. } => assert_eq!(p, param, "{inner}: {e}"),
            other => panic!("{inner}: unexpected error {other}"),
        }
    }
    for text in [
        "turn_based_simultaneous_game",
        "turn_based_simultaneous_game(game=kuhn_poker)",
    ] {
        let e = load_game(text).unwrap_err().to_string();
        assert!(e.contains("`game`"), "{text}: {e}");
    }
}

#[test]
fn bare_goofspiel_explains_the_wrapper() {
    let e = load_game("goofspiel(imp_info=True,num_cards=5,points_order=descending)")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("simultaneous")
            && e.contains(
                "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))"
            ),
        "{e}"
    );
}

#[test]
fn private_state_ranks_permutation_prefixes() {
    let game = load_game("goofspiel5").unwrap();
    let mut s = game.new_initial_state();
    assert_eq!([s.num_private_states(0), s.num_private_states(1)], [1, 1]);
    s.apply_action(3); // P0 bids 4: rank 3 of 5.
    assert_eq!((s.private_state(0), s.num_private_states(0)), (3, 5));
    assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 1));
    s.apply_action(0);
    s.apply_action(4); // P0 bids 5: rank 3 among {1, 2, 3, 5}.
    assert_eq!(
        (s.private_state(0), s.num_private_states(0)),
        (3 * 4 + 3, 20)
    );
    assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 5));
}

#[test]
fn point_difference_returns() {
    let game = load_game(&tb(
        "imp_info=True,num_cards=3,points_order=descending,returns_type=point_difference",
    ))
    .unwrap();
    assert_eq!((game.min_utility(), game.max_utility()), (-3.0, 3.0));
    let mut s = game.new_initial_state();
    for a in [0, 0, 2, 1] {
        s.apply_action(a);
    }
    // Point 3 tied, point 2 to P0, the automatic last round (point 1) to P1.
    assert!(s.is_terminal());
    assert_eq!(s.returns(), [0.5, -0.5]);
    assert_eq!(s.history(), &[0, 0, 2, 1]);
}
