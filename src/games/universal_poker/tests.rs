//! Unit tests of the tricky rules, against values taken from OpenSpiel 2.0.2.

use super::playouts::select_bit;
use super::render::format_g6;
use super::state::colex_rank;
use super::*;
use crate::game::conformance::check_game;
use crate::games::cards::{hole_index, parse_card};
use crate::games::load_game;
use crate::util::SplitMix64;

fn fcpa() -> UniversalPokerGame {
    UniversalPokerGame::hunl_fcpa()
}

/// Plays card names and action ids (`"As"` or `"2"`) from the root.
fn play(game: &UniversalPokerGame, moves: &[&str]) -> UniversalPokerState {
    let mut s = game.initial_state();
    for m in moves {
        let a = match parse_card(m) {
            Some(c) if s.turn() == Turn::Chance => game.config().outcome_of(c).unwrap(),
            _ => m.parse::<usize>().unwrap(),
        };
        s.try_apply(a).unwrap_or_else(|e| panic!("{m}: {e}"));
    }
    s
}

const DEAL: [&str; 4] = ["As", "Ks", "7c", "2d"];

fn with_deal(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = DEAL.to_vec();
    v.extend_from_slice(extra);
    v
}

#[test]
fn static_facts_match_openspiel() {
    let g = fcpa();
    assert_eq!(g.num_distinct_actions(), 4);
    assert_eq!(g.max_chance_outcomes(), 52);
    assert_eq!(g.max_game_length(), 23);
    assert_eq!(g.min_utility(), -20000.0);
    assert_eq!(g.max_utility(), 20000.0);
    assert_eq!(g.information_state_tensor_size(), 175);
    assert_eq!(g.observation_tensor_size(), 108);
    assert_eq!(
        g.load_string(),
        "universal_poker(betting=nolimit,bettingAbstraction=fcpa,blind=100 50,firstPlayer=2 1 1 1,\
         numBoardCards=0 3 1 1,numHoleCards=2,numPlayers=2,numRanks=13,numRounds=4,numSuits=4,\
         stack=20000 20000)"
    );
    let via_alias = load_game("hunl_fcpa").unwrap();
    assert_eq!(via_alias.load_string(), g.load_string());
    assert_eq!(
        load_game(&g.load_string()).unwrap().load_string(),
        g.load_string()
    );
}

#[test]
fn other_configurations_static_facts() {
    // (game string, distinct actions, chance outcomes, max length, utility, tensor sizes),
    // all read from pyspiel 2.0.2.
    let cases: &[(&str, usize, usize, usize, f64, usize, usize)] = &[
        (
            "universal_poker(betting=limit,numPlayers=2,numRounds=4,blind=10 5,raiseSize=10 10 20 20,\
             firstPlayer=2 1 1 1,maxRaises=3 4 4 4,numSuits=4,numRanks=13,numHoleCards=2,\
             numBoardCards=0 3 1 1,bettingAbstraction=fcpa)",
            3,
            52,
            36,
            240.0,
            214,
            108,
        ),
        (
            "universal_poker(betting=limit,numPlayers=2,numRounds=4,blind=10 5,raiseSize=10 10 20 20,\
             firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,\
             bettingAbstraction=fc)",
            3,
            52,
            18,
            15310.0,
            160,
            108,
        ),
        (
            "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,\
             firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,\
             stack=20000 20000,bettingAbstraction=fc)",
            4,
            52,
            18,
            20000.0,
            160,
            108,
        ),
        (
            "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,\
             firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,\
             stack=2000 1500,bettingAbstraction=fullgame)",
            2001,
            52,
            38,
            1500.0,
            220,
            108,
        ),
    ];
    for &(text, actions, outcomes, length, utility, info, obs) in cases {
        let g = UniversalPokerGame::from_string(text).unwrap();
        assert_eq!(g.num_distinct_actions(), actions, "{text}");
        assert_eq!(g.max_chance_outcomes(), outcomes, "{text}");
        assert_eq!(g.max_game_length(), length, "{text}");
        assert_eq!(
            (g.min_utility(), g.max_utility()),
            (-utility, utility),
            "{text}"
        );
        assert_eq!(g.information_state_tensor_size(), info, "{text}");
        assert_eq!(g.observation_tensor_size(), obs, "{text}");
    }
}

