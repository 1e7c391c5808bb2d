//! Win probabilities against brute-force enumeration (Hold'em and general decks), the alias
//! table, card removal and hole-card substitution.

use super::*;

/// Brute force: every compatible opponent hand, every completion of the board, evaluate7.
fn brute_force_wp(hole: (u8, u8), board: &[u8], range: &[f64]) -> f64 {
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let (mut num, mut den) = (0.0, 0.0);
    for h in 0..NUM_HOLE_HANDS {
        if range[h] == 0.0 || HOLE_MASKS[h] & dead.0 != 0 {
            continue;
        }
        let (a, b) = HOLE_CARDS[h];
        let left: Vec<u8> = (0..52u8)
            .filter(|&c| !dead.contains(c) && c != a && c != b)
            .collect();
        let mut completions: Vec<Vec<u8>> = vec![vec![]];
        for _ in board.len()..5 {
            completions = completions
                .into_iter()
                .flat_map(|v| {
                    let start = v.last().map_or(0, |&l| l + 1);
                    left.iter()
                        .filter(move |&&c| c >= start)
                        .map(move |&c| {
                            let mut w = v.clone();
                            w.push(c);
                            w
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        let mut score = 0.0;
        for extra in &completions {
            let mut full = board.to_vec();
            full.extend(extra);
            let mut ours = [0u8; 7];
            let mut theirs = [0u8; 7];
            ours[..5].copy_from_slice(&full);
            theirs[..5].copy_from_slice(&full);
            (ours[5], ours[6]) = hole;
            (theirs[5], theirs[6]) = (a, b);
            let (x, y) = (evaluate7(&ours), evaluate7(&theirs));
            score += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
        num += range[h] * score / completions.len() as f64;
        den += range[h];
    }
    num / den
}

#[test]
fn equity_matches_brute_force_river_turn_flop() {
    let mut rng = SplitMix64::new(1);
    let spots = [
        ("AsKd", "2c7h9dTsJc", 3),
        ("7c7d", "2c7h9dTs", 4),
        ("Qh2h", "3h8hKc", 5),
    ];
    for (h, b, seed) in spots {
        let range = skewed_range(seed);
        let fast = win_probability(hole(h), &cards(b), &range, 0, &mut rng);
        let slow = brute_force_wp(hole(h), &cards(b), &range);
        assert!((fast - slow).abs() < 1e-12, "{h} on {b}: {fast} vs {slow}");
    }
    // A river tie: the board plays for everyone.
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    let wp = win_probability(hole("2c3d"), &cards("AsKsQsJsTs"), &uniform, 0, &mut rng);
    assert_eq!(wp, 0.5);
}

#[test]
fn preflop_equity_is_close_to_known_values() {
    let mut rng = SplitMix64::new(7);
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    // AA vs a random hand: 85.2%; 72o: 34.6%; AA vs KK (no shared suits): about 82%.
    let aa = win_probability(hole("AsAh"), &[], &uniform, 40_000, &mut rng);
    assert!((aa - 0.852).abs() < 0.01, "{aa}");
    let trash = win_probability(hole("7c2d"), &[], &uniform, 40_000, &mut rng);
    assert!((trash - 0.346).abs() < 0.01, "{trash}");
    let mut kk = vec![0.0; NUM_HOLE_HANDS];
    kk[hole_index(cards("Kc")[0], cards("Kd")[0])] = 1.0;
    let aa_kk = win_probability(hole("AsAh"), &[], &kk, 40_000, &mut rng);
    assert!((aa_kk - 0.823).abs() < 0.012, "{aa_kk}");
    // Seeded: the same generator state gives the same estimate.
    let a = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
    let b = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
    assert_eq!(a, b);
}

#[test]
fn alias_table_draws_in_proportion() {
    let weights = [0.5, 0.0, 3.0, 1.5, 1e-3, 5.0];
    let table = AliasTable::new(&weights);
    let mut rng = SplitMix64::new(11);
    let n = 400_000;
    let mut counts = [0usize; 6];
    for _ in 0..n {
        counts[table.sample(&mut rng)] += 1;
    }
    let total: f64 = weights.iter().sum();
    for (c, w) in counts.iter().zip(weights) {
        let p = w / total;
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (*c as f64 / n as f64 - p).abs() <= 5.0 * sd + 1e-12,
            "{counts:?}"
        );
    }
    assert_eq!(counts[1], 0);
}

#[test]
fn card_removal_and_bayes() {
    let mine = CardSet::from_cards(&cards("AsKd"));
    let mut r = Range::uniform(mine);
    assert_eq!(r.support().len(), 1225); // C(50, 2)
    assert!((r.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    r.remove_cards(CardSet::from_cards(&cards("2c7h9d")));
    assert_eq!(r.support().len(), 1081); // C(47, 2)
    for h in r.support() {
        assert_eq!(
            HOLE_MASKS[h as usize] & CardSet::from_cards(&cards("AsKd2c7h9d")).0,
            0
        );
    }
    // Posterior ∝ prior × likelihood.
    let prior = r.clone();
    let hands = r.support();
    let like: Vec<f64> = hands.iter().map(|&h| (h % 7) as f64 / 6.0).collect();
    let evidence = r.update(&hands, &like);
    let expected_evidence: f64 = hands
        .iter()
        .zip(&like)
        .map(|(&h, &l)| prior.weights()[h as usize] * l)
        .sum();
    assert!((evidence - expected_evidence).abs() < 1e-15);
    for (&h, &l) in hands.iter().zip(&like) {
        let want = prior.weights()[h as usize] * l / expected_evidence;
        assert!((r.weights()[h as usize] - want).abs() < 1e-15);
    }
    assert!(r.weights().iter().all(|&w| w >= 0.0));
    // Impossible observation: unchanged.
    let before = r.clone();
    assert_eq!(r.update(&hands, &vec![0.0; hands.len()]), 0.0);
    assert_eq!(r, before);
}

/// Every subset of `items` of size `k`.
fn subsets(items: &[u8], k: usize) -> Vec<Vec<u8>> {
    if k == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for (i, &c) in items.iter().enumerate() {
        for mut rest in subsets(&items[i + 1..], k - 1) {
            rest.insert(0, c);
            out.push(rest);
        }
    }
    out
}

/// Brute force on any deck: every compatible opponent hand, every completion of the board.
fn brute_force_general(deck: &Deck, hole: (u8, u8), board: &[u8], range: &[f64]) -> f64 {
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let (mut num, mut den) = (0.0, 0.0);
    for h in 0..NUM_HOLE_HANDS {
        let (a, b) = HOLE_CARDS[h];
        if range[h] == 0.0 || HOLE_MASKS[h] & dead.0 != 0 || !deck.set.contains(a) {
            continue;
        }
        if !deck.set.contains(b) {
            continue;
        }
        let left: Vec<u8> = deck
            .cards
            .iter()
            .copied()
            .filter(|&c| !dead.contains(c) && c != a && c != b)
            .collect();
        let completions = subsets(&left, deck.total_board - board.len());
        let mut score = 0.0;
        for extra in &completions {
            let common: Vec<u8> = board.iter().chain(extra).copied().collect();
            let ours =
                crate::games::hand_eval::evaluate(&[&[hole.0, hole.1], &common[..]].concat());
            let theirs = crate::games::hand_eval::evaluate(&[&[a, b], &common[..]].concat());
            score += match ours.cmp(&theirs) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
        }
        num += range[h] * score / completions.len() as f64;
        den += range[h];
    }
    num / den
}

#[test]
fn general_equity_matches_brute_force_and_the_holdem_path() {
    let mut rng = SplitMix64::new(5);
    let deck = Deck::new(small().config());
    assert!(!deck.holdem);
    assert_eq!(deck.cards, cards("2c2d3c3d4c4d5c5d"));
    for (h, b, seed) in [("5c5d", "", 1), ("2c4d", "", 2), ("3c4c", "2c5c5d", 3)] {
        let range = skewed_range(seed);
        let fast = general_win_probability(&deck, hole(h), &cards(b), &range, 0, &mut rng);
        let slow = brute_force_general(&deck, hole(h), &cards(b), &range);
        assert!((fast - slow).abs() < 1e-12, "{h} on {b}: {fast} vs {slow}");
    }
    // A pair of fives against a uniform range before the flop: it loses only to runouts
    // that beat it: a favourite, with the brute-force value.
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    let wp = general_win_probability(&deck, hole("5c5d"), &[], &uniform, 0, &mut rng);
    let want = brute_force_general(&deck, hole("5c5d"), &[], &uniform);
    assert!(wp > 0.55 && (wp - want).abs() < 1e-12, "{wp} vs {want}");
    // On the Hold'em deck the general path (exact on the turn and the river) agrees with the
    // fast path, and samples the pre-flop.
    let holdem = Deck::new(game().config());
    assert!(holdem.holdem);
    for (h, b, seed) in [("AsKd", "2c7h9dTsJc", 3), ("7c7d", "2c7h9dTs", 4)] {
        let range = skewed_range(seed);
        let general = general_win_probability(&holdem, hole(h), &cards(b), &range, 0, &mut rng);
        let fast = win_probability(hole(h), &cards(b), &range, 0, &mut rng);
        assert!(
            (general - fast).abs() < 1e-12,
            "{h} on {b}: {general} vs {fast}"
        );
    }
    let full = vec![1.0; NUM_HOLE_HANDS];
    let aa = general_win_probability(&holdem, hole("AsAh"), &[], &full, 40_000, &mut rng);
    assert!((aa - 0.852).abs() < 0.01, "{aa}");
}

#[test]
fn hole_card_substitution_on_a_two_suit_deck() {
    let g = small();
    let mut s = g.initial_state();
    for outcome in 0..4 {
        s.apply(outcome); // 2c 2d to P0, 3c 3d to P1
    }
    assert_eq!(s.hole_cards(1), &cards("3c3d")[..]);
    assert_eq!(s.turn(), Turn::Player(1));
    let (a, b) = hole("4c5d");
    let t = with_hole_cards(&s, 1, hole_index(a, b)).unwrap();
    assert_eq!(t.hole_cards(1), &[a, b][..]);
    assert_eq!(t.hole_cards(0), s.hole_cards(0));
    assert_eq!(t.information_state_string(0), s.information_state_string(0));
    assert!(t.information_state_string(1).contains("[Private: 5d4c]"));
    // A card outside the deck (hearts) or already dealt (2c) cannot be substituted.
    assert!(with_hole_cards(&s, 1, hole_index(a, cards("5h")[0])).is_none());
    assert!(with_hole_cards(&s, 1, hole_index(a, cards("2c")[0])).is_none());
    // The range starts on the deck's hands only: C(6, 2) once LBR's pair is known.
    let deck = Deck::new(g.config());
    let r = Range::uniform_in(deck.set, CardSet::from_cards(&cards("2c2d")));
    assert_eq!(r.support().len(), 15);
}