#[test]
fn unsupported_parameters_are_named() {
    let cases = [
        ("universal_poker(numPlayers=3)", "numPlayers"),
        (
            "universal_poker(bettingAbstraction=fchpa)",
            "bettingAbstraction",
        ),
        ("universal_poker(betting=pot)", "betting"),
        ("universal_poker(potSize=10)", "potSize"),
        ("universal_poker(colour=red)", "colour"),
        (
            "universal_poker(numHoleCards=2,numBoardCards=0 1)",
            "numBoardCards",
        ),
        ("universal_poker", "numBoardCards"),
        (
            "universal_poker(numHoleCards=2,numBoardCards=0 3,stack=100)",
            "stack",
        ),
    ];
    for (text, param) in cases {
        let err = UniversalPokerGame::from_string(text)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("`{param}`")), "{text}: {err}");
    }
}

#[test]
fn preflop_legality_and_pot_raise_facing_a_raise() {
    let g = fcpa();
    let s = play(&g, &DEAL);
    assert_eq!(s.turn(), Turn::Player(1));
    assert_eq!(s.legal_actions(), vec![0, 1, 2, 3]);
    // Small blind pot-raises to 300: 150 in the pot plus 50 to call, on top of the 100 bet.
    let s = play(&g, &with_deal(&["2"]));
    assert_eq!(s.contributions(), [100, 300]);
    assert_eq!(s.turn(), Turn::Player(0));
    // Facing the raise: to 300 + (400 + 200) = 900.
    let s = play(&g, &with_deal(&["2", "2"]));
    assert_eq!(s.contributions(), [900, 300]);
    let s = play(&g, &with_deal(&["2", "2", "2"]));
    assert_eq!(s.contributions(), [900, 2700]);
    let s = play(&g, &with_deal(&["2", "2", "2", "2"]));
    assert_eq!(s.contributions(), [8100, 2700]);
    // The next pot raise (24300) exceeds the stack: only all-in remains as a raise.
    assert_eq!(s.legal_actions(), vec![0, 1, 3]);
}

#[test]
fn fold_is_illegal_without_a_bet_to_face() {
    let g = fcpa();
    // Small blind limps; the big blind has nothing to call.
    let s = play(&g, &with_deal(&["1"]));
    assert_eq!(s.turn(), Turn::Player(0));
    assert_eq!(s.legal_actions(), vec![1, 2, 3]);
    assert!(play(&g, &with_deal(&["1"])).try_apply(0).is_err());
    // Postflop, player 0 acts first and cannot fold either.
    let s = play(&g, &with_deal(&["1", "1", "2c", "3c", "4c"]));
    assert_eq!(s.turn(), Turn::Player(0));
    assert_eq!(s.legal_actions(), vec![1, 2, 3]);
}

#[test]
fn all_in_legality() {
    let g = fcpa();
    // Facing an all-in: only fold or call.
    let s = play(&g, &with_deal(&["3"]));
    assert_eq!(s.contributions(), [100, 20000]);
    assert_eq!(s.legal_actions(), vec![0, 1]);
    // A pot raise that lands exactly on the stack is offered as the bet, not as all-in.
    let g2 = UniversalPokerGame::from_string(
        "universal_poker(betting=nolimit,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,\
         numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=300 300)",
    )
    .unwrap();
    let s = play(&g2, &DEAL);
    assert_eq!(s.legal_actions(), vec![0, 1, 2]);
}

#[test]
fn board_is_dealt_after_an_all_in_call() {
    let g = fcpa();
    let s = play(&g, &with_deal(&["3", "1"]));
    assert_eq!(s.turn(), Turn::Chance);
    assert_eq!(s.betting().round, 3);
    assert_eq!(s.chance_outcomes().len(), 48);
    let s = play(&g, &with_deal(&["3", "1", "2c", "3c", "3d", "3h", "3s"]));
    assert!(s.is_terminal());
    assert_eq!(s.returns(), [20000.0, -20000.0]);
    assert_eq!(
        s.information_state_string(0),
        "[Round 3][Player: -4][Pot: 40000][Money: 0 0][Private: AsKs][Public: 3s3h3d3c2c]\
         [Sequences: r20000c|||]"
    );
}

#[test]
fn showdown_ties_split() {
    let g = fcpa();
    // Both play the board's royal flush.
    let s = play(
        &g,
        &[
            "2c", "3d", "2d", "3c", "1", "1", "Ah", "Kh", "Qh", "1", "1", "Jh", "1", "1", "Th",
            "1", "1",
        ],
    );
    assert!(s.is_terminal());
    assert_eq!(s.returns(), [0.0, 0.0]);
    // A fold gives the folder's contribution to the other player.
    let s = play(&g, &with_deal(&["2", "0"]));
    assert_eq!(s.returns(), [-100.0, 100.0]);
}

#[test]
fn fullgame_raise_range() {
    let g = UniversalPokerGame::from_string(
        "universal_poker(betting=nolimit,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,\
         numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=2000 1500,\
         bettingAbstraction=fullgame)",
    )
    .unwrap();
    let s = play(&g, &DEAL);
    let legal = s.legal_actions();
    assert_eq!(&legal[..3], &[0, 1, 200]);
    assert_eq!(*legal.last().unwrap(), 1500);
    assert_eq!(legal.len(), 2 + 1301);
    assert_eq!(s.action_to_string(Some(1), 250), "player=1 move=Bet250");
    // Re-raise minimum: 250 raised by 150 -> at least 400.
    let s = play(&g, &with_deal(&["250"]));
    assert_eq!(s.legal_actions()[2], 400);
}

#[test]
fn format_g6_matches_printf() {
    assert_eq!(format_g6(20000.0), "20000");
    assert_eq!(format_g6(-150.0), "-150");
    assert_eq!(format_g6(0.0), "0");
    assert_eq!(format_g6(12345.5), "12345.5");
    assert_eq!(format_g6(1_000_000.0), "1e+06");
    assert_eq!(format_g6(2.5e-5), "2.5e-05");
    assert_eq!(format_g6(123456.7), "123457");
}

#[test]
fn select_bit_matches_naive() {
    let mut rng = SplitMix64::new(3);
    for _ in 0..2000 {
        let m = rng.next_u64() & rng.next_u64();
        let ones: Vec<u32> = (0..64).filter(|&i| m >> i & 1 == 1).collect();
        for (k, &want) in ones.iter().enumerate() {
            assert_eq!(select_bit(m, k as u32), want, "{m:#x} {k}");
        }
    }
    assert_eq!(select_bit(u64::MAX, 63), 63);
}

#[test]
fn fast_and_generic_playouts_agree() {
    assert_eq!(random_playouts(300, 7), random_playouts_dyn(300, 7));
}

#[test]
fn private_state_indexes_hole_cards() {
    let g = fcpa();
    let s = play(&g, &DEAL[..3]);
    assert_eq!(s.num_private_states(0), 1326);
    assert_eq!(s.private_state(0), hole_index(51, 47));
    assert_eq!((s.private_state(1), s.num_private_states(1)), (20, 52));
    let s = play(&g, &[]);
    assert_eq!((s.private_state(1), s.num_private_states(1)), (0, 1));
    assert_eq!(colex_rank(&[0, 1, 2]), 0);
    assert_eq!(colex_rank(&[49, 50, 51]), 22099);
}

#[test]
fn conformance_fcpa() {
    check_game(&fcpa(), 3000, 11).unwrap();
}

#[test]
fn conformance_other_configurations() {
    for text in [
        "universal_poker(betting=limit,numRounds=4,blind=10 5,raiseSize=10 10 20 20,\
         firstPlayer=2 1 1 1,maxRaises=3 4 4 4,numSuits=4,numRanks=13,numHoleCards=2,\
         numBoardCards=0 3 1 1,bettingAbstraction=fcpa)",
        "universal_poker(betting=nolimit,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,\
         numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,\
         bettingAbstraction=fc)",
        "universal_poker(betting=nolimit,numRounds=3,blind=20 10,firstPlayer=2 1 1,numSuits=3,\
         numRanks=8,numHoleCards=2,numBoardCards=0 2 1,stack=400 300,bettingAbstraction=fullgame)",
        "universal_poker(betting=nolimit,numRounds=2,blind=2 1,firstPlayer=1 2,numSuits=4,\
         numRanks=6,numHoleCards=3,numBoardCards=1 2,stack=50 50,bettingAbstraction=fcpa)",
    ] {
        let g = UniversalPokerGame::from_string(text).unwrap();
        check_game(&g, 500, 5).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

#[test]
fn raises_stop_when_the_round_would_overflow_acpc_action_slots() {
    // Min-raising by one chip: ACPC refuses a 64th raise (OpenSpiel prints a warning and
    // offers only fold and call); verified with pyspiel: 63 raises, then [0, 1].
    let g = UniversalPokerGame::from_string(
        "universal_poker(betting=nolimit,numRounds=2,blind=1 1,firstPlayer=1 2,numSuits=4,\
         numRanks=13,numHoleCards=2,numBoardCards=3 1,stack=200 200,bettingAbstraction=fullgame)",
    )
    .unwrap();
    assert_eq!(g.max_game_length(), 213);
    let mut s = g.initial_state();
    for a in 0..7 {
        s.apply(a);
    }
    let mut raises = 0;
    while let Some((min, _)) = s.raise_range() {
        s.try_apply(min as usize).unwrap();
        raises += 1;
    }
    assert_eq!(raises, 63);
    assert_eq!(s.legal_actions(), vec![0, 1]);
    assert!(s.information_state_string(0).ends_with("r62r63r64]"));
}

/// `cargo test --release --lib universal_poker::tests::bench -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_random_playouts() {
    use std::time::Instant;
    let n = 2_000_000;
    random_playouts(10_000, 1);
    let t = Instant::now();
    let c = random_playouts(n, 1);
    let fast = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let c2 = random_playouts_dyn(n / 4, 1);
    let dyn_rate = (n / 4) as f64 / t.elapsed().as_secs_f64();
    println!("random FCPA playouts/s: concrete {fast:.0}, Box<dyn State> {dyn_rate:.0} ({c} {c2})");
}

#[test]
fn public_tree_key_tells_apart_boards_dealt_in_other_rounds() {
    // OpenSpiel 2.0.2 prints both as `[Public: QhJhTh9c]` with equal information states
    // (checked in pyspiel): the flop and the turn are one set there.
    let g = fcpa();
    let a = play(
        &g,
        &with_deal(&["1", "1", "Qh", "Jh", "Th", "1", "1", "9c"]),
    );
    let b = play(
        &g,
        &with_deal(&["1", "1", "Qh", "Jh", "9c", "1", "1", "Th"]),
    );
    for p in 0..2 {
        assert_eq!(a.information_state_string(p), b.information_state_string(p));
    }
    assert_eq!(a.public_state_string(), b.public_state_string());
    assert_eq!(
        a.public_tree_key(),
        "[Round 2][Player: 0][Pot: 200][Money: 19900 19900][Board: |QhJhTh|9c|][Sequences: cc|cc|]"
    );
    assert_ne!(a.public_tree_key(), b.public_tree_key());
    // The order of the cards within one round's deal does not matter.
    let c = play(
        &g,
        &with_deal(&["1", "1", "Th", "Qh", "Jh", "1", "1", "9c"]),
    );
    assert_eq!(a.public_tree_key(), c.public_tree_key());
    // Mid-deal, the cards dealt so far fill their round's slot.
    let d = play(&g, &with_deal(&["1", "1", "Qh"]));
    assert!(
        d.public_tree_key().contains("[Board: |Qh||]"),
        "{}",
        d.public_tree_key()
    );
    // After an all-in call the rest of the board is dealt at once; each card still belongs to
    // the round whose board it fills.
    let e = play(&g, &with_deal(&["3", "1", "Qh", "Jh", "Th", "9c", "8c"]));
    assert!(e.is_terminal());
    assert!(
        e.public_tree_key().contains("[Board: |QhJhTh|9c|8c]"),
        "{}",
        e.public_tree_key()
    );
}

#[test]
fn public_state_tensor_segments_and_independence_of_private_cards() {
    let g = fcpa();
    let cfg = g.config();
    let (d, r, l) = (52, 4, 23);
    assert_eq!(g.public_state_tensor_size(), d + r + 8 + 3 * l);
    assert_eq!(g.public_state_tensor_size(), 133);
    let tensor = |s: &UniversalPokerState| {
        let mut out = vec![f32::NAN; g.public_state_tensor_size()];
        s.public_state_tensor(&mut out);
        out
    };
    // Preflop: small blind (player 1) calls, big blind raises the pot, then the flop after
    // a call, dealt in two orders with two different hole-card deals.
    let a = play(&g, &with_deal(&["1", "2", "1", "Th", "4c", "9d"]));
    let b = play(
        &g,
        &["Qs", "Qd", "3h", "3s", "1", "2", "1", "9d", "Th", "4c"],
    );
    let t = tensor(&a);
    assert_eq!(t, tensor(&b), "a function of the public state only");
    assert!(t.iter().all(|x| x.is_finite()));
    let board: Vec<usize> = t[..d]
        .iter()
        .enumerate()
        .filter(|(_, x)| **x == 1.0)
        .map(|(i, _)| i)
        .collect();
    let mut want: Vec<usize> = ["Th", "4c", "9d"]
        .iter()
        .map(|c| cfg.outcome_of(parse_card(c).unwrap()).unwrap())
        .collect();
    want.sort_unstable();
    assert_eq!(board, want);
    assert_eq!(&t[d..d + r], &[0.0, 1.0, 0.0, 0.0], "round one-hot");
    // Round 2 opens with player 0 (firstPlayer 1); both have put in 300 of 20000.
    let at = d + r;
    assert_eq!(&t[at..at + 3], &[1.0, 0.0, 0.0]);
    assert_eq!(&t[at + 3..at + 8], &[0.015, 0.015, 0.0, 0.0, 0.0]);
    // The betting bits and sizes are the information state's (sizes scaled).
    let mut info = vec![0.0; g.information_state_tensor_size()];
    a.information_state_tensor(0, &mut info);
    let (ib, pb) = (2 + 2 * d, at + 8);
    assert_eq!(&t[pb..pb + 2 * l], &info[ib..ib + 2 * l]);
    for i in 0..l {
        assert_eq!(
            t[pb + 2 * l + i],
            info[ib + 2 * l + i] / 20000.0,
            "size {i}"
        );
    }
    assert_eq!(t[pb + 2 * 5 + 1], 1.0, "the pot raise is history entry 5");
    // Facing a bet: the amount to call; after a fold, nobody acts and the fold is flagged.
    let facing = play(&g, &with_deal(&["2"]));
    let t = tensor(&facing);
    assert_eq!(&t[at..at + 3], &[1.0, 0.0, 0.0]);
    assert_eq!(t[at + 5], 200.0 / 20000.0);
    let folded = play(&g, &with_deal(&["2", "0"]));
    let t = tensor(&folded);
    assert_eq!(&t[at..at + 3], &[0.0, 0.0, 1.0]);
    assert_eq!(&t[at + 6..at + 8], &[1.0, 0.0]);
    // The root and a state in the middle of the hole deals agree (nothing public happened).
    assert_eq!(tensor(&g.initial_state()), tensor(&play(&g, &["As", "Ks"])));
}

/// A player's other possible hole cards: every pair of cards not dealt to the opponent or
/// the board, each the same history with that deal; the opponent's cards are no deal.
#[test]
fn private_state_alternatives_are_the_other_hole_cards() {
    let game = fcpa();
    let pre = play(&game, &with_deal(&["1"]));
    let alts = pre.private_state_alternatives(1);
    // 52 - 2 (opponent) = 50 cards, C(50, 2) = 1225 pairs, less the player's own.
    assert_eq!(alts.len(), 1224);
    let opp = pre.private_state(0);
    assert!(!alts.contains(&opp) && pre.with_private_state(1, opp).is_none());
    let flop = play(&game, &with_deal(&["1", "1", "Qh", "Jh", "9h"]));
    assert_eq!(flop.private_state_alternatives(0).len(), 47 * 46 / 2 - 1);
    let other = flop.private_state_alternatives(0)[0];
    let v = flop.with_private_state(0, other).unwrap();
    assert_eq!(v.private_state(0), other);
    assert_eq!(v.history()[2..], flop.history()[2..]);
    assert_eq!(
        v.information_state_string(1),
        flop.information_state_string(1)
    );
    // The 8-card testbed: C(6, 2) - 1 alternatives before the flop.
    let small = load_game("small_fcpa").unwrap();
    let mut s = small.new_initial_state();
    while s.is_chance() {
        let a = s.chance_outcomes()[0].0;
        s.apply_action(a);
    }
    assert_eq!(s.private_state_alternatives(0).len(), 14);
    check_game(small.as_ref(), 50, 3).unwrap();
}
